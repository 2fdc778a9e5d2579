//! The fleet as where a driver's jobs run (`--hosts`): every job of a
//! device run on every host at once, merged into one point whose
//! `extra.hosts` keeps each host's row. A host lost during a job leaves a
//! partial point naming it; then the run stops or goes on with the hosts
//! left, as the user chose. An open-loop rate is the point's whole
//! offered load, shared evenly over the hosts (`host_share`). With host
//! groups (`--hosts @FILE.toml`) each host runs its group's job and
//! target, a group's rate shared over its hosts (`fleet::groups`).

use crate::results::sections::{HostRecord, HostsRecord};

use std::collections::HashMap;

use super::control::{Fleet, HostWork};
use super::groups::HostGroups;
use super::proto::{AgentWork, JobTarget};
use crate::plan::job::JobSpec;
use crate::results::Point;
use crate::runner::recorder::Live;
use crate::session::HostPlacement;

/// What one host runs in a pass under host groups.
struct HostJob {
    job: JobSpec,
    target: JobTarget,
    group: Option<String>,
}

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
    /// A campaign's setups on the hosts, each its target (`select_setup`).
    setups: Vec<JobTarget>,
    /// Host groups with their own jobs (`None`: every host runs the job).
    groups: Option<HostGroups>,
}

impl FleetPlacement {
    pub fn new(fleet: Fleet, target: JobTarget, on_loss: OnHostLoss) -> FleetPlacement {
        FleetPlacement {
            fleet,
            target,
            on_loss,
            halted: None,
            last_window: None,
            setups: Vec::new(),
            groups: None,
        }
    }

    /// Run each host's group's job and target (a plain list changes nothing).
    pub fn with_groups(mut self, groups: HostGroups) -> FleetPlacement {
        self.groups = Some(groups).filter(|g| !g.is_plain());
        self
    }

    /// Each live host's job and target and group under the groups: the
    /// group's overrides, its rate shared over the group's hosts still here.
    fn group_jobs(&self, groups: &HostGroups, job: &JobSpec) -> HashMap<String, HostJob> {
        let names = self.fleet.hosts();
        let index = groups.index();
        let mut live = vec![0; groups.groups.len()];
        for i in names.iter().filter_map(|n| index.get(n)) {
            live[*i] += 1;
        }
        names
            .iter()
            .map(|n| {
                let ran = match index.get(n).map(|i| (*i, &groups.groups[*i])) {
                    Some((i, g)) => HostJob {
                        job: g.job.apply(job, live[i], names.len()),
                        target: g.job.target(&self.target),
                        group: g.name.clone(),
                    },
                    None => HostJob {
                        job: host_share(job, names.len()),
                        target: self.target.clone(),
                        group: None,
                    },
                };
                (n.clone(), ran)
            })
            .collect()
    }

    /// A campaign's setups: the target on every host of each, in setup
    /// order (the first is the target until one is selected).
    pub fn with_setups(mut self, setups: Vec<JobTarget>) -> FleetPlacement {
        if let Some(first) = setups.first() {
            self.target = first.clone();
        }
        self.setups = setups;
        self
    }

    /// Build the configurations of `reqs` on every host (`Fleet::make`).
    pub fn make(&mut self, reqs: &[super::proto::MakeRequest]) -> anyhow::Result<()> {
        if reqs.is_empty() {
            return Ok(());
        }
        self.fleet.make(reqs)
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
        let mut record = hosts_record(&self.fleet, Some(&self.target));
        record.groups = self.groups.as_ref().map(HostGroups::record);
        record
    }
}

/// A fleet's hosts for the results' provenance: as named, their host name,
/// the agent's pid and build, and the jobs' `target` on each.
pub fn hosts_record(fleet: &Fleet, target: Option<&JobTarget>) -> HostsRecord {
    let hosts = fleet
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
        target: target.and_then(|t| serde_json::to_value(t).ok()),
        groups: None,
    }
}

/// The job each of `hosts` runs: an open-loop rate is the point's whole
/// offered load, shared evenly over the hosts (as a rate is over a host's
/// jobs), so `--rate`, a share of the closed-loop maximum and a searched
/// rate mean the same on one host or many.
pub fn host_share(job: &JobSpec, hosts: usize) -> JobSpec {
    let mut share = job.clone();
    if let Some(ol) = share.open_loop.as_mut() {
        ol.rate_iops /= hosts.max(1) as f64;
    }
    share
}

impl HostPlacement for FleetPlacement {
    fn run(&mut self, job: &JobSpec, progress: &dyn Fn(f64, Live)) -> anyhow::Result<Point> {
        let hosts = self.fleet.agents().len();
        let share = host_share(job, hosts);
        let observe = |p: super::proto::ProgressReport| {
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
        };
        let by_host = self.groups.as_ref().map(|g| self.group_jobs(g, job));
        let ran = match &by_host {
            Some(by_host) => {
                let prepare = |h: &str| match by_host.get(h) {
                    Some(r) => (AgentWork::Device(Box::new(r.job.clone())), r.target.clone()),
                    None => (
                        AgentWork::Device(Box::new(share.clone())),
                        self.target.clone(),
                    ),
                };
                let group = |h: &str| by_host.get(h).and_then(|r| r.group.clone());
                let each = HostWork {
                    prepare: &prepare,
                    group: &group,
                };
                self.fleet.run_each_observed(&each, &observe)
            }
            None => self.fleet.run_pass_observed(&share, &self.target, &observe),
        };
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
        let mut point = pass.into_point();
        // The point is the whole's: its job and rate, each host's share beside.
        if let (Some(ol), Some(h), None) = (&share.open_loop, point.extra.hosts.as_mut(), &by_host)
        {
            h.rate_per_host = Some(ol.rate_iops);
            point.job = Some(job.clone());
            point.params = crate::runner::point::params_of(job);
        }
        // With groups: the command line's job, each host's offered rate in its row.
        if let (Some(by_host), Some(h)) = (&by_host, point.extra.hosts.as_mut()) {
            for r in &mut h.per_host {
                r.offered_rate = by_host
                    .get(&r.host)
                    .and_then(|r| r.job.open_loop)
                    .map(|o| o.rate_iops);
            }
            point.job = Some(job.clone());
            point.params = crate::runner::point::params_of(job);
        }
        Ok(point)
    }

    fn halted(&self) -> Option<String> {
        self.halted.clone()
    }

    fn select_setup(&mut self, setup: usize) {
        if let Some(t) = self.setups.get(setup) {
            self.target = t.clone();
        }
    }
}
