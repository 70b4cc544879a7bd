// SPDX-License-Identifier: GPL-2.0-only
//! The agent's log: plain lines on stderr (the agent usually runs under
//! systemd or a job script that keeps a log), and the most recent
//! notices kept in memory, so that `top` can show what happened lately:
//! label changes, gang tables, warnings.

use std::collections::VecDeque;
use std::sync::{Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use log::{Level, LevelFilter, Log, Metadata, Record};
use simplelog::{ConfigBuilder, WriteLogger};

use crate::observe::schema::LogLine;

/// How many recent notices are kept.
const KEPT: usize = 64;

static RECENT: OnceLock<Mutex<VecDeque<LogLine>>> = OnceLock::new();

struct Tee {
    stderr: Box<WriteLogger<std::io::Stderr>>,
}

impl Log for Tee {
    fn enabled(&self, m: &Metadata) -> bool {
        self.stderr.enabled(m)
    }

    fn log(&self, r: &Record) {
        self.stderr.log(r);
        // Periodic stats lines are the figures themselves, not events.
        let msg = r.args().to_string();
        if r.level() > Level::Info || msg.starts_with("stats:") {
            return;
        }
        if let Some(recent) = RECENT.get() {
            if let Ok(mut q) = recent.lock() {
                if q.len() == KEPT {
                    q.pop_front();
                }
                q.push_back(LogLine {
                    time_ms: now_ms(),
                    level: r.level().to_string().to_lowercase(),
                    message: msg,
                });
            }
        }
    }

    fn flush(&self) {
        self.stderr.flush();
    }
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

pub fn init(verbose: bool) {
    let level = if verbose {
        LevelFilter::Debug
    } else {
        LevelFilter::Info
    };
    let config = ConfigBuilder::new()
        .set_time_level(LevelFilter::Off)
        .build();
    let _ = RECENT.set(Mutex::new(VecDeque::with_capacity(KEPT)));
    let tee = Tee {
        stderr: WriteLogger::new(level, config, std::io::stderr()),
    };
    if log::set_boxed_logger(Box::new(tee)).is_ok() {
        log::set_max_level(level);
    }
}

/// The notices kept, oldest first.
pub fn recent() -> Vec<LogLine> {
    RECENT
        .get()
        .and_then(|r| r.lock().ok().map(|q| q.iter().cloned().collect()))
        .unwrap_or_default()
}
