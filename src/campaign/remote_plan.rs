//! `iolab remote`'s flags as given (`cli::remote::RemoteArgs` documents
//! each; commands/remote_flags.rs copies them) and their checks: every
//! argument checked before anything is set up, into a `RemotePlan` (and,
//! across hosts, a `HostsPlan`); the plan in words for `--dry-run`.

use std::path::PathBuf;

use crate::error::usage;
use crate::fleet::target_host::FLAG;
use crate::fleet::{self, HostSpec, HostsFlags};
use crate::plan::engines::{EngineConfig, EngineKind};
use crate::plan::job::{JobSpec, Pattern, StopCondition};
use crate::plan::parse::format_ns;
use crate::remote::faults;
use crate::remote::topology;
use crate::servers::storage::{Transport, TRANSPORT_NAMES};

use super::remote::{jobs_on, RemotePlan};
use super::remote_db;
use crate::plan::units::{Percents, Size, Sizes, Span, TcRate};

/// The flags of `iolab remote` as given (a plan file's settings applied).
#[derive(Debug, Clone)]
pub struct RemoteSettings {
    pub target: PathBuf,
    pub size: Size,
    pub transports: String,
    pub mixes: String,
    pub qd: String,
    pub bs: Size,
    pub jobs: u32,
    pub runtime: Span,
    pub ramp: Span,
    pub io_timeout: Option<Span>,
    pub rates: Percents,
    pub target_threads: String,
    pub breakdown: usize,
    pub fabric_rate: Option<TcRate>,
    pub fabric_delay: Option<Span>,
    pub db: Sizes,
    pub db_num: u64,
    pub db_ops: u64,
    pub db_read_percent: u8,
    pub continue_on_error: bool,
    pub inject_errors: Option<String>,
    pub loopback: bool,
    pub output: Option<PathBuf>,
    /// `--json`: a copy of the results file, written at the end.
    pub json: Option<PathBuf>,
    pub force: bool,
    pub seed: u64,
    pub quiet: bool,
    pub dry_run: bool,
    pub target_host: Option<String>,
    pub target_address: Option<String>,
    pub hosts: HostsFlags,
    /// The flags given on the command line (a plan file does not override them).
    pub given: Vec<String>,
}

impl RemoteSettings {
    /// `--output` and `--json` checked before anything runs (a dry run
    /// too): a directory that can be made or written, a file that may be
    /// replaced, neither the target.
    pub fn check_outputs(&self) -> anyhow::Result<()> {
        crate::campaign::run::check_outputs(&self.output_dir(), self.force)?;
        if let Some(j) = self.json.as_deref().filter(|_| !self.json_to_stdout()) {
            crate::results::output::check(j, "--json", self.force, &[self.target.as_path()])?;
        }
        Ok(())
    }

    /// `--json -`: the results on stdout at the end, instead of the tables.
    pub fn json_to_stdout(&self) -> bool {
        self.json.as_deref() == Some(std::path::Path::new("-"))
    }

    /// Write the `--json` copy of the results, if asked.
    pub fn write_json(&self, results: &crate::results::Results) -> anyhow::Result<()> {
        match &self.json {
            Some(_) if self.json_to_stdout() => {
                println!("{}", serde_json::to_string_pretty(results)?);
                Ok(())
            }
            Some(j) => results.write_atomic(j),
            None => Ok(()),
        }
    }

    /// Where results.json and report.html go (`--output`, or a new
    /// directory named for the time).
    pub fn output_dir(&self) -> PathBuf {
        self.output.clone().unwrap_or_else(|| {
            PathBuf::from(format!(
                "iolab-remote-{}",
                crate::results::time::compact(std::time::SystemTime::now())
            ))
        })
    }
}

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

/// Remote transports that are all kernel paths or RDMA transports this
/// kernel cannot run leave nothing to compare: refused, naming them.
/// Beside one that runs, they are skipped with a warning (a study's plan
/// names every transport).
fn check_kernel_paths(given: &[Transport]) -> anyhow::Result<()> {
    let remote: Vec<&Transport> = given.iter().filter(|t| !t.is_local()).collect();
    let missing: Vec<(&Transport, String)> = remote
        .iter()
        .filter(|t| t.is_kernel() || t.is_rdma())
        .filter_map(|t| t.unavailable().map(|why| (*t, why)))
        .collect();
    match missing.first() {
        Some((t, why)) if missing.len() == remote.len() => Err(usage(
            "--transports",
            format!("{} cannot run here: {why}", t.label()),
        )),
        _ => Ok(()),
    }
}

/// Check every argument before anything is set up.
pub fn plan(a: &RemoteSettings) -> anyhow::Result<RemotePlan> {
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
    if !a.dry_run && a.target_host.is_none() {
        check_kernel_paths(&given)?;
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
    let rates = a.rates.values().to_vec();
    if a.rates.text() != "none" {
        if let Some(r) = rates.iter().find(|r| !(**r > 0.0 && **r <= 200.0)) {
            return Err(usage(
                "--rates",
                format!("'{r}' is not a percentage of the closed-loop maximum (0 to 200), or none"),
            ));
        }
        if rates.is_empty() {
            return Err(usage("--rates", "give at least one value"));
        }
    }
    if !rates.is_empty() && !mixes.contains(&100) {
        return Err(usage(
            "--rates",
            "the load-latency curve is relative to the read-only point: add 100 to --mixes, or give --rates none",
        ));
    }
    let bs = a.bs.bytes();
    if bs < 512 || !bs.is_multiple_of(512) || bs > 1 << 20 {
        return Err(usage("--bs", "must be a multiple of 512 bytes up to 1 MiB"));
    }
    if !(1..=64).contains(&a.jobs) {
        return Err(usage("--jobs", "must be 1 to 64"));
    }
    let runtime = a.runtime.ns();
    if runtime < 100_000_000 {
        return Err(usage("--runtime", "give at least 100ms"));
    }
    let ramp = a.ramp.ns();
    let io_timeout_ns = crate::plan::device_args::io_timeout(a.io_timeout.as_ref())?;
    let size = a.size.bytes();
    if size < 16 << 20 {
        return Err(usage("--size", "the scratch file needs at least 16m"));
    }
    if a.fabric_rate.is_some() {
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
        fabric_rate: a.fabric_rate.as_ref().map(|r| r.text().to_string()),
        fabric_delay: a.fabric_delay.clone(),
        db: remote_db::plan(a, size)?,
        inject,
    })
}

/// The plan in words: transports, jobs, what is skipped and why, the
/// estimated time.
pub fn print_plan(plan: &RemotePlan, a: &RemoteSettings) {
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
        crate::testbed::kernel_modules::summary(&crate::testbed::kernel_modules::initiators())
    );
    for j in jobs_on(plan, &EngineConfig::default_for(EngineKind::served()), "") {
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

/// The transports a target host serves when --transports is left alone.
pub const DEFAULT_TRANSPORTS: &str = "iolab,nvme-tcp";
/// `--transports`' default on one machine.
const LOCAL_DEFAULT: &str = "das,iolab,qemu-nbd,nbdkit-file";

/// The hosts and the target host of a run across hosts (`--hosts`,
/// `--target-host`), checked.
pub struct HostsPlan {
    pub hosts: Vec<HostSpec>,
    pub target: HostSpec,
    pub address: Option<String>,
    pub opts: fleet::FleetOptions,
    /// Steps of a local run that are skipped here, said in the results.
    pub skipped: Vec<String>,
}

/// Before the plan: across hosts the default transports are the ones a
/// target host serves (this machine's defaults include das and servers T
/// may not have).
pub fn defaults(a: &mut RemoteSettings) {
    if a.hosts.hosts.is_some() && a.transports == LOCAL_DEFAULT {
        a.transports = DEFAULT_TRANSPORTS.into();
    }
}

/// The flags of a run across hosts, checked against the rest; `None`
/// without --hosts. Everything is refused before anything is started.
pub fn check_hosts(a: &RemoteSettings, plan: &RemotePlan) -> anyhow::Result<Option<HostsPlan>> {
    a.hosts.check()?;
    if a.target_address.is_some() && a.target_host.is_none() {
        return Err(usage("--target-address", "applies only with --target-host"));
    }
    let (list, t) = match (&a.hosts.hosts, &a.target_host) {
        (None, None) => return Ok(None),
        (None, Some(_)) => return Err(usage(FLAG, "applies only with --hosts")),
        (Some(_), None) => {
            return Err(usage(
                "--hosts",
                "remote on several hosts needs --target-host, the storage server they share \
                 (this machine's targets run in namespaces the hosts cannot reach)",
            ))
        }
        (Some(l), Some(t)) => (l, t),
    };
    let hosts = fleet::parse_hosts(list, "--hosts")?;
    let target = fleet::hosts::parse_host(t, FLAG)?;
    if hosts.iter().any(|h| h.to_string() == target.to_string()) {
        return Err(usage(FLAG, format!("{t} is also in --hosts")));
    }
    if let Some(tr) = plan
        .transports
        .iter()
        .find(|t| t.facts().served_as.is_none())
    {
        return Err(usage(
            "--transports",
            format!(
                "{} is not served on a target host (iolab, nvme-tcp, qemu-nbd, nbdkit-file and nbdkit-memory are)",
                tr.label()
            ),
        ));
    }
    if !a.target.is_absolute() {
        return Err(usage(
            "--target",
            format!(
                "with --target-host, a directory on that host given as an absolute path (not {})",
                a.target.display()
            ),
        ));
    }
    let given = |f: &str| a.given.iter().any(|g| g == f);
    let refused = [
        (
            "--db",
            plan.db.is_some(),
            "the database runs on this machine's kernel over the volume",
        ),
        (
            "--breakdown-requests",
            given("breakdown") && plan.breakdown > 0,
            "the unloaded breakdown is one initiator's, on this machine",
        ),
        (
            "--fabric-rate",
            plan.fabric_rate.is_some(),
            "it shapes this machine's namespaces' link",
        ),
        (
            "--loopback",
            a.loopback,
            "the hosts reach the target host over their network",
        ),
        (
            "--inject-errors",
            plan.inject.is_some(),
            "nbdkit's error filter is not set up on a target host yet",
        ),
    ];
    if let Some((flag, _, why)) = refused.iter().find(|(_, on, _)| *on) {
        return Err(usage(*flag, format!("not with --hosts: {why}")));
    }
    let mut skipped = Vec::new();
    if plan.breakdown > 0 {
        skipped.push(
            "the unloaded latency breakdown is skipped across hosts (one initiator's, on this machine)"
                .to_string(),
        );
    }
    Ok(Some(HostsPlan {
        hosts,
        target,
        address: a.target_address.clone(),
        opts: a.hosts.options()?,
        skipped,
    }))
}
