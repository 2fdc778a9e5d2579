//! `iolab kv --hosts`: a kv plan on every host at once (`fleet`). Each
//! phase is prepared on every host (which keeps its databases from one
//! phase to the next of the run, in a scratch directory it removes at the
//! end), started at one common instant and merged exactly into one point:
//! the hosts' rows in `extra.hosts` and, with `--instances`, every host's
//! instances in `extra.instances`. The results are saved after every phase.

use serde_json::json;

use crate::analysis::AnalysisOptions;
use crate::fleet::proto::{AgentWork, KvWork};
use crate::fleet::{Fleet, JobTarget, OnHostLoss};
use crate::interrupt;
use crate::kv::plan::KvPlan;
use crate::kv::run::{phase_name, KvObserver, KvRun};
use crate::kv::settings::KvSettings;
use crate::results::{Provenance, Results};
use crate::session::sink::ResultsSink;
use crate::session::Progress;

/// A kv run on the hosts of a connected fleet.
pub struct KvHostsPlan<'a> {
    /// This side's copy of the plan: its phases, seed and results file.
    pub plan: &'a KvPlan,
    /// What every host builds its plan from.
    pub settings: KvSettings,
    pub instances: usize,
    /// The directory on every host.
    pub target: JobTarget,
    pub on_loss: OnHostLoss,
}

fn provenance(fleet: &Fleet, p: &KvHostsPlan) -> Provenance {
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

/// Run every phase of the plan on the fleet; the fleet is closed (every
/// host's databases removed) before this returns.
pub fn run(mut fleet: Fleet, p: &KvHostsPlan, obs: &dyn KvObserver) -> anyhow::Result<KvRun> {
    interrupt::install();
    let mut sink = ResultsSink::new(
        Results::new("kv", provenance(&fleet, p)),
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
    // Bye to every host: each removes its databases before its agent ends.
    fleet.close();
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
