//! Media runs of `iolab device`: the same job list on several targets,
//! interleaved by rounds (A B C, then C B A, ...) so that drift on a
//! shared machine hits every target alike, in one results file. The
//! targets are configurations iolab builds (`--make ext4,xfs,raw`, see
//! `testbed::media`), targets of the user's own (`--target` given several
//! times, `[LABEL=]PATH`), or both (`--make-in DIR` says where the
//! configurations are built). Every point carries `medium` (the target's
//! label), `round` and `baseline`; `analysis.media` normalizes every
//! target to the baseline, and `extra.media` records the targets and how
//! each configuration was made (plus the rows in their pre-analysis shape).
//! This is the plan of such a run, checked before anything is built
//! (moved from commands/device_media.rs); the run is `campaign::device`.

use std::path::Path;

pub use crate::campaign::device::DeviceMediaPlan;
use crate::campaign::given::{self as media_targets, GivenTarget};
use crate::campaign::setups::MediaFlags;
use crate::campaign::setups::{MediaSet, Subject};
use crate::dut;
use crate::error::usage;
use crate::fleet::FleetPlacement;
use crate::plan::device_args::DeviceSettings;
use crate::plan::engines::{EngineKind, Opens};
use crate::plan::experiment::{Experiment, Mode};
use crate::plan::job::JobSpec;
use crate::session::Presenter;

/// Default bytes of every scratch file and configuration of a media run.
pub const DEFAULT_SIZE: u64 = 256 << 20;

/// Flags a media run does not combine with (refused rather than ignored).
fn refuse_unsupported(a: &DeviceSettings, field: &str) -> anyhow::Result<()> {
    let unsupported = [
        ("--fio-job", a.fio_job.is_some()),
        ("--log-dir", a.log_dir.is_some()),
        ("--breakdown", a.breakdown),
    ];
    if let Some((flag, _)) = unsupported.iter().find(|(_, on)| *on) {
        return Err(usage(
            *flag,
            format!("is not combined with {field} (a media run) yet"),
        ));
    }
    Ok(())
}

/// Check everything a media run needs before anything is built.
/// `experiments`: the run's experiments (the flags', a plan file's),
/// built after the checks of the targets.
pub fn plan(
    a: &DeviceSettings,
    media: &MediaFlags,
    experiments: impl FnOnce() -> anyhow::Result<Vec<Experiment>>,
) -> anyhow::Result<DeviceMediaPlan> {
    let field = if media.make.is_some() {
        "--make"
    } else {
        "--target"
    };
    let set = MediaSet::parse(media, &a.target)?;
    let given: Vec<GivenTarget> = set.given().map(|(_, t)| t.clone()).collect();
    if given.is_empty() && (!a.destroy_data.is_empty() || a.overwrite) {
        return Err(usage(
            "--make",
            "iolab builds the configurations' devices itself: --destroy-data and --overwrite do not apply",
        ));
    }
    refuse_unsupported(a, field)?;
    let mut destroy = media_targets::destroy_data_for(&given, &a.destroy_data)?;
    destroy.extend(set.made().map(|_| None));
    let exps = experiments()?;
    if exps
        .iter()
        .any(|e| e.mode != Mode::Plain || e.precondition.is_some() || e.purge)
    {
        return Err(usage(
            field,
            "runs plain job lists (sweeps included); open-loop rates, latency targets, steady state, precondition and purge are not combined with it yet",
        ));
    }
    let planned: Vec<JobSpec> = exps.into_iter().flat_map(|e| e.jobs).collect();
    let size_given = match &a.size {
        Some(s) => Some(s.bytes()).filter(|s| *s > 0),
        None => None,
    };
    if a.size.is_some() && size_given.is_none() {
        return Err(usage("--size", "size must be greater than 0"));
    }
    let (jobs, workloads) = jobs_per_subject(a, &set.subjects, &planned)?;
    Ok(DeviceMediaPlan {
        writes: planned.iter().any(|j| j.writes()),
        overwrite: a.overwrite,
        keep: a.keep,
        quiet: a.quiet,
        seed: a.seed,
        json: a.json.clone(),
        set,
        jobs,
        workloads,
        size: size_given.unwrap_or(DEFAULT_SIZE),
        size_given,
        destroy,
    })
}

/// The engine a subject's jobs run with: a remote target's transport
/// engine, else the planned one; an engine given with `--engine` must be
/// able to open the target.
fn engine_for(
    a: &DeviceSettings,
    s: &Subject,
    planned: EngineKind,
    local: EngineKind,
) -> anyhow::Result<EngineKind> {
    let explicit = a.given.iter().any(|g| g == "engine");
    let remote = match s {
        Subject::Given(t) => t.remote(),
        Subject::Made(_) => None,
    };
    let opens = planned.caps().opens;
    let value = match s {
        Subject::Given(t) => t.value.clone(),
        Subject::Made(k) => k.name(),
    };
    match (remote, explicit) {
        (Some(ep), false) => {
            crate::plan::engines::engine_for_transport(ep.transport).ok_or_else(|| {
                media_targets::name_target_text(&value, "no engine speaks its transport")
            })
        }
        (Some(ep), true) if opens != Opens::Remote(ep.transport) && opens != Opens::Nothing => {
            Err(usage(
                "--engine",
                format!("{} cannot open {value}", planned.name()),
            ))
        }
        (None, false) if matches!(opens, Opens::Remote(_)) => Ok(local),
        (None, true) if matches!(opens, Opens::Remote(_)) => Err(usage(
            "--engine",
            format!("{} opens remote targets only, not {value}", planned.name()),
        )),
        _ => Ok(planned),
    }
}

/// Every subject's jobs, and the workload names the points are named by.
fn jobs_per_subject(
    a: &DeviceSettings,
    subjects: &[Subject],
    planned: &[JobSpec],
) -> anyhow::Result<(Vec<Vec<JobSpec>>, Vec<String>)> {
    let local = crate::plan::sweep::parse_engine_axis("--engine", &a.engine, true)?
        .first()
        .copied()
        .filter(|e| !matches!(e.caps().opens, Opens::Remote(_)))
        .unwrap_or(EngineKind::default_local());
    let mut all = Vec::new();
    for s in subjects {
        let mut jobs = Vec::new();
        for j in planned {
            let mut job = j.clone();
            job.engine = engine_for(a, s, j.engine, local)?;
            if job.engine != j.engine {
                job.direct = j.direct && job.engine.caps().direct_io;
                job.validate().map_err(|e| match s {
                    Subject::Given(t) => media_targets::name_target(t, e),
                    Subject::Made(_) => e,
                })?;
            }
            jobs.push(job);
        }
        all.push(jobs);
    }
    let engines_vary = all.iter().any(|jobs: &Vec<JobSpec>| {
        jobs.iter()
            .zip(planned)
            .any(|(job, j)| job.engine != j.engine)
    });
    let workloads = planned
        .iter()
        .map(|j| {
            let default = j.default_name();
            match default.strip_suffix(&format!("-{}", j.engine_label())) {
                Some(w) if engines_vary && j.name == default => w.to_string(),
                _ => j.name.clone(),
            }
        })
        .collect();
    Ok((all, workloads))
}

/// Every check of the run, nothing created: the configurations can be
/// built here, every given target passes its kind's rules, the results
/// file is not one of them.
fn check(plan: &DeviceMediaPlan, a: &DeviceSettings) -> anyhow::Result<()> {
    plan.set.check_made()?;
    for (i, t) in plan.set.given() {
        // A new file at a mistyped path would still run: compare only what exists.
        if t.remote().is_none() && std::fs::symlink_metadata(&t.path).is_err() {
            return Err(media_targets::name_target_text(
                &t.value,
                "does not exist (give a directory, a file, a block device or a remote URL)",
            ));
        }
        dut::check(&plan.options(i, t), plan.writes)
            .map_err(|e| media_targets::name_target(t, e))?;
    }
    check_output(plan, a)
}

/// The results file is not one of the targets.
fn check_output(plan: &DeviceMediaPlan, a: &DeviceSettings) -> anyhow::Result<()> {
    if let Some(p) = a.json.as_deref().filter(|p| p.as_os_str() != "-") {
        let paths: Vec<&Path> = plan.set.given().map(|(_, t)| t.path.as_path()).collect();
        crate::results::output::check(p, "--json", a.force, &paths)?;
    }
    Ok(())
}

/// A media run of `iolab device`: planned, checked, listed (`--dry-run`)
/// or run (`campaign::device::run`).
/// `hosts`: connect the run's hosts (`--hosts`), called once everything
/// is checked; the setups are then directories or exports on every host,
/// checked there, and the configurations are built on every host.
pub fn run(
    a: &DeviceSettings,
    media: &MediaFlags,
    experiments: impl FnOnce() -> anyhow::Result<Vec<Experiment>>,
    presenter: &Presenter,
    hosts: Option<HostsConnect<'_>>,
) -> anyhow::Result<()> {
    let plan = plan(a, media, experiments)?;
    match hosts {
        None => check(&plan, a)?,
        Some(_) => check_output(&plan, a)?,
    }
    if a.dry_run {
        print_plan(&plan);
        return Ok(());
    }
    let placement = hosts.map(|connect| connect()).transpose()?;
    crate::campaign::device::run(&plan, presenter, placement)
}

/// Connects the hosts of a run (`--hosts`), once everything is checked.
pub type HostsConnect<'a> = Box<dyn FnOnce() -> anyhow::Result<FleetPlacement> + 'a>;

fn print_plan(plan: &DeviceMediaPlan) {
    plan.set.print("device", |s| match s {
        Subject::Made(_) => format!(
            "built in {} (room for {} MiB)",
            plan.set.make_in.display(),
            plan.size >> 20
        ),
        Subject::Given(t) if t.remote().is_some() => format!("{} (remote)", t.path.display()),
        Subject::Given(t) if t.path.is_dir() => format!(
            "{} (a {} MiB scratch file in it)",
            t.path.display(),
            plan.size >> 20
        ),
        Subject::Given(t) => t.path.display().to_string(),
    });
    for w in &plan.workloads {
        println!("      {w}");
    }
    let per_round = plan.round_secs();
    println!(
        "{} point(s); estimated duration: {:.0} s (plus building the configurations and laying out scratch files)",
        plan.workloads.len() * plan.set.subjects.len() * plan.set.rounds as usize,
        per_round * plan.set.rounds as f64
    );
}
