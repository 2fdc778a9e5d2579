//! What the media runs of `kv` and `oltp` share. Each is a series of
//! passes (the verb's whole run on one target in one round) saved into one
//! results file: `drive` builds the configurations, starts the results
//! file, runs the verb's rounds, takes the configurations down, records
//! the time outside the measurements, finishes the file and prints the
//! media table; `PassSink` is the file the passes' observers save their
//! points into as they are measured; `Tally` is how the passes went and
//! the exit status it makes.

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use super::media_set::{MediaSet, Overhead};
use crate::analysis::AnalysisOptions;
use crate::error::Interrupted;
use crate::interrupt;
use crate::report::media_terminal;
use crate::results::{Point, Results};
use crate::session::{Observer, ResultsSink};

/// How the passes went.
#[derive(Default)]
pub struct Tally {
    pub interrupted: bool,
    /// Verification mismatches (kv) or failed consistency conditions (oltp).
    pub mismatches: u64,
    /// "LABEL rN: error" of every pass that failed.
    pub failures: Vec<String>,
    pub passes: usize,
}

impl Tally {
    /// A pass that failed (the run goes on): said on `obs`, kept in the
    /// results' warnings, counted.
    pub fn failed(&mut self, sink: &PassSink, obs: &dyn Observer, what: String) {
        obs.warning(&what);
        sink.lock().results.warnings.push(what.clone());
        self.failures.push(what);
    }

    /// The run's exit: mismatches first (`mismatch` makes the error, exit
    /// 3), then an interrupted run (130), then failed passes of `verb` (1).
    pub fn exit(
        &self,
        results: &Results,
        verb: &str,
        mismatch: impl FnOnce(u64) -> anyhow::Error,
    ) -> anyhow::Result<()> {
        if self.mismatches > 0 {
            return Err(mismatch(self.mismatches));
        }
        if results.interrupted {
            return Err(Interrupted.into());
        }
        if !self.failures.is_empty() {
            anyhow::bail!(
                "{} of {} {verb} runs failed: {}",
                self.failures.len(),
                self.passes,
                self.failures.join("; ")
            );
        }
        Ok(())
    }
}

/// The run's results file, shared by the passes' observers: every point
/// is saved as it comes; the first save that fails is kept, and the run
/// stops after its pass (`take_error`).
pub struct PassSink {
    sink: Mutex<ResultsSink>,
    save_error: Mutex<Option<anyhow::Error>>,
}

impl PassSink {
    pub fn lock(&self) -> MutexGuard<'_, ResultsSink> {
        self.sink.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Save a point (already named and tagged by its pass).
    pub fn push(&self, p: Point) {
        if let Err(e) = self.lock().push(p) {
            let mut slot = self.save_error.lock().unwrap_or_else(|e| e.into_inner());
            slot.get_or_insert(e);
        }
    }

    /// The error of a save that failed since the last call.
    pub fn take_error(&self) -> Option<anyhow::Error> {
        self.save_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }
}

/// What `drive` needs of a checked media plan.
pub struct Passes<'a> {
    pub set: &'a MediaSet,
    /// Room of each configuration.
    pub room: u64,
    pub quiet: bool,
    pub output: Option<PathBuf>,
}

/// Build the configurations, start the results (`start`: the verb's
/// provenance and warnings; `drive` adds the busy-machine warning first
/// and `extra.media`) and save them, run
/// `rounds` over the directories, take the configurations down, record
/// `extra.media.overhead`, finish the file and print the media table:
/// the finished results and the tally. An error from `rounds` (a point
/// that could not be saved) finishes the file as it is and is returned.
pub fn drive(
    p: Passes<'_>,
    start: impl FnOnce() -> Results,
    rounds: impl FnOnce(&[PathBuf], &PassSink) -> anyhow::Result<Tally>,
) -> anyhow::Result<(Results, Tally)> {
    interrupt::install();
    let mut overhead = Overhead::start();
    let media = p.set.build(p.room, p.quiet)?;
    let dirs = p.set.directories(&media);
    let mut results = start();
    let busy = results.provenance.busy_warning();
    results.warnings.splice(0..0, busy);
    results
        .extra
        .insert("media".into(), p.set.record_directories(&dirs, &media));
    let mut sink = ResultsSink::new(results, p.output.clone(), AnalysisOptions::default());
    sink.save()?;
    let sink = PassSink {
        sink: Mutex::new(sink),
        save_error: Mutex::new(None),
    };
    overhead.rounds_start();
    let tally = rounds(&dirs, &sink);
    overhead.rounds_end();
    drop(media);
    let mut sink = sink.sink.into_inner().unwrap_or_else(|e| e.into_inner());
    overhead.save_into(&mut sink.results);
    let tally = match tally {
        Ok(t) => t,
        Err(e) => {
            let _ = sink.finish(interrupt::stop_requested());
            return Err(e);
        }
    };
    let results = sink.finish(tally.interrupted || interrupt::stop_requested())?;
    if !p.quiet {
        println!();
        for line in media_terminal::summary(&results) {
            println!("{line}");
        }
        if let Some(out) = &p.output {
            println!("results: {}", out.display());
        }
    }
    Ok((results, tally))
}
