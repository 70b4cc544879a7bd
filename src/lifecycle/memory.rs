// SPDX-License-Identifier: GPL-2.0-only
//! The agent's memory after a burst of cgroups has gone.
//!
//! What the agent holds grows with the cgroup tree (an entry per cgroup
//! in the tree, the watch and the stats' copy of the labels) and is freed
//! as the tree shrinks. The allocator keeps what was freed, though: glibc
//! returns heap to the kernel only from the top of an arena, and after a
//! large block has been freed it raises the size below which blocks come
//! from the heap rather than from their own mapping, so one large
//! temporary after a burst is kept too. In a guest, 10,000 cgroups made
//! and removed took the agent from 6.5 MiB resident to 18-22 MiB, of which
//! 13-16 MiB was free heap, while the bytes in use came back to within
//! 1 MiB of where they started. A node whose job manager makes such a
//! burst now and then would keep that for the agent's life, and an
//! operator watching the agent's memory could not tell it from a leak.
//!
//! So once a minute the agent asks the allocator what it holds, and when
//! more is free than in use (and more than a few MiB), asks it to return
//! its free pages (`malloc_trim`, which also releases whole free pages
//! inside an arena). Asking costs microseconds, a trim a few
//! milliseconds, never on the scheduling path; a steady agent is never
//! trimmed, because its free heap stays small.
//!
//! The agent's memory is in small pages. Where transparent huge pages are
//! always on (Debian's kernels), khugepaged makes every 2 MiB of heap with
//! a page in use one huge page again, which brings back the free pages a
//! trim gave away: measured, 8.5 MiB resident after a trim and 17.7 MiB
//! 50 s later with nothing allocated in between. A daemon of a few MiB
//! gains nothing from huge pages.

use std::time::{Duration, Instant};

use log::debug;

/// How often the allocator is asked.
const CHECK_EVERY: Duration = Duration::from_secs(60);

/// Free heap below this is not worth a trim: the agent's working size at
/// a few hundred cgroups is a few MiB.
const WORTH_TRIMMING: usize = 4 << 20;

/// Whether `free` bytes held by the allocator beside `in_use` ones are
/// worth giving back.
fn worth_trimming(in_use: usize, free: usize) -> bool {
    free > WORTH_TRIMMING && free > in_use
}

/// When the allocator was last asked.
pub struct Trim {
    next: Instant,
}

impl Trim {
    pub fn new() -> Trim {
        Trim {
            next: Instant::now() + CHECK_EVERY,
        }
    }

    /// Called from the run loop; at most once a minute looks at the
    /// allocator and gives its free pages back if they are worth it.
    /// Returns whether it did.
    pub fn tick(&mut self, now: Instant) -> bool {
        if now < self.next {
            return false;
        }
        self.next = now + CHECK_EVERY;
        let Some((in_use, free)) = heap() else {
            return false;
        };
        if !worth_trimming(in_use, free) {
            return false;
        }
        let before = resident_kib();
        give_back();
        debug!(
            "memory: {} KiB of free heap beside {} KiB in use given back; resident {before} KiB -> {} KiB",
            free >> 10,
            in_use >> 10,
            resident_kib()
        );
        true
    }
}

/// Keep the agent's memory in small pages (see above). Where it cannot
/// be had, the agent runs as it is: only its resident size differs.
pub fn no_huge_pages() {
    if let Err(e) = nix::sys::prctl::set_thp_disable(true) {
        debug!("memory: huge pages stay on for the agent: {e}");
    }
}

/// Bytes in use and free in the allocator's arenas, where it can say.
#[cfg(target_env = "gnu")]
fn heap() -> Option<(usize, usize)> {
    // SAFETY: mallinfo2 only reads glibc's arena statistics, taking each
    // arena's lock as malloc does.
    let m = unsafe { nix::libc::mallinfo2() };
    Some((m.uordblks, m.fordblks))
}

#[cfg(not(target_env = "gnu"))]
fn heap() -> Option<(usize, usize)> {
    None
}

/// Return the allocator's free pages to the kernel.
fn give_back() {
    // SAFETY: malloc_trim only walks and releases glibc's own free lists,
    // taking each arena's lock as malloc does.
    #[cfg(target_env = "gnu")]
    unsafe {
        nix::libc::malloc_trim(0);
    }
}

/// The agent's resident memory in KiB, 0 if /proc cannot say.
fn resident_kib() -> u64 {
    let page_kib = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .map_or(4, |p| (p.max(1024) / 1024) as u64);
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * page_kib)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_large_free_heap_is_given_back() {
        // A steady agent: little free beside what it uses.
        assert!(!worth_trimming(2 << 20, 1 << 20));
        // Free more than in use but small.
        assert!(!worth_trimming(1 << 20, 3 << 20));
        // A large working set with a proportionate free heap.
        assert!(!worth_trimming(40 << 20, 10 << 20));
        // After a burst.
        assert!(worth_trimming(1_500_000, 13_000_000));
    }

    #[test]
    fn the_allocator_is_asked_at_most_once_a_minute() {
        let mut t = Trim::new();
        let now = Instant::now();
        assert!(!t.tick(now));
        t.tick(now + CHECK_EVERY);
        assert!(t.next >= now + CHECK_EVERY * 2);
        assert!(!t.tick(now + CHECK_EVERY + Duration::from_secs(1)));
    }

    #[test]
    fn the_heap_and_resident_size_are_read() {
        assert!(resident_kib() > 0);
        #[cfg(target_env = "gnu")]
        assert!(heap().is_some_and(|(in_use, _)| in_use > 0));
    }
}
