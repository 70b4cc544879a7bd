// SPDX-License-Identifier: GPL-2.0-only
//! When the kernel ends the scheduler, should the agent load it again?
//!
//! Whatever happens, every task keeps running: the kernel moves them all
//! back to its default scheduler first. The question is only whether the
//! node gets scx_linger back.
//!
//! - The kernel asks for a restart (SCX_ECODE_ACT_RESTART: a CPU went
//!   offline or came online, which sched_ext handles by reloading the
//!   scheduler): load again at once. This is routine, not a failure.
//! - An error (the BPF side hit scx_bpf_error(), or the watchdog saw a
//!   task starve): load again after a back-off of 1 s, 2 s, 4 s, ... (at
//!   most 30 s), so that a persistent fault does not keep the node
//!   switching schedulers. After `max_failures` failed runs in a row it
//!   gives up and says so; a run that stayed up for HEALTHY counts as a
//!   success and clears the tally.
//! - Someone asked it to stop (SIGINT/SIGTERM, sysrq-S, an unregister):
//!   an operator's decision, never overridden.

use std::time::Duration;

use scx_utils::ScxExitKind;

/// A run that lasted this long was healthy: earlier failures are forgiven.
pub const HEALTHY: Duration = Duration::from_secs(300);
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// How a run of the scheduler ended, as far as restarting goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// SIGINT/SIGTERM to the agent.
    Requested,
    /// The kernel asked for a restart (hotplug).
    RestartRequested,
    /// An error exit: BPF error, watchdog stall.
    Error,
    /// Disabled by someone else (sysrq-S, an unregister): leave it so.
    Stopped,
}

impl Ending {
    /// Classify a kernel-side exit from its exit kind and whether it
    /// carries SCX_ECODE_ACT_RESTART.
    pub fn from_exit(kind: i32, restart_requested: bool) -> Ending {
        if restart_requested {
            Ending::RestartRequested
        } else if kind >= ScxExitKind::Error as i32 {
            Ending::Error
        } else {
            Ending::Stopped
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Load again after this long.
    Restart(Duration),
    /// Stop the agent; the kernel's default scheduler stays in charge.
    Stop,
    /// Stop: `max_failures` failed runs in a row.
    GiveUp,
}

/// Consecutive failures, and what to do after each ending.
pub struct Policy {
    pub max_failures: u32,
    failures: u32,
}

impl Policy {
    pub fn new(max_failures: u32) -> Policy {
        Policy {
            max_failures,
            failures: 0,
        }
    }

    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// What to do after a run that lasted `ran` ended as `ending`.
    pub fn after(&mut self, ending: Ending, ran: Duration) -> Decision {
        if ran >= HEALTHY {
            self.failures = 0;
        }
        match ending {
            Ending::Requested | Ending::Stopped => Decision::Stop,
            Ending::RestartRequested => Decision::Restart(Duration::ZERO),
            Ending::Error => {
                self.failures += 1;
                if self.failures > self.max_failures {
                    return Decision::GiveUp;
                }
                let backoff = FIRST_BACKOFF.saturating_mul(1 << (self.failures - 1).min(16));
                Decision::Restart(backoff.min(MAX_BACKOFF))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHORT: Duration = Duration::from_secs(2);

    #[test]
    fn classifies_kernel_exits() {
        // SCX_EXIT_UNREG_KERN with the restart bit (hotplug).
        assert_eq!(Ending::from_exit(66, true), Ending::RestartRequested);
        // SCX_EXIT_ERROR_BPF, SCX_EXIT_ERROR_STALL.
        assert_eq!(Ending::from_exit(1025, false), Ending::Error);
        assert_eq!(Ending::from_exit(1026, false), Ending::Error);
        // SCX_EXIT_SYSRQ, SCX_EXIT_UNREG: an operator's decision.
        assert_eq!(Ending::from_exit(67, false), Ending::Stopped);
        assert_eq!(Ending::from_exit(64, false), Ending::Stopped);
    }

    #[test]
    fn errors_back_off_then_give_up_and_healthy_runs_forgive() {
        let mut p = Policy::new(3);
        let secs = |d: Decision| match d {
            Decision::Restart(d) => d.as_secs(),
            other => panic!("{other:?}"),
        };
        assert_eq!(secs(p.after(Ending::Error, SHORT)), 1);
        assert_eq!(secs(p.after(Ending::Error, SHORT)), 2);
        // Hotplug restarts are routine: at once, and not failures.
        assert_eq!(
            p.after(Ending::RestartRequested, SHORT),
            Decision::Restart(Duration::ZERO)
        );
        assert_eq!(secs(p.after(Ending::Error, SHORT)), 4);
        assert_eq!(p.after(Ending::Error, SHORT), Decision::GiveUp);

        let mut p = Policy::new(3);
        p.after(Ending::Error, SHORT);
        p.after(Ending::Error, SHORT);
        assert_eq!(secs(p.after(Ending::Error, HEALTHY)), 1);
        assert_eq!(p.failures(), 1);
        assert_eq!(p.after(Ending::Stopped, SHORT), Decision::Stop);
        assert_eq!(p.after(Ending::Requested, SHORT), Decision::Stop);
    }

    #[test]
    fn backoff_is_capped() {
        let mut p = Policy::new(100);
        let mut last = Decision::Stop;
        for _ in 0..40 {
            last = p.after(Ending::Error, SHORT);
        }
        assert_eq!(last, Decision::Restart(MAX_BACKOFF));
    }
}
