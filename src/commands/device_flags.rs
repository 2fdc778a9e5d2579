//! `iolab device`'s flags for the plan layer: `DeviceArgs` copied into
//! `plan::device_args::DeviceSettings`, plan-file settings applied onto
//! the flags by clap (`apply_settings`, `apply_flags`, the `[media]`
//! table), and every experiment of a run (the plan file's, a fio job
//! file's, or the flags').

use crate::cli::device::DeviceArgs;
use crate::commands::device_fio;
use crate::error::{name_place, usage, UsageError};
use crate::plan::device_args::{experiment_from_settings, DeviceSettings};
use crate::plan::experiment::Experiment;
use crate::plan::job::JobSpec;
use crate::plan::planfile;
use crate::plan::units::Span;

/// The settings the experiments are built from.
pub fn settings(a: &DeviceArgs) -> DeviceSettings {
    let DeviceArgs {
        target,
        size,
        overwrite,
        destroy_data,
        keep,
        rw,
        mix,
        bs,
        qd,
        jobs,
        region,
        batch,
        fsync_every,
        submit_batch,
        thinktime,
        thinktime_blocks,
        seed,
        profile,
        act_scale,
        name,
        engine,
        direct,
        buffered,
        uring_fixed_buffers,
        uring_fixed_files,
        uring_sqpoll,
        uring_iopoll,
        poll,
        cpus,
        numa_node,
        mem_node,
        sweep,
        io_timeout,
        runtime,
        io_count,
        io_bytes,
        budget,
        ramp,
        rate,
        arrival,
        knee_factor,
        latency_target,
        percentile,
        steady_state,
        steady_criterion,
        steady_limit,
        steady_window,
        max_rounds,
        precondition,
        purge,
        verify,
        continue_on_error,
        log_dir,
        fake_latency,
        fake_servers,
        plan,
        fio_job,
        clock,
        json,
        force,
        quiet,
        status_interval,
        dry_run,
        export,
        breakdown,
        breakdown_buffer_kb,
        given,
        media: _,
        hosts: _,
    } = a.clone();
    DeviceSettings {
        target,
        size,
        overwrite,
        destroy_data,
        keep,
        rw,
        mix,
        bs,
        qd,
        jobs,
        region,
        batch,
        fsync_every,
        submit_batch,
        thinktime,
        thinktime_blocks,
        seed,
        profile,
        act_scale,
        name,
        engine,
        direct,
        buffered,
        uring_fixed_buffers,
        uring_fixed_files,
        uring_sqpoll,
        uring_iopoll,
        poll,
        cpus,
        numa_node,
        mem_node,
        sweep,
        io_timeout,
        runtime,
        io_count,
        io_bytes,
        budget,
        ramp,
        rate,
        arrival,
        knee_factor,
        latency_target,
        percentile,
        steady_state,
        steady_criterion,
        steady_limit,
        steady_window,
        max_rounds,
        precondition,
        purge,
        verify,
        continue_on_error,
        log_dir,
        fake_latency,
        fake_servers,
        plan,
        fio_job,
        clock,
        json,
        force,
        quiet,
        status_interval,
        dry_run,
        export,
        breakdown,
        breakdown_buffer_kb,
        given,
    }
}

/// The job the flags describe (`plan::device_args::base_spec`).
pub fn base_spec(a: &DeviceArgs) -> anyhow::Result<JobSpec> {
    crate::plan::device_args::base_spec(&settings(a))
}

/// One experiment from the flags.
pub fn experiment_from_args(a: &DeviceArgs, name: &str) -> anyhow::Result<Experiment> {
    experiment_from_settings(&settings(a), name)
}

/// The `--dry-run` listing (`report::device_plan::dry_run`) on `target`
/// (what the run would use, in words).
pub fn dry_run(exps: &[Experiment], target: &str) {
    crate::report::device_plan::dry_run(exps, target)
}

/// Set the flags a plan-file experiment names. A key is the flag's long
/// name and its value is parsed by the flag's own clap definition, so an
/// option needs no code here: the plan-file command is `iolab device`'s
/// with no defaults (only the keys given change `a`) and with switches
/// taking true or false. `steady_state` and `precondition` also take
/// true or false besides their value.
pub fn apply_settings(
    a: &mut DeviceArgs,
    settings: &std::collections::BTreeMap<String, String>,
) -> anyhow::Result<()> {
    let mut argv = Vec::new();
    let mut unset = Vec::new();
    for (k, v) in settings {
        let value = match (k.as_str(), v.as_str()) {
            ("description", _) => continue,
            ("steady_state" | "precondition", "false") | ("precondition", "0") => {
                unset.push(k.as_str());
                continue;
            }
            ("steady_state", "true") => "iops",
            ("precondition", "true") => "2",
            (_, v) => v,
        };
        argv.push(format!("--{}={value}", k.replace('_', "-")));
    }
    apply_flags(a, argv)?;
    for k in unset {
        match k {
            "steady_state" => a.steady_state = None,
            _ => a.precondition = None,
        }
    }
    Ok(())
}

/// Apply `--flag=value` words onto the settings `a` of a verb with the
/// verb's own clap definitions, without their defaults (only the flags
/// given change `a`) and with switches taking true or false: how plan
/// files reach a verb's settings.
pub fn apply_flags<T: clap::Args + clap::FromArgMatches>(
    a: &mut T,
    argv: Vec<String>,
) -> anyhow::Result<()> {
    use clap::ArgAction;
    let cmd = T::augment_args(clap::Command::new("plan"))
        .no_binary_name(true)
        .disable_help_flag(true)
        .mut_args(|arg| {
            // Where the verb runs is the command line's business.
            let arg = arg.default_value(None::<&str>).required(false);
            match arg.get_action() {
                ArgAction::SetTrue => arg.action(ArgAction::Set).num_args(1),
                _ => arg,
            }
        });
    let matches = cmd.try_get_matches_from(argv).map_err(plan_value_error)?;
    a.update_from_arg_matches(&matches)
        .map_err(plan_value_error)
}

/// A plan-file value clap refused, as a usage error naming the flag.
fn plan_value_error(e: clap::Error) -> anyhow::Error {
    use clap::error::{ContextKind, ContextValue};
    if let Some((flag, why)) = crate::cli::typed_value_error(&e) {
        return usage(flag, why);
    }
    let text = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    let flag = text(ContextKind::InvalidArg)
        .and_then(|f| f.split([' ', '=']).next().map(str::to_string))
        .unwrap_or_else(|| "plan".into());
    let value = text(ContextKind::InvalidValue).unwrap_or_default();
    let why = std::error::Error::source(&e)
        .map(|s| s.to_string())
        .unwrap_or_else(|| e.kind().to_string());
    usage(flag, format!("'{value}' is not valid: {why}"))
}

/// Every experiment to run: the plan file's, or the one the flags describe.
pub fn experiments_from_args(a: &DeviceArgs) -> anyhow::Result<Vec<Experiment>> {
    if let Some(f) = &a.fio_job {
        return device_fio::experiments(a, f);
    }
    let Some(path) = &a.plan else {
        return Ok(vec![experiment_from_args(a, "")?]);
    };
    let plan = planfile::read(path)?;
    if plan.experiments.is_empty() {
        return Err(usage(
            "--plan",
            format!(
                "{} has no [[experiment]] for iolab device (its [[kv]] tables run with iolab kv --plan)",
                path.display()
            ),
        ));
    }
    let build = |e: &planfile::PlanSection, budget: Option<Span>| {
        let mut args = a.clone();
        args.plan = None;
        let place = format!("{} [{}]", path.display(), e.name);
        apply_settings(&mut args, &plan_settings(e, &a.given))
            .map_err(|err| name_place(&place, err))?;
        if budget.is_some() {
            args.budget = budget;
        }
        experiment_from_args(&args, &e.name).map_err(|err| name_place(&place, err))
    };
    let exps = plan
        .experiments
        .iter()
        .map(|e| build(e, None))
        .collect::<anyhow::Result<Vec<_>>>()?;
    // A --budget given on the command line is the whole plan's: each
    // experiment gets the share of its estimated points.
    let Some(budget_ns) = a
        .budget
        .as_ref()
        .map(Span::ns)
        .filter(|_| a.given.iter().any(|g| g == "budget"))
    else {
        return Ok(exps);
    };
    let points: Vec<usize> = exps.iter().map(|e| e.estimate().0.max(1)).collect();
    let total: usize = points.iter().sum();
    plan.experiments
        .iter()
        .zip(points)
        .map(|(e, n)| build(e, Some(Span::from_ns(budget_ns * n as u64 / total as u64))))
        .collect()
}

/// `a` with the `[media]` table of its plan file applied (`make`,
/// `rounds`, `baseline`), except the keys the command line gave. The
/// table applies to media runs only (configurations to make, or several
/// `--target`s): on one target the plan's experiments run as they are.
pub fn with_plan_media(mut a: DeviceArgs) -> anyhow::Result<DeviceArgs> {
    let Some(path) = a.plan.clone() else {
        return Ok(a);
    };
    let plan = planfile::read(&path)?;
    if a.media.make.is_none() && a.target.len() < 2 && !plan.media.contains_key("make") {
        return Ok(a);
    }
    apply_media_table(&mut a.media, &path, &plan, &a.given)?;
    Ok(a)
}

/// The `[media]` table of a plan file (`make`, `rounds`, `baseline`)
/// applied onto the media flags, except the keys the command line gave
/// (`given`: they win, as everywhere in plan files).
pub fn apply_media_table(
    m: &mut crate::cli::media::MediaArgs,
    path: &std::path::Path,
    plan: &planfile::PlanFile,
    given: &[String],
) -> anyhow::Result<()> {
    let argv: Vec<String> = plan
        .media
        .iter()
        .filter(|(k, _)| !given.iter().any(|g| g == *k))
        .map(|(k, v)| format!("--{}={v}", k.replace('_', "-")))
        .collect();
    if argv.is_empty() {
        return Ok(());
    }
    apply_flags(m, argv).map_err(|err| match err.downcast::<UsageError>() {
        Ok(u) => usage(format!("{} [media] {}", path.display(), u.field), u.message),
        Err(other) => other,
    })
}

/// A plan experiment's settings minus what the command line gave (flags
/// override the file, as fio's command line does); a given --runtime or
/// --budget also replaces the file's other one.
fn plan_settings(
    e: &planfile::PlanSection,
    given: &[String],
) -> std::collections::BTreeMap<String, String> {
    let is_given = |k: &str| given.iter().any(|g| g == k);
    e.settings
        .iter()
        .filter(|(k, _)| {
            let replaced = match k.as_str() {
                "runtime" => is_given("budget"),
                "budget" => is_given("runtime"),
                _ => false,
            };
            !is_given(k) && !replaced
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Every job of every experiment, validated (no rates or rounds applied).
pub fn specs_from_args(a: &DeviceArgs) -> anyhow::Result<Vec<JobSpec>> {
    Ok(experiments_from_args(a)?
        .into_iter()
        .flat_map(|e| e.jobs)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::options::{DEVICE_OPTIONS, FLAG, PLAN};

    /// The option table lists exactly the clap flags of `iolab device`.
    #[test]
    fn option_table_lists_every_flag() {
        use clap::Args;
        let cmd = DeviceArgs::augment_args(clap::Command::new("device"));
        let flags: Vec<String> = cmd
            .get_arguments()
            .map(|a| a.get_id().to_string())
            .collect();
        for f in &flags {
            assert!(
                DEVICE_OPTIONS
                    .iter()
                    .any(|o| o.key == f && o.sources & FLAG != 0),
                "--{f} is missing from plan::options::DEVICE_OPTIONS"
            );
        }
        for o in DEVICE_OPTIONS.iter().filter(|o| o.sources & FLAG != 0) {
            assert!(flags.iter().any(|f| f == o.key), "{} is no flag", o.key);
        }
    }

    /// Every key a plan file accepts is applied to the arguments.
    #[test]
    fn every_plan_file_key_applies() {
        let base = || {
            <crate::cli::Cli as clap::Parser>::try_parse_from(["iolab", "device"])
                .map(|c| match c.command {
                    crate::cli::Command::Device(a) => *a,
                    _ => unreachable!(),
                })
                .unwrap()
        };
        for o in DEVICE_OPTIONS.iter().filter(|o| o.sources & PLAN != 0) {
            let applies = ["true", "1", "1.5", "x", "placement"].iter().any(|v| {
                let one = std::collections::BTreeMap::from([(o.key.to_string(), v.to_string())]);
                apply_settings(&mut base(), &one).is_ok()
            });
            assert!(applies, "plan-file key {} is not applied", o.key);
        }
        let bogus = std::collections::BTreeMap::from([("bogus".to_string(), "1".to_string())]);
        assert!(apply_settings(&mut base(), &bogus).is_err());
    }

    /// A plan-file key changes its flag only; everything else keeps what the
    /// command line said (defaults of the plan command must not leak in).
    #[test]
    fn plan_settings_change_only_their_flags() {
        let mut a = match <crate::cli::Cli as clap::Parser>::try_parse_from([
            "iolab",
            "device",
            "--rw",
            "read",
            "--qd",
            "4",
            "--buffered",
            "--knee-factor",
            "3",
        ])
        .unwrap()
        .command
        {
            crate::cli::Command::Device(a) => *a,
            _ => unreachable!(),
        };
        let set = |pairs: &[(&str, &str)]| -> std::collections::BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        apply_settings(&mut a, &set(&[("bs", "8k"), ("steady_state", "true")])).unwrap();
        assert_eq!(
            (a.rw.as_str(), a.qd.as_str(), a.bs.text()),
            ("read", "4", "8k")
        );
        assert!(a.buffered);
        assert_eq!(a.knee_factor, 3.0);
        assert_eq!(a.steady_state.as_deref(), Some("iops"));
        apply_settings(
            &mut a,
            &set(&[
                ("buffered", "false"),
                ("steady_state", "false"),
                ("max_rounds", "7"),
            ]),
        )
        .unwrap();
        assert!(!a.buffered);
        assert_eq!(a.steady_state, None);
        assert_eq!(a.max_rounds, 7);
        let err = apply_settings(&mut a, &set(&[("knee_factor", "steep")])).unwrap_err();
        let u = err.downcast::<UsageError>().unwrap();
        assert_eq!(u.field, "--knee-factor");
        assert!(u.message.contains("'steep'"), "{}", u.message);
        let err = apply_settings(&mut a, &set(&[("purge", "maybe")])).unwrap_err();
        assert_eq!(err.downcast::<UsageError>().unwrap().field, "--purge");
    }
}
