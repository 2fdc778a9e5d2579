//! `iolab kv`: database workloads. Arguments -> `KvPlan` (kv_flags, `kv::settings`) ->
//! `kv::run::run` with the terminal observer -> exit code. Several
//! targets, `--make` or a `--plan` file: a media run (its parts read here,
//! planned and run by `campaign::kv_plan`). With `--hosts` the same plan
//! or campaign runs on every host at once (`fleet::kv_run`): what cannot
//! run there is refused here, naming the flag, before any host is contacted.

use std::path::{Path, PathBuf};

use super::exports;
use super::kv_planfile::{self, KvPart};
use crate::campaign::kv_plan::{self, KvHostsConnect, KvMediaSettings, Part};
use crate::cli::kv::KvArgs;
use crate::error::{usage, Interrupted};
use crate::fleet::{self, JobTarget};
use crate::kv::plan::KvPlan;
use crate::kv::run::{KvObserver, KvRun};
use crate::kv::settings::KvSettings;
use crate::plan::planfile;
use crate::report::kv_terminal::KvTerminal;
use crate::results::output;

pub fn run(args: KvArgs) -> anyhow::Result<()> {
    let args = super::kv_flags::misplaced(args)?;
    args.hosts.flags().check()?;
    let hosts = hosts_of(&args)?;
    if args.plan.is_some()
        || crate::campaign::setups::is_media_run(
            &super::media_flags(&args.media),
            args.place.target.len(),
        )
    {
        return media_run(args, hosts);
    }
    crate::campaign::setups::refuse_without_media(&super::media_flags(&args.media))?;
    crate::campaign::setups::refuse_size_without_make(args.place.size.as_ref(), false)?;
    let plan = super::kv_flags::plan(&args)?;
    crate::kv::instances::check(&plan, args.instances)?;
    if hosts.is_some() {
        refuse_server_on_hosts(&args, &plan)?;
        host_dir(&plan.place.dir)?;
    }
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
        (Some(h), _) => run_on_hosts(&args, &plan, h, &term)?,
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

/// The hosts (`--hosts`), with what a run on them cannot do refused
/// naming the flag; `None` without --hosts.
fn hosts_of(a: &KvArgs) -> anyhow::Result<Option<Vec<fleet::HostSpec>>> {
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
    Ok(Some(hosts))
}

/// A database server on hosts: only one every host shares (--server-url).
fn refuse_server_on_hosts(a: &KvArgs, plan: &KvPlan) -> anyhow::Result<()> {
    if plan.engine.server().is_some() && a.server.server_url.is_none() {
        return Err(usage(
            "--engine",
            format!(
                "not with --hosts: {} is a database server (a private server on every host is not supported yet); use an embedded engine, or --server-url for one server every host shares",
                plan.engine.name()
            ),
        ));
    }
    Ok(())
}

/// The directory on every host: `dir` (--dir or the one --target),
/// absolute; /var/tmp when neither was given.
fn host_dir(dir: &Path) -> anyhow::Result<PathBuf> {
    if dir == Path::new(".") {
        return Ok(PathBuf::from("/var/tmp"));
    }
    if !dir.is_absolute() {
        return Err(usage(
            "--dir",
            format!(
                "with --hosts the directory is one on every host, given as an absolute path (not {})",
                dir.display()
            ),
        ));
    }
    Ok(dir.to_path_buf())
}

/// What every host builds its plan from: the flags as given, with
/// nothing of this machine's (its results file, property files read here).
fn settings_on_hosts(a: &KvArgs, dir: PathBuf) -> anyhow::Result<KvSettings> {
    let mut settings = super::kv_flags::kv_settings(a);
    settings.output = None;
    settings.status_interval = None;
    settings.place.target.clear();
    settings.place.dir = dir;
    settings.inline_property_files()?;
    Ok(settings)
}

/// Connect to every host (exit 2 naming each host that cannot be reached
/// or runs another build; nothing is left running anywhere then), run the
/// plan's phases there and close the fleet (every host's databases removed).
fn run_on_hosts(
    a: &KvArgs,
    plan: &KvPlan,
    hosts: &[fleet::HostSpec],
    obs: &dyn KvObserver,
) -> anyhow::Result<KvRun> {
    let dir = host_dir(&plan.place.dir)?;
    let settings = settings_on_hosts(a, dir.clone())?;
    let mut f = a.hosts.flags().connect(hosts, a.quiet)?;
    let on = fleet::kv_run::KvOnHosts {
        plan,
        settings,
        instances: a.instances,
        target: JobTarget {
            dir: Some(dir.display().to_string()),
            size: None,
            overwrite: false,
            ..JobTarget::default()
        },
        on_loss: a.hosts.on_host_loss.into(),
    };
    let ran = fleet::kv_run::run(&mut f, &on, obs);
    f.close();
    ran
}

/// A media run: the parts (the command line, or `--plan`'s `[[kv]]`
/// tables with its `[media]` table applied), then `campaign::kv_plan`,
/// on every host of `hosts` if given.
fn media_run(args: KvArgs, hosts: Option<Vec<fleet::HostSpec>>) -> anyhow::Result<()> {
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
        .map(|p| {
            let on_hosts = match hosts {
                Some(_) => Some(settings_on_hosts(&p.args, p.args.place.dir.clone())?),
                None => None,
            };
            Ok(Part {
                name: p.name,
                plan: move || super::kv_flags::plan(&p.args),
                on_hosts,
            })
        })
        .collect::<anyhow::Result<_>>()?;
    let targets = target_values(&a);
    let inputs: Vec<&std::path::Path> = targets.iter().map(|t| t.as_path()).collect();
    let exports = super::exports::parse(a.export.as_deref(), a.force, &inputs)?;
    let exports = super::exports::with_source(exports, a.output.as_deref());
    let presenter = super::exports::media_presenter(exports, |quiet| {
        Box::new(KvTerminal::new(quiet)) as Box<dyn KvObserver>
    });
    let mut flags = super::media_flags(&a.media);
    flags.on_hosts = hosts.is_some();
    let (quiet, host_flags) = (a.quiet, a.hosts.flags());
    let hosts = hosts.map(|h| KvHostsConnect {
        on_loss: host_flags.on_host_loss,
        connect: Box::new(move || host_flags.connect(&h, quiet)),
    });
    kv_plan::run(&settings, &flags, (notices, parts), &presenter, hosts)
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
