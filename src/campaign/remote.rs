//! `iolab remote`'s campaign: the transports are the setups of one round
//! (`TransportPasses`), DAS (the local scratch file) the baseline. On
//! each: the jobs, the load-latency curve relative to the transport's own
//! closed-loop maximum, the unloaded breakdown over iolab's own target,
//! and the database on the volume (`remote_db`), through one session
//! `Driver` sampling the server's CPU and the link with every point.
//! Across hosts (`--hosts`, `--target-host T`) the same passes run with
//! every point on all hosts at once against the export T serves for the
//! transport (`Where::Hosts`: the driver's `TargetHostPlacement` keeps
//! T's whole CPU over each point's window); DAS, the breakdown and the
//! database are this machine's and not part of it.

use crate::results::sections::remote::StagePath;
use crate::results::sections::RemoteTransport;
use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

use serde_json::json;

use super::kernel_path::KernelPath;
use super::remote_db::{self, DbPlan, Source};
use super::remote_plan::{HostsPlan, RemoteSettings};
use super::transport::{port_for, record_breakdown, serve};
use super::{run_rounds, Order, Pass, PassOutcome, Schedule, Workload};
use crate::dut::Target;
use crate::fleet::target_host::TargetHost;
use crate::fleet::JobTarget;
use crate::interrupt;
use crate::measure::peers::PeerSampling;
use crate::plan::endpoint::WireProtocol;
use crate::plan::engines::{EngineConfig, EngineKind};
use crate::plan::job::{Arrival, JobSpec, OpenLoop, Pattern};
use crate::plan::units::Span;
use crate::remote::breakdown::{self, BreakdownSpec};
use crate::remote::faults::{self, Injection};
use crate::remote::topology::Topology;
use crate::results::Results;
use crate::servers::storage::{OwnTargetOptions, StorageServer, Transport};
use crate::session::{Driver, Tags};
use crate::testbed::nvme_kernel::NvmeTrtype;

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
    pub fabric_delay: Option<Span>,
    /// The database on each volume (`--db`), if any.
    pub db: Option<DbPlan>,
    /// Errors injected by the servers that can (`--inject-errors`).
    pub inject: Option<Injection>,
}

impl RemotePlan {
    /// The errors injected into transport `t`'s requests, if any.
    pub fn injected(&self, t: Transport) -> Option<Injection> {
        self.inject.filter(|_| faults::can_inject(t))
    }

    /// Why there is no database on transport `t`'s volume, if there is
    /// none: no volume to build, or errors injected (RocksDB stops at the
    /// first EIO, and with it the whole run).
    pub fn db_skipped(&self, t: Transport) -> Option<String> {
        remote_db::skipped(t).or_else(|| {
            self.injected(t).map(|i| {
                format!(
                    "--inject-errors fails {} of its requests with {}, and RocksDB does not go on after an I/O error",
                    i.percent(),
                    faults::ERRNO
                )
            })
        })
    }

    /// (points, measured seconds) on `transports` transports: every job,
    /// the load-latency rates (the first job's length each) and the
    /// database's points (not timed here: they run to their op counts).
    pub fn estimate(&self, transports: usize) -> (usize, f64) {
        let len = |j: &JobSpec| j.stop.runtime_ns.unwrap_or(0) + j.ramp_ns;
        let per_job: u64 = self.jobs.iter().map(len).sum();
        let per_rate = self.jobs.first().map_or(0, len);
        let per_transport = per_job + self.rates.len() as u64 * per_rate;
        let db_points = self.db.as_ref().map_or(0, |d| 2 * d.values.len());
        (
            transports * (self.jobs.len() + self.rates.len() + db_points),
            (transports as u64 * per_transport) as f64 / 1e9,
        )
    }
}

/// The plan's jobs on one engine with its network options (`--poll`),
/// named after the transport `label` (the same job runs on every
/// transport; the name tells the points apart).
pub fn jobs_on(plan: &RemotePlan, engine: &EngineConfig, label: &str) -> Vec<JobSpec> {
    plan.jobs
        .iter()
        .map(|j| {
            let mut j = JobSpec {
                engine: engine.kind(),
                net: engine.net(),
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

/// A transport as the results name it: its label, backing and caching.
pub fn transport_record(t: Transport) -> RemoteTransport {
    RemoteTransport {
        label: t.label(),
        backing: Some(t.backing().to_string()),
        initiator_cache: Some(t.caching().0.to_string()),
        target_cache: Some(t.caching().1.to_string()),
        injected_errors: None,
    }
}

/// Where a remote run's initiators and exports are.
#[derive(Clone, Copy)]
pub enum Where<'a> {
    /// This machine: the initiator in the topology's namespace, each
    /// transport's server over the local scratch file.
    Here {
        topo: &'a Topology,
        local: &'a Target,
    },
    /// Every host at once against the export the target host serves for
    /// each transport.
    Hosts(&'a AcrossHosts<'a>),
}

/// A run across hosts: the plan, the target host and the export the
/// driver's placement runs the next points against.
pub struct AcrossHosts<'a> {
    pub(super) hp: &'a HostsPlan,
    pub(super) t: Rc<RefCell<TargetHost>>,
    pub(super) export: Rc<RefCell<JobTarget>>,
    /// The driver's target: the hosts open the export, not this machine.
    pub(super) none: Target,
}

/// Every transport's pass through `driver`, the transports the setups of
/// one round.
pub(super) fn run_transports<'a>(
    a: &'a RemoteSettings,
    plan: &'a RemotePlan,
    place: Where<'a>,
    dir: &'a Path,
    driver: Driver<'a>,
) -> anyhow::Result<Results> {
    let netem_missing = match place {
        Where::Here { topo, .. } => plan
            .fabric_delay
            .as_ref()
            .and_then(|_| topo.netem_missing()),
        Where::Hosts(_) => None,
    };
    // The transports are the setups of one round, DAS the baseline; the
    // points keep remote's own tags (`transport`), not a media pass's.
    let schedule = Schedule {
        setups: plan.transports.iter().map(|t| t.label()).collect(),
        baseline: crate::analysis::remote::BASELINE.into(),
        rounds: 1,
        order: Order::SetupMajor,
    };
    let mut passes = TransportPasses {
        a,
        plan,
        place,
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
    a: &'a RemoteSettings,
    plan: &'a RemotePlan,
    place: Where<'a>,
    dir: &'a Path,
    driver: Driver<'a>,
    netem_missing: Option<String>,
}

impl Workload for TransportPasses<'_> {
    fn run_pass(&mut self, _pass: &Pass, i: usize, _part: usize) -> anyhow::Result<PassOutcome> {
        let t = self.plan.transports[i];
        let label = t.label();
        let (topo, local) = match self.place {
            Where::Here { topo, local } => (topo, local),
            Where::Hosts(h) => {
                self.on_target_host(t, h, &label)?;
                return Ok(PassOutcome::done());
            }
        };
        if let Some(why) = t.unavailable() {
            self.driver
                .warn(format!("transport {label} skipped: {why}"));
        } else if t.is_local() {
            self.das(&label, local)?;
        } else if t.is_kernel() {
            let params = transport_params(&label);
            let tags = Tags {
                params: &params,
                ..Tags::default()
            };
            let driver = &mut self.driver;
            let (plan, a) = (self.plan, self.a);
            let mut run = || kernel_transport(driver, plan, t, (topo, local), i, &tags, a);
            if t.is_rdma() {
                topo.at_home(run)??;
            } else {
                run()?;
            }
        } else if let (Some(why), false) = (&self.netem_missing, t.own()) {
            self.driver.warn(format!(
                "transport {label} skipped: --fabric-delay needs netem for servers other than iolab's own ({why})"
            ));
        } else if t.is_rdma() {
            topo.at_home(|| self.served(t, i, &label, (topo, local)))??;
        } else {
            self.served(t, i, &label, (topo, local))?;
        }
        Ok(PassOutcome::done())
    }

    fn failed(&mut self, what: &str) {
        self.driver.warn(what.to_string());
    }
}

/// What polled on a polling transport: the target's reactors' CPUs and
/// SO_BUSY_POLL's outcome (as the server said them at its start), and the
/// CPUs the initiator is pinned to (the others this process may use, so
/// the two spinners never share one; `None` when none is left).
struct Polled {
    target_cpus: Option<String>,
    so_busy_poll: Option<String>,
    initiator_cpus: Option<Vec<usize>>,
}

impl Polled {
    fn of(server: &StorageServer) -> Option<Polled> {
        if !server.transport.polls() {
            return None;
        }
        let said = server.polling();
        let taken: Vec<usize> = said
            .as_ref()
            .map(|(c, _)| c.split(',').filter_map(|c| c.parse().ok()).collect())
            .unwrap_or_default();
        let left: Vec<usize> = crate::target::serving::allowed_cpus()
            .into_iter()
            .filter(|c| !taken.contains(c))
            .collect();
        Some(Polled {
            target_cpus: said.as_ref().map(|s| s.0.clone()),
            so_busy_poll: said.map(|s| s.1),
            initiator_cpus: (!left.is_empty()).then_some(left),
        })
    }

    /// `extra.polling` of the transport's points (the initiator's `--poll`
    /// is also the job's `net.poll`).
    fn extra(&self) -> (&'static str, serde_json::Value) {
        (
            "polling",
            json!({
                "target": "busy-poll",
                "initiator": "busy-poll",
                "target_cpus": self.target_cpus,
                "target_so_busy_poll": self.so_busy_poll,
                "initiator_cpus": self.initiator_cpus.as_deref().map(crate::target::serving::cpu_list),
            }),
        )
    }
}

/// The params of a transport's points.
fn transport_params(label: &str) -> [(&'static str, String); 1] {
    [("transport", label.to_string())]
}

/// The extra of a transport's points: the errors its server injects.
fn injected_extra(plan: &RemotePlan, t: Transport) -> Vec<(&'static str, serde_json::Value)> {
    plan.injected(t)
        .map(|i| {
            let v = serde_json::to_value(i.describe()).unwrap_or_default();
            ("injected_errors", v)
        })
        .into_iter()
        .collect()
}

impl TransportPasses<'_> {
    /// Transport `t`'s export served on the target host, and its jobs and
    /// load-latency curve on every host at once against it.
    fn on_target_host(&mut self, t: Transport, h: &AcrossHosts, label: &str) -> anyhow::Result<()> {
        let served =
            h.t.borrow_mut()
                .serve(super::remote_run::request(t, self.a, h.hp, self.plan)?)
                .map_err(crate::error::interrupted_or)?;
        if !self.a.quiet {
            eprintln!(
                "iolab: {label}: {} on {} ({})",
                served.url, h.hp.target, served.backing
            );
        }
        *h.export.borrow_mut() = JobTarget {
            dir: Some(served.url.clone()),
            size: Some(self.plan.size),
            overwrite: true,
            ..JobTarget::default()
        };
        let params = transport_params(label);
        let extra = [("export", json!(served.url))];
        let tags = Tags {
            params: &params,
            extra: &extra,
            ..Tags::default()
        };
        for j in jobs_on(self.plan, &t.initiator(), label) {
            self.driver.run_point_on(&h.none, &j, &tags)?;
        }
        let hosts = h.hp.hosts.len();
        load_latency(
            &mut self.driver,
            self.plan,
            &h.none,
            LoadLatency::on(&t.initiator()),
            &tags,
            hosts,
        )
    }

    /// The jobs on the local scratch file.
    fn das(&mut self, label: &str, local: &Target) -> anyhow::Result<()> {
        let params = transport_params(label);
        let tags = Tags {
            params: &params,
            ..Tags::default()
        };
        self.driver.set_peers(None);
        let das = EngineConfig::default_for(EngineKind::default_local());
        for j in jobs_on(self.plan, &das, label) {
            self.driver.run_point_on(local, &j, &tags)?;
        }
        load_latency(
            &mut self.driver,
            self.plan,
            local,
            LoadLatency::on(&das),
            &tags,
            1,
        )?;
        let spec = breakdown_spec(self.plan, local.size, self.a.seed);
        unstamped_breakdown(
            &mut self.driver,
            spec,
            local,
            EngineKind::default_local(),
            label,
            true,
        );
        database(
            &mut self.driver,
            self.plan,
            Transport::local(),
            label,
            Source::Local(&local.path),
            &self.a.target,
            self.a.seed,
        )
    }

    /// The jobs over a transport's server, its breakdown and database.
    fn served(
        &mut self,
        t: Transport,
        i: usize,
        label: &str,
        (topo, local): (&Topology, &Target),
    ) -> anyhow::Result<()> {
        let (plan, dir, seed) = (self.plan, self.dir, self.a.seed);
        let stamps =
            (t.own() && plan.breakdown > 0).then(|| dir.join(format!("stamps-{label}.txt")));
        let own = OwnTargetOptions {
            delay: plan.fabric_delay.as_ref().map(|d| d.text().to_string()),
            stamps: stamps.clone(),
            error_rate: plan.injected(t).map(|i| i.rate),
        };
        let (server, remote) = match serve(t, topo, local, i, &own, dir, seed) {
            Ok(x) => x,
            Err(e) => {
                self.driver
                    .warn(format!("transport {label} skipped: {e:#}"));
                return Ok(());
            }
        };
        let driver = &mut self.driver;
        // Over RDMA the traffic crosses the soft-RoCE link, not the topology's.
        let link = server.link.as_ref().map(|l| l.netdev.clone());
        if let Some(l) = &server.link {
            let on_real_hardware = "run `iolab serve --protocol nvme-rdma --listen ADDR:PORT --allow-remote` on the target host with ADDR the RNIC's, and `iolab device --target nvme-rdma://ADDR:PORT/NQN` on the initiator";
            record_soft_rdma(driver, label, &l.describe(), on_real_hardware);
        }
        driver.set_peers(Some(PeerSampling {
            processes: vec![server.sampled()],
            interface: Some(link.unwrap_or(topo.initiator_iface.clone())),
        }));
        let params = transport_params(label);
        let mut extra = injected_extra(plan, t);
        let polled = Polled::of(&server);
        extra.extend(polled.as_ref().map(Polled::extra));
        let pin = polled.and_then(|p| p.initiator_cpus);
        let tags = Tags {
            params: &params,
            extra: &extra,
            ..Tags::default()
        };
        for mut j in jobs_on(plan, &t.initiator(), label) {
            j.cpus = pin.clone().or(j.cpus);
            driver.run_point_on(&remote, &j, &tags)?;
        }
        let ll = LoadLatency {
            engine: &t.initiator(),
            pin: pin.as_deref(),
        };
        load_latency(driver, plan, &remote, ll, &tags, 1)?;
        driver.set_peers(None);
        let spec = breakdown_spec(plan, local.size, seed);
        match (&stamps, spec) {
            (Some(stamps), Some(spec)) if remote.remote.is_some() => {
                match breakdown::measure(&remote, &spec, stamps) {
                    Ok(mut b) => {
                        if t.is_rdma() {
                            b.path = Some(StagePath::IolabRdma);
                        }
                        record_breakdown(driver.results_mut(), label, &b)
                    }
                    Err(e) => driver.warn(format!("breakdown over {label}: {e:#}")),
                }
            }
            _ => unstamped_breakdown(driver, spec, &remote, t.engine(), label, false),
        }
        let source = if t.wire() == Some(WireProtocol::NvmeTcp) {
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

/// The kernel's NVMe/TCP or NVMe over RDMA (`nvme-tcp-kernel`,
/// `nvme-rdma-kernel`: `t`, the `index`th transport): nvmet and the
/// kernel's initiator set up, the jobs and the database on the namespace's
/// block device, everything taken down.
#[allow(clippy::too_many_arguments)]
fn kernel_transport(
    driver: &mut Driver,
    plan: &RemotePlan,
    t: Transport,
    (topo, local): (&Topology, &Target),
    index: usize,
    tags: &Tags<'_>,
    a: &RemoteSettings,
) -> anyhow::Result<()> {
    let label = t.label();
    let Some(trtype) = t.kernel_trtype() else {
        anyhow::bail!("{label} is not a kernel path");
    };
    let k = match KernelPath::connect(trtype, topo, local, port_for(topo, index)?, a.seed) {
        Ok(k) => k,
        Err(e) => {
            driver.warn(format!("transport {label} skipped: {e:#}"));
            return Ok(());
        }
    };
    record_kernel_path(driver, &k, trtype, &label);
    driver.set_peers(Some(PeerSampling {
        processes: Vec::new(),
        interface: Some(topo.initiator_iface.clone()),
    }));
    for j in jobs_on(plan, &t.initiator(), &label) {
        driver.run_point_on(&k.target, &j, tags)?;
    }
    load_latency(
        driver,
        plan,
        &k.target,
        LoadLatency::on(&t.initiator()),
        tags,
        1,
    )?;
    driver.set_peers(None);
    let spec = breakdown_spec(plan, local.size, a.seed);
    // Traced through the host's block and nvme tracepoints and nvmet's
    // where the kernel has them; else (or failing) the initiator's alone.
    use crate::trace::fabric_breakdown;
    let traced = spec.map(|spec| match fabric_breakdown::kernel_trace_unavailable() {
        Some(why) => Err(why),
        None => fabric_breakdown::measure_traced_kernel(&k.target, &spec, t.engine(), trtype)
            .map_err(|e| format!("{e:#}")),
    });
    match traced {
        Some(Ok(b)) => record_breakdown(driver.results_mut(), &label, &b),
        Some(Err(why)) => {
            driver.warn(format!("breakdown over {label}: {why}: unstamped"));
            unstamped_breakdown(driver, spec, &k.target, t.engine(), &label, false);
        }
        None => {}
    }
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

/// What the results say of a kernel path as connected; over soft-RoCE
/// also that its numbers are not a NIC's (a warning and
/// `extra.remote.soft_rdma`).
fn record_kernel_path(driver: &mut Driver, k: &KernelPath, trtype: NvmeTrtype, label: &str) {
    if let Some(r) = driver.results_mut().extra.remote.as_mut() {
        match trtype {
            NvmeTrtype::Tcp => r.nvme_tcp_kernel = Some(k.describe()),
            NvmeTrtype::Rdma => r.nvme_rdma_kernel = Some(k.describe()),
        }
    }
    let on_real_hardware =
        "connect nvme-rdma over the RNIC with nvme-cli and run `iolab device` on /dev/nvmeXnY";
    if let Some(link) = k.soft_rdma() {
        record_soft_rdma(driver, label, &link, on_real_hardware);
    }
}

/// A transport ran over soft-RoCE: `extra.remote.soft_rdma` and a warning
/// that its numbers are not a NIC's, with what to run on real hardware.
fn record_soft_rdma(driver: &mut Driver, label: &str, link: &str, on_real_hardware: &str) {
    let why = format!(
        "{label} ran over {link}: software RDMA does the NIC's work on the CPU, so its latency and CPU cost are not a RoCE NIC's (the protocol's path is real: the NVMe over RDMA initiator, the RDMA stack, the target); on real hardware {on_real_hardware}"
    );
    if let Some(r) = driver.results_mut().extra.remote.as_mut() {
        r.soft_rdma = Some(why.clone());
    }
    driver.warn(why);
}

/// The breakdown's job (`--breakdown-requests N`; none with 0 or after a
/// stop): QD1 random reads of the plan's first block size over `span`.
fn breakdown_spec(plan: &RemotePlan, span: u64, seed: u64) -> Option<BreakdownSpec> {
    (plan.breakdown > 0 && !interrupt::stop_requested()).then(|| BreakdownSpec {
        requests: plan.breakdown,
        warmup: (plan.breakdown / 10).max(1),
        block: plan.jobs[0].bs[0].0 as u32,
        span,
        seed,
    })
}

/// The breakdown from the initiator's stamps alone (DAS, `local`, and the
/// targets that keep no stamps), recorded under `label` or warned about.
fn unstamped_breakdown(
    driver: &mut Driver,
    spec: Option<BreakdownSpec>,
    target: &Target,
    engine: EngineKind,
    label: &str,
    local: bool,
) {
    let Some(spec) = spec else {
        return;
    };
    match breakdown::measure_from_initiator(target, &spec, engine, local) {
        Ok(b) => record_breakdown(driver.results_mut(), label, &b),
        Err(e) => driver.warn(format!("breakdown over {label}: {e:#}")),
    }
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
    if let Some(why) = plan.db_skipped(t) {
        driver.warn(format!("database on {label} skipped: {why}"));
        return Ok(());
    }
    remote_db::run_on(driver, db, label, source, dir, seed)
}

/// What the load-latency points run on: the engine with its options, and
/// the CPUs the initiator is pinned to (a polling transport's).
#[derive(Clone, Copy)]
pub(super) struct LoadLatency<'a> {
    pub engine: &'a EngineConfig,
    pub pin: Option<&'a [usize]>,
}

impl<'a> LoadLatency<'a> {
    pub fn on(engine: &'a EngineConfig) -> LoadLatency<'a> {
        LoadLatency { engine, pin: None }
    }
}

/// The load-latency curve of one transport: open-loop Poisson arrivals at
/// each rate, a percentage of the transport's read-only point at the
/// deepest queue (marked as the closed-loop maximum), capped at that depth.
/// Its points carry the transport's `tags` and their rate. On `hosts`
/// hosts at once each runs its share of the rate.
pub(super) fn load_latency(
    driver: &mut Driver,
    plan: &RemotePlan,
    target: &Target,
    on: LoadLatency<'_>,
    tags: &Tags<'_>,
    hosts: usize,
) -> anyhow::Result<()> {
    if plan.rates.is_empty() || interrupt::stop_requested() {
        return Ok(());
    }
    let label = tags
        .params
        .iter()
        .find(|(k, _)| *k == "transport")
        .map_or("", |(_, v)| v.as_str());
    let jobs = jobs_on(plan, on.engine, label);
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
    let Some(max) = max.filter(|p| p.total.iops > 0.0 && !p.is_interrupted()) else {
        driver.warn(format!(
            "load-latency over {label} skipped: its closed-loop point did not run"
        ));
        return Ok(());
    };
    max.extra.role = Some("closed_loop_max".into());
    let max_iops = max.total.iops;
    for &pct in &plan.rates {
        let mut j = base.clone();
        if let Some(pin) = on.pin {
            j.cpus = Some(pin.to_vec());
        }
        j.open_loop = Some(OpenLoop {
            rate_iops: (pct / 100.0 * max_iops / hosts.max(1) as f64).max(1.0),
            arrival: Arrival::Poisson,
        });
        j.name = point_name(label, &j);
        let mut extra = vec![("rate_pct_of_max", json!(pct))];
        extra.extend(tags.extra.iter().cloned());
        let tags = Tags {
            extra: &extra,
            ..*tags
        };
        driver.run_point_on(target, &j, &tags)?;
    }
    Ok(())
}
