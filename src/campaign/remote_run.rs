//! `iolab remote`'s run: where it runs (this machine's topology and
//! scratch file, or the hosts against the target host's exports), its
//! results started and its driver, then the transports' passes
//! (`remote::run_transports`); the results and report written.

use std::cell::RefCell;
use std::io::IsTerminal;
use std::path::Path;
use std::rc::Rc;
use std::time::Instant;

use super::remote::{run_transports, transport_record, AcrossHosts, RemotePlan, Where};
use super::remote_db;
use super::remote_plan::{HostsPlan, RemoteSettings};
use crate::analysis::AnalysisOptions;
use crate::dut::{self, Target, TargetOptions};
use crate::error::usage;
use crate::fleet::proto::ServeRequest;
use crate::fleet::target_host::{TargetHost, TargetHostPlacement};
use crate::fleet::{Fleet, FleetPlacement, JobTarget};
use crate::interrupt;
use crate::plan::units::Span;
use crate::remote::topology::Topology;
use crate::results::sections::remote::TargetHostRecord;
use crate::results::sections::{RemoteRecord, RemoteTransport};
use crate::results::{Provenance, Results};
use crate::servers::storage::Transport;
use crate::session::{Driver, Presenter, ResultsSink};

/// `iolab remote`: the plan printed (`--dry-run`), or every transport
/// measured here (`hosts` none) or across hosts against the target host,
/// the results and report written.
pub fn run_or_print(
    a: &RemoteSettings,
    plan: &RemotePlan,
    hosts: Option<HostsPlan>,
    presenter: &Presenter,
) -> anyhow::Result<()> {
    if hosts.is_none() && !a.target.is_dir() {
        return Err(usage(
            "--target",
            format!("{} is not a directory", a.target.display()),
        ));
    }
    if a.dry_run {
        super::remote_plan::print_plan(plan, a);
        if let Some(hp) = &hosts {
            println!(
                "on {} host(s) at once against target host {} (its directory {}):",
                hp.hosts.len(),
                hp.target,
                a.target.display()
            );
            for s in &hp.skipped {
                println!("  {s}");
            }
        }
        return Ok(());
    }
    interrupt::install();
    let dir = a.output_dir();
    let t0 = Instant::now();
    let results = match &hosts {
        None => run_here(a, plan, &dir, presenter)?,
        Some(hp) => run_across_hosts(a, plan, hp, &dir, presenter)?,
    };
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

/// The driver of a run's points: `results.json` in `dir` kept current.
fn driver<'a>(
    a: &RemoteSettings,
    plan: &RemotePlan,
    (target, results): (&'a Target, Results),
    dir: &Path,
    observer: &'a dyn crate::session::Observer,
) -> Driver<'a> {
    let sink = ResultsSink::new(
        results,
        Some(dir.join("results.json")),
        AnalysisOptions::default(),
    );
    Driver::new(
        target,
        sink,
        observer,
        None,
        !a.quiet && std::io::stderr().is_terminal(),
        plan.estimate(plan.transports.len()),
    )
}

/// This machine: the scratch file laid out, every transport served and
/// measured in the topology.
fn run_here(
    a: &RemoteSettings,
    plan: &RemotePlan,
    dir: &Path,
    presenter: &Presenter,
) -> anyhow::Result<Results> {
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
    std::fs::create_dir_all(dir)
        .map_err(|e| usage("--output", format!("cannot create {}: {e}", dir.display())))?;
    topo.enter_initiator()?;
    let results = start_results(a, plan, &topo, &local);
    let observer = (presenter.progress)(a.quiet);
    let driver = driver(a, plan, (&local, results), dir, &*observer);
    let place = Where::Here {
        topo: &topo,
        local: &local,
    };
    let results = run_transports(a, plan, place, dir, driver);
    topo.leave_initiator();
    drop(topo);
    drop(local);
    results
}

/// Across hosts: T connected, then the hosts (T unreachable: nothing is
/// started on the hosts), then every transport's points; T's export and
/// file go at the end.
fn run_across_hosts(
    a: &RemoteSettings,
    plan: &RemotePlan,
    hp: &HostsPlan,
    dir: &Path,
    presenter: &Presenter,
) -> anyhow::Result<Results> {
    std::fs::create_dir_all(dir)
        .map_err(|e| usage("--output", format!("cannot create {}: {e}", dir.display())))?;
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
    let results = start_results_across_hosts(a, plan, hp, &fleet, &t);
    let export = JobTarget {
        dir: None,
        size: None,
        overwrite: true,
        ..JobTarget::default()
    };
    let across = AcrossHosts {
        hp,
        t: Rc::new(RefCell::new(t)),
        export: Rc::new(RefCell::new(export.clone())),
        none: Target::none(plan.size),
    };
    let placement = TargetHostPlacement {
        fleet: FleetPlacement::new(fleet, export, a.hosts.on_host_loss),
        t: across.t.clone(),
        export: across.export.clone(),
    };
    let observer = (presenter.progress)(a.quiet);
    let driver =
        driver(a, plan, (&across.none, results), dir, &*observer).with_hosts(Box::new(placement));
    let out = run_transports(a, plan, Where::Hosts(&across), dir, driver);
    // The hosts are closed (the driver's placement dropped); then T.
    let AcrossHosts { t, export, .. } = across;
    drop(export);
    if let Ok(t) = Rc::try_unwrap(t) {
        t.into_inner().close();
    }
    out
}

/// The serve request of transport `t` on the target host.
pub(super) fn request(
    t: Transport,
    a: &RemoteSettings,
    hp: &HostsPlan,
    plan: &RemotePlan,
) -> anyhow::Result<ServeRequest> {
    let name = t.facts().served_as.ok_or_else(|| {
        usage(
            "--transports",
            format!("{} is not served on a target host", t.label()),
        )
    })?;
    Ok(ServeRequest {
        transport: name.into(),
        dir: a.target.display().to_string(),
        size: plan.size,
        address: hp.address.clone(),
        threads: t.threads().unwrap_or(1),
        delay_ns: plan.fabric_delay.as_ref().map(Span::ns),
        check_only: false,
    })
}

/// The results of a run across hosts before its first point: the hosts,
/// the target host and the transports it serves.
fn start_results_across_hosts(
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
    let mut hosts = crate::fleet::placement::hosts_record(fleet, None);
    for h in &mut hosts.hosts {
        h.build = None;
    }
    let th = t.agent();
    let note = format!(
        "{} host(s) against target host {}",
        hosts.hosts.len(),
        th.name
    );
    results.extra.hosts = Some(hosts);
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
            .map(|t| transport_record(*t))
            .collect(),
        ..RemoteRecord::default()
    }));
    results
}

/// The results before the first point: provenance, plan and the topology.
fn start_results(
    a: &RemoteSettings,
    plan: &RemotePlan,
    topo: &Topology,
    local: &Target,
) -> Results {
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
    results.extra.remote = Some(Box::new(RemoteRecord {
        topology: topo.kind.to_string(),
        note: Some(topo.note.clone()),
        target_addr: Some(topo.target_addr.to_string()),
        initiator_interface: Some(topo.initiator_iface.clone()),
        fabric_rate: Some(plan.fabric_rate.clone()),
        fabric_delay: Some(plan.fabric_delay.as_ref().map(|d| d.text().to_string())),
        db: Some(plan.db.as_ref().map(remote_db::describe)),
        initiators: Some(
            crate::testbed::kernel_modules::initiators()
                .iter()
                .map(|i| i.record())
                .collect(),
        ),
        transports: plan
            .transports
            .iter()
            .map(|t| RemoteTransport {
                injected_errors: plan.injected(*t).map(|i| i.describe()),
                ..transport_record(*t)
            })
            .collect(),
        ..RemoteRecord::default()
    }));
    results
}
