//! `iolab run --hosts`: what a run on several hosts accepts (one absolute
//! directory on every host; no media run, no `--remote`), refused naming
//! the flag before any host is contacted, and the connection
//! (`device_hosts::connect`) handed to `campaign::run` for when the plan
//! and the output are checked.

use std::path::PathBuf;

use super::device_hosts;
use crate::campaign::run::OnHosts;
use crate::cli::run::RunArgs;
use crate::error::usage;
use crate::fleet;

/// The hosts, with what a run on them cannot do refused naming the flag;
/// `None` without --hosts (its flags refused then).
pub fn on_hosts(a: &RunArgs) -> anyhow::Result<Option<OnHosts<'static>>> {
    let flags = a.hosts.flags();
    flags.check()?;
    let Some(list) = &flags.hosts else {
        return Ok(None);
    };
    let hosts = fleet::parse_hosts(list, "--hosts")?;
    let dirs: Vec<&PathBuf> = a.dirs.iter().chain(&a.target).collect();
    let media = [
        ("--make", a.media.make.is_some()),
        ("--make-in", a.media.make_in.is_some()),
        ("--rounds", a.media.rounds > 1),
        ("--baseline", a.media.baseline.is_some()),
        ("DIR", a.dirs.len() > 1),
        ("--target", dirs.len() > 1),
    ];
    if let Some((flag, _)) = media.iter().find(|(_, given)| *given) {
        return Err(usage(
            *flag,
            "not with --hosts: a media run (--make, several targets) runs on this machine; with --hosts give one directory on every host",
        ));
    }
    if a.remote {
        return Err(usage(
            "--remote",
            "not with --hosts: the remote step serves this machine's scratch file",
        ));
    }
    if a.overwrite {
        return Err(usage(
            "--overwrite",
            "not with --hosts: each host writes only a scratch file of its own",
        ));
    }
    if let Some(d) = dirs.first() {
        if crate::plan::endpoint::endpoint_of(d)?.is_some() || !d.is_absolute() {
            return Err(usage(
                "DIR",
                format!(
                    "with --hosts DIR is a directory on every host, given as an absolute path (not {})",
                    d.display()
                ),
            ));
        }
    }
    let names = hosts.iter().map(|h| h.to_string()).collect();
    let quiet = a.quiet;
    Ok(Some(OnHosts {
        names,
        connect: Box::new(move |target| device_hosts::connect(&flags, &hosts, target, quiet)),
    }))
}
