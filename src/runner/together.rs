//! Several jobs at once, as fio runs the jobs of one job file that no
//! `stonewall` separates: each job on its own thread with its own workers,
//! every job's workers released at one instant (a gate each job's
//! `before_start` waits at), then one outcome per job. A job that fails
//! before it reaches the gate leaves it, so the others never wait on it.

use std::sync::{Condvar, Mutex};

use super::job::{run_job, JobOutcome, RunOptions};
use crate::dut::Target;
use crate::plan::job::JobSpec;

/// Opens when every job has arrived or left.
struct StartGate {
    waiting_for: Mutex<usize>,
    opened: Condvar,
}

impl StartGate {
    fn new(n: usize) -> StartGate {
        StartGate {
            waiting_for: Mutex::new(n),
            opened: Condvar::new(),
        }
    }

    /// One job is ready: wait for the others.
    fn arrive(&self) {
        let mut left = self.waiting_for.lock().unwrap_or_else(|e| e.into_inner());
        *left = left.saturating_sub(1);
        if *left == 0 {
            self.opened.notify_all();
        }
        while *left > 0 {
            left = self.opened.wait(left).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// One job will never arrive (it failed while setting up).
    fn leave(&self) {
        let mut left = self.waiting_for.lock().unwrap_or_else(|e| e.into_inner());
        *left = left.saturating_sub(1);
        if *left == 0 {
            self.opened.notify_all();
        }
    }
}

/// Run `jobs` at once on `target`; their outcomes in job order. Progress
/// goes to `opts.on_progress` from the first job only.
pub fn run_together(
    jobs: &[JobSpec],
    target: &Target,
    opts: &RunOptions,
) -> Vec<anyhow::Result<JobOutcome>> {
    let gate = StartGate::new(jobs.len());
    std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .iter()
            .enumerate()
            .map(|(i, job)| {
                let gate = &gate;
                s.spawn(move || {
                    let arrived = std::sync::atomic::AtomicBool::new(false);
                    let wait = || {
                        arrived.store(true, std::sync::atomic::Ordering::SeqCst);
                        gate.arrive();
                    };
                    let mine = RunOptions {
                        record_requests: opts.record_requests,
                        on_progress: if i == 0 { opts.on_progress } else { None },
                        clock: opts.clock,
                        peers: if i == 0 { opts.peers } else { None },
                        before_start: Some(&wait),
                    };
                    let out = run_job(job, target, &mine);
                    if !arrived.load(std::sync::atomic::Ordering::SeqCst) {
                        gate.leave();
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a concurrent job's thread panicked")))
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::engines::EngineKind;
    use crate::plan::job::StopCondition;

    fn null_job(name: &str, n: u64) -> JobSpec {
        JobSpec {
            name: name.into(),
            engine: EngineKind::parse("null").unwrap(),
            stop: StopCondition {
                runtime_ns: None,
                io_count: Some(n),
                io_bytes: None,
            },
            ..JobSpec::default()
        }
    }

    #[test]
    fn jobs_run_at_once_and_each_keeps_its_own_point() {
        let jobs = [null_job("a", 3000), null_job("b", 5000)];
        let out = run_together(&jobs, &Target::none(1 << 20), &RunOptions::default());
        let ops: Vec<u64> = out
            .iter()
            .map(|o| o.as_ref().unwrap().point.total.ops)
            .collect();
        assert_eq!(ops, [3000, 5000]);
    }

    #[test]
    fn a_job_that_cannot_start_does_not_hold_the_others() {
        let mut bad = null_job("bad", 10);
        // A file engine on no file fails before its workers are ready.
        bad.engine = EngineKind::parse("psync").unwrap();
        let jobs = [null_job("good", 2000), bad];
        let out = run_together(&jobs, &Target::none(1 << 20), &RunOptions::default());
        assert_eq!(out[0].as_ref().unwrap().point.total.ops, 2000);
        assert!(out[1].is_err());
    }
}
