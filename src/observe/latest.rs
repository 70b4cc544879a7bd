// SPDX-License-Identifier: GPL-2.0-only
//! The latest reading, as the run loop takes it and every view serves it
//! (the scx_stats socket, scx_stats.rs; the metrics endpoint, metrics.rs).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::schema::Snapshot;

/// The latest reading, shared with the stats socket's and the metrics endpoint's threads, and
/// when one of them last asked for it: the run loop reads the stats every
/// second only while someone looks (a reading costs the agent about as
/// much CPU as everything else it does on a quiet node). A client that
/// finds the reading older than FRESH asks the run loop for a new one and
/// waits for it, so nobody is answered with a reading from before it
/// began to look.
#[derive(Default)]
pub struct Shared {
    /// The reading and when it was taken.
    reading: Mutex<(Option<Snapshot>, Option<Instant>)>,
    taken: Condvar,
    asked: Mutex<Option<Instant>>,
    /// Asks the run loop for a reading now (lifecycle/mod.rs sets it).
    wake: Mutex<Option<Box<dyn Fn() + Send>>>,
    /// Times the agent loaded the scheduler again after the kernel ended
    /// it (lifecycle/restart.rs), for the metrics.
    restarts: AtomicU64,
}

pub type Latest = Arc<Shared>;

/// A reading older than this is taken again before it is served.
const FRESH: Duration = Duration::from_millis(1500);
/// How long a client waits for that reading.
const FRESH_WAIT: Duration = Duration::from_secs(2);

impl Shared {
    /// How to ask the run loop for a reading now.
    pub fn on_stale(&self, wake: impl Fn() + Send + 'static) {
        if let Ok(mut w) = self.wake.lock() {
            *w = Some(Box::new(wake));
        }
    }

    /// A recent reading, for a client: it counts as being watched.
    pub fn get(&self) -> Option<Snapshot> {
        if let Ok(mut a) = self.asked.lock() {
            *a = Some(Instant::now());
        }
        let Ok(guard) = self.reading.lock() else {
            return None;
        };
        let taken = guard.1;
        let stale = taken.is_none_or(|t| t.elapsed() > FRESH);
        let woke = stale
            && self
                .wake
                .lock()
                .is_ok_and(|w| w.as_ref().map(|f| f()).is_some());
        let guard = if woke {
            match self
                .taken
                .wait_timeout_while(guard, FRESH_WAIT, |r| r.1 == taken)
            {
                Ok((g, _)) => g,
                Err(_) => return None,
            }
        } else {
            guard
        };
        guard.0.clone()
    }

    pub fn set(&self, snap: Snapshot) {
        if let Ok(mut r) = self.reading.lock() {
            *r = (Some(snap), Some(Instant::now()));
        }
        self.taken.notify_all();
    }

    /// The agent is loading the scheduler again after the kernel ended it.
    pub fn note_restart(&self) {
        self.restarts.fetch_add(1, Ordering::Relaxed);
    }

    pub fn restarts(&self) -> u64 {
        self.restarts.load(Ordering::Relaxed)
    }

    /// Whether a client asked for a reading within `within`.
    pub fn watched(&self, within: Duration) -> bool {
        self.asked
            .lock()
            .is_ok_and(|a| a.is_some_and(|t| t.elapsed() < within))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stale_reading_is_taken_again_before_it_is_served() {
        let latest: Latest = Default::default();
        latest.set(Snapshot {
            time_ms: 1,
            ..Default::default()
        });
        // The run loop, asked for a reading, takes one.
        let l = latest.clone();
        latest.on_stale(move || {
            let l = l.clone();
            std::thread::spawn(move || {
                l.set(Snapshot {
                    time_ms: 2,
                    ..Default::default()
                });
            });
        });
        assert_eq!(
            latest.get().unwrap().time_ms,
            1,
            "a fresh reading is served as it is"
        );
        std::thread::sleep(FRESH + Duration::from_millis(100));
        assert_eq!(latest.get().unwrap().time_ms, 2);
    }
}
