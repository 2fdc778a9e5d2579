//! Campaigns whose passes run on directories (`kv`, `oltp`: a fresh
//! database in the setup's directory every pass): `drive` builds the
//! configurations, starts the results file, runs the rounds, takes the
//! configurations down, records the time outside the measurements,
//! finishes the file and closes through the verb's presenter (the media
//! table, the exports); `PassSink` is the file
//! the passes' observers save their points into as they are measured.

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use super::driver::{PassOutcome, Tally};
use super::overhead::Overhead;
use super::setups::MediaSet;
use crate::analysis::AnalysisOptions;
use crate::interrupt;
use crate::results::{Point, Results};
use crate::session::{Presenter, ResultsSink};

/// The run's results file, shared by the passes' observers: every point
/// is saved as it comes; the first save that fails is kept, and the run
/// stops after its pass (`take_error`).
pub struct PassSink {
    sink: Mutex<ResultsSink>,
    save_error: Mutex<Option<anyhow::Error>>,
}

impl PassSink {
    pub fn new(sink: ResultsSink) -> PassSink {
        PassSink {
            sink: Mutex::new(sink),
            save_error: Mutex::new(None),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, ResultsSink> {
        self.sink.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A pass that failed: said on `obs` and kept in the run's warnings.
    pub fn failed(&self, obs: &dyn crate::session::Observer, what: &str) {
        obs.warning(what);
        self.lock().results.warnings.push(what.to_string());
    }

    /// Save a point (already named and tagged by its pass).
    pub fn push(&self, p: Point) {
        if let Err(e) = self.lock().push(p) {
            let mut slot = self.save_error.lock().unwrap_or_else(|e| e.into_inner());
            slot.get_or_insert(e);
        }
    }

    /// How a pass that saved its points here went: `Err` when a save
    /// failed (the campaign stops), else what `ran` says (`outcome` of a
    /// run, or a failed pass).
    pub fn pass_outcome<T>(
        &self,
        ran: anyhow::Result<T>,
        outcome: impl FnOnce(T) -> PassOutcome,
    ) -> anyhow::Result<PassOutcome> {
        if let Some(e) = self.take_error() {
            return Err(e);
        }
        Ok(match ran {
            Ok(r) => outcome(r),
            Err(e) => PassOutcome::Failed(e),
        })
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
    /// The hosts every pass runs on (`--hosts`): the directories are
    /// theirs, so no file system of this machine is recorded for them.
    pub hosts: Option<crate::results::sections::HostsRecord>,
}

/// Build the configurations, start the results (`start`: the verb's
/// provenance and warnings; `drive` adds the busy-machine warning first
/// and `extra.media`) and save them, run
/// `rounds` over the directories, take the configurations down, record
/// `extra.media.overhead`, finish the file and print the media table:
/// the finished results and the tally. An error from `rounds` (a point
/// that could not be saved) finishes the file as it is and is returned.
pub fn drive<O: ?Sized>(
    p: Passes<'_>,
    presenter: &Presenter<O>,
    start: impl FnOnce() -> Results,
    rounds: impl FnOnce(&[PathBuf], &PassSink) -> anyhow::Result<Tally>,
) -> anyhow::Result<(Results, Tally)> {
    interrupt::install();
    let t0 = std::time::Instant::now();
    let mut overhead = Overhead::start();
    // On hosts the configurations are theirs (built before the rounds).
    let (media, dirs) = match &p.hosts {
        None => {
            let media = p.set.build(p.room, p.quiet)?;
            let dirs = p.set.directories(&media);
            (media, dirs)
        }
        Some(_) => (Vec::new(), p.set.host_directories()),
    };
    let mut results = start();
    let busy = results.provenance.busy_warning();
    results.warnings.splice(0..0, busy);
    results.extra.media = Some(p.set.record_directories(&dirs, &media, p.hosts.is_none()));
    results.extra.hosts = p.hosts;
    let mut sink = ResultsSink::new(results, p.output.clone(), AnalysisOptions::default());
    sink.save()?;
    let sink = PassSink::new(sink);
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
    let out = (std::path::Path::new("."), p.output.as_deref());
    presenter.close(&results, out, t0.elapsed().as_secs_f64(), p.quiet)?;
    Ok((results, tally))
}
