//! `iolab remote`: the NVMe-oF study's comparison in one command. A scratch
//! file on the storage under test; the same jobs on it locally (DAS) and
//! through each transport's server on the target host (namespaces joined
//! by a veth pair as root, loopback otherwise); the target's CPU and the
//! link's traffic sampled with every point; the unloaded latency
//! breakdown over iolab's own target; results.json and report.html.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::cli::remote::RemoteArgs;
use crate::dut::{self, TargetOptions};
use crate::engine::EngineKind;
use crate::error::usage;
use crate::interrupt;
use crate::plan::job::{JobSpec, Pattern, StopCondition};
use crate::plan::parse::{format_ns, parse_duration_ns, parse_size};
use crate::remote::faults;
use crate::remote::servers::{Transport, TRANSPORT_NAMES};
use crate::remote::topology::{self, Topology};
use crate::results::time;

use crate::campaign::remote::jobs_on;
pub use crate::campaign::remote::RemotePlan;
use crate::campaign::{remote_db, remote_hosts};

fn list<T>(
    field: &str,
    s: &str,
    one: impl Fn(&str) -> Option<T>,
    what: &str,
) -> anyhow::Result<Vec<T>> {
    let v: Vec<T> = s
        .split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(|x| one(x).ok_or_else(|| usage(field, format!("'{x}' is not {what}"))))
        .collect::<anyhow::Result<_>>()?;
    if v.is_empty() {
        return Err(usage(field, "give at least one value"));
    }
    Ok(v)
}

/// Whether `s` is a rate tc's tbf accepts: a positive number and one of
/// tc's units (bits or bytes per second, SI or IEC), checked here so a bad
/// one is refused before the namespaces are built.
fn tc_rate(s: &str) -> bool {
    const UNITS: [&str; 19] = [
        "", "bit", "kbit", "mbit", "gbit", "tbit", "kibit", "mibit", "gibit", "tibit", "bps",
        "kbps", "mbps", "gbps", "tbps", "kibps", "mibps", "gibps", "tibps",
    ];
    let lower = s.trim().to_ascii_lowercase();
    let split = lower
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(lower.len());
    let (number, unit) = lower.split_at(split);
    number
        .parse::<f64>()
        .is_ok_and(|n| n > 0.0 && n.is_finite())
        && UNITS.contains(&unit)
}

/// Check every argument before anything is set up.
pub fn plan(a: &RemoteArgs) -> anyhow::Result<RemotePlan> {
    let threads = list(
        "--target-threads",
        &a.target_threads,
        |x| x.parse::<usize>().ok().filter(|n| (1..=64).contains(n)),
        "a thread count from 1 to 64",
    )?;
    let mut transports = Vec::new();
    let given = list(
        "--transports",
        &a.transports,
        Transport::parse,
        &format!("one of {TRANSPORT_NAMES}"),
    )?;
    for (i, t) in given.iter().enumerate() {
        if given[..i].contains(t) {
            let word = a
                .transports
                .split(',')
                .map(str::trim)
                .filter(|w| !w.is_empty())
                .nth(i);
            return Err(usage(
                "--transports",
                format!("'{}' is named twice", word.unwrap_or_default()),
            ));
        }
    }
    for t in given {
        if t.own() {
            transports.extend(threads.iter().map(|&n| t.with_threads(n)))
        } else {
            transports.push(t)
        }
    }
    transports.dedup();
    let inject = faults::check(a.inject_errors.as_deref(), &transports)?;
    let mixes = list(
        "--mixes",
        &a.mixes,
        |x| x.parse::<u8>().ok().filter(|m| *m <= 100),
        "a read percentage from 0 to 100",
    )?;
    let qds = list(
        "--qd",
        &a.qd,
        |x| x.parse::<u32>().ok().filter(|q| (1..=1024).contains(q)),
        "a queue depth from 1 to 1024",
    )?;
    let rates = if a.rates.trim() == "none" {
        Vec::new()
    } else {
        list(
            "--rates",
            &a.rates,
            |x| x.parse::<f64>().ok().filter(|r| *r > 0.0 && *r <= 200.0),
            "a percentage of the closed-loop maximum (0 to 200), or none",
        )?
    };
    if !rates.is_empty() && !mixes.contains(&100) {
        return Err(usage(
            "--rates",
            "the load-latency curve is relative to the read-only point: add 100 to --mixes, or give --rates none",
        ));
    }
    let bs = parse_size("--bs", &a.bs)?;
    if bs < 512 || bs % 512 != 0 || bs > 1 << 20 {
        return Err(usage("--bs", "must be a multiple of 512 bytes up to 1 MiB"));
    }
    if !(1..=64).contains(&a.jobs) {
        return Err(usage("--jobs", "must be 1 to 64"));
    }
    let runtime = parse_duration_ns("--runtime", &a.runtime)?;
    if runtime < 100_000_000 {
        return Err(usage("--runtime", "give at least 100ms"));
    }
    let ramp = parse_duration_ns("--ramp", &a.ramp)?;
    let io_timeout_ns = crate::plan::device_args::parse_io_timeout(a.io_timeout.as_deref())?;
    let size = parse_size("--size", &a.size)?;
    if size < 16 << 20 {
        return Err(usage("--size", "the scratch file needs at least 16m"));
    }
    if let Some(d) = &a.fabric_delay {
        parse_duration_ns("--fabric-delay", d)?;
    }
    if let Some(rate) = &a.fabric_rate {
        if !tc_rate(rate) {
            return Err(usage(
                "--fabric-rate",
                format!("'{rate}' is not a rate (a number with a unit tc knows: 100mbit, 1gbit, 125mbps, ...)"),
            ));
        }
        let why = if a.loopback {
            Some("--loopback".to_string())
        } else {
            topology::namespaces_unavailable()
        };
        if let Some(why) = why {
            return Err(usage(
                "--fabric-rate",
                format!("shaping needs the namespaces' veth pair, and the link is loopback here ({why})"),
            ));
        }
    }
    let mut jobs = Vec::new();
    for &qd in &qds {
        for &mix in &mixes {
            let pattern = match mix {
                100 => Pattern::RandRead,
                0 => Pattern::RandWrite,
                _ => Pattern::RandRw,
            };
            jobs.push(JobSpec {
                pattern,
                mix,
                bs: vec![(bs, 100)],
                qd,
                jobs: a.jobs,
                stop: StopCondition {
                    runtime_ns: Some(runtime),
                    io_count: None,
                    io_bytes: None,
                },
                ramp_ns: ramp,
                seed: a.seed,
                io_timeout_ns,
                continue_on_error: a.continue_on_error,
                ..JobSpec::default()
            });
        }
    }
    Ok(RemotePlan {
        transports,
        jobs,
        size,
        rates,
        breakdown: a.breakdown,
        fabric_rate: a.fabric_rate.clone(),
        fabric_delay: a.fabric_delay.clone(),
        db: remote_db::plan(a, size)?,
        inject,
    })
}

fn print_plan(plan: &RemotePlan, a: &RemoteArgs) {
    println!(
        "iolab remote on {} ({} MiB scratch file):",
        a.target.display(),
        plan.size >> 20
    );
    for t in &plan.transports {
        let why = t
            .unavailable()
            .map(|w| format!(" — skipped: {w}"))
            .unwrap_or_default();
        let injected = plan
            .injected(*t)
            .map(|i| format!("; {}", i.phrase()))
            .unwrap_or_default();
        println!("  {:<18} {}{injected}{why}", t.label(), t.backing());
    }
    if a.continue_on_error {
        println!("  --continue-on-error: failed requests counted per errno in each point's errors, the point kept");
    }
    println!(
        "  {}",
        crate::remote::kernel::summary(&crate::remote::kernel::initiators())
    );
    for j in jobs_on(plan, EngineKind::Nbd, "") {
        println!(
            "      {:<40} {} + {} ramp",
            j.name.trim_end_matches("-nbd"),
            format_ns(j.stop.runtime_ns.unwrap_or(0) as f64),
            format_ns(j.ramp_ns as f64)
        );
    }
    if plan.breakdown > 0 {
        println!(
            "  breakdown: {} QD1 reads over iolab's target",
            plan.breakdown
        );
    }
    let runs = plan
        .transports
        .iter()
        .filter(|t| t.unavailable().is_none())
        .count();
    let (points, secs) = plan.estimate(runs);
    println!(
        "total: {points} point(s) on {runs} transport(s), ~{secs:.0} s measured (plus each transport's set-up and the scratch file layout{})",
        if plan.db.is_some() { "; the database steps run to their op counts" } else { "" }
    );
    if let Some(db) = &plan.db {
        println!(
            "  database: RocksDB fillseq {} keys, then readrandomwriterandom {} ops ({}% reads), values {:?} bytes, on ext4 on each volume",
            db.num, db.ops, db.read_percent, db.values
        );
        for t in &plan.transports {
            if let Some(why) = plan.db_skipped(*t) {
                println!("      no database on {}: {why}", t.label());
            }
        }
    }
}

/// Keys a plan file may set: every flag but where things are and go.
const COMMAND_LINE_ONLY: &[&str] = &[
    "target",
    "plan",
    "output",
    "force",
    "quiet",
    "dry_run",
    "given",
    "hosts",
    "ssh_config",
    "deploy",
    "host_iolab",
    "on_host_loss",
    "target_host",
    "target_address",
];

/// Apply a plan file's settings (TOML, flag names as keys, `description`
/// ignored) onto `a`, except flags given on the command line.
fn apply_plan_file(a: &mut RemoteArgs, path: &Path) -> anyhow::Result<()> {
    let field = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| usage("--plan", format!("cannot read {field}: {e}")))?;
    let doc: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| usage(&field, format!("not valid TOML: {e}")))?;
    let mut argv = Vec::new();
    for (k, v) in &doc {
        let id = k.replace('-', "_");
        if id == "description" {
            continue;
        }
        if COMMAND_LINE_ONLY.contains(&id.as_str()) {
            return Err(usage(&field, format!("{k} is command-line only")));
        }
        if a.given.contains(&id) {
            continue;
        }
        let value = crate::plan::planfile::value_text(&format!("{field}: {k}"), v)?;
        argv.push(format!("--{}={value}", k.replace('_', "-")));
    }
    super::device_flags::apply_flags(a, argv).map_err(|e| usage(&field, format!("{e:#}")))
}

pub fn run(mut a: RemoteArgs) -> anyhow::Result<()> {
    if let Some(p) = a.plan.clone() {
        apply_plan_file(&mut a, &p)?;
    }
    remote_hosts::defaults(&mut a);
    let plan = plan(&a)?;
    if let Some(hp) = remote_hosts::check(&a, &plan)? {
        return run_on_hosts(&a, &plan, &hp);
    }
    if !a.target.is_dir() {
        return Err(usage(
            "--target",
            format!("{} is not a directory", a.target.display()),
        ));
    }
    if a.dry_run {
        print_plan(&plan, &a);
        return Ok(());
    }
    interrupt::install();
    let dir = output_dir(&a);
    crate::campaign::run::check_outputs(&dir, a.force)?;
    let mut topo = Topology::choose(a.loopback)?;
    if let Some(rate) = &plan.fabric_rate {
        topo.limit_rate(rate)
            .map_err(|e| usage("--fabric-rate", format!("{e:#}")))?;
    }
    if !a.quiet {
        eprintln!(
            "iolab: preparing a {} MiB scratch file in {}...",
            plan.size >> 20,
            a.target.display()
        );
    }
    let local = dut::prepare(
        &TargetOptions {
            path: Some(a.target.clone()),
            size: Some(plan.size),
            ..Default::default()
        },
        true,
        None,
        a.seed,
    )?;
    std::fs::create_dir_all(&dir)
        .map_err(|e| usage("--output", format!("cannot create {}: {e}", dir.display())))?;
    topo.enter_initiator()?;
    let t0 = Instant::now();
    let results = crate::campaign::remote::run_transports(&a, &plan, &mut topo, &local, &dir);
    topo.leave_initiator();
    drop(topo);
    drop(local);
    let results = results?;
    crate::campaign::run::finish(
        results,
        &dir.join("results.json"),
        &dir.join("report.html"),
        a.quiet,
        t0,
        crate::report::remote_terminal::remote_summary,
    )
}

/// Across hosts: the plan printed, or the hosts' run (T serving each export).
fn run_on_hosts(
    a: &RemoteArgs,
    plan: &RemotePlan,
    hp: &remote_hosts::HostsPlan,
) -> anyhow::Result<()> {
    if a.dry_run {
        print_plan(plan, a);
        println!(
            "on {} host(s) at once against target host {} (its directory {}):",
            hp.hosts.len(),
            hp.target,
            a.target.display()
        );
        for s in &hp.skipped {
            println!("  {s}");
        }
        return Ok(());
    }
    interrupt::install();
    let dir = output_dir(a);
    crate::campaign::run::check_outputs(&dir, a.force)?;
    std::fs::create_dir_all(&dir)
        .map_err(|e| usage("--output", format!("cannot create {}: {e}", dir.display())))?;
    let t0 = Instant::now();
    let results = remote_hosts::run(a, plan, hp, &dir)?;
    crate::campaign::run::finish(
        results,
        &dir.join("results.json"),
        &dir.join("report.html"),
        a.quiet,
        t0,
        crate::report::remote_terminal::remote_summary,
    )
}

fn output_dir(a: &RemoteArgs) -> PathBuf {
    a.output.clone().unwrap_or_else(|| {
        PathBuf::from(format!(
            "iolab-remote-{}",
            time::compact(std::time::SystemTime::now())
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::tc_rate;

    #[test]
    fn rates_are_checked_as_tc_reads_them() {
        for ok in ["1gbit", "100mbit", "125MBps", "1.5gbit", "8000", "10kibit"] {
            assert!(tc_rate(ok), "{ok}");
        }
        for bad in [
            "abc", "", "0mbit", "1 gbit", "1g", "mbit", "-5mbit", "1e3bit",
        ] {
            assert!(!tc_rate(bad), "{bad}");
        }
    }
}
