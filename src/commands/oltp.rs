//! `iolab oltp`: arguments -> `OltpPlan` -> `oltp::run::run` with the
//! terminal observer -> exit code (2 bad input, 3 a consistency condition
//! failed, 130 interrupted). With `--hosts` the same plan runs on every
//! host at once (`fleet::oltp_run`): what cannot run there is refused here,
//! naming the flag, before any host is contacted.

use std::path::PathBuf;

use super::exports;
use crate::campaign::setups as media_set;
use crate::cli::oltp::OltpArgs;
use crate::error::{usage, Interrupted};
use crate::fleet::{self, JobTarget};
use crate::oltp::plan::OltpPlan;
use crate::oltp::run::OltpObserver;
use crate::oltp::settings::OltpSettings;
use crate::oltp::sql::connect::SqlEngine;
use crate::plan::parse::parse_duration_ns;
use crate::plan::units::Span;
use crate::report::oltp_terminal::OltpTerminal;
use crate::results::output;
use crate::servers::ServerSettings;

/// The plan the arguments describe, validated (on the first target: a
/// media run moves it to each).
pub fn plan(a: &OltpArgs) -> anyhow::Result<OltpPlan> {
    let target = a.target.first().cloned().unwrap_or_else(|| ".".into());
    let mut p = OltpPlan::new(target);
    p.engine = SqlEngine::parse(&a.engine).ok_or_else(|| {
        usage(
            "--engine",
            format!("'{}' is not sqlite, postgres or mariadb", a.engine),
        )
    })?;
    p.server_url = a.server.server_url.clone();
    p.settings = server_settings(a, p.engine)?;
    p.db = a.db.clone();
    p.keep = a.keep;
    p.warehouses = a.warehouses;
    p.users = OltpPlan::parse_users(&a.users)?;
    p.time_s = parse_duration_ns("--runtime", &a.time)? as f64 / 1e9;
    p.ramp_s = parse_duration_ns("--ramp", &a.ramp)? as f64 / 1e9;
    p.wait = a.wait;
    if let Some(n) = a.loader_threads {
        p.loader_threads = n;
    }
    p.seed = a.seed;
    p.output = a.output.clone();
    p.status_interval_s = a.status_interval;
    p.check = !a.no_check;
    p.validate()?;
    Ok(p)
}

/// The private server's settings; exit 2 naming the flag for a setting
/// that does not apply (a private server's with `--server-url`, another
/// server's, any with SQLite).
fn server_settings(a: &OltpArgs, engine: SqlEngine) -> anyhow::Result<ServerSettings> {
    let s = &a.server;
    let defaults = ServerSettings::default();
    if s.persistence != defaults.persistence.name() || s.appendfsync != defaults.appendfsync {
        let flag = if s.persistence != defaults.persistence.name() {
            "--persistence"
        } else {
            "--appendfsync"
        };
        return Err(usage(flag, "is Redis's, and Redis is not an oltp engine"));
    }
    if let Some(flag) = super::server_flags::private_only(s) {
        if engine == SqlEngine::Sqlite {
            return Err(usage(flag, "sets a private server, and sqlite has none"));
        }
        if s.server_url.is_some() {
            return Err(usage(
                flag,
                "sets the private server iolab starts; with --server-url the server is yours to configure",
            ));
        }
    }
    let other = match engine {
        SqlEngine::Postgres => [
            (s.buffer_pool.is_some(), "--buffer-pool"),
            (s.flush_method != defaults.flush_method, "--flush-method"),
        ],
        SqlEngine::Mariadb => [
            (s.shared_buffers.is_some(), "--shared-buffers"),
            (s.max_wal_size.is_some(), "--max-wal-size"),
        ],
        SqlEngine::Sqlite => [(false, ""); 2],
    };
    if let Some((_, flag)) = other.iter().find(|(set, _)| *set) {
        return Err(usage(
            *flag,
            format!("is not a setting of {}", engine.name()),
        ));
    }
    super::server_flags::settings(s)
}

/// The plan in words (`--dry-run`); a server URL without its password.
fn describe(p: &OltpPlan) -> String {
    let database = match (&p.db, &p.server_url) {
        (Some(db), _) => format!("{} (reused: no load)", db.display()),
        (None, Some(url)) => crate::servers::Endpoint::parse(url)
            .map(|e| format!("{} (its tables dropped and loaded anew)", e.display_url()))
            .unwrap_or_else(|_| "?".into()),
        (None, None) if p.engine != SqlEngine::Sqlite => format!(
            "a private {} server, data in {}/iolab-{}-PID-N (removed at exit){}",
            p.engine.name(),
            p.target.display(),
            p.engine.name(),
            settings_text(p)
        ),
        (None, None) => format!(
            "{}/iolab-oltp-PID/tpcc.sqlite ({})",
            p.target.display(),
            if p.keep {
                "kept"
            } else {
                "scratch, removed at exit"
            }
        ),
    };
    let users: Vec<String> = p.users.iter().map(|u| u.to_string()).collect();
    format!(
        "TPC-C-derived OLTP workload (not audited TPC-C; reports NOPM)\n\
         engine: {}\ndatabase: {database}\nwarehouses: {}\nvirtual users: {} (one point each)\n\
         ramp: {} s, measured: {} s per point\nkeying and think times: {}\nloader threads: {}\n\
         seed: {}\nconsistency check: {}\noutput: {}\n",
        p.engine.name(),
        p.warehouses,
        users.join(", "),
        p.ramp_s,
        p.time_s,
        if p.wait { "on" } else { "off" },
        p.loader_threads,
        p.seed,
        if p.check { "after each point" } else { "off" },
        p.output
            .as_ref()
            .map_or("none".to_string(), |o| o.display().to_string()),
    )
}

/// The settings given to a private server, for the dry run.
fn settings_text(p: &OltpPlan) -> String {
    let s = &p.settings;
    let mut parts = Vec::new();
    if p.engine == SqlEngine::Mariadb {
        parts.push(format!("innodb_flush_method {}", s.flush_method));
    }
    let size = |n: u64| crate::kv::report::human(n);
    if let Some(b) = s.shared_buffers {
        parts.push(format!("shared_buffers {}", size(b)));
    }
    if let Some(b) = s.max_wal_size {
        parts.push(format!("max_wal_size {}", size(b)));
    }
    if let Some(b) = s.buffer_pool {
        parts.push(format!("innodb_buffer_pool_size {}", size(b)));
    }
    parts.extend(s.set.iter().map(|(k, v)| format!("{k}={v}")));
    if parts.is_empty() {
        String::new()
    } else {
        format!("; {}", parts.join(", "))
    }
}

pub fn run(args: OltpArgs) -> anyhow::Result<()> {
    args.hosts.flags().check()?;
    let hosts = hosts_of(&args)?;
    if media_set::is_media_run(&super::media_flags(&args.media), args.target.len()) {
        return media_run(&args, hosts);
    }
    media_set::refuse_without_media(&super::media_flags(&args.media))?;
    media_set::refuse_size_without_make(args.size.as_ref(), false)?;
    if let Some(hosts) = hosts {
        return run_on_hosts(&args, &hosts);
    }
    let plan = plan(&args)?;
    if let Some(out) = &plan.output {
        output::check(out, "--output", args.force, &[])?;
    }
    let exports = exports::parse(args.export.as_deref(), args.force, &[])?;
    let exports = exports::with_source(exports, plan.output.as_deref());
    if args.dry_run {
        print!("{}", describe(&plan));
        return Ok(());
    }
    let done = crate::oltp::run::run(&plan, &OltpTerminal::new(args.quiet))?;
    if let (Some(out), false) = (&plan.output, args.quiet) {
        println!("\nresults: {}", out.display());
    }
    exports::write_all(&exports, &done.results, args.quiet)?;
    done.checked()?;
    if done.results.interrupted {
        return Err(Interrupted.into());
    }
    Ok(())
}

/// The hosts (`--hosts`), with what a run on them cannot do refused
/// naming the flag; `None` without --hosts.
fn hosts_of(a: &OltpArgs) -> anyhow::Result<Option<Vec<fleet::HostSpec>>> {
    let Some(list) = &a.hosts.hosts else {
        return Ok(None);
    };
    let hosts = fleet::parse_hosts(list, "--hosts")?;
    let local_only = [
        (
            "--db",
            a.db.is_some(),
            "names a database of this machine; each host loads its own in --target",
        ),
        (
            "--keep",
            a.keep,
            "the hosts' databases are removed at the end",
        ),
    ];
    if let Some((flag, _, why)) = local_only.iter().find(|(_, given, _)| *given) {
        return Err(usage(*flag, format!("not with --hosts: {why}")));
    }
    if a.engine != "sqlite" && a.server.server_url.is_none() {
        return Err(usage(
            "--engine",
            format!(
                "not with --hosts: {} would be a private server on every host (not supported yet); use sqlite, or --server-url for one server every host shares",
                a.engine
            ),
        ));
    }
    Ok(Some(hosts))
}

/// The directory on every host: the one --target, absolute; /var/tmp
/// when none was given.
fn host_dir(a: &OltpArgs) -> anyhow::Result<PathBuf> {
    let Some(dir) = a.target.first() else {
        return Ok(PathBuf::from("/var/tmp"));
    };
    if !dir.is_absolute() {
        return Err(usage(
            "--target",
            format!(
                "with --hosts the directory is one on every host, given as an absolute path (not {})",
                dir.display()
            ),
        ));
    }
    Ok(dir.clone())
}

/// What every host builds its plan from: the plan's settings with the
/// durations as typed (the flags' text).
fn settings_on_hosts(a: &OltpArgs, plan: &OltpPlan) -> anyhow::Result<OltpSettings> {
    let span = |flag: &str, text: &str| -> anyhow::Result<Span> {
        text.parse::<Span>().map_err(|e| usage(flag, e.0))
    };
    Ok(OltpSettings::of(
        plan,
        span("--runtime", &a.time)?,
        span("--ramp", &a.ramp)?,
        a.loader_threads,
    ))
}

/// `oltp --hosts`: checked here, then connect to every host (exit 2
/// naming each host that cannot be reached or runs another build), run
/// the load and the points there and close the fleet (every host's
/// database removed).
fn run_on_hosts(a: &OltpArgs, hosts: &[fleet::HostSpec]) -> anyhow::Result<()> {
    let dir = host_dir(a)?;
    let mut plan = plan(a)?;
    plan.target = dir.clone();
    let settings = settings_on_hosts(a, &plan)?;
    if let Some(out) = &plan.output {
        output::check(out, "--output", a.force, &[])?;
    }
    let exports = exports::parse(a.export.as_deref(), a.force, &[])?;
    let exports = exports::with_source(exports, plan.output.as_deref());
    if a.dry_run {
        print!("{}", describe(&plan));
        let names: Vec<String> = hosts.iter().map(|h| h.to_string()).collect();
        let own = match plan.server_url {
            Some(_) => "in a namespace iolab_PID_HOST of its own on the server".to_string(),
            None => format!("in {}", dir.display()),
        };
        println!(
            "hosts: {} (each loads and runs its own database {own}; not contacted now)",
            names.join(", "),
        );
        return Ok(());
    }
    let term = OltpTerminal::new(a.quiet);
    let mut f = a.hosts.flags().connect(hosts, a.quiet)?;
    let on = fleet::oltp_run::OltpOnHosts {
        plan: &plan,
        settings,
        target: JobTarget {
            dir: Some(dir.display().to_string()),
            size: None,
            overwrite: false,
            ..JobTarget::default()
        },
        on_loss: a.hosts.on_host_loss.into(),
    };
    let ran = fleet::oltp_run::run(&mut f, &on, &term);
    f.close();
    let done = ran?;
    if let (Some(out), false) = (&plan.output, a.quiet) {
        println!("\nresults: {}", out.display());
    }
    exports::write_all(&exports, &done.results, a.quiet)?;
    done.checked()?;
    if done.results.interrupted {
        return Err(Interrupted.into());
    }
    Ok(())
}

/// A media run (several targets, `--make`): `campaign::oltp_plan`, on
/// every host of `hosts` if given (each target a directory on all of
/// them).
fn media_run(args: &OltpArgs, hosts: Option<Vec<fleet::HostSpec>>) -> anyhow::Result<()> {
    let media = crate::campaign::oltp_plan::OltpMediaSettings {
        target: args.target.clone(),
        size: args.size.clone(),
        keep: args.keep,
        db: args.db.clone(),
        server_url: args.server.server_url.clone(),
        output: args.output.clone(),
        force: args.force,
        quiet: args.quiet,
        dry_run: args.dry_run,
    };
    let targets: Vec<&std::path::Path> = args.target.iter().map(|t| t.as_path()).collect();
    let exports = exports::parse(args.export.as_deref(), args.force, &targets)?;
    let exports = exports::with_source(exports, args.output.as_deref());
    let presenter = exports::media_presenter(exports, |quiet| {
        Box::new(OltpTerminal::new(quiet)) as Box<dyn OltpObserver>
    });
    let mut flags = super::media_flags(&args.media);
    flags.on_hosts = hosts.is_some();
    let hosts = match hosts {
        Some(h) => {
            let (quiet, host_flags) = (args.quiet, args.hosts.flags());
            Some(crate::campaign::oltp_plan::OltpHostsConnect {
                settings: settings_on_hosts(args, &plan(args)?)?,
                on_loss: host_flags.on_host_loss,
                connect: Box::new(move || host_flags.connect(&h, quiet)),
            })
        }
        None => None,
    };
    crate::campaign::oltp_plan::run(&media, &flags, || plan(args), &presenter, hosts)
}
