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

pub fn run(a: RunArgs) -> anyhow::Result<()> {
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
    let quiet = a.quiet;
    let scratch_size = size.unwrap_or(dut::DEFAULT_SCRATCH_SIZE);
    if !quiet {
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
    let target = dut::prepare(&topts, true, None, a.seed)?;
    let mut warnings = Vec::new();
    if explicit.is_none() {
        // io_uring may be disabled (sysctl, seccomp, old kernel): fall back.
        let mut chosen = None;
        for e in [EngineKind::IoUring, EngineKind::Aio, EngineKind::Psync] {
            if engine_works(e, &target) {
                chosen = Some(e);
                break;
            }
            warnings.push(format!(
                "the {} engine does not work here; falling back",
                e.name()
            ));
        }
        let e = chosen
            .ok_or_else(|| anyhow::anyhow!("no I/O engine works on {}", target.path.display()))?;
        if e != base.engine {
            base.engine = e;
            steps = budgeted_plan(&a.profile, &base, budget_ns, &trace_why_not)?;
        }
    }
    let dir = out_dir(&a);
    std::fs::create_dir_all(&dir)
        .map_err(|e| usage("--output", format!("cannot create {}: {e}", dir.display())))?;
    let json_path = dir.join("results.json");
    let html_path = dir.join("report.html");

    let mut provenance = Provenance::collect(a.seed);
    provenance.target = Some(target.info());
    let jobs: Vec<(&'static str, StepKind, JobSpec)> = active_jobs(&steps)
        .into_iter()
        .map(|(s, j)| (s.id, s.kind, j.clone()))
        .collect();
    provenance.plan = serde_json::to_value(jobs.iter().map(|(_, _, j)| j).collect::<Vec<_>>())?;
    let mut results = Results::new("run", provenance);
    let ncpu = results.provenance.cpu_count as f64;
    if results.provenance.load_average[0] > 0.5 * ncpu {
        warnings.push(format!(
            "the machine was busy at start (load average {:.2} on {} CPUs): numbers may be noisy; rerun when idle",
            results.provenance.load_average[0], results.provenance.cpu_count
        ));
    }
    warnings.extend(target.warnings.iter().cloned());
    for s in &steps {
        if let Some(why) = &s.skipped {
            if s.kind != StepKind::Kv {
                warnings.push(format!("step '{}' skipped: {why}", s.title));
            }
        }
    }
    results.warnings = warnings;
    results
        .extra
        .insert("run".into(), run_record(&steps, &a.profile, budget_ns));
    results.write_atomic(&json_path)?;

    let show_progress = !quiet && std::io::stderr().is_terminal();
    let total_ns: u64 = jobs
        .iter()
        .map(|(_, _, j)| j.stop.runtime_ns.unwrap_or(0) + j.ramp_ns)
        .sum();
    let mut done_ns = 0u64;
    let t0 = Instant::now();
    let n = jobs.len();
    let mut kv_ran = false;
    for (i, (step_id, kind, job)) in jobs.iter().enumerate() {
        let (step_id, kind) = (*step_id, *kind);
        if interrupt::stop_requested() {
            break;
        }
        let job_ns = job.stop.runtime_ns.unwrap_or(0) + job.ramp_ns;
        let remaining_after = total_ns - done_ns - job_ns;
        done_ns += job_ns;
        // Skipped while running (no closed-loop maximum, no tracing here).
        if steps.iter().any(|s| s.id == step_id && s.skipped.is_some()) {
            continue;
        }
        if kind == StepKind::Kv && kv_ran {
            continue; // one `kv` invocation runs every workload of the step
        }
        let mut job = job.clone();
        let mut extra = Vec::new();
        let mut skip_why = None;
        if kind == StepKind::RatesOfMax {
            let pct = job.open_loop.map_or(100.0, |o| o.rate_iops);
            match closed_loop_max(&mut results.points, &job) {
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
        let label = format!("[{}/{n}] {}", i + 1, job.name);
        let progress = move |elapsed: f64, _total: Option<f64>| {
            let left = (job_ns as f64 / 1e9 - elapsed).max(0.0) + remaining_after as f64 / 1e9;
            eprint!("\r\x1b[2K{label}  ETA {:.0}s", left);
            let _ = std::io::stderr().flush();
        };
        if show_progress {
            progress(0.0, None);
        }
        let mut more_points = Vec::new();
        let outcome = match kind {
            _ if skip_why.is_some() => Err(anyhow::anyhow!("skipped")),
            StepKind::Kv => {
                kv_ran = true;
                let records = kv::records(job.stop.runtime_ns.unwrap_or(0));
                kv::run(&a.dir, &dir, records, a.seed).and_then(|(mut pts, kr)| {
                    for (k, v) in kr.provenance.tools {
                        results.provenance.tools.entry(k).or_insert(v);
                    }
                    results.warnings.extend(kr.warnings);
                    let first = (!pts.is_empty()).then(|| pts.remove(0));
                    more_points = pts;
                    first
                        .map(|p| (p, Vec::new()))
                        .ok_or_else(|| anyhow::anyhow!("the kv step measured nothing"))
                })
            }
            StepKind::Trace => breakdown::run(&target, &job).map(|p| (p, Vec::new())),
            _ => {
                let opts = RunOptions {
                    record_requests: None,
                    on_progress: if show_progress { Some(&progress) } else { None },
                };
                run_job(&job, &target, &opts).map(|o| (o.point, o.features))
            }
        };
        if show_progress {
            eprint!("\r\x1b[2K");
        }
        match outcome {
            Ok((mut point, features)) => {
                point.params.insert("step".into(), step_id.into());
                for (k, v) in extra {
                    point.extra.insert(k.into(), v);
                }
                if interrupt::stop_requested() {
                    point.warnings.push(
                        "interrupted before the end of the job: this point is partial".into(),
                    );
                    point
                        .extra
                        .insert("interrupted".into(), serde_json::Value::Bool(true));
                }
                for f in features {
                    if !results.provenance.engine_features.contains(&f) {
                        results.provenance.engine_features.push(f);
                    }
                }
                results.points.push(point);
                for mut p in more_points {
                    p.params.insert("step".into(), step_id.into());
                    results.points.push(p);
                }
            }
            Err(e) if skip_why.is_some() || matches!(kind, StepKind::Trace | StepKind::Kv) => {
                let why = skip_why.take().unwrap_or_else(|| format!("{e:#}"));
                if let Some(s) = steps.iter_mut().find(|s| s.id == step_id) {
                    results
                        .warnings
                        .push(format!("step '{}' skipped: {why}", s.title));
                    if !quiet {
                        eprintln!("iolab: step {} skipped: {why}", s.id);
                    }
                    s.skipped = Some(why);
                }
            }
            Err(e) => {
                let msg = format!("job {} failed: {e:#}", job.name);
                if !quiet {
                    eprintln!("iolab: {msg}");
                }
                results.warnings.push(msg);
            }
        }
        results.analysis = analysis::analyze_across_steps(&results.points);
        results
            .extra
            .insert("run".into(), run_record(&steps, &a.profile, budget_ns));
        results.write_atomic(&json_path)?;
    }
    results.interrupted = interrupt::stop_requested();
    results.complete = !results.interrupted;
    results.write_atomic(&json_path)?;
    crate::results::write_atomic(
        &html_path,
        html::render(&results, "results.json").as_bytes(),
    )?;
    drop(target);
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
