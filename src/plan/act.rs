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
/// ACT's `defrag-lwm-pct` default: defragmentation writes 100 / (100 - 50)
/// = 2 times what the clients write.
pub const DEFRAG_LWM_PCT: u32 = 50;
/// act_storage stores a record rounded up to this many bytes (`RBLOCK_SIZE`).
const RBLOCK_BYTES: u64 = 16;
/// ACT's `max-lag-sec` default: a stream this far behind stops the test.
pub const MAX_LAG_S: f64 = 10.0;
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
    /// A stream this many seconds behind its schedule stops the test
    /// (ACT's `max-lag-sec`); none in results written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_lag_s: Option<f64>,
}

impl LargeBlockLoad {
    pub fn max_lag(&self) -> Option<std::time::Duration> {
        self.max_lag_s.map(std::time::Duration::from_secs_f64)
    }
}

/// Large-block writes (and as many reads) per second at `scale`, as
/// act_storage derives them (cfg_storage.c): the whole records a large
/// block holds (an integer division), the client writes per second (an
/// integer in ACT's configuration) over that, times the defragmentation
/// amplification 100 / (100 - defrag-lwm-pct). 1x: 1000 / (131072 / 1536
/// = 85) x 2 = 23.53 per second.
pub fn large_block_rate(scale: f64) -> f64 {
    let writes = (WRITES_PER_S_1X * scale).round();
    let stored = RECORD_BYTES.div_ceil(RBLOCK_BYTES) * RBLOCK_BYTES;
    let per_block = (LARGE_BLOCK_BYTES / stored).max(1);
    writes / per_block as f64 * 100.0 / f64::from(100 - DEFRAG_LWM_PCT)
}

/// `--act-scale`: ACT's load multiplier (default 1), from 0.001 (ACT's
/// rates are whole requests per second: at least one write) to 10000.
pub fn scale(v: Option<f64>) -> anyhow::Result<f64> {
    match v {
        None => Ok(1.0),
        Some(n) if (0.001..=10_000.0).contains(&n) => Ok(n),
        Some(n) => Err(crate::error::usage(
            "--act-scale",
            format!("{n} is not a load multiplier (from 0.001, one write per second, to 10000)"),
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
            max_lag_s: Some(MAX_LAG_S),
        }),
        ..base.clone()
    }
}

/// An ACT job on a device whose logical sectors do not divide its reads
/// (4 KiB sectors): the job with its reads rounded up to the sector, as
/// act_storage does, and the warning that says so. `None` when it fits.
pub fn fit_to_sector(spec: &JobSpec, sector: Option<u64>) -> Option<(JobSpec, String)> {
    let sector = sector.filter(|&s| s > 0)?;
    let fits = spec.bs.iter().all(|&(b, _)| b % sector == 0);
    if spec.large_blocks.is_none() || !spec.direct || fits {
        return None;
    }
    let bs: Vec<(u64, u32)> = spec
        .bs
        .iter()
        .map(|&(b, w)| (b.div_ceil(sector) * sector, w))
        .collect();
    let warning = format!(
        "ACT: the device's logical sectors are {sector} bytes: the small reads are {} bytes, not {} (rounded up to the sector, as act_storage does)",
        bs[0].0, spec.bs[0].0
    );
    Some((JobSpec { bs, ..spec.clone() }, warning))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_follow_acts_formulas() {
        // act_storage prints "large-block-writes-per-sec: 23.53" at 1x: 85
        // whole 1536-byte records per 128 KiB block (not 85.33).
        assert_eq!(format!("{:.2}", large_block_rate(1.0)), "23.53");
        assert!((large_block_rate(1.0) - 2000.0 / 85.0).abs() < 1e-9);
        assert_eq!(format!("{:.2}", large_block_rate(0.5)), "11.76");
        assert!(
            large_block_rate(0.001) > 0.0,
            "the smallest scale still writes"
        );
        assert!(scale(Some(0.0004)).is_err() && scale(Some(0.001)).is_ok());
        let j = job(&JobSpec::default(), 3.0);
        assert_eq!(j.open_loop.unwrap().rate_iops, 6000.0);
        assert_eq!(j.bs, vec![(1536, 1)]);
        assert!(
            j.direct && j.hist_log && j.writes(),
            "large-block writes make it a writer"
        );
        assert_eq!(
            format!("{:.2}", j.large_blocks.unwrap().rate_per_s),
            "70.59"
        );
        assert_eq!(j.large_blocks.unwrap().max_lag_s, Some(10.0));
        assert_eq!(j.name, "act-3x");
    }

    #[test]
    fn an_act_job_on_4k_sectors_reads_whole_sectors_with_a_warning() {
        let j = job(&JobSpec::default(), 1.0);
        assert!(fit_to_sector(&j, Some(512)).is_none());
        assert!(fit_to_sector(&j, None).is_none());
        let (fitted, warning) = fit_to_sector(&j, Some(4096)).expect("rounded");
        assert_eq!(fitted.bs, vec![(4096, 1)]);
        assert!(warning.contains("4096"), "{warning}");
        assert!(fit_to_sector(&JobSpec::default(), Some(4096)).is_none());
    }
}
