//! `iolab remote --hosts LIST --target-host T`: the NVMe-oF study across
//! hosts. T's agent serves each transport's export (iolab's own NBD and
//! NVMe/TCP targets over a scratch file on T); every point runs on all
//! hosts at once against it through the fleet (one common start, exact
//! merge, per-host rows) and T's whole CPU over the point's window is kept
//! beside the hosts' (`extra.hosts.target_host`, and as the target's CPU
//! per I/O in `extra.peers`, which the remote report's figures read).

use crate::results::sections::remote::TargetHostRecord;
use crate::results::sections::{HostRecord, HostsRecord, RemoteRecord};
use crate::session::Presenter;
use std::cell::RefCell;
use std::io::IsTerminal;
use std::rc::Rc;

use serde_json::json;

use super::remote::{jobs_on, load_latency, RemotePlan};
use super::remote_plan::RemoteSettings;
use crate::analysis::AnalysisOptions;
use crate::dut::Target;
use crate::error::usage;
use crate::fleet::proto::{CpuOver, ServeRequest};
use crate::fleet::target_host::{TargetHost, FLAG};
use crate::fleet::{self, Fleet, FleetPlacement, HostSpec, JobTarget};
use crate::interrupt;
use crate::measure::peers::{PeerCpu, PeerStats};
use crate::plan::units::Span;
use crate::results::ext::TargetHostCpu;
use crate::results::{Point, Provenance, Results};
use crate::runner::recorder::Live;
use crate::servers::storage::Transport;
use crate::session::{Driver, HostPlacement, ResultsSink, Tags};

/// The transports a target host serves when --transports is left alone.
pub const DEFAULT_TRANSPORTS: &str = "iolab,nvme-tcp";
/// `--transports`' default on one machine.
const LOCAL_DEFAULT: &str = "das,iolab,qemu-nbd,nbdkit-file";

/// The hosts and the target host of a run, checked.
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
pub fn check(a: &RemoteSettings, plan: &RemotePlan) -> anyhow::Result<Option<HostsPlan>> {
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
    if let Some(tr) = plan.transports.iter().find(|t| served_name(**t).is_none()) {
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

/// The fleet as the driver's placement, with T's CPU over each point.
struct StudyPlacement {
    fleet: FleetPlacement,
    t: Rc<RefCell<TargetHost>>,
    export: Rc<RefCell<JobTarget>>,
}

impl HostPlacement for StudyPlacement {
    fn run(
        &mut self,
        job: &crate::plan::job::JobSpec,
        progress: &dyn Fn(f64, Live),
    ) -> anyhow::Result<Point> {
        self.fleet.set_target(self.export.borrow().clone());
        let mut p = self.fleet.run(job, progress)?;
        if let Some((from, to)) = self.fleet.last_window() {
            let mut t = self.t.borrow_mut();
            match t.cpu_over(from, to) {
                Ok(c) => record_target_cpu(&mut p, t.name(), c, to.saturating_sub(from)),
                Err(e) => p
                    .warnings
                    .push(format!("target host CPU not measured: {e:#}")),
            }
        }
        Ok(p)
    }

    fn halted(&self) -> Option<String> {
        self.fleet.halted()
    }

    /// The transports' exports are set per pass (`export`), not by setup.
    fn select_setup(&mut self, _setup: usize) {}
}

/// T's CPU into the point: typed beside the hosts' rows (with the disk
/// under its file), and as the target's CPU per I/O that the remote
/// figures read.
fn record_target_cpu(p: &mut Point, host: &str, over: CpuOver, window_ns: u64) {
    let cpu = over.cpu;
    let busy_s = (cpu.usr_pct + cpu.sys_pct) / 100.0 * window_ns as f64 / 1e9;
    let us_per_io = (p.total.ops > 0).then(|| busy_s * 1e6 / p.total.ops as f64);
    if let Some(h) = p.extra.hosts.as_mut() {
        h.target_host = Some(TargetHostCpu {
            host: host.to_string(),
            cpu,
            window_ns,
            disk: over.disk,
            no_disk: over.no_disk,
        });
    }
    p.extra.peers = Some(PeerStats {
        processes: vec![PeerCpu {
            role: format!("target host {host} (whole machine)"),
            pid: 0,
            usr_pct: cpu.usr_pct,
            sys_pct: cpu.sys_pct,
            us_per_io,
        }],
        net: None,
        series: Vec::new(),
    });
}

/// The name T's agent knows transport `t` by, if T serves it.
fn served_name(t: Transport) -> Option<&'static str> {
    t.facts().served_as
}

/// The serve request of transport `t`.
fn request(
    t: Transport,
    a: &RemoteSettings,
    hp: &HostsPlan,
    plan: &RemotePlan,
) -> anyhow::Result<ServeRequest> {
    let name = served_name(t).ok_or_else(|| {
        usage(
            "--transports",
            format!("{} is not served on a target host", t.label()),
        )
    })?;
    let threads = t.threads().unwrap_or(1);
    Ok(ServeRequest {
        transport: name.into(),
        dir: a.target.display().to_string(),
        size: plan.size,
        address: hp.address.clone(),
        threads,
        delay_ns: plan.fabric_delay.as_ref().map(Span::ns),
        check_only: false,
    })
}

fn start_results(
    a: &RemoteSettings,
    plan: &RemotePlan,
    hp: &HostsPlan,
    fleet: &Fleet,
    t: &TargetHost,
) -> Results {
    let mut provenance = Provenance::collect(a.seed);
    provenance.plan = serde_json::to_value(&plan.jobs).unwrap_or_default();
    let mut results = Results::new("remote", provenance);
    results.warnings.extend(results.provenance.busy_warning());
    results.warnings.extend(hp.skipped.iter().cloned());
    let hosts: Vec<HostRecord> = fleet
        .agents()
        .iter()
        .map(|h| HostRecord {
            host: h.name.clone(),
            hostname: h.hello.hostname.clone(),
            agent_pid: h.hello.pid,
            build: None,
        })
        .collect();
    let th = t.agent();
    let note = format!("{} host(s) against target host {}", hosts.len(), th.name);
    results.extra.hosts = Some(HostsRecord {
        hosts,
        target: None,
        groups: None,
    });
    results.extra.remote = Some(Box::new(RemoteRecord {
        topology: "hosts".into(),
        note: Some(Some(note)),
        target_host: Some(TargetHostRecord {
            host: th.name.clone(),
            hostname: th.hello.hostname.clone(),
            agent_pid: th.hello.pid,
            directory: a.target.display().to_string(),
        }),
        fabric_delay: Some(plan.fabric_delay.as_ref().map(|d| d.text().to_string())),
        transports: plan
            .transports
            .iter()
            .map(|t| super::remote::transport_record(*t))
            .collect(),
        ..RemoteRecord::default()
    }));
    results
}

/// Connect T, then the hosts (T unreachable: nothing is started on the
/// hosts), then every transport's points; T's export and file go at the end.
pub fn run(
    a: &RemoteSettings,
    plan: &RemotePlan,
    hp: &HostsPlan,
    dir: &std::path::Path,
    presenter: &Presenter,
) -> anyhow::Result<Results> {
    if !a.quiet {
        eprintln!(
            "iolab: connecting to target host {} and {} host(s) over ssh ...",
            hp.target,
            hp.hosts.len()
        );
    }
    let mut t = TargetHost::connect(&hp.target, &hp.opts).map_err(crate::error::interrupted_or)?;
    // Every transport checked on T (its programs, the directory, the
    // address) before anything is started on the hosts.
    for &tr in &plan.transports {
        t.serve(ServeRequest {
            check_only: true,
            ..request(tr, a, hp, plan)?
        })
        .map_err(crate::error::interrupted_or)?;
    }
    let fleet = Fleet::connect(&hp.hosts, &hp.opts).map_err(crate::error::interrupted_or)?;
    let results = start_results(a, plan, hp, &fleet, &t);
    let t = Rc::new(RefCell::new(t));
    let export = Rc::new(RefCell::new(JobTarget {
        dir: None,
        size: None,
        overwrite: true,
    }));
    let placement = StudyPlacement {
        fleet: FleetPlacement::new(
            fleet,
            JobTarget {
                dir: None,
                size: None,
                overwrite: true,
            },
            a.hosts.on_host_loss,
        ),
        t: t.clone(),
        export: export.clone(),
    };
    let sink = ResultsSink::new(
        results,
        Some(dir.join("results.json")),
        AnalysisOptions::default(),
    );
    let observer = (presenter.progress)(a.quiet);
    let observer = &*observer;
    let none = Target::none(plan.size);
    let mut driver = Driver::new(
        &none,
        sink,
        observer,
        None,
        !a.quiet && std::io::stderr().is_terminal(),
        plan.estimate(plan.transports.len()),
    )
    .with_hosts(Box::new(placement));
    let hosts = hp.hosts.len();
    for &tr in &plan.transports {
        if interrupt::stop_requested() {
            break;
        }
        let label = tr.label();
        let served = t
            .borrow_mut()
            .serve(request(tr, a, hp, plan)?)
            .map_err(crate::error::interrupted_or)?;
        if !a.quiet {
            eprintln!(
                "iolab: {label}: {} on {} ({})",
                served.url, hp.target, served.backing
            );
        }
        *export.borrow_mut() = JobTarget {
            dir: Some(served.url.clone()),
            size: Some(plan.size),
            overwrite: true,
        };
        let params = [("transport", label.clone())];
        let extra = [("export", json!(served.url))];
        let tags = Tags {
            params: &params,
            extra: &extra,
            ..Tags::default()
        };
        for j in jobs_on(plan, tr.engine(), &label) {
            driver.run_point_on(&none, &j, &tags)?;
        }
        load_latency(&mut driver, plan, &none, tr.engine(), &tags, hosts)?;
    }
    let out = driver.finish()?.results;
    // The hosts are closed (the driver's placement dropped); then T.
    drop(export);
    if let Ok(t) = Rc::try_unwrap(t) {
        t.into_inner().close();
    }
    Ok(out)
}

/// Across hosts: the plan printed (`--dry-run`), or the hosts' run (T
/// serving each export), the results and report written.
pub fn run_or_print(
    a: &RemoteSettings,
    plan: &RemotePlan,
    hp: &HostsPlan,
    presenter: &Presenter,
) -> anyhow::Result<()> {
    if a.dry_run {
        super::remote_plan::print_plan(plan, a);
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
    crate::interrupt::install();
    let dir = a.output_dir();
    std::fs::create_dir_all(&dir).map_err(|e| {
        crate::error::usage("--output", format!("cannot create {}: {e}", dir.display()))
    })?;
    let t0 = std::time::Instant::now();
    let results = run(a, plan, hp, &dir, presenter)?;
    a.write_json(&results)?;
    super::run::finish(
        results,
        &dir.join("results.json"),
        &dir,
        a.quiet || a.json_to_stdout(),
        t0,
        presenter,
    )
}
