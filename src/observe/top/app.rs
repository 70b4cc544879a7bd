// SPDX-License-Identifier: GPL-2.0-only
//! The state of `scx_linger top` between frames: the latest reading, the
//! jobs' sort order and class filter, the scroll position, and what each
//! key does to them. No drawing here (view.rs) and no terminal (mod.rs).

use std::path::Path;

use ratatui::crossterm::event::{KeyCode, KeyModifiers};

use crate::labels::class::Class;
use crate::observe::schema::{JobStats, Node, Snapshot};
use crate::observe::{client, sampler};

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
    /// Index into Class::ALL, or None for every class.
    pub filter: Option<usize>,
    pub scroll: usize,
}

impl App {
    pub(super) fn new() -> App {
        App {
            snap: None,
            error: None,
            local: Node::default(),
            sort: SortKey::CpuNow,
            filter: None,
            scroll: 0,
        }
    }

    pub(super) fn refresh(&mut self, socket: &Path) {
        match client::fetch(socket, true) {
            Ok(s) => {
                self.snap = Some(s);
                self.error = None;
            }
            Err(e) => {
                self.snap = None;
                self.error = Some(format!("{e:#}"));
                self.local = sampler::node();
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
            .filter(|j| self.filter.is_none_or(|f| j.class == Class::ALL[f].name()))
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
    pub(super) fn key(&mut self, code: KeyCode, mods: KeyModifiers) -> bool {
        match code {
            KeyCode::Char('q') | KeyCode::Esc => return false,
            KeyCode::Char('c') if mods.contains(KeyModifiers::CONTROL) => return false,
            KeyCode::Char('s') => self.sort = self.sort.next(),
            KeyCode::Char('c') => {
                self.filter = match self.filter {
                    None => Some(0),
                    Some(i) if i + 1 < Class::ALL.len() => Some(i + 1),
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

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::observe::top) fn app_with_jobs() -> App {
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
}
