//! `iolab run`: its command line as `campaign::run::RunSettings` and the
//! media flags, run by `campaign::run::run`.

use crate::campaign::run::{self as run_campaign, RunSettings};
use crate::cli::run::RunArgs;

pub fn run(a: RunArgs) -> anyhow::Result<()> {
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
    run_campaign::run(settings, &super::media_flags(&media))
}
