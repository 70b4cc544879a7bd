// SPDX-License-Identifier: GPL-2.0-only
//! `scx_linger top`: a full-screen live view of the running agent's
//! stats, refreshed once a second from its stats socket (so anyone the
//! operator lets read the socket can watch; see stats_server.rs). Keys:
//! q quits, s changes the jobs' sort order, c filters jobs by class,
//! arrows and page keys scroll the jobs. With no agent running it says
//! so, shows what the kernel runs instead, and keeps trying.

use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};

use crate::report::{JobStats, Node, Snapshot, CLASSES};
use crate::stats_server;

const REFRESH: Duration = Duration::from_secs(1);

/// What the jobs table is sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    CpuNow,
    CpuTotal,
    Delay,
    Path,
}

impl SortKey {
    fn next(self) -> SortKey {
        match self {
            SortKey::CpuNow => SortKey::CpuTotal,
            SortKey::CpuTotal => SortKey::Delay,
            SortKey::Delay => SortKey::Path,
            SortKey::Path => SortKey::CpuNow,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SortKey::CpuNow => "CPUs now",
            SortKey::CpuTotal => "CPU total",
            SortKey::Delay => "delay p99",
            SortKey::Path => "path",
        }
    }
}

/// The view's state between frames.
pub struct App {
    pub snap: Option<Snapshot>,
    /// Why there is no reading (no agent, no permission, ...).
    pub error: Option<String>,
    /// What the kernel says when there is no agent to ask.
    pub local: Node,
    pub sort: SortKey,
    /// Index into CLASSES, or None for every class.
    pub filter: Option<usize>,
    pub scroll: usize,
}

impl App {
    fn new() -> App {
        App {
            snap: None,
            error: None,
            local: Node::default(),
            sort: SortKey::CpuNow,
            filter: None,
            scroll: 0,
        }
    }

    fn refresh(&mut self, socket: &Path) {
        match stats_server::fetch(socket, true) {
            Ok(s) => {
                self.snap = Some(s);
                self.error = None;
            }
            Err(e) => {
                self.snap = None;
                self.error = Some(format!("{e:#}"));
                self.local = crate::sampler::node();
            }
        }
    }

    /// The jobs to show, filtered and sorted.
    pub fn jobs(&self) -> Vec<&JobStats> {
        let Some(s) = &self.snap else {
            return Vec::new();
        };
        let mut jobs: Vec<&JobStats> = s
            .jobs
            .iter()
            .filter(|j| self.filter.is_none_or(|f| j.class == CLASSES[f]))
            .collect();
        let delay = |j: &JobStats| j.run_delay_p99_us.unwrap_or(0.0);
        match self.sort {
            SortKey::CpuNow => jobs.sort_by(|a, b| b.cpus_now.total_cmp(&a.cpus_now)),
            SortKey::CpuTotal => jobs.sort_by(|a, b| b.cpu_seconds.total_cmp(&a.cpu_seconds)),
            SortKey::Delay => jobs.sort_by(|a, b| delay(b).total_cmp(&delay(a))),
            SortKey::Path => jobs.sort_by(|a, b| a.path.cmp(&b.path)),
        }
        jobs
    }

    /// Handle one key; false to quit.
    fn key(&mut self, code: KeyCode, mods: KeyModifiers) -> bool {
        match code {
            KeyCode::Char('q') | KeyCode::Esc => return false,
            KeyCode::Char('c') if mods.contains(KeyModifiers::CONTROL) => return false,
            KeyCode::Char('s') => self.sort = self.sort.next(),
            KeyCode::Char('c') => {
                self.filter = match self.filter {
                    None => Some(0),
                    Some(i) if i + 1 < CLASSES.len() => Some(i + 1),
                    Some(_) => None,
                };
                self.scroll = 0;
            }
            KeyCode::Down => self.scroll = self.scroll.saturating_add(1),
            KeyCode::Up => self.scroll = self.scroll.saturating_sub(1),
            KeyCode::PageDown => self.scroll = self.scroll.saturating_add(10),
            KeyCode::PageUp => self.scroll = self.scroll.saturating_sub(10),
            KeyCode::Home => self.scroll = 0,
            _ => {}
        }
        let max = self.jobs().len().saturating_sub(1);
        self.scroll = self.scroll.min(max);
        true
    }
}

pub fn run(socket: &Path) -> Result<()> {
    if !std::io::stdout().is_terminal() {
        bail!("scx_linger top needs a terminal: use `scx_linger stats [--json]` in scripts");
    }
    // ratatui::init puts the terminal back on a panic too.
    let mut terminal = ratatui::init();
    let result = (|| -> Result<()> {
        let mut app = App::new();
        let mut next = Instant::now();
        loop {
            if Instant::now() >= next {
                app.refresh(socket);
                next = Instant::now() + REFRESH;
            }
            terminal.draw(|f| crate::top_view::draw(f, &app))?;
            let wait = next.saturating_duration_since(Instant::now());
            if event::poll(wait)? {
                // A resize needs nothing: the next frame fits the new size.
                if let Event::Key(k) = event::read()? {
                    if k.kind == KeyEventKind::Press && !app.key(k.code, k.modifiers) {
                        return Ok(());
                    }
                }
            }
        }
    })();
    ratatui::restore();
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    fn app_with_jobs() -> App {
        let mut app = App::new();
        let mut s = Snapshot::default();
        for (path, class, now, total) in [
            ("/a", "guest", 0.5, 10.0),
            ("/b", "primary", 1.5, 1.0),
            ("/c", "guest", 0.1, 20.0),
        ] {
            s.jobs.push(JobStats {
                path: path.into(),
                class: class.into(),
                cpus_now: now,
                cpu_seconds: total,
                ..Default::default()
            });
        }
        app.snap = Some(s);
        app
    }

    fn paths(app: &App) -> Vec<&str> {
        app.jobs().iter().map(|j| j.path.as_str()).collect()
    }

    #[test]
    fn keys_sort_filter_and_quit() {
        let mut app = app_with_jobs();
        assert_eq!(paths(&app), ["/b", "/a", "/c"]);
        app.key(KeyCode::Char('s'), KeyModifiers::NONE);
        assert_eq!(paths(&app), ["/c", "/a", "/b"]);
        // c: primary only, then guest only.
        app.key(KeyCode::Char('c'), KeyModifiers::NONE);
        assert_eq!(paths(&app), ["/b"]);
        app.key(KeyCode::Char('c'), KeyModifiers::NONE);
        assert_eq!(paths(&app), ["/c", "/a"]);
        assert!(!app.key(KeyCode::Char('q'), KeyModifiers::NONE));
        assert!(!app.key(KeyCode::Char('c'), KeyModifiers::CONTROL));
    }

    #[test]
    fn draws_at_any_size_without_panicking() {
        let mut app = app_with_jobs();
        for (w, h) in [(1, 1), (20, 5), (80, 24), (200, 60)] {
            let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
            t.draw(|f| crate::top_view::draw(f, &app)).unwrap();
        }
        app.snap = None;
        app.error = Some("no scx_linger agent is running".into());
        let mut t = Terminal::new(TestBackend::new(80, 24)).unwrap();
        t.draw(|f| crate::top_view::draw(f, &app)).unwrap();
        let screen: String = t
            .backend()
            .buffer()
            .content()
            .iter()
            .map(|c| c.symbol())
            .collect();
        assert!(screen.contains("no scx_linger agent is running"));
    }
}
