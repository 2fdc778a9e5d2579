//! Running a checked kv media plan (`kv_media::plan`): build the
//! configurations, then round by round, target by target in alternating
//! order, run every kv part through `kv::run::run` with a fresh database
//! in the target's directory (a scratch directory of kv's own, removed
//! when the part ends). Each phase's point is renamed `LABEL rN:
//! WORKLOAD`, tagged `medium`, `round`, `baseline` and saved into the one
//! results file as soon as it is measured (`PassObserver`), so Ctrl-C or
//! a crash keeps every point measured; `analysis.media` normalizes them
//! to the baseline. The configurations are guards, dropped at the end, on
//! an error and after Ctrl-C.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::json;

use super::kv_media::{KvMediaPlan, PlannedPart};
use super::media_set::{merge_pass, round_order, Overhead, PassTag};
use crate::analysis::AnalysisOptions;
use crate::error::{Interrupted, VerifyFailed};
use crate::interrupt;
use crate::kv::phase::PhaseOutcome;
use crate::kv::run::{KvObserver, KvRun, Started};
use crate::report::kv_terminal::KvTerminal;
use crate::report::media_terminal;
use crate::results::{Point, Provenance, Results};
use crate::session::{Observer, Progress, ResultsSink};
use crate::testbed::media::Medium;

/// How the rounds went.
#[derive(Default)]
struct Tally {
    interrupted: bool,
    mismatches: u64,
    /// "LABEL rN: error" of every pass that failed.
    failures: Vec<String>,
    passes: usize,
}

pub fn run(plan: &KvMediaPlan) -> anyhow::Result<()> {
    interrupt::install();
    for n in &plan.notices {
        eprintln!("iolab: {n}");
    }
    let mut overhead = Overhead::start();
    let media = plan.set.build(plan.room, plan.quiet)?;
    let dirs = plan.set.directories(&media);
    let results = start_results(plan, &media, &dirs);
    let mut sink = ResultsSink::new(
        results,
        plan.output.clone(),
        None,
        AnalysisOptions::default(),
    );
    sink.save()?;
    let sink = Mutex::new(sink);
    overhead.rounds_start();
    let tally = rounds(plan, &dirs, &sink);
    overhead.rounds_end();
    drop(media);
    let mut sink = sink.into_inner().unwrap_or_else(|e| e.into_inner());
    overhead.save_into(&mut sink.results);
    let tally = match tally {
        Ok(t) => t,
        Err(e) => {
            let _ = sink.finish(interrupt::stop_requested());
            return Err(e);
        }
    };
    let results = sink.finish(tally.interrupted || interrupt::stop_requested())?;
    if !plan.quiet {
        println!();
        for line in media_terminal::summary(&results) {
            println!("{line}");
        }
        if let Some(p) = &plan.output {
            println!("results: {}", p.display());
        }
    }
    if tally.mismatches > 0 {
        return Err(VerifyFailed {
            mismatches: tally.mismatches,
        }
        .into());
    }
    if results.interrupted {
        return Err(Interrupted.into());
    }
    if !tally.failures.is_empty() {
        anyhow::bail!(
            "{} of {} kv runs failed: {}",
            tally.failures.len(),
            tally.passes,
            tally.failures.join("; ")
        );
    }
    Ok(())
}

/// The results before the first pass: provenance, the plan, `extra.media`.
fn start_results(plan: &KvMediaPlan, media: &[Medium], dirs: &[PathBuf]) -> Results {
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
    results.warnings.extend(results.provenance.busy_warning());
    results.warnings.extend(plan.notices.iter().cloned());
    results
        .extra
        .insert("media".into(), plan.set.record_directories(dirs, media));
    results
}

/// Every round, every target in the round's order, every part.
fn rounds(
    plan: &KvMediaPlan,
    dirs: &[PathBuf],
    sink: &Mutex<ResultsSink>,
) -> anyhow::Result<Tally> {
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
                        term.warning(&what);
                        lock(sink).results.warnings.push(what.clone());
                        tally.failures.push(what);
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

fn lock(sink: &Mutex<ResultsSink>) -> std::sync::MutexGuard<'_, ResultsSink> {
    sink.lock().unwrap_or_else(|e| e.into_inner())
}

/// One part on one target in one round: `Err` when saving a point failed
/// (the run stops), `Ok(Err)` when the part failed (the run goes on).
fn pass(
    term: &KvTerminal,
    sink: &Mutex<ResultsSink>,
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
        save_error: Mutex::new(None),
    };
    let ran = crate::kv::run::run(&plan, &observer);
    if let Some(e) = observer
        .save_error
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
    {
        return Err(e);
    }
    Ok(ran)
}

/// What a pass's own results add to the run's (`media_set::merge_pass`)
/// and the engine's settings, into its part's description.
fn merge(sink: &Mutex<ResultsSink>, tag: &PassTag, kr: Results) {
    let mut s = lock(sink);
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
    sink: &'a Mutex<ResultsSink>,
    tag: &'a PassTag,
    part: &'a PlannedPart,
    save_error: Mutex<Option<anyhow::Error>>,
}

impl PassObserver<'_> {
    fn name(&self, phase: &str) -> String {
        self.tag.name(&self.part.workload(phase))
    }
}

impl Observer for PassObserver<'_> {
    fn progress(&self, p: &Progress<'_>) {
        let label = format!("{} r{}: {}", self.tag.label, self.tag.round, p.label);
        self.term.progress(&Progress {
            label: &label,
            ..*p
        });
    }

    fn progress_done(&self) {
        self.term.progress_done();
    }

    fn warning(&self, msg: &str) {
        self.term
            .warning(&format!("{} r{}: {msg}", self.tag.label, self.tag.round));
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
        }
        if outcome.interrupted {
            // A partial phase is no round of the comparison.
            p.extra.interrupted = Some(true);
        }
        if let Err(e) = lock(self.sink).push(p) {
            let mut slot = self.save_error.lock().unwrap_or_else(|e| e.into_inner());
            slot.get_or_insert(e);
        }
    }
}
