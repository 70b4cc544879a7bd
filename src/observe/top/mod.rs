// SPDX-License-Identifier: GPL-2.0-only
//! `scx_linger top`: a full-screen live view of the running agent's
//! stats, refreshed once a second from its stats socket (so anyone the
//! operator lets read the socket can watch; see scx_stats.rs). Keys:
//! q quits, s changes the jobs' sort order, c filters jobs by class,
//! arrows and page keys scroll the jobs. With no agent running it says
//! so, shows what the kernel runs instead, and keeps trying.
//!
//! app.rs holds the state and the keys, view.rs draws a frame from it,
//! this file owns the terminal.

mod app;
mod view;

use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use ratatui::crossterm::event::{self, Event, KeyEventKind};

use app::App;

const REFRESH: Duration = Duration::from_secs(1);

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
            terminal.draw(|f| view::draw(f, &app))?;
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

    #[test]
    fn draws_at_any_size_without_panicking() {
        let mut app = app::tests::app_with_jobs();
        for (w, h) in [(1, 1), (20, 5), (80, 24), (200, 60)] {
            let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
            t.draw(|f| view::draw(f, &app)).unwrap();
        }
        app.snap = None;
        app.error = Some("no scx_linger agent is running".into());
        let mut t = Terminal::new(TestBackend::new(80, 24)).unwrap();
        t.draw(|f| view::draw(f, &app)).unwrap();
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
