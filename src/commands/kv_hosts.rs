//! `iolab kv --hosts`: what a kv run on several hosts accepts (one
//! directory on every host, an embedded engine, nothing of this machine's),
//! the hosts connected and checked before anything is set up anywhere, and
//! `campaign::kv_hosts` running the plan's phases there.

use std::path::{Path, PathBuf};

use crate::campaign::kv_hosts::{self, KvHostsPlan};
use crate::cli::kv::KvArgs;
use crate::error::usage;
use crate::fleet::{self, JobTarget};
use crate::kv::plan::KvPlan;
use crate::kv::run::{KvObserver, KvRun};

/// A media run (several targets, `--make`, `--plan`) with --hosts: refused
/// naming the flag.
pub fn refuse_media(a: &KvArgs) -> anyhow::Result<()> {
    if a.hosts.hosts.is_none() {
        return Ok(());
    }
    let flag = if a.plan.is_some() {
        "--plan"
    } else if a.media.make.is_some() {
        "--make"
    } else {
        "--target"
    };
    Err(usage(
        flag,
        "not with --hosts: a media run (several targets, --make, --plan) runs on this machine; with --hosts give one directory (--dir) on every host",
    ))
}

/// The hosts, with what a run on them cannot do refused naming the flag;
/// `None` without --hosts.
pub fn refuse_what_hosts_cannot_run(
    a: &KvArgs,
    plan: &KvPlan,
) -> anyhow::Result<Option<Vec<fleet::HostSpec>>> {
    let Some(list) = &a.hosts.hosts else {
        return Ok(None);
    };
    let hosts = fleet::parse_hosts(list, "--hosts")?;
    let local_only = [
        (
            "--db",
            a.place.db.is_some(),
            "names a database directory of this machine; each host makes its own in --dir",
        ),
        (
            "--keep",
            a.place.keep,
            "the hosts' databases are removed at the end",
        ),
        (
            "--destroy-data",
            a.place.destroy_data.is_some(),
            "names a device of this machine",
        ),
    ];
    if let Some((flag, _, why)) = local_only.iter().find(|(_, given, _)| *given) {
        return Err(usage(*flag, format!("not with --hosts: {why}")));
    }
    if plan.engine.server().is_some() && a.server.server_url.is_none() {
        return Err(usage(
            "--engine",
            format!(
                "not with --hosts: {} is a database server (a private server on every host is not supported yet); use an embedded engine, or --server-url for one server every host shares",
                plan.engine.name()
            ),
        ));
    }
    host_dir(plan)?;
    Ok(Some(hosts))
}

/// The directory on every host: --dir (or the one --target), absolute;
/// /var/tmp when neither was given.
fn host_dir(plan: &KvPlan) -> anyhow::Result<PathBuf> {
    let d = &plan.place.dir;
    if d == Path::new(".") {
        return Ok(PathBuf::from("/var/tmp"));
    }
    if !d.is_absolute() {
        return Err(usage(
            "--dir",
            format!(
                "with --hosts the directory is one on every host, given as an absolute path (not {})",
                d.display()
            ),
        ));
    }
    Ok(d.clone())
}

/// Connect to every host (exit 2 naming each host that cannot be reached
/// or runs another build; nothing is left running anywhere then) and run
/// the plan's phases there.
pub fn run(
    a: &KvArgs,
    plan: &KvPlan,
    hosts: &[fleet::HostSpec],
    obs: &dyn KvObserver,
) -> anyhow::Result<KvRun> {
    let dir = host_dir(plan)?;
    let mut settings = super::kv_flags::kv_settings(a);
    settings.output = None;
    settings.status_interval = None;
    settings.place.target.clear();
    settings.place.dir = dir.clone();
    settings.inline_property_files()?;
    let f = a.hosts.flags().connect(hosts, a.quiet)?;
    let p = KvHostsPlan {
        plan,
        settings,
        instances: a.instances,
        target: JobTarget {
            dir: Some(dir.display().to_string()),
            size: None,
            overwrite: false,
        },
        on_loss: a.hosts.on_host_loss.into(),
    };
    kv_hosts::run(f, &p, obs)
}
