//! `iolab run` over several targets (`iolab run A B ... --baseline L`,
//! `--make`, `--rounds`; docs/media.md): the same plan on every target,
//! one results directory whose report has the media sections.
//!
//! A target is a directory (a scratch file in it, and the kv step's
//! database) or a configuration iolab builds (`raw` runs the device steps
//! on the loop device; the kv step is skipped there). The budget is the
//! whole run's: each target gets an equal share of every round, so the
//! plan of one pass is the plan of `--budget / (targets x rounds)`. The
//! plan runs job by job: every job on every target (in the round's
//! order, reversed every other round), then the next job, so each
//! workload is measured on every target minutes apart; the kv step runs
//! whole on each target (a fresh database each time), and the
//! load-latency step's rates are relative to each target's own
//! closed-loop maximum of the same round. The stack breakdown and
//! `--remote` are not part of a media run (`iolab trace`, `iolab remote`).
//! With `--hosts` every target is a directory on every host and every job
//! runs on all of them at once (the driver's `FleetPlacement`, its setup
//! selected per pass); the database step is dropped there.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::steps::StepRunner;
use super::{
    budgeted_plan, check_local_dir, check_outputs, choose_engine, driver, finish, kv,
    on_hosts_results, parse_options, plan_jobs, print_plan, start_results, steps_not_on_hosts,
    OnHosts, RunSettings,
};
use crate::campaign::device::target_on;
use crate::campaign::setups::MediaFlags;
use crate::campaign::setups::{self as media_set, MediaSet, Subject};
use crate::campaign::{run_rounds, Order, Overhead, Pass, PassOutcome, Schedule, Workload};
use crate::dut::{self, Target, TargetOptions};
use crate::error::usage;
use crate::fleet::JobTarget;
use crate::interrupt;
use crate::plan::engines::EngineKind;
use crate::plan::job::JobSpec;
use crate::plan::parse::format_ns;
use crate::plan::run_plan::{StepKind, MIB};
use crate::results::time;
use crate::session::Presenter;
use crate::testbed::media::{MediaKind, Medium};

/// Scratch file size of each target when `--size` is not given (as in
/// `device`'s media runs: several targets, and configurations to build).
const DEFAULT_SIZE: u64 = 256 * MIB;

/// The checked settings of a media run of `iolab run`.
struct RunMedia {
    set: MediaSet,
    budget_ns: u64,
    /// One pass's share of the budget (a target in a round).
    pass_ns: u64,
    scratch: u64,
    explicit: Option<EngineKind>,
}

/// On hosts: every target a directory on each of them (an absolute path;
/// the configurations are built there).
fn check_on_hosts(set: &MediaSet) -> anyhow::Result<()> {
    if let Some((_, t)) = set.given().find(|(_, t)| !t.path.is_absolute()) {
        return Err(usage(
            "DIR",
            format!(
                "with --hosts DIR is a directory on every host, given as an absolute path (not {})",
                t.path.display()
            ),
        ));
    }
    Ok(())
}

/// The flags, the targets and the budget, checked before anything is made
/// (on hosts, `on_hosts`, the targets are theirs: `check_on_hosts`).
fn check(
    a: &mut RunSettings,
    media: &MediaFlags,
    all: &[PathBuf],
    on_hosts: bool,
) -> anyhow::Result<RunMedia> {
    let set = MediaSet::parse(media, all)?;
    if a.remote {
        return Err(usage(
            "--remote",
            "is not combined with several targets or --make (iolab remote compares transports)",
        ));
    }
    if on_hosts {
        check_on_hosts(&set)?;
    }
    for (_, t) in set.given().filter(|_| !on_hosts) {
        media_set::check_writable_dir(t, "iolab run")?;
    }
    if !on_hosts {
        set.check_made()?;
    }
    a.dir = set
        .given()
        .next()
        .map(|(_, t)| t.path.clone())
        .unwrap_or_else(|| set.make_in.clone());
    let (budget_ns, size, explicit) = parse_options(a, None)?;
    if !on_hosts {
        check_local_dir(a)?;
    }
    let passes = (set.subjects.len() * set.rounds as usize) as u64;
    let pass_ns = budget_ns / passes;
    if pass_ns < 1_000_000_000 {
        return Err(usage(
            "--budget",
            format!(
                "is the whole run's: {passes} passes (targets x rounds) get under 1 s each; give at least {passes}s"
            ),
        ));
    }
    let scratch = size.unwrap_or(DEFAULT_SIZE);
    for (_, t) in set.given().filter(|_| !on_hosts) {
        let opts = TargetOptions {
            path: Some(t.path.clone()),
            size: Some(scratch),
            ..Default::default()
        };
        dut::check(&opts, true).map_err(|e| crate::campaign::given::name_target(t, e))?;
    }
    Ok(RunMedia {
        set,
        budget_ns,
        pass_ns,
        scratch,
        explicit,
    })
}

impl RunMedia {
    /// Passes (targets x rounds) that share `--budget`.
    fn passes(&self) -> u64 {
        (self.set.subjects.len() * self.set.rounds as usize) as u64
    }
}

/// Steps that a media run does not take, and why (`on_hosts`: nor the
/// database step).
fn not_in_a_media_run(on_hosts: bool) -> Vec<(StepKind, String)> {
    let hosts = steps_not_on_hosts().into_iter().filter(|_| on_hosts);
    hosts
        .chain([
            (
                StepKind::Trace,
                "not in a media run (iolab trace traces one target)".into(),
            ),
            (
                StepKind::Remote,
                "not in a media run (iolab remote compares transports)".into(),
            ),
        ])
        .collect()
}

/// The media run, here or with every job on every host of `hosts`.
pub fn run(
    mut a: RunSettings,
    media_args: &MediaFlags,
    all: &[PathBuf],
    presenter: &Presenter,
    hosts: Option<OnHosts>,
) -> anyhow::Result<()> {
    let m = check(&mut a, media_args, all, hosts.is_some())?;
    let mut base = JobSpec {
        engine: m.explicit.unwrap_or(EngineKind::default_local()),
        seed: a.seed,
        ..JobSpec::default()
    };
    let why_not = not_in_a_media_run(hosts.is_some());
    let mut steps = budgeted_plan(&a.profile, &base, (m.pass_ns, m.passes()), &why_not, false)?;
    if a.dry_run {
        print_targets(&m);
        let header = format!(
            "  every job on every target in the round's order, then the next job; a target's share of a round, {} of the {} budget:",
            format_ns(m.pass_ns as f64),
            format_ns(m.budget_ns as f64)
        );
        print_plan(&steps, &header);
        return Ok(());
    }
    // On hosts the directories are theirs: the results go here.
    let base_dir = if hosts.is_some() {
        Path::new(".")
    } else {
        a.dir.as_path()
    };
    let dir = a.output.clone().unwrap_or_else(|| {
        base_dir.join(format!(
            "iolab-{}",
            time::compact(std::time::SystemTime::now())
        ))
    });
    check_outputs(&dir, a.force)?;
    interrupt::install();
    let mut overhead = Overhead::start();
    let placed = match hosts {
        None => {
            let media = m.set.build(room(&m, &steps, a.seed)?, a.quiet)?;
            let targets = prepare(&a, &m, &media)?;
            let mut warnings = Vec::new();
            if m.explicit.is_none() {
                let e = choose_engine(&targets[0], &mut warnings)?;
                if e != base.engine {
                    base.engine = e;
                    let share = (m.pass_ns, m.passes());
                    steps = budgeted_plan(&a.profile, &base, share, &why_not, false)?;
                }
            }
            PlacedMedia {
                dirs: kv_dirs(&m.set, &media),
                media,
                targets,
                warnings,
                hosts: None,
            }
        }
        Some(h) => {
            let setups = host_setups(&m);
            let mut placement = (h.connect)(setups[0].clone())?;
            placement.make(&m.set.make_requests(m.scratch))?;
            let placement = placement.with_setups(setups);
            let none = m.set.subjects.iter().map(|_| Target::none(m.scratch));
            PlacedMedia {
                dirs: vec![None; m.set.subjects.len()],
                media: Vec::new(),
                targets: none.collect(),
                warnings: Vec::new(),
                hosts: Some(placement),
            }
        }
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| usage("--output", format!("cannot create {}: {e}", dir.display())))?;
    let jobs = plan_jobs(&steps);
    let targets = &placed.targets;
    let mut results = start_results(&targets[0], a.seed, &jobs, &steps, placed.warnings)?;
    results.extra.media = Some(match &placed.hosts {
        None => m.set.record_targets(targets, &placed.media),
        Some(p) => {
            on_hosts_results(&mut results, &steps, p);
            m.set
                .record_directories(&m.set.host_directories(), &[], false)
        }
    });
    let json_path = dir.join("results.json");
    let observer = (presenter.progress)(a.quiet);
    let observer = &*observer;
    let passes = m.set.subjects.len() * m.set.rounds as usize;
    let mut driver = driver(
        &a,
        &targets[0],
        results,
        &json_path,
        observer,
        &jobs,
        passes,
    )?;
    if let Some(p) = placed.hosts {
        driver = driver.with_hosts(Box::new(p));
    }
    let mut runner = StepRunner::new(&a, &targets[0], steps, m.budget_ns, driver, dir.clone());
    runner.record_plan();
    runner.driver.save()?;
    let t0 = Instant::now();
    overhead.rounds_start();
    let schedule = Schedule::of(&m.set, Order::PartMajor);
    let mut passes = RunPasses {
        runner: &mut runner,
        jobs: &jobs,
        targets,
        dirs: placed.dirs,
    };
    let ran = run_rounds(&schedule, &mut passes);
    overhead.rounds_end();
    ran?;
    runner.record_plan();
    let mut results = runner.driver.finish()?.results;
    drop(placed.targets);
    drop(placed.media);
    overhead.save_into(&mut results);
    results.write_atomic(&json_path)?;
    finish(results, &json_path, &dir, a.quiet, t0, presenter)
}

/// The setups of a media run, placed: here (configurations built, each
/// target prepared) or on the hosts (each makes its scratch files).
struct PlacedMedia {
    media: Vec<Medium>,
    targets: Vec<Target>,
    /// Each setup's database directory (none on `raw`, nor on hosts).
    dirs: Vec<Option<PathBuf>>,
    warnings: Vec<String>,
    hosts: Option<crate::fleet::FleetPlacement>,
}

/// Each setup's target on every host: a scratch file of the run's size
/// in its directory, or in the configuration each host built.
fn host_setups(m: &RunMedia) -> Vec<JobTarget> {
    m.set
        .subjects
        .iter()
        .map(|s| JobTarget {
            dir: match s {
                Subject::Given(t) => Some(t.path.display().to_string()),
                Subject::Made(_) => None,
            },
            made: match s {
                Subject::Made(k) => Some(k.name()),
                Subject::Given(_) => None,
            },
            size: Some(m.scratch),
            overwrite: false,
        })
        .collect()
}

/// `run`'s plan as a campaign workload: one pass is one job of the plan
/// on one target (every job on every target, then the next job).
struct RunPasses<'r, 'a> {
    runner: &'r mut StepRunner<'a>,
    jobs: &'r [(&'static str, StepKind, JobSpec)],
    targets: &'a [Target],
    dirs: Vec<Option<PathBuf>>,
}

impl Workload for RunPasses<'_, '_> {
    fn parts(&self) -> Vec<Option<String>> {
        vec![None; self.jobs.len()]
    }

    fn run_pass(&mut self, pass: &Pass, setup: usize, part: usize) -> anyhow::Result<PassOutcome> {
        let (step_id, kind, job) = &self.jobs[part];
        self.runner
            .switch(&self.targets[setup], self.dirs[setup].clone(), pass.clone());
        self.runner.driver.select_setup(setup);
        self.runner.run_job_unless_skipped(step_id, *kind, job)?;
        Ok(PassOutcome::done())
    }

    fn failed(&mut self, what: &str) {
        self.runner.driver.warn(what.to_string());
    }
}

/// Where each subject's kv step makes its database: a given directory,
/// a configuration's file system; none on `raw`.
fn kv_dirs(set: &MediaSet, media: &[Medium]) -> Vec<Option<PathBuf>> {
    let mut made = media.iter();
    set.subjects
        .iter()
        .map(|s| match s {
            Subject::Given(t) => Some(t.path.clone()),
            Subject::Made(_) => {
                let m = made.next().expect("one medium per configuration");
                (m.kind != MediaKind::Raw).then(|| m.target.clone())
            }
        })
        .collect()
}

/// Room for the data in each configuration: the scratch file and four
/// times what the kv step loads (its workloads share one database).
fn room(m: &RunMedia, steps: &[super::RunStep], seed: u64) -> anyhow::Result<u64> {
    let kv = steps
        .iter()
        .filter(|s| s.kind == StepKind::Kv && s.skipped.is_none())
        .find_map(|s| s.kv);
    let kv_bytes = match kv {
        Some(timing) => {
            let plan = kv::plan(Path::new("."), timing, seed)?;
            plan.load_bytes().0 * kv::WORKLOADS.len() as u64
        }
        None => 0,
    };
    Ok(m.scratch + kv_bytes.saturating_mul(4))
}

/// Every subject's target: a scratch file in a given directory or in a
/// configuration's file system, or a `raw` configuration's loop device.
fn prepare(a: &RunSettings, m: &RunMedia, media: &[Medium]) -> anyhow::Result<Vec<Target>> {
    let mut made = media.iter();
    let mut targets = Vec::new();
    for s in &m.set.subjects {
        if interrupt::stop_requested() {
            return Err(crate::error::Interrupted.into());
        }
        let t = match s {
            Subject::Made(_) => {
                let medium = made.next().expect("one medium per configuration");
                target_on(medium, m.scratch, true, a.seed)?
            }
            Subject::Given(t) => {
                if !a.quiet {
                    eprintln!(
                        "iolab: preparing a {} MiB scratch file in {}...",
                        m.scratch >> 20,
                        t.path.display()
                    );
                }
                let opts = TargetOptions {
                    path: Some(t.path.clone()),
                    size: Some(m.scratch),
                    ..Default::default()
                };
                dut::prepare(&opts, true, None, a.seed)
                    .map_err(|e| crate::campaign::given::name_target(t, e))?
            }
        };
        targets.push(t);
    }
    Ok(targets)
}

fn print_targets(m: &RunMedia) {
    m.set.print("run", |s| match s {
        Subject::Made(k) => format!(
            "built in {}{}",
            m.set.make_in.display(),
            if *k == MediaKind::Raw {
                " (device steps on the loop device; no database step)"
            } else {
                ""
            }
        ),
        Subject::Given(t) => format!(
            "{} (a {} MiB scratch file in it)",
            t.path.display(),
            m.scratch >> 20
        ),
    });
}
