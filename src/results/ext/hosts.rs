//! A point measured on several hosts at once (`--hosts`, the fleet): one
//! row per host beside the aggregate (its operations, rates, latency, CPU,
//! clock offset and release instant), the start skew between the hosts,
//! and the hosts lost during the point. The aggregate is the point itself.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::measure::histogram::LatStats;
use crate::measure::procstat::SystemCpu;
use crate::measure::rusage::CpuStats;
use crate::results::{OpStats, SeriesPoint};

/// agent clock = control clock + offset_ns (± uncertainty_ns).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClockOffset {
    pub offset_ns: i64,
    pub uncertainty_ns: u64,
    pub rtt_ns: u64,
    pub probes: u32,
}

/// One host's part of a pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostRow {
    pub host: String,
    pub ops: u64,
    pub bytes: u64,
    pub iops: f64,
    pub mib_s: f64,
    pub duration_ns: u64,
    /// The main op kind's latency (read if any, else write), from this host's histogram.
    pub lat_mean_ns: Option<f64>,
    pub lat_p99_ns: Option<u64>,
    /// The agent process's CPU on that host.
    pub cpu: CpuStats,
    /// The host's whole CPU during the job (usr, sys, iowait, idle, steal).
    pub system_cpu: Option<SystemCpu>,
    pub clock: ClockOffset,
    /// When this host's workers were released, relative to the common start
    /// instant, on the control side's clock (positive: late).
    pub start_offset_ns: i64,
    pub warnings: Vec<String>,
    /// Every operation type on this host: counts, rates and latencies
    /// with their full percentiles (from the same histograms the aggregate
    /// adds up); files before issue 46 have only the main type's mean and
    /// p99 above.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub per_op: BTreeMap<String, OpStats>,
    /// This host's own time series (seconds since its release, which is
    /// `start_offset_ns` from the common start).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<SeriesPoint>,
    /// This host's encoded HDR histograms ("read.lat", ...): what the
    /// aggregate's were added from.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub histograms: BTreeMap<String, String>,
    /// The host group this row's host ran in (`--hosts @FILE.toml`; none
    /// for a plain host list and for the group rows themselves).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// The open-loop rate this host offered, when host groups give hosts
    /// different rates (else `HostsInfo::rate_per_host`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_rate: Option<f64>,
}

/// A host that went away after the start (its ssh died, its agent was
/// killed, it sent nonsense or fell silent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LostHost {
    pub host: String,
    pub why: String,
}

/// The hosts' side of a point measured on several hosts (`Point.extra.hosts`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostsInfo {
    pub per_host: Vec<HostRow>,
    /// Latest minus earliest release of any host, control clock.
    pub start_skew_ns: u64,
    /// The largest clock uncertainty among the hosts (the skew is known to
    /// within twice it).
    pub clock_uncertainty_ns: u64,
    /// An open-loop point's rate each host offered: the point's rate (its
    /// whole offered load) shared evenly over the hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_per_host: Option<f64>,
    /// Hosts lost during the point: when any, the point is partial and its
    /// figures are the other hosts'.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost: Vec<LostHost>,
    /// The target host the hosts measured (`remote --hosts --target-host`):
    /// its whole CPU over the point's window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_host: Option<TargetHostCpu>,
    /// One row per host group (`--hosts @FILE.toml`), named `group NAME`:
    /// its hosts' points merged exactly, as the aggregate is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<HostRow>,
}

/// The target host's whole CPU (usr, sys, iowait, idle, steal; percent of
/// one CPU) over a point measured from several hosts, sampled by its agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetHostCpu {
    pub host: String,
    pub cpu: SystemCpu,
    /// The sampled interval around the hosts' measured window, ns.
    pub window_ns: u64,
    /// The disk under the served file over the same window (absent in
    /// files of older versions, and where the file is on no block device).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<TargetDisk>,
    /// Why there is no disk series (the file on tmpfs, no device found).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_disk: Option<String>,
}

/// The most seconds a target disk series holds (an hour; longer windows
/// are clipped by the agent and refused on receipt).
pub const MAX_DISK_SECONDS: usize = 3600;

/// The target host's disk under the served file, second by second over a
/// point's window: bytes per second read and written (`/proc/diskstats`,
/// every process on that disk). Entry i covers second i of the window; the
/// last one the remainder, as a rate over its own length.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetDisk {
    /// The kernel name of the device (partition, if any).
    pub device: String,
    pub read_bytes_s: Vec<u64>,
    pub write_bytes_s: Vec<u64>,
}

impl TargetDisk {
    /// Why `self` is not a disk series a peer may send (None: it is).
    pub fn invalid(&self) -> Option<&'static str> {
        let name_ok = !self.device.is_empty()
            && self.device.len() <= 64
            && self
                .device
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.:!".contains(c));
        if !name_ok {
            return Some("the disk's device name is empty, too long or not a kernel name");
        }
        if self.read_bytes_s.len() != self.write_bytes_s.len() {
            return Some("the disk's read and write series differ in length");
        }
        if self.read_bytes_s.len() > MAX_DISK_SECONDS {
            return Some("the disk series is longer than an hour of seconds");
        }
        // 1 PiB/s is no disk: a garbled counter.
        let absurd = |v: &u64| *v > 1 << 50;
        if self
            .read_bytes_s
            .iter()
            .chain(&self.write_bytes_s)
            .any(absurd)
        {
            return Some("a disk rate over 1 PiB/s");
        }
        None
    }
}

impl HostRow {
    /// The row of one part measured at once with others (a host of a
    /// fleet, or an instance of `kv --instances`): `point` as measured
    /// there, its clock offset and its release relative to the first.
    pub fn of(
        host: &str,
        point: &crate::results::Point,
        clock: ClockOffset,
        start_offset_ns: i64,
    ) -> HostRow {
        let lat = point.main_lat();
        HostRow {
            host: host.to_string(),
            ops: point.total.ops,
            bytes: point.total.bytes,
            iops: point.total.iops,
            mib_s: point.total.mib_s,
            duration_ns: point.duration_ns,
            lat_mean_ns: lat.map(|l| l.mean_ns),
            lat_p99_ns: lat.and_then(|l| l.percentile(99.0)),
            cpu: point.cpu,
            system_cpu: point.extra.cpu,
            clock,
            start_offset_ns,
            warnings: point.warnings.clone(),
            per_op: point.ops.clone(),
            series: point.series.clone(),
            histograms: point.histograms.clone(),
            group: None,
            offered_rate: None,
        }
    }

    /// The row's name in the views: the host, with its group when it ran
    /// in one (`h0 [readers]`).
    pub fn label(&self) -> String {
        match &self.group {
            Some(g) => format!("{} [{g}]", self.host),
            None => self.host.clone(),
        }
    }

    /// This host's part of `aggregate` as a point of its own: its
    /// operations, totals, CPU, series and histograms under the
    /// aggregate's name and parameters (so every view reads its figures as
    /// it reads any point's). Rows of files before issue 46 have no
    /// operations of their own: only the totals and CPU.
    pub fn as_point(&self, aggregate: &crate::results::Point) -> crate::results::Point {
        let mut p = aggregate.clone();
        p.ops = self.per_op.clone();
        p.total = crate::results::Totals {
            ops: self.ops,
            bytes: self.bytes,
            iops: self.iops,
            mib_s: self.mib_s,
        };
        p.duration_ns = self.duration_ns;
        p.cpu = self.cpu;
        p.series = self.series.clone();
        p.histograms = self.histograms.clone();
        p.warnings = self.warnings.clone();
        p.extra.hosts = None;
        p.extra.instances = None;
        p.extra.cpu = self.system_cpu;
        p
    }

    /// The operation types with a latency, the main one first (`main`),
    /// each with its latency; the older files' single main-type row when
    /// the row has no `per_op`.
    pub fn latencies(&self, main: Option<&str>) -> Vec<(String, RowLatency)> {
        let ops = op_latencies(&self.per_op, main);
        if !ops.is_empty() {
            return ops;
        }
        let older = RowLatency {
            mean_ns: self.lat_mean_ns,
            p99_ns: self.lat_p99_ns,
            ..RowLatency::NONE
        };
        vec![(main.unwrap_or("-").to_string(), older)]
    }
}

/// The operation types of `ops` with a latency, the main one first
/// (`main`), each with its row's latency figures; a host's row and the
/// aggregate's (`Point::ops`) read them alike.
pub fn op_latencies(
    ops: &BTreeMap<String, OpStats>,
    main: Option<&str>,
) -> Vec<(String, RowLatency)> {
    let mut with_lat: Vec<(&String, &LatStats)> = ops
        .iter()
        .filter_map(|(k, o)| Some((k, o.lat.as_ref()?)))
        .collect();
    with_lat.sort_by_key(|(k, _)| (Some(k.as_str()) != main, k.as_str()));
    with_lat
        .into_iter()
        .map(|(k, l)| (k.clone(), RowLatency::of(l)))
        .collect()
}

/// The latency figures a per-host row shows (absent: not recorded).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowLatency {
    pub mean_ns: Option<f64>,
    pub p50_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    pub p999_ns: Option<u64>,
}

impl RowLatency {
    /// Nothing recorded.
    pub const NONE: RowLatency = RowLatency {
        mean_ns: None,
        p50_ns: None,
        p99_ns: None,
        p999_ns: None,
    };

    pub fn of(l: &LatStats) -> RowLatency {
        RowLatency {
            mean_ns: Some(l.mean_ns),
            p50_ns: l.percentile(50.0),
            p99_ns: l.percentile(99.0),
            p999_ns: l.percentile(99.9),
        }
    }
}

impl HostsInfo {
    pub fn is_partial(&self) -> bool {
        !self.lost.is_empty()
    }
}

/// Tests of the views: `p` as if measured on `hosts`, each host's row
/// the point itself, released 1 ms apart.
#[cfg(test)]
pub(crate) fn on_hosts(p: &mut crate::results::Point, hosts: &[&str]) {
    let clock = ClockOffset {
        offset_ns: 0,
        uncertainty_ns: 0,
        rtt_ns: 0,
        probes: 0,
    };
    let per_host = hosts
        .iter()
        .enumerate()
        .map(|(i, h)| HostRow::of(h, p, clock, i as i64 * 1_000_000))
        .collect();
    p.extra.hosts = Some(Box::new(HostsInfo {
        per_host,
        start_skew_ns: (hosts.len().max(1) as u64 - 1) * 1_000_000,
        clock_uncertainty_ns: 0,
        lost: Vec::new(),
        rate_per_host: None,
        target_host: None,
        groups: Vec::new(),
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 46: a host's row keeps every operation type with its full
    /// percentiles, its series and histograms, and reads back as written;
    /// as a point of its own it has the host's figures.
    #[test]
    fn a_host_row_keeps_every_operation_its_series_and_histograms() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/report/kv-ycsb-rocksdb.json");
        let r = crate::results::Results::read(&path).unwrap();
        let mut p = r
            .points
            .iter()
            .find(|p| p.name == "ycsb-a.run")
            .unwrap()
            .clone();
        on_hosts(&mut p, &["h1", "h2"]);
        let row = &p.extra.hosts.as_ref().unwrap().per_host[1];
        assert_eq!(row.per_op.keys().collect::<Vec<_>>(), ["read", "update"]);
        assert!(row.per_op["update"]
            .lat
            .as_ref()
            .unwrap()
            .percentile(99.99)
            .is_some());
        assert_eq!(row.series, p.series);
        assert_eq!(row.histograms, p.histograms);
        let json = serde_json::to_string(row).unwrap();
        assert_eq!(&serde_json::from_str::<HostRow>(&json).unwrap(), row);
        let own = row.as_point(&p);
        assert_eq!((own.total.ops, own.ops.len()), (row.ops, 2));
        assert!(own.extra.hosts.is_none());
        let lat = row.latencies(Some("read"));
        assert_eq!(
            lat.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            ["read", "update"]
        );
    }

    #[test]
    fn a_target_host_without_a_disk_series_loads_and_writes_as_before() {
        let old = r#"{"host":"t","cpu":{"usr_pct":1.0,"sys_pct":2.0,"iowait_pct":0.0,"idle_pct":97.0,"steal_pct":0.0},"window_ns":5}"#;
        let t: TargetHostCpu = serde_json::from_str(old).unwrap();
        assert!(t.disk.is_none() && t.no_disk.is_none());
        assert_eq!(serde_json::to_string(&t).unwrap(), old);
    }
}
