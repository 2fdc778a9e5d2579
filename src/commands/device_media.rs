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

use std::path::{Path, PathBuf};

use super::device_args::experiments_from_args;
use super::media_targets::{self, GivenTarget};
use crate::cli::device::DeviceArgs;
use crate::dut;
use crate::engine::{EngineKind, Opens};
use crate::error::usage;
use crate::plan::experiment::Mode;
use crate::plan::job::JobSpec;
use crate::plan::parse::parse_size;
use crate::testbed::media::{MediaKind, MEDIA_NAMES};

/// Default bytes of every scratch file and configuration of a media run.
pub const DEFAULT_SIZE: u64 = 256 << 20;

/// One target of a media run.
#[derive(Debug, Clone)]
pub enum Subject {
    /// A configuration iolab builds (`--make`).
    Made(MediaKind),
    /// A `--target` of the user's own.
    Given(GivenTarget),
}

impl Subject {
    pub fn label(&self) -> String {
        match self {
            Subject::Made(k) => k.name(),
            Subject::Given(t) => t.label.clone(),
        }
    }
}

/// The checked settings of a media run.
pub struct MediaPlan {
    /// In run order: the given targets, then the configurations.
    pub subjects: Vec<Subject>,
    /// Where the configurations are built.
    pub make_in: PathBuf,
    pub baseline: String,
    pub rounds: u32,
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
}

impl MediaPlan {
    pub fn labels(&self) -> Vec<String> {
        self.subjects.iter().map(Subject::label).collect()
    }

    /// The given targets, with their index among the subjects.
    pub fn given(&self) -> impl Iterator<Item = (usize, &GivenTarget)> {
        self.subjects
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s {
                Subject::Given(t) => Some((i, t)),
                Subject::Made(_) => None,
            })
    }

    pub fn made(&self) -> impl Iterator<Item = MediaKind> + '_ {
        self.subjects.iter().filter_map(|s| match s {
            Subject::Made(k) => Some(*k),
            Subject::Given(_) => None,
        })
    }

    /// The options a given target is checked and prepared with.
    pub fn options(&self, i: usize, t: &GivenTarget, a: &DeviceArgs) -> dut::TargetOptions {
        media_targets::options_for(
            t,
            Some(self.size_given.unwrap_or(self.size)).filter(|_| {
                self.size_given.is_some()
                    || (t.remote().is_none() && (t.path.is_dir() || !t.path.exists()))
            }),
            a.overwrite,
            self.destroy[i].clone(),
            a.keep,
        )
    }
}

/// `--make`, or several `--target`: a media run.
pub fn is_media_run(a: &DeviceArgs) -> bool {
    a.make.is_some() || a.target.len() > 1
}

/// The flags of media runs mean nothing in a single-target run.
pub fn refuse_without_media(a: &DeviceArgs) -> anyhow::Result<()> {
    if a.rounds != 1 || a.baseline.is_some() {
        let field = if a.rounds != 1 {
            "--rounds"
        } else {
            "--baseline"
        };
        return Err(usage(field, "applies to --make or several --target only"));
    }
    if a.make_in.is_some() {
        return Err(usage("--make-in", "applies to --make only"));
    }
    if a.destroy_data.len() > 1 {
        return Err(usage(
            "--destroy-data",
            "given several times, but there is one --target",
        ));
    }
    Ok(())
}

/// The order of round `r` (0-based): forward, then backward, ...
pub fn round_order(n: usize, r: u32) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    if r % 2 == 1 {
        v.reverse();
    }
    v
}

/// `--make LIST`, parsed.
fn made_kinds(a: &DeviceArgs) -> anyhow::Result<Vec<MediaKind>> {
    let Some(list) = a.make.as_deref() else {
        return Ok(Vec::new());
    };
    let mut kinds = Vec::new();
    for name in list.split(',').map(str::trim) {
        let k = MediaKind::parse(name)
            .ok_or_else(|| usage("--make", format!("'{name}' is not one of {MEDIA_NAMES}")))?;
        if kinds.contains(&k) {
            return Err(usage("--make", format!("{name} is named twice")));
        }
        kinds.push(k);
    }
    Ok(kinds)
}

/// Where the configurations are built, and which `--target`s are targets
/// of their own. One `--target` with `--make` is where they are built (as
/// before `--make-in` existed); several are ambiguous without `--make-in`.
fn split_targets(a: &DeviceArgs) -> anyhow::Result<(PathBuf, Vec<PathBuf>)> {
    if a.make.is_none() {
        if a.make_in.is_some() {
            return Err(usage("--make-in", "applies to --make only"));
        }
        return Ok((PathBuf::new(), a.target.clone()));
    }
    let (dir, field, own) = match (&a.make_in, a.target.as_slice()) {
        (Some(d), ts) => (d.clone(), "--make-in", ts.to_vec()),
        (None, []) => (PathBuf::from("."), "--target", Vec::new()),
        (None, [t]) if !t.to_string_lossy().contains('=') => (t.clone(), "--target", Vec::new()),
        (None, _) => {
            return Err(usage(
                "--make-in",
                "with --make, a labelled or a second --target is a target of its own: say where the configurations are built with --make-in DIR",
            ))
        }
    };
    if !dir.is_dir() {
        return Err(usage(
            field,
            format!(
                "with --make, {field} is the directory the configurations are built in; {} is not one",
                dir.display()
            ),
        ));
    }
    Ok((dir, own))
}

/// Flags a media run does not combine with (refused rather than ignored).
fn refuse_unsupported(a: &DeviceArgs, field: &str) -> anyhow::Result<()> {
    let unsupported = [
        ("--fio-job", a.fio_job.is_some()),
        ("--export", a.export.is_some()),
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
pub fn plan(a: &DeviceArgs) -> anyhow::Result<MediaPlan> {
    let field = if a.make.is_some() {
        "--make"
    } else {
        "--target"
    };
    let kinds = made_kinds(a)?;
    if !(1..=100).contains(&a.rounds) {
        return Err(usage("--rounds", "must be 1 to 100"));
    }
    let (make_in, own) = split_targets(a)?;
    let reserved: Vec<String> = kinds.iter().map(|k| k.name()).collect();
    let given = media_targets::parse(&own, &reserved)?;
    if given.is_empty() && (!a.destroy_data.is_empty() || a.overwrite) {
        return Err(usage(
            "--make",
            "iolab builds the configurations' devices itself: --destroy-data and --overwrite do not apply",
        ));
    }
    refuse_unsupported(a, field)?;
    let mut destroy = media_targets::destroy_data_for(&given, &a.destroy_data)?;
    destroy.extend(kinds.iter().map(|_| None));
    let mut subjects: Vec<Subject> = given.into_iter().map(Subject::Given).collect();
    subjects.extend(kinds.into_iter().map(Subject::Made));
    let labels: Vec<String> = subjects.iter().map(Subject::label).collect();
    let baseline = a.baseline.clone().unwrap_or_else(|| labels[0].clone());
    if !labels.contains(&baseline) {
        return Err(usage(
            "--baseline",
            format!(
                "'{baseline}' is not one of the targets: {}",
                labels.join(", ")
            ),
        ));
    }
    let exps = experiments_from_args(a)?;
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
        Some(s) => Some(parse_size("--size", s)?).filter(|s| *s > 0),
        None => None,
    };
    if a.size.is_some() && size_given.is_none() {
        return Err(usage("--size", "size must be greater than 0"));
    }
    let (jobs, workloads) = jobs_per_subject(a, &subjects, &planned)?;
    Ok(MediaPlan {
        writes: planned.iter().any(|j| j.writes()),
        subjects,
        make_in,
        baseline,
        rounds: a.rounds,
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
    a: &DeviceArgs,
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
        (Some(ep), false) => crate::engine::engine_for_transport(ep.transport).ok_or_else(|| {
            media_targets::name_target_text(&value, "no engine speaks its transport")
        }),
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
    a: &DeviceArgs,
    subjects: &[Subject],
    planned: &[JobSpec],
) -> anyhow::Result<(Vec<Vec<JobSpec>>, Vec<String>)> {
    let local = crate::plan::sweep::parse_engine_axis("--engine", &a.engine, true)?
        .first()
        .copied()
        .filter(|e| !matches!(e.caps().opens, Opens::Remote(_)))
        .unwrap_or(EngineKind::IoUring);
    let mut all = Vec::new();
    for s in subjects {
        let mut jobs = Vec::new();
        for j in planned {
            let mut job = j.clone();
            job.engine = engine_for(a, s, j.engine, local)?;
            if job.engine != j.engine {
                job.direct = j.direct && job.engine != EngineKind::Mmap;
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
            match default.strip_suffix(&format!("-{}", j.engine.name())) {
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
fn check(plan: &MediaPlan, a: &DeviceArgs) -> anyhow::Result<()> {
    for k in plan.made() {
        if let Some(why) = k.unavailable() {
            return Err(usage(
                "--make",
                format!("{} cannot be built here: {why}", k.name()),
            ));
        }
    }
    for (i, t) in plan.given() {
        // A new file at a mistyped path would still run: compare only what exists.
        if t.remote().is_none() && std::fs::symlink_metadata(&t.path).is_err() {
            return Err(media_targets::name_target_text(
                &t.value,
                "does not exist (give a directory, a file, a block device or a remote URL)",
            ));
        }
        dut::check(&plan.options(i, t, a), plan.writes)
            .map_err(|e| media_targets::name_target(t, e))?;
    }
    if let Some(p) = a.json.as_deref().filter(|p| p.as_os_str() != "-") {
        let paths: Vec<&Path> = plan.given().map(|(_, t)| t.path.as_path()).collect();
        crate::results::output::check(p, "--json", a.force, &paths)?;
    }
    Ok(())
}

pub fn run(a: DeviceArgs) -> anyhow::Result<()> {
    let plan = plan(&a)?;
    check(&plan, &a)?;
    if a.dry_run {
        print_plan(&plan);
        return Ok(());
    }
    super::device_media_run::run(&a, &plan)
}

fn print_plan(plan: &MediaPlan) {
    let labels = plan.labels();
    println!(
        "iolab device: {} round(s) over {} target(s), baseline {}",
        plan.rounds,
        labels.len(),
        plan.baseline
    );
    let width = labels.iter().map(|l| l.len()).max().unwrap_or(0);
    for s in &plan.subjects {
        let what = match s {
            Subject::Made(_) => format!(
                "built in {} (room for {} MiB)",
                plan.make_in.display(),
                plan.size >> 20
            ),
            Subject::Given(t) if t.remote().is_some() => format!("{} (remote)", t.path.display()),
            Subject::Given(t) if t.path.is_dir() => format!(
                "{} (a {} MiB scratch file in it)",
                t.path.display(),
                plan.size >> 20
            ),
            Subject::Given(t) => t.path.display().to_string(),
        };
        println!("  {:<width$}  {what}", s.label());
    }
    for r in 0..plan.rounds {
        let order: Vec<&str> = round_order(labels.len(), r)
            .into_iter()
            .map(|i| labels[i].as_str())
            .collect();
        println!("  round {}: {}", r + 1, order.join(" "));
    }
    for w in &plan.workloads {
        println!("      {w}");
    }
    let per_round: f64 = plan
        .jobs
        .iter()
        .flatten()
        .map(|j| (j.stop.runtime_ns.unwrap_or(0) + j.ramp_ns) as f64 / 1e9)
        .sum();
    println!(
        "{} point(s); estimated duration: {:.0} s (plus building the configurations and laying out scratch files)",
        plan.workloads.len() * labels.len() * plan.rounds as usize,
        per_round * plan.rounds as f64
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_alternate_direction() {
        assert_eq!(round_order(3, 0), vec![0, 1, 2]);
        assert_eq!(round_order(3, 1), vec![2, 1, 0]);
        assert_eq!(round_order(3, 2), vec![0, 1, 2]);
    }
}
