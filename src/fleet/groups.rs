//! Host groups (`--hosts @FILE.toml`, read by `groups_file`): named sets
//! of hosts, each running the command line's job with its own overrides
//! (rw, bs, iodepth, numjobs, rate, size, target): the job and target
//! each host of a group runs, and each group's job checked as the
//! command line's. A plain host list is one unnamed group without
//! overrides.

use serde::{Deserialize, Deserializer, Serialize};

use super::hosts::HostSpec;
use super::proto::JobTarget;
use crate::error::usage;
use crate::plan::engines::{engine_for_transport, EngineKind, Opens};
use crate::plan::job::{JobSpec, OpenLoop, Pattern};
use crate::plan::units::{BsAxis, Count, Size};

/// What a group changes in the command line's job and target; what it
/// leaves out is as given there. Values are the project's typed values,
/// written as text.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupJob {
    #[serde(
        default,
        deserialize_with = "pattern_text",
        skip_serializing_if = "Option::is_none"
    )]
    pub rw: Option<Pattern>,
    /// One block size or one weighted split (`4k`, `4k:70,64k:30`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bs: Option<BsAxis>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iodepth: Option<Count>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numjobs: Option<Count>,
    /// The group's whole open-loop rate (IOPS), shared evenly over its hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Count>,
    /// The scratch file's size on each host of the group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<Size>,
    /// A directory on each host of the group (absolute), or a remote export.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

fn pattern_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Pattern>, D::Error> {
    let text = String::deserialize(d)?;
    crate::plan::sweep::parse_rw_axis("", &text)
        .ok()
        .filter(|p| p.len() == 1)
        .map(|p| Some(p[0]))
        .ok_or_else(|| {
            serde::de::Error::custom(format!(
                "'{text}' is not one pattern (read, write, randread, randwrite, readwrite, randrw)"
            ))
        })
}

/// The group key that sets the job's `flag`, if one does.
fn group_key(flag: &str) -> Option<&'static str> {
    Some(match flag {
        "--rw" => "rw",
        "--bs" => "bs",
        "--qd" => "iodepth",
        "--jobs" => "numjobs",
        "--rate" => "rate",
        _ => return None,
    })
}

/// Hosts that run one job: a group of the file, or every host of a list.
#[derive(Debug, Clone, PartialEq)]
pub struct HostGroup {
    /// `None`: the one group of a plain list.
    pub name: Option<String>,
    pub hosts: Vec<HostSpec>,
    pub job: GroupJob,
}

/// The hosts of a run, in groups (a plain list: one unnamed group).
#[derive(Debug, Clone, PartialEq)]
pub struct HostGroups {
    pub groups: Vec<HostGroup>,
    /// The groups file, for errors (`None`: a plain list).
    pub file: Option<String>,
}

impl HostGroups {
    /// Every host, group after group.
    pub fn hosts(&self) -> Vec<HostSpec> {
        self.groups.iter().flat_map(|g| g.hosts.clone()).collect()
    }

    /// A plain list, or a file of one group that changes nothing: every
    /// host runs the command line's job, and no group row is kept.
    pub fn is_plain(&self) -> bool {
        self.groups.len() == 1 && self.groups[0].job == GroupJob::default()
    }

    /// The groups for the results' provenance: each one's name, hosts and
    /// overrides (as text).
    pub fn record(&self) -> serde_json::Value {
        self.groups
            .iter()
            .map(|g| {
                serde_json::json!({
                    "name": g.name,
                    "hosts": g.hosts.iter().map(ToString::to_string).collect::<Vec<_>>(),
                    "job": g.job,
                })
            })
            .collect()
    }

    /// One line per group for a dry run: its name, hosts and overrides.
    pub fn summary(&self) -> Vec<String> {
        self.groups
            .iter()
            .map(|g| {
                let hosts: Vec<String> = g.hosts.iter().map(ToString::to_string).collect();
                let changes = match serde_json::to_value(&g.job) {
                    Ok(serde_json::Value::Object(m)) => m
                        .iter()
                        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                        .collect::<Vec<_>>()
                        .join(" "),
                    _ => String::new(),
                };
                format!(
                    "group {}: {} {}",
                    g.name.as_deref().unwrap_or("-"),
                    hosts.join(","),
                    if changes.is_empty() {
                        "(the command line's job)".to_string()
                    } else {
                        changes
                    }
                )
            })
            .collect()
    }

    /// Every job of the run as each group changes it is valid: an error
    /// names the file, the group and its key (`iodepth` for the job's
    /// `--qd` ...), or the flag the group left as given.
    pub fn check_jobs<'a>(
        &self,
        jobs: impl Iterator<Item = &'a JobSpec> + Clone,
    ) -> anyhow::Result<()> {
        if self.is_plain() {
            return Ok(());
        }
        let all = self.hosts().len();
        for g in &self.groups {
            let place = format!(
                "{}: group {}",
                self.file.as_deref().unwrap_or("--hosts"),
                g.name.as_deref().unwrap_or("-")
            );
            for j in jobs.clone() {
                if let Err(e) = g.job.apply(j, g.hosts.len(), all).validate() {
                    return Err(match e.downcast::<crate::error::UsageError>() {
                        Ok(u) => {
                            let key = group_key(&u.field).unwrap_or(&u.field);
                            usage(format!("{place}.{key}"), u.message)
                        }
                        Err(other) => other,
                    });
                }
            }
        }
        Ok(())
    }

    /// Several hosts use one remote export (the command line's target
    /// `base`, or a group's): they would overwrite each other's blocks.
    pub fn share_an_export(&self, base: Option<&str>) -> bool {
        let mut users: std::collections::HashMap<&str, usize> = Default::default();
        for g in &self.groups {
            let Some(t) = g.job.target.as_deref().or(base) else {
                continue;
            };
            let export = crate::plan::endpoint::endpoint_of(std::path::Path::new(t));
            if export.is_ok_and(|e| e.is_some()) {
                *users.entry(t).or_default() += g.hosts.len();
            }
        }
        users.values().any(|n| *n > 1)
    }

    /// Each host's group, by the host's name (as `HostSpec` displays it):
    /// the index of its group in `groups`.
    pub fn index(&self) -> std::collections::HashMap<String, usize> {
        self.groups
            .iter()
            .enumerate()
            .flat_map(|(i, g)| g.hosts.iter().map(move |h| (h.to_string(), i)))
            .collect()
    }

    /// The group of the host named `host` (as `HostSpec` displays it).
    pub fn group_of(&self, host: &str) -> Option<&HostGroup> {
        self.groups
            .iter()
            .find(|g| g.hosts.iter().any(|h| h.to_string() == host))
    }
}

impl GroupJob {
    /// The job a host of a group of `group_hosts` runs, out of
    /// `all_hosts`: the overrides applied; the group's rate shared over
    /// its hosts, else the job's rate over every host (`host_share`).
    pub fn apply(&self, job: &JobSpec, group_hosts: usize, all_hosts: usize) -> JobSpec {
        let mut j = super::placement::host_share(job, all_hosts);
        if let Some(p) = self.rw {
            j.pattern = p;
        }
        if let Some(s) = self.bs.as_ref().and_then(|b| b.splits().first()) {
            j.bs = s.clone();
        }
        if let Some(q) = &self.iodepth {
            j.qd = q.get().min(u32::MAX as u64) as u32;
        }
        if let Some(n) = &self.numjobs {
            j.jobs = n.get().min(u32::MAX as u64) as u32;
        }
        if let Some(t) = &self.target {
            j.engine = engine_for_target(j.engine, t);
        }
        if let Some(r) = &self.rate {
            j.open_loop = Some(OpenLoop {
                rate_iops: r.get() as f64 / group_hosts.max(1) as f64,
                arrival: job.open_loop.map(|o| o.arrival).unwrap_or_default(),
            });
        }
        j
    }

    /// The target a host of the group uses: its directory or export (when
    /// the job opens one at all) and scratch size, else `base`'s.
    pub fn target(&self, base: &JobTarget) -> JobTarget {
        JobTarget {
            dir: base
                .dir
                .as_ref()
                .map(|d| self.target.clone().unwrap_or(d.clone())),
            size: self.size.as_ref().map(Size::bytes).or(base.size),
            overwrite: base.overwrite,
            made: base.made.clone().filter(|_| self.target.is_none()),
        }
    }
}

/// The engine a job of `engine` uses on a group's `target`: the engine
/// of the export's transport on an export (as `device --target URL`
/// chooses it), a local engine on a directory when the command line's
/// target was an export; as given otherwise (and for engines that open
/// nothing).
fn engine_for_target(engine: EngineKind, target: &str) -> EngineKind {
    let export = crate::plan::endpoint::endpoint_of(std::path::Path::new(target))
        .ok()
        .flatten();
    match (engine.caps().opens, export) {
        (Opens::Nothing, _) => engine,
        (Opens::Remote(t), Some(e)) if t == e.transport => engine,
        (_, Some(e)) => engine_for_transport(e.transport).unwrap_or(engine),
        (Opens::Remote(_), None) => EngineKind::default_local(),
        (Opens::LocalFd, None) => engine,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::groups_file::parse_groups_text;
    use crate::fleet::groups_file::tests::TWO;

    #[test]
    fn the_overrides_make_each_group_s_job_and_target() {
        let g = parse_groups_text("g.toml", TWO).unwrap();
        let base = JobSpec {
            qd: 4,
            open_loop: Some(OpenLoop {
                rate_iops: 3000.0,
                arrival: crate::plan::job::Arrival::Poisson,
            }),
            ..JobSpec::default()
        };
        let readers = g.groups[0].job.apply(&base, 2, 3);
        assert_eq!((readers.pattern, readers.qd), (Pattern::RandRead, 32));
        let ol = readers.open_loop.unwrap();
        assert_eq!(ol.rate_iops, 5000.0);
        assert_eq!(ol.arrival, crate::plan::job::Arrival::Poisson);
        let writers = g.groups[1].job.apply(&base, 1, 3);
        assert_eq!(
            (writers.pattern, writers.qd, writers.jobs),
            (Pattern::RandWrite, 4, 2)
        );
        // No rate of its own: the command line's, shared over every host.
        assert_eq!(writers.open_loop.unwrap().rate_iops, 1000.0);
        let base_t = JobTarget {
            dir: Some("/var/tmp".into()),
            size: Some(1 << 20),
            ..JobTarget::default()
        };
        let t = g.groups[0].job.target(&base_t);
        assert_eq!((t.dir.as_deref(), t.size), (Some("/data"), Some(1 << 30)));
        assert_eq!(g.groups[1].job.target(&base_t), base_t);
        // A group's export is reached by its transport's engine, a
        // group's directory (after an export on the command line) by a
        // local one; an engine that opens nothing stays.
        assert_eq!(
            engine_for_target(EngineKind::Psync, "nbd://10.0.0.9:10809/"),
            EngineKind::Nbd
        );
        assert_eq!(
            engine_for_target(EngineKind::Nbd, "/data"),
            EngineKind::default_local()
        );
        assert_eq!(
            engine_for_target(EngineKind::Psync, "/data"),
            EngineKind::Psync
        );
        assert_eq!(
            engine_for_target(EngineKind::Null, "nbd://h/"),
            EngineKind::Null
        );
        let none = JobTarget {
            dir: None,
            ..base_t
        };
        assert_eq!(g.groups[0].job.target(&none).dir, None);
    }

    #[test]
    fn hosts_sharing_an_export_are_found_in_any_group() {
        let g = parse_groups_text("g.toml", TWO).unwrap();
        assert!(!g.share_an_export(Some("/var/tmp")));
        // The writers' one host on the command line's export: alone there.
        assert!(!g.share_an_export(Some("nbd://10.0.0.9/")));
        let both = TWO.replace("target = \"/data\"", "target = \"nbd://10.0.0.9/\"");
        let g = parse_groups_text("g.toml", &both).unwrap();
        assert!(g.share_an_export(None), "the readers' two hosts");
        let plain = crate::fleet::parse_host_groups("a,b", "--hosts").unwrap();
        assert!(plain.share_an_export(Some("nbd://10.0.0.9/")));
        assert!(!plain.share_an_export(Some("/data")));
    }

    #[test]
    fn a_group_s_job_is_checked_as_the_command_line_s_naming_its_key() {
        let g =
            parse_groups_text("g.toml", &TWO.replace("iodepth = 32", "iodepth = 100000")).unwrap();
        let job = JobSpec::default();
        let e = g.check_jobs([&job].into_iter()).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert!(
            format!("{e:#}").contains("g.toml: group readers.iodepth"),
            "{e:#}"
        );
        assert!(parse_groups_text("g.toml", TWO)
            .unwrap()
            .check_jobs([&job].into_iter())
            .is_ok());
    }
}
