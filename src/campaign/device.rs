//! The device workload of a campaign (`iolab device` over several
//! targets or `--make`): build the configurations, prepare the given
//! targets, measure every job on every target round by round through one
//! session `Driver` (`run_rounds`: one pass per job), and print the
//! comparison (`analysis.media`). With `--hosts` the driver's placement
//! runs every pass on every host at once, each setup a directory or
//! export on all of them (`FleetPlacement::with_setups`). Everything built or created is a guard,
//! dropped at the end, on an error and after Ctrl-C.

use std::io::IsTerminal;
use std::path::PathBuf;

use super::driver::{run_rounds, Order, PassOutcome, Schedule, Workload};
use super::given::{self as media_targets, GivenTarget};
use super::overhead::Overhead;
use super::pass::Pass;
use super::setups::{MediaSet, Subject};
use crate::analysis::media::legacy_rows;
use crate::analysis::AnalysisOptions;
use crate::dut::{self, Target, TargetOptions};
use crate::error::VerifyFailed;
use crate::fleet::{FleetPlacement, JobTarget};
use crate::interrupt;
use crate::plan::job::JobSpec;
use crate::results::{Provenance, Results};
use crate::session::Presenter;
use crate::session::{Driver, ResultsSink, Tags};
use crate::testbed::media::{MediaKind, Medium};

/// The checked settings of a media run.
pub struct DeviceMediaPlan {
    /// The targets (given, then made), the rounds and the baseline.
    pub set: MediaSet,
    /// Each subject's jobs (their engine may differ: a remote target's
    /// jobs use its transport's engine unless `--engine` was given).
    pub jobs: Vec<Vec<JobSpec>>,
    /// The workload of each job: the part of the point name after
    /// `LABEL rN: ` (without the engine when targets' engines differ).
    pub workloads: Vec<String>,
    /// Bytes of every scratch file and configuration (`--size`).
    pub size: u64,
    /// The `--size` given (files and devices are else used whole).
    pub size_given: Option<u64>,
    /// Per subject: the `--destroy-data` naming its device.
    pub destroy: Vec<Option<PathBuf>>,
    pub writes: bool,
    /// `--overwrite`, `--keep`: how a given target is prepared.
    pub overwrite: bool,
    pub keep: bool,
    pub quiet: bool,
    pub seed: u64,
    /// `--json`.
    pub json: Option<PathBuf>,
}

impl DeviceMediaPlan {
    /// The measured seconds of one round (every job on every target).
    pub fn round_secs(&self) -> f64 {
        self.jobs
            .iter()
            .flatten()
            .map(|j| (j.stop.runtime_ns.unwrap_or(0) + j.ramp_ns) as f64 / 1e9)
            .sum()
    }

    /// The options a given target is checked and prepared with.
    pub fn options(&self, i: usize, t: &GivenTarget) -> dut::TargetOptions {
        media_targets::options_for(
            t,
            Some(self.size_given.unwrap_or(self.size)).filter(|_| {
                self.size_given.is_some()
                    || (t.remote().is_none() && (t.path.is_dir() || !t.path.exists()))
            }),
            self.overwrite,
            self.destroy[i].clone(),
            self.keep,
        )
    }
}

/// The run, on this machine or (`hosts`: connected, the setups given as
/// directories or exports on every host) with every pass on all of them
/// at once: the setups then are the hosts' (each prepares its own scratch
/// file per pass), and nothing is built or prepared here.
pub fn run(
    plan: &DeviceMediaPlan,
    presenter: &Presenter,
    hosts: Option<FleetPlacement>,
) -> anyhow::Result<()> {
    interrupt::install();
    let quiet = plan.quiet;
    let t0 = std::time::Instant::now();
    let mut overhead = Overhead::start();
    let (media, targets) = match &hosts {
        None => {
            let media = plan.set.build(plan.size, quiet)?;
            let targets = prepare(plan, &media)?;
            (media, targets)
        }
        Some(_) => {
            let none = plan.set.subjects.iter().map(|_| Target::none(plan.size));
            (Vec::new(), none.collect())
        }
    };
    let hosts = match hosts {
        Some(mut h) => {
            h.make(&plan.set.make_requests(plan.size))?;
            Some(h.with_setups(host_setups(plan)))
        }
        None => None,
    };
    overhead.rounds_start();
    let (mut results, tally) = measure(plan, &media, &targets, presenter, hosts)?;
    overhead.rounds_end();
    drop(targets);
    drop(media);
    overhead.save_into(&mut results);
    if let Some(p) = plan.json.as_deref().filter(|p| p.as_os_str() != "-") {
        results.write_atomic(p)?;
    }
    let secs = t0.elapsed().as_secs_f64();
    let out = (std::path::Path::new("."), plan.json.as_deref());
    presenter.close(&results, out, secs, quiet)?;
    tally.exit(&results, "device", |mismatches| {
        VerifyFailed { mismatches }.into()
    })
}

/// Each setup's target on every host: its directory (a scratch file of
/// `--size` in it, made by each host per pass), the configuration each
/// host built, or the export they share.
fn host_setups(plan: &DeviceMediaPlan) -> Vec<JobTarget> {
    plan.set
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
            size: Some(plan.size_given.unwrap_or(plan.size)),
            overwrite: plan.overwrite,
        })
        .collect()
}

/// `extra.media`'s targets of a run on hosts: each setup as given (the
/// hosts made their own scratch files in it) or built on every host.
fn hosts_record(plan: &DeviceMediaPlan) -> crate::results::sections::media::MediaRecord {
    use crate::results::sections::media::{MediaTarget, PreparedTarget};
    let targets = plan
        .set
        .subjects
        .iter()
        .map(|s| {
            MediaTarget::Prepared(PreparedTarget {
                label: s.label(),
                path: match s {
                    Subject::Given(t) => t.path.display().to_string(),
                    Subject::Made(_) => plan.set.make_in.display().to_string(),
                },
                kind: "on every host".into(),
                size_bytes: plan.size_given.unwrap_or(plan.size),
                made: matches!(s, Subject::Made(_)),
            })
        })
        .collect();
    plan.set.record(targets, &[])
}

/// Every subject's target, in subject order: a built configuration's
/// scratch file or loop device, or a given target prepared by its kind's
/// rules (a scratch file in a directory, removed at the end).
fn prepare(plan: &DeviceMediaPlan, media: &[Medium]) -> anyhow::Result<Vec<Target>> {
    let mut made = media.iter();
    let mut targets = Vec::new();
    for (i, s) in plan.set.subjects.iter().enumerate() {
        if interrupt::stop_requested() {
            return Err(crate::error::Interrupted.into());
        }
        let t = match s {
            Subject::Made(_) => {
                let m = made.next().expect("one medium per configuration");
                target_on(m, plan.size, plan.writes, plan.seed)?
            }
            Subject::Given(t) => {
                if !plan.quiet && t.path.is_dir() {
                    eprintln!(
                        "iolab: preparing a {} MiB scratch file in {} ...",
                        plan.size >> 20,
                        t.path.display()
                    );
                }
                dut::prepare(&plan.options(i, t), plan.writes, None, plan.seed)
                    .map_err(|e| media_targets::name_target(t, e))?
            }
        };
        targets.push(t);
    }
    Ok(targets)
}

/// The jobs' target on a built configuration: a scratch file in its file
/// system, or its loop device (iolab's own, so writes are allowed).
pub(crate) fn target_on(m: &Medium, size: u64, writes: bool, seed: u64) -> anyhow::Result<Target> {
    let raw = m.kind == MediaKind::Raw;
    dut::prepare(
        &TargetOptions {
            path: Some(m.target.clone()),
            size: if raw { None } else { Some(size) },
            destroy_data: raw.then(|| m.target.clone()),
            ..Default::default()
        },
        writes,
        None,
        seed,
    )
}

/// A warning when the targets address different amounts of data (a file
/// or a device used whole beside scratch files): the working sets differ.
fn size_warning(plan: &DeviceMediaPlan, targets: &[Target]) -> Option<String> {
    let first = targets.first()?.size;
    if targets.iter().all(|t| t.size == first) {
        return None;
    }
    let sizes: Vec<String> = plan
        .set
        .labels()
        .iter()
        .zip(targets)
        .map(|(l, t)| format!("{l} {} MiB", t.size >> 20))
        .collect();
    Some(format!(
        "the targets address different sizes ({}): give --size to compare equal working sets",
        sizes.join(", ")
    ))
}

fn measure(
    plan: &DeviceMediaPlan,
    media: &[Medium],
    targets: &[Target],
    presenter: &Presenter,
    hosts: Option<FleetPlacement>,
) -> anyhow::Result<(Results, super::Tally)> {
    let mut provenance = Provenance::collect(plan.seed);
    provenance.target = hosts.is_none().then(|| targets[0].info());
    provenance.plan = serde_json::to_value(&plan.jobs[0])?;
    let mut results = Results::new("device", provenance);
    results.warnings.extend(results.provenance.busy_warning());
    match &hosts {
        None => {
            results.warnings.extend(size_warning(plan, targets));
            results.extra.media = Some(plan.set.record_targets(targets, media));
        }
        Some(h) => {
            results.extra.hosts = Some(h.describe());
            results.extra.media = Some(hosts_record(plan));
        }
    }
    let json = plan.json.clone().filter(|p| p.as_os_str() != "-");
    let sink = ResultsSink::new(results, json, AnalysisOptions::default());
    let observer = (presenter.progress)(plan.quiet);
    let observer = &*observer;
    let per_round = plan.round_secs();
    let points = plan.workloads.len() * plan.set.subjects.len() * plan.set.rounds as usize;
    let mut driver = Driver::new(
        &targets[0],
        sink,
        observer,
        None,
        !plan.quiet && std::io::stderr().is_terminal(),
        (points, per_round * plan.set.rounds as f64),
    );
    if let Some(h) = hosts {
        driver = driver.with_hosts(Box::new(h));
    }
    driver.save()?;
    let schedule = Schedule::of(&plan.set, Order::SetupMajor);
    let mut passes = DevicePasses {
        plan,
        targets,
        driver,
    };
    let tally = run_rounds(&schedule, &mut passes)?;
    let mut results = passes.driver.finish()?.results;
    // The rows in the shape extra.media.rows had before analysis.media.
    if let (Some(m), Some(extra)) = (&results.analysis.media, results.extra.media.as_mut()) {
        extra.rows = Some(legacy_rows(m));
    }
    Ok((results, tally))
}

/// The job list as a campaign workload: one pass is one job on one target.
struct DevicePasses<'a> {
    plan: &'a DeviceMediaPlan,
    targets: &'a [Target],
    driver: Driver<'a>,
}

impl Workload for DevicePasses<'_> {
    fn parts(&self) -> Vec<Option<String>> {
        vec![None; self.plan.workloads.len()]
    }

    fn run_pass(&mut self, pass: &Pass, setup: usize, part: usize) -> anyhow::Result<PassOutcome> {
        let id = pass.id(&self.plan.workloads[part]);
        let params = pass.params();
        let tags = Tags {
            experiment: "",
            params: &params,
            extra: &[],
            pass: Some(&id),
        };
        let job = JobSpec {
            name: id.name(),
            ..self.plan.jobs[setup][part].clone()
        };
        self.driver.select_setup(setup);
        self.driver
            .run_point_on(&self.targets[setup], &job, &tags)?;
        Ok(PassOutcome::done())
    }

    fn failed(&mut self, what: &str) {
        self.driver.warn(what.to_string());
    }
}
