//! `iolab run`: its command line as `campaign::run::RunSettings`, the
//! media flags and the hosts (`--hosts`: what cannot run there refused
//! naming the flag before any host is contacted), run by
//! `campaign::run::run`.

use std::path::PathBuf;

use crate::campaign::run::{self as run_campaign, OnHosts, RunSettings};
use crate::cli::run::RunArgs;
use crate::error::usage;
use crate::fleet;

pub fn run(a: RunArgs) -> anyhow::Result<()> {
    let hosts = on_hosts(&a)?;
    let RunArgs {
        dirs,
        target,
        overwrite,
        budget,
        runtime,
        profile,
        size,
        engine,
        output,
        force,
        seed,
        quiet,
        status_interval,
        remote,
        dry_run,
        dir,
        media,
        hosts: _,
        export,
    } = a;
    let settings = RunSettings {
        dirs,
        target,
        overwrite,
        budget,
        runtime,
        profile,
        size,
        engine,
        output,
        force,
        seed,
        quiet,
        status_interval,
        remote,
        dry_run,
        dir,
    };
    let inputs: Vec<&std::path::Path> = settings
        .dirs
        .iter()
        .chain(&settings.target)
        .map(|p| p.as_path())
        .collect();
    let exports = super::exports::parse(export.as_deref(), settings.force, &inputs)?;
    let presenter = super::exports::presenter(exports, crate::report::terminal::run_summary);
    let mut media = super::media_flags(&media);
    media.on_hosts = hosts.is_some();
    run_campaign::run(settings, &media, hosts, &presenter)
}

/// The hosts, with what a run on them cannot do refused naming the flag;
/// `None` without --hosts (its flags refused then). Each DIR is a
/// directory on every host (several: a media run there).
fn on_hosts(a: &RunArgs) -> anyhow::Result<Option<OnHosts<'static>>> {
    let flags = a.hosts.flags();
    flags.check()?;
    let Some(list) = &flags.hosts else {
        return Ok(None);
    };
    let hosts = fleet::parse_hosts(list, "--hosts")?;
    let refused = [
        (
            "--remote",
            a.remote,
            "the remote step serves this machine's scratch file",
        ),
        (
            "--overwrite",
            a.overwrite,
            "each host writes only a scratch file of its own",
        ),
    ];
    if let Some((flag, _, why)) = refused.iter().find(|(_, given, _)| *given) {
        return Err(usage(*flag, format!("not with --hosts: {why}")));
    }
    let dirs: Vec<&PathBuf> = a.dirs.iter().chain(&a.target).collect();
    for d in dirs {
        let path = match d.to_string_lossy().split_once('=') {
            Some((label, path)) if !label.contains('/') => PathBuf::from(path),
            _ => d.clone(),
        };
        if crate::plan::endpoint::endpoint_of(&path)?.is_some() || !path.is_absolute() {
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
        connect: Box::new(move |target| {
            let f = flags.connect(&hosts, quiet)?;
            Ok(fleet::FleetPlacement::new(f, target, flags.on_host_loss))
        }),
    }))
}
