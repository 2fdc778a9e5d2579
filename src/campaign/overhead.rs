//! The wall time of a campaign outside its measured intervals
//! (`extra.media.overhead`): what interleaving setups costs.

use crate::results::sections::MediaOverhead;
use std::time::Instant;

use crate::results::{Point, Results};

/// The wall time of a media run outside its measured intervals: building
/// the configurations and preparing the targets (set-up), everything
/// between measured intervals while the rounds run (opening and closing
/// engines, making and removing databases, switching targets), and the
/// teardown. The measured time is the sum of the points' durations (ramp
/// included: it is part of measuring). Exposed, not judged:
/// `extra.media.overhead`.
pub struct Overhead {
    started: Instant,
    rounds_started: Option<Instant>,
    rounds_ended: Option<Instant>,
}

impl Overhead {
    /// Start the clock (before anything is built).
    pub fn start() -> Overhead {
        Overhead {
            started: Instant::now(),
            rounds_started: None,
            rounds_ended: None,
        }
    }

    /// The set-up is done: the rounds start.
    pub fn rounds_start(&mut self) {
        self.rounds_started = Some(Instant::now());
    }

    /// The rounds are done (or stopped): the teardown starts.
    pub fn rounds_end(&mut self) {
        self.rounds_ended = Some(Instant::now());
    }

    /// The accounting at the end of the teardown, over the points measured.
    pub fn record(&self, points: &[Point]) -> MediaOverhead {
        let now = Instant::now();
        let rounds_started = self.rounds_started.unwrap_or(now);
        let rounds_ended = self.rounds_ended.unwrap_or(now);
        let secs = |a: Instant, b: Instant| b.saturating_duration_since(a).as_secs_f64();
        let measured_s: f64 = points
            .iter()
            .map(|p| (p.duration_ns + p.ramp_ns) as f64 / 1e9)
            .sum();
        let wall_s = secs(self.started, now);
        let overhead_s = (wall_s - measured_s).max(0.0);
        MediaOverhead {
            wall_s,
            measured_s,
            setup_s: secs(self.started, rounds_started),
            between_s: (secs(rounds_started, rounds_ended) - measured_s).max(0.0),
            teardown_s: secs(rounds_ended, now),
            overhead_s,
            share_of_measured: (measured_s > 0.0).then(|| overhead_s / measured_s),
        }
    }

    /// `extra.media.overhead`, over the points of `results` (a results
    /// file without `extra.media` gets one holding only this).
    pub fn save_into(&self, results: &mut Results) {
        let record = self.record(&results.points);
        results
            .extra
            .media
            .get_or_insert_with(Default::default)
            .overhead = Some(record);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_overhead_is_the_wall_time_outside_the_points() {
        let mut o = Overhead::start();
        o.rounds_start();
        std::thread::sleep(std::time::Duration::from_millis(20));
        o.rounds_end();
        let mut p =
            crate::analysis::testutil::point(&crate::plan::job::JobSpec::default(), 1.0, 1.0, 1);
        p.duration_ns = 5_000_000;
        p.ramp_ns = 0;
        let r = o.record(&[p]);
        assert!(r.wall_s >= 0.02, "{r:?}");
        assert!((r.measured_s - 0.005).abs() < 1e-9);
        assert!((r.overhead_s - (r.wall_s - 0.005)).abs() < 1e-9);
        assert!(r.between_s >= 0.014, "{r:?}");
        assert!(crate::report::media_terminal::overhead_line(&r).contains("measured 0.0 s"));
    }
}
