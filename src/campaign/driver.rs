//! The one round loop of the crate: every pass of a campaign (each part
//! of the workload on each setup in each round) in interleaved order,
//! with the tally of how the passes went and the exit status it makes.
//! What a pass does is the workload's (`Workload::run_pass`); where the
//! configurations come from and where results go is the caller's. Where
//! a pass's clients run is the workload's placement, not the loop's: this
//! machine, or every host of `--hosts` at once (the session driver's
//! `HostPlacement` for device jobs, `fleet::kv_run` for a kv plan), so
//! rounds, baseline, interrupt and teardown are the same either way.

use super::pass::{round_order, Pass};
use super::setups::MediaSet;
use crate::error::Interrupted;
use crate::interrupt;
use crate::results::Results;

/// How the passes of one round are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Every part on a setup, then the next setup (`device`, `kv`, `oltp`).
    SetupMajor,
    /// One part on every setup, then the next part (`run`: each job is
    /// measured on every target minutes apart).
    PartMajor,
}

/// How one pass went.
pub enum PassOutcome {
    /// It ran (to the end, or until a stop: `interrupted`); `mismatches`
    /// counts verification mismatches or failed consistency conditions.
    Ran { mismatches: u64, interrupted: bool },
    /// It could not run; the campaign goes on with the next pass.
    Failed(anyhow::Error),
}

impl PassOutcome {
    /// A pass that ran to the end.
    pub fn done() -> PassOutcome {
        PassOutcome::Ran {
            mismatches: 0,
            interrupted: false,
        }
    }
}

/// A workload a campaign runs on each setup in each round.
pub trait Workload {
    /// The parts of one pass, in order (`None`: one unnamed part). A
    /// part named is in the points' `PassId::part`.
    fn parts(&self) -> Vec<Option<String>> {
        vec![None]
    }

    /// Run part `part` on setup `setup` (its index among the campaign's
    /// setups) for `pass`. `Err` stops the campaign (a point that could
    /// not be saved); `Ok(Failed)` is a pass that failed.
    fn run_pass(&mut self, pass: &Pass, setup: usize, part: usize) -> anyhow::Result<PassOutcome>;

    /// A pass failed: say so (`what` names the pass) and keep it in the
    /// results.
    fn failed(&mut self, what: &str);
}

/// What the driver needs to know of the campaign: the setups' labels in
/// run order, the baseline's, the rounds and the order within a round.
pub struct Schedule {
    pub setups: Vec<String>,
    pub baseline: String,
    pub rounds: u32,
    pub order: Order,
}

impl Schedule {
    /// The schedule of a media run's setups (`--target`, `--make`).
    pub fn of(set: &MediaSet, order: Order) -> Schedule {
        Schedule {
            setups: set.labels(),
            baseline: set.baseline.clone(),
            rounds: set.rounds,
            order,
        }
    }

    /// Pass `setup` of round `r` (0-based).
    fn pass(&self, setup: usize, r: u32, part: Option<String>) -> Pass {
        Pass {
            label: self.setups[setup].clone(),
            round: r + 1,
            baseline: self.baseline.clone(),
            part,
        }
    }
}

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

/// Every pass of round `r` (0-based): (setup, part) in `order`, the
/// setups forward in even rounds and backward in odd ones.
pub fn passes_of_round(setups: usize, parts: usize, r: u32, order: Order) -> Vec<(usize, usize)> {
    let setups = round_order(setups, r);
    match order {
        Order::SetupMajor => setups
            .iter()
            .flat_map(|&i| (0..parts).map(move |k| (i, k)))
            .collect(),
        Order::PartMajor => (0..parts)
            .flat_map(|k| setups.iter().map(move |&i| (i, k)))
            .collect(),
    }
}

/// Run every pass of the campaign until the end or a stop.
pub fn run_rounds(s: &Schedule, w: &mut dyn Workload) -> anyhow::Result<Tally> {
    let parts = w.parts();
    let mut tally = Tally::default();
    for r in 0..s.rounds {
        for (i, k) in passes_of_round(s.setups.len(), parts.len(), r, s.order) {
            if interrupt::stop_requested() {
                tally.interrupted = true;
                return Ok(tally);
            }
            let pass = s.pass(i, r, parts[k].clone());
            let ran = w.run_pass(&pass, i, k)?;
            tally.passes += 1;
            match ran {
                PassOutcome::Ran {
                    mismatches,
                    interrupted,
                } => {
                    tally.mismatches += mismatches;
                    tally.interrupted |= interrupted;
                }
                // Stopped while setting up: not a failure.
                PassOutcome::Failed(_) if interrupt::stop_requested() => {}
                PassOutcome::Failed(e) => {
                    let what = pass.failure(&e);
                    w.failed(&what);
                    tally.failures.push(what);
                }
            }
            if tally.interrupted || interrupt::stop_requested() {
                tally.interrupted = true;
                return Ok(tally);
            }
        }
    }
    Ok(tally)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_interleave_setups_and_parts_in_either_order() {
        assert_eq!(
            passes_of_round(2, 2, 0, Order::SetupMajor),
            [(0, 0), (0, 1), (1, 0), (1, 1)]
        );
        assert_eq!(
            passes_of_round(2, 2, 1, Order::SetupMajor),
            [(1, 0), (1, 1), (0, 0), (0, 1)]
        );
        assert_eq!(
            passes_of_round(2, 2, 1, Order::PartMajor),
            [(1, 0), (0, 0), (1, 1), (0, 1)]
        );
    }

    /// Passes that fail, and one whose results cannot be saved.
    struct Scripted {
        fail: Vec<(String, usize)>,
        fatal_at: Option<usize>,
        ran: Vec<(String, u32, usize)>,
        said: Vec<String>,
    }

    impl Workload for Scripted {
        fn parts(&self) -> Vec<Option<String>> {
            vec![None, Some("two".into())]
        }

        fn run_pass(
            &mut self,
            pass: &Pass,
            _setup: usize,
            part: usize,
        ) -> anyhow::Result<PassOutcome> {
            self.ran.push((pass.label.clone(), pass.round, part));
            if self.fatal_at == Some(self.ran.len()) {
                anyhow::bail!("cannot save");
            }
            if self.fail.contains(&(pass.label.clone(), part)) {
                return Ok(PassOutcome::Failed(anyhow::anyhow!("no room")));
            }
            Ok(PassOutcome::Ran {
                mismatches: 1,
                interrupted: false,
            })
        }

        fn failed(&mut self, what: &str) {
            self.said.push(what.to_string());
        }
    }

    fn schedule() -> Schedule {
        Schedule {
            setups: vec!["a".into(), "b".into()],
            baseline: "a".into(),
            rounds: 2,
            order: Order::SetupMajor,
        }
    }

    #[test]
    fn a_failed_pass_is_tallied_and_the_campaign_goes_on() {
        let mut w = Scripted {
            fail: vec![("b".into(), 1)],
            fatal_at: None,
            ran: Vec::new(),
            said: Vec::new(),
        };
        let tally = run_rounds(&schedule(), &mut w).unwrap();
        assert_eq!(tally.passes, 8);
        assert_eq!(&w.ran[4..6], [("b".into(), 2, 0), ("b".into(), 2, 1)]);
        assert_eq!(w.said, ["b r1 two: no room", "b r2 two: no room"]);
        assert_eq!(tally.mismatches, 6);
        let r = Results::new("kv", crate::results::Provenance::minimal());
        let e = tally.exit(&r, "kv", |n| anyhow::anyhow!("{n} mismatches"));
        assert_eq!(e.unwrap_err().to_string(), "6 mismatches");
        let clean = Tally {
            failures: tally.failures.clone(),
            passes: 8,
            ..Tally::default()
        };
        let e = clean.exit(&r, "kv", |_| unreachable!()).unwrap_err();
        assert!(e.to_string().starts_with("2 of 8 kv runs failed"), "{e}");
    }

    #[test]
    fn an_error_stops_the_campaign() {
        let mut w = Scripted {
            fail: Vec::new(),
            fatal_at: Some(3),
            ran: Vec::new(),
            said: Vec::new(),
        };
        assert!(run_rounds(&schedule(), &mut w).is_err());
        assert_eq!(w.ran.len(), 3);
    }
}
