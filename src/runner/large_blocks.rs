//! The large-block streams of `--profile act`: one thread writing and one
//! reading blocks of `LargeBlockLoad::bs` at random aligned offsets, each
//! at a fixed rate (ACT's defragmentation threads), beside the job's
//! workers and recorded apart from them. As ACT: the writes are O_DSYNC,
//! each from another random-filled buffer, and a stream that falls
//! `max_lag` behind its schedule stops the test.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use crate::dut::{OpenHow, Target};
use crate::measure::histogram::LatencyHistogram;
use crate::plan::act::LargeBlockLoad;
use crate::results::ext::act::LargeBlockStream;
use crate::runner::buffers::BufferPool;

/// Distinct random buffers the writes rotate through (filled before the
/// schedule starts; ACT refills its one buffer before every write).
const WRITE_BUFFERS: usize = 8;

/// What one stream did.
pub struct StreamOutcome {
    ops: u64,
    elapsed: Duration,
    lat: LatencyHistogram,
    max_lag: Duration,
    /// The lag at which it stopped the test (ACT's `max-lag-sec`).
    pub lag_stop: Option<Duration>,
}

/// The region a stream addresses: `(offset, len)` of the target.
pub type Region = (u64, u64);

/// The streams' descriptors, opened before the job's first I/O so that a
/// target they cannot use fails the job at once, not after its runtime.
pub struct Opened {
    write: OwnedFd,
    read: OwnedFd,
}

/// Open the write stream's descriptor (O_DIRECT as the job, O_DSYNC) and
/// the read stream's. `claimed`: the workers hold the device's exclusive
/// claim already (they opened it for writing), so the writer opens beside
/// it rather than asking for it a second time.
pub fn open(
    load: &LargeBlockLoad,
    target: &Target,
    (_, len): Region,
    direct: bool,
    claimed: bool,
) -> Result<Opened> {
    anyhow::ensure!(
        len / load.bs > 0,
        "the target is smaller than one large block ({} bytes)",
        load.bs
    );
    let (write, _) = target.open_as(OpenHow {
        write: true,
        direct,
        dsync: true,
        beside_claim: claimed,
    })?;
    let (read, _) = target.open(false, direct)?;
    Ok(Opened { write, read })
}

/// `open` for a job with large blocks (`None` without), its errors naming the job.
pub fn open_for(
    spec: &crate::plan::job::JobSpec,
    target: &Target,
    size: u64,
    direct: bool,
    claimed: bool,
) -> Result<Option<Opened>> {
    spec.large_blocks
        .as_ref()
        .map(|load| open(load, target, (spec.offset, size), direct, claimed))
        .transpose()
        .with_context(|| format!("job {}: the large-block streams", spec.name))
}

/// Start the write and the read stream; they run until `stop` is set. A
/// stream falling `max_lag` behind sets `halt` (the job's workers' stop).
pub fn spawn<'s, 'e: 's>(
    scope: &'s Scope<'s, 'e>,
    load: &LargeBlockLoad,
    opened: Opened,
    region: Region,
    seed: u64,
    (stop, halt): (&'e AtomicBool, &'e AtomicBool),
) -> Vec<ScopedJoinHandle<'s, Result<StreamOutcome>>> {
    [(true, opened.write), (false, opened.read)]
        .into_iter()
        .map(|(write, fd)| {
            let load = *load;
            scope.spawn(move || {
                let r = run(&fd, &load, region, (write, seed ^ write as u64), stop);
                if matches!(&r, Ok(o) if o.lag_stop.is_some()) {
                    halt.store(true, Ordering::SeqCst);
                }
                r
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

/// Whether a stream `lag` behind its schedule stops the test.
pub fn lags_too_far(lag: Duration, max_lag: Option<Duration>) -> bool {
    max_lag.is_some_and(|m| lag > m)
}

/// A stream's buffers and how many: the writes rotate through
/// `WRITE_BUFFERS` distinct random ones, the reads need one.
fn buffers(write: bool, bs: u64, seed: u64) -> Result<(BufferPool, usize)> {
    let n = if write { WRITE_BUFFERS } else { 1 };
    Ok((BufferPool::new(n, bs as usize, seed)?, n))
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
    let (pool, buffers) = buffers(write, bs, seed)?;
    let mut rng = SmallRng::seed_from_u64(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let gap = Duration::from_secs_f64(1.0 / load.rate_per_s);
    let mut lat = LatencyHistogram::new();
    let (mut ops, mut max_lag, mut lag_stop) = (0u64, Duration::ZERO, None);
    let start = Instant::now();
    while !stop.load(Ordering::Relaxed) && !crate::interrupt::stop_requested() {
        let due = start + gap.mul_f64(ops as f64);
        let now = Instant::now();
        if now < due {
            std::thread::sleep((due - now).min(Duration::from_millis(50)));
            continue;
        }
        let lag = now - due;
        max_lag = max_lag.max(lag);
        if lags_too_far(lag, load.max_lag()) {
            lag_stop = Some(lag);
            break;
        }
        let at = (offset + rng.random_range(0..slots) * bs) as libc::off_t;
        let buf = pool.slot_ptr(ops as usize % buffers);
        let t0 = Instant::now();
        // SAFETY: each of the pool's slots holds `bs` bytes, aligned for O_DIRECT.
        let n = unsafe {
            if write {
                libc::pwrite(fd.as_raw_fd(), buf.cast(), bs as usize, at)
            } else {
                libc::pread(fd.as_raw_fd(), buf.cast(), bs as usize, at)
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
        lag_stop,
    })
}

impl StreamOutcome {
    /// The stream in results' terms.
    pub fn summary(&self) -> LargeBlockStream {
        LargeBlockStream {
            ops: self.ops,
            rate_per_s: self.ops as f64 / self.elapsed.as_secs_f64().max(1e-9),
            lat: self.lat.stats(),
            max_lag_ms: self.max_lag.as_secs_f64() * 1e3,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_stops_the_test_only_past_the_max_lag() {
        let ten = Some(Duration::from_secs(10));
        assert!(!lags_too_far(Duration::from_secs(10), ten));
        assert!(lags_too_far(Duration::from_millis(10_001), ten));
        assert!(!lags_too_far(Duration::from_secs(3600), None));
    }

    #[test]
    fn writes_rotate_through_distinct_random_buffers() {
        let bs = 128 << 10;
        let (mut pool, n) = buffers(true, bs, 9).unwrap();
        assert!(n >= 2, "one buffer rewritten as is: {n}");
        let slots: Vec<Vec<u8>> = (0..n).map(|i| pool.slot(i, bs as usize).to_vec()).collect();
        for i in 0..n {
            for j in i + 1..n {
                assert_ne!(slots[i], slots[j], "buffers {i} and {j} are the same");
            }
        }
        assert_eq!(buffers(false, bs, 9).unwrap().1, 1);
    }

    /// The flags of an open descriptor, from /proc/self/fdinfo (octal).
    fn fd_flags(fd: &OwnedFd) -> i32 {
        let info =
            std::fs::read_to_string(format!("/proc/self/fdinfo/{}", fd.as_raw_fd())).unwrap();
        let line = info.lines().find(|l| l.starts_with("flags:")).unwrap();
        i32::from_str_radix(line.trim_start_matches("flags:").trim(), 8).unwrap()
    }

    #[test]
    fn the_writer_is_o_dsync_and_both_open_before_any_io() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        std::fs::write(&path, vec![0u8; 1 << 20]).unwrap();
        let mut t = Target::none(1 << 20);
        t.path = path;
        t.kind = crate::results::target::TargetKind::ExistingFile;
        t.writable = true;
        let load = crate::plan::act::job(&crate::plan::job::JobSpec::default(), 1.0)
            .large_blocks
            .unwrap();
        let o = open(&load, &t, (0, 1 << 20), false, false).unwrap();
        assert_ne!(fd_flags(&o.write) & libc::O_DSYNC, 0, "writes are O_DSYNC");
        assert_eq!(fd_flags(&o.read) & libc::O_DSYNC, 0);
        assert_eq!(fd_flags(&o.read) & libc::O_ACCMODE, libc::O_RDONLY);
        let small = open(&load, &t, (0, 64 << 10), false, false);
        assert!(
            small.is_err(),
            "a region under one large block fails at open"
        );
    }
}
