//! `iolab device --hosts`: what a run on several hosts accepts (one
//! directory on every host; no local-only steps), the hosts connected and
//! checked before anything is set up anywhere, and the driver's placement
//! that runs each job on all of them (`fleet::FleetPlacement`).

use std::path::PathBuf;

use crate::cli::device::DeviceArgs;
use crate::error::usage;
use crate::fleet::{self, FleetPlacement, HostGroups, HostsFlags, JobTarget};
use crate::plan::experiment::Experiment;

/// The hosts' flags checked against the rest of the run; `None` without
/// --hosts. The hosts come in groups (`--hosts @FILE.toml`; a plain list
/// is one group), each group's job checked as the command line's is.
pub fn refuse_what_hosts_cannot_run(
    a: &DeviceArgs,
    exps: &[Experiment],
) -> anyhow::Result<Option<HostGroups>> {
    a.hosts.flags().check()?;
    let Some(list) = &a.hosts.hosts else {
        return Ok(None);
    };
    let groups = fleet::parse_host_groups(list, "--hosts")?;
    check_groups(a, exps, &groups)?;
    let local_only = [
        (
            "--breakdown",
            a.breakdown,
            "traces this machine's block layer",
        ),
        (
            "--destroy-data",
            !a.destroy_data.is_empty(),
            "names a device of this machine; on hosts iolab makes a scratch file in --target",
        ),
        (
            "--fio-job",
            a.fio_job.is_some(),
            "reads its target from the job file",
        ),
        (
            "--precondition",
            exps.iter().any(|e| e.precondition.is_some()),
            "each host's scratch file is its own",
        ),
        (
            "--purge",
            exps.iter().any(|e| e.purge),
            "each host's scratch file is its own",
        ),
    ];
    if let Some((flag, _, why)) = local_only.iter().find(|(_, given, _)| *given) {
        return Err(usage(*flag, format!("not with --hosts: it {why}")));
    }
    if let Some(t) = a.target.first() {
        crate::plan::endpoint::endpoint_of(t)?;
    }
    let base = a.target.first().map(|t| t.display().to_string());
    let verifies = exps.iter().flat_map(|e| &e.jobs).any(|j| j.verify);
    if verifies && groups.share_an_export(base.as_deref()) {
        return Err(usage(
            "--verify",
            "not with several --hosts on one shared export: each host stamps and checks the blocks it writes, \
             and the others overwrite them (thousands of false mismatches); verify from one host, \
             or give each host an export of its own",
        ));
    }
    // Each target (a media run's `[LABEL=]PATH` too) is a directory on
    // every host, or an export they share.
    let path_of = |t: &PathBuf| -> PathBuf {
        let text = t.to_string_lossy();
        match text.split_once('=') {
            Some((label, path)) if !label.contains('/') => PathBuf::from(path),
            _ => t.clone(),
        }
    };
    let is_remote = |t: &PathBuf| {
        crate::plan::endpoint::endpoint_of(&path_of(t))
            .ok()
            .flatten()
            .is_some()
    };
    if let Some(t) = a
        .target
        .iter()
        .find(|t| !path_of(t).is_absolute() && !is_remote(t))
    {
        return Err(usage(
            "--target",
            format!(
                "with --hosts the target is a directory on every host, given as an absolute path, or a remote export they share (not {})",
                t.display()
            ),
        ));
    }
    Ok(Some(groups))
}

/// Each group's job, for every job of the run, is valid (errors name the
/// group); a media run's targets are its setups, not a group's.
fn check_groups(a: &DeviceArgs, exps: &[Experiment], groups: &HostGroups) -> anyhow::Result<()> {
    let media =
        crate::campaign::setups::is_media_run(&super::media_flags(&a.media), a.target.len());
    if let Some(g) = groups
        .groups
        .iter()
        .find(|g| media && g.job.target.is_some())
    {
        return Err(usage(
            format!(
                "{}: group {}.target",
                groups.file.as_deref().unwrap_or("--hosts"),
                g.name.as_deref().unwrap_or("-")
            ),
            "not in a media run: its targets (--target, --make) are every host's setups",
        ));
    }
    groups.check_jobs(exps.iter().flat_map(|e| &e.jobs))
}

/// A dry run's target on the hosts: the directory on every host, and each
/// host group's job.
pub fn dry_run_target(a: &DeviceArgs, groups: &HostGroups) -> String {
    let mut t = format!(
        "{} on every host",
        a.target
            .first()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| ".".into())
    );
    if !groups.is_plain() {
        t.push_str(&format!("; {}", groups.summary().join("; ")));
    }
    t
}

/// Where each job runs on the hosts: a scratch file of `size` in the
/// directory `--target`, or the remote export `--target` every host
/// reaches (none for engines that open no file).
pub fn job_target(a: &DeviceArgs, needs_target: bool, size: Option<u64>) -> JobTarget {
    JobTarget {
        overwrite: a.overwrite,
        dir: needs_target.then(|| {
            a.target
                .first()
                .cloned()
                .unwrap_or_else(|| PathBuf::from("/var/tmp"))
                .display()
                .to_string()
        }),
        size,
        ..JobTarget::default()
    }
}

/// Connect to every host (exit 2 naming each host that cannot be reached
/// or runs another build; nothing is left running anywhere then); also
/// `run --hosts`'.
pub fn connect(
    flags: &HostsFlags,
    hosts: &[fleet::HostSpec],
    target: JobTarget,
    quiet: bool,
) -> anyhow::Result<FleetPlacement> {
    let f = flags.connect(hosts, quiet)?;
    Ok(FleetPlacement::new(f, target, flags.on_host_loss))
}

/// `connect` to the groups' hosts, each to run its group's job.
pub fn connect_groups(
    flags: &HostsFlags,
    groups: &HostGroups,
    target: JobTarget,
    quiet: bool,
) -> anyhow::Result<FleetPlacement> {
    Ok(connect(flags, &groups.hosts(), target, quiet)?.with_groups(groups.clone()))
}
