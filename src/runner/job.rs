//! Run one job: split the target among workers, start them together, let
//! the main thread sample system counters and report progress (it never
//! touches the hot path), then merge the workers' recorders into a Point.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::Duration;

use anyhow::Context;

use crate::dut::{scratch, Target};
use crate::engine::dispatch::{self, EngineUser};
use crate::engine::peer_wait::{self, WaitLimits};
use crate::engine::{self, Engine, EngineSetup, EngineTarget};
use crate::error::{usage, UsageError, WorkerError};
use crate::measure::clock::{Clock, MonoClock, VirtualClock};
use crate::measure::diskstats::{DeviceStats, DiskSampler};
use crate::measure::numa::{self, PointPlacement, WorkerPlacement};
use crate::measure::peers::{PeerSampling, PeerSecond, PeerSeries, PeerSnapshot};
use crate::measure::procstat::CpuTicks;
use crate::measure::rusage::RusageSnapshot;
use crate::measure::tsc::{ClockChoice, TscClock, DRIFT_WARN_PPM};
use crate::plan::engines::{EngineConfig, Opens};
use crate::plan::job::{Arrival, JobSpec, RegionMode};
use crate::plan::parse::format_size;
use crate::results::target::FeatureProbe;
use crate::results::ClockInfo;
use crate::results::{time, Point};
use crate::runner::buffers::BufferPool;
use crate::runner::openloop::{self, OpenLoopSpec};
use crate::runner::pattern::{PatternSpec, RequestGen};
use crate::runner::point::build_point;
pub use crate::runner::point::params_of;
use crate::runner::recorder::{Live, LiveSlot, Recorder};
use crate::runner::wake::{self, WakeCalibration};
use crate::runner::worker::{self, LoopSpec, RequestLog};
use crate::runner::{act_table, large_blocks};

/// The progress callback: (elapsed s, expected total s, last second).
pub type OnJobProgress<'f> = dyn Fn(f64, Option<f64>, Option<Live>) + Sync + 'f;

/// How a job is run, beyond its spec.
#[derive(Default)]
pub struct RunOptions<'a> {
    /// Keep a per-request log of this many records per worker (stack breakdown).
    pub record_requests: Option<usize>,
    /// Called about once a second with (elapsed s, expected total s, the
    /// last complete second's throughput and latency, once there is one).
    pub on_progress: Option<&'a OnJobProgress<'a>>,
    /// Which clock stamps requests (a per-request log always uses
    /// CLOCK_MONOTONIC, the clock tracefs stamps kernel events with).
    pub clock: ClockChoice,
    /// The other side of a remote job (target processes, the link), sampled
    /// with iolab's own CPU.
    pub peers: Option<&'a PeerSampling>,
    /// Called once every worker is ready (files open, buffers filled), right
    /// before they are released: a fleet agent waits here for the common start.
    pub before_start: Option<&'a (dyn Fn() + Sync)>,
}

/// What a job produced.
pub struct JobOutcome {
    pub point: Point,
    pub request_logs: Vec<RequestLog>,
    pub features: Vec<FeatureProbe>,
}

/// Run `spec` on `target` with the clock `opts` chooses (a virtual one for
/// `fake`), and say in the point which clock it was.
pub fn run_job(spec: &JobSpec, target: &Target, opts: &RunOptions) -> anyhow::Result<JobOutcome> {
    if spec.engine.caps().virtual_clock {
        return run_job_with_clock(spec, target, VirtualClock::new(1_000_000_000), opts);
    }
    let choice = match opts.record_requests {
        Some(_) => ClockChoice::Mono,
        None => opts.clock,
    };
    let tsc = match choice {
        ClockChoice::Mono => None,
        ClockChoice::Auto => TscClock::get().ok(),
        ClockChoice::Tsc => Some(
            TscClock::get()
                .map_err(|why| usage("--clock", format!("the TSC cannot be used here: {why}")))?,
        ),
    };
    let Some(tsc) = tsc else {
        let mut out = run_job_with_clock(spec, target, MonoClock, opts)?;
        out.point.extra.clock = Some(ClockInfo {
            source: "mono".into(),
            ghz: None,
            drift_ppm: None,
        });
        return Ok(out);
    };
    let mut out = run_job_with_clock(spec, target, tsc, opts)?;
    let drift = tsc.drift_ppm();
    if drift.abs() > DRIFT_WARN_PPM {
        out.point.warnings.push(format!(
            "the TSC clock drifted {drift:.0} ppm from CLOCK_MONOTONIC since calibration: latencies are off by about that much (--clock mono avoids it)"
        ));
    }
    out.point.extra.clock = Some(ClockInfo {
        source: "tsc".into(),
        ghz: Some((tsc.ghz() * 1e6).round() / 1e6),
        drift_ppm: Some((drift * 10.0).round() / 10.0),
    });
    Ok(out)
}

/// Worker regions: (start, len), aligned to the largest block size.
pub fn regions(spec: &JobSpec, size: u64) -> Vec<(u64, u64)> {
    let n = spec.jobs as u64;
    let split = spec.region == RegionMode::Split || (spec.verify && n > 1);
    let at = spec.offset;
    if !split {
        return vec![(at, size); n as usize];
    }
    let align = spec.max_bs();
    let per = (size / n) / align * align;
    (0..n).map(|i| (at + i * per, per)).collect()
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
    error: Option<WorkerError>,
    /// Where the worker ran and its buffers were, read at its end.
    placement: Option<WorkerPlacement>,
}

/// Runs the worker loop (closed or open) on whatever engine dispatch built:
/// `run` is generic, so each engine gets its own monomorphized loop.
struct LoopRunner<'a, C: Clock> {
    clock: &'a C,
    ls: &'a LoopSpec,
    gen: &'a mut RequestGen,
    pool: &'a mut BufferPool,
    rec: &'a mut Recorder,
    log: Option<&'a mut RequestLog>,
    stop: &'a AtomicBool,
    open_loop: Option<&'a OpenLoopSpec>,
}

impl<C: Clock> EngineUser for LoopRunner<'_, C> {
    type Output = Result<(), WorkerError>;

    fn run<E: Engine>(self, mut engine: E) -> Self::Output {
        let LoopRunner {
            clock,
            ls,
            gen,
            pool,
            rec,
            log,
            stop,
            open_loop,
        } = self;
        match open_loop {
            Some(ol) => openloop::run(&mut engine, clock, ls, ol, gen, pool, rec, stop),
            None => worker::run(&mut engine, clock, ls, gen, pool, rec, log, stop),
        }
    }
}

/// Warnings about the spec itself, before anything runs.
fn spec_warnings(spec: &JobSpec) -> Vec<String> {
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
    if spec.verify && spec.pattern.is_random() && spec.writes() && spec.bs.len() > 1 {
        warnings.push(
            "--verify with random offsets and several block sizes: offsets are drawn with repeats, so as many writes as blocks stamp about 63% of them and the read-back checks only those (with one block size every block is written once per pass, as fio's random map does)"
                .into(),
        );
    }
    warnings
}

/// Every block size of the job fits the server's constraints (a multiple
/// of its minimum, at most its maximum), so no request is refused mid-run.
fn check_block_sizes(
    spec: &JobSpec,
    ep: &crate::plan::endpoint::RemoteEndpoint,
    min: u32,
    max: u32,
) -> anyhow::Result<()> {
    let min = u64::from(min.max(1));
    match spec
        .bs
        .iter()
        .map(|&(b, _)| b)
        .find(|&b| b % min != 0 || b > u64::from(max))
    {
        Some(b) => Err(usage(
            "--bs",
            format!("{ep} takes requests in multiples of {min} bytes up to {max}; {b} is not one"),
        )),
        None => Ok(()),
    }
}

/// The engine must open what the target is: a local engine a file or
/// device, a remote engine an endpoint of its transport.
fn check_engine_fits_target(spec: &JobSpec, target: &Target) -> anyhow::Result<()> {
    let opens = spec.engine.caps().opens;
    match (&target.remote, opens) {
        (Some(ep), Opens::Remote(t)) if t == ep.transport => {
            if let Some(e) = &target.export {
                check_block_sizes(spec, ep, e.min_block, e.max_block)?;
                if let Some(max) = e.max_depth.filter(|&m| spec.qd > m) {
                    return Err(usage(
                        "--qd",
                        format!("{ep}: the controller's queues take {max} requests in flight at most; --qd {} is more", spec.qd),
                    ));
                }
            }
            let multi_conn = target.export.as_ref().is_none_or(|e| e.multi_conn);
            if spec.jobs > 1 && spec.writes() && !multi_conn {
                return Err(usage(
                    "--jobs",
                    format!(
                        "{ep}: the server does not promise that several connections see each other's writes (no CAN_MULTI_CONN); run writes with --jobs 1"
                    ),
                ));
            }
            Ok(())
        }
        (Some(ep), _) => Err(
            match crate::plan::engines::engine_for_transport(ep.transport) {
                None => crate::plan::endpoint::no_initiator(ep).into(),
                Some(k) => usage(
                    "--engine",
                    format!(
                        "{} cannot run on {ep}; use --engine {}",
                        spec.engine.name(),
                        k.name()
                    ),
                ),
            },
        ),
        (None, Opens::Remote(t)) => Err(usage(
            "--target",
            format!(
                "--engine {} needs a {}:// target",
                spec.engine.name(),
                t.scheme()
            ),
        )),
        (None, _) => Ok(()),
    }
}

/// Descriptors the workers' engines open, whether O_DIRECT is in effect, and
/// the engine features probed on the first one.
struct Opened {
    /// A block device's exclusive claim (O_EXCL), held for the whole job
    /// when it writes: every other descriptor opens beside it.
    claim: Option<OwnedFd>,
    fds: Vec<Option<OwnedFd>>,
    direct: bool,
    features: Vec<FeatureProbe>,
}

/// Open one descriptor per worker (each worker owns its engine instance) for
/// engines that open a local file, and warn where the page cache is not
/// bypassed.
fn open_local(
    spec: &JobSpec,
    target: &Target,
    size: u64,
    warnings: &mut Vec<String>,
) -> anyhow::Result<Opened> {
    let mut opened = Opened {
        claim: None,
        fds: Vec::new(),
        direct: spec.direct && spec.engine.needs_file(),
        features: Vec::new(),
    };
    if spec.engine.caps().opens != Opens::LocalFd {
        opened.fds.resize_with(spec.jobs as usize, || None);
        return Ok(opened);
    }
    let config = spec.engine_config();
    if spec.writes() && target.kind == crate::results::target::TargetKind::BlockDevice {
        opened.claim = Some(target.open(true, spec.direct)?.0);
    }
    for i in 0..spec.jobs {
        // A second O_EXCL open would be refused by our own claim.
        let (fd, d) = target.open_as(crate::dut::OpenHow {
            write: spec.writes(),
            direct: spec.direct,
            dsync: false,
            beside_claim: opened.claim.is_some(),
        })?;
        if i == 0 {
            opened.direct = d;
            opened.features = engine::probe_features(&config, fd.as_raw_fd())?;
        }
        opened.fds.push(Some(fd));
    }
    let direct = opened.direct;
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
        if let Some(Some(fd)) = opened.fds.first() {
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
    Ok(opened)
}

/// What every worker of a job shares (read-only, or atomics).
struct JobCtx<'a, C: Clock> {
    spec: &'a JobSpec,
    config: EngineConfig,
    target: &'a Target,
    clock: C,
    size: u64,
    depth: u32,
    regions: Vec<(u64, u64)>,
    expected_s: Option<f64>,
    record: Option<usize>,
    barrier: Barrier,
    start: AtomicU64,
    stop: AtomicBool,
    /// One slot per worker for the progress line (empty: no progress asked).
    live: Vec<std::sync::Arc<LiveSlot>>,
    /// The CPUs workers are pinned to in turn (`--cpus`, or the CPUs of
    /// `--numa-node`'s node).
    cpus: Option<Vec<usize>>,
}

impl<C: Clock> JobCtx<'_, C> {
    fn per_worker(&self, total: Option<u64>) -> u64 {
        let n = self.spec.jobs as u64;
        total.map(|t| t.div_ceil(n)).unwrap_or(u64::MAX)
    }

    /// What worker `i`'s engine opens.
    fn engine_target(&self, fd: Option<&OwnedFd>) -> EngineTarget {
        // The engine sees the file up to the end of the addressed region.
        let (size, writable) = (self.spec.offset + self.size, self.spec.writes());
        match (fd, &self.target.remote) {
            (Some(fd), _) => EngineTarget::LocalFd {
                fd: fd.as_raw_fd(),
                size,
                writable,
            },
            (None, Some(ep)) => EngineTarget::Remote {
                endpoint: ep.clone(),
                size,
                writable,
                limits: WaitLimits {
                    io_timeout_ns: self
                        .spec
                        .io_timeout_ns
                        .unwrap_or(peer_wait::DEFAULT_IO_TIMEOUT_NS),
                    end_by_ns: u64::MAX,
                },
            },
            (None, None) => EngineTarget::Nothing { size },
        }
    }

    fn loop_spec(&self, i: usize, t0: u64) -> LoopSpec {
        let spec = self.spec;
        let (region_start, region_len) = self.regions[i];
        LoopSpec {
            depth: self.depth,
            batch: spec.batch.is_some(),
            sync_engine: spec.engine.is_sync(),
            measure_start: t0 + spec.ramp_ns,
            deadline: spec
                .stop
                .runtime_ns
                .map(|r| t0 + spec.ramp_ns + r)
                .unwrap_or(u64::MAX),
            max_ops: self.per_worker(spec.stop.io_count),
            max_bytes: self.per_worker(spec.stop.io_bytes),
            fsync_every: spec.fsync_every,
            submit_batch: spec.submit_batch,
            verify_bs: spec.verify.then(|| spec.max_bs()),
            region_start,
            region_len,
            think: spec.think,
            continue_on_error: spec.continue_on_error,
        }
    }

    /// Buffers and request generator of worker `i` (before the start barrier).
    fn worker_state(&self, i: usize, seed: u64) -> Result<(BufferPool, RequestGen), WorkerError> {
        let spec = self.spec;
        let (region_start, region_len) = self.regions[i];
        // Bound to --mem-node's (or --numa-node's) node before its first touch.
        let (slots, slot_len) = (self.depth as usize, spec.max_bs() as usize);
        let pool = BufferPool::on_node(slots, slot_len, seed, spec.buffer_node()).map_err(|e| {
            WorkerError::Prepare {
                what: "cannot allocate the buffer pool",
                source: e,
            }
        })?;
        let gen = RequestGen::new(&PatternSpec {
            read_pct: spec.read_percent(),
            random: spec.pattern.is_random(),
            bs: spec.bs.clone(),
            align: spec.min_bs(),
            region_start,
            region_len,
            seed,
            cover: spec.verify,
        })
        .map_err(|e| WorkerError::Usage(UsageError::new("--bs", e)))?;
        Ok((pool, gen))
    }

    /// One worker thread: set up, wait for the common start, run the loop.
    fn worker(&self, i: usize, fd: Option<OwnedFd>) -> WorkerResult {
        let mut gate = StartGate {
            barrier: &self.barrier,
            stop: &self.stop,
            waits_left: 2,
        };
        let spec = self.spec;
        if let Some(cpus) = &self.cpus {
            pin_to_cpu(cpus[i % cpus.len()]);
        }
        let seed = spec.seed ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let state = self.worker_state(i, seed);
        let mut rec = Recorder::new(0, self.expected_s.map(|s| s as usize + 2).unwrap_or(60));
        rec.live = self.live.get(i).cloned();
        if spec.hist_log {
            rec.keep_clat_per_interval();
        }
        if spec.open_loop.is_some() {
            rec.open_loop = Some(Default::default());
        }
        let mut log = self.record.map(RequestLog::with_capacity);
        let (mut pool, mut gen) = match state {
            Ok(v) => v,
            Err(e) => {
                drop(gate);
                return WorkerResult {
                    rec,
                    log,
                    error: Some(e),
                    placement: None,
                };
            }
        };
        // Off the measured window: the open loop's wake-up lateness here.
        let wake = match spec.open_loop.is_some() && !spec.engine.caps().virtual_clock {
            true => wake::calibrate(&self.clock),
            false => WakeCalibration::default(),
        };
        let mut setup = EngineSetup {
            target: self.engine_target(fd.as_ref()),
            depth: self.depth,
            pool_base: pool.base(),
            pool_len: pool.len(),
        };
        gate.pass();
        gate.pass();
        let t0 = self.start.load(Ordering::SeqCst);
        rec.start_at(t0 + spec.ramp_ns);
        let ls = self.loop_spec(i, t0);
        if let EngineTarget::Remote { limits, .. } = &mut setup.target {
            // A remote engine runs on the real clock (CLOCK_MONOTONIC).
            limits.end_by_ns = ls.deadline.saturating_add(peer_wait::RUN_END_GRACE_NS);
        }
        let ol = spec.open_loop.map(|o| OpenLoopSpec {
            mean_gap_ns: 1e9 * spec.jobs as f64 / o.rate_iops,
            poisson: o.arrival == Arrival::Poisson,
            seed,
            wake,
            max_lag_ns: spec
                .large_blocks
                .and_then(|l| l.max_lag())
                .map(|d| d.as_nanos() as u64),
        });
        let outcome = if self.stop.load(Ordering::SeqCst) {
            Err(WorkerError::Aborted)
        } else {
            let runner = LoopRunner {
                clock: &self.clock,
                ls: &ls,
                gen: &mut gen,
                pool: &mut pool,
                rec: &mut rec,
                log: log.as_mut(),
                stop: &self.stop,
                open_loop: ol.as_ref(),
            };
            dispatch::with_engine(&self.config, &setup, &self.clock, runner).and_then(|r| r)
        };
        if outcome.is_err() {
            self.stop.store(true, Ordering::SeqCst);
        }
        drop(fd);
        WorkerResult {
            rec,
            log,
            error: outcome.err(),
            placement: numa::worker_placement(i as u32, pool.base() as usize),
        }
    }
}

/// System counters over the measured phase: CPU of the process, the
/// device under the target, the whole machine's CPU.
type SystemStats = (
    crate::measure::rusage::CpuStats,
    Option<DeviceStats>,
    Option<crate::measure::procstat::SystemCpu>,
    // The peers at the start and end of the measured phase, its length,
    // and the peers' counters second by second.
    Option<(PeerSnapshot, PeerSnapshot, u64, Vec<PeerSecond>)>,
);

/// The main thread while workers run: release them together, sample system
/// counters at the end of the ramp and at the end, report progress, join.
fn supervise<C: Clock>(
    ctx: &JobCtx<'_, C>,
    handles: Vec<std::thread::ScopedJoinHandle<'_, WorkerResult>>,
    done_rx: std::sync::mpsc::Receiver<()>,
    opts: &RunOptions,
) -> (Vec<WorkerResult>, SystemStats) {
    let spec = ctx.spec;
    let n = spec.jobs as usize;
    let disk = ctx
        .target
        .disk
        .as_ref()
        .map(|d| DiskSampler::new(d.disk.clone()));
    ctx.barrier.wait();
    if let Some(wait) = opts.before_start {
        wait();
    }
    ctx.start.store(ctx.clock.now(), Ordering::SeqCst);
    let wall0 = std::time::Instant::now();
    ctx.barrier.wait();
    // Sample system counters at the end of the ramp, off the hot path.
    if spec.ramp_ns > 0 && !spec.engine.caps().virtual_clock {
        sleep_unless_done(&handles, Duration::from_nanos(spec.ramp_ns));
    }
    let peers0 = opts.peers.map(|p| p.sample());
    let mut peer_series = peers0.clone().map(PeerSeries::starting_at);
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
        if last_tick.elapsed() >= Duration::from_secs(1) {
            last_tick = std::time::Instant::now();
            if let Some(cb) = opts.on_progress {
                cb(
                    wall0.elapsed().as_secs_f64(),
                    ctx.expected_s,
                    Live::from_slots(&ctx.live),
                );
            }
            if let (Some(p), Some(series)) = (opts.peers, peer_series.as_mut()) {
                series.tick(p, t_measure.elapsed());
            }
        }
    }
    let wall = t_measure.elapsed().as_nanos() as u64;
    let ru1 = RusageSnapshot::now();
    let st1 = CpuTicks::now();
    let peers1 = opts.peers.map(|p| p.sample());
    let d1 = disk.as_ref().and_then(|d| d.sample());
    let results: Vec<WorkerResult> = handles
        .into_iter()
        .map(|h| {
            h.join().unwrap_or_else(|payload| WorkerResult {
                rec: Recorder::new(0, 1),
                log: None,
                error: Some(WorkerError::panicked(payload.as_ref())),
                placement: None,
            })
        })
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
    let peers = peers0.zip(peers1).map(|(a, b)| {
        (
            a,
            b,
            wall,
            peer_series.map(PeerSeries::finish).unwrap_or_default(),
        )
    });
    (results, (cpu, device, system, peers))
}

pub fn run_job_with_clock<C: Clock>(
    spec: &JobSpec,
    target: &Target,
    clock: C,
    opts: &RunOptions,
) -> anyhow::Result<JobOutcome> {
    let sector = target.disk.as_ref().and_then(|d| d.logical_block_size);
    let fitted = crate::plan::act::fit_to_sector(spec, sector);
    let spec = fitted.as_ref().map_or(spec, |(s, _)| s);
    spec.validate()?;
    check_engine_fits_target(spec, target)?;
    if spec.offset >= target.size {
        return Err(usage(
            "offset",
            format!(
                "offset {} is at or beyond the end of the target ({} bytes)",
                spec.offset, target.size
            ),
        ));
    }
    let room = target.size - spec.offset;
    let size = spec.size.map_or(room, |s| s.min(room));
    check_against_target(spec, target, size)?;
    let mut warnings = spec_warnings(spec);
    warnings.extend(fitted.as_ref().map(|(_, w)| w.clone()));
    let Opened {
        claim,
        fds,
        direct,
        features,
    } = open_local(spec, target, size, &mut warnings)?;
    // Before the first I/O: a descriptor the large blocks cannot have fails
    // the job now, not after its runtime; the writer opens beside the claim.
    let large_fds = large_blocks::open_for(spec, target, size, direct, claim.is_some())?;

    let n = spec.jobs as usize;
    let ctx = JobCtx {
        spec,
        config: spec.engine_config(),
        target,
        clock,
        size,
        depth: spec.depth(),
        regions: regions(spec, size),
        expected_s: spec
            .stop
            .runtime_ns
            .map(|r| (r + spec.ramp_ns) as f64 / 1e9),
        record: opts.record_requests,
        barrier: Barrier::new(n + 1),
        start: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        live: match opts.on_progress {
            Some(_) => (0..n).map(|_| Default::default()).collect(),
            None => Vec::new(),
        },
        cpus: worker_cpus(spec)?,
    };
    let started_at = time::now_rfc3339();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let large_stop = AtomicBool::new(false);
    let (results, sys, large) = std::thread::scope(|scope| {
        let ctx = &ctx;
        let handles = fds
            .into_iter()
            .enumerate()
            .map(|(i, fd)| {
                let done = DoneSignal(done_tx.clone());
                scope.spawn(move || {
                    let _done = done;
                    ctx.worker(i, fd)
                })
            })
            .collect();
        drop(done_tx);
        let large = spec
            .large_blocks
            .as_ref()
            .zip(large_fds)
            .map(|(load, fds)| {
                large_blocks::spawn(
                    scope,
                    load,
                    fds,
                    (spec.offset, size),
                    spec.seed,
                    (&large_stop, &ctx.stop),
                )
            });
        let (results, sys) = supervise(ctx, handles, done_rx, opts);
        large_stop.store(true, Ordering::SeqCst);
        (results, sys, large.map(large_blocks::join))
    });

    // The first real error: a worker that stopped because another failed says less.
    let mut errors: Vec<WorkerError> = Vec::new();
    let mut merged = Recorder::new(0, 1);
    let measure_start = results.first().map(|r| r.rec.measure_start).unwrap_or(0);
    merged.start_at(measure_start);
    let mut logs = Vec::new();
    let mut placed = Vec::new();
    for r in results {
        placed.extend(r.placement);
        errors.extend(r.error);
        merged.merge(&r.rec);
        logs.extend(r.log);
    }
    if !errors.is_empty() {
        let i = errors
            .iter()
            .position(|e| !matches!(e, WorkerError::Aborted))
            .unwrap_or(0);
        let err = errors.swap_remove(i);
        return Err(anyhow::Error::new(err)).with_context(|| format!("job {} failed", spec.name));
    }
    let (cpu, device, system, peers) = sys;
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
    if let (Some(load), Some(streams)) = (&spec.large_blocks, large) {
        let streams = streams.with_context(|| format!("job {} failed", spec.name))?;
        let read_lag = merged.open_loop.as_ref().and_then(|o| o.lag_stop_ns);
        let read_lag = read_lag.map(Duration::from_nanos);
        let act = act_table::section(&point, load, &streams, read_lag);
        point.extra.act = Some(Box::new(act));
    }
    point.extra.placement = (!placed.is_empty()).then_some(PointPlacement { workers: placed });
    if let Some(system) = system {
        // The whole machine's CPU, incl. iowait (the report stacks it with usr/sys).
        point.extra.cpu = Some(system);
    }
    if let (Some(sampling), Some((a, b, wall, series))) = (opts.peers, peers) {
        let mut stats = sampling.between(&a, &b, wall, point.total.ops);
        stats.series = series;
        point.extra.peers = Some(stats);
    }
    Ok(JobOutcome {
        point,
        request_logs: logs,
        features,
    })
}

/// A worker's two waits at the start barrier. Whatever ends the worker
/// before it passed them (an error, or a panic unwinding) stops the run and
/// still arrives, so the main thread and the other workers never wait for
/// a worker that is gone.
struct StartGate<'a> {
    barrier: &'a Barrier,
    stop: &'a AtomicBool,
    waits_left: u8,
}

impl StartGate<'_> {
    fn pass(&mut self) {
        self.waits_left -= 1;
        self.barrier.wait();
    }
}

impl Drop for StartGate<'_> {
    fn drop(&mut self) {
        if self.waits_left > 0 {
            self.stop.store(true, Ordering::SeqCst);
        }
        while self.waits_left > 0 {
            self.pass();
        }
    }
}

/// Tells the main thread that a worker ended, on every way out (even a panic).
struct DoneSignal(std::sync::mpsc::Sender<()>);

impl Drop for DoneSignal {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
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

/// The CPUs workers are pinned to: `--cpus`, or `--numa-node`'s CPUs.
fn worker_cpus(spec: &JobSpec) -> anyhow::Result<Option<Vec<usize>>> {
    let Some(node) = spec.numa_node else {
        return Ok(spec.cpus.clone());
    };
    let cpus = numa::node_cpus(std::path::Path::new("/"), node);
    if cpus.is_empty() {
        return Err(usage(
            "--numa-node",
            format!("node {node} has no CPUs to run workers on"),
        ));
    }
    Ok(Some(cpus))
}

fn pin_to_cpu(cpu: usize) {
    // SAFETY: cpu_set_t is plain data; sched_setaffinity on the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::engines::EngineKind;
    use crate::plan::engines::FakeScript;
    use crate::plan::job::StopCondition;

    /// Issue 44 item 15: a verified random write whose offsets repeat
    /// (several block sizes) says how little of the region it stamps.
    #[test]
    fn verified_random_writes_of_several_sizes_warn_of_their_coverage() {
        let mut spec = JobSpec {
            pattern: crate::plan::job::Pattern::RandWrite,
            verify: true,
            bs: vec![(4096, 1), (8192, 1)],
            ..JobSpec::default()
        };
        let says = |s: &JobSpec| spec_warnings(s).iter().any(|w| w.contains("about 63%"));
        assert!(says(&spec));
        spec.bs = vec![(4096, 1)];
        assert!(!says(&spec), "one size covers every block");
    }

    /// A worker that panics after the start (a fake device with no service
    /// times divides by zero) ends the job with its message; it panicked
    /// the main thread in `join().expect`.
    #[test]
    fn a_worker_panic_ends_the_job_with_its_message() {
        let spec = JobSpec {
            name: "panics".into(),
            engine: EngineKind::parse("fake").unwrap(),
            fake: Some(FakeScript {
                latencies_ns: Vec::new(),
                servers: 1,
                submit_ns: 0,
            }),
            jobs: 2,
            stop: StopCondition {
                runtime_ns: None,
                io_count: Some(100),
                io_bytes: None,
            },
            ..JobSpec::default()
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let r = run_job(&spec, &Target::none(1 << 20), &RunOptions::default());
            tx.send(r.map(|_| ()).map_err(|e| format!("{e:#}")))
                .unwrap();
        });
        let r = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the job still waits for a panicked worker");
        let e = r.unwrap_err();
        assert!(e.contains("a worker panicked"), "{e}");
    }

    /// A worker gone before the start (an error or a panic while it set up)
    /// still arrives at both barrier waits, so the others are released; a
    /// panic there hung the run forever.
    #[test]
    fn a_worker_that_panics_before_the_start_releases_the_barrier() {
        let barrier = std::sync::Arc::new(Barrier::new(2));
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let (b, s) = (barrier.clone(), stop.clone());
        let worker = std::thread::spawn(move || {
            let _gate = StartGate {
                barrier: &b,
                stop: &s,
                waits_left: 2,
            };
            panic!("while setting up");
        });
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            barrier.wait();
            barrier.wait();
            tx.send(()).unwrap();
        });
        rx.recv_timeout(Duration::from_secs(30))
            .expect("the main thread still waits at the barrier");
        assert!(worker.join().is_err());
        assert!(stop.load(Ordering::SeqCst));
    }
}
