//! The large-block streams of `--profile act`: one thread writing and one
//! reading blocks of `LargeBlockLoad::bs` at random aligned offsets, each
//! at a fixed rate (ACT's defragmentation threads), beside the job's
//! workers and recorded apart from them; and ACT's table of the small
//! reads from the point's per-interval histograms.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use crate::dut::Target;
use crate::measure::histogram::LatencyHistogram;
use crate::plan::act::{LargeBlockLoad, THRESHOLDS_MS};
use crate::results::ext::act::{ActInterval, ActPoint, LargeBlockStream};
use crate::results::Point;
use crate::runner::buffers::BufferPool;

/// What one stream did.
pub struct StreamOutcome {
    ops: u64,
    elapsed: Duration,
    lat: LatencyHistogram,
    max_lag: Duration,
}

/// The region a stream addresses: `(offset, len)` of the target.
pub type Region = (u64, u64);

/// Start the write and the read stream; they run until `stop` is set.
pub fn spawn<'s, 'e: 's>(
    scope: &'s Scope<'s, 'e>,
    load: &LargeBlockLoad,
    target: &'e Target,
    region: Region,
    (direct, seed): (bool, u64),
    stop: &'e AtomicBool,
) -> Vec<ScopedJoinHandle<'s, Result<StreamOutcome>>> {
    [true, false]
        .into_iter()
        .map(|write| {
            let load = *load;
            scope.spawn(move || {
                let (fd, _) = target.open(write, direct)?;
                run(&fd, &load, region, (write, seed ^ write as u64), stop)
            })
        })
        .collect()
}

/// The streams' outcomes (writes first); the first error if one failed.
pub fn join(
    handles: Vec<ScopedJoinHandle<'_, Result<StreamOutcome>>>,
) -> Result<Vec<StreamOutcome>> {
    handles
        .into_iter()
        .map(|h| h.join().expect("large-block thread panicked"))
        .collect()
}

/// One stream: an operation due every 1/rate from the start, waited for
/// asleep (in slices, so `stop` is seen within 50 ms).
fn run(
    fd: &OwnedFd,
    load: &LargeBlockLoad,
    (offset, len): Region,
    (write, seed): (bool, u64),
    stop: &AtomicBool,
) -> Result<StreamOutcome> {
    let bs = load.bs;
    let slots = len / bs;
    anyhow::ensure!(
        slots > 0,
        "the target is smaller than one large block ({bs} bytes)"
    );
    let pool = BufferPool::new(1, bs as usize, seed)?;
    let mut rng = SmallRng::seed_from_u64(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let gap = Duration::from_secs_f64(1.0 / load.rate_per_s);
    let mut lat = LatencyHistogram::new();
    let (mut ops, mut max_lag) = (0u64, Duration::ZERO);
    let start = Instant::now();
    while !stop.load(Ordering::Relaxed) && !crate::interrupt::stop_requested() {
        let due = start + gap.mul_f64(ops as f64);
        let now = Instant::now();
        if now < due {
            std::thread::sleep((due - now).min(Duration::from_millis(50)));
            continue;
        }
        max_lag = max_lag.max(now - due);
        let at = (offset + rng.random_range(0..slots) * bs) as libc::off_t;
        let t0 = Instant::now();
        // SAFETY: the pool's one slot holds `bs` bytes, aligned for O_DIRECT.
        let n = unsafe {
            if write {
                libc::pwrite(fd.as_raw_fd(), pool.base().cast(), bs as usize, at)
            } else {
                libc::pread(fd.as_raw_fd(), pool.base().cast(), bs as usize, at)
            }
        };
        if n != bs as isize {
            let e = std::io::Error::last_os_error();
            return Err(e).with_context(|| {
                format!(
                    "large-block {} at offset {at} returned {n}",
                    if write { "write" } else { "read" }
                )
            });
        }
        lat.record(t0.elapsed().as_nanos() as u64);
        ops += 1;
    }
    Ok(StreamOutcome {
        ops,
        elapsed: start.elapsed(),
        lat,
        max_lag,
    })
}

fn stream(o: &StreamOutcome) -> LargeBlockStream {
    LargeBlockStream {
        ops: o.ops,
        rate_per_s: o.ops as f64 / o.elapsed.as_secs_f64().max(1e-9),
        lat: o.lat.stats(),
        max_lag_ms: o.max_lag.as_secs_f64() * 1e3,
    }
}

/// Percent of a histogram's values over each of ACT's thresholds.
fn over_pct(h: &LatencyHistogram) -> Vec<f64> {
    THRESHOLDS_MS
        .iter()
        .map(|&ms| match h.is_empty() {
            true => 0.0,
            false => 100.0 * (1.0 - h.share_at_or_below(ms * 1_000_000)),
        })
        .collect()
}

/// ACT's table from the point's per-interval completion histograms (the
/// small reads: the large-block streams are not in the point's recorder).
pub fn table(p: &Point) -> (Vec<ActInterval>, Vec<f64>) {
    let mut all = LatencyHistogram::new();
    let mut rows = Vec::new();
    for s in &p.series {
        let Some(h) = s
            .clat_hist
            .as_deref()
            .and_then(|e| LatencyHistogram::decode(e).ok())
        else {
            continue;
        };
        all.merge(&h);
        rows.push(ActInterval {
            t_s: s.t_s,
            reads: h.len(),
            over_pct: over_pct(&h),
        });
    }
    (rows, over_pct(&all))
}

/// The point's `extra.act` section.
pub fn section(p: &Point, load: &LargeBlockLoad, streams: &[StreamOutcome]) -> ActPoint {
    let (intervals, over) = table(p);
    ActPoint {
        scale: load.scale,
        large_block_bytes: load.bs,
        large_block_rate_per_s: load.rate_per_s,
        large_block_writes: streams.first().map(stream).unwrap_or_default(),
        large_block_reads: streams.get(1).map(stream).unwrap_or_default(),
        thresholds_ms: THRESHOLDS_MS.to_vec(),
        intervals,
        over_pct: over,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::SeriesPoint;

    fn second(t_s: f64, values: &[(u64, u64)]) -> SeriesPoint {
        let mut h = LatencyHistogram::new();
        for &(ns, n) in values {
            h.record_n(ns, n);
        }
        SeriesPoint {
            t_s,
            len_s: 1.0,
            iops: 0.0,
            mib_s: 0.0,
            mean_ns: 0.0,
            p99_ns: None,
            clat_hist: Some(h.encode()),
        }
    }

    #[test]
    fn the_table_counts_reads_over_each_threshold_per_interval() {
        let json = include_str!("../../tests/fixtures/report/device-loadlat.json");
        let r: crate::results::Results = serde_json::from_str(json).expect("fixture");
        let mut p = r.points[0].clone();
        p.series = vec![
            // 100 reads: 90 fast, 6 at 1.5 ms, 3 at 10 ms, 1 at 100 ms.
            second(
                0.0,
                &[
                    (200_000, 90),
                    (1_500_000, 6),
                    (10_000_000, 3),
                    (100_000_000, 1),
                ],
            ),
            second(1.0, &[(300_000, 100)]),
        ];
        let (rows, whole) = table(&p);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].reads, 100);
        let first: Vec<f64> = rows[0].over_pct.iter().map(|v| v.round()).collect();
        assert_eq!(first, [10.0, 4.0, 4.0, 4.0, 1.0, 1.0, 1.0]);
        assert!(rows[1].over_pct.iter().all(|&v| v == 0.0));
        assert!((whole[0] - 5.0).abs() < 1e-9, "{whole:?}");
    }
}
