//! `iolab device`'s settings -> experiments: sweep axes, the base job,
//! the experiment modes (plain, rates, latency target, steady state),
//! from `DeviceSettings` (the flags, with a plan file's settings already
//! applied onto them by commands/device_flags.rs); the `--dry-run` listing
//! is `report::device_plan`.

use std::path::PathBuf;

use crate::error::usage;
use crate::measure::tsc::ClockChoice;
use crate::plan::engines::FakeScript;
use crate::plan::engines::{EngineKind, NetOptions, UringOptions};
use crate::plan::experiment::{Experiment, Mode};
use crate::plan::job::{Arrival, JobSpec, RegionMode, StopCondition, ThinkTime};
use crate::plan::parse::parse_cpu_list;
use crate::plan::profile;
use crate::plan::steady::{Criterion, SteadyMetric, SteadyOptions};
use crate::plan::sweep::{self, Axes, SweepKind};
use crate::plan::units::{BsAxis, Count, Rates, Size, Span, Spans};

/// What `iolab device`'s flags (and a plan experiment's settings) say, as
/// given: `cli::device::DeviceArgs` without its flag groups (media,
/// hosts), copied by commands/device_flags.rs.
#[derive(Debug, Clone)]
pub struct DeviceSettings {
    pub target: Vec<PathBuf>,
    pub size: Option<Size>,
    pub overwrite: bool,
    pub destroy_data: Vec<PathBuf>,
    pub keep: bool,
    pub rw: String,
    pub mix: String,
    pub bs: BsAxis,
    pub qd: String,
    pub jobs: String,
    pub region: String,
    pub batch: Option<String>,
    pub fsync_every: u32,
    pub submit_batch: u32,
    pub thinktime: Option<Span>,
    pub thinktime_blocks: u32,
    pub seed: u64,
    pub profile: Option<String>,
    pub act_scale: Option<f64>,
    pub name: Option<String>,
    pub engine: String,
    pub direct: bool,
    pub buffered: bool,
    pub uring_fixed_buffers: bool,
    pub uring_fixed_files: bool,
    pub uring_sqpoll: bool,
    pub uring_iopoll: bool,
    pub poll: bool,
    pub cpus: Option<String>,
    pub numa_node: Option<u32>,
    pub mem_node: Option<u32>,
    pub sweep: Option<SweepKind>,
    pub io_timeout: Option<Span>,
    pub runtime: Option<Span>,
    pub io_count: Option<Count>,
    pub io_bytes: Option<Size>,
    pub budget: Option<Span>,
    pub ramp: Option<Span>,
    pub rate: Option<Rates>,
    pub arrival: String,
    pub knee_factor: f64,
    pub latency_target: Option<Span>,
    pub percentile: f64,
    pub steady_state: Option<String>,
    pub steady_criterion: String,
    pub steady_limit: f64,
    pub steady_window: usize,
    pub max_rounds: usize,
    pub precondition: Option<String>,
    pub purge: bool,
    pub verify: bool,
    pub continue_on_error: bool,
    pub log_dir: Option<PathBuf>,
    pub fake_latency: Option<Spans>,
    pub fake_servers: u32,
    pub plan: Option<PathBuf>,
    pub fio_job: Option<PathBuf>,
    pub clock: ClockChoice,
    pub json: Option<PathBuf>,
    pub force: bool,
    pub quiet: bool,
    pub status_interval: Option<f64>,
    pub dry_run: bool,
    pub export: Option<Vec<String>>,
    pub breakdown: bool,
    pub breakdown_buffer_kb: u32,
    pub given: Vec<String>,
}

/// The sweep axes the flags describe (lists and ranges).
pub fn axes_from_args(a: &DeviceSettings) -> anyhow::Result<Axes> {
    let allow_fake = a.fake_latency.is_some();
    Ok(Axes {
        bs: a.bs.splits().to_vec(),
        qd: sweep::parse_u32_axis("--qd", &a.qd, 1, 65_536)?,
        batch: match &a.batch {
            Some(b) => sweep::parse_u32_axis("--batch", b, 1, 65_536)?
                .into_iter()
                .map(Some)
                .collect(),
            None => vec![None],
        },
        jobs: sweep::parse_u32_axis("--jobs", &a.jobs, 1, 1024)?,
        mix: sweep::parse_u32_axis("--mix", &a.mix, 0, 100)?
            .into_iter()
            .map(|m| m as u8)
            .collect(),
        rw: sweep::parse_rw_axis("--rw", &a.rw)?,
        engine: match remote_engine(a) {
            Some(k) if !a.given.iter().any(|g| g == "engine") => vec![k],
            _ => sweep::parse_engine_axis("--engine", &a.engine, allow_fake)?,
        },
    })
}

/// The engine that speaks a remote target's transport (`nbd://` -> nbd):
/// the default engine for it.
fn remote_engine(a: &DeviceSettings) -> Option<EngineKind> {
    let ep = crate::plan::endpoint::endpoint_of(a.target.first()?).ok()??;
    crate::plan::engines::engine_for_transport(ep.transport)
}

/// The job the flags describe, with the first value of every sweep axis
/// (before a sweep or profile expands it).
pub fn base_spec(a: &DeviceSettings) -> anyhow::Result<JobSpec> {
    let axes = axes_from_args(a)?;
    let engine = axes.engine[0];
    let runtime = a.runtime.as_ref().map(Span::ns);
    let io_count = a.io_count.as_ref().map(Count::get);
    let io_bytes = a.io_bytes.as_ref().map(Size::bytes);
    let default_runtime = if io_count.is_none() && io_bytes.is_none() {
        Some(10_000_000_000)
    } else {
        None
    };
    let region = match a.region.as_str() {
        "shared" => RegionMode::Shared,
        "split" => RegionMode::Split,
        other => {
            return Err(usage(
                "--region",
                format!("'{other}' is not shared or split"),
            ))
        }
    };
    let fake = a
        .fake_latency
        .as_ref()
        .map(|l| -> anyhow::Result<FakeScript> {
            let lat = l.ns().to_vec();
            if lat.contains(&0) {
                return Err(usage("--fake-latency", "service times must be > 0"));
            }
            Ok(FakeScript {
                latencies_ns: lat,
                servers: a.fake_servers.max(1),
                submit_ns: 0,
            })
        })
        .transpose()?;
    let spec = JobSpec {
        name: a.name.clone().unwrap_or_default(),
        pattern: axes.rw[0],
        mix: axes.mix[0],
        bs: axes.bs[0].clone(),
        qd: axes.qd[0],
        jobs: axes.jobs[0],
        region,
        cpus: a
            .cpus
            .as_deref()
            .map(|c| parse_cpu_list("--cpus", c))
            .transpose()?,
        engine,
        uring: UringOptions {
            fixed_buffers: a.uring_fixed_buffers,
            fixed_files: a.uring_fixed_files,
            sqpoll: a.uring_sqpoll,
            iopoll: a.uring_iopoll,
        },
        net: NetOptions { poll: a.poll },
        direct: !a.buffered && engine.caps().direct_io,
        stop: StopCondition {
            runtime_ns: runtime.or(default_runtime),
            io_count,
            io_bytes,
        },
        ramp_ns: a.ramp.as_ref().map_or(0, Span::ns),
        seed: a.seed,
        fsync_every: a.fsync_every,
        submit_batch: a.submit_batch,
        batch: axes.batch[0],
        verify: a.verify,
        size: None,
        offset: 0,
        fake,
        open_loop: None,
        think: think_time(a)?,
        hist_log: a.log_dir.is_some(),
        io_timeout_ns: io_timeout(a.io_timeout.as_ref())?,
        continue_on_error: a.continue_on_error,
        large_blocks: None,
        numa_node: a.numa_node,
        mem_node: a.mem_node,
        placement: None,
    };
    if axes.engine.iter().any(|e| !e.caps().direct_io) && a.direct {
        return Err(usage("--direct", "mmap always goes through the page cache"));
    }
    if a.poll {
        if let Some(e) = axes.engine.iter().find(|e| !e.caps().net_options) {
            return Err(usage(
                "--poll",
                format!(
                    "busy-polling is an option of the nbd and nvme-tcp engines (an nbd:// or \
                     nvme-tcp:// target), not of {}",
                    e.name()
                ),
            ));
        }
    }
    if a.uring_fixed_buffers || a.uring_fixed_files || a.uring_sqpoll || a.uring_iopoll {
        if axes.engine.iter().any(|e| !e.caps().uring_options) {
            return Err(usage(
                "--uring-*",
                format!(
                    "io_uring options need --engine io_uring (not {})",
                    engine.name()
                ),
            ));
        }
        if a.uring_iopoll && !spec.direct {
            return Err(usage(
                "--uring-iopoll",
                "completion polling needs O_DIRECT (drop --buffered)",
            ));
        }
    }
    Ok(spec)
}

/// One experiment from the settings.
pub fn experiment_from_settings(a: &DeviceSettings, name: &str) -> anyhow::Result<Experiment> {
    let base = base_spec(a)?;
    let budget = a.budget.as_ref().map(Span::ns);
    if budget.is_some() && a.runtime.is_some() {
        return Err(usage(
            "--budget",
            "give --runtime (per point) or --budget (shared), not both",
        ));
    }
    if a.act_scale.is_some() && a.profile.as_deref() != Some("act") {
        return Err(usage("--act-scale", "applies to --profile act"));
    }
    let mut jobs = match &a.profile {
        Some(p) => {
            let axes = axes_from_args(a)?;
            if axes.len() > 1 {
                return Err(usage(
                    "--profile",
                    "a profile sets its own sweep; give single values with it",
                ));
            }
            match p.as_str() {
                "act" => vec![crate::plan::act::job(
                    &base,
                    crate::plan::act::scale(a.act_scale)?,
                )],
                _ => profile::expand(p, &base, budget)?,
            }
        }
        None => sweep::expand(&base, &axes_from_args(a)?)?,
    };
    if a.sweep == Some(SweepKind::Placement) {
        let root = std::path::Path::new("/");
        let target = a
            .target
            .first()
            .cloned()
            .unwrap_or_else(|| PathBuf::from("."));
        jobs = sweep::placement(jobs, sweep::device_node(&target, root), root)?;
    }
    for j in &mut jobs {
        if j.name.is_empty() {
            j.name = j.default_name();
        }
        j.validate()?;
    }
    let arrival = Arrival::parse(&a.arrival).ok_or_else(|| {
        usage(
            "--arrival",
            format!("'{}' is not uniform or poisson", a.arrival),
        )
    })?;
    let rates = a.rate.as_ref().map(|r| r.axis().clone());
    if rates.is_some() {
        for j in &jobs {
            crate::plan::job::with_rate(j, 1000.0, arrival).validate()?;
        }
    }
    if !(a.knee_factor > 1.0 && a.knee_factor.is_finite()) {
        return Err(usage("--knee-factor", "the factor must be greater than 1"));
    }
    let mode = if let Some(t) = &a.latency_target {
        let target_ns = t.ns();
        if !(a.percentile > 0.0 && a.percentile <= 100.0) {
            return Err(usage("--percentile", "give a percentile in (0, 100]"));
        }
        if target_ns == 0 {
            return Err(usage("--latency-target", "the target must be > 0"));
        }
        if rates.is_none() && jobs.iter().any(|j| j.engine.is_sync() || j.batch.is_some()) {
            return Err(usage(
                "--latency-target",
                "searching the QD needs an async engine without --batch (or add --rate to search the rate)",
            ));
        }
        Mode::LatencyTarget {
            target_ns,
            percentile: a.percentile,
            open_loop: rates.as_ref().map(|_| arrival),
        }
    } else if let Some(rates) = rates {
        Mode::Rates { rates, arrival }
    } else if let Some(m) = &a.steady_state {
        let criterion = Criterion::parse(&a.steady_criterion, a.steady_limit)?;
        if a.steady_window < 2 || a.max_rounds < a.steady_window || a.max_rounds > 1000 {
            return Err(usage(
                "--steady-window",
                "the window needs >= 2 rounds and --max-rounds >= the window (<= 1000)",
            ));
        }
        Mode::Steady(SteadyOptions {
            metric: SteadyMetric::parse(m)?,
            criterion,
            window: a.steady_window,
            max_rounds: a.max_rounds,
        })
    } else {
        Mode::Plain
    };
    if a.steady_state.is_some() && !matches!(mode, Mode::Steady(_)) {
        return Err(usage(
            "--steady-state",
            "steady-state rounds cannot be combined with --rate or --latency-target",
        ));
    }
    let precondition = a
        .precondition
        .as_deref()
        .map(|n| {
            n.parse::<f64>()
                .ok()
                .filter(|v| *v > 0.0 && *v <= 100.0)
                .ok_or_else(|| {
                    usage(
                        "--precondition",
                        format!("'{n}' is not a multiple in (0, 100]"),
                    )
                })
        })
        .transpose()?;
    let mut exp = Experiment {
        name: name.to_string(),
        jobs,
        mode,
        precondition,
        purge: a.purge,
        knee_factor: a.knee_factor,
    };
    if let Some(b) = budget {
        if a.profile
            .as_deref()
            .is_none_or(|p| !p.starts_with("batched"))
        {
            // Rates, searches and rounds run each job several times: share
            // the budget among the estimated number of points.
            let runs_per_job = (exp.estimate().0 / exp.jobs.len().max(1)).max(1) as u64;
            sweep::apply_budget(&mut exp.jobs, b / runs_per_job, 100_000_000)?;
        }
    }
    Ok(exp)
}

/// `--thinktime` and `--thinktime-blocks`.
fn think_time(a: &DeviceSettings) -> anyhow::Result<Option<ThinkTime>> {
    let Some(ns) = a.thinktime.as_ref().map(Span::ns) else {
        return Ok(None);
    };
    if a.thinktime_blocks == 0 {
        return Err(usage("--thinktime-blocks", "give 1 or more"));
    }
    if a.rate.is_some() {
        return Err(usage(
            "--thinktime",
            "an open loop (--rate) already decides when requests start; use one or the other",
        ));
    }
    Ok((ns > 0).then_some(ThinkTime {
        ns,
        spin_ns: 0,
        blocks: a.thinktime_blocks,
    }))
}

/// `--io-timeout` (of `device` and `remote`): a positive duration.
pub fn io_timeout(v: Option<&Span>) -> anyhow::Result<Option<u64>> {
    let Some(t) = v else {
        return Ok(None);
    };
    match t.ns() {
        0 => Err(usage(
            "--io-timeout",
            "give a duration above zero, e.g. 30s",
        )),
        ns => Ok(Some(ns)),
    }
}
