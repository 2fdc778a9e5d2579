//! `iolab kv`: database workloads. Arguments -> `KvPlan` (kv_flags, `kv::settings`) ->
//! `kv::run::run` with the terminal observer -> exit code. Several
//! targets, `--make` or a `--plan` file: a media run (its parts read here,
//! planned and run by `campaign::kv_plan`).

use std::path::PathBuf;

use super::exports;
use super::kv_planfile::{self, KvPart};
use crate::campaign::kv_plan::{self, KvMediaSettings, Part};
use crate::cli::kv::KvArgs;
use crate::error::Interrupted;
use crate::kv::run::KvObserver;
use crate::plan::planfile;
use crate::report::kv_terminal::KvTerminal;
use crate::results::output;

pub fn run(args: KvArgs) -> anyhow::Result<()> {
    let args = super::kv_flags::misplaced(args)?;
    args.hosts.flags().check()?;
    if args.plan.is_some()
        || crate::campaign::setups::is_media_run(
            &super::media_flags(&args.media),
            args.place.target.len(),
        )
    {
        super::kv_hosts::refuse_media(&args)?;
        return media_run(args);
    }
    crate::campaign::setups::refuse_without_media(&super::media_flags(&args.media))?;
    crate::campaign::setups::refuse_size_without_make(args.place.size.as_ref(), false)?;
    let plan = super::kv_flags::plan(&args)?;
    crate::kv::instances::check(&plan, args.instances)?;
    let hosts = super::kv_hosts::refuse_what_hosts_cannot_run(&args, &plan)?;
    if let Some(raw) = plan.place.raw.as_ref().filter(|_| hosts.is_none()) {
        // The same device checks as the run (--dry-run included).
        crate::kv::raw::check(&plan, raw)?;
    }
    if let Some(out) = &plan.output {
        let devices: Vec<&std::path::Path> =
            plan.place.raw.iter().map(|r| r.device.as_path()).collect();
        output::check(out, "--output", args.force, &devices)?;
    }
    let exports = exports::parse(args.export.as_deref(), args.force, &[])?;
    let exports = exports::with_source(exports, plan.output.as_deref());
    if args.dry_run {
        println!(
            "engine: {} (defaults below are applied when it opens)",
            plan.engine.name()
        );
        for (k, v) in crate::kv::describe::options(&plan.options) {
            println!("  {k} = {v}");
        }
        println!("threads: {}", crate::kv::describe::clients(&plan));
        if args.instances > 1 {
            println!(
                "instances: {} (each with the threads above)",
                args.instances
            );
        }
        println!("database: {}", crate::kv::describe::place(&plan));
        for s in &plan.steps {
            println!("step: {}", crate::kv::describe::step(s));
        }
        return Ok(());
    }
    let term = KvTerminal::new(args.quiet);
    let done = match (&hosts, args.instances) {
        (Some(h), _) => super::kv_hosts::run(&args, &plan, h, &term)?,
        (None, 1) => crate::kv::run::run(&plan, &term)?,
        (None, n) => crate::kv::instances::run(&plan, n, &term, &crate::kv::instances::AtOnce)?,
    };
    if !args.quiet {
        if let Some(t) = crate::report::kv_intel::table(&done.results) {
            println!("\n{t}");
        }
    }
    if let (Some(out), false) = (&plan.output, args.quiet) {
        println!("\nresults: {}", out.display());
    }
    exports::write_all(&exports, &done.results, args.quiet)?;
    done.verified()?;
    if done.results.interrupted {
        return Err(Interrupted.into());
    }
    Ok(())
}

/// A media run: the parts (the command line, or `--plan`'s `[[kv]]`
/// tables with its `[media]` table applied), then `campaign::kv_plan`.
fn media_run(args: KvArgs) -> anyhow::Result<()> {
    if args.instances != 1 {
        return Err(crate::error::usage(
            "--instances",
            "not with a media run (several targets, --make or --plan): one database per target",
        ));
    }
    let mut a = args.clone();
    let mut notices = Vec::new();
    let parts = kv_parts(&mut a, &mut notices)?;
    let settings = KvMediaSettings {
        targets: target_values(&a),
        size: a.place.size.clone(),
        db: a.place.db.clone(),
        destroy_data: a.place.destroy_data.clone(),
        keep: a.place.keep,
        plan: a.plan.clone(),
        output: a.output.clone(),
        force: args.force,
        quiet: a.quiet,
        seed: a.seed,
        dry_run: args.dry_run,
    };
    let parts = parts
        .into_iter()
        .map(|p| Part {
            name: p.name,
            plan: move || super::kv_flags::plan(&p.args),
        })
        .collect();
    let targets = target_values(&a);
    let inputs: Vec<&std::path::Path> = targets.iter().map(|t| t.as_path()).collect();
    let exports = super::exports::parse(a.export.as_deref(), a.force, &inputs)?;
    let exports = super::exports::with_source(exports, a.output.as_deref());
    let presenter = super::exports::media_presenter(exports, |quiet| {
        Box::new(KvTerminal::new(quiet)) as Box<dyn KvObserver>
    });
    let flags = super::media_flags(&a.media);
    kv_plan::run(&settings, &flags, notices, parts, &presenter)
}

/// The targets the command line names: `--target`s, else `--dir` (the
/// older name), which with `--make` and no target is where the
/// configurations are built (`.` by default).
fn target_values(a: &KvArgs) -> Vec<PathBuf> {
    if !a.place.target.is_empty() {
        return a.place.target.iter().map(PathBuf::from).collect();
    }
    if a.media.make.is_some() && a.place.dir == std::path::Path::new(".") {
        return Vec::new();
    }
    vec![a.place.dir.clone()]
}

/// The parts to run: the `[[kv]]` tables of `--plan`, or the command line.
fn kv_parts(a: &mut KvArgs, notices: &mut Vec<String>) -> anyhow::Result<Vec<KvPart>> {
    let Some(path) = a.plan.clone() else {
        return Ok(vec![KvPart {
            name: a.engine.name().to_string(),
            args: a.clone(),
        }]);
    };
    let file = planfile::read(&path)?;
    let several = a.media.make.is_some() || a.place.target.len() > 1;
    // A plan file's parts are a campaign even on one target: its rounds
    // count as `--rounds` does.
    if several || file.media.contains_key("make") || file.media.contains_key("rounds") {
        super::device_flags::apply_media_table(&mut a.media, &path, &file, &a.given)?;
    }
    let parts = kv_planfile::parts(a, &path, &file)?;
    let all_lmdb = parts.iter().all(|p| p.args.engine.facts().raw_device);
    if !all_lmdb && !a.given.iter().any(|g| g == "make") {
        *notices = kv_plan::without_raw(&mut a.media.make, &path);
    }
    Ok(parts)
}
