//! `iolab oltp`: arguments -> `OltpPlan` -> `oltp::run::run` with the
//! terminal observer -> exit code (2 bad input, 3 a consistency condition
//! failed, 130 interrupted).

use crate::cli::oltp::OltpArgs;
use crate::error::{usage, Interrupted};
use crate::oltp::plan::OltpPlan;
use crate::oltp::sql::connect::Engine;
use crate::plan::parse::parse_duration_ns;
use crate::report::oltp_terminal::OltpTerminal;
use crate::results::output;

/// The plan the arguments describe, validated.
pub fn plan(a: &OltpArgs) -> anyhow::Result<OltpPlan> {
    let mut p = OltpPlan::new(a.target.clone());
    p.engine = Engine::parse(&a.engine).ok_or_else(|| {
        usage(
            "--engine",
            format!("'{}' is not sqlite, postgres or mariadb", a.engine),
        )
    })?;
    p.server_url = a.server_url.clone();
    p.db = a.db.clone();
    p.keep = a.keep;
    p.warehouses = a.warehouses;
    p.users = OltpPlan::parse_users(&a.users)?;
    p.time_s = parse_duration_ns("--time", &a.time)? as f64 / 1e9;
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

/// The plan in words (`--dry-run`); a server URL without its password.
fn describe(p: &OltpPlan) -> String {
    let database = match (&p.db, &p.server_url) {
        (Some(db), _) => format!("{} (reused: no load)", db.display()),
        (None, Some(url)) => crate::oltp::sql::DbConnect::parse_url(p.engine, url)
            .map(|c| c.describe())
            .unwrap_or_else(|_| "?".into()),
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

pub fn run(args: OltpArgs) -> anyhow::Result<()> {
    let plan = plan(&args)?;
    if let Some(out) = &plan.output {
        output::check(out, "--output", args.force, &[])?;
    }
    if args.dry_run {
        print!("{}", describe(&plan));
        return Ok(());
    }
    let done = crate::oltp::run::run(&plan, &OltpTerminal::new(args.quiet))?;
    if let (Some(out), false) = (&plan.output, args.quiet) {
        println!("\nresults: {}", out.display());
    }
    done.checked()?;
    if done.results.interrupted {
        return Err(Interrupted.into());
    }
    Ok(())
}
