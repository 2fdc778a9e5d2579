//! Latencies counted in the buckets of iolab's full-precision HDR
//! histogram (1 ns to 1 h, 3 significant digits) with one index
//! computation and one add per value, for loops where hdrhistogram's
//! per-record bookkeeping (range check, minimum, maximum, total) shows in
//! the profile. `drain_into` then gives a `LatencyHistogram` exactly what
//! recording each value there would have given it.

use super::histogram::{LatencyHistogram, MAX_NS};

/// log2 of half the sub-buckets per bucket: 3 significant digits need
/// 2 * 10^3 sub-buckets, rounded up to 2^11 (as hdrhistogram does).
const HALF_MAGNITUDE: u32 = 10;
const HALF_COUNT: usize = 1 << HALF_MAGNITUDE;
const SUB_BUCKET_MASK: u64 = (1 << (HALF_MAGNITUDE + 1)) - 1;
/// Leading zeros of a value whose top bit is the first sub-bucket bit past
/// bucket 0 (64 - unit magnitude 0 - HALF_MAGNITUDE - 1).
const BUCKET_BASE: u32 = 64 - HALF_MAGNITUDE - 1;

/// A latency count per HDR bucket; recording never allocates.
#[derive(Clone, Debug)]
pub struct LatencyTally {
    counts: Box<[u64]>,
    n: u64,
}

impl LatencyTally {
    pub fn new() -> Self {
        LatencyTally {
            counts: vec![0; index_of(MAX_NS) + 1].into_boxed_slice(),
            n: 0,
        }
    }

    #[inline(always)]
    pub fn record(&mut self, ns: u64) {
        self.record_n(ns, 1);
    }

    /// Count `n` values of `ns` (clamped into 1 ns..1 h, as the histogram).
    #[inline(always)]
    pub fn record_n(&mut self, ns: u64, n: u64) {
        // The index is in range for every clamped value; `get_mut` keeps a
        // panic's path out of the loop.
        if let Some(c) = self.counts.get_mut(index_of(ns.clamp(1, MAX_NS))) {
            *c += n;
        }
        self.n += n;
    }

    /// Values counted since the last drain.
    pub fn len(&self) -> u64 {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Add every count to `h` and start again from none.
    pub fn drain_into(&mut self, h: &mut LatencyHistogram) {
        if self.n == 0 {
            return;
        }
        for (i, c) in self.counts.iter_mut().enumerate() {
            if *c != 0 {
                h.record_n(value_of(i), *c);
                *c = 0;
            }
        }
        self.n = 0;
    }
}

impl Default for LatencyTally {
    fn default() -> Self {
        Self::new()
    }
}

/// hdrhistogram's counts index of `v` (>= 1): bucket `b` holds values
/// whose top bit is bit 10 + b, in 1,024 sub-buckets of 2^b each
/// (bucket 0 holds 0..2,047 exactly).
#[inline(always)]
fn index_of(v: u64) -> usize {
    let bucket = BUCKET_BASE - (v | SUB_BUCKET_MASK).leading_zeros();
    ((bucket as usize) << HALF_MAGNITUDE) + (v >> bucket) as usize
}

/// The lowest value of counts index `i`: `index_of(value_of(i)) == i`.
fn value_of(i: usize) -> u64 {
    let (bucket, sub) = match i >> HALF_MAGNITUDE {
        0 | 1 => (0, i),
        b => (b - 1, (i & (HALF_COUNT - 1)) + HALF_COUNT),
    };
    (sub as u64) << bucket
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Everything a histogram shows: its buckets and summary statistics.
    fn shown(h: &LatencyHistogram) -> (Vec<(u64, u64)>, Option<super::super::histogram::LatStats>) {
        (h.buckets().collect(), h.stats())
    }

    #[test]
    fn every_index_is_its_lowest_values_index() {
        for i in 1..LatencyTally::new().counts.len() {
            assert_eq!(index_of(value_of(i)), i, "index {i}");
        }
        assert_eq!(index_of(1), 1);
        assert_eq!(index_of(2047), 2047);
        assert_eq!(index_of(2048), 2048);
        assert_eq!(index_of(2049), 2048);
    }

    proptest! {
        #[test]
        fn a_drained_tally_is_the_histogram_of_its_values(
            values in prop::collection::vec(
                prop_oneof![0u64..5_000, 0u64..10_000_000, any::<u64>()], 1..400),
            weights in prop::collection::vec(1u64..5, 1..4),
        ) {
            let (mut direct, mut drained) = (LatencyHistogram::new(), LatencyHistogram::new());
            let mut tally = LatencyTally::new();
            for (k, &v) in values.iter().enumerate() {
                let n = weights[k % weights.len()];
                direct.record_n(v, n);
                tally.record_n(v, n);
            }
            prop_assert_eq!(tally.len(), direct.len());
            tally.drain_into(&mut drained);
            prop_assert!(tally.is_empty());
            prop_assert_eq!(shown(&drained), shown(&direct));
            prop_assert_eq!(drained.encode(), direct.encode());
        }
    }

    #[test]
    fn a_second_drain_adds_only_what_came_after_the_first() {
        let mut t = LatencyTally::new();
        let mut h = LatencyHistogram::new();
        t.record(500);
        t.drain_into(&mut h);
        t.record(700);
        t.drain_into(&mut h);
        t.drain_into(&mut h);
        assert_eq!(h.len(), 2);
        assert_eq!(h.buckets().map(|(_, c)| c).sum::<u64>(), 2);
    }
}
