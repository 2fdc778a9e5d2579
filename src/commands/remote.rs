//! `iolab remote`: the NVMe-oF study's comparison in one command. A scratch
//! file on the storage under test; the same jobs on it locally (DAS) and
//! through each transport's server on the target host (namespaces joined
//! by a veth pair as root, loopback otherwise); the target's CPU and the
//! link's traffic sampled with every point; the unloaded latency
//! breakdown over iolab's own target; results.json and report.html.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::json;

use crate::analysis::AnalysisOptions;
use crate::campaign::kernel_path::KernelPath;
use crate::campaign::transport::{port_for, record_breakdown, serve};
use crate::campaign::{run_rounds, Order, Pass, PassOutcome, Placement, Schedule, Workload};
use crate::cli::remote::RemoteArgs;
use crate::dut::{self, Target, TargetOptions};
use crate::engine::EngineKind;
use crate::error::usage;
use crate::interrupt;
use crate::measure::peers::PeerSampling;
use crate::plan::job::{Arrival, JobSpec, OpenLoop, Pattern, StopCondition};
use crate::plan::parse::{format_ns, parse_duration_ns, parse_size};
use crate::remote::breakdown::{self, BreakdownSpec};
use crate::remote::servers::{OwnTargetOptions, Transport, TRANSPORT_NAMES};
use crate::remote::topology::{self, Topology};
use crate::report::observer::Terminal;
use crate::results::{time, Provenance, Results};
use crate::session::{Driver, ResultsSink, Tags};

use super::remote_db::{self, DbPlan, Source};

/// The checked settings of a run.
#[derive(Debug, Clone)]
pub struct RemotePlan {
    pub transports: Vec<Transport>,
    /// The jobs, engine left to the transport (io_uring for DAS, nbd otherwise).
    pub jobs: Vec<JobSpec>,
    pub size: u64,
    /// Load-latency rates, percent of each transport's closed-loop maximum.
    pub rates: Vec<f64>,
    pub breakdown: usize,
    pub fabric_rate: Option<String>,
    pub fabric_delay: Option<String>,
    /// The database on each volume (`--db`), if any.
    pub db: Option<DbPlan>,
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
    let io_timeout_ns = crate::commands::device_args::parse_io_timeout(a.io_timeout.as_deref())?;
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
    })
}

/// The plan's jobs on one engine, named after the transport `label` (the
/// same job runs on every transport; the name tells the points apart).
fn jobs_on(plan: &RemotePlan, engine: EngineKind, label: &str) -> Vec<JobSpec> {
    plan.jobs
        .iter()
        .map(|j| {
            let mut j = JobSpec {
                engine,
                ..j.clone()
            };
            j.name = point_name(label, &j);
            j
        })
        .collect()
}

fn point_name(label: &str, j: &JobSpec) -> String {
    if label.is_empty() {
        j.default_name()
    } else {
        format!("{label}: {}", j.default_name())
    }
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
        println!("  {:<18} {}{why}", t.label(), t.backing());
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
    if let Some(db) = &plan.db {
        println!(
            "  database: RocksDB fillseq {} keys, then readrandomwriterandom {} ops ({}% reads), values {:?} bytes, on ext4 on each volume",
            db.num, db.ops, db.read_percent, db.values
        );
        for t in &plan.transports {
            if let Some(why) = remote_db::skipped(*t) {
                println!("      no database on {}: {why}", t.label());
            }
        }
    }
}

/// Keys a plan file may set: every flag but where things are and go.
const COMMAND_LINE_ONLY: &[&str] = &[
    "target", "plan", "output", "force", "quiet", "dry_run", "given",
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
    super::device_args::apply_flags(a, argv).map_err(|e| usage(&field, format!("{e:#}")))
}

pub fn run(mut a: RemoteArgs) -> anyhow::Result<()> {
    if let Some(p) = a.plan.clone() {
        apply_plan_file(&mut a, &p)?;
    }
    let plan = plan(&a)?;
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
    let dir = a.output.clone().unwrap_or_else(|| {
        PathBuf::from(format!(
            "iolab-remote-{}",
            time::compact(std::time::SystemTime::now())
        ))
    });
    super::run::check_outputs(&dir, a.force)?;
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
    let results = run_transports(&a, &plan, &mut topo, &local, &dir);
    topo.leave_initiator();
    drop(topo);
    drop(local);
    let results = results?;
    super::run::finish(
        results,
        &dir.join("results.json"),
        &dir.join("report.html"),
        a.quiet,
        t0,
        crate::report::remote_terminal::remote_summary,
    )
}

/// The results before the first point: provenance, plan and the topology.
fn start_results(a: &RemoteArgs, plan: &RemotePlan, topo: &Topology, local: &Target) -> Results {
    let mut provenance = Provenance::collect(a.seed);
    provenance.target = Some(local.info());
    provenance.plan = serde_json::to_value(&plan.jobs).unwrap_or_default();
    let mut results = Results::new("remote", provenance);
    results.warnings.extend(results.provenance.busy_warning());
    if let Some(note) = &topo.note {
        results.warnings.push(format!(
            "initiator and targets share loopback, not two hosts on a link: {note}"
        ));
    }
    results.extra.insert(
        "remote".into(),
        json!({
            "topology": topo.kind,
            "note": topo.note,
            "target_addr": topo.target_addr.to_string(),
            "initiator_interface": topo.initiator_iface,
            "fabric_rate": plan.fabric_rate,
            "fabric_delay": plan.fabric_delay,
            "db": plan.db.as_ref().map(remote_db::describe),
            "initiators": crate::remote::kernel::initiators(),
            "transports": plan.transports.iter().map(|t| json!({
                "label": t.label(),
                "backing": t.backing(),
            })).collect::<Vec<_>>(),
        }),
    );
    results
}

fn run_transports(
    a: &RemoteArgs,
    plan: &RemotePlan,
    topo: &mut Topology,
    local: &Target,
    dir: &Path,
) -> anyhow::Result<Results> {
    let results = start_results(a, plan, topo, local);
    let sink = ResultsSink::new(
        results,
        Some(dir.join("results.json")),
        AnalysisOptions::default(),
    );
    let observer = Terminal::progress_only(a.quiet);
    let per_job = plan
        .jobs
        .iter()
        .map(|j| j.stop.runtime_ns.unwrap_or(0) + j.ramp_ns)
        .sum::<u64>();
    let per_rate = plan.jobs[0].stop.runtime_ns.unwrap_or(0) + plan.jobs[0].ramp_ns;
    let per_transport = per_job + plan.rates.len() as u64 * per_rate;
    let n = plan.transports.len();
    let db_points = plan.db.as_ref().map_or(0, |d| 2 * d.values.len());
    let driver = Driver::new(
        local,
        sink,
        &observer,
        None,
        !a.quiet && std::io::stderr().is_terminal(),
        (
            n * (plan.jobs.len() + plan.rates.len() + db_points),
            (n as u64 * per_transport) as f64 / 1e9,
        ),
    );
    let netem_missing = plan
        .fabric_delay
        .as_ref()
        .and_then(|_| topo.netem_missing());
    // The transports are the setups of one round, DAS the baseline; the
    // points keep remote's own tags (`transport`), not a media pass's.
    let schedule = Schedule {
        setups: plan.transports.iter().map(|t| t.label()).collect(),
        baseline: crate::analysis::remote::BASELINE.into(),
        rounds: 1,
        order: Order::SetupMajor,
        placement: Placement::Local,
    };
    let mut passes = TransportPasses {
        a,
        plan,
        topo,
        local,
        dir,
        driver,
        netem_missing,
    };
    run_rounds(&schedule, &mut passes)?;
    Ok(passes.driver.finish()?.results)
}

/// The jobs, the load-latency curve, the breakdown and the database on
/// each transport: one pass per transport.
struct TransportPasses<'a> {
    a: &'a RemoteArgs,
    plan: &'a RemotePlan,
    topo: &'a Topology,
    local: &'a Target,
    dir: &'a Path,
    driver: Driver<'a>,
    netem_missing: Option<String>,
}

impl Workload for TransportPasses<'_> {
    fn run_pass(&mut self, _pass: &Pass, i: usize, _part: usize) -> anyhow::Result<PassOutcome> {
        let t = self.plan.transports[i];
        let label = t.label();
        if let Some(why) = t.unavailable() {
            self.driver
                .warn(format!("transport {label} skipped: {why}"));
        } else if t == Transport::Das {
            self.das(&label)?;
        } else if t == Transport::KernelNvme {
            let params = transport_params(&label);
            let tags = Tags {
                params: &params,
                ..Tags::default()
            };
            kernel_transport(
                &mut self.driver,
                self.plan,
                self.topo,
                self.local,
                i,
                &tags,
                self.a,
            )?;
        } else if let (Some(why), false) = (&self.netem_missing, t.own()) {
            self.driver.warn(format!(
                "transport {label} skipped: --fabric-delay needs netem for servers other than iolab's own ({why})"
            ));
        } else {
            self.served(t, i, &label)?;
        }
        Ok(PassOutcome::done())
    }

    fn failed(&mut self, what: &str) {
        self.driver.warn(what.to_string());
    }
}

/// The params of a transport's points.
fn transport_params(label: &str) -> [(&'static str, String); 1] {
    [("transport", label.to_string())]
}

impl TransportPasses<'_> {
    /// The jobs on the local scratch file.
    fn das(&mut self, label: &str) -> anyhow::Result<()> {
        let params = transport_params(label);
        let tags = Tags {
            params: &params,
            ..Tags::default()
        };
        self.driver.set_peers(None);
        for j in jobs_on(self.plan, EngineKind::IoUring, label) {
            self.driver.run_point_on(self.local, &j, &tags)?;
        }
        load_latency(
            &mut self.driver,
            self.plan,
            self.local,
            EngineKind::IoUring,
            label,
        )?;
        database(
            &mut self.driver,
            self.plan,
            Transport::Das,
            label,
            Source::Local(&self.local.path),
            &self.a.target,
            self.a.seed,
        )
    }

    /// The jobs over a transport's server, its breakdown and database.
    fn served(&mut self, t: Transport, i: usize, label: &str) -> anyhow::Result<()> {
        let (plan, dir, seed) = (self.plan, self.dir, self.a.seed);
        let stamps =
            (t.own() && plan.breakdown > 0).then(|| dir.join(format!("stamps-{label}.txt")));
        let own = OwnTargetOptions {
            delay: plan.fabric_delay.clone(),
            stamps: stamps.clone(),
        };
        let (server, remote) = match serve(t, self.topo, self.local, i, &own, dir, seed) {
            Ok(x) => x,
            Err(e) => {
                self.driver
                    .warn(format!("transport {label} skipped: {e:#}"));
                return Ok(());
            }
        };
        let driver = &mut self.driver;
        driver.set_peers(Some(PeerSampling {
            processes: vec![server.sampled()],
            interface: Some(self.topo.initiator_iface.clone()),
        }));
        let params = transport_params(label);
        let tags = Tags {
            params: &params,
            ..Tags::default()
        };
        for j in jobs_on(plan, t.engine(), label) {
            driver.run_point_on(&remote, &j, &tags)?;
        }
        load_latency(driver, plan, &remote, t.engine(), label)?;
        driver.set_peers(None);
        if let (Some(stamps), Some(_)) = (&stamps, &remote.remote) {
            if !interrupt::stop_requested() {
                let spec = BreakdownSpec {
                    requests: plan.breakdown,
                    warmup: (plan.breakdown / 10).max(1),
                    block: plan.jobs[0].bs[0].0 as u32,
                    span: self.local.size,
                    seed,
                };
                match breakdown::measure(&remote, &spec, stamps) {
                    Ok(b) => record_breakdown(driver.results_mut(), label, &b),
                    Err(e) => driver.warn(format!("breakdown over {label}: {e:#}")),
                }
            }
        }
        let source = if matches!(t, Transport::IolabNvme { .. }) {
            Source::Nvme(&server.url)
        } else {
            Source::Nbd(&server.url)
        };
        database(driver, plan, t, label, source, &self.a.target, seed)?;
        drop(remote);
        drop(server);
        Ok(())
    }
}

/// The kernel's NVMe/TCP (`nvme-tcp-kernel`, the `index`th transport):
/// nvmet and the kernel's initiator set up, the jobs and the database on
/// the namespace's block device, everything taken down.
fn kernel_transport(
    driver: &mut Driver,
    plan: &RemotePlan,
    topo: &Topology,
    local: &Target,
    index: usize,
    tags: &Tags<'_>,
    a: &RemoteArgs,
) -> anyhow::Result<()> {
    let t = Transport::KernelNvme;
    let label = t.label();
    let k = match KernelPath::connect(topo, local, port_for(topo, index)?, a.seed) {
        Ok(k) => k,
        Err(e) => {
            driver.warn(format!("transport {label} skipped: {e:#}"));
            return Ok(());
        }
    };
    if let Some(r) = driver
        .results_mut()
        .extra
        .get_mut("remote")
        .and_then(|v| v.as_object_mut())
    {
        r.insert("nvme_tcp_kernel".into(), json!(k.describe()));
    }
    driver.set_peers(Some(PeerSampling {
        processes: Vec::new(),
        interface: Some(topo.initiator_iface.clone()),
    }));
    for j in jobs_on(plan, t.engine(), &label) {
        driver.run_point_on(&k.target, &j, tags)?;
    }
    load_latency(driver, plan, &k.target, t.engine(), &label)?;
    driver.set_peers(None);
    let device = k.device().to_path_buf();
    database(
        driver,
        plan,
        t,
        &label,
        Source::Block(&device),
        &a.target,
        a.seed,
    )
}

/// The database runs on transport `t`'s volume, when `--db` asks for them.
fn database(
    driver: &mut Driver,
    plan: &RemotePlan,
    t: Transport,
    label: &str,
    source: Source<'_>,
    dir: &Path,
    seed: u64,
) -> anyhow::Result<()> {
    let Some(db) = &plan.db else {
        return Ok(());
    };
    if interrupt::stop_requested() {
        return Ok(());
    }
    if let Some(why) = remote_db::skipped(t) {
        driver.warn(format!("database on {label} skipped: {why}"));
        return Ok(());
    }
    remote_db::run_on(driver, db, label, source, dir, seed)
}

/// The load-latency curve of one transport: open-loop Poisson arrivals at
/// each rate, a percentage of the transport's read-only point at the
/// deepest queue (marked as the closed-loop maximum), capped at that depth.
fn load_latency(
    driver: &mut Driver,
    plan: &RemotePlan,
    target: &Target,
    engine: EngineKind,
    label: &str,
) -> anyhow::Result<()> {
    if plan.rates.is_empty() || interrupt::stop_requested() {
        return Ok(());
    }
    let jobs = jobs_on(plan, engine, label);
    let Some(base) = jobs
        .iter()
        .filter(|j| j.pattern == Pattern::RandRead)
        .max_by_key(|j| j.qd)
    else {
        return Ok(());
    };
    let max = driver.results_mut().points.iter_mut().rev().find(|p| {
        p.params.get("transport").map(String::as_str) == Some(label) && p.name == base.name
    });
    let Some(max) = max.filter(|p| p.total.iops > 0.0 && !p.extra.contains_key("interrupted"))
    else {
        driver.warn(format!(
            "load-latency over {label} skipped: its closed-loop point did not run"
        ));
        return Ok(());
    };
    max.extra.role = Some("closed_loop_max".into());
    let max_iops = max.total.iops;
    let params = [("transport", label.to_string())];
    for &pct in &plan.rates {
        let mut j = base.clone();
        j.open_loop = Some(OpenLoop {
            rate_iops: (pct / 100.0 * max_iops).max(1.0),
            arrival: Arrival::Poisson,
        });
        j.name = point_name(label, &j);
        let extra = [("rate_pct_of_max", json!(pct))];
        let tags = Tags {
            experiment: "",
            params: &params,
            extra: &extra,
            pass: None,
        };
        driver.run_point_on(target, &j, &tags)?;
    }
    Ok(())
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
