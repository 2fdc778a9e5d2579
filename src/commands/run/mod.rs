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

use crate::cli::run::RunArgs;
use crate::engine::EngineKind;
use crate::error::{usage, Interrupted};
use crate::interrupt;
use crate::plan::job::{JobSpec, StopCondition};
use crate::plan::parse::{format_ns, parse_duration_ns, parse_size};
use crate::report::{html, summary};
use crate::results::{time, Provenance, Results};
use crate::runner::job::{run_job, RunOptions};
use crate::target::{self, Target, TargetOptions};

pub mod plan;

use plan::MIB;
pub use plan::{active_jobs, fit_budget, plan as plan_steps, Step};

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
                        "      {:<44} {} + {} ramp",
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
    let mut steps = plan_steps(&a.profile, &base)?;
    fit_budget(&mut steps, budget_ns);
    if a.dry_run {
        print_plan(&steps, &a.dir, budget_ns);
        return Ok(());
    }
    interrupt::install();
    let quiet = a.quiet;
    let scratch_size = size.unwrap_or(target::DEFAULT_SCRATCH_SIZE);
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
    let target = target::prepare(&topts, true, None, a.seed)?;
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
            steps = plan_steps(&a.profile, &base)?;
            fit_budget(&mut steps, budget_ns);
        }
    }
    let dir = out_dir(&a);
    std::fs::create_dir_all(&dir)
        .map_err(|e| usage("--output", format!("cannot create {}: {e}", dir.display())))?;
    let json_path = dir.join("results.json");
    let html_path = dir.join("report.html");

    let mut provenance = Provenance::collect(a.seed);
    provenance.target = Some(target.info());
    let jobs = active_jobs(&steps);
    provenance.plan = serde_json::to_value(jobs.iter().map(|(_, j)| j).collect::<Vec<_>>())?;
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
            warnings.push(format!("step '{}' skipped: {why}", s.title));
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
        .map(|(_, j)| j.stop.runtime_ns.unwrap_or(0) + j.ramp_ns)
        .sum();
    let mut done_ns = 0u64;
    let t0 = Instant::now();
    let n = jobs.len();
    for (i, (step, job)) in jobs.iter().enumerate() {
        if interrupt::stop_requested() {
            break;
        }
        let job_ns = job.stop.runtime_ns.unwrap_or(0) + job.ramp_ns;
        let label = format!("[{}/{n}] {}", i + 1, job.name);
        let remaining_after = total_ns - done_ns - job_ns;
        let progress = move |elapsed: f64, _total: Option<f64>| {
            let left = (job_ns as f64 / 1e9 - elapsed).max(0.0) + remaining_after as f64 / 1e9;
            eprint!("\r\x1b[2K{label}  ETA {:.0}s", left);
            let _ = std::io::stderr().flush();
        };
        if show_progress {
            progress(0.0, None);
        }
        let opts = RunOptions {
            record_requests: None,
            on_progress: if show_progress { Some(&progress) } else { None },
        };
        let outcome = run_job(job, &target, &opts);
        if show_progress {
            eprint!("\r\x1b[2K");
        }
        done_ns += job_ns;
        match outcome {
            Ok(mut o) => {
                o.point.params.insert("step".into(), step.id.into());
                if interrupt::stop_requested() {
                    o.point.warnings.push(
                        "interrupted before the end of the job: this point is partial".into(),
                    );
                    o.point
                        .extra
                        .insert("interrupted".into(), serde_json::Value::Bool(true));
                }
                for f in o.features {
                    if !results.provenance.engine_features.contains(&f) {
                        results.provenance.engine_features.push(f);
                    }
                }
                results.points.push(o.point);
            }
            Err(e) => {
                let msg = format!("job {} failed: {e:#}", job.name);
                if !quiet {
                    eprintln!("iolab: {msg}");
                }
                results.warnings.push(msg);
            }
        }
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
        println!("{}", terminal_summary(&results, t0.elapsed().as_secs_f64()));
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

/// Headlines, a compact line per point and the warnings.
pub fn terminal_summary(r: &Results, elapsed_s: f64) -> String {
    let mut o = format!(
        "iolab run: {} point(s) in {:.0} s{}\n\n",
        r.points.len(),
        elapsed_s,
        if r.interrupted { " (interrupted)" } else { "" }
    );
    for h in summary::headlines(r) {
        o.push_str(&format!(
            "  {:<28} {:>24}   ({})\n",
            h.label, h.value, h.detail
        ));
    }
    o.push('\n');
    o.push_str(&crate::report::terminal::points_table(r));
    for w in summary::warnings(r) {
        o.push_str(&format!("warning: {w}\n"));
    }
    o
}
