//! An oltp plan on every host of a connected fleet at once: `oltp::run`'s
//! counterpart for `oltp --hosts`. Every host loads its own database (in a
//! scratch directory of the target directory) before the first point and
//! keeps it from one point to the next; each point (a users count) is
//! prepared on every host, started at one common instant and merged
//! exactly into one point (`results::merge`: histograms added, NOPM and
//! transaction counts summed) with the hosts' rows in `extra.hosts`. Each
//! point goes to the observer and, with the plan's `output`, into its
//! results file, saved after every point.

use serde_json::json;

use super::proto::{AgentWork, OltpWork};
use super::{Fleet, JobTarget, OnHostLoss};
use crate::analysis::AnalysisOptions;
use crate::interrupt;
use crate::oltp::plan::OltpPlan;
use crate::oltp::run::{OltpObserver, OltpRun};
use crate::oltp::settings::OltpSettings;
use crate::results::{Provenance, Results};
use crate::session::sink::ResultsSink;
use crate::session::Progress;

/// How long a host's prepare may take, per warehouse of its load.
const LOAD_ALLOWANCE: std::time::Duration = std::time::Duration::from_secs(600);

/// An oltp plan on the hosts of a connected fleet.
pub struct OltpOnHosts<'a> {
    /// This side's copy of the plan: its points, seed and results file.
    pub plan: &'a OltpPlan,
    /// What every host builds its plan from.
    pub settings: OltpSettings,
    /// The directory on every host.
    pub target: JobTarget,
    pub on_loss: OnHostLoss,
}

fn provenance(fleet: &Fleet, p: &OltpOnHosts) -> Provenance {
    let mut prov = Provenance::collect(p.plan.seed);
    let hosts: Vec<_> = fleet
        .agents()
        .iter()
        .map(|a| json!({"host": a.name, "hostname": a.hello.hostname, "agent_pid": a.hello.pid}))
        .collect();
    let plan = p.plan;
    prov.plan = json!({
        "verb": "oltp",
        "workload": "TPC-C-derived",
        "engine": plan.engine.name(),
        "server_url": plan.server_url.as_ref().map(|u| {
            crate::servers::Endpoint::parse(u).map(|e| e.display_url()).unwrap_or_default()
        }),
        "warehouses_per_host": plan.warehouses,
        "users_per_host": plan.users,
        "ramp_s": plan.ramp_s,
        "time_s": plan.time_s,
        "wait": plan.wait,
        "check": plan.check,
        "seed": plan.seed,
        "hosts": hosts,
        "dir": p.target.dir,
    });
    prov
}

/// Run every point of the plan on the fleet (the hosts load first). The
/// hosts keep the database until the plan's last point or `Fleet::close`.
pub fn run(fleet: &mut Fleet, p: &OltpOnHosts, obs: &dyn OltpObserver) -> anyhow::Result<OltpRun> {
    interrupt::install();
    let mut sink = ResultsSink::new(
        Results::new("oltp", provenance(fleet, p)),
        p.plan.output.clone(),
        AnalysisOptions::default(),
    );
    // The first point's prepare is the hosts' load: 10 minutes and 10
    // more per warehouse before a host counts as not ready.
    fleet.set_prepare_timeout(LOAD_ALLOWANCE * (1 + p.plan.warehouses));
    let mut outcome = Ok(());
    let mut lost_any: Vec<String> = Vec::new();
    let mut failures = 0;
    for (i, &users) in p.plan.users.iter().enumerate() {
        if interrupt::stop_requested() {
            sink.results.interrupted = true;
            break;
        }
        let work = AgentWork::Oltp(Box::new(OltpWork {
            settings: p.settings.clone(),
            point: i as u32,
        }));
        let hosts = fleet.agents().len();
        obs.point_started(users * hosts);
        if i == 0 {
            // The first prepare is every host's load, silent until it ends.
            let label = format!(
                "loading {} warehouse(s) on each of {hosts} host(s)",
                p.plan.warehouses
            );
            obs.progress(&Progress {
                label: &label,
                elapsed_s: 0.0,
                expected_s: None,
                eta_s: None,
                live: None,
            });
        }
        let ran = fleet.run_work_observed(&work, &p.target, &|r| {
            let label = format!(
                "{users} user(s) on each of {hosts} host(s): {:.0} txn/s",
                r.iops
            );
            obs.progress(&Progress {
                label: &label,
                elapsed_s: r.elapsed_s,
                expected_s: Some(p.plan.ramp_s + p.plan.time_s),
                eta_s: None,
                live: None,
            })
        });
        obs.progress_done();
        let pass = match ran {
            Ok(pass) => pass,
            Err(e) => {
                outcome = Err(e);
                break;
            }
        };
        let lost: Vec<String> = pass.lost.iter().map(|l| l.host.clone()).collect();
        lost_any.extend(lost.iter().cloned());
        let point = pass.into_point();
        let interrupted = point.is_interrupted() && lost.is_empty();
        failures += point
            .extra
            .oltp
            .as_ref()
            .map_or(0, |o| o.consistency_failures());
        sink.push(point)?;
        let point = sink.results.points.last().expect("just pushed");
        if let Some(o) = &point.extra.oltp {
            obs.oltp_point_done(point, o);
        }
        if interrupted || interrupt::stop_requested() {
            sink.results.interrupted = true;
            break;
        }
        if !lost.is_empty() && (p.on_loss == OnHostLoss::Stop || fleet.agents().is_empty()) {
            let rest: Vec<String> = p.plan.users[i + 1..]
                .iter()
                .map(|u| format!("oltp.users{u}"))
                .collect();
            let why = format!(
                "host {} was lost (--on-host-loss stop); not run: {}",
                lost.join(", "),
                if rest.is_empty() {
                    "-".to_string()
                } else {
                    rest.join(", ")
                }
            );
            sink.results.warnings.push(why.clone());
            outcome = Err(anyhow::anyhow!(why));
            break;
        }
    }
    // A point went on without a lost host (--on-host-loss continue): the
    // results are kept, and the run says it was partial (exit 1).
    if outcome.is_ok() && !lost_any.is_empty() {
        outcome = Err(anyhow::anyhow!(
            "host {} was lost during the run: the points after it ran on the hosts left",
            lost_any.join(", ")
        ));
    }
    if failures > 0 {
        sink.results.warnings.push(format!(
            "{failures} TPC-C consistency condition check(s) failed"
        ));
    }
    sink.results.complete = outcome.is_ok() && !sink.results.interrupted;
    sink.save_last()?;
    outcome?;
    Ok(OltpRun {
        results: sink.results,
        consistency_failures: failures,
    })
}
