//! `iolab device --hosts`: what a run on several hosts accepts (one
//! directory on every host; no local-only steps), the hosts connected and
//! checked before anything is set up anywhere, and the driver's placement
//! that runs each job on all of them (`fleet::FleetPlacement`).

use std::path::PathBuf;

use crate::cli::device::DeviceArgs;
use crate::error::usage;
use crate::fleet::{self, FleetPlacement, HostsFlags, JobTarget};
use crate::plan::experiment::Experiment;

/// The hosts' flags checked against the rest of the run; `None` without --hosts.
pub fn refuse_what_hosts_cannot_run(
    a: &DeviceArgs,
    exps: &[Experiment],
) -> anyhow::Result<Option<Vec<fleet::HostSpec>>> {
    a.hosts.flags().check()?;
    let Some(list) = &a.hosts.hosts else {
        return Ok(None);
    };
    let hosts = fleet::parse_hosts(list, "--hosts")?;
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
    let remote = a
        .target
        .first()
        .map(|t| crate::plan::endpoint::endpoint_of(t))
        .transpose()?
        .flatten();
    let verifies = exps.iter().flat_map(|e| &e.jobs).any(|j| j.verify);
    if remote.is_some() && hosts.len() > 1 && verifies {
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
    Ok(Some(hosts))
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
