//! The fleet as where a driver's jobs run (`--hosts`): every job of a
//! device run on every host at once, merged into one point whose
//! `extra.hosts` keeps each host's row. A host lost during a job leaves a
//! partial point naming it; then the run stops or goes on with the hosts
//! left, as the user chose.

use crate::results::sections::{HostRecord, HostsRecord};

use super::control::Fleet;
use super::proto::JobTarget;
use crate::plan::job::JobSpec;
use crate::results::Point;
use crate::runner::recorder::Live;
use crate::session::HostPlacement;

/// What follows a host lost during a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnHostLoss {
    Stop,
    Continue,
}

pub struct FleetPlacement {
    fleet: Fleet,
    target: JobTarget,
    on_loss: OnHostLoss,
    halted: Option<String>,
    /// The last pass's measured interval, control clock.
    last_window: Option<(u64, u64)>,
}

impl FleetPlacement {
    pub fn new(fleet: Fleet, target: JobTarget, on_loss: OnHostLoss) -> FleetPlacement {
        FleetPlacement {
            fleet,
            target,
            on_loss,
            halted: None,
            last_window: None,
        }
    }

    /// Run the next jobs against `target` (another export).
    pub fn set_target(&mut self, target: JobTarget) {
        self.target = target;
    }

    /// The last job's measured interval on this machine's clock: from the
    /// earliest host's release plus the ramp to the latest host's end.
    pub fn last_window(&self) -> Option<(u64, u64)> {
        self.last_window
    }

    /// The hosts for the results' provenance: as named, their host name,
    /// the agent's pid and build.
    pub fn describe(&self) -> HostsRecord {
        let hosts = self
            .fleet
            .agents()
            .iter()
            .map(|a| HostRecord {
                host: a.name.clone(),
                hostname: a.hello.hostname.clone(),
                agent_pid: a.hello.pid,
                build: Some(a.hello.build.to_string()),
            })
            .collect();
        HostsRecord {
            hosts,
            target: serde_json::to_value(&self.target).ok(),
        }
    }
}

impl HostPlacement for FleetPlacement {
    fn run(&mut self, job: &JobSpec, progress: &dyn Fn(f64, Live)) -> anyhow::Result<Point> {
        let ran = self.fleet.run_pass_observed(job, &self.target, &|p| {
            progress(
                p.elapsed_s,
                Live {
                    iops: p.iops,
                    mib_s: p.mib_s,
                    mean_ns: p.mean_ns,
                    p99_ns: p.p99_ns,
                    // Every host's report of this second, summed (collect::Seconds).
                    second: p.second,
                },
            )
        });
        if self.fleet.agents().is_empty() {
            self.halted = Some("every host was lost".into());
        }
        let pass = ran?;
        self.last_window = Some(pass.measured_window(job.ramp_ns));
        if pass.is_partial() && self.on_loss == OnHostLoss::Stop {
            let names: Vec<&str> = pass.lost.iter().map(|l| l.host.as_str()).collect();
            self.halted = Some(format!(
                "not run: host {} was lost (--on-host-loss stop)",
                names.join(", ")
            ));
        }
        Ok(pass.into_point())
    }

    fn halted(&self) -> Option<String> {
        self.halted.clone()
    }

    fn hosts(&self) -> usize {
        self.fleet.agents().len()
    }
}
