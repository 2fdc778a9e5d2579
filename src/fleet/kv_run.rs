//! A kv plan on every host of a connected fleet at once: `kv::run::run`'s
//! counterpart for `kv --hosts`, alone or as a campaign's pass. Each phase
//! is prepared on every host (which keeps its databases from one phase to
//! the next of the plan, in a scratch directory it removes when the next
//! plan starts at phase 0 or the fleet closes), started at one common
//! instant and merged exactly into one point: the hosts' rows in
//! `extra.hosts` and, with `--instances`, every host's instances in
//! `extra.instances`. Each point goes to the observer
//! (`merged_phase_done`) and, with the plan's `output`, into its results
//! file, saved after every phase.

use serde_json::json;

use super::proto::{AgentWork, KvWork};
use super::{Fleet, JobTarget, OnHostLoss};
use crate::analysis::AnalysisOptions;
use crate::interrupt;
use crate::kv::plan::KvPlan;
use crate::kv::run::{phase_name, KvObserver, KvRun};
use crate::kv::settings::KvSettings;
use crate::results::{Provenance, Results};
use crate::session::sink::ResultsSink;
use crate::session::Progress;

/// A kv plan on the hosts of a connected fleet.
pub struct KvOnHosts<'a> {
    /// This side's copy of the plan: its phases, seed and results file.
    pub plan: &'a KvPlan,
    /// What every host builds its plan from (its directory: `target`'s).
    pub settings: KvSettings,
    pub instances: usize,
    /// The directory on every host.
    pub target: JobTarget,
    pub on_loss: OnHostLoss,
}

fn provenance(fleet: &Fleet, p: &KvOnHosts) -> Provenance {
    let mut prov = Provenance::collect(p.plan.seed);
    let hosts: Vec<_> = fleet
        .agents()
        .iter()
        .map(|a| json!({"host": a.name, "hostname": a.hello.hostname, "agent_pid": a.hello.pid}))
        .collect();
    prov.plan = json!({
        "verb": "kv",
        "engine": p.plan.engine.name(),
        "steps": p.plan.steps.iter().map(crate::kv::describe::step).collect::<Vec<_>>(),
        "threads": p.plan.threads,
        "instances": p.instances,
        "target": p.plan.target_ops,
        "seed": p.plan.seed,
        "hosts": hosts,
        "dir": p.target.dir,
    });
    prov
}

/// Run every phase of the plan on the fleet. The hosts keep the plan's
/// databases until the next plan or `Fleet::close`.
pub fn run(fleet: &mut Fleet, p: &KvOnHosts, obs: &dyn KvObserver) -> anyhow::Result<KvRun> {
    interrupt::install();
    let mut sink = ResultsSink::new(
        Results::new("kv", provenance(fleet, p)),
        p.plan.output.clone(),
        AnalysisOptions::default(),
    );
    let names: Vec<String> = p.plan.steps.iter().filter_map(phase_name).collect();
    let mut outcome = Ok(());
    let mut lost_any: Vec<String> = Vec::new();
    for (i, name) in names.iter().enumerate() {
        if interrupt::stop_requested() {
            sink.results.interrupted = true;
            break;
        }
        let work = AgentWork::Kv(Box::new(KvWork {
            settings: p.settings.clone(),
            instances: p.instances as u32,
            phase: i as u32,
        }));
        let hosts = fleet.agents().len();
        obs.phase_started(name, p.plan.threads * p.instances * hosts);
        let ran = fleet.run_work_observed(&work, &p.target, &|r| {
            let label = format!("{name} on {hosts} host(s): {:.0} ops/s", r.iops);
            obs.progress(&Progress {
                label: &label,
                elapsed_s: r.elapsed_s,
                expected_s: None,
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
        obs.merged_phase_done(&point);
        sink.push(point)?;
        if interrupt::stop_requested() {
            sink.results.interrupted = true;
            break;
        }
        if !lost.is_empty() && (p.on_loss == OnHostLoss::Stop || fleet.agents().is_empty()) {
            let rest = names[i + 1..].join(", ");
            let why = format!(
                "host {} was lost (--on-host-loss stop); not run: {}",
                lost.join(", "),
                if rest.is_empty() { "-" } else { &rest }
            );
            sink.results.warnings.push(why.clone());
            outcome = Err(anyhow::anyhow!(why));
            break;
        }
    }
    // A phase went on without a lost host (--on-host-loss continue): the
    // results are kept, and the run says it was partial (exit 1).
    if outcome.is_ok() && !lost_any.is_empty() {
        outcome = Err(anyhow::anyhow!(
            "host {} was lost during the run: the phases after it ran on the hosts left",
            lost_any.join(", ")
        ));
    }
    sink.results.complete = outcome.is_ok() && !sink.results.interrupted;
    sink.save_last()?;
    outcome?;
    // The hosts' reads that returned other data than written (exit 3).
    let mismatches = sink
        .results
        .points
        .iter()
        .filter_map(|p| p.verify.as_ref())
        .map(|v| v.mismatches)
        .sum();
    Ok(KvRun {
        results: sink.results,
        mismatches,
    })
}
