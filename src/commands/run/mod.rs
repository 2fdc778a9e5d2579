//! `iolab run`: the default characterization. Builds a plan of steps (QD1
//! latency per pattern, max 4k IOPS, 1 MiB bandwidth, a block size x QD
//! matrix, batching, and more with `--profile full`), splits the time
//! budget over its jobs, runs them on one scratch file, keeps
//! `results.json` current after every point and ends with `report.html`
//! and a terminal summary.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::json;

use crate::analysis;
use crate::cli::run::RunArgs;
use crate::dut::{self, Target, TargetOptions};
use crate::engine::EngineKind;
use crate::error::{usage, Interrupted};
use crate::interrupt;
use crate::plan::job::{JobSpec, StopCondition};
use crate::plan::parse::{format_ns, parse_duration_ns, parse_size};
use crate::report::html;
use crate::results::output;
use crate::results::{time, Point, Provenance, Results};
use crate::runner::job::{run_job, RunOptions};

pub mod breakdown;
pub mod kv;
pub mod plan;

pub use plan::{active_jobs, fit_budget, plan as plan_steps, Step};
use plan::{StepKind, MIB};

/// The plan of a profile within the budget, with the steps that cannot run
/// here (tracing without root or tracefs) marked skipped before budgeting.
pub fn budgeted_plan(
    profile: &str,
    base: &JobSpec,
    budget_ns: u64,
    trace_why_not: &Option<String>,
) -> anyhow::Result<Vec<Step>> {
    let mut steps = plan_steps(profile, base)?;
    if let Some(why) = trace_why_not {
        for s in steps.iter_mut().filter(|s| s.kind == StepKind::Trace) {
            s.skipped = Some(why.clone());
        }
    }
    fit_budget(&mut steps, budget_ns);
    Ok(steps)
}

/// The closed-loop maximum for a load-latency job: the point of an earlier
/// step with the same parameters minus the rate (the `iops` step's randread
/// 4k QD32), marked `role: closed_loop_max` so the analysis finds it.
fn closed_loop_max(points: &mut [Point], j: &JobSpec) -> Option<f64> {
    let want = plan::key(&JobSpec {
        open_loop: None,
        ..j.clone()
    });
    let p = points.iter_mut().find(|p| {
        p.job.as_ref().is_some_and(|pj| plan::key(pj) == want)
            && !p.extra.contains_key("interrupted")
    })?;
    p.extra
        .insert("role".into(), serde_json::json!("closed_loop_max"));
    (p.total.iops > 0.0).then_some(p.total.iops)
}

fn print_plan(steps: &[Step], dir: &Path, budget_ns: u64) {
    println!(
        "iolab run on {} with a budget of {}:",
        dir.display(),
        format_ns(budget_ns as f64)
    );
    for s in steps {
        match &s.skipped {
            Some(why) => println!("  {:<14} {} — skipped: {why}", s.id, s.title),
            None => {
                println!("  {:<14} {} ({} jobs)", s.id, s.title, s.jobs.len());
                for j in &s.jobs {
                    println!(
                        "      {:<50} {} + {} ramp",
                        j.name,
                        format_ns(j.stop.runtime_ns.unwrap_or(0) as f64),
                        format_ns(j.ramp_ns as f64)
                    );
                }
            }
        }
    }
}

/// Does `engine` work on this target? (a handful of reads)
fn engine_works(engine: EngineKind, target: &Target) -> bool {
    let probe = JobSpec {
        name: "engine-probe".into(),
        engine,
        qd: 2,
        stop: StopCondition {
            runtime_ns: Some(200_000_000),
            io_count: Some(16),
            io_bytes: None,
        },
        ..JobSpec::default()
    };
    run_job(&probe, target, &RunOptions::default()).is_ok()
}

fn out_dir(a: &RunArgs) -> PathBuf {
    a.output.clone().unwrap_or_else(|| {
        a.dir.join(format!(
            "iolab-{}",
            time::compact(std::time::SystemTime::now())
        ))
    })
}

fn run_record(steps: &[Step], profile: &str, budget_ns: u64) -> serde_json::Value {
    json!({
        "profile": profile,
        "budget_s": budget_ns as f64 / 1e9,
        "steps": steps.iter().map(|s| json!({
            "id": s.id,
            "title": s.title,
            "jobs": s.jobs.iter().map(|j| j.name.clone()).collect::<Vec<_>>(),
            "skipped": s.skipped,
        })).collect::<Vec<_>>(),
    })
}

/// `--budget`, `--size` and `--engine`, checked.
fn parse_options(a: &RunArgs) -> anyhow::Result<(u64, Option<u64>, Option<EngineKind>)> {
    let budget_ns = parse_duration_ns("--budget", &a.budget)?;
    if budget_ns < 1_000_000_000 {
        return Err(usage("--budget", "give at least 1s"));
    }
    let size = a
        .size
        .as_deref()
        .map(|s| parse_size("--size", s))
        .transpose()?;
    if size.is_some_and(|s| s < MIB) {
        return Err(usage("--size", "the scratch file needs at least 1m"));
    }
    let explicit = a
        .engine
        .as_deref()
        .map(|e| {
            EngineKind::parse(e)
                .filter(|k| k.needs_file() && *k != EngineKind::Mmap)
                .ok_or_else(|| {
                    usage(
                        "--engine",
                        format!("'{e}' is not one of io_uring, aio, psync"),
                    )
                })
        })
        .transpose()?;
    if !a.dir.is_dir() {
        return Err(usage(
            "DIR",
            format!("{} is not a directory", a.dir.display()),
        ));
    }
    Ok((budget_ns, size, explicit))
}

/// The first engine that works on the target (io_uring may be disabled by
/// sysctl, seccomp or an old kernel), with a warning for each that does not.
fn choose_engine(target: &Target, warnings: &mut Vec<String>) -> anyhow::Result<EngineKind> {
    for e in [EngineKind::IoUring, EngineKind::Aio, EngineKind::Psync] {
        if engine_works(e, target) {
            return Ok(e);
        }
        warnings.push(format!(
            "the {} engine does not work here; falling back",
            e.name()
        ));
    }
    Err(anyhow::anyhow!(
        "no I/O engine works on {}",
        target.path.display()
    ))
}

/// The results before the first job: provenance, plan, start warnings.
fn start_results(
    target: &Target,
    seed: u64,
    jobs: &[(&'static str, StepKind, JobSpec)],
    steps: &[Step],
    mut warnings: Vec<String>,
) -> anyhow::Result<Results> {
    let mut provenance = Provenance::collect(seed);
    provenance.target = Some(target.info());
    provenance.plan = serde_json::to_value(jobs.iter().map(|(_, _, j)| j).collect::<Vec<_>>())?;
    let mut results = Results::new("run", provenance);
    warnings.extend(results.provenance.busy_warning());
    warnings.extend(target.warnings.iter().cloned());
    for s in steps {
        if let Some(why) = &s.skipped {
            if s.kind != StepKind::Kv {
                warnings.push(format!("step '{}' skipped: {why}", s.title));
            }
        }
    }
    results.warnings = warnings;
    Ok(results)
}

/// One `iolab run` in progress: the plan, the results and where they go.
struct StepRunner<'a> {
    a: &'a RunArgs,
    target: &'a Target,
    steps: Vec<Step>,
    results: Results,
    budget_ns: u64,
    out: PathBuf,
    json_path: PathBuf,
    show_progress: bool,
    /// One `kv` invocation runs every workload of the kv step.
    kv_ran: bool,
}

impl StepRunner<'_> {
    fn save(&mut self) -> anyhow::Result<()> {
        self.results.extra.insert(
            "run".into(),
            run_record(&self.steps, &self.a.profile, self.budget_ns),
        );
        self.results.write_atomic(&self.json_path)
    }

    /// Run every job in plan order until the end or Ctrl-C.
    fn run_all(&mut self, jobs: &[(&'static str, StepKind, JobSpec)]) -> anyhow::Result<()> {
        let total_ns: u64 = jobs.iter().map(|(_, _, j)| job_ns(j)).sum();
        let mut done_ns = 0u64;
        for (i, (step_id, kind, job)) in jobs.iter().enumerate() {
            if interrupt::stop_requested() {
                break;
            }
            done_ns += job_ns(job);
            // Skipped while running (no closed-loop maximum, no tracing here).
            if self
                .steps
                .iter()
                .any(|s| s.id == *step_id && s.skipped.is_some())
                || (*kind == StepKind::Kv && self.kv_ran)
            {
                continue;
            }
            let position = format!("[{}/{}]", i + 1, jobs.len());
            self.run_job(&position, step_id, *kind, job, total_ns - done_ns)?;
            self.results.analysis = analysis::analyze_across_steps(&self.results.points);
            self.save()?;
        }
        Ok(())
    }

    /// Run one job of a step; a step that cannot run here is marked skipped.
    fn run_job(
        &mut self,
        position: &str,
        step_id: &'static str,
        kind: StepKind,
        job: &JobSpec,
        remaining_after: u64,
    ) -> anyhow::Result<()> {
        let mut job = job.clone();
        let mut extra = Vec::new();
        let mut skip_why = None;
        if kind == StepKind::RatesOfMax {
            let pct = job.open_loop.map_or(100.0, |o| o.rate_iops);
            match closed_loop_max(&mut self.results.points, &job) {
                Some(max) => {
                    if let Some(ol) = job.open_loop.as_mut() {
                        ol.rate_iops = (pct / 100.0 * max).max(1.0);
                    }
                    job.name = format!("{step_id}: {}", job.default_name());
                    extra.push(("rate_pct_of_max", json!(pct)));
                }
                None => {
                    skip_why = Some(
                        "no closed-loop maximum (the iops step's randread 4k point is missing)"
                            .to_string(),
                    )
                }
            }
        }
        let label = format!("{position} {}", job.name);
        let this_ns = job_ns(&job);
        let progress = move |elapsed: f64, _total: Option<f64>| {
            let left = (this_ns as f64 / 1e9 - elapsed).max(0.0) + remaining_after as f64 / 1e9;
            eprint!("\r\x1b[2K{label}  ETA {:.0}s", left);
            let _ = std::io::stderr().flush();
        };
        if self.show_progress {
            progress(0.0, None);
        }
        let mut more_points = Vec::new();
        let outcome = match kind {
            _ if skip_why.is_some() => Err(anyhow::anyhow!("skipped")),
            StepKind::Kv => self.run_kv(&job).map(|mut pts| {
                let first = pts.remove(0);
                more_points = pts;
                (first, Vec::new())
            }),
            StepKind::Trace => breakdown::run(self.target, &job).map(|p| (p, Vec::new())),
            _ => {
                let opts = RunOptions {
                    clock: crate::measure::tsc::ClockChoice::Auto,
                    record_requests: None,
                    on_progress: if self.show_progress {
                        Some(&progress)
                    } else {
                        None
                    },
                };
                run_job(&job, self.target, &opts).map(|o| (o.point, o.features))
            }
        };
        if self.show_progress {
            eprint!("\r\x1b[2K");
        }
        match outcome {
            Ok((mut point, features)) => {
                point.params.insert("step".into(), step_id.into());
                for (k, v) in extra {
                    point.extra.insert(k.into(), v);
                }
                crate::session::mark_if_interrupted(&mut point);
                self.results.provenance.merge_features(features);
                self.results.points.push(point);
                for mut p in more_points {
                    p.params.insert("step".into(), step_id.into());
                    self.results.points.push(p);
                }
            }
            Err(e) if skip_why.is_some() || matches!(kind, StepKind::Trace | StepKind::Kv) => {
                let why = skip_why.take().unwrap_or_else(|| format!("{e:#}"));
                self.skip_step(step_id, why);
            }
            Err(e) => {
                let msg = format!("job {} failed: {e:#}", job.name);
                if !self.a.quiet {
                    eprintln!("iolab: {msg}");
                }
                self.results.warnings.push(msg);
            }
        }
        Ok(())
    }

    /// The kv step: every workload in one go; its points (at least one).
    fn run_kv(&mut self, job: &JobSpec) -> anyhow::Result<Vec<Point>> {
        self.kv_ran = true;
        let records = kv::records(job.stop.runtime_ns.unwrap_or(0));
        let kr = kv::run(&self.a.dir, records, self.a.seed)?;
        let pts = kr.points;
        for (k, v) in kr.provenance.tools {
            self.results.provenance.tools.entry(k).or_insert(v);
        }
        self.results.warnings.extend(kr.warnings);
        if pts.is_empty() {
            anyhow::bail!("the kv step measured nothing");
        }
        Ok(pts)
    }

    fn skip_step(&mut self, step_id: &str, why: String) {
        if let Some(s) = self.steps.iter_mut().find(|s| s.id == step_id) {
            self.results
                .warnings
                .push(format!("step '{}' skipped: {why}", s.title));
            if !self.a.quiet {
                eprintln!("iolab: step {} skipped: {why}", s.id);
            }
            s.skipped = Some(why);
        }
    }
}

/// The output directory may exist, but what iolab would replace in it must
/// be iolab's own (or `--force`).
fn check_outputs(dir: &Path, force: bool) -> anyhow::Result<()> {
    if dir.exists() && !dir.is_dir() {
        return Err(usage(
            "--output",
            format!("{} is not a directory", dir.display()),
        ));
    }
    if dir.is_dir() {
        for name in ["results.json", "report.html"] {
            output::check(&dir.join(name), "--output", force, &[])?;
        }
    }
    Ok(())
}

/// A job's planned time: runtime plus ramp.
fn job_ns(j: &JobSpec) -> u64 {
    j.stop.runtime_ns.unwrap_or(0) + j.ramp_ns
}

pub fn run(a: RunArgs) -> anyhow::Result<()> {
    let (budget_ns, size, explicit) = parse_options(&a)?;
    let mut base = JobSpec {
        engine: explicit.unwrap_or(EngineKind::IoUring),
        seed: a.seed,
        ..JobSpec::default()
    };
    let trace_why_not = breakdown::unavailable();
    let mut steps = budgeted_plan(&a.profile, &base, budget_ns, &trace_why_not)?;
    if a.dry_run {
        print_plan(&steps, &a.dir, budget_ns);
        return Ok(());
    }
    interrupt::install();
    let scratch_size = size.unwrap_or(dut::DEFAULT_SCRATCH_SIZE);
    if !a.quiet {
        eprintln!(
            "iolab: preparing a {} MiB scratch file in {}...",
            scratch_size >> 20,
            a.dir.display()
        );
    }
    let topts = TargetOptions {
        path: Some(a.dir.clone()),
        size: Some(scratch_size),
        ..Default::default()
    };
    let dir = out_dir(&a);
    check_outputs(&dir, a.force)?;
    let target = dut::prepare(&topts, true, None, a.seed)?;
    let mut warnings = Vec::new();
    if explicit.is_none() {
        let e = choose_engine(&target, &mut warnings)?;
        if e != base.engine {
            base.engine = e;
            steps = budgeted_plan(&a.profile, &base, budget_ns, &trace_why_not)?;
        }
    }
    std::fs::create_dir_all(&dir)
        .map_err(|e| usage("--output", format!("cannot create {}: {e}", dir.display())))?;
    let jobs: Vec<(&'static str, StepKind, JobSpec)> = active_jobs(&steps)
        .into_iter()
        .map(|(s, j)| (s.id, s.kind, j.clone()))
        .collect();
    let results = start_results(&target, a.seed, &jobs, &steps, warnings)?;
    let mut runner = StepRunner {
        a: &a,
        target: &target,
        steps,
        results,
        budget_ns,
        json_path: dir.join("results.json"),
        out: dir,
        show_progress: !a.quiet && std::io::stderr().is_terminal(),
        kv_ran: false,
    };
    runner.save()?;
    let t0 = Instant::now();
    runner.run_all(&jobs)?;
    let (results, json_path, dir) = (runner.results, runner.json_path, runner.out);
    drop(target);
    finish(results, &json_path, &dir.join("report.html"), a.quiet, t0)
}

/// Mark the end, write the report and the summary; the exit status.
fn finish(
    mut results: Results,
    json_path: &Path,
    html_path: &Path,
    quiet: bool,
    t0: Instant,
) -> anyhow::Result<()> {
    results.interrupted = interrupt::stop_requested();
    results.complete = !results.interrupted;
    results.write_atomic(json_path)?;
    crate::results::write_atomic(html_path, html::render(&results, "results.json").as_bytes())?;
    if !quiet {
        println!(
            "{}",
            crate::report::terminal::run_summary(&results, t0.elapsed().as_secs_f64())
        );
        println!("results: {}", json_path.display());
        println!("report:  {}", html_path.display());
    }
    if results.interrupted {
        return Err(Interrupted.into());
    }
    if results.points.is_empty() {
        return Err(anyhow::anyhow!(
            "no job succeeded (see the warnings in {})",
            json_path.display()
        ));
    }
    Ok(())
}
