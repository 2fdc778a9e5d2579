//! `iolab run`: the default characterization. Builds a plan of steps (QD1
//! latency per pattern, max 4k IOPS, 1 MiB bandwidth, a block size x QD
//! matrix, batching, and more with `--profile full`), splits the time
//! budget over its jobs, runs them on one scratch file, keeps
//! `results.json` current after every point and ends with `report.html`
//! and a terminal summary. (Moved from commands/run/; the command line
//! comes as `RunSettings` from commands/run.rs.) With `--hosts` the same
//! plan's device jobs run on every host at once through the driver's
//! placement (`FleetPlacement`), one merged point per job with each
//! host's row; the steps that only run on this machine (trace, database,
//! remote) are dropped with the reason the plan and the results say.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::analysis::AnalysisOptions;
use crate::campaign::setups::MediaFlags;
use crate::dut::{self, Target, TargetOptions};
use crate::error::{usage, Interrupted};
use crate::fleet::{FleetPlacement, JobTarget};
use crate::interrupt;
use crate::plan::endpoint::RemoteEndpoint;
use crate::plan::engines::EngineKind;
use crate::plan::job::{JobSpec, StopCondition};
use crate::plan::parse::format_ns;
use crate::results::output;
use crate::results::{time, Provenance, Results};
use crate::runner::job::{run_job, RunOptions};
use crate::session::Presenter;
use crate::session::{Driver, ResultsSink};

pub mod breakdown;
pub mod kv;
pub mod media;
mod steps;

use steps::StepRunner;

use crate::plan::run_plan as plan;
use crate::plan::units::{Size, Span};
pub use plan::{active_jobs, fit_budget, plan as plan_steps, RunStep};
use plan::{StepKind, MIB};

/// `iolab run`'s flags as given (`cli::run::RunSettings` documents each), but
/// the media flags, which come beside them.
#[derive(Debug, Clone)]
pub struct RunSettings {
    pub dirs: Vec<PathBuf>,
    pub target: Vec<PathBuf>,
    pub overwrite: bool,
    pub budget: Span,
    pub runtime: Option<Span>,
    pub profile: String,
    pub size: Option<Size>,
    pub engine: Option<String>,
    pub output: Option<PathBuf>,
    pub force: bool,
    pub seed: u64,
    pub quiet: bool,
    pub status_interval: Option<f64>,
    pub remote: bool,
    pub dry_run: bool,
    pub dir: PathBuf,
}

/// The plan of a profile within the budget, with the steps that cannot run
/// here (tracing without root or tracefs; the database and tracing steps
/// on a remote export) marked skipped before budgeting. `budget_ns` is one
/// of `shares` equal parts of `--budget` (a media run's passes); a budget
/// that cannot give each core job 0.5 s is refused, naming its minimum.
pub fn budgeted_plan(
    profile: &str,
    base: &JobSpec,
    (budget_ns, shares): (u64, u64),
    why_not: &[(StepKind, String)],
    remote: bool,
) -> anyhow::Result<Vec<RunStep>> {
    let mut steps = plan_steps(profile, base)?;
    if remote {
        steps.push(plan::remote_step(base));
    }
    // In reverse, so the first reason given for a step is the one kept
    // (it also replaces the profile's own, "not in the quick profile").
    for (kind, why) in why_not.iter().rev() {
        for s in steps.iter_mut().filter(|s| s.kind == *kind) {
            s.skipped = Some(why.clone());
        }
    }
    let min = plan::min_budget_ns(&steps);
    if budget_ns < min {
        let each = if shares > 1 {
            format!(" in each of its {shares} passes (targets x rounds)")
        } else {
            String::new()
        };
        return Err(usage(
            "--budget",
            format!(
                "{} is too small for the {profile} profile: its core steps' {} jobs need 0.5 s each{each}; give at least {}",
                format_ns((budget_ns * shares) as f64),
                min / 500_000_000,
                format_ns((min * shares) as f64)
            ),
        ));
    }
    fit_budget(&mut steps, budget_ns);
    Ok(steps)
}

/// The steps that cannot run on this target, and why.
fn steps_that_cannot_run(remote: Option<&RemoteEndpoint>) -> Vec<(StepKind, String)> {
    let mut out = Vec::new();
    if let Some(ep) = remote {
        let why = format!("{ep} is a remote export");
        out.push((
            StepKind::Kv,
            format!("{why}; the database step needs a directory"),
        ));
        out.push((
            StepKind::Trace,
            format!("{why}; tracing needs a local block device"),
        ));
        out.push((
            StepKind::Remote,
            format!("{why} already; the remote step serves the scratch file of a directory"),
        ));
    }
    if let Some(why) = breakdown::unavailable() {
        out.push((StepKind::Trace, why));
    }
    out
}

/// The plan as `--dry-run` prints it, under `header`.
fn print_plan(steps: &[RunStep], header: &str) {
    println!("{header}");
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

fn out_dir(a: &RunSettings, remote: bool) -> PathBuf {
    a.output.clone().unwrap_or_else(|| {
        let base = if remote {
            Path::new(".")
        } else {
            a.dir.as_path()
        };
        base.join(format!(
            "iolab-{}",
            time::compact(std::time::SystemTime::now())
        ))
    })
}

/// `--budget`, `--size` and `--engine`, checked (for a remote export the
/// engine is the one that speaks its transport).
fn parse_options(
    a: &RunSettings,
    remote: Option<&RemoteEndpoint>,
) -> anyhow::Result<(u64, Option<u64>, Option<EngineKind>)> {
    let budget_ns = a.budget.ns();
    if budget_ns < 1_000_000_000 {
        return Err(usage("--budget", "give at least 1s"));
    }
    let size = a.size.as_ref().map(Size::bytes);
    if size.is_some_and(|s| s < MIB) {
        return Err(usage("--size", "the scratch file needs at least 1m"));
    }
    if let Some(ep) = remote {
        let Some(k) = crate::plan::engines::engine_for_transport(ep.transport) else {
            return Err(crate::plan::endpoint::no_initiator(ep).into());
        };
        if a.engine
            .as_deref()
            .is_some_and(|e| EngineKind::parse(e) != Some(k))
        {
            return Err(usage(
                "--engine",
                format!("{ep} runs on the {} engine", k.name()),
            ));
        }
        return Ok((budget_ns, size, Some(k)));
    }
    let explicit = a
        .engine
        .as_deref()
        .map(|e| {
            EngineKind::parse(e)
                .filter(|k| EngineKind::fallbacks().contains(k))
                .ok_or_else(|| {
                    usage(
                        "--engine",
                        format!("'{e}' is not one of io_uring, aio, psync"),
                    )
                })
        })
        .transpose()?;
    Ok((budget_ns, size, explicit))
}

/// DIR, a directory of this machine (on hosts it is theirs).
fn check_local_dir(a: &RunSettings) -> anyhow::Result<()> {
    if !a.dir.is_dir() {
        return Err(usage(
            "DIR",
            format!("{} is not a directory", a.dir.display()),
        ));
    }
    Ok(())
}

/// The first engine that works on the target (io_uring may be disabled by
/// sysctl, seccomp or an old kernel), with a warning for each that does not.
fn choose_engine(target: &Target, warnings: &mut Vec<String>) -> anyhow::Result<EngineKind> {
    for e in EngineKind::fallbacks() {
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
    steps: &[RunStep],
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
            // The quick profile has no database step: no need to say so,
            // unless a remote target is why it cannot run.
            if s.kind != StepKind::Kv || target.remote.is_some() {
                warnings.push(format!("step '{}' skipped: {why}", s.title));
            }
        }
    }
    results.warnings = warnings;
    Ok(results)
}

/// The jobs of the plan's active steps, in order, with their step.
fn plan_jobs(steps: &[RunStep]) -> Vec<(&'static str, StepKind, JobSpec)> {
    active_jobs(steps)
        .into_iter()
        .map(|(s, j)| (s.id, s.kind, j.clone()))
        .collect()
}

/// The session driver of a run: `results.json` kept current after every
/// point, progress on a terminal; the jobs run `passes` times (targets x
/// rounds of a media run, else 1).
fn driver<'a>(
    a: &RunSettings,
    target: &'a Target,
    results: Results,
    json_path: &Path,
    observer: &'a dyn crate::session::Observer,
    jobs: &[(&'static str, StepKind, JobSpec)],
    passes: usize,
) -> anyhow::Result<Driver<'a>> {
    let sink = ResultsSink::new(
        results,
        Some(json_path.to_path_buf()),
        AnalysisOptions::across_steps(),
    );
    let planned_s = jobs.iter().map(|(_, _, j)| job_ns(j)).sum::<u64>() as f64 / 1e9;
    Ok(Driver::new(
        target,
        sink,
        observer,
        None,
        !a.quiet && std::io::stderr().is_terminal(),
        (jobs.len() * passes, planned_s * passes as f64),
    )
    .with_status_interval(crate::session::checked_status_interval(a.status_interval)?))
}

/// The output directory may exist, but what iolab would replace in it must
/// be iolab's own (or `--force`).
pub(crate) fn check_outputs(dir: &Path, force: bool) -> anyhow::Result<()> {
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
    } else {
        // Made later, with any missing parents (`-o results/run-1` in a fresh
        // clone has no results/): the nearest existing ancestor must take it.
        let mut parent = output::parent_dir(dir).to_path_buf();
        while !parent.exists() {
            match parent.parent() {
                Some(p) if !p.as_os_str().is_empty() => parent = p.to_path_buf(),
                _ => parent = std::path::PathBuf::from("."),
            }
        }
        if !parent.is_dir() {
            return Err(usage(
                "--output",
                format!("{}: {} is not a directory", dir.display(), parent.display()),
            ));
        }
        output::writable_dir(dir, &parent).map_err(|why| usage("--output", why))?;
    }
    Ok(())
}

/// A job's planned time: runtime plus ramp.
fn job_ns(j: &JobSpec) -> u64 {
    j.stop.runtime_ns.unwrap_or(0) + j.ramp_ns
}

/// `iolab run`: on one target (or a remote export), over several
/// (`media`: `--make`, several targets), and either on this machine or
/// with its device jobs on several hosts at once (`hosts`: the caller
/// refused what cannot run there; `--dry-run` contacts none).
pub fn run(
    mut a: RunSettings,
    media: &MediaFlags,
    hosts: Option<OnHosts>,
    presenter: &Presenter,
) -> anyhow::Result<()> {
    if let Some(r) = &a.runtime {
        return Err(crate::error::usage(
            "--runtime",
            format!("run fits its steps into a total time: --budget {r} (--runtime is the time of one point in device, kv, remote and trace)"),
        ));
    }
    let all: Vec<PathBuf> = a.dirs.iter().chain(&a.target).cloned().collect();
    if crate::campaign::setups::is_media_run(media, all.len()) {
        return media::run(a, media, &all, presenter, hosts);
    }
    crate::campaign::setups::refuse_without_media(media)?;
    let default_dir = if hosts.is_some() { "/var/tmp" } else { "." };
    a.dir = all
        .into_iter()
        .next()
        .unwrap_or_else(|| PathBuf::from(default_dir));
    // On hosts DIR is theirs (commands/run.rs refused an export there).
    let remote = match hosts {
        Some(_) => None,
        None => crate::plan::endpoint::endpoint_of(&a.dir)?,
    };
    let (budget_ns, size, explicit) = parse_options(&a, remote.as_ref())?;
    if remote.is_none() && hosts.is_none() {
        check_local_dir(&a)?;
    }
    let base = JobSpec {
        engine: explicit.unwrap_or(EngineKind::default_local()),
        seed: a.seed,
        ..JobSpec::default()
    };
    let why_not = match hosts {
        Some(_) => steps_not_on_hosts(),
        None => steps_that_cannot_run(remote.as_ref()),
    };
    let steps = budgeted_plan(&a.profile, &base, (budget_ns, 1), &why_not, a.remote)?;
    // The results go to this machine's directory: DIR's unless DIR is an
    // export or the hosts'.
    let dir = out_dir(&a, remote.is_some() || hosts.is_some());
    check_outputs(&dir, a.force)?;
    if a.dry_run {
        let on = hosts
            .as_ref()
            .map(|h| format!(" on {} host(s) ({})", h.names.len(), h.names.join(", ")))
            .unwrap_or_default();
        let header = format!(
            "iolab run on {}{on} with a budget of {}:",
            a.dir.display(),
            format_ns(budget_ns as f64)
        );
        print_plan(&steps, &header);
        return Ok(());
    }
    interrupt::install();
    let plan = OnePlan {
        base,
        steps,
        why_not,
        budget_ns,
        size,
        explicit,
    };
    let placed = match hosts {
        None => place_here(&a, remote.is_some(), plan)?,
        Some(h) => place_on_hosts(&a, h, plan)?,
    };
    run_placed(&a, placed, &dir, presenter)
}

/// The plan of a run on one target, before its target is placed.
struct OnePlan {
    base: JobSpec,
    steps: Vec<RunStep>,
    why_not: Vec<(StepKind, String)>,
    budget_ns: u64,
    size: Option<u64>,
    explicit: Option<EngineKind>,
}

/// A run's plan with its target: prepared here, or on every host of the
/// placement (each host makes its own scratch file in DIR).
struct Placed {
    target: Target,
    steps: Vec<RunStep>,
    budget_ns: u64,
    warnings: Vec<String>,
    hosts: Option<FleetPlacement>,
}

/// The target prepared on this machine (a scratch file in DIR, or the
/// export), the engine chosen by trying them on it unless given.
fn place_here(a: &RunSettings, remote: bool, mut p: OnePlan) -> anyhow::Result<Placed> {
    let topts = if remote {
        TargetOptions {
            path: Some(a.dir.clone()),
            size: p.size,
            overwrite: a.overwrite,
            ..Default::default()
        }
    } else {
        let scratch_size = p.size.unwrap_or(dut::DEFAULT_SCRATCH_SIZE);
        if !a.quiet {
            eprintln!(
                "iolab: preparing a {} MiB scratch file in {}...",
                scratch_size >> 20,
                a.dir.display()
            );
        }
        TargetOptions {
            path: Some(a.dir.clone()),
            size: Some(scratch_size),
            ..Default::default()
        }
    };
    let target = dut::prepare(&topts, true, None, a.seed)?;
    let mut warnings = Vec::new();
    if p.explicit.is_none() {
        let e = choose_engine(&target, &mut warnings)?;
        if e != p.base.engine {
            p.base.engine = e;
            let budget = (p.budget_ns, 1);
            p.steps = budgeted_plan(&a.profile, &p.base, budget, &p.why_not, a.remote)?;
        }
    }
    Ok(Placed {
        target,
        steps: p.steps,
        budget_ns: p.budget_ns,
        warnings,
        hosts: None,
    })
}

/// Every host connected, each making its scratch file in DIR (the
/// default engine or `--engine`: not probed there, where a job that
/// fails loses the host).
fn place_on_hosts(a: &RunSettings, hosts: OnHosts, p: OnePlan) -> anyhow::Result<Placed> {
    let scratch_size = p.size.unwrap_or(dut::DEFAULT_SCRATCH_SIZE);
    let placement = (hosts.connect)(JobTarget {
        dir: Some(a.dir.display().to_string()),
        size: Some(scratch_size),
        overwrite: false,
        ..JobTarget::default()
    })?;
    Ok(Placed {
        target: Target::none(scratch_size),
        steps: p.steps,
        budget_ns: p.budget_ns,
        warnings: Vec::new(),
        hosts: Some(placement),
    })
}

/// Every job of the plan through one driver, on the placed target; the
/// report and the summary. On hosts a point partial or failed (a host
/// lost) makes the exit 1.
fn run_placed(
    a: &RunSettings,
    placed: Placed,
    dir: &Path,
    presenter: &Presenter,
) -> anyhow::Result<()> {
    let Placed {
        target,
        steps,
        budget_ns,
        warnings,
        hosts,
    } = placed;
    std::fs::create_dir_all(dir)
        .map_err(|e| usage("--output", format!("cannot create {}: {e}", dir.display())))?;
    let jobs = plan_jobs(&steps);
    let mut results = start_results(&target, a.seed, &jobs, &steps, warnings)?;
    let on_hosts = hosts.is_some();
    if let Some(p) = &hosts {
        on_hosts_results(&mut results, &steps, p);
    }
    let json_path = dir.join("results.json");
    let observer = (presenter.progress)(a.quiet);
    let observer = &*observer;
    let mut driver = driver(a, &target, results, &json_path, observer, &jobs, 1)?;
    if let Some(p) = hosts {
        driver = driver.with_hosts(Box::new(p));
    }
    let mut runner = StepRunner::new(a, &target, steps, budget_ns, driver, dir.to_path_buf());
    runner.record_plan();
    runner.driver.save()?;
    let t0 = Instant::now();
    let ran = runner.run_all(&jobs);
    runner.finish_remote();
    ran?;
    runner.record_plan();
    // On hosts the fleet goes with the driver: every agent says bye and
    // removes its scratch file.
    let outcome = runner.driver.finish()?;
    drop(target);
    let failures = outcome.failures;
    finish(outcome.results, &json_path, dir, a.quiet, t0, presenter)?;
    if on_hosts && failures > 0 {
        anyhow::bail!(
            "{failures} point(s) partial or failed (see the warnings in {})",
            json_path.display()
        );
    }
    Ok(())
}

/// A run on hosts' results: no target of this machine, the hosts, and the
/// database step's skip said (`start_results` leaves out the quick
/// profile's own; on hosts it is always said).
fn on_hosts_results(results: &mut Results, steps: &[RunStep], p: &FleetPlacement) {
    results.provenance.target = None;
    for s in steps.iter().filter(|s| s.kind == StepKind::Kv) {
        if let Some(why) = &s.skipped {
            results
                .warnings
                .push(format!("step '{}' skipped: {why}", s.title));
        }
    }
    results.extra.hosts = Some(p.describe());
}

/// Where a run's device jobs go with `--hosts`.
pub struct OnHosts<'c> {
    /// The hosts as the user named them (for the plan).
    pub names: Vec<String>,
    /// Connect to every host, the jobs' target on each (exit 2 naming each
    /// host that cannot be reached; nothing left anywhere then).
    pub connect: Box<dyn FnOnce(JobTarget) -> anyhow::Result<FleetPlacement> + 'c>,
}

/// The steps that cannot run on hosts, and why.
pub(super) fn steps_not_on_hosts() -> Vec<(StepKind, String)> {
    let not = "not on --hosts:";
    vec![
        (
            StepKind::Trace,
            format!("{not} tracing reads this machine's block layer"),
        ),
        (
            StepKind::Kv,
            format!("{not} the database step runs in a directory of this machine"),
        ),
        (
            StepKind::Remote,
            format!("{not} the remote step serves this machine's scratch file"),
        ),
    ]
}

/// Mark the end, write the other formats into `dir` (report.html) and the
/// summary; the exit status.
pub(crate) fn finish(
    results: Results,
    json_path: &Path,
    dir: &Path,
    quiet: bool,
    t0: Instant,
    presenter: &Presenter,
) -> anyhow::Result<()> {
    let secs = t0.elapsed().as_secs_f64();
    presenter.close(&results, (dir, Some(json_path)), secs, quiet)?;
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
