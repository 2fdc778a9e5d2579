//! Run one job: split the target among workers, start them together, let
//! the main thread sample system counters and report progress (it never
//! touches the hot path), then merge the workers' recorders into a Point.

use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use anyhow::Context;

use crate::dut::{scratch, Target, TargetKind};
use crate::engine::aio::AioEngine;
use crate::engine::fake::FakeEngine;
use crate::engine::mmap::MmapEngine;
use crate::engine::null::NullEngine;
use crate::engine::psync::PsyncEngine;
use crate::engine::uring::UringEngine;
use crate::engine::{self, Engine, EngineKind, EngineSetup, FeatureProbe, OpKind};
use crate::error::usage;
use crate::measure::clock::{Clock, MonoClock, VirtualClock};
use crate::measure::diskstats::{DeviceStats, DiskSampler};
use crate::measure::procstat::CpuTicks;
use crate::measure::rusage::RusageSnapshot;
use crate::plan::job::{Arrival, JobSpec, RegionMode};
use crate::plan::parse::format_size;
use crate::results::{time, BatchStats, OpStats, Point, Totals};
use crate::runner::buffers::BufferPool;
use crate::runner::openloop::{self, OpenLoopSpec};
use crate::runner::pattern::{PatternSpec, RequestGen};
use crate::runner::recorder::{Recorder, CLAT, LAT, LAT_KINDS, SLAT};
use crate::runner::worker::{self, LoopSpec, RequestLog};

/// How a job is run, beyond its spec.
#[derive(Default)]
pub struct RunOptions<'a> {
    /// Keep a per-request log of this many records per worker (stack breakdown).
    pub record_requests: Option<usize>,
    /// Called about once a second with (elapsed s, expected total s).
    pub on_progress: Option<&'a (dyn Fn(f64, Option<f64>) + Sync)>,
}

/// What a job produced.
pub struct JobOutcome {
    pub point: Point,
    pub request_logs: Vec<RequestLog>,
    pub features: Vec<FeatureProbe>,
}

/// Run `spec` on `target` with the real clock (or a virtual one for `fake`).
pub fn run_job(spec: &JobSpec, target: &Target, opts: &RunOptions) -> anyhow::Result<JobOutcome> {
    if spec.engine == EngineKind::Fake {
        run_job_with_clock(spec, target, VirtualClock::new(1_000_000_000), opts)
    } else {
        run_job_with_clock(spec, target, MonoClock, opts)
    }
}

/// Worker regions: (start, len), aligned to the largest block size.
pub fn regions(spec: &JobSpec, size: u64) -> Vec<(u64, u64)> {
    let n = spec.jobs as u64;
    let split = spec.region == RegionMode::Split || (spec.verify && n > 1);
    if !split {
        return vec![(0, size); n as usize];
    }
    let align = spec.max_bs();
    let per = (size / n) / align * align;
    (0..n).map(|i| (i * per, per)).collect()
}

fn check_against_target(spec: &JobSpec, target: &Target, size: u64) -> anyhow::Result<()> {
    if spec.max_bs() > size {
        return Err(usage(
            "--bs",
            format!(
                "block size {} is larger than the target's {} bytes",
                format_size(spec.max_bs()),
                size
            ),
        ));
    }
    let regions = regions(spec, size);
    if regions.iter().any(|&(_, len)| len < spec.max_bs()) {
        return Err(usage(
            "--jobs",
            format!(
                "{} jobs split {} bytes into regions smaller than a block",
                spec.jobs, size
            ),
        ));
    }
    if spec.direct && spec.engine.needs_file() {
        if let Some(lbs) = target.disk.as_ref().and_then(|d| d.logical_block_size) {
            if let Some(&(b, _)) = spec.bs.iter().find(|&&(b, _)| b % lbs != 0) {
                return Err(usage("--bs", format!("{b} is not a multiple of the device's logical block size {lbs} (O_DIRECT needs it)")));
            }
        }
    }
    if spec.verify {
        let blocks = regions[0].1 / spec.max_bs();
        if blocks > 16 << 20 {
            return Err(usage(
                "--verify",
                format!("{blocks} blocks per worker is too many to track; use a smaller --size"),
            ));
        }
    }
    if spec.writes() && !target.writable {
        anyhow::bail!("target {} is not writable", target.path.display());
    }
    Ok(())
}

struct WorkerResult {
    rec: Recorder,
    log: Option<RequestLog>,
    error: Option<String>,
}

/// Engine dispatch without dynamic calls on the hot path: one monomorphized
/// loop per engine type.
#[allow(clippy::too_many_arguments)]
fn drive<C: Clock, E: Engine>(
    mut engine: E,
    clock: &C,
    ls: &LoopSpec,
    gen: &mut RequestGen,
    pool: &mut BufferPool,
    rec: &mut Recorder,
    log: Option<&mut RequestLog>,
    stop: &AtomicBool,
    open_loop: Option<&OpenLoopSpec>,
) -> Result<(), String> {
    match open_loop {
        Some(ol) => openloop::run(&mut engine, clock, ls, ol, gen, pool, rec, stop),
        None => worker::run(&mut engine, clock, ls, gen, pool, rec, log, stop),
    }
    .map_err(|e| e.to_string())
}

pub fn run_job_with_clock<C: Clock>(
    spec: &JobSpec,
    target: &Target,
    clock: C,
    opts: &RunOptions,
) -> anyhow::Result<JobOutcome> {
    spec.validate()?;
    let size = spec.size.map_or(target.size, |s| s.min(target.size));
    check_against_target(spec, target, size)?;
    let mut warnings = Vec::new();
    if spec.engine.is_sync() && spec.qd > 1 && spec.batch.is_none() {
        warnings.push(format!(
            "{} is synchronous: one request in flight per job, so --qd {} has no effect; use --jobs or an async engine (aio, io_uring)",
            spec.engine.name(),
            spec.qd
        ));
    }
    if spec.verify && spec.jobs > 1 && spec.region == RegionMode::Shared {
        warnings
            .push("--verify with several jobs splits the target into one region per job".into());
    }

    // Open one descriptor per worker (each worker owns its engine instance).
    let writes = spec.writes();
    let mut fds: Vec<Option<OwnedFd>> = Vec::new();
    let mut direct = spec.direct && spec.engine.needs_file();
    let mut features = Vec::new();
    if spec.engine.needs_file() {
        for i in 0..spec.jobs {
            let (fd, d) = target.open(writes, spec.direct)?;
            if i == 0 {
                direct = d;
                features = engine::probe_features(spec.engine, fd.as_raw_fd(), &spec.uring)?;
            }
            fds.push(Some(fd));
        }
        if spec.direct && !direct {
            let fs = target
                .fs
                .as_ref()
                .map(|f| f.fstype.clone())
                .unwrap_or_else(|| "this filesystem".into());
            warnings.push(format!(
                "O_DIRECT is not supported on {fs}: fell back to buffered I/O, so the page cache is not bypassed"
            ));
        }
        if !direct {
            if let Some(Some(fd)) = fds.first() {
                scratch::drop_cache(fd.as_raw_fd(), size);
            }
            let ram = crate::results::provenance::memory_bytes();
            if spec.read_percent() > 0 && size < ram {
                warnings.push(format!(
                    "buffered reads of {} MiB on a machine with {} MiB of RAM: after the first touch they are served by the page cache, not the device; use O_DIRECT (the default, drop --buffered) or a --size larger than RAM",
                    size >> 20,
                    ram >> 20
                ));
            }
        }
    } else {
        fds.resize_with(spec.jobs as usize, || None);
    }

    let depth = spec.depth();
    let regions = regions(spec, size);
    let n = spec.jobs as usize;
    let barrier = Arc::new(Barrier::new(n + 1));
    let start = AtomicU64::new(0);
    let job_stop = AtomicBool::new(false);
    let ramp = spec.ramp_ns;
    let runtime = spec.stop.runtime_ns;
    let expected_s = runtime.map(|r| (r + ramp) as f64 / 1e9);
    let per_worker = |total: Option<u64>| total.map(|t| t.div_ceil(n as u64)).unwrap_or(u64::MAX);
    let disk = target
        .disk
        .as_ref()
        .map(|d| DiskSampler::new(d.disk.clone()));

    let started_at = time::now_rfc3339();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let (results, sys) = std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for (i, fd) in fds.into_iter().enumerate() {
            let barrier = barrier.clone();
            let (start, job_stop, clock) = (&start, &job_stop, clock.clone());
            let (region_start, region_len) = regions[i];
            let cpus = spec.cpus.clone();
            let record = opts.record_requests;
            let done = DoneSignal(done_tx.clone());
            handles.push(scope.spawn(move || {
                let _done = done;
                if let Some(cpus) = &cpus {
                    pin_to_cpu(cpus[i % cpus.len()]);
                }
                let seed = spec.seed ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let setup_result = (|| -> anyhow::Result<(BufferPool, RequestGen)> {
                    let pool = BufferPool::new(depth as usize, spec.max_bs() as usize, seed)?;
                    let gen = RequestGen::new(&PatternSpec {
                        read_pct: spec.read_percent(),
                        random: spec.pattern.is_random(),
                        bs: spec.bs.clone(),
                        align: spec.min_bs(),
                        region_start,
                        region_len,
                        seed,
                    })
                    .map_err(|e| usage("--bs", e))?;
                    Ok((pool, gen))
                })();
                let mut rec = Recorder::new(0, expected_s.map(|s| s as usize + 2).unwrap_or(60));
                if spec.open_loop.is_some() {
                    rec.open_loop = Some(Default::default());
                }
                let mut log = record.map(RequestLog::with_capacity);
                let (mut pool, mut gen) = match setup_result {
                    Ok(v) => v,
                    Err(e) => {
                        job_stop.store(true, Ordering::SeqCst);
                        barrier.wait();
                        barrier.wait();
                        return WorkerResult {
                            rec,
                            log,
                            error: Some(format!("{e:#}")),
                        };
                    }
                };
                let setup = EngineSetup {
                    fd: fd.as_ref().map(|f| f.as_raw_fd()).unwrap_or(-1),
                    file_size: size,
                    depth,
                    pool_base: pool.base(),
                    pool_len: pool.len(),
                    uring: spec.uring,
                    writable: writes,
                };
                barrier.wait();
                barrier.wait();
                let t0 = start.load(Ordering::SeqCst);
                rec.start_at(t0 + ramp);
                let ls = LoopSpec {
                    depth,
                    batch: spec.batch.is_some(),
                    sync_engine: spec.engine.is_sync(),
                    measure_start: t0 + ramp,
                    deadline: runtime.map(|r| t0 + ramp + r).unwrap_or(u64::MAX),
                    max_ops: per_worker(spec.stop.io_count),
                    max_bytes: per_worker(spec.stop.io_bytes),
                    fsync_every: spec.fsync_every,
                    submit_batch: spec.submit_batch,
                    verify_bs: if spec.verify {
                        Some(spec.max_bs())
                    } else {
                        None
                    },
                    region_start,
                    region_len,
                };
                let ol = spec.open_loop.map(|o| OpenLoopSpec {
                    mean_gap_ns: 1e9 * n as f64 / o.rate_iops,
                    poisson: o.arrival == Arrival::Poisson,
                    seed,
                });
                let ol = ol.as_ref();
                let (g, p, r, l) = (&mut gen, &mut pool, &mut rec, log.as_mut());
                let outcome = if job_stop.load(Ordering::SeqCst) {
                    Err("another worker failed to start".to_string())
                } else {
                    match spec.engine {
                        EngineKind::Null => drive(
                            NullEngine::new(depth),
                            &clock,
                            &ls,
                            g,
                            p,
                            r,
                            l,
                            job_stop,
                            ol,
                        ),
                        EngineKind::Psync => drive(
                            PsyncEngine::new(setup.fd),
                            &clock,
                            &ls,
                            g,
                            p,
                            r,
                            l,
                            job_stop,
                            ol,
                        ),
                        EngineKind::Aio => match AioEngine::new(&setup) {
                            Ok(e) => drive(e, &clock, &ls, g, p, r, l, job_stop, ol),
                            Err(e) => Err(format!("cannot set up kernel AIO: {e}")),
                        },
                        EngineKind::IoUring => match UringEngine::new(&setup) {
                            Ok(e) => drive(e, &clock, &ls, g, p, r, l, job_stop, ol),
                            Err(e) => Err(format!("cannot set up io_uring: {e}")),
                        },
                        EngineKind::Mmap => match MmapEngine::new(&setup) {
                            Ok(e) => drive(e, &clock, &ls, g, p, r, l, job_stop, ol),
                            Err(e) => Err(format!("cannot map the target: {e}")),
                        },
                        EngineKind::Fake => match as_virtual(&clock) {
                            Some(vc) => {
                                let script = spec.fake.clone().unwrap_or_default();
                                drive(
                                    FakeEngine::new(script, depth, vc),
                                    &clock,
                                    &ls,
                                    g,
                                    p,
                                    r,
                                    l,
                                    job_stop,
                                    ol,
                                )
                            }
                            None => Err("the fake engine needs the virtual clock".to_string()),
                        },
                    }
                };
                if outcome.is_err() {
                    job_stop.store(true, Ordering::SeqCst);
                }
                drop(fd);
                WorkerResult {
                    rec,
                    log,
                    error: outcome.err(),
                }
            }));
        }

        drop(done_tx);
        barrier.wait();
        start.store(clock.now(), Ordering::SeqCst);
        let wall0 = std::time::Instant::now();
        barrier.wait();
        // Sample system counters at the end of the ramp, off the hot path.
        if ramp > 0 && spec.engine != EngineKind::Fake {
            sleep_unless_done(&handles, Duration::from_nanos(ramp));
        }
        let ru0 = RusageSnapshot::now();
        let st0 = CpuTicks::now();
        let d0 = disk.as_ref().and_then(|d| d.sample());
        let t_measure = std::time::Instant::now();
        let mut last_tick = std::time::Instant::now();
        // Wake when a worker ends (not on a polling period) or to report progress.
        let mut finished = 0;
        while finished < n {
            let wait = Duration::from_secs(1).saturating_sub(last_tick.elapsed());
            match done_rx.recv_timeout(wait.max(Duration::from_millis(1))) {
                Ok(()) => finished += 1,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            }
            if let Some(cb) = opts.on_progress {
                if last_tick.elapsed() >= Duration::from_secs(1) {
                    last_tick = std::time::Instant::now();
                    cb(wall0.elapsed().as_secs_f64(), expected_s);
                }
            }
        }
        let wall = t_measure.elapsed().as_nanos() as u64;
        let ru1 = RusageSnapshot::now();
        let st1 = CpuTicks::now();
        let d1 = disk.as_ref().and_then(|d| d.sample());
        let results: Vec<WorkerResult> = handles
            .into_iter()
            .map(|h| h.join().expect("worker thread panicked"))
            .collect();
        let cpu = ru1.since(&ru0, wall);
        let device = match (&disk, d0, d1) {
            (Some(d), Some(a), Some(b)) => Some(DeviceStats::between(&d.device, &a, &b, wall)),
            _ => None,
        };
        let ncpu = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        let system = st0.zip(st1).map(|(a, b)| b.since(&a, ncpu));
        (results, (cpu, device, system))
    });

    if let Some(err) = results.iter().find_map(|r| r.error.clone()) {
        return Err(anyhow::anyhow!(err)).with_context(|| format!("job {} failed", spec.name));
    }
    let mut merged = Recorder::new(0, 1);
    let measure_start = results.first().map(|r| r.rec.measure_start).unwrap_or(0);
    merged.start_at(measure_start);
    let mut logs = Vec::new();
    for r in results {
        merged.merge(&r.rec);
        logs.extend(r.log);
    }
    let (cpu, device, system) = sys;
    let mut point = build_point(
        spec,
        &merged,
        started_at,
        direct,
        cpu,
        device,
        warnings,
        target.kind,
    );
    if let Some(system) = system {
        // The whole machine's CPU, incl. iowait (the report stacks it with usr/sys).
        point
            .extra
            .insert("cpu".into(), serde_json::to_value(system)?);
    }
    Ok(JobOutcome {
        point,
        request_logs: logs,
        features,
    })
}

/// Tells the main thread that a worker ended, on every way out (even a panic).
struct DoneSignal(std::sync::mpsc::Sender<()>);

impl Drop for DoneSignal {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

fn as_virtual<C: Clock>(clock: &C) -> Option<VirtualClock> {
    (clock as &dyn std::any::Any)
        .downcast_ref::<VirtualClock>()
        .cloned()
}

fn sleep_unless_done<T>(handles: &[std::thread::ScopedJoinHandle<'_, T>], d: Duration) {
    let until = std::time::Instant::now() + d;
    while std::time::Instant::now() < until && !handles.iter().all(|h| h.is_finished()) {
        std::thread::sleep(
            Duration::from_millis(10)
                .min(until.saturating_duration_since(std::time::Instant::now())),
        );
    }
}

fn pin_to_cpu(cpu: usize) {
    // SAFETY: cpu_set_t is plain data; sched_setaffinity on the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Point parameters used to match points across runs.
pub fn params_of(spec: &JobSpec) -> BTreeMap<String, String> {
    let mut p = BTreeMap::new();
    p.insert("rw".into(), spec.pattern.name().into());
    p.insert("bs".into(), spec.bs_label());
    p.insert("qd".into(), spec.depth().to_string());
    p.insert("jobs".into(), spec.jobs.to_string());
    p.insert("engine".into(), spec.engine.name().into());
    if spec.pattern.is_mixed() {
        p.insert("mix".into(), spec.mix.to_string());
    }
    if let Some(k) = spec.batch {
        p.insert("batch".into(), k.to_string());
    }
    if let Some(ol) = &spec.open_loop {
        p.insert("rate".into(), format!("{:.0}", ol.rate_iops));
        p.insert("arrival".into(), ol.arrival.name().into());
    }
    p
}

#[allow(clippy::too_many_arguments)]
fn build_point(
    spec: &JobSpec,
    rec: &Recorder,
    started_at: String,
    direct: bool,
    cpu: crate::measure::rusage::CpuStats,
    device: Option<DeviceStats>,
    mut warnings: Vec<String>,
    kind: TargetKind,
) -> Point {
    let duration_ns = rec.last_done.saturating_sub(rec.measure_start);
    let secs = (duration_ns as f64 / 1e9).max(1e-9);
    let mut ops = BTreeMap::new();
    let mut histograms = BTreeMap::new();
    for op in OpKind::ALL {
        let k = op.index();
        if rec.ops[k] == 0 {
            continue;
        }
        for t in [SLAT, CLAT, LAT] {
            if !rec.hist[k][t].is_empty() {
                histograms.insert(
                    format!("{}.{}", op.name(), LAT_KINDS[t]),
                    rec.hist[k][t].encode(),
                );
            }
        }
        ops.insert(
            op.name().to_string(),
            OpStats {
                ops: rec.ops[k],
                bytes: rec.bytes[k],
                iops: rec.ops[k] as f64 / secs,
                mib_s: rec.bytes[k] as f64 / secs / (1 << 20) as f64,
                slat: rec.hist[k][SLAT].stats(),
                clat: rec.hist[k][CLAT].stats(),
                lat: rec.hist[k][LAT].stats(),
            },
        );
    }
    let io_ops = rec.ops[OpKind::Read.index()] + rec.ops[OpKind::Write.index()];
    let io_bytes = rec.bytes[OpKind::Read.index()] + rec.bytes[OpKind::Write.index()];
    let total = Totals {
        ops: io_ops,
        bytes: io_bytes,
        iops: io_ops as f64 / secs,
        mib_s: io_bytes as f64 / secs / (1 << 20) as f64,
    };
    let batch = spec.batch.and_then(|k| {
        let s = rec.batch.stats()?;
        histograms.insert("batch".into(), rec.batch.encode());
        let kf = k as f64;
        Some(BatchStats {
            k,
            batches: rec.batches,
            per_block_mean_ns: s.mean_ns / kf,
            per_block_p50_ns: s.percentile(50.0).unwrap_or(0) as f64 / kf,
            per_block_p99_ns: s.percentile(99.0).unwrap_or(0) as f64 / kf,
            batch_lat: s,
        })
    });
    let busy = cpu.cpu_pct() / spec.jobs as f64;
    if busy >= 90.0 && spec.engine.needs_file() {
        warnings.push(format!(
            "CPU-bound: each worker used {busy:.0}% of a CPU; iolab or the kernel, not the device, may be the limit (try an async engine, a higher --qd, or more --jobs)"
        ));
    }
    if io_ops == 0 {
        warnings.push("no request completed in the measured phase (runtime too short, or ramp longer than the run)".into());
    }
    let _ = kind;
    let mut extra = BTreeMap::new();
    if let (Some(o), Some(ol)) = (&rec.open_loop, &spec.open_loop) {
        for (k, name) in [(0, "read"), (1, "write")] {
            if !o.intended[k].is_empty() {
                histograms.insert(format!("{name}.lat_intended"), o.intended[k].encode());
            }
        }
        let v = openloop::summary(o, ol.rate_iops, ol.arrival.name(), total.iops, spec.jobs);
        if total.iops < 0.95 * ol.rate_iops {
            warnings.push(format!(
                "target rate not reached: {:.0} of {:.0} IOPS ({} requests still due at the end); latency from the intended issue time includes the queueing",
                total.iops, ol.rate_iops, o.final_backlog
            ));
        }
        extra.insert("open_loop".into(), v);
    }
    Point {
        name: spec.name.clone(),
        job: Some(spec.clone()),
        params: params_of(spec),
        started_at,
        duration_ns,
        ramp_ns: spec.ramp_ns,
        direct,
        ops,
        total,
        batch,
        cpu,
        device,
        series: rec.series(rec.last_done),
        verify: if spec.verify {
            Some(rec.verify.clone())
        } else {
            None
        },
        errors: rec.errors.clone(),
        warnings,
        histograms,
        extra,
    }
}
