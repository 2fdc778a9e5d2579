//! `iolab kv`: database workloads. Arguments -> `KvPlan` (kv_args) ->
//! `kv::run::run` with the terminal observer -> exit code. Several
//! targets, `--make` or a `--plan` file: a media run (`kv_media`).

use crate::cli::kv::KvArgs;
use crate::error::Interrupted;
use crate::report::kv_terminal::KvTerminal;
use crate::results::output;

pub fn run(args: KvArgs) -> anyhow::Result<()> {
    if args.plan.is_some()
        || crate::campaign::setups::is_media_run(&args.media, args.place.target.len())
    {
        return super::kv_media::run(args);
    }
    crate::campaign::setups::refuse_without_media(&args.media)?;
    if args.place.size.is_some() {
        return Err(crate::error::usage(
            "--size",
            "applies to --make only (the room of each configuration)",
        ));
    }
    let plan = super::kv_args::plan(&args)?;
    if let Some(raw) = &plan.place.raw {
        // The same device checks as the run (--dry-run included).
        crate::kv::raw::check(&plan, raw)?;
    }
    if let Some(out) = &plan.output {
        let devices: Vec<&std::path::Path> =
            plan.place.raw.iter().map(|r| r.device.as_path()).collect();
        output::check(out, "--output", args.force, &devices)?;
    }
    if args.dry_run {
        println!(
            "engine: {} (defaults below are applied when it opens)",
            plan.engine.name()
        );
        for (k, v) in crate::kv::describe::options(&plan.options) {
            println!("  {k} = {v}");
        }
        for s in &plan.steps {
            println!("step: {}", crate::kv::describe::step(s));
        }
        return Ok(());
    }
    let done = crate::kv::run::run(&plan, &KvTerminal::new(args.quiet))?;
    if !args.quiet {
        if let Some(t) = crate::report::kv_intel::table(&done.results) {
            println!("\n{t}");
        }
    }
    if let (Some(out), false) = (&plan.output, args.quiet) {
        println!("\nresults: {}", out.display());
    }
    done.verified()?;
    if done.results.interrupted {
        return Err(Interrupted.into());
    }
    Ok(())
}
