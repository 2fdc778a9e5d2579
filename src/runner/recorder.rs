//! Per-worker measurement state: latency histograms per op kind and latency
//! type, counters, batch times, the per-second series, verification and
//! error counts. Workers record into their own Recorder (no sharing, no
//! locks); `merge` combines them after the run.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::engine::OpKind;
use crate::measure::histogram::LatencyHistogram;
use crate::results::{SeriesPoint, VerifyMismatch, VerifyStats};
use crate::runner::openloop::OpenLoopRecorder;

pub const SLAT: usize = 0;
pub const CLAT: usize = 1;
pub const LAT: usize = 2;
pub const LAT_KINDS: [&str; 3] = ["slat", "clat", "lat"];

const INTERVAL_NS: u64 = 1_000_000_000;
/// Interval histograms preallocated before timing (longer runs grow once a second).
const PREALLOC_INTERVALS: usize = 600;
const MAX_LISTED_MISMATCHES: usize = 64;

/// One interval of the time series while recording.
#[derive(Clone)]
pub struct Interval {
    pub ops: u64,
    pub bytes: u64,
    pub lat_sum: u64,
    pub hist: LatencyHistogram,
    /// Completion latencies, when fio histogram logs are asked for.
    pub clat_hist: Option<LatencyHistogram>,
}

impl Interval {
    fn new(with_clat: bool) -> Interval {
        Interval {
            ops: 0,
            bytes: 0,
            lat_sum: 0,
            hist: LatencyHistogram::with_sigfig(2),
            clat_hist: with_clat.then(|| LatencyHistogram::with_sigfig(2)),
        }
    }
}

/// What a worker publishes once a second for the live progress line: its
/// last complete second. Written at the worker's interval boundary (a cold
/// path, once a second), read by the supervising thread; the per-request
/// path never touches it.
#[derive(Debug, Default)]
pub struct LiveSlot {
    /// 1 + the index of the published second (0: nothing yet).
    pub second: AtomicU64,
    pub ops: AtomicU64,
    pub bytes: AtomicU64,
    pub lat_sum: AtomicU64,
    pub p99_ns: AtomicU64,
}

/// The last complete second over every worker: what the progress line shows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Live {
    pub iops: f64,
    pub mib_s: f64,
    pub mean_ns: f64,
    /// The largest of the workers' p99s (exact with one worker).
    pub p99_ns: u64,
    /// Which second of the job it is (1-based): a status line is printed
    /// once per second measured, never twice for the same one.
    pub second: u64,
}

impl Live {
    /// The most recent second every publishing worker agrees on (a worker
    /// that completed nothing for a while is left out).
    pub fn from_slots(slots: &[std::sync::Arc<LiveSlot>]) -> Option<Live> {
        let latest = slots
            .iter()
            .map(|s| s.second.load(Ordering::Acquire))
            .max()?;
        if latest == 0 {
            return None;
        }
        let (mut ops, mut bytes, mut lat, mut p99) = (0u64, 0u64, 0u64, 0u64);
        for s in slots
            .iter()
            .filter(|s| s.second.load(Ordering::Acquire) == latest)
        {
            ops += s.ops.load(Ordering::Relaxed);
            bytes += s.bytes.load(Ordering::Relaxed);
            lat += s.lat_sum.load(Ordering::Relaxed);
            p99 = p99.max(s.p99_ns.load(Ordering::Relaxed));
        }
        let secs = INTERVAL_NS as f64 / 1e9;
        Some(Live {
            iops: ops as f64 / secs,
            mib_s: bytes as f64 / secs / (1 << 20) as f64,
            mean_ns: if ops > 0 {
                lat as f64 / ops as f64
            } else {
                0.0
            },
            p99_ns: p99,
            second: latest,
        })
    }
}

pub struct Recorder {
    /// [op kind][slat/clat/lat]
    pub hist: [[LatencyHistogram; 3]; 3],
    pub ops: [u64; 3],
    pub bytes: [u64; 3],
    pub batch: LatencyHistogram,
    pub batches: u64,
    /// Start of the measured phase (end of ramp), shared by all workers.
    pub measure_start: u64,
    /// Last completion counted.
    pub last_done: u64,
    intervals: Vec<Interval>,
    /// Keep a completion-latency histogram per interval too.
    clat_per_interval: bool,
    cur: usize,
    next_boundary: u64,
    pub errors: BTreeMap<String, u64>,
    pub verify: VerifyStats,
    /// Intended-time latency and lateness of open-loop issuing (`--rate`).
    pub open_loop: Option<OpenLoopRecorder>,
    /// Where each complete second is published for the progress line.
    pub live: Option<std::sync::Arc<LiveSlot>>,
}

impl Recorder {
    /// `expected_intervals` sizes the preallocated series.
    pub fn new(measure_start: u64, expected_intervals: usize) -> Recorder {
        let n = expected_intervals.clamp(1, PREALLOC_INTERVALS);
        Recorder {
            hist: std::array::from_fn(|_| std::array::from_fn(|_| LatencyHistogram::new())),
            ops: [0; 3],
            bytes: [0; 3],
            batch: LatencyHistogram::new(),
            batches: 0,
            measure_start,
            last_done: measure_start,
            intervals: vec![Interval::new(false); n],
            clat_per_interval: false,
            cur: 0,
            next_boundary: measure_start + INTERVAL_NS,
            errors: BTreeMap::new(),
            verify: VerifyStats::default(),
            open_loop: None,
            live: None,
        }
    }

    /// Also keep each second's completion latencies (fio's histogram logs).
    pub fn keep_clat_per_interval(&mut self) {
        self.clat_per_interval = true;
        for iv in &mut self.intervals {
            iv.clat_hist = Some(LatencyHistogram::with_sigfig(2));
        }
    }

    /// Set the start of the measured phase (once the shared start is known).
    pub fn start_at(&mut self, measure_start: u64) {
        self.measure_start = measure_start;
        self.last_done = measure_start;
        self.next_boundary = measure_start + INTERVAL_NS;
    }

    /// Record one completed request. `t_sub` equal to `t_prep` means a
    /// synchronous engine: no submission latency is recorded.
    #[inline(always)]
    pub fn record(
        &mut self,
        op: OpKind,
        bytes: u64,
        t_prep: u64,
        t_sub: u64,
        t_done: u64,
        sync: bool,
    ) {
        let k = op.index();
        let lat = t_done.saturating_sub(t_prep);
        if !sync {
            self.hist[k][SLAT].record(t_sub.saturating_sub(t_prep));
        }
        let clat = t_done.saturating_sub(t_sub);
        self.hist[k][CLAT].record(clat);
        self.hist[k][LAT].record(lat);
        self.ops[k] += 1;
        self.bytes[k] += bytes;
        self.last_done = t_done;
        if t_done >= self.next_boundary {
            self.advance_interval(t_done);
        }
        let iv = &mut self.intervals[self.cur];
        iv.ops += 1;
        iv.bytes += bytes;
        iv.lat_sum += lat;
        iv.hist.record(lat);
        if let Some(h) = &mut iv.clat_hist {
            h.record(clat);
        }
    }

    #[cold]
    fn advance_interval(&mut self, t: u64) {
        if let Some(slot) = &self.live {
            let iv = &self.intervals[self.cur];
            slot.ops.store(iv.ops, Ordering::Relaxed);
            slot.bytes.store(iv.bytes, Ordering::Relaxed);
            slot.lat_sum.store(iv.lat_sum, Ordering::Relaxed);
            slot.p99_ns
                .store(iv.hist.value_at_percentile(99.0), Ordering::Relaxed);
            slot.second.store(self.cur as u64 + 1, Ordering::Release);
        }
        while t >= self.next_boundary {
            self.cur += 1;
            self.next_boundary += INTERVAL_NS;
            if self.cur >= self.intervals.len() {
                self.intervals.push(Interval::new(self.clat_per_interval));
            }
        }
    }

    pub fn record_batch(&mut self, ns: u64) {
        self.batch.record(ns);
        self.batches += 1;
    }

    #[cold]
    pub fn record_error(&mut self, errno_or_short: i64) {
        let key = if errno_or_short < 0 {
            std::io::Error::from_raw_os_error((-errno_or_short) as i32).to_string()
        } else {
            "short transfer".to_string()
        };
        *self.errors.entry(key).or_insert(0) += 1;
    }

    #[cold]
    pub fn record_mismatch(&mut self, offset: u64, reason: String) {
        self.verify.mismatches += 1;
        if self.verify.first_mismatches.len() < MAX_LISTED_MISMATCHES {
            self.verify
                .first_mismatches
                .push(VerifyMismatch { offset, reason });
        }
    }

    pub fn total_ops(&self) -> u64 {
        self.ops.iter().sum()
    }

    /// Add another worker's recorder into this one.
    pub fn merge(&mut self, other: &Recorder) {
        for k in 0..3 {
            for t in 0..3 {
                self.hist[k][t].merge(&other.hist[k][t]);
            }
            self.ops[k] += other.ops[k];
            self.bytes[k] += other.bytes[k];
        }
        self.batch.merge(&other.batch);
        self.batches += other.batches;
        self.last_done = self.last_done.max(other.last_done);
        let used = other.cur + 1;
        self.clat_per_interval |= other.clat_per_interval;
        while self.intervals.len() < used {
            self.intervals.push(Interval::new(self.clat_per_interval));
        }
        for (mine, theirs) in self
            .intervals
            .iter_mut()
            .zip(other.intervals.iter().take(used))
        {
            mine.ops += theirs.ops;
            mine.bytes += theirs.bytes;
            mine.lat_sum += theirs.lat_sum;
            mine.hist.merge(&theirs.hist);
            if let Some(h) = &theirs.clat_hist {
                mine.clat_hist
                    .get_or_insert_with(|| LatencyHistogram::with_sigfig(2))
                    .merge(h);
            }
        }
        self.cur = self.cur.max(other.cur);
        for (k, v) in &other.errors {
            *self.errors.entry(k.clone()).or_insert(0) += v;
        }
        if let Some(o) = &other.open_loop {
            self.open_loop.get_or_insert_with(Default::default).merge(o);
        }
        self.verify.blocks_checked += other.verify.blocks_checked;
        self.verify.mismatches += other.verify.mismatches;
        self.verify.never_written += other.verify.never_written;
        for m in &other.verify.first_mismatches {
            if self.verify.first_mismatches.len() < MAX_LISTED_MISMATCHES {
                self.verify.first_mismatches.push(m.clone());
            }
        }
    }

    /// The per-second series up to `end` (the last interval may be partial;
    /// a short one is folded into the one before it).
    pub fn series(&self, end: u64) -> Vec<SeriesPoint> {
        let span = end.saturating_sub(self.measure_start);
        let n = (span.div_ceil(INTERVAL_NS) as usize)
            .min(self.intervals.len())
            .max(1);
        let mut series: Vec<SeriesPoint> = self.intervals[..n]
            .iter()
            .enumerate()
            .map(|(i, iv)| {
                let start = i as u64 * INTERVAL_NS;
                let len = span.saturating_sub(start).clamp(1, INTERVAL_NS) as f64 / 1e9;
                SeriesPoint {
                    t_s: i as f64,
                    len_s: len,
                    iops: iv.ops as f64 / len,
                    mib_s: iv.bytes as f64 / len / (1 << 20) as f64,
                    mean_ns: if iv.ops > 0 {
                        iv.lat_sum as f64 / iv.ops as f64
                    } else {
                        0.0
                    },
                    p99_ns: (iv.ops > 0).then(|| iv.hist.value_at_percentile(99.0)),
                    clat_hist: iv.clat_hist.as_ref().map(LatencyHistogram::encode),
                }
            })
            .collect();
        crate::results::series::fold_short_tail(&mut series);
        series
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_and_series() {
        let s = 1_000_000_000u64;
        let mut r = Recorder::new(s, 3);
        // 10 reads of 100 us in second 0, 5 writes of 1 ms in second 2.
        for i in 0..10 {
            let t = s + i * 1_000_000;
            r.record(OpKind::Read, 4096, t, t + 10_000, t + 100_000, false);
        }
        for i in 0..5 {
            let t = s + 2 * 1_000_000_000 + i * 1_000_000;
            r.record(OpKind::Write, 8192, t, t, t + 1_000_000, true);
        }
        assert_eq!(r.ops, [10, 5, 0]);
        assert_eq!(r.hist[0][SLAT].len(), 10);
        assert_eq!(r.hist[1][SLAT].len(), 0, "sync engines record no slat");
        let series = r.series(s + 3 * 1_000_000_000);
        assert_eq!(series.len(), 3);
        assert_eq!(series[0].iops, 10.0);
        assert_eq!(series[1].iops, 0.0);
        assert_eq!(series[2].iops, 5.0);
        assert!((series[2].mean_ns - 1_000_000.0).abs() < 1.0);

        let mut other = Recorder::new(s, 3);
        other.record(OpKind::Read, 4096, s, s + 1, s + 50_000, false);
        other.record_error(-(libc::EIO as i64));
        r.merge(&other);
        assert_eq!(r.ops[0], 11);
        assert_eq!(r.series(s + 3 * 1_000_000_000)[0].iops, 11.0);
        assert_eq!(r.errors.values().sum::<u64>(), 1);
    }

    /// Issue 44 item 6: a run ending 54 us into its fourth second has three
    /// seconds, the last 1.000054 s long, not a fourth scaled to a second.
    #[test]
    fn a_run_ending_just_past_a_second_has_no_spike() {
        let s = 1_000_000_000u64;
        let mut r = Recorder::new(s, 4);
        for i in 0..3_000u64 {
            let t = s + i * 1_000_000;
            r.record(OpKind::Read, 4096, t, t, t + 10_000, false);
        }
        let t = s + 3 * s + 40_000;
        r.record(OpKind::Read, 4096, t, t, t + 10_000, false);
        let series = r.series(s + 3 * s + 54_000);
        assert_eq!(series.len(), 3);
        let last = series.last().unwrap();
        assert!((last.len_s - 1.000054).abs() < 1e-9, "{}", last.len_s);
        assert!(last.iops < 1001.0, "{}", last.iops);
    }
}
