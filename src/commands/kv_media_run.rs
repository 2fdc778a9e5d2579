//! Running a checked kv media plan (`kv_media::plan`) through
//! `media_passes::drive` (which builds the configurations): round by
//! round, target by target in alternating order, run every kv part
//! through `kv::run::run` with a fresh database in the target's directory
//! (a scratch directory of kv's own, removed when the part ends). Each phase's point is renamed `LABEL rN:
//! WORKLOAD`, tagged `medium`, `round`, `baseline` and saved into the one
//! results file as soon as it is measured (`PassObserver`), so Ctrl-C or
//! a crash keeps every point measured; `analysis.media` normalizes them
//! to the baseline. The configurations are guards, dropped at the end, on
//! an error and after Ctrl-C.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::kv_media::{KvMediaPlan, PlannedPart};
use super::media_passes::{drive, PassSink, Passes, Tally};
use super::media_set::{merge_pass, round_order, PassTag};
use crate::error::VerifyFailed;
use crate::interrupt;
use crate::kv::phase::PhaseOutcome;
use crate::kv::run::{KvObserver, KvRun, Started};
use crate::report::kv_terminal::KvTerminal;
use crate::results::{Point, Provenance, Results};
use crate::session::{Observer, Progress};

pub fn run(plan: &KvMediaPlan) -> anyhow::Result<()> {
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
        || start_results(plan),
        |dirs, sink| rounds(plan, dirs, sink),
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
            "steps": p.plan.steps.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>(),
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

/// Every round, every target in the round's order, every part.
fn rounds(plan: &KvMediaPlan, dirs: &[PathBuf], sink: &PassSink) -> anyhow::Result<Tally> {
    let term = KvTerminal::new(plan.quiet);
    let mut tally = Tally::default();
    'rounds: for r in 0..plan.set.rounds {
        for i in round_order(dirs.len(), r) {
            for part in &plan.parts {
                if interrupt::stop_requested() {
                    tally.interrupted = true;
                    break 'rounds;
                }
                let tag = plan.set.tag(i, r);
                let ran = pass(&term, sink, &tag, part, &dirs[i], plan.quiet);
                tally.passes += 1;
                match ran? {
                    Ok(kr) => {
                        tally.mismatches += kr.mismatches;
                        tally.interrupted |= kr.results.interrupted;
                        merge(sink, &tag, kr.results);
                    }
                    // Stopped while opening or loading: not a failure.
                    Err(_) if interrupt::stop_requested() => {}
                    Err(e) => {
                        let part = part.name.as_deref().map(|n| format!(" {n}"));
                        let what = format!(
                            "{} r{}{}: {e:#}",
                            tag.label,
                            tag.round,
                            part.unwrap_or_default()
                        );
                        tally.failed(sink, &term, what);
                    }
                }
                if tally.interrupted || interrupt::stop_requested() {
                    tally.interrupted = true;
                    break 'rounds;
                }
            }
        }
    }
    Ok(tally)
}

/// One part on one target in one round: `Err` when saving a point failed
/// (the run stops), `Ok(Err)` when the part failed (the run goes on).
fn pass(
    term: &KvTerminal,
    sink: &PassSink,
    tag: &PassTag,
    part: &PlannedPart,
    dir: &Path,
    quiet: bool,
) -> anyhow::Result<anyhow::Result<KvRun>> {
    let mut plan = part.plan.clone();
    plan.place.dir = dir.to_path_buf();
    if !quiet {
        println!(
            "\n=== {} round {}{}: {}",
            tag.label,
            tag.round,
            part.name
                .as_deref()
                .map(|n| format!(", part {n}"))
                .unwrap_or_default(),
            dir.display()
        );
    }
    let observer = PassObserver {
        term,
        sink,
        tag,
        part,
    };
    let ran = crate::kv::run::run(&plan, &observer);
    match sink.take_error() {
        Some(e) => Err(e),
        None => Ok(ran),
    }
}

/// What a pass's own results add to the run's (`media_set::merge_pass`)
/// and the engine's settings, into its part's description.
fn merge(sink: &PassSink, tag: &PassTag, kr: Results) {
    let mut s = sink.lock();
    let r = &mut s.results;
    merge_pass(r, tag, &kr);
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

/// The kv observer of one pass: shows what the terminal observer shows
/// (names prefixed with the target and round), and saves every phase's
/// point, renamed and tagged, into the run's results as it ends.
struct PassObserver<'a> {
    term: &'a KvTerminal,
    sink: &'a PassSink,
    tag: &'a PassTag,
    part: &'a PlannedPart,
}

impl PassObserver<'_> {
    fn name(&self, phase: &str) -> String {
        self.tag.name(&self.part.workload(phase))
    }
}

impl Observer for PassObserver<'_> {
    fn progress(&self, p: &Progress<'_>) {
        let label = self.tag.prefixed(p.label);
        self.term.progress(&Progress {
            label: &label,
            ..*p
        });
    }

    fn progress_done(&self) {
        self.term.progress_done();
    }

    fn warning(&self, msg: &str) {
        self.term.warning(&self.tag.prefixed(msg));
    }

    fn status(&self, line: &str) {
        self.term.status(line);
    }
}

impl KvObserver for PassObserver<'_> {
    fn started(&self, s: &Started<'_>) {
        self.term.started(s);
    }

    fn phase_started(&self, name: &str, threads: usize) {
        self.term.phase_started(&self.name(name), threads);
    }

    fn phase_done(&self, name: &str, outcome: &PhaseOutcome, point: &Point) {
        self.term.phase_done(&self.name(name), outcome, point);
        let mut p = point.clone();
        p.name = self.part.workload(&p.name);
        self.tag.apply(&mut p);
        if let Some(n) = &self.part.name {
            p.params.insert("part".into(), n.clone());
            if let Some(id) = p.pass.as_mut() {
                id.part = Some(n.clone());
            }
        }
        if outcome.interrupted {
            // A partial phase is no round of the comparison.
            p.extra.interrupted = Some(true);
        }
        self.sink.push(p);
    }
}
