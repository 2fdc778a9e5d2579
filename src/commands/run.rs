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
use crate::plan::job::{JobSpec, Pattern, StopCondition};
use crate::plan::parse::{format_ns, parse_duration_ns, parse_size};
use crate::report::{html, summary};
use crate::results::{time, Provenance, Results};
use crate::runner::job::{run_job, RunOptions};
use crate::target::{self, Target, TargetOptions};

/// Shortest measured slot per job; below it steps are dropped from the end.
const MIN_SLOT_NS: u64 = 500_000_000;

/// One experiment of the plan.
#[derive(Debug, Clone)]
pub struct Step {
    pub id: &'static str,
    pub title: &'static str,
    pub jobs: Vec<JobSpec>,
    /// Core steps are never dropped to fit the budget.
    pub core: bool,
    /// Why the step does not run (not available in this build, dropped for time).
    pub skipped: Option<String>,
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

fn job(base: &JobSpec, pattern: Pattern, bs: u64, qd: u32) -> JobSpec {
    let mut j = JobSpec {
        pattern,
        bs: vec![(bs, 100)],
        qd,
        batch: None,
        ..base.clone()
    };
    if base.engine.is_sync() && qd > 1 {
        // A synchronous engine keeps one request in flight per worker: reach
        // the depth with workers instead (fio's numjobs).
        j.jobs = qd.min(64);
        j.qd = 1;
    }
    j
}

fn batch(base: &JobSpec, pattern: Pattern, bs: u64, k: u32) -> JobSpec {
    JobSpec {
        pattern,
        bs: vec![(bs, 100)],
        qd: 1,
        batch: Some(k),
        ..base.clone()
    }
}

fn mixed(base: &JobSpec, bs: u64, mix: u8, qd: u32) -> JobSpec {
    let pattern = match mix {
        100 => Pattern::RandRead,
        0 => Pattern::RandWrite,
        _ => Pattern::RandRw,
    };
    JobSpec {
        mix: if pattern == Pattern::RandRw { mix } else { 50 },
        ..job(base, pattern, bs, qd)
    }
}

/// The steps of a profile, before budgeting (runtimes are set later).
pub fn plan(profile: &str, base: &JobSpec) -> anyhow::Result<Vec<Step>> {
    use Pattern::*;
    let full = profile == "full";
    let quick = profile == "quick";
    if !["quick", "standard", "full"].contains(&profile) {
        return Err(usage(
            "--profile",
            format!("unknown profile '{profile}' (quick, standard, full)"),
        ));
    }
    let mut steps = Vec::new();
    let step = |id, title, jobs, core| Step {
        id,
        title,
        jobs,
        core,
        skipped: None,
    };
    let pats: &[Pattern] = if quick {
        &[RandRead, RandWrite]
    } else {
        &[RandRead, RandWrite, Read, Write]
    };
    steps.push(step(
        "latency",
        "Unloaded (QD1) latency per pattern",
        pats.iter().map(|&p| job(base, p, 4 * KIB, 1)).collect(),
        true,
    ));
    let mut iops = vec![job(base, RandRead, 4 * KIB, 32)];
    if !quick {
        iops.push(job(base, RandWrite, 4 * KIB, 32));
    }
    if full {
        iops.push(job(base, RandRead, 4 * KIB, 128));
        iops.push(job(base, RandWrite, 4 * KIB, 128));
    }
    steps.push(step("iops", "Maximum 4 KiB random IOPS", iops, true));
    let mut bw = vec![job(base, Read, MIB, 8), job(base, Write, MIB, 8)];
    if full {
        bw.push(job(base, Read, 128 * KIB, 32));
        bw.push(job(base, Write, 128 * KIB, 32));
    }
    steps.push(step(
        "bandwidth",
        "Maximum bandwidth with 1 MiB blocks",
        bw,
        true,
    ));
    if !quick {
        let (bss, qds, pats): (&[u64], &[u32], &[Pattern]) = if full {
            (
                &[4 * KIB, 16 * KIB, 64 * KIB, 256 * KIB, MIB],
                &[1, 4, 16, 64],
                &[RandRead, RandWrite],
            )
        } else {
            (&[4 * KIB, 64 * KIB, MIB], &[1, 8, 32], &[RandRead])
        };
        let mut m = Vec::new();
        for &p in pats {
            for &qd in qds {
                for &bs in bss {
                    m.push(job(base, p, bs, qd));
                }
            }
        }
        steps.push(step("matrix", "Block size x queue depth matrix", m, false));
    }
    let mut b = Vec::new();
    if !base.engine.is_sync() {
        let ks: &[u32] = if quick {
            &[1, 16]
        } else if full {
            &[1, 2, 4, 8, 16, 32, 64, 128]
        } else {
            &[1, 4, 16, 64]
        };
        let pats: &[Pattern] = if full {
            &[RandRead, RandWrite]
        } else {
            &[RandRead]
        };
        for &p in pats {
            for &k in ks {
                b.push(batch(base, p, 4 * KIB, k));
            }
            if !quick {
                let kmax = *ks.last().unwrap_or(&1);
                let bss: &[u64] = if full {
                    &[16 * KIB, 64 * KIB, 256 * KIB, MIB]
                } else {
                    &[64 * KIB]
                };
                for &bs in bss {
                    b.push(batch(base, p, bs, 1));
                    b.push(batch(base, p, bs, kmax));
                }
            }
        }
    }
    let mut s = step(
        "batching",
        "Batching parallelism (submit k, wait for all k)",
        b,
        false,
    );
    if base.engine.is_sync() {
        s.skipped = Some(format!(
            "batched submission needs an asynchronous engine, not {}",
            base.engine.name()
        ));
    }
    steps.push(s);
    if full {
        let mut h = Vec::new();
        for bs in [4 * KIB, 64 * KIB] {
            for mix in [100u8, 70, 50, 30, 0] {
                h.push(mixed(base, bs, mix, 16));
            }
        }
        steps.push(step(
            "mix",
            "Block size x read/write mix (random, QD16)",
            h,
            false,
        ));
    }
    // TODO(open-loop): when `device --rate` lands, add the load-latency curve
    // here: rates at 10..100% of the `iops` step's result, points with a
    // `rate` param (the report already draws them and marks the knee).
    steps.push(Step {
        id: "load-latency",
        title: "Load-latency curve (open loop)",
        jobs: Vec::new(),
        core: false,
        skipped: Some("open-loop load (--rate) is not in this build of iolab yet".into()),
    });
    dedupe(&mut steps);
    Ok(steps)
}

/// Identity of a job for de-duplication across steps.
fn key(j: &JobSpec) -> (Pattern, u64, u32, u32, Option<u32>, u8) {
    (j.pattern, j.max_bs(), j.qd, j.jobs, j.batch, j.mix)
}

fn dedupe(steps: &mut [Step]) {
    let mut seen = Vec::new();
    for s in steps.iter_mut() {
        s.jobs.retain(|j| {
            let k = key(j);
            if seen.contains(&k) {
                false
            } else {
                seen.push(k);
                true
            }
        });
    }
}

/// Give every job its share of the budget: drop optional steps from the end
/// while a job's slot would be under `MIN_SLOT_NS`, then split the slot into
/// a ramp (10%, at most 1 s, none for short slots) and the measured runtime.
pub fn fit_budget(steps: &mut [Step], budget_ns: u64) {
    loop {
        let n: usize = steps
            .iter()
            .filter(|s| s.skipped.is_none())
            .map(|s| s.jobs.len())
            .sum();
        let slot = budget_ns / n.max(1) as u64;
        if slot >= MIN_SLOT_NS {
            break;
        }
        match steps
            .iter_mut()
            .rev()
            .find(|s| s.skipped.is_none() && !s.core && !s.jobs.is_empty())
        {
            Some(s) => {
                s.skipped = Some("dropped to fit the time budget (give a larger --budget)".into())
            }
            None => break,
        }
    }
    let n: usize = steps
        .iter()
        .filter(|s| s.skipped.is_none())
        .map(|s| s.jobs.len())
        .sum();
    let slot = (budget_ns / n.max(1) as u64).max(MIN_SLOT_NS / 2);
    let ramp = if slot >= 2_000_000_000 {
        (slot / 10).min(1_000_000_000)
    } else {
        0
    };
    for s in steps.iter_mut() {
        for j in &mut s.jobs {
            j.ramp_ns = ramp;
            j.stop = StopCondition {
                runtime_ns: Some(slot - ramp),
                io_count: None,
                io_bytes: None,
            };
            j.name = format!("{}: {}", s.id, j.default_name());
        }
    }
}

fn active_jobs(steps: &[Step]) -> Vec<(&Step, &JobSpec)> {
    steps
        .iter()
        .filter(|s| s.skipped.is_none())
        .flat_map(|s| s.jobs.iter().map(move |j| (s, j)))
        .collect()
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
    let mut steps = plan(&a.profile, &base)?;
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
            steps = plan(&a.profile, &base)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_plan_valid_unique_jobs() {
        for p in ["quick", "standard", "full"] {
            let mut steps = plan(p, &JobSpec::default()).unwrap();
            fit_budget(&mut steps, 180_000_000_000);
            let jobs = active_jobs(&steps);
            assert!(jobs.len() >= 5, "{p}: {}", jobs.len());
            let mut keys: Vec<_> = jobs.iter().map(|(_, j)| key(j)).collect();
            keys.sort_by_key(|k| format!("{k:?}"));
            keys.dedup();
            assert_eq!(keys.len(), jobs.len(), "{p}: duplicate jobs");
            for (_, j) in jobs {
                j.validate().unwrap();
            }
        }
        assert!(plan("nope", &JobSpec::default()).is_err());
    }

    #[test]
    fn budget_drops_optional_steps_first() {
        let mut steps = plan("full", &JobSpec::default()).unwrap();
        fit_budget(&mut steps, 10_000_000_000);
        assert!(steps.iter().filter(|s| s.core).all(|s| s.skipped.is_none()));
        assert!(steps
            .iter()
            .any(|s| s.skipped.is_some() && !s.jobs.is_empty()));
        let total: u64 = active_jobs(&steps)
            .iter()
            .map(|(_, j)| j.stop.runtime_ns.unwrap() + j.ramp_ns)
            .sum();
        assert!(total <= 10_000_000_000, "{total}");
    }

    #[test]
    fn sync_engines_use_workers_for_depth_and_skip_batching() {
        let base = JobSpec {
            engine: EngineKind::Psync,
            ..JobSpec::default()
        };
        let steps = plan("standard", &base).unwrap();
        let iops = steps.iter().find(|s| s.id == "iops").unwrap();
        assert_eq!(iops.jobs[0].jobs, 32);
        assert!(steps
            .iter()
            .find(|s| s.id == "batching")
            .unwrap()
            .skipped
            .is_some());
    }
}
