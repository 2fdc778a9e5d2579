//! One configuration of `iolab trace` (engine, queue depth, I/O scheduler),
//! run by the core runner with its per-request log: an untraced run for the tracing overhead, a traced run, the correlation
//! and the breakdown; plus the scheduler switch guard that restores the
//! device's original scheduler.

use anyhow::Result;

use super::correlate::{block_timelines, Joiner, RequestTimeline, UserStamp};
use super::extents::ExtentMap;
use super::session::{traced, Capture, TraceSpec};
use super::stages::breakdown;
use super::tracefs::Capabilities;
use crate::dut::Target;
use crate::engine::OpKind;
use crate::interrupt;
use crate::plan::job::JobSpec;
pub use crate::results::ext::trace::ConfigResult;
use crate::results::Point;
use crate::runner::job::{run_job, JobOutcome, RunOptions};

/// Everything shared by the configurations of one invocation.
pub struct Setup<'a> {
    pub caps: Capabilities,
    pub target: &'a Target,
    pub extents: ExtentMap,
    pub kdev: u32,
    pub irqs: Vec<u32>,
    pub buffer_kb: u32,
    pub syscalls: bool,
    /// Per-request log capacity per worker.
    pub max_records: usize,
    /// Untraced/traced pairs for the overhead (1 = one pair, untraced first).
    pub overhead_pairs: u32,
    /// Called about once a second while a job of a configuration runs.
    pub progress: Option<&'a crate::runner::job::OnJobProgress<'a>>,
}

/// User stamps of every logged request of a job, with device sectors.
fn stamps(out: &JobOutcome, extents: &ExtentMap) -> Vec<UserStamp> {
    out.request_logs
        .iter()
        .flat_map(|l| l.records.iter())
        .filter(|r| r.op != OpKind::Fsync)
        .map(|r| UserStamp {
            tid: r.tid,
            write: r.op == OpKind::Write,
            offset: r.offset,
            len: r.len,
            sector: extents.sector(r.offset),
            prepare: r.t_prep,
            submitted: r.t_submitted,
            done: r.t_reaped,
        })
        .collect()
}

fn mean_latency(st: &[UserStamp]) -> f64 {
    if st.is_empty() {
        return 0.0;
    }
    st.iter()
        .map(|s| s.done.saturating_sub(s.prepare) as f64)
        .sum::<f64>()
        / st.len() as f64
}

fn run(setup: &Setup, spec: &JobSpec) -> Result<JobOutcome> {
    let opts = RunOptions {
        clock: crate::measure::tsc::ClockChoice::Mono,
        record_requests: Some(setup.max_records),
        on_progress: setup.progress,
        peers: None,
        before_start: None,
    };
    run_job(spec, setup.target, &opts)
}

/// Run one configuration through the core runner: untraced (when `overhead`),
/// then traced. Returns the result, the traced point and the capture.
pub fn run_config(
    setup: &Setup,
    spec: &JobSpec,
    scheduler: &str,
    overhead: bool,
) -> Result<(ConfigResult, Point, Option<Capture>)> {
    let engine = if spec.uring.sqpoll {
        "io_uring+sqpoll".to_string()
    } else {
        spec.engine.name().to_string()
    };
    let label = format!("{engine} qd{} {scheduler}", spec.depth());
    let untraced = if overhead {
        Some(run(setup, spec)?)
    } else {
        None
    };
    let u_stamps = untraced.as_ref().map(|u| stamps(u, &setup.extents));
    let mut res = ConfigResult {
        label,
        engine,
        qd: spec.depth(),
        scheduler: scheduler.to_string(),
        traced_iops: 0.0,
        traced_mean_ns: 0.0,
        untraced_iops: untraced.as_ref().map(|u| u.point.total.iops),
        untraced_mean_ns: u_stamps.as_deref().map(mean_latency),
        overhead: None,
        overhead_pairs: Vec::new(),
        breakdown: None,
        block: None,
        lost: None,
        missed_in_pages: 0,
        events: 0,
        pages: 0,
        unmatched_requests: 0,
        capture_q2c_mean_ns: None,
        capture_d2c_mean_ns: None,
        interrupted: interrupt::stop_requested(),
    };
    if setup.caps.why_not.is_some() || res.interrupted {
        let out = match untraced {
            Some(u) => u,
            None => run(setup, spec)?,
        };
        let st = stamps(&out, &setup.extents);
        res.untraced_iops = Some(out.point.total.iops);
        res.untraced_mean_ns = Some(mean_latency(&st));
        res.interrupted = interrupt::stop_requested();
        return Ok((res, out.point, None));
    }
    let tspec = TraceSpec {
        kdev: setup.kdev,
        irqs: setup.irqs.clone(),
        tids: Vec::new(),
        uring: spec.engine.caps().uring_options,
        syscalls: setup.syscalls,
        buffer_kb: setup.buffer_kb,
    };
    let (out, cap) = traced(&setup.caps, &tspec, || run(setup, spec))?;
    res.interrupted |= interrupt::stop_requested();
    let st = stamps(&out, &setup.extents);
    res.traced_iops = out.point.total.iops;
    res.traced_mean_ns = mean_latency(&st);
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
    let timelines: Vec<RequestTimeline> = st.iter().map(|s| joiner.join(s)).collect();
    let with_block: Vec<RequestTimeline> = timelines
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
    if let Some(o) = res.overhead {
        res.overhead_pairs.push(o);
        for i in 1..setup.overhead_pairs {
            if interrupt::stop_requested() {
                break;
            }
            let traced_mean = |setup: &Setup| -> Result<f64> {
                let (o, _) = traced(&setup.caps, &tspec, || run(setup, spec))?;
                Ok(mean_latency(&stamps(&o, &setup.extents)))
            };
            let untraced_mean = |setup: &Setup| -> Result<f64> {
                Ok(mean_latency(&stamps(&run(setup, spec)?, &setup.extents)))
            };
            let (t, u) = if i % 2 == 1 {
                let t = traced_mean(setup)?;
                (t, untraced_mean(setup)?)
            } else {
                let u = untraced_mean(setup)?;
                (traced_mean(setup)?, u)
            };
            if u > 0.0 {
                res.overhead_pairs.push(t / u - 1.0);
            }
        }
        let mut v = res.overhead_pairs.clone();
        v.sort_by(f64::total_cmp);
        res.overhead = Some(if v.len() % 2 == 1 {
            v[v.len() / 2]
        } else {
            (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
        });
    }
    let mut cap = cap;
    cap.job_sectors = st.iter().filter_map(|s| s.sector).collect();
    Ok((res, out.point, Some(cap)))
}
