//! The typed sections of a run (`Results.extra` in the file): what a verb
//! records about the run as a whole (`run`'s plan, a media run's targets
//! and overhead, the hosts, the fio job file, a purge, `remote`'s topology
//! and breakdown). Keys this version does not type (or does not know:
//! older and newer files) stay in `other` as read, and a section becomes
//! its type only if the type writes it back exactly (`ext::take`), so on
//! disk it is the same sorted JSON object as before the model was typed.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub mod db;
pub mod media;
pub mod remote;

pub use db::{CgroupRecord, LoadInfo, PassCgroup, PassLoad, ServerInfo, SkippedPoint};
pub use media::{LegacyMediaRow, MediaConfig, MediaOverhead, MediaRecord, MediaTarget};
pub use remote::{RemoteRecord, RemoteTransport, StampBreakdown};

/// Everything a verb adds to the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(into = "BTreeMap<String, Value>", from = "BTreeMap<String, Value>")]
pub struct RunExt {
    /// `iolab run`: the profile, the budget and each step.
    pub run: Option<RunRecord>,
    /// Several targets or configurations side by side.
    pub media: Option<MediaRecord>,
    /// The hosts a run was measured on (`--hosts`).
    pub hosts: Option<HostsRecord>,
    /// `device --fio-job`: the job file as read.
    pub fio_job: Option<FioJobFile>,
    /// Why the page cache could not be dropped before a job (`--purge`).
    pub purge: Option<String>,
    /// `iolab remote` (and `run`'s remote step): the topology, the
    /// transports, the unloaded breakdown, the database run's plan.
    pub remote: Option<Box<RemoteRecord>>,
    /// The database server kv or oltp ran on.
    pub server: Option<ServerInfo>,
    /// What oltp's load did.
    pub oltp_load: Option<Box<LoadInfo>>,
    /// An oltp media run: each pass's load.
    pub oltp_loads: Option<Vec<PassLoad>>,
    /// The memory cgroup a kv run held itself in (`--memory-limit`).
    pub memory_cgroup: Option<CgroupRecord>,
    /// Its peak memory use, bytes.
    pub memory_cgroup_peak_bytes: Option<u64>,
    /// A kv media run: each pass's cgroup.
    pub memory_cgroups: Option<Vec<PassCgroup>>,
    /// Points a sweep did not measure, and why.
    pub skipped_points: Option<Vec<SkippedPoint>>,
    /// Why an on-node/off-node difference measured here cannot be a real
    /// NUMA penalty (`--sweep placement`, `--numa-node`, `--mem-node` on a
    /// guest or emulated nodes).
    pub numa_emulated: Option<String>,
    /// Keys not typed here (older or newer files, other verbs' sections),
    /// kept as read.
    pub other: BTreeMap<String, Value>,
}

impl RunExt {
    pub fn is_empty(&self) -> bool {
        *self == RunExt::default()
    }

    /// The remote section: typed, or read leniently from a file whose
    /// section this version would not write back the same (older shapes).
    pub fn remote(&self) -> Option<Cow<'_, RemoteRecord>> {
        typed_or_read(self.remote.as_deref(), &self.other, "remote")
    }

    /// oltp's load, typed or read leniently (see `remote`).
    pub fn oltp_load(&self) -> Option<Cow<'_, LoadInfo>> {
        typed_or_read(self.oltp_load.as_deref(), &self.other, "oltp_load")
    }

    /// The media section, typed or read leniently (see `remote`).
    pub fn media(&self) -> Option<Cow<'_, MediaRecord>> {
        typed_or_read(self.media.as_ref(), &self.other, "media")
    }

    /// The section `key` as JSON (typed or kept as read), for readers of
    /// sections this version does not type.
    pub fn json(&self, key: &str) -> Option<Value> {
        BTreeMap::<String, Value>::from(self.clone()).remove(key)
    }
}

/// The typed section, or section `key` of `other` read leniently.
fn typed_or_read<'a, T: Clone + serde::de::DeserializeOwned>(
    typed: Option<&'a T>,
    other: &BTreeMap<String, Value>,
    key: &str,
) -> Option<Cow<'a, T>> {
    match typed {
        Some(t) => Some(Cow::Borrowed(t)),
        None => serde_json::from_value(other.get(key)?.clone())
            .ok()
            .map(Cow::Owned),
    }
}

impl From<RunExt> for BTreeMap<String, Value> {
    fn from(e: RunExt) -> Self {
        let mut m = e.other;
        let mut put = |k: &str, v: Option<Value>| {
            if let Some(v) = v {
                m.insert(k.to_string(), v);
            }
        };
        let json = |v: &dyn super::ext::Ser| v.to_json();
        put("run", e.run.as_ref().map(|v| json(v)));
        put("media", e.media.as_ref().map(|v| json(v)));
        put("hosts", e.hosts.as_ref().map(|v| json(v)));
        put("fio_job", e.fio_job.as_ref().map(|v| json(v)));
        put("purge", e.purge.map(Value::String));
        put("remote", e.remote.as_ref().map(|v| json(v)));
        put("server", e.server.as_ref().map(|v| json(v)));
        put("oltp_load", e.oltp_load.as_ref().map(|v| json(v)));
        put("oltp_loads", e.oltp_loads.as_ref().map(|v| json(v)));
        put("memory_cgroup", e.memory_cgroup.as_ref().map(|v| json(v)));
        put(
            "memory_cgroup_peak_bytes",
            e.memory_cgroup_peak_bytes.map(Value::from),
        );
        put("memory_cgroups", e.memory_cgroups.as_ref().map(|v| json(v)));
        put("skipped_points", e.skipped_points.as_ref().map(|v| json(v)));
        put("numa_emulated", e.numa_emulated.map(Value::String));
        m
    }
}

impl From<BTreeMap<String, Value>> for RunExt {
    fn from(mut m: BTreeMap<String, Value>) -> Self {
        use super::ext::take;
        RunExt {
            run: take(&mut m, "run"),
            media: take(&mut m, "media"),
            hosts: take(&mut m, "hosts"),
            fio_job: take(&mut m, "fio_job"),
            purge: take(&mut m, "purge"),
            remote: take(&mut m, "remote"),
            server: take(&mut m, "server"),
            oltp_load: take(&mut m, "oltp_load"),
            oltp_loads: take(&mut m, "oltp_loads"),
            memory_cgroup: take(&mut m, "memory_cgroup"),
            memory_cgroup_peak_bytes: take(&mut m, "memory_cgroup_peak_bytes"),
            memory_cgroups: take(&mut m, "memory_cgroups"),
            skipped_points: take(&mut m, "skipped_points"),
            numa_emulated: take(&mut m, "numa_emulated"),
            other: m,
        }
    }
}

/// `iolab run`'s plan: which steps ran or were skipped, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub profile: String,
    pub budget_s: f64,
    pub steps: Vec<RunStepRecord>,
}

/// One step of `iolab run`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStepRecord {
    pub id: String,
    pub title: String,
    /// The names of its jobs.
    pub jobs: Vec<String>,
    /// Why it did not run (not available here, dropped for time).
    pub skipped: Option<String>,
}

/// The hosts of a `--hosts` run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostsRecord {
    pub hosts: Vec<HostRecord>,
    /// Where the agents ran the jobs (device and run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Value>,
    /// Host groups (`--hosts @FILE.toml`): each group's name, hosts and
    /// what it changes in the command line's job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<Value>,
}

/// One host: as named on the command line, its host name, the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostRecord {
    pub host: String,
    pub hostname: String,
    pub agent_pid: u32,
    /// The agent's build (device and run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<String>,
}

/// `device --fio-job FILE`: its path and text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FioJobFile {
    pub path: String,
    pub text: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every fixture's run sections load into their types and write back
    /// byte for byte; none of the typed keys is left in `other`.
    #[test]
    fn fixture_sections_are_typed_and_written_back_as_read() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report");
        for f in std::fs::read_dir(&dir).unwrap() {
            let path = f.unwrap().path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let Some(extra) = v.get("extra") else {
                continue;
            };
            let m: BTreeMap<String, Value> = serde_json::from_value(extra.clone()).unwrap();
            let e = RunExt::from(m.clone());
            for k in [
                "run",
                "media",
                "hosts",
                "fio_job",
                "purge",
                "remote",
                "server",
                "oltp_load",
                "oltp_loads",
                "memory_cgroup",
                "memory_cgroup_peak_bytes",
                "memory_cgroups",
                "skipped_points",
            ] {
                assert!(
                    !e.other.contains_key(k),
                    "{}: {k} left untyped",
                    path.display()
                );
            }
            assert_eq!(BTreeMap::from(e), m, "{}", path.display());
        }
    }
}
