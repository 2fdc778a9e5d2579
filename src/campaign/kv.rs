//! The kv workload of a campaign (`iolab kv` over several targets or
//! `--make`): every part of a checked kv media plan
//! (`campaign::kv_plan::plan`) through `kv::run::run` with a fresh
//! database in the setup's directory (a scratch directory of kv's own,
//! removed when the part ends), or on `--make raw`'s loop device (LMDB
//! writing a fresh environment on it every pass: `kv::raw`). Each phase's point is named `LABEL rN:
//! WORKLOAD`, tagged with its pass and saved into the one results file as
//! soon as it is measured (`Tagged`), so Ctrl-C or a crash keeps every
//! point measured; `analysis.media` normalizes them to the baseline.
//! With `--hosts` every pass runs on every host at once (`KvHosts`,
//! `fleet::kv_run`): the setups are directories on all of them, and each
//! phase's point is the hosts' exact merge with a row per host.

use crate::results::sections::PassCgroup;
use std::path::PathBuf;

use serde_json::json;

use super::driver::{run_rounds, Order, PassOutcome, Schedule, Workload};
use super::pass::Pass;
use super::setups::{MediaSet, Subject};
use super::sink::{drive, PassSink, Passes};
use super::tagged::{pass_on_dir, Tagged};
use crate::error::VerifyFailed;
use crate::fleet::kv_run::KvOnHosts;
use crate::fleet::{Fleet, JobTarget, OnHostLoss};
use crate::kv::phase::PhaseOutcome;
use crate::kv::plan::{KvPlan, RawDevice};
use crate::kv::run::{KvObserver, Started};
use crate::kv::settings::KvSettings;
use crate::results::{Point, Provenance, Results};
use crate::session::Presenter;
use crate::testbed::media::MediaKind;

/// One kv part as it runs on every target.
pub struct PlannedPart {
    /// Set when the run has several parts: workloads are `NAME/PHASE`.
    pub name: Option<String>,
    pub plan: KvPlan,
    /// With `--hosts`: the settings every host builds this part's plan from.
    pub on_hosts: Option<KvSettings>,
}

/// The checked settings of a kv media run.
pub struct KvMediaPlan {
    pub set: MediaSet,
    pub parts: Vec<PlannedPart>,
    /// Room for the database in each configuration.
    pub room: u64,
    pub output: Option<PathBuf>,
    pub quiet: bool,
    pub seed: u64,
    /// What the plan changed, said at the start and kept in the results.
    pub notices: Vec<String>,
}

/// A kv campaign's passes on hosts (`--hosts`): the connected fleet (each
/// part's plan there: `PlannedPart::on_hosts`).
pub struct KvHosts {
    pub fleet: Fleet,
    pub on_loss: OnHostLoss,
    /// Why the passes left are not run (a host lost under `stop`).
    pub halted: Option<String>,
}

/// The campaign, on this machine or (`hosts`) on every host at once; the
/// hosts' databases are gone when it returns.
pub fn run(
    plan: &KvMediaPlan,
    presenter: &Presenter<dyn KvObserver>,
    mut hosts: Option<KvHosts>,
) -> anyhow::Result<()> {
    for n in &plan.notices {
        eprintln!("iolab: {n}");
    }
    if let Some(h) = hosts.as_mut() {
        h.fleet.make(&plan.set.make_requests(plan.room))?;
    }
    let passes = Passes {
        set: &plan.set,
        room: plan.room,
        quiet: plan.quiet,
        output: plan.output.clone(),
        hosts: hosts
            .as_ref()
            .map(|h| crate::fleet::placement::hosts_record(&h.fleet, None)),
    };
    let ran = drive(
        passes,
        presenter,
        || start_results(plan),
        |dirs, sink| {
            let schedule = Schedule::of(&plan.set, Order::SetupMajor);
            let mut w = KvPasses {
                plan,
                dirs,
                sink,
                term: (presenter.progress)(plan.quiet),
                hosts: hosts.as_mut(),
            };
            run_rounds(&schedule, &mut w)
        },
    );
    // Bye to every host: each removes its databases before its agent ends.
    if let Some(h) = hosts {
        h.fleet.close();
    }
    let (results, tally) = ran?;
    tally.exit(&results, "kv", |mismatches| {
        VerifyFailed { mismatches }.into()
    })
}

/// The results before the first pass: provenance and the plan.
fn start_results(plan: &KvMediaPlan) -> Results {
    let mut provenance = Provenance::collect(plan.seed);
    provenance.plan = json!({
        "verb": "kv",
        "parts": plan.parts.iter().map(|p| json!({
            "name": p.name,
            "engine": p.plan.engine.name(),
            "steps": p.plan.steps.iter().map(crate::kv::describe::step).collect::<Vec<_>>(),
            "threads": p.plan.threads,
            "target": p.plan.target_ops,
            "memory_limit": p.plan.place.memory_limit,
        })).collect::<Vec<_>>(),
        "seed": plan.seed,
    });
    let mut results = Results::new("kv", provenance);
    results.warnings.extend(plan.notices.iter().cloned());
    results
}

/// The kv plan as a campaign workload: one pass is one part on one setup.
struct KvPasses<'a> {
    plan: &'a KvMediaPlan,
    dirs: &'a [PathBuf],
    sink: &'a PassSink,
    term: Box<dyn KvObserver>,
    hosts: Option<&'a mut KvHosts>,
}

impl Workload for KvPasses<'_> {
    fn parts(&self) -> Vec<Option<String>> {
        self.plan.parts.iter().map(|p| p.name.clone()).collect()
    }

    fn run_pass(&mut self, pass: &Pass, setup: usize, part: usize) -> anyhow::Result<PassOutcome> {
        if self.hosts.is_some() {
            return self.pass_on_hosts(pass, setup, part);
        }
        let dir = &self.dirs[setup];
        let mut plan = self.plan.parts[part].plan.clone();
        plan.place.dir = dir.clone();
        // The loop device of --make raw is iolab's own: it names it.
        plan.place.raw = matches!(self.plan.set.subjects[setup], Subject::Made(MediaKind::Raw))
            .then(|| RawDevice {
                device: dir.clone(),
                destroy_data: Some(dir.clone()),
            });
        pass_on_dir(
            self.sink,
            &*self.term,
            pass,
            (dir, self.plan.quiet),
            |obs| crate::kv::run::run(&plan, obs),
            |kr| ran(self.sink, pass, kr),
        )
    }

    fn failed(&mut self, what: &str) {
        self.sink.failed(&*self.term, what);
    }
}

impl KvPasses<'_> {
    /// Part `part` on every host at once, in setup `setup`'s directory on
    /// each; a host lost under `--on-host-loss stop` leaves the passes
    /// after this one not run.
    fn pass_on_hosts(
        &mut self,
        pass: &Pass,
        setup: usize,
        part: usize,
    ) -> anyhow::Result<PassOutcome> {
        let h = self.hosts.as_mut().expect("on hosts");
        if let Some(why) = &h.halted {
            return Ok(PassOutcome::Failed(anyhow::anyhow!("{why}")));
        }
        let dir = &self.dirs[setup];
        let mut plan = self.plan.parts[part].plan.clone();
        plan.place.dir = dir.clone();
        let Some(mut settings) = self.plan.parts[part].on_hosts.clone() else {
            anyhow::bail!("part {part} has no settings for the hosts");
        };
        settings.place.dir = dir.clone();
        let before = h.fleet.agents().len();
        let on = KvOnHosts {
            plan: &plan,
            settings,
            instances: 1,
            target: match &self.plan.set.subjects[setup] {
                Subject::Made(k) => JobTarget {
                    made: Some(k.name()),
                    ..JobTarget::default()
                },
                Subject::Given(_) => JobTarget {
                    dir: Some(dir.display().to_string()),
                    ..JobTarget::default()
                },
            },
            on_loss: h.on_loss,
        };
        let fleet = &mut h.fleet;
        let outcome = pass_on_dir(
            self.sink,
            &*self.term,
            pass,
            (dir, self.plan.quiet),
            |obs| crate::fleet::kv_run::run(fleet, &on, obs),
            |kr| ran(self.sink, pass, kr),
        );
        let left = h.fleet.agents().len();
        if left == 0 || (left < before && h.on_loss == OnHostLoss::Stop) {
            h.halted = Some("not run: a host was lost (--on-host-loss stop)".into());
        }
        outcome
    }
}

/// How a pass that ran went, its results merged into the run's.
fn ran(sink: &PassSink, pass: &Pass, kr: crate::kv::run::KvRun) -> PassOutcome {
    let outcome = PassOutcome::Ran {
        mismatches: kr.mismatches,
        interrupted: kr.results.interrupted,
    };
    merge(sink, pass, kr.results);
    outcome
}

/// What a pass's own results add to the run's (`Pass::merge_into`), the
/// engine's settings, into its part's description, and the pass's memory
/// cgroup (`extra.memory_cgroups`, one entry per pass that had one).
fn merge(sink: &PassSink, pass: &Pass, kr: Results) {
    let mut s = sink.lock();
    let r = &mut s.results;
    pass.merge_into(r, &kr);
    if let Some(cg) = &kr.extra.memory_cgroup {
        r.extra
            .memory_cgroups
            .get_or_insert_with(Vec::new)
            .push(PassCgroup {
                target: pass.label.clone(),
                round: pass.round,
                part: pass.part.clone(),
                cgroup: cg.clone(),
            });
    }
    let settings = kr.provenance.plan.get("engine_settings").cloned();
    if let (Some(settings), Some(parts)) = (settings, r.provenance.plan.get_mut("parts")) {
        let engine = kr.provenance.plan.get("engine").cloned();
        for p in parts.as_array_mut().into_iter().flatten() {
            if p.get("engine") == engine.as_ref() && p.get("engine_settings").is_none() {
                p["engine_settings"] = settings.clone();
            }
        }
    }
}

/// kv's events of a pass: phase names prefixed, each phase's point saved
/// under its part's workload name.
impl<O: KvObserver + ?Sized> KvObserver for Tagged<'_, O> {
    fn started(&self, s: &Started<'_>) {
        self.inner.started(s);
    }

    fn phase_started(&self, name: &str, threads: usize) {
        let workload = self.workload(name);
        self.inner.phase_started(&self.name(&workload), threads);
    }

    fn phase_done(&self, name: &str, outcome: &PhaseOutcome, point: &Point) {
        let workload = self.workload(name);
        self.inner.phase_done(&self.name(&workload), outcome, point);
        self.save(point, self.workload(&point.name));
    }

    /// A phase on hosts: the hosts' merge is the pass's point.
    fn merged_phase_done(&self, point: &Point) {
        self.inner.merged_phase_done(point);
        self.save(point, self.workload(&point.name));
    }
}

impl<O: ?Sized> Tagged<'_, O> {
    /// `PART/PHASE` when the plan has several parts, else the phase.
    fn workload(&self, phase: &str) -> String {
        match &self.pass.part {
            Some(n) => format!("{n}/{phase}"),
            None => phase.to_string(),
        }
    }
}
