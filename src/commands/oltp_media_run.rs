//! Running a checked oltp media plan (`oltp_media::plan`) through
//! `media_passes::drive` (which builds the configurations): round by
//! round, target by target in alternating order, run the whole oltp plan
//! through `oltp::run::run` with the target's directory under it (a fresh
//! SQLite database or private server each pass, removed when the pass
//! ends). Each point is renamed `LABEL
//! rN: oltp.usersU`, tagged `medium`, `round`, `baseline` and saved into
//! the one results file as soon as it is measured (`PassObserver`), so
//! Ctrl-C or a crash keeps every point measured; each pass's load goes
//! into `extra.oltp_loads`; `analysis.media` normalizes the points to the
//! baseline. The configurations are guards, dropped at the end, on an
//! error and after Ctrl-C.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::media_passes::{drive, PassSink, Passes, Tally};
use super::media_set::{merge_pass, round_order, PassTag};
use super::oltp_media::OltpMediaPlan;
use crate::interrupt;
use crate::oltp::load::LoadInfo;
use crate::oltp::point::OltpInfo;
use crate::oltp::run::{consistency_error, OltpObserver, OltpRun, Started};
use crate::oltp::sql::connect::Engine;
use crate::report::oltp_terminal::OltpTerminal;
use crate::results::{Point, Provenance, Results};
use crate::session::{Observer, Progress};

pub fn run(m: &OltpMediaPlan) -> anyhow::Result<()> {
    let passes = Passes {
        set: &m.set,
        room: m.room,
        quiet: m.quiet,
        output: m.output.clone(),
    };
    let (results, tally) = drive(
        passes,
        || start_results(m),
        |dirs, sink| rounds(m, dirs, sink),
    )?;
    tally.exit(&results, "oltp", consistency_error)
}

/// The results before the first pass: provenance and the plan.
fn start_results(m: &OltpMediaPlan) -> Results {
    let p = &m.plan;
    let mut provenance = Provenance::collect(p.seed);
    provenance.plan = json!({
        "verb": "oltp",
        "workload": "TPC-C-derived",
        "engine": p.engine.name(),
        "private_server": p.engine != Engine::Sqlite,
        "warehouses": p.warehouses,
        "users": p.users,
        "ramp_s": p.ramp_s,
        "time_s": p.time_s,
        "wait": p.wait,
        "loader_threads": p.loader_threads,
        "check": p.check,
        "seed": p.seed,
    });
    Results::new("oltp", provenance)
}

/// Every round, every target in the round's order.
fn rounds(m: &OltpMediaPlan, dirs: &[PathBuf], sink: &PassSink) -> anyhow::Result<Tally> {
    let term = OltpTerminal::new(m.quiet);
    let mut tally = Tally::default();
    'rounds: for r in 0..m.set.rounds {
        for i in round_order(dirs.len(), r) {
            if interrupt::stop_requested() {
                tally.interrupted = true;
                break 'rounds;
            }
            let tag = m.set.tag(i, r);
            let ran = pass(&term, sink, &tag, m, &dirs[i]);
            tally.passes += 1;
            match ran? {
                Ok(run) => {
                    tally.mismatches += run.consistency_failures;
                    tally.interrupted |= run.results.interrupted;
                    merge(sink, &tag, run.results);
                }
                // Stopped while starting a server or loading: not a failure.
                Err(_) if interrupt::stop_requested() => {}
                Err(e) => tally.failed(sink, &term, tag.prefixed(&format!("{e:#}"))),
            }
            if tally.interrupted || interrupt::stop_requested() {
                tally.interrupted = true;
                break 'rounds;
            }
        }
    }
    Ok(tally)
}

/// The oltp plan on one target in one round: `Err` when saving a point
/// failed (the run stops), `Ok(Err)` when the pass failed (the run goes on).
fn pass(
    term: &OltpTerminal,
    sink: &PassSink,
    tag: &PassTag,
    m: &OltpMediaPlan,
    dir: &Path,
) -> anyhow::Result<anyhow::Result<OltpRun>> {
    let mut plan = m.plan.clone();
    plan.target = dir.to_path_buf();
    if !m.quiet {
        println!("\n=== {} round {}: {}", tag.label, tag.round, dir.display());
    }
    let observer = PassObserver { term, sink, tag };
    let ran = crate::oltp::run::run(&plan, &observer);
    match sink.take_error() {
        Some(e) => Err(e),
        None => Ok(ran),
    }
}

/// What a pass's own results add to the run's (`media_set::merge_pass`),
/// its load (`extra.oltp_loads`, labelled) and the first pass's server
/// description (`extra.server`: version and settings, the same on every
/// target but the data directory).
fn merge(sink: &PassSink, tag: &PassTag, pass: Results) {
    let mut s = sink.lock();
    let r = &mut s.results;
    merge_pass(r, tag, &pass);
    if let Some(server) = pass.extra.get("server") {
        r.extra
            .entry("server".to_string())
            .or_insert_with(|| server.clone());
    }
    if let Some(load) = pass.extra.get("oltp_load") {
        let mut load = load.clone();
        if let Some(o) = load.as_object_mut() {
            o.insert("medium".into(), json!(tag.label));
            o.insert("round".into(), json!(tag.round));
        }
        let loads = r
            .extra
            .entry("oltp_loads".to_string())
            .or_insert_with(|| json!([]));
        if let Some(list) = loads.as_array_mut() {
            list.push(load);
        }
    }
}

/// The oltp observer of one pass: shows what the terminal shows (progress
/// and warnings prefixed with the target and round), and saves every
/// point, renamed and tagged, into the run's results as it ends.
struct PassObserver<'a> {
    term: &'a OltpTerminal,
    sink: &'a PassSink,
    tag: &'a PassTag,
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
        self.term.status(&self.tag.prefixed(line));
    }
}

impl OltpObserver for PassObserver<'_> {
    fn server_starting(&self, engine: Engine, under: &Path) {
        self.term.server_starting(engine, under);
    }

    fn started(&self, s: &Started<'_>) {
        self.term.started(s);
    }

    fn loaded(&self, l: &LoadInfo) {
        self.term.loaded(l);
    }

    fn point_started(&self, users: usize) {
        self.term.point_started(users);
    }

    fn oltp_point_done(&self, point: &Point, info: &OltpInfo) {
        self.term.oltp_point_done(point, info);
        let mut p = point.clone();
        self.tag.apply(&mut p);
        self.sink.push(p);
    }
}
