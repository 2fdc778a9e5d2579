//! Runs one measured phase: N worker threads, each with its own engine
//! session, seeded PRNG and recorder, optionally paced open-loop (latency
//! from the intended start recorded beside service time), a 1 s sampler for
//! the time series, and load statistics around it.

use super::clock::now_ns;
use super::engine::{KvEngine, KvSession};
use super::loadstats::{LoadSampler, LoadStats};
use super::recorder::{KvOp, KvRecorder};
use super::space::{SpaceWatch, STRIDE_BYTES, STRIDE_OPS};
use crate::interrupt;
use crate::results::SeriesPoint;
use anyhow::Result;
use rand::rngs::Xoshiro256PlusPlus;
use rand::SeedableRng;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;

/// One worker's context, handed to the workload for each operation.
pub struct Worker<'e> {
    pub id: usize,
    pub s: Box<dyn KvSession + 'e>,
    pub rng: Xoshiro256PlusPlus,
    /// Where this worker's next fresh value body comes from in the pool.
    pub bodies: crate::kv::value::BodyCursor,
    pub rec: KvRecorder,
    /// Scratch buffers reused across operations.
    pub key: Vec<u8>,
    pub val: Vec<u8>,
    pub buf: Vec<u8>,
    /// Intended start of the current operation (paced runs).
    pub intended: Option<u64>,
    /// Operations this worker has done in this phase.
    pub n: u64,
    /// Whether reads of existing keys must find them.
    pub stores_data: bool,
    /// Per-worker state of YCSB's Latest distribution.
    pub latest: Option<crate::kv::generator::SkewedLatest>,
    /// Set by the work when this worker has nothing left to do (readseq at
    /// the end of the database); the operation that set it is not counted.
    pub exhausted: bool,
    /// When the current operation started: the end of the previous one, or
    /// the release of a paced one.
    pub op_start: u64,
    /// The clock read that ended the operation, when the work took it
    /// (`end_op`); the loop then reads the clock once per operation.
    /// `UNTIMED`: the operation took no clock read at all (`untimed`).
    op_end: u64,
    /// The last timed step of a sampled walk and how many steps it stands
    /// for so far (`sampled`, `untimed`), recorded when the next timed
    /// step comes or the phase ends.
    sample: Option<(KvOp, u64, u64)>,
}

/// `Worker::op_end` of an operation that read no clock.
const UNTIMED: u64 = u64::MAX;

impl Worker<'_> {
    #[inline]
    pub fn record(&mut self, kind: KvOp, start: u64, end: u64, ops: u64, bytes: u64) {
        self.rec.record(kind, start, end, self.intended, ops, bytes);
    }

    /// End the current operation now and return the time: db_bench's
    /// latency, everything since the previous operation ended.
    #[inline]
    pub fn end_op(&mut self) -> u64 {
        self.op_end = now_ns();
        self.op_end
    }

    /// A timed step of a walk sampled one step in N: its latency stands
    /// for itself and the untimed steps after it (`untimed`), so the
    /// histogram holds one value per step, as if every step were timed.
    #[inline]
    pub fn sampled(&mut self, kind: KvOp, start: u64, end: u64, bytes: u64) {
        self.flush_sample();
        self.sample = Some((kind, end.saturating_sub(start), 1));
        self.rec.record_untimed(kind, 1, bytes);
    }

    /// An untimed step of a sampled walk: counted, no clock read.
    #[inline]
    pub fn untimed(&mut self, kind: KvOp, bytes: u64) {
        if let Some(s) = self.sample.as_mut() {
            s.2 += 1;
        }
        self.rec.record_untimed(kind, 1, bytes);
        self.op_end = UNTIMED;
    }

    fn flush_sample(&mut self) {
        if let Some((kind, lat, n)) = self.sample.take() {
            self.rec.record_latency_n(kind, lat, n);
        }
    }
}

/// A workload: what one operation of one worker does.
pub trait Work: Sync {
    /// Kinds of operation this work records.
    fn kinds(&self) -> Vec<KvOp>;
    /// Prepare per-worker state before timing starts.
    fn init_worker(&self, _w: &mut Worker<'_>) {}
    fn op(&self, w: &mut Worker<'_>) -> Result<()>;
}

/// How a phase is run.
pub struct PhaseSpec {
    pub threads: usize,
    /// Operations per worker; `None` runs until every bounded worker is done.
    pub ops: Vec<Option<u64>>,
    /// Operations per second per worker (open loop), `None` = closed loop.
    pub rate: Vec<Option<f64>>,
    pub seed: u64,
    /// Make everything written durable at the end (`--flush-between`);
    /// db_bench and YCSB do not, so later phases may read the memtable.
    pub flush_after: bool,
    /// Stop every worker this long after the start (YCSB's
    /// `maxexecutiontime`), even with operations left.
    pub deadline_ns: Option<u64>,
    /// Operations done so far, kept current every 20 ms for a sampler on
    /// another thread (the database timeline).
    pub live_ops: Option<std::sync::Arc<AtomicU64>>,
    /// The free-space watch: workers look at it now and then and stop the
    /// phase with `DiskFull` before the engine meets a full disk.
    pub space: Option<std::sync::Arc<SpaceWatch>>,
}

impl PhaseSpec {
    /// Stop after `secs` seconds (YCSB's `maxexecutiontime`), if given.
    pub fn with_deadline_s(mut self, secs: Option<u64>) -> PhaseSpec {
        self.deadline_ns = secs.map(|s| s.saturating_mul(1_000_000_000));
        self
    }

    /// `total` operations split over `threads` like YCSB's client.
    pub fn split(total: u64, threads: usize, target: Option<f64>, seed: u64) -> PhaseSpec {
        let t = threads.max(1) as u64;
        PhaseSpec {
            threads: threads.max(1),
            ops: (0..t)
                .map(|i| Some(total / t + u64::from(i < total % t)))
                .collect(),
            rate: (0..t).map(|_| target.map(|r| r / t as f64)).collect(),
            seed,
            flush_after: false,
            deadline_ns: None,
            live_ops: None,
            space: None,
        }
    }
}

#[repr(align(64))]
#[derive(Default)]
struct Progress {
    ops: AtomicU64,
    lat_sum: AtomicU64,
}

/// What a phase produced.
pub struct PhaseOutcome {
    pub rec: KvRecorder,
    pub load: LoadStats,
    pub series: Vec<SeriesPoint>,
    pub duration_ns: u64,
    pub interrupted: bool,
    /// Open-loop workers that fell behind schedule at the end (ns).
    pub max_backlog_ns: u64,
    /// The LSM's state when the workers started and when they finished
    /// (engines that have one).
    pub lsm: Option<super::lsm::LsmPhase>,
}

/// State the workers and the sampler share during a phase.
struct Shared {
    progress: Vec<Progress>,
    /// Bounded workers still running; the last one to finish sets `done`.
    bounded_left: AtomicU64,
    /// Unbounded workers (readwhilewriting's writer) stop when it is set.
    done: AtomicBool,
    /// A worker's operation failed: the phase's other workers stop (the
    /// process goes on: a campaign's other passes still run).
    failed: AtomicBool,
    /// Passed twice by every worker and the phase's thread: once when all
    /// are ready (sessions open), then to start, with `start_at` set
    /// between the two, so a session's set-up (a server's connection) is
    /// not in the phase's time.
    barrier: Barrier,
    start_at: AtomicU64,
    /// When the last worker finished: the phase's end, independent of how
    /// late the 20 ms sampler loop notices it.
    end_at: AtomicU64,
}

impl Shared {
    /// A worker says it is ready, then waits for the phase's start.
    fn ready_then_wait_for_start(&self) {
        self.barrier.wait();
        self.barrier.wait();
    }
}

/// One worker's part of the phase.
struct WorkerJob<'a> {
    id: usize,
    kinds: &'a [KvOp],
    paced: bool,
    stores: bool,
    /// Operations to do; `None` runs until the bounded workers are done.
    ops: Option<u64>,
    /// Operations per second (open loop).
    rate: Option<f64>,
    deadline_ns: Option<u64>,
    seed: u64,
    space: Option<&'a SpaceWatch>,
}

/// Called about once a second while a phase runs, from the thread that
/// waits for the workers: (seconds since the start, operations done, the
/// sum of their latencies in ns).
pub type OnProgress<'a> = &'a dyn Fn(f64, u64, u64);

/// Run `work` with `spec` on `engine`; `db_dir` is measured for size and
/// its device's writes.
pub fn run(
    engine: &dyn KvEngine,
    work: &dyn Work,
    spec: &PhaseSpec,
    db_dir: &Path,
) -> Result<PhaseOutcome> {
    run_reporting(engine, work, spec, Some(db_dir), &|_, _, _| {})
}

/// `run`, reporting progress about once a second; `db_dir` is `None` where
/// the data is not on this machine (nothing of its disk is measured).
pub fn run_reporting(
    engine: &dyn KvEngine,
    work: &dyn Work,
    spec: &PhaseSpec,
    db_dir: Option<&Path>,
    on_progress: OnProgress<'_>,
) -> Result<PhaseOutcome> {
    super::clock::init();
    let kinds = work.kinds();
    let paced = spec.rate.iter().any(|r| r.is_some());
    let shared = Shared {
        progress: (0..spec.threads).map(|_| Progress::default()).collect(),
        bounded_left: AtomicU64::new(spec.ops.iter().filter(|o| o.is_some()).count() as u64),
        done: AtomicBool::new(false),
        failed: AtomicBool::new(false),
        barrier: Barrier::new(spec.threads + 1),
        start_at: AtomicU64::new(0),
        end_at: AtomicU64::new(0),
    };
    let stores = engine.stores_data();

    let sampler = LoadSampler::start(db_dir);
    let lsm_start = engine.lsm_state();
    let mut series = Vec::new();
    let mut recs: Vec<Result<(KvRecorder, u64)>> = Vec::new();
    let mut t_begin = 0;
    std::thread::scope(|sc| {
        let mut handles = Vec::new();
        for id in 0..spec.threads {
            let job = WorkerJob {
                id,
                kinds: &kinds,
                paced,
                stores,
                ops: spec.ops[id],
                rate: spec.rate[id],
                deadline_ns: spec.deadline_ns,
                seed: spec.seed.wrapping_add(0x9E37_79B9 * (id as u64 + 1)),
                space: spec.space.as_deref(),
            };
            let shared = &shared;
            handles.push(sc.spawn(move || worker(engine, work, job, shared)));
        }
        shared.barrier.wait();
        shared.start_at.store(now_ns(), Ordering::Release);
        t_begin = shared.start_at.load(Ordering::Relaxed);
        shared.barrier.wait();
        series = sample_series(
            &shared.progress,
            &handles,
            t_begin,
            spec.live_ops.as_deref(),
            on_progress,
        );
        for h in handles {
            recs.push(
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a kv worker thread panicked"))),
            );
        }
    });
    let t_end = match shared.end_at.load(Ordering::Acquire) {
        0 => now_ns(),
        t => t,
    };
    let duration_ns = t_end.saturating_sub(t_begin);
    let mut rec = KvRecorder::new(&kinds, paced);
    let mut max_backlog_ns = 0;
    for r in recs {
        let (r, backlog) = r?;
        rec.merge(&r);
        max_backlog_ns = max_backlog_ns.max(backlog);
    }
    let lsm = lsm_start.map(|start| super::lsm::LsmPhase {
        start,
        end: engine.lsm_state().unwrap_or_default(),
        after_steps: Vec::new(),
    });
    if spec.flush_after {
        engine.flush()?;
    }
    let load = sampler.finish(db_dir, rec.logical_written);
    Ok(PhaseOutcome {
        rec,
        load,
        series,
        duration_ns,
        interrupted: interrupt::stop_requested(),
        max_backlog_ns,
        lsm,
    })
}

/// One worker thread: its own engine session, seeded PRNG and recorder;
/// waits at the barrier, then runs its operations (paced if it has a rate).
/// Returns its recorder and how far behind schedule it ended (ns).
fn worker(
    engine: &dyn KvEngine,
    work: &dyn Work,
    job: WorkerJob<'_>,
    shared: &Shared,
) -> Result<(KvRecorder, u64)> {
    let session = match engine.session() {
        Ok(s) => s,
        Err(e) => {
            shared.ready_then_wait_for_start();
            return Err(e);
        }
    };
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(job.seed);
    let mut w = Worker {
        id: job.id,
        s: session,
        bodies: crate::kv::value::BodyCursor::random(&mut rng),
        rng,
        rec: KvRecorder::new(job.kinds, job.paced),
        key: Vec::with_capacity(64),
        val: Vec::with_capacity(4096),
        buf: Vec::with_capacity(4096),
        intended: None,
        n: 0,
        stores_data: job.stores,
        latest: None,
        exhausted: false,
        op_start: 0,
        op_end: 0,
        sample: None,
    };
    work.init_worker(&mut w);
    shared.ready_then_wait_for_start();
    let t0 = shared.start_at.load(Ordering::Acquire);
    let interval = job.rate.map(|r| 1e9 / r.max(1e-9));
    if interval.is_some() {
        // 1 us timer slack instead of 50 us: paced sleeps end on time.
        // SAFETY: PR_SET_TIMERSLACK only changes this thread's slack.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong) };
    }
    let progress = &shared.progress[job.id];
    let limit = job.ops.unwrap_or(u64::MAX);
    let mut backlog = 0u64;
    let mut result = Ok(());
    let mut lat_sum = 0u64;
    // One clock read per operation: an op starts when the previous
    // one ended, or when a paced op was released.
    let mut op_start = now_ns();
    let deadline = job.deadline_ns.map_or(u64::MAX, |d| t0.saturating_add(d));
    // When to look at the free space next (never without a watch): two
    // comparisons per operation, a statvfs per MiB written or 1024 ops.
    let mut look = SpaceLook::new(job.space);
    while w.n < limit {
        if interrupt::stop_requested()
            || shared.failed.load(Ordering::Relaxed)
            || (job.ops.is_none() && shared.done.load(Ordering::Relaxed))
            || op_start >= deadline
        {
            break;
        }
        if let Some(iv) = interval {
            let due = t0 + (w.n as f64 * iv) as u64;
            let mut now = now_ns();
            // Sleep (never spin for long: a spinning paced thread
            // takes a CPU from the engine and the other workers).
            while now < due {
                let left = due - now;
                if left > 5_000 {
                    std::thread::sleep(std::time::Duration::from_nanos(left));
                } else {
                    std::hint::spin_loop();
                }
                now = now_ns();
            }
            backlog = now - due;
            w.intended = Some(due);
            op_start = now;
        }
        w.op_start = op_start;
        if let Err(e) = work.op(&mut w) {
            result = Err(e);
            shared.failed.store(true, Ordering::Relaxed);
            break;
        }
        if w.exhausted {
            break;
        }
        let end = match std::mem::take(&mut w.op_end) {
            0 => Some(now_ns()),
            UNTIMED => None,
            t => Some(t),
        };
        // An untimed step leaves the clock alone: the next timed one's
        // `end - op_start` covers it, so `lat_sum` stays the steps' sum.
        if let Some(end) = end {
            lat_sum += end - op_start;
            op_start = end;
            progress.lat_sum.store(lat_sum, Ordering::Relaxed);
        }
        w.n += 1;
        progress.ops.store(w.n, Ordering::Relaxed);
        if look.due(w.n, w.rec.logical_written) {
            if let Err(e) = look.check(engine, w.n, w.rec.logical_written) {
                result = Err(e.into());
                shared.failed.store(true, Ordering::Relaxed);
                break;
            }
        }
    }
    w.flush_sample();
    shared.end_at.fetch_max(now_ns(), Ordering::AcqRel);
    if job.ops.is_some() && shared.bounded_left.fetch_sub(1, Ordering::AcqRel) == 1 {
        shared.done.store(true, Ordering::Release);
    }
    w.rec.seal();
    result.map(|()| (w.rec, backlog))
}

/// A worker's next look at the free space: after `STRIDE_OPS` more
/// operations or `STRIDE_BYTES` more bytes written. A worker that wrote
/// nothing since its last look does not look (a read never fills a disk,
/// and a compaction's reserve must not end a read phase).
struct SpaceLook<'a> {
    watch: Option<&'a SpaceWatch>,
    at_ops: u64,
    at_bytes: u64,
    looked_at_bytes: u64,
    /// This worker has its share of the reserve (`SpaceWatch::join`).
    joined: bool,
}

impl<'a> SpaceLook<'a> {
    fn new(watch: Option<&'a SpaceWatch>) -> SpaceLook<'a> {
        let first = if watch.is_some() { 0 } else { u64::MAX };
        SpaceLook {
            watch,
            at_ops: first,
            at_bytes: first,
            looked_at_bytes: 0,
            joined: false,
        }
    }

    #[inline]
    fn due(&self, ops: u64, bytes: u64) -> bool {
        ops >= self.at_ops || bytes >= self.at_bytes
    }

    /// Look now (the engine's part of the reserve asked afresh); the next
    /// look is due a stride later.
    #[cold]
    fn check(
        &mut self,
        engine: &dyn KvEngine,
        ops: u64,
        bytes: u64,
    ) -> Result<(), super::space::DiskFull> {
        self.at_ops = ops + STRIDE_OPS;
        self.at_bytes = bytes + STRIDE_BYTES;
        if bytes == self.looked_at_bytes {
            return Ok(());
        }
        self.looked_at_bytes = bytes;
        let Some(w) = self.watch else {
            return Ok(());
        };
        if !std::mem::replace(&mut self.joined, true) {
            w.join();
        }
        match engine.space_reserve() {
            Some(reserve) => w.check(engine.name(), reserve),
            None => Ok(()),
        }
    }
}

/// The 1 s time series of the phase, sampled on the calling thread until
/// every worker has finished; progress is reported at every sample.
fn sample_series<T>(
    progress: &[Progress],
    handles: &[std::thread::ScopedJoinHandle<'_, T>],
    t_begin: u64,
    live_ops: Option<&AtomicU64>,
    on_progress: OnProgress<'_>,
) -> Vec<SeriesPoint> {
    let mut series = Vec::new();
    let mut last_t = t_begin;
    let (mut last_ops, mut last_lat) = (0u64, 0u64);
    loop {
        let finished = handles.iter().all(|h| h.is_finished());
        let now = now_ns();
        if let Some(live) = live_ops {
            let ops: u64 = progress.iter().map(|p| p.ops.load(Ordering::Relaxed)).sum();
            live.store(ops, Ordering::Relaxed);
        }
        if finished || now - last_t >= 1_000_000_000 {
            let ops: u64 = progress.iter().map(|p| p.ops.load(Ordering::Relaxed)).sum();
            let lat: u64 = progress
                .iter()
                .map(|p| p.lat_sum.load(Ordering::Relaxed))
                .sum();
            let len = (now - last_t) as f64 / 1e9;
            if ops > last_ops && len > 0.0 {
                series.push(SeriesPoint {
                    t_s: (last_t - t_begin) as f64 / 1e9,
                    len_s: len,
                    iops: (ops - last_ops) as f64 / len,
                    mib_s: 0.0,
                    mean_ns: (lat - last_lat) as f64 / (ops - last_ops) as f64,
                    p99_ns: None,
                    clat_hist: None,
                });
            }
            last_t = now;
            last_ops = ops;
            last_lat = lat;
            if !finished {
                on_progress((now - t_begin) as f64 / 1e9, ops, lat);
            }
        }
        if finished {
            return series;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv::engines::null::Null;
    use std::sync::atomic::AtomicU64;

    /// Worker 0's 10th operation fails; the others would run for ever.
    struct FailsOnce {
        ops: AtomicU64,
    }

    impl Work for FailsOnce {
        fn kinds(&self) -> Vec<KvOp> {
            vec![KvOp::Read]
        }
        fn op(&self, w: &mut Worker<'_>) -> Result<()> {
            self.ops.fetch_add(1, Ordering::Relaxed);
            if w.id == 0 && w.n == 9 {
                anyhow::bail!("the database went away");
            }
            Ok(())
        }
    }

    /// Every worker's set-up takes `SET_UP`; its operations are instant.
    struct SlowToSetUp;
    const SET_UP: std::time::Duration = std::time::Duration::from_millis(300);

    impl Work for SlowToSetUp {
        fn kinds(&self) -> Vec<KvOp> {
            vec![KvOp::Read]
        }
        fn init_worker(&self, _w: &mut Worker<'_>) {
            std::thread::sleep(SET_UP);
        }
        fn op(&self, _w: &mut Worker<'_>) -> Result<()> {
            Ok(())
        }
    }

    /// The phase's clock starts when every worker is ready: a set-up (a
    /// session, a server's connection) is not in its time. The phase call
    /// lasts at least the set-up's sleep plus the phase's own time.
    #[test]
    fn a_workers_set_up_is_not_in_the_phase_time() {
        let spec = PhaseSpec::split(1000, 2, None, 1);
        let wall = std::time::Instant::now();
        let out = run_reporting(&Null, &SlowToSetUp, &spec, None, &|_, _, _| {}).expect("phase");
        let wall = wall.elapsed().as_nanos();
        assert!(
            u128::from(out.duration_ns) + SET_UP.as_nanos() <= wall,
            "phase {} ns + set-up {} ns > the call's {wall} ns",
            out.duration_ns,
            SET_UP.as_nanos()
        );
    }

    /// The null engine, asking for more room than any disk has.
    struct NeedsTheWholeDisk;

    impl KvEngine for NeedsTheWholeDisk {
        fn name(&self) -> &'static str {
            "greedy"
        }
        fn version(&self) -> String {
            String::new()
        }
        fn settings(&self) -> Vec<(String, String)> {
            Vec::new()
        }
        fn session(&self) -> Result<Box<dyn KvSession + '_>> {
            Null.session()
        }
        fn flush(&self) -> Result<()> {
            Ok(())
        }
        fn space_reserve(&self) -> Option<u64> {
            Some(u64::MAX / 4)
        }
    }

    /// Each operation writes `bytes` (0: a read); `ops` counts them.
    struct Writes {
        bytes: u64,
        ops: AtomicU64,
    }

    impl Work for Writes {
        fn kinds(&self) -> Vec<KvOp> {
            vec![KvOp::Write]
        }
        fn op(&self, w: &mut Worker<'_>) -> Result<()> {
            w.rec.logical_written += self.bytes;
            self.ops.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
    }

    /// Writers stop at their first look when the engine's reserve does not
    /// fit; readers never look.
    #[test]
    fn the_space_watch_stops_writers_not_readers() {
        let d = tempfile::tempdir().unwrap();
        let watched = |ops: u64| {
            let mut spec = PhaseSpec::split(ops, 2, None, 1);
            spec.space = SpaceWatch::new(d.path()).map(std::sync::Arc::new);
            // A bound the writers never reach unless nothing stops them.
            spec.deadline_ns = Some(30_000_000_000);
            spec
        };
        let writes = Writes {
            bytes: 100,
            ops: AtomicU64::new(0),
        };
        let e = run_reporting(
            &NeedsTheWholeDisk,
            &writes,
            &watched(u64::MAX / 2),
            None,
            &|_, _, _| {},
        )
        .err()
        .expect("stopped");
        assert!(
            e.downcast_ref::<super::super::space::DiskFull>().is_some(),
            "{e:#}"
        );
        let reads = Writes {
            bytes: 0,
            ops: AtomicU64::new(0),
        };
        run_reporting(
            &NeedsTheWholeDisk,
            &reads,
            &watched(10_000),
            None,
            &|_, _, _| {},
        )
        .expect("reads run");
        assert_eq!(reads.ops.load(Ordering::Relaxed), 10_000);
    }

    #[test]
    fn a_failing_operation_ends_its_phase_not_the_process() {
        let work = FailsOnce {
            ops: AtomicU64::new(0),
        };
        let mut spec = PhaseSpec::split(u64::MAX / 2, 3, None, 1);
        // A bound the test never reaches unless the others fail to stop.
        spec.deadline_ns = Some(60_000_000_000);
        let err = run_reporting(&Null, &work, &spec, None, &|_, _, _| {})
            .err()
            .expect("the failing worker's error");
        assert!(err.to_string().contains("went away"), "{err}");
        assert!(
            !interrupt::stop_requested(),
            "one phase's failure must not stop the whole process"
        );
    }
}
