//! One configuration of `iolab trace` (engine, queue depth, I/O scheduler):
//! an untraced run for the tracing overhead, a traced run, the correlation
//! and the breakdown; plus the scheduler switch guard that restores the
//! device's original scheduler.

use std::os::fd::RawFd;
use std::path::PathBuf;

use anyhow::{Context, Result};
use serde::Serialize;

use super::correlate::{block_timelines, BlockStats, Joiner, Timeline};
use super::driver::{self, DriverJob, DriverResult};
use super::extents::ExtentMap;
use super::session::{traced, Capture, TraceSpec};
use super::stages::{breakdown, Breakdown};
use super::tracefs::{Capabilities, LostEvents};

/// The measured result of one configuration.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigResult {
    pub label: String,
    pub engine: String,
    pub qd: u32,
    pub scheduler: String,
    pub traced_iops: f64,
    pub traced_mean_ns: f64,
    pub untraced_iops: Option<f64>,
    pub untraced_mean_ns: Option<f64>,
    /// traced mean latency / untraced mean latency - 1.
    pub overhead: Option<f64>,
    pub breakdown: Option<Breakdown>,
    pub block: Option<BlockStats>,
    pub lost: Option<LostEvents>,
    pub missed_in_pages: u64,
    pub events: usize,
    pub pages: usize,
    pub unmatched_requests: u64,
    /// Mean Q2C and D2C over every completed bio of the capture (all I/O on
    /// the device, not only the job's): what btt computes from the same events.
    pub capture_q2c_mean_ns: Option<f64>,
    pub capture_d2c_mean_ns: Option<f64>,
    pub interrupted: bool,
}

/// Everything shared by the configurations of one invocation.
pub struct Setup {
    pub caps: Capabilities,
    pub fd: RawFd,
    pub size: u64,
    pub extents: ExtentMap,
    pub kdev: u32,
    pub irqs: Vec<u32>,
    pub buffer_kb: u32,
}

/// Run one configuration; returns the result and (when traced) the capture.
pub fn run_config(
    setup: &Setup,
    job: &DriverJob,
    scheduler: &str,
    overhead: bool,
) -> Result<(ConfigResult, Option<Capture>, Vec<Timeline>)> {
    let engine = if job.sqpoll {
        "io_uring+sqpoll".to_string()
    } else {
        job.engine.name().to_string()
    };
    let label = format!("{engine} qd{} {scheduler}", job.depth);
    let untraced = if overhead {
        Some(driver::run(job, setup.fd, setup.size, &setup.extents)?)
    } else {
        None
    };
    let mut res = ConfigResult {
        label,
        engine,
        qd: job.depth,
        scheduler: scheduler.to_string(),
        traced_iops: 0.0,
        traced_mean_ns: 0.0,
        untraced_iops: untraced.as_ref().map(DriverResult::iops),
        untraced_mean_ns: untraced.as_ref().map(DriverResult::mean_latency_ns),
        overhead: None,
        breakdown: None,
        block: None,
        lost: None,
        missed_in_pages: 0,
        events: 0,
        pages: 0,
        unmatched_requests: 0,
        capture_q2c_mean_ns: None,
        capture_d2c_mean_ns: None,
        interrupted: untraced.as_ref().is_some_and(|u| u.interrupted),
    };
    if setup.caps.why_not.is_some() || res.interrupted {
        if untraced.is_none() {
            let u = driver::run(job, setup.fd, setup.size, &setup.extents)?;
            res.untraced_iops = Some(u.iops());
            res.untraced_mean_ns = Some(u.mean_latency_ns());
            res.interrupted = u.interrupted;
        }
        return Ok((res, None, Vec::new()));
    }
    let spec = TraceSpec {
        kdev: setup.kdev,
        irqs: setup.irqs.clone(),
        tids: vec![driver::gettid()],
        uring: job.engine == crate::engine::EngineKind::IoUring,
        buffer_kb: setup.buffer_kb,
    };
    let (run, cap) = traced(&setup.caps, &spec, || {
        driver::run(job, setup.fd, setup.size, &setup.extents)
    })?;
    res.interrupted |= run.interrupted;
    res.traced_iops = run.iops();
    res.traced_mean_ns = run.mean_latency_ns();
    if let Some(u) = res.untraced_mean_ns {
        if u > 0.0 {
            res.overhead = Some(res.traced_mean_ns / u - 1.0);
        }
    }
    let (bios, bstats) = block_timelines(&cap.events);
    let mean = |v: Vec<u64>| {
        (!v.is_empty()).then(|| v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64)
    };
    // Like btt: one Q2C per request that a bio started (merged bios and split
    // tails ride on another bio's request).
    let own = || bios.iter().filter(|b| b.m.is_none() && b.g.is_some());
    res.capture_q2c_mean_ns = mean(
        own()
            .filter_map(|b| b.c.map(|c| c.saturating_sub(b.q)))
            .collect(),
    );
    res.capture_d2c_mean_ns = mean(
        own()
            .filter_map(|b| Some(b.c?.saturating_sub(b.d?)))
            .collect(),
    );
    let joiner = Joiner::new(&cap.events, bios, setup.kdev);
    let timelines: Vec<Timeline> = run.stamps.iter().map(|s| joiner.join(s)).collect();
    let with_block: Vec<Timeline> = timelines
        .iter()
        .filter(|t| t.q.is_some() && t.c.is_some())
        .copied()
        .collect();
    res.unmatched_requests = (timelines.len() - with_block.len()) as u64;
    res.breakdown = Some(breakdown(&with_block));
    res.block = Some(bstats);
    res.lost = Some(cap.lost);
    res.missed_in_pages = cap.missed_in_pages;
    res.events = cap.events.len();
    res.pages = cap.pages;
    Ok((res, Some(cap), with_block))
}

/// Switches a disk's I/O scheduler and puts the original back on drop.
pub struct SchedulerGuard {
    path: PathBuf,
    original: String,
}

impl SchedulerGuard {
    pub fn available(disk: &str) -> Result<(Vec<String>, String)> {
        let p = format!("/sys/block/{disk}/queue/scheduler");
        let text = std::fs::read_to_string(&p).with_context(|| format!("reading {p}"))?;
        let mut cur = String::new();
        let names = text
            .split_whitespace()
            .map(|w| {
                if w.starts_with('[') {
                    cur = w.trim_matches(|c| c == '[' || c == ']').to_string();
                    cur.clone()
                } else {
                    w.to_string()
                }
            })
            .collect();
        Ok((names, cur))
    }

    pub fn switch(disk: &str, to: &str) -> Result<SchedulerGuard> {
        let (_, original) = Self::available(disk)?;
        let path = PathBuf::from(format!("/sys/block/{disk}/queue/scheduler"));
        std::fs::write(&path, to).with_context(|| format!("setting scheduler {to} on {disk}"))?;
        Ok(SchedulerGuard { path, original })
    }
}

impl Drop for SchedulerGuard {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.path, &self.original);
    }
}
