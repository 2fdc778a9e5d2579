//! The measured loop of one worker. It keeps up to `depth` requests in
//! flight (closed loop) or runs batches of K (submit K, wait for all K),
//! and stamps each request with two shared clock reads per cycle: one after
//! submission and one after reaping. A request's time starts when its slot
//! became free (the reap that freed it), so the slots' occupancy adds up to
//! depth x time and Little's law holds exactly. Nothing here allocates,
//! locks or prints.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::dut::verify;
use crate::engine::{Completion, Engine, IoRequest, OpKind};
use crate::interrupt;
use crate::measure::clock::Clock;
use crate::plan::job::ThinkTime;
use crate::runner::buffers::BufferPool;
use crate::runner::pattern::RequestGen;
use crate::runner::recorder::Recorder;

/// Limits and options of one worker's loop.
#[derive(Debug, Clone)]
pub struct LoopSpec {
    pub depth: u32,
    pub batch: bool,
    pub sync_engine: bool,
    /// Completions before this time are not recorded (ramp).
    pub measure_start: u64,
    /// Stop issuing at this time (u64::MAX = no time limit).
    pub deadline: u64,
    pub max_ops: u64,
    pub max_bytes: u64,
    pub fsync_every: u32,
    /// Submit once this many requests are staged (closed loop; batches submit whole).
    pub submit_batch: u32,
    /// Verification block size when --verify is on.
    pub verify_bs: Option<u64>,
    pub region_start: u64,
    pub region_len: u64,
    /// fio's thinktime (`None`: never pause), checked where fio checks:
    /// after an issue that leaves the queue not full, and after a reap.
    pub think: Option<ThinkTime>,
    /// Count failed requests and go on (`--continue-on-error`).
    pub continue_on_error: bool,
}

/// One request as seen from user space, for the stack breakdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestRecord {
    pub op: OpKind,
    pub offset: u64,
    pub len: u32,
    pub t_prep: u64,
    pub t_submitted: u64,
    pub t_reaped: u64,
    pub tid: i32,
    /// The engine's own stamps (taken, reply received), where it keeps
    /// them (`Engine::request_stamps`); 0 otherwise.
    pub t_engine_taken: u64,
    pub t_engine_received: u64,
}

/// Optional per-request log (preallocated; stops when full).
pub struct RequestLog {
    pub records: Vec<RequestRecord>,
    pub dropped: u64,
    pub tid: i32,
}

impl RequestLog {
    pub fn with_capacity(n: usize) -> RequestLog {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        RequestLog {
            records: Vec::with_capacity(n),
            dropped: 0,
            tid,
        }
    }

    #[inline]
    fn push(&mut self, r: RequestRecord) {
        if self.records.len() < self.records.capacity() {
            self.records.push(r);
        } else {
            self.dropped += 1;
        }
    }
}

#[derive(Clone, Copy, Default)]
struct Slot {
    op: Option<OpKind>,
    offset: u64,
    len: u64,
    t_prep: u64,
    t_sub: u64,
    /// Read whose data can be checked (no overlapping write was in flight).
    checkable: bool,
    seq: u64,
    /// The engine's stamps, copied at the reap while requests are logged.
    engine_stamps: (u64, u64),
}

/// Verification state of one worker: the last sequence written per block
/// (0: not written by this run), under this worker's run id.
struct VerifyState {
    bs: u64,
    region_start: u64,
    run: u64,
    expected: Vec<u64>,
    next_seq: u64,
}

impl VerifyState {
    fn new(bs: u64, region_start: u64, region_len: u64) -> VerifyState {
        VerifyState {
            bs,
            region_start,
            run: verify::new_run_id(),
            expected: vec![0; (region_len / bs) as usize],
            next_seq: 1,
        }
    }

    fn block(&self, offset: u64) -> usize {
        ((offset - self.region_start) / self.bs) as usize
    }
}

/// Why a worker stopped early.
pub use crate::error::WorkerError;

/// Run the loop until a limit or the global stop flag.
#[allow(clippy::too_many_arguments)]
pub fn run<C: Clock, E: Engine>(
    engine: &mut E,
    clock: &C,
    spec: &LoopSpec,
    gen: &mut RequestGen,
    pool: &mut BufferPool,
    rec: &mut Recorder,
    mut log: Option<&mut RequestLog>,
    stop: &AtomicBool,
) -> Result<(), WorkerError> {
    let depth = spec.depth as usize;
    let mut slots = vec![Slot::default(); depth];
    let mut free: Vec<u32> = (0..depth as u32).rev().collect();
    let mut staged: Vec<u32> = Vec::with_capacity(depth);
    let mut comps: Vec<Completion> = Vec::with_capacity(depth);
    // Completions waiting to be recorded, and when they were reaped.
    let mut finished: Vec<Slot> = Vec::with_capacity(depth);
    let mut finished_at = 0u64;
    let mut vstate = spec
        .verify_bs
        .map(|bs| VerifyState::new(bs, spec.region_start, spec.region_len));
    let mut in_flight = 0usize;
    let (mut issued_ops, mut issued_bytes) = (0u64, 0u64);
    let mut writes_since_sync = 0u64;
    let mut thinking = ThinkState::default();
    let think_blocks = spec.think.map_or(0, |t| u64::from(t.blocks.max(1)));
    let mut stopping = false;
    let mut batch_start = 0u64;
    let mut t = clock.now();

    loop {
        // Fill free slots (a whole batch at a time in batch mode).
        let sync_due = spec.fsync_every > 0 && writes_since_sync >= spec.fsync_every as u64;
        let may_fill = !(stopping || (spec.batch && in_flight > 0) || sync_due || thinking.due);
        if may_fill {
            if spec.batch {
                batch_start = t;
            }
            while let Some(s) = free.pop() {
                if issued_ops >= spec.max_ops || issued_bytes >= spec.max_bytes {
                    free.push(s);
                    stopping = true;
                    break;
                }
                let req = prepare_request(s, t, gen, &mut slots, vstate.as_mut(), pool);
                let len = req.len as u64;
                if spec.sync_engine {
                    // Synchronous: the I/O happens inside queue; time around it.
                    let t0 = clock.now();
                    engine.queue(req)?;
                    slots[s as usize].t_prep = t0;
                    slots[s as usize].t_sub = t0;
                } else {
                    engine.queue(req)?;
                    staged.push(s);
                    if !spec.batch && staged.len() >= spec.submit_batch as usize {
                        // `t` stays at the reap: a slot refilled after
                        // earlier submissions of this pass was already free
                        // while they ran, and that wait is the request's.
                        submit_staged(engine, clock, &mut slots, &mut staged)?;
                    }
                }
                in_flight += 1;
                issued_ops += 1;
                issued_bytes += len;
                // fio checks after every issue that leaves the queue not
                // full (and after the reap a full one waits for).
                if !free.is_empty() && thinking.check(think_blocks) {
                    break;
                }
                if spec.sync_engine && !spec.batch {
                    break;
                }
            }
            if !staged.is_empty() {
                submit_staged(engine, clock, &mut slots, &mut staged)?;
            }
        }
        // Record the previous completions now that new requests are in
        // flight, so this bookkeeping overlaps device time instead of
        // delaying the next submission.
        if !finished.is_empty() {
            record_finished(
                rec,
                log.as_deref_mut(),
                &finished,
                finished_at,
                spec.sync_engine,
            );
            finished.clear();
        }
        if in_flight == 0 {
            // Writes only count on completion, so `sync_due` still holds here.
            if sync_due {
                t = do_fsync(engine, clock, rec, spec)?;
                writes_since_sync = 0;
                continue;
            }
            if thinking.due && !stopping {
                t = think(clock, spec);
                thinking.due = false;
                stopping = t >= spec.deadline || stop.load(Ordering::Relaxed);
                continue;
            }
            break;
        }
        // Reap: one completion at a time in closed loop, all of them in batch mode.
        let min = if spec.batch { in_flight } else { 1 };
        comps.clear();
        let mut got = 0;
        while got < min {
            got += engine.reap(min - got, &mut comps)?;
        }
        let t_done = clock.now();
        if log.is_some() {
            keep_engine_stamps(engine, &comps, &mut slots);
        }
        let done = Reaped {
            comps: &comps,
            t_done,
            measure_start: spec.measure_start,
            continue_on_error: spec.continue_on_error,
        };
        writes_since_sync += take_completions(
            done,
            &mut slots,
            &mut free,
            &mut finished,
            vstate.as_mut(),
            pool,
            rec,
        )?;
        in_flight -= comps.len();
        thinking.completed += comps.len() as u64;
        thinking.check(think_blocks);
        finished_at = t_done;
        if spec.batch && in_flight == 0 && t_done >= spec.measure_start {
            rec.record_batch(t_done - batch_start);
        }
        if t_done >= spec.deadline || stop.load(Ordering::Relaxed) || interrupt::stop_requested() {
            stopping = true;
        }
        t = t_done;
    }
    Ok(())
}

/// Copy the engine's own stamps of the requests just reaped into their
/// slots, before the slots are refilled and the engine's stamps overwritten.
#[cold]
fn keep_engine_stamps<E: Engine>(engine: &E, comps: &[Completion], slots: &mut [Slot]) {
    for c in comps {
        if let Some(st) = engine.request_stamps(c.slot) {
            slots[c.slot as usize].engine_stamps = st;
        }
    }
}

/// Draw the next request for slot `s` (prepared at `t`), fill the slot and,
/// with --verify, stamp a write's buffer.
#[inline(always)]
fn prepare_request(
    s: u32,
    t: u64,
    gen: &mut RequestGen,
    slots: &mut [Slot],
    vstate: Option<&mut VerifyState>,
    pool: &mut BufferPool,
) -> IoRequest {
    let (op, offset, len, checkable) = match vstate {
        Some(_) => next_non_overlapping(gen, slots),
        None => {
            let (op, offset, len) = gen.next_request();
            (op, offset, len, true)
        }
    };
    let buf = pool.slot_ptr(s as usize);
    slots[s as usize] = Slot {
        op: Some(op),
        offset,
        len,
        t_prep: t,
        t_sub: t,
        checkable,
        seq: 0,
        engine_stamps: (0, 0),
    };
    if let (Some(v), OpKind::Write) = (vstate, op) {
        stamp_write(v, &mut slots[s as usize], pool, s as usize);
    }
    IoRequest {
        slot: s,
        op,
        offset,
        len: len as u32,
        buf,
    }
}

/// Completions returned by one reap, and when it returned.
#[derive(Clone, Copy)]
struct Reaped<'a> {
    comps: &'a [Completion],
    t_done: u64,
    measure_start: u64,
    continue_on_error: bool,
}

/// Check each reaped completion, verify it, free its slot and keep the
/// measured ones for recording. Returns how many writes completed.
#[inline(always)]
fn take_completions(
    done: Reaped<'_>,
    slots: &mut [Slot],
    free: &mut Vec<u32>,
    finished: &mut Vec<Slot>,
    mut vstate: Option<&mut VerifyState>,
    pool: &mut BufferPool,
    rec: &mut Recorder,
) -> Result<u64, WorkerError> {
    let mut writes = 0;
    for c in done.comps.iter() {
        let s = c.slot as usize;
        let slot = slots[s];
        let op = slot.op.unwrap_or(OpKind::Read);
        let measured = done.t_done >= done.measure_start;
        if !completed(
            c,
            op,
            (slot.offset, slot.len),
            done.continue_on_error,
            measured,
            rec,
        )? {
            // Counted in `errors`, not as a completed request.
            slots[s].op = None;
            free.push(c.slot);
            continue;
        }
        if let Some(v) = vstate.as_deref_mut() {
            complete_verify(v, &slot, pool, s, rec);
        }
        if op == OpKind::Write {
            writes += 1;
        }
        if measured {
            finished.push(slot);
        }
        slots[s].op = None;
        free.push(c.slot);
    }
    Ok(writes)
}

/// Whether a reaped completion of the request `op` at `(offset, len)`
/// transferred its `len` bytes. One that did not is counted in `rec`'s
/// errors and fails the worker (`Err`) unless `--continue-on-error`, when
/// it is `Ok(false)` and the caller frees its slot; then it is counted
/// only when `measured` (after the ramp), as the successful ones are.
/// Shared by the closed and the open loop; a success costs the one
/// comparison.
#[inline(always)]
pub(crate) fn completed(
    c: &Completion,
    op: OpKind,
    (offset, len): (u64, u64),
    continue_on_error: bool,
    measured: bool,
    rec: &mut Recorder,
) -> Result<bool, WorkerError> {
    if c.result == len as i64 {
        return Ok(true);
    }
    if measured || !continue_on_error {
        rec.record_error(c.result);
    }
    if continue_on_error {
        return Ok(false);
    }
    Err(WorkerError::Io {
        op: op.name(),
        offset,
        err: failed_completion(c.result, len),
    })
}

/// The error of a completion that did not transfer `len` bytes.
#[cold]
pub(crate) fn failed_completion(result: i64, len: u64) -> io::Error {
    if result < 0 {
        io::Error::from_raw_os_error((-result) as i32)
    } else {
        io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("short transfer: {result} of {len} bytes"),
        )
    }
}

/// Submit the staged requests and stamp their submission time.
#[inline(always)]
fn submit_staged<C: Clock, E: Engine>(
    engine: &mut E,
    clock: &C,
    slots: &mut [Slot],
    staged: &mut Vec<u32>,
) -> io::Result<()> {
    engine.submit()?;
    let ts = clock.now();
    for &s in staged.iter() {
        slots[s as usize].t_sub = ts;
    }
    staged.clear();
    Ok(())
}

/// Record requests reaped at `t_done` (and log them for the breakdown).
#[inline(always)]
fn record_finished(
    rec: &mut Recorder,
    log: Option<&mut RequestLog>,
    finished: &[Slot],
    t_done: u64,
    sync: bool,
) {
    for f in finished {
        rec.record(
            f.op.unwrap_or(OpKind::Read),
            f.len,
            f.t_prep,
            f.t_sub,
            t_done,
            sync,
        );
    }
    if let Some(l) = log {
        for f in finished {
            l.push(RequestRecord {
                op: f.op.unwrap_or(OpKind::Read),
                offset: f.offset,
                len: f.len as u32,
                t_prep: f.t_prep,
                t_submitted: f.t_sub,
                t_reaped: t_done,
                tid: l.tid,
                t_engine_taken: f.engine_stamps.0,
                t_engine_received: f.engine_stamps.1,
            });
        }
    }
}

#[cold]
fn do_fsync<C: Clock, E: Engine>(
    engine: &mut E,
    clock: &C,
    rec: &mut Recorder,
    spec: &LoopSpec,
) -> Result<u64, WorkerError> {
    let t0 = clock.now();
    engine.fsync().map_err(|err| WorkerError::Io {
        op: OpKind::Fsync.name(),
        offset: 0,
        err,
    })?;
    let t1 = clock.now();
    if t1 >= spec.measure_start {
        rec.record(OpKind::Fsync, 0, t0, t0, t1, true);
    }
    Ok(t1)
}

/// fio's thinktime count: a pause is due once `completed` reaches `base` +
/// thinktime_blocks, the base being the count when the last pause was
/// decided (completions while draining count towards the next one).
#[derive(Debug, Default)]
struct ThinkState {
    completed: u64,
    base: u64,
    due: bool,
}

impl ThinkState {
    /// Decide whether a pause is due now (`blocks` 0: never); true if it is.
    #[inline]
    fn check(&mut self, blocks: u64) -> bool {
        if blocks > 0 && !self.due && self.completed >= self.base + blocks {
            self.due = true;
            self.base = self.completed;
        }
        self.due
    }
}

/// fio's thinktime once the requests in flight are done: spin the spin
/// part, sleep the rest (never past the deadline); the time it ends.
#[cold]
fn think<C: Clock>(clock: &C, spec: &LoopSpec) -> u64 {
    let now = clock.now();
    let Some(think) = spec.think else {
        return now;
    };
    let end = now.saturating_add(think.ns).min(spec.deadline);
    let spin_end = now.saturating_add(think.spin_ns).min(end);
    clock.spin_until(spin_end);
    clock.sleep_until(end);
    clock.now()
}

/// Next request that does not overlap one in flight (reads racing a write,
/// or two writes to one block, make the block's content unknowable).
/// Gives up after a few tries and marks the request uncheckable instead.
#[cold]
fn next_non_overlapping(gen: &mut RequestGen, slots: &[Slot]) -> (OpKind, u64, u64, bool) {
    let mut last = gen.next_request();
    for _ in 0..64 {
        let (op, offset, _) = last;
        let clash = slots.iter().any(|o| {
            o.op.is_some()
                && o.offset == offset
                && (op == OpKind::Write || o.op == Some(OpKind::Write))
        });
        if !clash {
            return (last.0, last.1, last.2, true);
        }
        last = gen.next_request();
    }
    (last.0, last.1, last.2, false)
}

/// Stamp a write's header with the next sequence number.
#[cold]
fn stamp_write(v: &mut VerifyState, slot: &mut Slot, pool: &mut BufferPool, s: usize) {
    slot.seq = v.next_seq;
    v.next_seq += 1;
    let by = verify::Stamp {
        run: v.run,
        seq: slot.seq,
    };
    verify::stamp(pool.slot(s, slot.len as usize), slot.offset, by);
}

/// Record a write's sequence, or check a read's data.
#[cold]
fn complete_verify(
    v: &mut VerifyState,
    slot: &Slot,
    pool: &mut BufferPool,
    s: usize,
    rec: &mut Recorder,
) {
    let block = v.block(slot.offset);
    match slot.op {
        Some(OpKind::Write) => v.expected[block] = slot.seq,
        Some(OpKind::Read) if slot.checkable => {
            let expected = match v.expected[block] {
                0 => None,
                seq => Some(verify::Stamp { run: v.run, seq }),
            };
            let data = pool.slot(s, slot.len as usize);
            let tally = verify::check(data, slot.offset, expected, |offset, m| {
                rec.record_mismatch(offset, m.describe())
            });
            rec.verify.blocks_checked += tally.checked;
            rec.verify.never_written += tally.never_written;
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::fake::FakeEngine;
    use crate::measure::clock::VirtualClock;
    use crate::plan::engines::FakeScript;
    use crate::runner::recorder::LAT;
    use crate::runner::test_support;

    const T0: u64 = 1_000_000_000;

    /// A completion's check, shared by both loops: a full transfer passes,
    /// a failed one is counted and, without --continue-on-error, fails the
    /// worker naming the request.
    #[test]
    fn a_completion_is_checked_the_same_in_both_loops() {
        let mut rec = Recorder::new(0, 1);
        let full = Completion {
            slot: 0,
            result: 4096,
        };
        let short = Completion {
            slot: 0,
            result: 512,
        };
        assert!(completed(&full, OpKind::Write, (8192, 4096), false, true, &mut rec).unwrap());
        assert!(rec.errors.is_empty());
        assert!(!completed(&short, OpKind::Write, (8192, 4096), true, true, &mut rec).unwrap());
        assert_eq!(rec.errors.values().sum::<u64>(), 1);
        match completed(&short, OpKind::Read, (8192, 4096), false, true, &mut rec) {
            Err(WorkerError::Io { op, offset, .. }) => {
                assert_eq!((op, offset), ("read", 8192));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(rec.errors.values().sum::<u64>(), 2);
    }

    /// A request that fails in the ramp with --continue-on-error is not
    /// counted, as the ramp's successful requests are not: a 1% error
    /// rate read 1.33% with a 1 s ramp before 3 s measured (issue 31 item
    /// 13). Without --continue-on-error it still fails the worker.
    #[test]
    fn errors_in_the_ramp_are_not_counted() {
        let mut rec = Recorder::new(0, 1);
        let eio = Completion {
            slot: 0,
            result: -5,
        };
        assert!(!completed(&eio, OpKind::Read, (0, 4096), true, false, &mut rec).unwrap());
        assert!(rec.errors.is_empty(), "{:?}", rec.errors);
        assert!(completed(&eio, OpKind::Read, (0, 4096), false, false, &mut rec).is_err());
        assert!(!completed(&eio, OpKind::Read, (0, 4096), true, true, &mut rec).unwrap());
        assert_eq!(rec.errors.values().sum::<u64>(), 2);
    }

    /// Run `edit(loop_spec)` closed loop at `depth` on the fake device
    /// `script` (virtual clock from T0); the merged recorder.
    fn fake_run(
        depth: u32,
        script: FakeScript,
        deadline: u64,
        max_ops: u64,
        edit: impl FnOnce(&mut LoopSpec),
    ) -> Recorder {
        let clock = VirtualClock::new(T0);
        let mut engine = FakeEngine::new(script, depth, clock.clone());
        let mut spec = test_support::loop_spec(depth, T0, deadline, max_ops);
        edit(&mut spec);
        let (mut gen, mut pool) = test_support::reads(depth);
        let mut rec = Recorder::new(T0, 2);
        let stop = AtomicBool::new(false);
        let r = run(
            &mut engine,
            &clock,
            &spec,
            &mut gen,
            &mut pool,
            &mut rec,
            None,
            &stop,
        );
        r.unwrap();
        rec
    }

    /// IOPS x mean latency / depth of a closed-loop run on the fake device.
    fn littles_ratio(depth: u32, submit_batch: u32, script: FakeScript) -> f64 {
        let rec = fake_run(depth, script, u64::MAX, 20_000, |s| {
            s.submit_batch = submit_batch
        });
        let read = OpKind::Read.index();
        let ops = rec.ops[read] as f64;
        let elapsed = (rec.last_done - T0) as f64;
        ops / elapsed * rec.hist[read][LAT].mean() / depth as f64
    }

    /// Completions that arrive together free several slots in one reap; the
    /// slots refilled after the first submit call waited during it, and that
    /// wait must be in their latency (issue 10 item 1: it read 4-9% low).
    #[test]
    fn littles_law_holds_when_reaps_free_several_slots() {
        for (depth, submit_batch) in [(4, 1), (8, 1), (32, 1), (8, 4), (1, 1)] {
            // Service times that make every request of a pass finish together.
            let latencies_ns = (0..depth as u64).map(|i| 100_000 - 2_000 * i).collect();
            let script = FakeScript {
                latencies_ns,
                servers: depth,
                submit_ns: 2_000,
            };
            let ratio = littles_ratio(depth, submit_batch, script);
            assert!(
                (ratio - 1.0).abs() < 0.01,
                "depth {depth} submit batch {submit_batch}: IOPS x mean latency = {:.3} x depth",
                ratio
            );
        }
    }

    /// Requests completed in 1.1 s of a serial 100 us fake device at QD 4
    /// with 1 ms of thinktime after `blocks` completions.
    fn ops_with_thinktime(blocks: u32) -> u64 {
        let script = FakeScript {
            latencies_ns: vec![100_000],
            servers: 1,
            submit_ns: 0,
        };
        let rec = fake_run(4, script, T0 + 1_100_000_000, u64::MAX, |s| {
            s.think = Some(ThinkTime {
                ns: 1_000_000,
                spin_ns: 0,
                blocks,
            })
        });
        rec.total_ops()
    }

    /// fio's rule, worked by hand for completions that arrive one at a
    /// time: blocks = 1 caps the depth at 1 (one request per 1.1 ms);
    /// blocks = 4 runs 4 per pause (1.4 ms); blocks = 3 alternates 5
    /// requests (1.5 ms) and 1 (1.1 ms).
    #[test]
    fn thinktime_follows_fios_pause_rule() {
        assert!(
            (1000..=1005).contains(&ops_with_thinktime(1)),
            "{}",
            ops_with_thinktime(1)
        );
        assert!(
            (3140..=3150).contains(&ops_with_thinktime(4)),
            "{}",
            ops_with_thinktime(4)
        );
        assert!(
            (2535..=2545).contains(&ops_with_thinktime(3)),
            "{}",
            ops_with_thinktime(3)
        );
    }
}
