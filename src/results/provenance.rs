//! Provenance: everything needed to know where and how numbers were made
//! (tool version, command line, machine, kernel, target, device settings,
//! engine features, timer cost). Collected once per run.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::measure::numa::NumaInfo;
use crate::measure::overhead::TimerCost;
use crate::results::target::FeatureProbe;
use crate::results::target::TargetInfo;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Provenance {
    pub iolab_version: String,
    pub git_revision: String,
    pub command_line: Vec<String>,
    pub started_at: String,
    pub hostname: String,
    pub kernel: String,
    pub os: String,
    pub cpu_model: String,
    pub cpu_count: usize,
    pub memory_bytes: u64,
    pub load_average: [f64; 3],
    pub clocksource: String,
    pub timer: TimerCost,
    pub seed: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<TargetInfo>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub engine_features: Vec<FeatureProbe>,
    /// The expanded plan as run (verb-specific JSON).
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub plan: serde_json::Value,
    /// Versions of external engines and tools used (rocksdb, sqlite, fio ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, String>,
    /// NUMA nodes, the target device's node, hardware queues and IRQs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa: Option<NumaInfo>,
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn field_of(text: &str, key: &str) -> Option<String> {
    text.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_once(':').or_else(|| l.split_once('=')))
        .map(|(_, v)| v.trim().trim_matches('"').to_string())
}

/// Total memory in bytes from /proc/meminfo.
pub fn memory_bytes() -> u64 {
    field_of(&read("/proc/meminfo"), "MemTotal")
        .and_then(|v| {
            v.split_whitespace()
                .next()
                .and_then(|n| n.parse::<u64>().ok())
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

pub fn load_average() -> [f64; 3] {
    let t = read("/proc/loadavg");
    let mut it = t.split_whitespace().map(|v| v.parse().unwrap_or(0.0));
    [
        it.next().unwrap_or(0.0),
        it.next().unwrap_or(0.0),
        it.next().unwrap_or(0.0),
    ]
}

impl Provenance {
    /// Provenance with only the tool identity (tests, conversions).
    pub fn minimal() -> Provenance {
        Provenance {
            iolab_version: env!("CARGO_PKG_VERSION").into(),
            git_revision: env!("IOLAB_GIT_REV").into(),
            started_at: super::time::now_rfc3339(),
            ..Default::default()
        }
    }

    /// A warning when the machine was busy at start (load average above
    /// half the CPUs): numbers may be noisy.
    pub fn busy_warning(&self) -> Option<String> {
        (self.load_average[0] > 0.5 * self.cpu_count as f64).then(|| {
            format!(
                "the machine was busy at start (load average {:.2} on {} CPUs): numbers may be noisy; rerun when idle",
                self.load_average[0], self.cpu_count
            )
        })
    }

    /// Add engine features probed by a point, once each.
    pub fn merge_features(&mut self, features: Vec<crate::results::target::FeatureProbe>) {
        for f in features {
            if !self.engine_features.contains(&f) {
                self.engine_features.push(f);
            }
        }
    }

    /// Everything about this machine; the caller adds target, plan and features.
    pub fn collect(seed: u64) -> Provenance {
        // SAFETY: zeroed utsname is a valid out-parameter.
        let mut u: libc::utsname = unsafe { std::mem::zeroed() };
        unsafe { libc::uname(&mut u) };
        let cstr = |b: &[libc::c_char]| {
            // SAFETY: uname fills NUL-terminated strings.
            unsafe { std::ffi::CStr::from_ptr(b.as_ptr()) }
                .to_string_lossy()
                .to_string()
        };
        let cpuinfo = read("/proc/cpuinfo");
        Provenance {
            command_line: std::env::args().collect(),
            hostname: cstr(&u.nodename),
            kernel: format!(
                "{} {} {}",
                cstr(&u.sysname),
                cstr(&u.release),
                cstr(&u.machine)
            ),
            os: field_of(&read("/etc/os-release"), "PRETTY_NAME").unwrap_or_default(),
            cpu_model: field_of(&cpuinfo, "model name").unwrap_or_default(),
            cpu_count: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            memory_bytes: memory_bytes(),
            load_average: load_average(),
            clocksource: read("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
            timer: crate::measure::overhead::measure(),
            seed,
            numa: crate::measure::numa::collect(std::path::Path::new("/"), None),
            ..Provenance::minimal()
        }
    }

    /// Human-readable key/value lines (for `sysinfo` and the report).
    pub fn rows(&self) -> Vec<(String, String)> {
        let mut rows = vec![
            (
                "iolab".to_string(),
                format!("{} ({})", self.iolab_version, self.git_revision),
            ),
            ("started".into(), self.started_at.clone()),
            ("host".into(), self.hostname.clone()),
            ("kernel".into(), self.kernel.clone()),
            ("os".into(), self.os.clone()),
            (
                "cpu".into(),
                format!("{} x {}", self.cpu_count, self.cpu_model),
            ),
            (
                "memory".into(),
                format!("{:.1} GiB", self.memory_bytes as f64 / (1u64 << 30) as f64),
            ),
            (
                "load average".into(),
                format!(
                    "{:.2} {:.2} {:.2}",
                    self.load_average[0], self.load_average[1], self.load_average[2]
                ),
            ),
            ("clocksource".into(), self.clocksource.clone()),
            (
                "timer cost".into(),
                format!(
                    "clock read {:.1} ns, histogram record {:.1} ns, ~{:.0} ns per I/O",
                    self.timer.clock_read_ns, self.timer.histogram_record_ns, self.timer.per_io_ns
                ),
            ),
        ];
        if !self.command_line.is_empty() {
            rows.push(("command".into(), self.command_line.join(" ")));
        }
        if let Some(t) = &self.target {
            rows.push((
                "target".into(),
                match t.size_bytes {
                    0 => format!("{} ({})", t.path, t.kind.describe()),
                    n => format!("{} ({}, {n} bytes)", t.path, t.kind.describe()),
                },
            ));
            if let Some(fs) = &t.filesystem {
                rows.push((
                    "filesystem".into(),
                    format!(
                        "{} on {} from {} ({})",
                        fs.fstype, fs.mountpoint, fs.source, fs.options
                    ),
                ));
            }
            if let Some(d) = &t.disk {
                rows.push((
                    "device".into(),
                    format!(
                        "{} (disk {}, {}) {} driver {}",
                        d.device,
                        d.disk,
                        d.devnum,
                        d.identity(),
                        d.driver.clone().unwrap_or_else(|| "?".into())
                    ),
                ));
                let opt = |v: &Option<u64>| v.map(|x| x.to_string()).unwrap_or_else(|| "?".into());
                rows.push((
                    "queue".into(),
                    format!(
                        "rotational {} lbs {} pbs {} scheduler {} nr_requests {} read_ahead_kb {} write_cache {} io_poll {}",
                        d.rotational.map(|r| r.to_string()).unwrap_or_else(|| "?".into()),
                        opt(&d.logical_block_size),
                        opt(&d.physical_block_size),
                        d.scheduler.clone().unwrap_or_else(|| "?".into()),
                        opt(&d.nr_requests),
                        opt(&d.read_ahead_kb),
                        d.write_cache.clone().unwrap_or_else(|| "?".into()),
                        d.io_poll.map(|r| r.to_string()).unwrap_or_else(|| "?".into()),
                    ),
                ));
            }
        }
        if let Some(n) = &self.numa {
            rows.extend(numa_rows(n));
        }
        for f in &self.engine_features {
            rows.push((
                format!("feature {}", f.feature),
                format!("{} {}", if f.supported { "yes" } else { "no" }, f.detail),
            ));
        }
        for (k, v) in &self.tools {
            rows.push((k.clone(), v.clone()));
        }
        rows
    }
}

/// The NUMA lines of `rows`: each node, the device's node, queues and IRQs.
fn numa_rows(n: &NumaInfo) -> Vec<(String, String)> {
    let mut rows: Vec<(String, String)> = n
        .nodes
        .iter()
        .map(|node| {
            (
                format!("numa node{}", node.node),
                format!(
                    "cpus {} memory {:.1} GiB",
                    node.cpus,
                    node.memory_bytes as f64 / (1u64 << 30) as f64
                ),
            )
        })
        .collect();
    if let Some(d) = &n.device {
        let queues: Vec<String> = d
            .queues
            .iter()
            .map(|q| format!("{}:[{}]", q.queue, q.cpus))
            .collect();
        let irqs: Vec<String> = d
            .irqs
            .iter()
            .map(|i| {
                format!(
                    "{} {} -> {} (effective {})",
                    i.irq,
                    i.name,
                    i.affinity,
                    i.effective.as_deref().unwrap_or("?")
                )
            })
            .collect();
        rows.push((
            "numa device".into(),
            format!(
                "{} on node {} queues {} irqs {}",
                d.disk,
                d.node,
                queues.join(" "),
                irqs.join(", ")
            ),
        ));
    }
    if let Some(e) = &n.emulated {
        rows.push(("numa note".into(), e.clone()));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collects_this_machine() {
        let p = Provenance::collect(7);
        assert!(p.cpu_count >= 1);
        assert!(p.memory_bytes > 0);
        assert!(p.kernel.starts_with("Linux"));
        assert_eq!(p.seed, 7);
        assert!(p.rows().iter().any(|(k, _)| k == "kernel"));
    }

    /// A file without `numa` writes back without it; one with it keeps it.
    #[test]
    fn the_numa_section_is_optional_and_round_trips() {
        let old = Provenance::minimal();
        let v = serde_json::to_value(&old).unwrap();
        assert!(v.get("numa").is_none());
        let t = tempfile::tempdir().unwrap();
        let node = t.path().join("sys/devices/system/node/node0");
        std::fs::create_dir_all(&node).unwrap();
        std::fs::write(node.join("cpulist"), "0-1\n").unwrap();
        let p = Provenance {
            numa: crate::measure::numa::collect(t.path(), None),
            ..old
        };
        let text = serde_json::to_string(&p).unwrap();
        assert!(text.contains(r#""cpus":"0-1""#), "{text}");
        let back: Provenance = serde_json::from_str(&text).unwrap();
        assert_eq!(back, p);
        assert!(back
            .rows()
            .iter()
            .any(|(k, v)| k == "numa node0" && v.contains("0-1")));
    }
}
