//! Aerospike's certification tool (ACT, `act_storage`) as a device profile,
//! following its published method: small random reads of one record at a
//! fixed rate (the clients' reads, the measured stream), and large-block
//! writes and reads at the rate the writes and defragmentation cause (one
//! dedicated thread each), all O_DIRECT. "1x" is 2,000 reads and 1,000
//! writes per second per device; `--act-scale N` multiplies every rate.

use serde::{Deserialize, Serialize};

use crate::plan::job::{Arrival, JobSpec, OpenLoop, Pattern};

/// ACT's default record size: the size of a small read (a multiple of 512).
pub const RECORD_BYTES: u64 = 1536;
/// ACT's `large-block-op-kbytes` default.
pub const LARGE_BLOCK_BYTES: u64 = 128 << 10;
/// The 1x load per device.
pub const READS_PER_S_1X: f64 = 2000.0;
pub const WRITES_PER_S_1X: f64 = 1000.0;
/// `defrag-lwm-pct` 50: defragmentation doubles the large-block rate.
pub const DEFRAG_FACTOR: f64 = 2.0;
/// The thresholds of ACT's table (ms): reads slower than each.
pub const THRESHOLDS_MS: [u64; 7] = [1, 2, 4, 8, 16, 32, 64];
/// Queue depth of the small reads (ACT runs them on many service threads).
const READ_QD: u32 = 16;

/// The large-block stream of a job: writes and reads of `bs` bytes, each
/// at `rate_per_s`, on threads of their own beside the job's workers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LargeBlockLoad {
    pub bs: u64,
    pub rate_per_s: f64,
    /// The ACT multiplier this load was derived from.
    pub scale: f64,
}

/// Large-block writes (and as many reads) per second at `scale`: the
/// records written per second packed into large blocks, times the
/// defragmentation factor (1x: 23.4 per second).
pub fn large_block_rate(scale: f64) -> f64 {
    scale * WRITES_PER_S_1X * RECORD_BYTES as f64 / LARGE_BLOCK_BYTES as f64 * DEFRAG_FACTOR
}

/// `--act-scale`: ACT's load multiplier, above 0 (default 1).
pub fn scale(v: Option<f64>) -> anyhow::Result<f64> {
    match v {
        None => Ok(1.0),
        Some(n) if n > 0.0 && n <= 10_000.0 => Ok(n),
        Some(n) => Err(crate::error::usage(
            "--act-scale",
            format!("{n} is not a load multiplier (above 0, at most 10000)"),
        )),
    }
}

/// The ACT job at `scale` on the user's base job (target, engine, runtime).
pub fn job(base: &JobSpec, scale: f64) -> JobSpec {
    JobSpec {
        name: format!("act-{scale}x"),
        pattern: Pattern::RandRead,
        bs: vec![(RECORD_BYTES, 1)],
        qd: base.qd.max(READ_QD),
        batch: None,
        direct: true,
        open_loop: Some(OpenLoop {
            rate_iops: READS_PER_S_1X * scale,
            arrival: Arrival::Uniform,
        }),
        // ACT's table is per interval: keep each second's histogram.
        hist_log: true,
        large_blocks: Some(LargeBlockLoad {
            bs: LARGE_BLOCK_BYTES,
            rate_per_s: large_block_rate(scale),
            scale,
        }),
        ..base.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_follow_acts_formulas() {
        // ACT's README: 1500-byte records (1504 stored) at 1000 writes/s make
        // 11.47 large blocks/s, doubled by defragmentation; 1536 makes 11.72.
        assert!((large_block_rate(1.0) - 23.4375).abs() < 1e-9);
        let j = job(&JobSpec::default(), 3.0);
        assert_eq!(j.open_loop.unwrap().rate_iops, 6000.0);
        assert_eq!(j.bs, vec![(1536, 1)]);
        assert!(
            j.direct && j.hist_log && j.writes(),
            "large-block writes make it a writer"
        );
        assert!((j.large_blocks.unwrap().rate_per_s - 70.3125).abs() < 1e-9);
        assert_eq!(j.name, "act-3x");
    }
}
