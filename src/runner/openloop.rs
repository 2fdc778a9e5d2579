//! Open-loop issuing: requests start on a schedule (uniform or Poisson
//! arrivals at a target rate), not when earlier requests complete. Each
//! request keeps its *intended* issue time, so latency is measured both from
//! the intended time (what a client of a queue sees, no coordinated
//! omission) and from the actual issue time (what fio's `rate_iops` reports).
//! When the device or the depth cannot keep up, due requests wait: that wait
//! is counted as issue delay, late issues and backlog.
//!
//! Between arrivals the worker sleeps in the kernel until the next
//! completion or shortly before the next arrival, whichever comes first
//! (io_uring's and aio's timed waits), then spins the last few microseconds
//! to issue on time; how early it wakes is learned from how late the
//! kernel wakes it and what spinning costs at this rate (`wake.rs`).
//!
//! The closed-loop hot path in `worker.rs` is untouched; this is its own loop.

use std::sync::atomic::{AtomicBool, Ordering};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::engine::{Completion, Engine, IoRequest, OpKind};
use crate::interrupt;
use crate::measure::clock::Clock;
use crate::measure::histogram::LatencyHistogram;
use crate::results::OpenLoopStats;
use crate::runner::buffers::BufferPool;
use crate::runner::pattern::RequestGen;
use crate::runner::recorder::Recorder;
use crate::runner::wake::{self, WakeCalibration, WakeMargin};
use crate::runner::worker::{completed, LoopSpec, WorkerError};

/// An issue is "late" when it starts more than this after its intended time.
pub const LATE_NS: u64 = 50_000;
/// Poll step while requests are in flight and the next one is almost due.
const POLL_NS: u64 = 1_000;
/// Closer to an arrival than this, a worker spins rather than sleeps.
const MIN_SPIN_NS: u64 = 2_000;

/// One worker's schedule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpenLoopSpec {
    /// Mean gap between this worker's arrivals, ns.
    pub mean_gap_ns: f64,
    pub poisson: bool,
    pub seed: u64,
    /// This thread's wake-up lateness, measured before the run
    /// (`wake::calibrate`; empty with a virtual clock).
    pub wake: WakeCalibration,
    /// Arrivals this far behind their schedule stop the job (ACT's
    /// `max-lag-sec`, `--profile act`); `None`: never.
    pub max_lag_ns: Option<u64>,
}

/// How far behind its schedule an arrival due at `due` is at `now`, when
/// that is more than `max_lag` (then the job stops).
pub fn lag_past(max_lag: Option<u64>, now: u64, due: u64) -> Option<u64> {
    let lag = now.saturating_sub(due);
    max_lag.filter(|&m| lag > m).map(|_| lag)
}

/// What open-loop issuing measured on top of the normal recorder.
#[derive(Clone, Default)]
pub struct OpenLoopRecorder {
    /// Completion minus intended issue time, per op kind (read, write).
    pub intended: [LatencyHistogram; 2],
    /// Actual issue minus intended issue time.
    pub issue_delay: LatencyHistogram,
    /// Measured requests and how many of them started late.
    pub measured: u64,
    pub late: u64,
    /// Requests due but not yet issued: the largest seen and the count at the end.
    pub max_backlog: u64,
    pub final_backlog: u64,
    /// The lag at which this worker stopped the job (`max_lag_ns`).
    pub lag_stop_ns: Option<u64>,
}

impl OpenLoopRecorder {
    pub fn merge(&mut self, o: &OpenLoopRecorder) {
        for k in 0..2 {
            self.intended[k].merge(&o.intended[k]);
        }
        self.issue_delay.merge(&o.issue_delay);
        self.measured += o.measured;
        self.late += o.late;
        self.max_backlog += o.max_backlog;
        self.final_backlog += o.final_backlog;
        self.lag_stop_ns = self.lag_stop_ns.max(o.lag_stop_ns);
    }
}

#[derive(Clone, Copy, Default)]
struct Slot {
    op: Option<OpKind>,
    len: u64,
    t_intended: u64,
    t_prep: u64,
    t_sub: u64,
}

/// Arrival times of one worker: start + cumulative gaps (kept in f64 so
/// sub-nanosecond gaps at high rates do not drift).
struct Schedule {
    next: f64,
    mean: f64,
    poisson: bool,
    rng: SmallRng,
}

impl Schedule {
    fn new(start: u64, ol: &OpenLoopSpec) -> Schedule {
        let mut s = Schedule {
            next: start as f64,
            mean: ol.mean_gap_ns,
            poisson: ol.poisson,
            rng: SmallRng::seed_from_u64(ol.seed ^ 0x0be7_100f),
        };
        // The first arrival is one gap in (a random one for Poisson).
        s.advance();
        s
    }

    #[inline]
    fn due(&self) -> u64 {
        self.next as u64
    }

    #[inline]
    fn advance(&mut self) {
        let gap = if self.poisson {
            // Exponential with the given mean: -ln(U), U in (0, 1].
            let u = 1.0 - (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            -u.ln() * self.mean
        } else {
            self.mean
        };
        self.next += gap;
    }

    /// Requests due by `now` that were not issued yet (including the next one).
    fn backlog(&self, now: u64) -> u64 {
        if (now as f64) < self.next {
            0
        } else {
            ((now as f64 - self.next) / self.mean) as u64 + 1
        }
    }
}

/// Run the open loop until the deadline, a count limit or the stop flag.
/// `rec.open_loop` must be set; the normal histograms get latency from the
/// actual issue, `rec.open_loop` the intended-time view.
#[allow(clippy::too_many_arguments)]
pub fn run<C: Clock, E: Engine>(
    engine: &mut E,
    clock: &C,
    spec: &LoopSpec,
    ol: &OpenLoopSpec,
    gen: &mut RequestGen,
    pool: &mut BufferPool,
    rec: &mut Recorder,
    stop: &AtomicBool,
) -> Result<(), WorkerError> {
    wake::set_timer_slack();
    let mut orec = rec.open_loop.take().unwrap_or_default();
    let r = run_inner(engine, clock, spec, ol, gen, pool, rec, &mut orec, stop);
    rec.open_loop = Some(orec);
    r
}

#[allow(clippy::too_many_arguments)]
fn run_inner<C: Clock, E: Engine>(
    engine: &mut E,
    clock: &C,
    spec: &LoopSpec,
    ol: &OpenLoopSpec,
    gen: &mut RequestGen,
    pool: &mut BufferPool,
    rec: &mut Recorder,
    orec: &mut OpenLoopRecorder,
    stop: &AtomicBool,
) -> Result<(), WorkerError> {
    let depth = spec.depth as usize;
    let mut slots = vec![Slot::default(); depth];
    let mut free: Vec<u32> = (0..depth as u32).rev().collect();
    let mut staged: Vec<u32> = Vec::with_capacity(depth);
    let mut comps: Vec<Completion> = Vec::with_capacity(depth);
    let mut sched = Schedule::new(clock.now(), ol);
    let (mut issued_ops, mut issued_bytes) = (0u64, 0u64);
    let mut in_flight = 0usize;
    let mut stopping = false;
    let mut margin = WakeMargin::new(ol.mean_gap_ns, &ol.wake);

    loop {
        let now = clock.now();
        if !stopping && orec.lag_stop_ns.is_none() {
            if let Some(lag) = lag_past(ol.max_lag_ns, now, sched.due()) {
                orec.lag_stop_ns = Some(lag);
                stop.store(true, Ordering::Relaxed);
            }
        }
        if !stopping
            && (now >= spec.deadline
                || sched.due() >= spec.deadline
                || stop.load(Ordering::Relaxed)
                || interrupt::stop_requested())
        {
            stopping = true;
            let end = now.min(spec.deadline);
            orec.final_backlog = sched.backlog(end);
        }
        if !stopping {
            while sched.due() <= now {
                let Some(s) = free.pop() else { break };
                if issued_ops >= spec.max_ops || issued_bytes >= spec.max_bytes {
                    free.push(s);
                    stopping = true;
                    break;
                }
                let (op, offset, len) = gen.next_request();
                let req = IoRequest {
                    slot: s,
                    op,
                    offset,
                    len: len as u32,
                    buf: pool.slot_ptr(s as usize),
                };
                let t_prep = if spec.sync_engine { clock.now() } else { now };
                slots[s as usize] = Slot {
                    op: Some(op),
                    len,
                    t_intended: sched.due(),
                    t_prep,
                    t_sub: t_prep,
                };
                engine.queue(req)?;
                if !spec.sync_engine {
                    staged.push(s);
                }
                sched.advance();
                in_flight += 1;
                issued_ops += 1;
                issued_bytes += len;
                if spec.sync_engine {
                    break;
                }
            }
            if !staged.is_empty() {
                engine.submit()?;
                let ts = clock.now();
                for &s in &staged {
                    slots[s as usize].t_sub = ts;
                }
                staged.clear();
            }
            let b = sched.backlog(now);
            if b > orec.max_backlog {
                orec.max_backlog = b;
            }
        }
        // Arrivals closer together than a wake-up is late: sleeping until
        // shortly before each one never happens, and spinning to it would
        // spin the whole gap. Wait in the kernel for a completion or the
        // arrival itself; a late wake issues late, counted as issue delay,
        // and the due requests go out together (fio's rate limiter does
        // the same, uncounted).
        let short_gaps = margin.ns() as f64 >= ol.mean_gap_ns;
        if in_flight == 0 {
            if stopping {
                break;
            }
            let (t, due) = (clock.now(), sched.due());
            if short_gaps && due > t + MIN_SPIN_NS {
                clock.wait_until(due);
                margin.observe(clock.now().saturating_sub(due));
            } else if due > t + margin.ns() {
                let wake = due - margin.ns();
                clock.wait_until(wake);
                margin.observe(clock.now().saturating_sub(wake));
            } else {
                // Spin the margin: a second sleep would wake late again.
                clock.spin_until(due);
            }
            continue;
        }
        comps.clear();
        let blocked = stopping || (free.is_empty() && sched.due() <= now) || spec.sync_engine;
        let got = if blocked {
            let mut got = 0;
            while got == 0 {
                got += engine.reap(1, &mut comps)?;
            }
            got
        } else {
            let (t, due) = (clock.now(), sched.due());
            let lead = if short_gaps { 0 } else { margin.ns() };
            if engine.waits_with_timeout() && due > t + lead.max(MIN_SPIN_NS) {
                // Sleep until a completion or shortly before the arrival.
                let wake = due - lead;
                let got = engine.reap_timeout(wake - t, &mut comps)?;
                if got == 0 {
                    margin.observe(clock.now().saturating_sub(wake));
                }
                got
            } else {
                engine.reap(0, &mut comps)?
            }
        };
        if got == 0 {
            let t = clock.now();
            clock.sleep_until(sched.due().min(t + POLL_NS));
            continue;
        }
        let t_done = clock.now();
        take_completions(&comps, t_done, spec, &mut slots, &mut free, rec, orec)?;
        in_flight -= comps.len();
    }
    Ok(())
}

/// Record the reaped completions and free their slots; a failed one fails
/// the worker unless `--continue-on-error` (then it is only counted).
#[inline(always)]
fn take_completions(
    comps: &[Completion],
    t_done: u64,
    spec: &LoopSpec,
    slots: &mut [Slot],
    free: &mut Vec<u32>,
    rec: &mut Recorder,
    orec: &mut OpenLoopRecorder,
) -> Result<(), WorkerError> {
    for c in comps {
        let s = c.slot as usize;
        let slot = slots[s];
        let op = slot.op.unwrap_or(OpKind::Read);
        // The open loop keeps no offsets in its slots: errors name offset 0.
        let measured = t_done >= spec.measure_start;
        let ok = completed(c, op, (0, slot.len), spec.continue_on_error, measured, rec)?;
        if ok && measured {
            record_measured(rec, orec, op, &slot, t_done, spec.sync_engine);
        }
        slots[s].op = None;
        free.push(c.slot);
    }
    Ok(())
}

/// Record one measured completion: latency from the actual issue in `rec`,
/// from the intended issue time and the issue delay in `orec`.
#[inline(always)]
fn record_measured(
    rec: &mut Recorder,
    orec: &mut OpenLoopRecorder,
    op: OpKind,
    slot: &Slot,
    t_done: u64,
    sync_engine: bool,
) {
    rec.record(op, slot.len, slot.t_prep, slot.t_sub, t_done, sync_engine);
    orec.intended[op.index().min(1)].record(t_done.saturating_sub(slot.t_intended));
    let delay = slot.t_prep.saturating_sub(slot.t_intended);
    orec.issue_delay.record(delay);
    orec.measured += 1;
    if delay > LATE_NS {
        orec.late += 1;
    }
}

/// Summary of a point's open-loop recorder, stored in `Point.extra["open_loop"]`.
pub fn summary(
    orec: &OpenLoopRecorder,
    target_iops: f64,
    arrival: &str,
    achieved_iops: f64,
    jobs: u32,
) -> OpenLoopStats {
    let mut lat_from_intended = std::collections::BTreeMap::new();
    for (k, name) in [(0, "read"), (1, "write")] {
        if let Some(st) = orec.intended[k].stats() {
            lat_from_intended.insert(name.to_string(), st);
        }
    }
    OpenLoopStats {
        target_iops,
        arrival: arrival.to_string(),
        jobs,
        achieved_iops,
        achieved_fraction: if target_iops > 0.0 {
            achieved_iops / target_iops
        } else {
            0.0
        },
        late_threshold_ns: LATE_NS,
        late_fraction: if orec.measured > 0 {
            orec.late as f64 / orec.measured as f64
        } else {
            0.0
        },
        late: orec.late,
        measured: orec.measured,
        max_backlog: orec.max_backlog,
        final_backlog: orec.final_backlog,
        issue_delay: orec.issue_delay.stats(),
        lat_from_intended,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::fake::FakeEngine;
    use crate::measure::clock::VirtualClock;
    use crate::plan::engines::FakeScript;
    use crate::runner::test_support;

    /// 8-slot reads of `spec` open loop at `ol`'s arrivals, to the end:
    /// the worker's recorder (its open-loop part in `open_loop`).
    fn reads_open_loop<C: Clock, E: Engine>(
        engine: &mut E,
        clock: &C,
        spec: &LoopSpec,
        ol: &OpenLoopSpec,
    ) -> Recorder {
        let (mut gen, mut pool) = test_support::reads(8);
        let mut rec = Recorder::new(spec.measure_start, 2);
        rec.open_loop = Some(OpenLoopRecorder::default());
        let stop = AtomicBool::new(false);
        run(
            engine, clock, spec, ol, &mut gen, &mut pool, &mut rec, &stop,
        )
        .unwrap();
        rec
    }

    /// At light load the worker waits in the kernel for the next completion
    /// or arrival instead of polling every microsecond (issue 10 item 11:
    /// it polled ~300 times per request at 2,500 requests/s).
    #[test]
    fn light_load_waits_instead_of_polling() {
        let clock = VirtualClock::new(1_000_000_000);
        let t0 = clock.now();
        let script = FakeScript {
            latencies_ns: vec![100_000],
            servers: 8,
            submit_ns: 0,
        };
        let mut engine = FakeEngine::new(script, 8, clock.clone());
        let spec = test_support::loop_spec(8, t0, t0 + 1_000_000_000, u64::MAX);
        let ol = OpenLoopSpec {
            mean_gap_ns: 400_000.0,
            poisson: true,
            seed: 3,
            wake: WakeCalibration::default(),
            max_lag_ns: None,
        };
        let rec = reads_open_loop(&mut engine, &clock, &spec, &ol);
        let done = rec.ops[OpKind::Read.index()];
        assert!((2_000..3_000).contains(&done), "{done} requests");
        let polls_per_request = engine.empty_polls as f64 / done as f64;
        assert!(
            polls_per_request < 3.0,
            "{polls_per_request:.1} empty polls per request"
        );
        let orec = rec.open_loop.unwrap();
        assert_eq!(orec.late, 0, "a virtual clock wakes on time");
    }

    /// A virtual clock whose timed sleeps end `.1` ns late, as a kernel's
    /// do; spins end on time.
    #[derive(Clone)]
    struct LateClock(VirtualClock, u64);

    impl Clock for LateClock {
        fn now(&self) -> u64 {
            self.0.now()
        }
        fn wait_until(&self, t: u64) {
            self.0.set(self.0.now().max(t + self.1));
        }
        fn spin_until(&self, t: u64) {
            self.0.spin_until(t);
        }
        fn sleep_until(&self, t: u64) {
            self.0.sleep_until(t);
        }
    }

    /// Arrivals 30 us apart on a machine whose wake-ups are 40 us late
    /// (the 50% load of docs/benchmarks.md): the worker waited for each
    /// arrival in 1 us polls, about 30 per request; it now waits in the
    /// kernel for a completion or the arrival.
    #[test]
    fn gaps_shorter_than_a_wake_up_wait_in_the_kernel() {
        let virt = VirtualClock::new(1_000_000_000);
        let clock = LateClock(virt.clone(), 40_000);
        let t0 = clock.now();
        let script = FakeScript {
            latencies_ns: vec![60_000],
            servers: 8,
            submit_ns: 0,
        };
        let mut engine = FakeEngine::new(script, 8, virt);
        engine.late_wake_ns = 40_000;
        let spec = test_support::loop_spec(8, t0, t0 + 100_000_000, u64::MAX);
        let mut wake = WakeCalibration {
            n: wake::CALIBRATION_SLEEPS,
            ..WakeCalibration::default()
        };
        wake.late_ns.fill(40_000);
        let ol = OpenLoopSpec {
            mean_gap_ns: 30_000.0,
            poisson: true,
            seed: 5,
            wake,
            max_lag_ns: None,
        };
        let rec = reads_open_loop(&mut engine, &clock, &spec, &ol);
        let done = rec.ops[OpKind::Read.index()];
        assert!((3_000..3_700).contains(&done), "{done} requests");
        let polls_per_request = engine.empty_polls as f64 / done as f64;
        assert!(
            polls_per_request < 3.0,
            "{polls_per_request:.1} empty polls per request"
        );
    }

    #[test]
    fn schedules_keep_their_rate() {
        for poisson in [false, true] {
            let ol = OpenLoopSpec {
                mean_gap_ns: 1000.0,
                poisson,
                seed: 7,
                wake: WakeCalibration::default(),
                max_lag_ns: None,
            };
            let mut s = Schedule::new(0, &ol);
            for _ in 0..99_999 {
                s.advance();
            }
            let mean = s.due() as f64 / 100_000.0;
            assert!(
                (mean - 1000.0).abs() < 20.0,
                "poisson={poisson} mean gap {mean}"
            );
        }
        let s = Schedule::new(
            0,
            &OpenLoopSpec {
                mean_gap_ns: 100.0,
                poisson: false,
                seed: 0,
                wake: WakeCalibration::default(),
                max_lag_ns: None,
            },
        );
        assert_eq!(s.backlog(50), 0);
        assert_eq!(s.backlog(100), 1);
        assert_eq!(s.backlog(1000), 10);
    }

    /// A device slower than the arrivals: the schedule falls behind, and
    /// past `max_lag_ns` the worker records the lag, sets the job's stop
    /// and ends long before its deadline.
    #[test]
    fn a_schedule_falling_past_the_max_lag_stops_the_job() {
        let clock = VirtualClock::new(1_000_000_000);
        let t0 = clock.now();
        let script = FakeScript {
            latencies_ns: vec![1_000_000_000],
            servers: 1,
            submit_ns: 0,
        };
        let mut engine = FakeEngine::new(script, 8, clock.clone());
        let spec = test_support::loop_spec(8, t0, t0 + 600_000_000_000, u64::MAX);
        let ol = OpenLoopSpec {
            mean_gap_ns: 10_000_000.0,
            poisson: false,
            seed: 1,
            wake: WakeCalibration::default(),
            max_lag_ns: Some(10_000_000_000),
        };
        let (mut gen, mut pool) = test_support::reads(8);
        let mut rec = Recorder::new(spec.measure_start, 2);
        rec.open_loop = Some(OpenLoopRecorder::default());
        let stop = AtomicBool::new(false);
        run(
            &mut engine,
            &clock,
            &spec,
            &ol,
            &mut gen,
            &mut pool,
            &mut rec,
            &stop,
        )
        .unwrap();
        let lag = rec.open_loop.unwrap().lag_stop_ns.expect("stopped for lag");
        assert!(lag > 10_000_000_000, "{lag}");
        assert!(stop.load(Ordering::SeqCst), "the other workers are told");
        let done = rec.ops[OpKind::Read.index()];
        assert!(done < 60, "{done} reads: it ran on");
    }

    #[test]
    fn arrivals_stop_the_job_only_past_the_max_lag() {
        let ten_s = Some(10_000_000_000);
        assert_eq!(lag_past(ten_s, 30_000_000_000, 20_000_000_000), None);
        assert_eq!(
            lag_past(ten_s, 30_000_000_001, 20_000_000_000),
            Some(10_000_000_001)
        );
        assert_eq!(lag_past(ten_s, 5, 10), None, "ahead of schedule");
        assert_eq!(lag_past(None, u64::MAX, 0), None);
    }
}
