// SPDX-License-Identifier: GPL-2.0-only
//! The BPF side's histograms, read back: the bucket rule of bpf/intf.h
//! (LINGER_HIST_BUCKETS: bucket b counts values in [2^b, 2^(b+1)) ns)
//! has its one reader here, for every figure that quotes a percentile
//! (run delay, gang skew, slot switch) and for the Prometheus buckets.
//! Its writer is hist_bucket() in bpf/lib/pure.h; the unit tests below
//! run that very C function (compiled for the host) against this reader.

use std::time::Duration;

#[cfg(test)]
use crate::bpf::intf;

/// Buckets in every histogram the BPF side keeps.
#[cfg(test)]
const BUCKETS: usize = intf::linger_consts_LINGER_HIST_BUCKETS as usize;

/// The upper edge of bucket `b`: every value counted in it is below this.
pub fn upper_edge(b: usize) -> Duration {
    Duration::from_nanos(1u64 << (b + 1).min(63))
}

/// The p-th percentile (0..=100) of a histogram, as the upper edge of its
/// bucket: "p% of the values were below this". None for an empty one.
pub fn percentile(hist: &[u64], p: u64) -> Option<Duration> {
    let total: u64 = hist.iter().sum();
    if total == 0 {
        return None;
    }
    let want = (total * p).div_ceil(100).max(1);
    let mut seen = 0;
    for (b, n) in hist.iter().enumerate() {
        seen += n;
        if seen >= want {
            return Some(upper_edge(b));
        }
    }
    None
}

/// A percentile in microseconds (see `percentile`).
pub fn percentile_us(hist: &[u64], p: u64) -> Option<f64> {
    percentile(hist, p).map(|d| d.as_secs_f64() * 1e6)
}

/// Bucket-wise `later - earlier` (a reset reads as zero).
pub fn since(later: &[u64], earlier: &[u64]) -> Vec<u64> {
    later
        .iter()
        .enumerate()
        .map(|(i, v)| v.saturating_sub(earlier.get(i).copied().unwrap_or(0)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpf::pure;

    #[test]
    fn percentiles_are_bucket_edges() {
        let mut h = [0u64; BUCKETS];
        assert_eq!(percentile(&h, 50), None);
        h[10] = 90; // [1024, 2048) ns
        h[20] = 10; // [~1 ms, ~2 ms)
        assert_eq!(percentile(&h, 50), Some(Duration::from_nanos(2048)));
        assert_eq!(percentile(&h, 90), Some(Duration::from_nanos(2048)));
        assert_eq!(percentile(&h, 99), Some(Duration::from_nanos(1 << 21)));
    }

    #[test]
    fn differences_and_percentiles() {
        let later = [0, 10, 90, 0];
        let earlier = [0, 10, 40, 5];
        assert_eq!(since(&later, &earlier), vec![0, 0, 50, 0]);
        // All 50 delays in bucket 2, [4, 8) ns: p99 is below 8 ns.
        let p99 = percentile_us(&since(&later, &earlier), 99).unwrap();
        assert!((p99 - 0.008).abs() < 1e-9);
        assert_eq!(percentile_us(&[0, 0], 50), None);
    }

    /// The BPF side's own bucket function puts every value below the
    /// edge this reader quotes for its bucket, and at or above the
    /// previous bucket's edge: writer and reader agree.
    #[test]
    fn the_bpf_writer_and_this_reader_agree() {
        let mut values = vec![0u64, 1, 2, 3, u64::MAX];
        for shift in 0..64 {
            let v = 1u64 << shift;
            values.extend([v - 1, v, v + 1, v | (v >> 1)]);
        }
        for v in values {
            let b = pure::hist_bucket(v) as usize;
            assert!(b < BUCKETS, "{v} -> bucket {b}");
            let below_top = (v as u128) < upper_edge(b).as_nanos() || b == BUCKETS - 1;
            let above_bottom = b == 0 || (v as u128) >= upper_edge(b - 1).as_nanos();
            assert!(below_top && above_bottom, "{v} ns in bucket {b}");
        }
    }
}
