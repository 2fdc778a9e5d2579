//! `iolab device`: turn arguments (or a plan file) into validated
//! experiments, prepare the target safely, run every point — plain sweeps,
//! open-loop rates, latency-target searches, steady-state rounds — print
//! its table and keep the results file (with its analysis) current.
//! fio job files and fio JSON export are in `device_fio`, the per-point
//! stack breakdown (`--breakdown`) in `device_trace`.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Instant;

use serde_json::{json, Value};

use crate::analysis::search::TargetSearch;
use crate::analysis::steady::{self, Criterion, Metric};
use crate::analysis::{self, AnalysisOptions};
use crate::cli::device::DeviceArgs;
use crate::commands::device_fio;
use crate::commands::device_trace::{self, Tracer};
use crate::dut::{self, Target, TargetOptions};
use crate::engine::fake::FakeScript;
use crate::engine::{EngineKind, UringOptions};
use crate::error::{usage, Interrupted, UsageError, VerifyFailed};
use crate::interrupt;
use crate::plan::experiment::{Experiment, Mode};
use crate::plan::job::{Arrival, JobSpec, OpenLoop, RegionMode, StopCondition};
use crate::plan::parse::{format_ns, parse_cpu_list, parse_duration_ns, parse_size};
use crate::plan::sweep::{self, Axes, RateAxis};
use crate::plan::{planfile, profile};
use crate::report::terminal;
use crate::results::{Point, Provenance, Results};
use crate::runner::job::{run_job, JobOutcome, RunOptions};
use crate::runner::steady::{self as steady_run, SteadyOptions};

/// Parse a count with optional k/m/g suffix (powers of 1000 would surprise
/// fio users less than 1024 here? fio uses 1024 for sizes; counts use 1000).
fn parse_count(field: &str, s: &str) -> anyhow::Result<u64> {
    let t = s.trim().to_ascii_lowercase();
    let (num, mult) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1_000),
        Some('m') => (&t[..t.len() - 1], 1_000_000),
        Some('g') => (&t[..t.len() - 1], 1_000_000_000),
        _ => (t.as_str(), 1),
    };
    let n: u64 = num.parse().map_err(|_| {
        usage(
            field,
            format!("'{s}' is not a count (examples: 1000, 10k, 2m)"),
        )
    })?;
    n.checked_mul(mult)
        .ok_or_else(|| usage(field, format!("'{s}' is too large")))
}

/// The sweep axes the flags describe (lists and ranges).
pub fn axes_from_args(a: &DeviceArgs) -> anyhow::Result<Axes> {
    let allow_fake = a.fake_latency.is_some();
    Ok(Axes {
        bs: sweep::parse_bs_axis("--bs", &a.bs)?,
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
        engine: sweep::parse_engine_axis("--engine", &a.engine, allow_fake)?,
    })
}

/// The job the flags describe, with the first value of every sweep axis
/// (before a sweep or profile expands it).
pub fn base_spec(a: &DeviceArgs) -> anyhow::Result<JobSpec> {
    let axes = axes_from_args(a)?;
    let engine = axes.engine[0];
    let runtime = a
        .runtime
        .as_deref()
        .map(|r| parse_duration_ns("--runtime", r))
        .transpose()?;
    let io_count = a
        .io_count
        .as_deref()
        .map(|c| parse_count("--io-count", c))
        .transpose()?;
    let io_bytes = a
        .io_bytes
        .as_deref()
        .map(|b| parse_size("--io-bytes", b))
        .transpose()?;
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
        .as_deref()
        .map(|l| -> anyhow::Result<FakeScript> {
            let lat = l
                .split(',')
                .map(|x| parse_duration_ns("--fake-latency", x))
                .collect::<anyhow::Result<Vec<_>>>()?;
            if lat.contains(&0) {
                return Err(usage("--fake-latency", "service times must be > 0"));
            }
            Ok(FakeScript {
                latencies_ns: lat,
                servers: a.fake_servers.max(1),
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
        direct: !a.buffered && engine != EngineKind::Mmap,
        stop: StopCondition {
            runtime_ns: runtime.or(default_runtime),
            io_count,
            io_bytes,
        },
        ramp_ns: a
            .ramp
            .as_deref()
            .map(|r| parse_duration_ns("--ramp", r))
            .transpose()?
            .unwrap_or(0),
        seed: a.seed,
        fsync_every: a.fsync_every,
        submit_batch: a.submit_batch,
        batch: axes.batch[0],
        verify: a.verify,
        size: None,
        fake,
        open_loop: None,
    };
    if axes.engine.contains(&EngineKind::Mmap) && a.direct {
        return Err(usage("--direct", "mmap always goes through the page cache"));
    }
    if a.uring_fixed_buffers || a.uring_fixed_files || a.uring_sqpoll || a.uring_iopoll {
        if axes.engine.iter().any(|e| *e != EngineKind::IoUring) {
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

/// Set the flags a plan-file experiment names (keys are flag names).
pub fn apply_settings(
    a: &mut DeviceArgs,
    settings: &std::collections::BTreeMap<String, String>,
) -> anyhow::Result<()> {
    let flag = |k: &str| format!("--{}", k.replace('_', "-"));
    let boolean = |k: &str, v: &str| -> anyhow::Result<bool> {
        v.parse()
            .map_err(|_| usage(flag(k), format!("'{v}' is not true or false")))
    };
    for (k, v) in settings {
        let v = v.clone();
        let num = |v: &str| -> anyhow::Result<u32> {
            v.parse()
                .map_err(|_| usage(flag(k), format!("'{v}' is not a whole number")))
        };
        let real = |v: &str| -> anyhow::Result<f64> {
            v.parse()
                .map_err(|_| usage(flag(k), format!("'{v}' is not a number")))
        };
        match k.as_str() {
            "description" => {}
            "name" => a.name = Some(v),
            "profile" => a.profile = Some(v),
            "rw" => a.rw = v,
            "mix" => a.mix = v,
            "bs" => a.bs = v,
            "qd" => a.qd = v,
            "jobs" => a.jobs = v,
            "batch" => a.batch = Some(v),
            "region" => a.region = v,
            "engine" => a.engine = v,
            "buffered" => a.buffered = boolean(k, &v)?,
            "direct" => a.direct = boolean(k, &v)?,
            "fsync_every" => a.fsync_every = num(&v)?,
            "seed" => {
                a.seed = v
                    .parse()
                    .map_err(|_| usage("--seed", format!("'{v}' is not a seed")))?
            }
            "cpus" => a.cpus = Some(v),
            "uring_fixed_buffers" => a.uring_fixed_buffers = boolean(k, &v)?,
            "uring_fixed_files" => a.uring_fixed_files = boolean(k, &v)?,
            "uring_sqpoll" => a.uring_sqpoll = boolean(k, &v)?,
            "uring_iopoll" => a.uring_iopoll = boolean(k, &v)?,
            "runtime" => a.runtime = Some(v),
            "budget" => a.budget = Some(v),
            "ramp" => a.ramp = Some(v),
            "io_count" => a.io_count = Some(v),
            "io_bytes" => a.io_bytes = Some(v),
            "verify" => a.verify = boolean(k, &v)?,
            "rate" => a.rate = Some(v),
            "arrival" => a.arrival = v,
            "knee_factor" => a.knee_factor = real(&v)?,
            "latency_target" => a.latency_target = Some(v),
            "percentile" => a.percentile = real(&v)?,
            "steady_state" => {
                a.steady_state = match v.as_str() {
                    "false" => None,
                    "true" => Some("iops".into()),
                    _ => Some(v),
                }
            }
            "steady_criterion" => a.steady_criterion = v,
            "steady_limit" => a.steady_limit = real(&v)?,
            "steady_window" => a.steady_window = num(&v)? as usize,
            "max_rounds" => a.max_rounds = num(&v)? as usize,
            "precondition" => {
                a.precondition = match v.as_str() {
                    "false" | "0" => None,
                    "true" => Some("2".into()),
                    _ => Some(v),
                }
            }
            "purge" => a.purge = boolean(k, &v)?,
            "fake_latency" => a.fake_latency = Some(v),
            "fake_servers" => a.fake_servers = num(&v)?,
            other => return Err(usage(flag(other), "not settable in a plan file")),
        }
    }
    Ok(())
}

/// One experiment from the flags.
pub fn experiment_from_args(a: &DeviceArgs, name: &str) -> anyhow::Result<Experiment> {
    let base = base_spec(a)?;
    let budget = a
        .budget
        .as_deref()
        .map(|b| parse_duration_ns("--budget", b))
        .transpose()?;
    if budget.is_some() && a.runtime.is_some() {
        return Err(usage(
            "--budget",
            "give --runtime (per point) or --budget (shared), not both",
        ));
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
            profile::expand(p, &base, budget)?
        }
        None => sweep::expand(&base, &axes_from_args(a)?)?,
    };
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
    let rates = a
        .rate
        .as_deref()
        .map(|r| sweep::parse_rate_axis("--rate", r))
        .transpose()?;
    if rates.is_some() {
        for j in &jobs {
            Session::with_rate(j, 1000.0, arrival).validate()?;
        }
    }
    if !(a.knee_factor > 1.0 && a.knee_factor.is_finite()) {
        return Err(usage("--knee-factor", "the factor must be greater than 1"));
    }
    let mode = if let Some(t) = &a.latency_target {
        let target_ns = parse_duration_ns("--latency-target", t)?;
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
            metric: Metric::parse(m)?,
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

/// Every experiment to run: the plan file's, or the one the flags describe.
pub fn experiments_from_args(a: &DeviceArgs) -> anyhow::Result<Vec<Experiment>> {
    if let Some(f) = &a.fio_job {
        return Ok(vec![device_fio::experiment(a, f)?]);
    }
    let Some(path) = &a.plan else {
        return Ok(vec![experiment_from_args(a, "")?]);
    };
    let plan = planfile::read(path)?;
    plan.experiments
        .iter()
        .map(|e| {
            let mut args = a.clone();
            args.plan = None;
            apply_settings(&mut args, &e.settings)?;
            experiment_from_args(&args, &e.name).map_err(|err| match err.downcast::<UsageError>() {
                Ok(u) => usage(
                    format!("{} [{}] {}", path.display(), e.name, u.field),
                    u.message,
                ),
                Err(other) => other,
            })
        })
        .collect()
}

/// Every job of every experiment, validated (no rates or rounds applied).
pub fn specs_from_args(a: &DeviceArgs) -> anyhow::Result<Vec<JobSpec>> {
    Ok(experiments_from_args(a)?
        .into_iter()
        .flat_map(|e| e.jobs)
        .collect())
}

fn mode_text(m: &Mode) -> String {
    match m {
        Mode::Plain => String::new(),
        Mode::Rates { rates, arrival } => match rates {
            RateAxis::Iops(v) => format!(
                "open loop ({}) at {} IOPS",
                arrival.name(),
                v.iter()
                    .map(|r| format!("{r:.0}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            RateAxis::PercentOfMax(v) => format!(
                "closed-loop maximum, then open loop ({}) at {}% of it",
                arrival.name(),
                v.iter()
                    .map(|r| format!("{r:.0}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
        Mode::LatencyTarget {
            target_ns,
            percentile,
            open_loop,
        } => format!(
            "largest {} with p{percentile} <= {} (doubling, then bisection)",
            if open_loop.is_some() { "rate" } else { "QD" },
            format_ns(*target_ns as f64)
        ),
        Mode::Steady(s) => format!(
            "rounds until steady on {:?} ({:?}, window {}, at most {} rounds)",
            s.metric, s.criterion, s.window, s.max_rounds
        ),
    }
}

fn dry_run(exps: &[Experiment], a: &DeviceArgs) {
    let (mut points, mut total) = (0usize, 0.0);
    println!(
        "plan on {}:",
        a.target
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| ".".into())
    );
    for e in exps {
        let (n, secs) = e.estimate();
        points += n;
        total += secs;
        let title = if e.name.is_empty() {
            "experiment".to_string()
        } else {
            e.name.clone()
        };
        println!(
            "{title}: {} job(s), ~{n} point(s), ~{secs:.0} s",
            e.jobs.len()
        );
        if e.purge {
            println!("  purge the target");
        }
        if let Some(p) = e.precondition {
            println!("  precondition: {p}x capacity of 128k sequential writes");
        }
        let m = mode_text(&e.mode);
        if !m.is_empty() {
            println!("  {m}");
        }
        for j in &e.jobs {
            let secs = j.stop.runtime_ns.map(|r| (r + j.ramp_ns) as f64 / 1e9);
            println!(
                "  {:<40} rw={} bs={} qd={} jobs={} engine={} direct={} {}{}{}",
                j.name,
                j.pattern.name(),
                j.bs_label(),
                j.depth(),
                j.jobs,
                j.engine.name(),
                j.direct,
                secs.map(|s| format!("runtime={s:.1}s"))
                    .unwrap_or_else(|| "until io limit".into()),
                j.open_loop
                    .map(|o| format!(" rate={:.0} ({})", o.rate_iops, o.arrival.name()))
                    .unwrap_or_default(),
                if j.verify { " verify" } else { "" }
            );
        }
    }
    println!("{points} point(s); estimated duration: {total:.0} s (plus scratch file layout and preconditioning)");
}

/// Run state shared by every point: the results file, progress and counters.
struct Session<'a> {
    target: &'a Target,
    results: Results,
    json_path: Option<PathBuf>,
    /// `--export fio-json FILE`: rewritten with the results file.
    fio_export: Option<PathBuf>,
    /// `--breakdown`: the stack tracer.
    tracer: Option<Tracer<'a>>,
    quiet: bool,
    show_progress: bool,
    knee_factor: f64,
    planned_points: usize,
    planned_secs: f64,
    done_points: usize,
    started: Instant,
    failures: usize,
    /// The first "cannot run" error: returned when no point ran at all.
    first_skip: Option<anyhow::Error>,
}

/// What a point run returned.
enum Ran {
    Done(Box<Point>),
    Skipped,
}

impl Session<'_> {
    fn save(&mut self) -> anyhow::Result<()> {
        self.results.analysis = analysis::analyze(
            &self.results.points,
            &AnalysisOptions {
                knee_factor: self.knee_factor,
            },
        );
        if let Some(p) = &self.json_path {
            self.results.write_atomic(p)?;
        }
        if let Some(p) = &self.fio_export {
            device_fio::write_export(p, &self.results)?;
        }
        Ok(())
    }

    fn skip(
        &mut self,
        job: &JobSpec,
        exp: &str,
        reason: String,
        failed: bool,
    ) -> anyhow::Result<()> {
        let what = if failed { "failed" } else { "skipped" };
        if !self.quiet {
            eprintln!("iolab: {what} {}: {reason}", job.name);
        }
        self.results
            .warnings
            .push(format!("point {} {what}: {reason}", job.name));
        let list = self
            .results
            .extra
            .entry("skipped_points".into())
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(v) = list {
            v.push(json!({"name": job.name, "experiment": exp, "reason": reason, "failed": failed, "job": job}));
        }
        if failed {
            self.failures += 1;
        }
        self.save()
    }

    /// Run one point; errors that mean "this point cannot run" skip it.
    fn run_point(
        &mut self,
        job: &JobSpec,
        exp: &str,
        extra: &[(&str, Value)],
    ) -> anyhow::Result<Ran> {
        if interrupt::stop_requested() {
            return Ok(Ran::Skipped);
        }
        self.done_points += 1;
        let label = format!(
            "[{}/{}] {}",
            self.done_points,
            self.planned_points.max(self.done_points),
            job.name
        );
        let started = self.started;
        let planned = self.planned_secs;
        let progress = move |elapsed: f64, total: Option<f64>| {
            let eta = (planned - started.elapsed().as_secs_f64()).max(0.0);
            eprint!(
                "\r\x1b[2K{label}: {elapsed:.0}s{} | sweep ETA {eta:.0}s",
                total.map(|t| format!("/{t:.0}s")).unwrap_or_default()
            );
            let _ = std::io::stderr().flush();
        };
        let opts = RunOptions {
            record_requests: None,
            on_progress: if self.show_progress {
                Some(&progress)
            } else {
                None
            },
        };
        let mut traced = None;
        let mut untraced_why = None;
        let outcome = match &mut self.tracer {
            Some(t) => match t.why_not_for(job) {
                None => t.run(job).map(|(point, res)| {
                    traced = Some(res);
                    JobOutcome {
                        point,
                        request_logs: Vec::new(),
                        features: Vec::new(),
                    }
                }),
                Some(why) => {
                    untraced_why = Some(why);
                    run_job(job, self.target, &opts)
                }
            },
            None => run_job(job, self.target, &opts),
        };
        if self.show_progress {
            eprint!("\r\x1b[2K");
        }
        let mut outcome = match outcome {
            Ok(o) => o,
            Err(e) => {
                let cannot_run = crate::error::point_cannot_run(&e);
                self.skip(job, exp, format!("{e:#}"), !cannot_run)?;
                if self.first_skip.is_none() {
                    self.first_skip = Some(e);
                }
                return Ok(Ran::Skipped);
            }
        };
        let p = &mut outcome.point;
        if interrupt::stop_requested() {
            p.warnings
                .push("interrupted before the end of the job: this point is partial".into());
            p.extra.insert("interrupted".into(), Value::Bool(true));
        }
        if !exp.is_empty() {
            p.params.insert("experiment".into(), exp.to_string());
        }
        for (k, v) in extra {
            p.extra.insert((*k).to_string(), v.clone());
        }
        if let Some(res) = &traced {
            p.warnings.extend(device_trace::warnings(res));
            p.extra.insert("trace".into(), serde_json::to_value(res)?);
        }
        // A machine-wide reason is said once, in the results' warnings.
        if let Some(why) =
            untraced_why.filter(|_| self.tracer.as_ref().is_some_and(|t| t.why_not.is_none()))
        {
            if !self.quiet {
                eprintln!("iolab: --breakdown: {} runs untraced: {why}", job.name);
            }
            p.warnings.push(format!("--breakdown: not traced: {why}"));
        }
        for f in outcome.features {
            if !self.results.provenance.engine_features.contains(&f) {
                self.results.provenance.engine_features.push(f);
            }
        }
        if !self.quiet {
            println!("{}", terminal::point_block(&outcome.point));
            if let Some(res) = &traced {
                println!("{}", device_trace::table(res));
            }
        }
        self.results.points.push(outcome.point.clone());
        self.save()?;
        Ok(Ran::Done(Box::new(outcome.point)))
    }

    fn run_experiment(&mut self, e: &Experiment) -> anyhow::Result<()> {
        let exp = e.name.as_str();
        if e.purge {
            let msg = steady_run::purge(self.target, self.target.size)?;
            if !self.quiet {
                eprintln!("iolab: purge: {msg}");
            }
            self.results.warnings.retain(|w| !w.starts_with("purge:"));
            self.results.extra.insert("purge".into(), json!(msg));
        }
        if let (Some(n), Some(first)) = (e.precondition, e.jobs.first()) {
            let pj = steady_run::precondition_job(first, self.target.size, n);
            self.run_point(&pj, exp, &[("phase", json!("precondition"))])?;
        }
        match &e.mode {
            Mode::Plain => {
                for j in &e.jobs {
                    self.run_point(j, exp, &[])?;
                }
            }
            Mode::Rates { rates, arrival } => {
                for j in &e.jobs {
                    self.run_rates(j, exp, rates, *arrival)?;
                }
            }
            Mode::LatencyTarget {
                target_ns,
                percentile,
                open_loop,
            } => {
                for j in &e.jobs {
                    self.latency_search(j, exp, *target_ns, *percentile, *open_loop)?;
                }
            }
            Mode::Steady(s) => self.steady_rounds(&e.jobs, exp, s)?,
        }
        Ok(())
    }

    fn closed_loop_max(&mut self, j: &JobSpec, exp: &str) -> anyhow::Result<Option<f64>> {
        let mut cj = j.clone();
        cj.name = format!("{}-closed-loop-max", j.name);
        cj.open_loop = None;
        Ok(
            match self.run_point(&cj, exp, &[("role", json!("closed_loop_max"))])? {
                Ran::Done(p) if p.total.iops > 0.0 => Some(p.total.iops),
                _ => None,
            },
        )
    }

    fn with_rate(j: &JobSpec, rate: f64, arrival: Arrival) -> JobSpec {
        let mut r = j.clone();
        r.open_loop = Some(OpenLoop {
            rate_iops: rate,
            arrival,
        });
        r.name = if j.name == j.default_name() {
            r.default_name()
        } else {
            format!("{}-rate{rate:.0}", j.name)
        };
        r
    }

    fn run_rates(
        &mut self,
        j: &JobSpec,
        exp: &str,
        rates: &RateAxis,
        arrival: Arrival,
    ) -> anyhow::Result<()> {
        let list: Vec<f64> = match rates {
            RateAxis::Iops(v) => v.clone(),
            RateAxis::PercentOfMax(pcts) => {
                let Some(max) = self.closed_loop_max(j, exp)? else {
                    return Ok(());
                };
                pcts.iter().map(|p| (p / 100.0 * max).max(1.0)).collect()
            }
        };
        for r in list {
            let rj = Self::with_rate(j, r, arrival);
            self.run_point(&rj, exp, &[])?;
        }
        Ok(())
    }

    fn latency_search(
        &mut self,
        j: &JobSpec,
        exp: &str,
        target_ns: u64,
        pct: f64,
        open_loop: Option<Arrival>,
    ) -> anyhow::Result<()> {
        let (mut search, mut v, variable) = match open_loop {
            Some(_) => {
                let Some(max) = self.closed_loop_max(j, exp)? else {
                    return Ok(());
                };
                (TargetSearch::new(max, false), (max / 64.0).max(1.0), "rate")
            }
            None => (TargetSearch::new(4096.0, true), 1.0, "qd"),
        };
        let mut step = 0;
        loop {
            step += 1;
            let mut sj = match open_loop {
                Some(arr) => Self::with_rate(j, v, arr),
                None => JobSpec {
                    qd: v as u32,
                    ..j.clone()
                },
            };
            if open_loop.is_none() {
                sj.name = if j.name == j.default_name() {
                    sj.default_name()
                } else {
                    format!("{}-qd{}", j.name, v as u32)
                };
            }
            sj.name = format!("{}-target-step{step}", sj.name);
            let point = match self.run_point(&sj, exp, &[])? {
                Ran::Done(p) => p,
                Ran::Skipped => return Ok(()),
            };
            let measured = measured_percentile(&point, pct);
            let meets = measured.is_some_and(|m| m <= target_ns as f64);
            let info = json!({
                "variable": variable, "value": v, "target_ns": target_ns, "percentile": pct,
                "measured_ns": measured, "meets": meets, "step": step,
            });
            if let Some(last) = self.results.points.last_mut() {
                last.extra.insert("latency_target".into(), info);
            }
            self.save()?;
            match search.observe(v, meets) {
                Some(n) if !interrupt::stop_requested() => v = n,
                _ => break,
            }
        }
        Ok(())
    }

    fn steady_rounds(
        &mut self,
        jobs: &[JobSpec],
        exp: &str,
        s: &SteadyOptions,
    ) -> anyhow::Result<()> {
        let tracked = steady_run::tracked_index(jobs);
        let mut series = Vec::new();
        for round in 0..s.max_rounds {
            for (i, j) in jobs.iter().enumerate() {
                let mut rj = j.clone();
                rj.name = format!("{}-round{}", j.name, round + 1);
                let info = json!({
                    "round": round + 1, "tracked": i == tracked, "metric": s.metric,
                    "criterion": s.criterion, "window": s.window, "max_rounds": s.max_rounds,
                });
                let ran = self.run_point(&rj, exp, &[("steady", info)])?;
                if i == tracked {
                    // Rounds of one job share a key: drop the round from the name-free params.
                    if let Ran::Done(p) = ran {
                        series.push(s.metric.of(&p).unwrap_or(0.0));
                    } else {
                        return Ok(());
                    }
                }
                if interrupt::stop_requested() {
                    return Ok(());
                }
            }
            if let Some(c) = steady::check(&series, s.window, s.criterion) {
                if !self.quiet {
                    eprintln!(
                        "iolab: round {}: window mean {:.1}, range {:.1}%, excursion {:.1}%: {}",
                        round + 1,
                        c.mean,
                        100.0 * c.range / c.mean.abs().max(1e-12),
                        100.0 * c.excursion / c.mean.abs().max(1e-12),
                        if c.steady { "steady" } else { "not steady yet" }
                    );
                }
                if c.steady {
                    return Ok(());
                }
            }
        }
        self.results.warnings.push(format!(
            "steady state not reached in {} rounds{}",
            s.max_rounds,
            if exp.is_empty() {
                String::new()
            } else {
                format!(" ({exp})")
            }
        ));
        self.save()
    }
}

/// The percentile of the point's main latency: from the intended issue time
/// for open-loop points (what a client sees), else the normal total latency.
fn measured_percentile(p: &Point, pct: f64) -> Option<f64> {
    let key = crate::measure::histogram::percentile_key(pct);
    if let Some(ol) = p.extra.json("open_loop") {
        let l = &ol["lat_from_intended"];
        let s = l.get("read").or_else(|| l.get("write"))?;
        if let Some(v) = s["percentiles_ns"].get(&key).and_then(Value::as_f64) {
            return Some(v);
        }
        let h = ["read.lat_intended", "write.lat_intended"]
            .iter()
            .find_map(|k| p.histograms.get(*k))?;
        return crate::measure::histogram::LatencyHistogram::decode(h)
            .ok()
            .map(|h| h.value_at_percentile(pct) as f64);
    }
    let lat = p.main_lat()?;
    if let Some(v) = lat.percentiles_ns.get(&key) {
        return Some(*v as f64);
    }
    let h = ["read.lat", "write.lat"]
        .iter()
        .find_map(|k| p.histograms.get(*k))?;
    crate::measure::histogram::LatencyHistogram::decode(h)
        .ok()
        .map(|h| h.value_at_percentile(pct) as f64)
}

pub fn run(a: DeviceArgs) -> anyhow::Result<()> {
    let a = device_fio::with_target_defaults(a)?;
    let fio_export = device_fio::export_path(a.export.as_deref())?;
    let exps = experiments_from_args(&a)?;
    if a.dry_run {
        dry_run(&exps, &a);
        return Ok(());
    }
    interrupt::install();
    let jobs: Vec<&JobSpec> = exps.iter().flat_map(|e| e.jobs.iter()).collect();
    let needs_file = jobs.iter().any(|j| j.engine.needs_file());
    let size = a
        .size
        .as_deref()
        .map(|s| parse_size("--size", s))
        .transpose()?;
    if size == Some(0) {
        return Err(usage("--size", "size must be greater than 0"));
    }
    let verify_bs = jobs.iter().find(|j| j.verify).map(|j| j.max_bs());
    let topts = TargetOptions {
        path: if needs_file {
            Some(a.target.clone().unwrap_or_else(|| PathBuf::from(".")))
        } else {
            None
        },
        size,
        overwrite: a.overwrite,
        destroy_data: a.destroy_data.clone(),
        keep: a.keep,
    };
    let quiet = a.quiet || a.json.as_deref() == Some(std::path::Path::new("-"));
    let mut provenance = Provenance::collect(a.seed);
    let mut run_warnings = Vec::new();
    let ncpu = provenance.cpu_count as f64;
    if provenance.load_average[0] > 0.5 * ncpu {
        run_warnings.push(format!(
            "the machine was busy at start (load average {:.2} on {} CPUs): numbers may be noisy; rerun when idle",
            provenance.load_average[0], provenance.cpu_count
        ));
    }
    if !quiet && needs_file && a.target.as_ref().is_none_or(|p| p.is_dir()) {
        eprintln!(
            "iolab: preparing a {} MiB scratch file...",
            size.unwrap_or(dut::DEFAULT_SCRATCH_SIZE) >> 20
        );
    }
    let writes =
        jobs.iter().any(|j| j.writes()) || exps.iter().any(|e| e.precondition.is_some() || e.purge);
    let target = dut::prepare(&topts, writes, verify_bs, a.seed)?;
    provenance.target = Some(target.info());
    provenance.plan = if a.plan.is_some() || exps.len() > 1 || exps[0].mode != Mode::Plain {
        serde_json::to_value(&exps)?
    } else {
        serde_json::to_value(&exps[0].jobs)?
    };
    let tracer = a
        .breakdown
        .then(|| Tracer::new(&target, a.breakdown_buffer_kb));
    if let Some(t) = &tracer {
        if t.why_not.is_none() && !quiet {
            eprintln!("{}", t.status);
        }
        if let Some(why) = &t.why_not {
            let w = format!("--breakdown: tracing unavailable ({why}); every point runs untraced");
            // Said even with --quiet: the user asked for a breakdown.
            if quiet {
                eprintln!("warning: {w}");
            }
            run_warnings.push(w);
        }
    }
    let mut results = Results::new("device", provenance);
    results.warnings = run_warnings;
    if let Some(f) = &a.fio_job {
        results
            .extra
            .insert("fio_job".into(), device_fio::provenance(f));
    }
    let (planned_points, planned_secs) = exps
        .iter()
        .map(|e| e.estimate())
        .fold((0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
    let mut s = Session {
        target: &target,
        results,
        json_path: a.json.clone().filter(|p| p.as_os_str() != "-"),
        fio_export: fio_export.clone(),
        tracer,
        quiet,
        show_progress: !quiet && std::io::stderr().is_terminal(),
        knee_factor: exps.first().map_or(2.0, |e| e.knee_factor),
        planned_points,
        planned_secs,
        done_points: 0,
        started: Instant::now(),
        failures: 0,
        first_skip: None,
    };
    s.save()?;
    if !quiet {
        for w in &s.results.warnings {
            eprintln!("warning: {w}");
        }
    }
    for e in &exps {
        if interrupt::stop_requested() {
            break;
        }
        s.knee_factor = e.knee_factor;
        s.run_experiment(e)?;
    }
    s.results.interrupted = interrupt::stop_requested();
    s.results.complete = !s.results.interrupted;
    s.save()?;
    if !quiet {
        for line in crate::report::analysis_text::analysis_lines(&s.results.analysis) {
            println!("{line}");
        }
    }
    let results = s.results;
    let failures = s.failures;
    if results.points.is_empty() && !results.interrupted {
        if let Some(e) = s.first_skip {
            drop(target);
            return Err(e);
        }
    }
    if a.json.as_deref() == Some(std::path::Path::new("-")) {
        println!("{}", serde_json::to_string_pretty(&results)?);
    } else if let (Some(p), false) = (&a.json, quiet) {
        println!("results: {}", p.display());
    }
    if let (Some(p), false) = (&fio_export, quiet) {
        println!("fio JSON: {}", p.display());
    }
    drop(target);
    if results.interrupted {
        return Err(Interrupted.into());
    }
    let mismatches: u64 = results
        .points
        .iter()
        .filter_map(|p| p.verify.as_ref())
        .map(|v| v.mismatches)
        .sum();
    if mismatches > 0 {
        return Err(VerifyFailed { mismatches }.into());
    }
    if failures > 0 {
        anyhow::bail!("{failures} point(s) failed (see the warnings in the results)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_parse() {
        assert_eq!(parse_count("--io-count", "10k").unwrap(), 10_000);
        assert_eq!(parse_count("--io-count", "2M").unwrap(), 2_000_000);
        assert!(parse_count("--io-count", "x").is_err());
        assert!(parse_count("--io-count", "99999999999999999999g").is_err());
    }
}
