//! The kv workload of a campaign (`iolab kv` over several targets or
//! `--make`): every part of a checked kv media plan
//! (`campaign::kv_plan::plan`) through `kv::run::run` with a fresh
//! database in the setup's directory (a scratch directory of kv's own,
//! removed when the part ends), or on `--make raw`'s loop device (LMDB
//! writing a fresh environment on it every pass: `kv::raw`). Each phase's point is named `LABEL rN:
//! WORKLOAD`, tagged with its pass and saved into the one results file as
//! soon as it is measured (`Tagged`), so Ctrl-C or a crash keeps every
//! point measured; `analysis.media` normalizes them to the baseline.

use crate::results::sections::PassCgroup;
use std::path::PathBuf;

use serde_json::json;

use super::driver::{run_rounds, Order, PassOutcome, Schedule, Workload};
use super::pass::Pass;
use super::setups::{MediaSet, Subject};
use super::sink::{drive, PassSink, Passes};
use super::tagged::{pass_on_dir, Tagged};
use crate::error::VerifyFailed;
use crate::kv::phase::PhaseOutcome;
use crate::kv::plan::{KvPlan, RawDevice};
use crate::kv::run::{KvObserver, Started};
use crate::results::{Point, Provenance, Results};
use crate::session::Presenter;
use crate::testbed::media::MediaKind;

/// One kv part as it runs on every target.
pub struct PlannedPart {
    /// Set when the run has several parts: workloads are `NAME/PHASE`.
    pub name: Option<String>,
    pub plan: KvPlan,
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

pub fn run(plan: &KvMediaPlan, presenter: &Presenter<dyn KvObserver>) -> anyhow::Result<()> {
    for n in &plan.notices {
        eprintln!("iolab: {n}");
    }
    let passes = Passes {
        set: &plan.set,
        room: plan.room,
        quiet: plan.quiet,
        output: plan.output.clone(),
    };
    let (results, tally) = drive(
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
            };
            run_rounds(&schedule, &mut w)
        },
    )?;
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
}

impl Workload for KvPasses<'_> {
    fn parts(&self) -> Vec<Option<String>> {
        self.plan.parts.iter().map(|p| p.name.clone()).collect()
    }

    fn run_pass(&mut self, pass: &Pass, setup: usize, part: usize) -> anyhow::Result<PassOutcome> {
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
            |kr| {
                let outcome = PassOutcome::Ran {
                    mismatches: kr.mismatches,
                    interrupted: kr.results.interrupted,
                };
                merge(self.sink, pass, kr.results);
                outcome
            },
        )
    }

    fn failed(&mut self, what: &str) {
        self.sink.failed(&*self.term, what);
    }
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
