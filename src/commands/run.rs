//! `iolab run`: its command line as `campaign::run::RunSettings`, the
//! media flags and the hosts (`run_hosts`), run by `campaign::run::run`.

use crate::campaign::run::{self as run_campaign, RunSettings};
use crate::cli::run::RunArgs;

pub fn run(a: RunArgs) -> anyhow::Result<()> {
    let hosts = super::run_hosts::on_hosts(&a)?;
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
    run_campaign::run(settings, &super::media_flags(&media), hosts, &presenter)
}
