//! The one experiment driver's vocabulary: how a run talks to the outside
//! world. The driver (and kv's phases) report through an [`Observer`] and
//! never print; the terminal observer lives in `report/`, tests use
//! [`Silent`] or a recording observer. Modeled on criterion.rs's `Report`.

pub mod driver;
pub mod export;
pub mod sink;

pub use crate::plan::job::with_rate;
pub use driver::{DriveOutcome, Driver, Tags};
pub use export::{Exporter, Presenter};
pub use sink::ResultsSink;

use crate::plan::job::JobSpec;
use crate::results::Point;
use crate::trace::config::ConfigResult;

/// Where a driver's jobs run when not on this machine (`--hosts`: every
/// job on several hosts at once, merged into one point).
pub trait HostPlacement {
    /// Run `job` on the hosts; `progress(elapsed_s, the hosts' last
    /// second combined)` about once a second while it runs. A host lost
    /// during the job gives a partial point (`extra.hosts.lost`), not an
    /// error.
    fn run(
        &mut self,
        job: &JobSpec,
        progress: &dyn Fn(f64, crate::runner::recorder::Live),
    ) -> anyhow::Result<Point>;
    /// Why no further job may run (a host was lost and the run stops).
    fn halted(&self) -> Option<String>;
    /// Run the next jobs on setup `setup` of a campaign (its target on
    /// every host): a campaign's passes over several setups.
    fn select_setup(&mut self, setup: usize);
}

/// Where a long run is, about once a second while a point is measured.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    /// What is running, e.g. "[3/12] randread-4k-qd8" or "ycsb a run".
    pub label: &'a str,
    /// Seconds into the current point or phase.
    pub elapsed_s: f64,
    /// Its expected length, when known.
    pub expected_s: Option<f64>,
    /// Expected seconds left in the whole run, when known.
    pub eta_s: Option<f64>,
    /// The last complete second of a device point: IOPS, MiB/s, latency.
    pub live: Option<crate::runner::recorder::Live>,
}

/// Receives what a run does. Every method has a do-nothing default so an
/// observer implements only what it shows. `Sync`: progress is reported
/// from the thread that supervises the workers.
pub trait Observer: Sync {
    /// About once a second during a measured point or phase.
    fn progress(&self, _p: &Progress<'_>) {}
    /// The progress line is no longer needed (the point or phase ended).
    fn progress_done(&self) {}
    /// A point was measured and saved.
    fn point_done(&self, _point: &Point) {}
    /// A point could not run; `failed` is true for errors, false for
    /// limitations (an engine feature missing, a setting that does not apply).
    fn point_skipped(&self, _name: &str, _reason: &str, _failed: bool) {}
    /// A warning for the user (also kept in the results).
    fn warning(&self, _msg: &str) {}
    /// A status line that is neither a result nor a warning.
    fn note(&self, _msg: &str) {}
    /// A periodic status line for logs (`--status-interval`): stdout.
    fn status(&self, _line: &str) {}
    /// `--status-interval` during a device point: its last complete second
    /// (`p.live` is set).
    fn point_status(&self, _p: &Progress<'_>) {}
    /// `--breakdown`: the stack breakdown of the point just done.
    fn point_traced(&self, _trace: &ConfigResult) {}
}

/// Shows nothing (tests, `--quiet`, library callers that print themselves).
pub struct Silent;

impl Observer for Silent {}

/// Mark `point` partial if Ctrl-C stopped its job before the end.
pub fn mark_if_interrupted(point: &mut Point) {
    if crate::interrupt::stop_requested() {
        point.mark_interrupted("interrupted before the end of the job: this point is partial");
    }
}

/// `--status-interval`, checked: seconds, at least one (every verb's).
pub fn checked_status_interval(v: Option<f64>) -> anyhow::Result<Option<f64>> {
    match v {
        Some(s) if !(s >= 1.0 && s.is_finite()) => Err(crate::error::usage(
            "--status-interval",
            "give a number of seconds (1 or more)",
        )),
        v => Ok(v),
    }
}

/// When the next `--status-interval` line is due, from the progress calls
/// (the supervising thread only; an atomic keeps the closure `Fn`).
pub struct StatusEvery {
    every_s: Option<f64>,
    last_s: std::sync::atomic::AtomicU64,
    /// The job's second the last status line showed.
    last_second: std::sync::atomic::AtomicU64,
}

impl StatusEvery {
    pub fn new(every_s: Option<f64>) -> StatusEvery {
        StatusEvery {
            every_s,
            last_s: std::sync::atomic::AtomicU64::new(0),
            last_second: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// One progress tick: the progress line (when `show`) and, when due and
    /// the last second is known, a status line.
    pub fn report(&self, observer: &dyn Observer, show: bool, p: &Progress<'_>) {
        if show {
            observer.progress(p);
        }
        let Some(live) = p.live else {
            return;
        };
        // A second already shown (the workers have not published the
        // next one yet) is not shown again as if it were new.
        use std::sync::atomic::Ordering;
        if live.second == self.last_second.load(Ordering::Relaxed) {
            return;
        }
        if self.due(p.elapsed_s) {
            self.last_second.store(live.second, Ordering::Relaxed);
            observer.point_status(p);
        }
    }

    /// A new job starts: its seconds count from zero.
    pub fn reset(&self) {
        self.last_s
            .store(0f64.to_bits(), std::sync::atomic::Ordering::Relaxed);
        self.last_second
            .store(0, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether a status line is due at `elapsed_s` (and note it as given).
    pub fn due(&self, elapsed_s: f64) -> bool {
        use std::sync::atomic::Ordering;
        let Some(every) = self.every_s else {
            return false;
        };
        let mut last = f64::from_bits(self.last_s.load(Ordering::Relaxed));
        if elapsed_s < last {
            // Another job of the same run started: seconds count from zero.
            last = 0.0;
        }
        if elapsed_s - last < every - 0.5 {
            return false;
        }
        self.last_s.store(elapsed_s.to_bits(), Ordering::Relaxed);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::recorder::Live;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Lines(Mutex<Vec<f64>>);

    impl Observer for Lines {
        fn point_status(&self, p: &Progress<'_>) {
            self.0.lock().unwrap().push(p.elapsed_s);
        }
    }

    fn tick(s: &StatusEvery, o: &Lines, elapsed_s: f64, second: u64) {
        let live = Live {
            iops: 1.0,
            mib_s: 1.0,
            mean_ns: 1.0,
            p99_ns: 1,
            second,
        };
        s.report(
            o,
            false,
            &Progress {
                label: "p",
                elapsed_s,
                expected_s: None,
                eta_s: None,
                live: Some(live),
            },
        );
    }

    #[test]
    fn a_second_already_shown_is_not_shown_again() {
        let (s, o) = (StatusEvery::new(Some(1.0)), Lines::default());
        tick(&s, &o, 1.0, 1);
        // The workers have not published the next second yet.
        tick(&s, &o, 2.0, 1);
        tick(&s, &o, 3.0, 3);
        assert_eq!(*o.0.lock().unwrap(), [1.0, 3.0]);
    }
}
