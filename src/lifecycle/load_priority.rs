// SPDX-License-Identifier: GPL-2.0-only
//! The loading thread runs at the highest CPU priority (nice -20) from the
//! load to the attach, and at its own again after.
//!
//! A load is mostly the kernel's verifier, run on the agent's thread; the
//! first label scan follows. On a node whose CPUs are all busy, at nice 0
//! the agent gets its share among every runnable thread: in a 2-CPU guest
//! beside 12 spinning threads, 53 s from start to enabled, against 11 s
//! at nice -20. Until the attach every task runs under the kernel's own
//! scheduler, where guests compete with primaries as equals and gangs are
//! not co-scheduled, so the load is the one moment the agent must not be
//! an ordinary primary. Once attached it is one again (the run loop waits
//! on no scheduling decision).
//!
//! Raising priority needs CAP_SYS_NICE (the shipped unit keeps it in its
//! bounding set for this alone); without it the load runs at the thread's
//! own priority, as before, and says so once.

use log::info;
use nix::errno::Errno;
use nix::libc;

/// Holds the calling thread at nice -20 until dropped, then gives it back
/// the nice it had.
pub struct LoadPriority {
    before: Option<i32>,
}

/// The calling thread's nice (what the unit's `Nice=` or `nice(1)` gave).
fn nice_now() -> Option<i32> {
    // getpriority() may return -1 as a value: errno tells.
    Errno::clear();
    // SAFETY: a plain syscall on the calling thread.
    let n = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
    (Errno::last_raw() == 0).then_some(n)
}

fn set_nice(n: i32) -> bool {
    // SAFETY: a plain syscall on the calling thread (PRIO_PROCESS with 0
    // is the thread itself on Linux).
    unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, n) == 0 }
}

impl LoadPriority {
    pub fn raise() -> LoadPriority {
        let before = nice_now();
        if before.is_some_and(|n| n > -20) && !set_nice(-20) {
            info!("loading at the agent's own CPU priority (no CAP_SYS_NICE to raise it)");
            return LoadPriority { before: None };
        }
        LoadPriority { before }
    }
}

impl Drop for LoadPriority {
    fn drop(&mut self) {
        if let Some(n) = self.before {
            set_nice(n);
        }
    }
}
