//! iolab's own per-I/O measurement cost: one clock read and one histogram
//! record, measured at start so results say how much of a latency is ours.

use serde::{Deserialize, Serialize};

use super::clock::mono_now_ns;
use super::histogram::LatencyHistogram;

#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct TimerCost {
    /// Cost of one CLOCK_MONOTONIC read, ns.
    pub clock_read_ns: f64,
    /// Cost of one histogram record, ns.
    pub histogram_record_ns: f64,
    /// What the runner adds per I/O: 2 clock reads + 3 histogram records
    /// (slat, clat, lat) + 1 interval record.
    pub per_io_ns: f64,
    /// Smallest nonzero step seen between consecutive clock reads, ns.
    pub clock_resolution_ns: u64,
}

/// Measure (about 20 ms).
pub fn measure() -> TimerCost {
    const N: u64 = 200_000;
    let mut sink = 0u64;
    let mut resolution = u64::MAX;
    let t0 = mono_now_ns();
    let mut prev = t0;
    for _ in 0..N {
        let t = mono_now_ns();
        if t > prev {
            resolution = resolution.min(t - prev);
        }
        prev = t;
        sink = sink.wrapping_add(t);
    }
    let clock = (mono_now_ns() - t0) as f64 / N as f64;
    let mut h = LatencyHistogram::new();
    let t1 = mono_now_ns();
    let mut v = 12_345u64;
    for _ in 0..N {
        v = v
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        h.record(1000 + (v >> 44));
    }
    let record = (mono_now_ns() - t1) as f64 / N as f64;
    std::hint::black_box((sink, h.len()));
    TimerCost {
        clock_read_ns: clock,
        histogram_record_ns: record,
        per_io_ns: 2.0 * clock + 4.0 * record,
        clock_resolution_ns: if resolution == u64::MAX {
            0
        } else {
            resolution
        },
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn costs_are_positive() {
        let c = super::measure();
        assert!(c.clock_read_ns > 0.0 && c.histogram_record_ns > 0.0);
        assert!(c.per_io_ns > c.clock_read_ns);
    }
}
