//! The exact merge of one pass's per-host points (`results::merge`: HDR
//! histograms added bucket by bucket, never percentiles averaged; rates
//! summed: every host measured the same window, shifted by the start skew,
//! which is recorded), with one row per host kept beside the aggregate.

use serde::{Deserialize, Serialize};

pub use crate::results::ext::{ClockOffset, HostRow, HostsInfo, LostHost};
use crate::results::merge::{merge_points, CpuOf};
use crate::results::Point;

/// A pass over several hosts: the aggregate beside the hosts' rows.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FleetPass {
    pub aggregate: Point,
    pub per_host: Vec<HostRow>,
    /// Latest minus earliest release of any host, control clock.
    pub start_skew_ns: u64,
    /// The largest clock uncertainty among the hosts (the skew is known to within it, twice).
    pub clock_uncertainty_ns: u64,
    /// Hosts lost during the pass: when any, the pass is partial and the
    /// figures are the other hosts'.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost: Vec<LostHost>,
    /// One row per host group (`group_rows`), none without groups.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<HostRow>,
    /// The common start instant, control clock (for windows on other clocks).
    #[serde(skip)]
    pub start_ns: u64,
}

impl FleetPass {
    pub fn is_partial(&self) -> bool {
        !self.lost.is_empty()
    }

    /// The hosts' measured interval on the control side's clock: from the
    /// earliest release plus the ramp to the latest host's end.
    pub fn measured_window(&self, ramp_ns: u64) -> (u64, u64) {
        let at = |off: i64| (self.start_ns as i64 + off).max(0) as u64 + ramp_ns;
        let from = self.per_host.iter().map(|h| at(h.start_offset_ns)).min();
        let to = self
            .per_host
            .iter()
            .map(|h| at(h.start_offset_ns) + h.duration_ns)
            .max();
        (from.unwrap_or(self.start_ns), to.unwrap_or(self.start_ns))
    }

    /// The pass as one point: the aggregate, with the hosts' rows, the
    /// start skew and the lost hosts in `extra.hosts`.
    pub fn into_point(self) -> Point {
        let mut p = self.aggregate;
        if !self.lost.is_empty() {
            p.extra.interrupted = Some(true);
        }
        p.extra.hosts = Some(Box::new(HostsInfo {
            per_host: self.per_host,
            start_skew_ns: self.start_skew_ns,
            clock_uncertainty_ns: self.clock_uncertainty_ns,
            lost: self.lost,
            rate_per_host: None,
            target_host: None,
            groups: self.groups,
        }));
        p
    }
}

/// What one host returned, ready to merge.
pub struct HostPoint {
    pub host: String,
    pub point: Point,
    pub clock: ClockOffset,
    pub start_offset_ns: i64,
}

/// The row of one part (a host, or an instance: `kv::instances`).
pub fn row(h: &HostPoint) -> HostRow {
    HostRow::of(&h.host, &h.point, h.clock, h.start_offset_ns)
}

/// The instances' rows of every host (`kv --instances` on each), named
/// `HOST/inst-K`, released relative to the common start; `None` without.
pub fn instance_rows(hosts: &[HostPoint]) -> Option<Box<HostsInfo>> {
    let mut rows = Vec::new();
    for h in hosts {
        for r in h.point.extra.instances.iter().flat_map(|i| &i.per_host) {
            let mut r = r.clone();
            r.host = format!("{}/{}", h.host, r.host);
            r.clock = h.clock;
            r.start_offset_ns += h.start_offset_ns;
            rows.push(r);
        }
    }
    let starts = rows.iter().map(|r| r.start_offset_ns);
    let skew = starts.clone().max()? - starts.min()?;
    Some(Box::new(HostsInfo {
        per_host: rows,
        start_skew_ns: skew.max(0) as u64,
        clock_uncertainty_ns: hosts
            .iter()
            .map(|h| h.clock.uncertainty_ns)
            .max()
            .unwrap_or(0),
        lost: Vec::new(),
        rate_per_host: None,
        target_host: None,
        groups: Vec::new(),
    }))
}

/// Merge the hosts' points of one pass (at least one).
pub fn merge(hosts: &[HostPoint]) -> Option<FleetPass> {
    let parts: Vec<(&str, &Point)> = hosts.iter().map(|h| (h.host.as_str(), &h.point)).collect();
    let aggregate = merge_points(&parts, "host", CpuOf::Summed)?;
    let starts = hosts.iter().map(|h| h.start_offset_ns);
    let skew = starts.clone().max().unwrap_or(0) - starts.min().unwrap_or(0);
    Some(FleetPass {
        aggregate,
        per_host: hosts.iter().map(row).collect(),
        start_skew_ns: skew.max(0) as u64,
        clock_uncertainty_ns: hosts
            .iter()
            .map(|h| h.clock.uncertainty_ns)
            .max()
            .unwrap_or(0),
        lost: Vec::new(),
        groups: Vec::new(),
        start_ns: 0,
    })
}

/// One row per host group (`group_of` names a host's group; hosts of
/// none are in no row), in the order the groups' first hosts come: the
/// group's hosts' points merged exactly as the aggregate is
/// (`merge_points`), named `group NAME`, released when its first host
/// was, its clock the least certain of its hosts'.
pub fn group_rows(hosts: &[HostPoint], group_of: &dyn Fn(&str) -> Option<String>) -> Vec<HostRow> {
    let mut names: Vec<String> = Vec::new();
    for g in hosts.iter().filter_map(|h| group_of(&h.host)) {
        if !names.contains(&g) {
            names.push(g);
        }
    }
    names
        .iter()
        .filter_map(|g| {
            let members: Vec<&HostPoint> = hosts
                .iter()
                .filter(|h| group_of(&h.host).as_ref() == Some(g))
                .collect();
            let parts: Vec<(&str, &Point)> = members
                .iter()
                .map(|h| (h.host.as_str(), &h.point))
                .collect();
            let merged = merge_points(&parts, "host", CpuOf::Summed)?;
            let clock = members
                .iter()
                .map(|h| h.clock)
                .max_by_key(|c| c.uncertainty_ns)?;
            let start = members.iter().map(|h| h.start_offset_ns).min()?;
            Some(HostRow::of(&format!("group {g}"), &merged, clock, start))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::histogram::LatencyHistogram;
    use crate::measure::rusage::CpuStats;

    fn point(lats: &[u64], secs: usize) -> Point {
        let mut h = LatencyHistogram::new();
        for l in lats {
            h.record(*l);
        }
        let n = lats.len() as u64;
        let series: Vec<serde_json::Value> = (0..secs)
            .map(|i| serde_json::json!({"t_s": i as f64, "len_s": 1.0, "iops": n as f64, "mib_s": 1.0, "mean_ns": 10.0, "p99_ns": 20}))
            .collect();
        serde_json::from_value(serde_json::json!({
            "name": "p", "params": {}, "started_at": "t", "duration_ns": 1_000_000_000u64,
            "ramp_ns": 0, "direct": true,
            "ops": {"read": {"ops": n, "bytes": n * 4096, "iops": n as f64, "mib_s": 1.5,
                             "slat": null, "clat": null, "lat": h.stats()}},
            "total": {"ops": n, "bytes": n * 4096, "iops": n as f64, "mib_s": 1.5},
            "cpu": CpuStats { usr_pct: 10.0, user_ns: 5, ..Default::default() },
            "series": series, "warnings": ["w"],
            "histograms": {"read.lat": h.encode()},
        }))
        .unwrap()
    }

    fn host(name: &str, p: Point, start: i64) -> HostPoint {
        HostPoint {
            host: name.into(),
            point: p,
            clock: ClockOffset {
                offset_ns: 0,
                uncertainty_ns: 7,
                rtt_ns: 14,
                probes: 8,
            },
            start_offset_ns: start,
        }
    }

    #[test]
    fn histograms_add_and_rates_sum() {
        let a = point(&[100, 200, 300], 2);
        let b = point(&[1_000_000; 5], 3);
        let all: Vec<u64> = [100, 200, 300].into_iter().chain([1_000_000; 5]).collect();
        let pass = merge(&[host("a", a, -50), host("b", b, 150)]).unwrap();
        let agg = &pass.aggregate;
        let merged = LatencyHistogram::decode(&agg.histograms["read.lat"]).unwrap();
        assert_eq!(merged.len(), 8);
        let lat = agg.ops["read"].lat.as_ref().unwrap();
        // The merged p50 is a sample of host b's, not an average of the two p50s.
        let mut direct = LatencyHistogram::new();
        all.iter().for_each(|v| direct.record(*v));
        assert_eq!(
            lat.percentile(50.0),
            direct.stats().unwrap().percentile(50.0)
        );
        assert_eq!(agg.total.ops, 8);
        assert_eq!(agg.total.iops, 8.0);
        assert_eq!(agg.total.mib_s, 3.0);
        assert_eq!(agg.cpu.usr_pct, 20.0);
        assert_eq!(agg.series.len(), 3);
        assert_eq!(agg.series[0].iops, 8.0);
        assert_eq!(agg.series[2].iops, 5.0);
        assert_eq!(pass.start_skew_ns, 200);
        assert_eq!(pass.clock_uncertainty_ns, 7);
        assert_eq!(pass.per_host[1].ops, 5);
        assert_eq!(agg.warnings, vec!["host a: w", "host b: w"]);
    }

    #[test]
    fn the_measured_window_spans_every_host_after_the_ramp() {
        let mut pass = merge(&[
            host("a", point(&[1], 1), -50),
            host("b", point(&[1], 1), 150),
        ])
        .unwrap();
        pass.start_ns = 1_000_000;
        let (from, to) = pass.measured_window(10_000);
        assert_eq!(from, 1_000_000 - 50 + 10_000);
        assert_eq!(to, 1_000_000 + 150 + 10_000 + 1_000_000_000);
    }

    /// Host groups: a group's row is its hosts' points merged exactly
    /// (ops summed, histograms added), beside the aggregate of all.
    #[test]
    fn a_group_row_merges_its_hosts_exactly() {
        let hosts = [
            host("a", point(&[100, 200], 1), 0),
            host("b", point(&[300, 400, 500], 1), 20),
            host("c", point(&[1_000_000], 1), 10),
        ];
        let group_of = |h: &str| Some(if h == "c" { "writers" } else { "readers" }.to_string());
        let rows = group_rows(&hosts, &group_of);
        assert_eq!(
            rows.iter().map(|r| r.host.as_str()).collect::<Vec<_>>(),
            ["group readers", "group writers"]
        );
        assert_eq!((rows[0].ops, rows[1].ops), (5, 1));
        let h = LatencyHistogram::decode(&rows[0].histograms["read.lat"]).unwrap();
        assert_eq!(h.len(), 5);
        assert_eq!(rows[0].start_offset_ns, 0);
        assert_eq!(rows[0].per_op["read"].ops, 5);
        let all = merge(&hosts).unwrap();
        assert_eq!(
            all.aggregate.total.ops,
            rows.iter().map(|r| r.ops).sum::<u64>()
        );
        assert!(group_rows(&hosts, &|_| None).is_empty());
    }

    #[test]
    fn nothing_to_merge() {
        assert!(merge(&[]).is_none());
    }

    /// The control side's cost of N hosts' points, on paper and measured:
    /// one real point (a 4 s random 70/30 read/write job on the null
    /// engine, its histograms and per-second series) as every host's,
    /// merged; the merge's CPU per host and the sizes of a host's row.
    /// `IOLAB_MERGE_HOSTS=1000 cargo test --lib -- --ignored --nocapture
    /// measure_the_merge_of_many_hosts` (docs/fleet.md, "Scale").
    #[test]
    #[ignore]
    fn measure_the_merge_of_many_hosts() {
        let n: usize = std::env::var("IOLAB_MERGE_HOSTS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1000);
        let job = crate::plan::job::JobSpec {
            engine: crate::plan::engines::EngineKind::parse("null").unwrap(),
            pattern: crate::plan::job::Pattern::RandRw,
            mix: 70,
            qd: 4,
            stop: crate::plan::job::StopCondition {
                runtime_ns: Some(4_000_000_000),
                io_count: None,
                io_bytes: None,
            },
            ..Default::default()
        };
        let target = crate::dut::Target::none(1 << 30);
        let p = crate::runner::job::run_job(&job, &target, &Default::default())
            .unwrap()
            .point;
        let hosts: Vec<HostPoint> = (0..n)
            .map(|i| host(&format!("host-{i:04}"), p.clone(), i as i64))
            .collect();
        let thread_cpu_ns = || {
            // SAFETY: clock_gettime fills a local timespec.
            let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
            ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
        };
        let cpu0 = thread_cpu_ns();
        let t0 = std::time::Instant::now();
        let pass = merge(&hosts).unwrap();
        let wall = t0.elapsed();
        let cpu = thread_cpu_ns() - cpu0;
        let row = serde_json::to_vec(&pass.per_host[0]).unwrap().len();
        let hist: usize = pass.per_host[0].histograms.values().map(|h| h.len()).sum();
        let series = serde_json::to_vec(&pass.per_host[0].series).unwrap().len();
        let point = serde_json::to_vec(&pass.into_point()).unwrap().len();
        println!(
            "{n} hosts: merge {:.1} ms wall, {:.1} ms CPU ({:.1} us per host); a host's row {row} B \
             (histograms {hist} B over {} kinds, series {series} B over {} s); the point with every row {point} B",
            wall.as_secs_f64() * 1e3,
            cpu as f64 / 1e6,
            cpu as f64 / 1e3 / n as f64,
            p.histograms.len(),
            p.series.len(),
        );
    }
}
