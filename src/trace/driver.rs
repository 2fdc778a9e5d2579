//! The I/O loop `iolab trace` measures: one worker on the calling thread,
//! closed loop at a fixed queue depth, random offsets, through the core's
//! `Engine` trait, recording per request the CLOCK_MONOTONIC stamps of
//! prepare / submitted / completion seen. (To be replaced by the core
//! runner's per-request log when it lands.) The loop allocates nothing: the
//! record buffer is sized before timing starts.

use std::os::fd::RawFd;

use anyhow::{bail, Result};

use super::correlate::UserStamp;
use super::extents::ExtentMap;
use super::standin::{AioStandin, UringStandin};
use crate::engine::psync::PsyncEngine;
use crate::engine::{completion_error, Completion, Engine, EngineKind, IoRequest, OpKind};
use crate::interrupt;
use crate::measure::clock::mono_now_ns;
use crate::runner::buffers::BufferPool;

/// One traced job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriverJob {
    pub engine: EngineKind,
    pub sqpoll: bool,
    pub depth: u32,
    pub bs: u32,
    pub write: bool,
    pub duration_ns: u64,
    /// Stop after this many requests (the record buffer's size).
    pub max_ops: usize,
    pub seed: u64,
}

/// What one run produced.
#[derive(Debug, Clone, Default)]
pub struct DriverResult {
    pub stamps: Vec<UserStamp>,
    pub elapsed_ns: u64,
    pub interrupted: bool,
}

impl DriverResult {
    pub fn iops(&self) -> f64 {
        if self.elapsed_ns == 0 {
            0.0
        } else {
            self.stamps.len() as f64 * 1e9 / self.elapsed_ns as f64
        }
    }

    pub fn mean_latency_ns(&self) -> f64 {
        if self.stamps.is_empty() {
            return 0.0;
        }
        self.stamps
            .iter()
            .map(|s| (s.done - s.prepare) as f64)
            .sum::<f64>()
            / self.stamps.len() as f64
    }
}

/// The calling thread's kernel thread id.
pub fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// Build the engine for a job.
pub fn make_engine(job: &DriverJob, fd: RawFd) -> Result<Box<dyn Engine>> {
    Ok(match job.engine {
        EngineKind::Psync => Box::new(PsyncEngine::new(fd)),
        EngineKind::Aio => Box::new(AioStandin::new(fd, job.depth)?),
        EngineKind::IoUring => Box::new(UringStandin::new(fd, job.depth, job.sqpoll)?),
        other => bail!(
            "iolab trace supports psync, aio and io_uring, not {}",
            other.name()
        ),
    })
}

/// Run the job on `fd` (opened with O_DIRECT) of `size` bytes.
pub fn run(job: &DriverJob, fd: RawFd, size: u64, extents: &ExtentMap) -> Result<DriverResult> {
    let depth = if job.engine.is_sync() {
        1
    } else {
        job.depth.max(1)
    } as usize;
    let pool = BufferPool::new(depth, job.bs as usize, job.seed)?;
    let mut engine = make_engine(job, fd)?;
    let blocks = (size / u64::from(job.bs)).max(1);
    let tid = gettid();
    let op = if job.write {
        OpKind::Write
    } else {
        OpKind::Read
    };
    let mut stamps: Vec<UserStamp> = Vec::with_capacity(job.max_ops);
    let mut prepare = vec![0u64; depth];
    let mut submitted = vec![0u64; depth];
    let mut offsets = vec![0u64; depth];
    let mut free: Vec<u32> = (0..depth as u32).rev().collect();
    let mut staged: Vec<u32> = Vec::with_capacity(depth);
    let mut comps: Vec<Completion> = Vec::with_capacity(depth);
    let mut rng = job.seed | 1;
    let mut inflight = 0usize;
    let start = mono_now_ns();
    let end = start + job.duration_ns;
    let mut issuing = true;
    let mut interrupted = false;
    loop {
        if issuing
            && (interrupt::stop_requested()
                || mono_now_ns() >= end
                || stamps.len() + inflight >= job.max_ops)
        {
            interrupted = interrupt::stop_requested();
            issuing = false;
        }
        if !issuing && inflight == 0 {
            break;
        }
        while let Some(slot) = if issuing { free.pop() } else { None } {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let off = (rng % blocks) * u64::from(job.bs);
            let p = mono_now_ns();
            engine.queue(IoRequest {
                slot,
                op,
                offset: off,
                len: job.bs,
                buf: pool.slot_ptr(slot as usize),
            })?;
            prepare[slot as usize] = p;
            submitted[slot as usize] = p;
            offsets[slot as usize] = off;
            staged.push(slot);
            inflight += 1;
            if job.engine.is_sync() {
                break;
            }
        }
        if !staged.is_empty() && !job.engine.is_sync() {
            engine.submit()?;
            let s = mono_now_ns();
            for &slot in &staged {
                submitted[slot as usize] = s;
            }
        }
        staged.clear();
        comps.clear();
        engine.reap(1, &mut comps)?;
        let u = mono_now_ns();
        for c in &comps {
            if c.result < 0 {
                return Err(completion_error(c.result).into());
            }
            let s = c.slot as usize;
            stamps.push(UserStamp {
                tid,
                write: job.write,
                offset: offsets[s],
                len: job.bs,
                sector: None,
                prepare: prepare[s],
                submitted: submitted[s],
                done: u,
            });
            free.push(c.slot);
            inflight -= 1;
        }
    }
    let elapsed_ns = mono_now_ns() - start;
    for st in stamps.iter_mut() {
        st.sector = extents.sector(st.offset);
    }
    Ok(DriverResult {
        stamps,
        elapsed_ns,
        interrupted,
    })
}
