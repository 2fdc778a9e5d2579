//! fio interoperability of `iolab device`: `--fio-job FILE.fio` (the job
//! file's jobs as one experiment, its filename/directory and size as the
//! target defaults) and `--export fio-json FILE` (the results in fio's JSON
//! shape, rewritten atomically with the results file).

use crate::results::sections::FioJobFile;
use std::path::Path;

use crate::cli::device::DeviceArgs;
use crate::error::usage;
use crate::plan::experiment::{Experiment, Mode};
use crate::plan::fiojob::{fio_plan, FioPlan};
use crate::plan::job::JobSpec;
use crate::plan::parse::parse_cpu_list;

/// Read and parse the job file (open-loop `rate_iops` supported).
pub fn read_plan(path: &Path) -> anyhow::Result<FioPlan> {
    let text = crate::input::read_text(path, "--fio-job", Some(crate::input::CONFIG_MAX))?;
    fio_plan(&text, true)
}

/// `--target`/`--size` from the job file when they were not given:
/// `filename` (or `directory`) and the largest `size`.
pub fn with_target_defaults(mut a: DeviceArgs, plan: Option<&FioPlan>) -> DeviceArgs {
    let Some(plan) = plan else {
        return a;
    };
    if a.target.is_empty() {
        a.target.extend(plan.target.clone());
    }
    if a.size.is_none() {
        a.size = plan.size.map(crate::plan::units::Size::from_bytes);
    }
    a
}

/// The job file's jobs as experiments in fio's order: one per group of
/// jobs fio runs at once (between two stonewalls: `Mode::Concurrent`),
/// with the command line's seed and CPU list applied, and the flags of `fio_job_overrides` given
/// on the command line (`--runtime 1s`) overriding the file.
pub fn experiments(a: &DeviceArgs, path: &Path) -> anyhow::Result<Vec<Experiment>> {
    let plan = read_plan(path)?;
    let overrides = crate::plan::options::fio_job_overrides();
    let given: Vec<&str> = a
        .given
        .iter()
        .map(String::as_str)
        .filter(|k| overrides.contains(k))
        .collect();
    let flags = if given.is_empty() {
        None
    } else {
        Some(crate::commands::device_flags::base_spec(a)?)
    };
    let cpus = a
        .cpus
        .as_deref()
        .map(|c| parse_cpu_list("--cpus", c))
        .transpose()?;
    let mut jobs = plan.jobs;
    for j in &mut jobs {
        if let Some(f) = &flags {
            override_job(j, f, &given);
        }
        j.seed = a.seed;
        if cpus.is_some() {
            j.cpus = cpus.clone();
        }
        if j.name.is_empty() {
            j.name = j.default_name();
        }
        j.validate()
            .map_err(|e| usage("--fio-job", format!("job [{}]: {e}", j.name)))?;
    }
    // fio's order: groups one after another, the jobs of a group at once.
    Ok(plan
        .groups
        .iter()
        .map(|g| {
            let jobs = jobs[g.jobs.clone()].to_vec();
            Experiment {
                name: String::new(),
                mode: match jobs.len() {
                    1 => Mode::Plain,
                    _ => Mode::Concurrent {
                        reports: g.reports.clone(),
                    },
                },
                jobs,
                precondition: None,
                purge: false,
                knee_factor: a.knee_factor,
            }
        })
        .collect())
}

/// Set the `given` options of `job` from the job the flags describe.
fn override_job(job: &mut JobSpec, flags: &JobSpec, given: &[&str]) {
    for key in given {
        match *key {
            "runtime" => job.stop.runtime_ns = flags.stop.runtime_ns,
            "io_count" => job.stop.io_count = flags.stop.io_count,
            "io_bytes" => job.stop.io_bytes = flags.stop.io_bytes,
            "ramp" => job.ramp_ns = flags.ramp_ns,
            "engine" => {
                job.engine = flags.engine;
                job.uring = flags.uring;
            }
            "qd" => job.qd = flags.qd,
            "jobs" => job.jobs = flags.jobs,
            "direct" | "buffered" => job.direct = flags.direct,
            "verify" => job.verify = flags.verify,
            "continue_on_error" => job.continue_on_error = flags.continue_on_error,
            _ => {}
        }
    }
}

/// The job file's path and text, kept in `Results.extra["fio_job"]`.
pub fn provenance(path: &Path) -> FioJobFile {
    FioJobFile {
        path: path.display().to_string(),
        text: crate::input::read_text(path, "--fio-job", Some(crate::input::CONFIG_MAX))
            .unwrap_or_default(),
    }
}
