//! Intel's NoSQL table from a kv point: throughput, the share of reads and
//! of writes at or under a latency (counted in the point's HDR histograms,
//! to their 0.1% precision), the standard deviation of each (from the same
//! histograms), the device's MiB/s, average queue size and latency
//! (/proc/diskstats over the phase) and the machine's CPU busy (/proc/stat
//! over the phase). What the point lacks stays `None`.

use crate::measure::histogram::LatencyHistogram;
use crate::results::ext::intel::IntelRow;
use crate::results::Point;

/// Op kinds that read and that write (a read-modify-write counts as its
/// two parts, `rmw-read` and `rmw-update`, not as a whole).
const READS: [&str; 5] = ["read", "scan", "seek", "readseq", "rmw-read"];
const WRITES: [&str; 5] = ["insert", "update", "write", "delete", "rmw-update"];

/// The histograms of `kinds` merged; `None` when none of them ran.
fn merged(p: &Point, kinds: &[&str]) -> Option<LatencyHistogram> {
    let mut all: Option<LatencyHistogram> = None;
    for k in kinds {
        let Some(h) = p
            .histograms
            .get(&format!("{k}.lat"))
            .and_then(|s| LatencyHistogram::decode(s).ok())
            .filter(|h| !h.is_empty())
        else {
            continue;
        };
        match all.as_mut() {
            Some(a) => a.merge(&h),
            None => all = Some(h),
        }
    }
    all
}

/// The point's row of Intel's table, shares taken at `threshold_ns`.
pub fn row(p: &Point, threshold_ns: u64) -> IntelRow {
    let reads = merged(p, &READS);
    let writes = merged(p, &WRITES);
    let under = |h: &Option<LatencyHistogram>| {
        h.as_ref()
            .map(|h| 100.0 * h.share_at_or_below(threshold_ns))
    };
    let stdev =
        |h: &Option<LatencyHistogram>| h.as_ref().and_then(|h| h.stats()).map(|s| s.stdev_ns);
    let secs = p.duration_ns as f64 / 1e9;
    let mib_s = |bytes: u64| (secs > 0.0).then(|| bytes as f64 / secs / (1 << 20) as f64);
    let dev = p.device.as_ref();
    let ios = dev.map(|d| d.read_ios + d.write_ios).unwrap_or(0);
    IntelRow {
        tps: p.total.iops,
        threshold_ns,
        reads_under_pct: under(&reads),
        writes_under_pct: under(&writes),
        read_stdev_ns: stdev(&reads),
        write_stdev_ns: stdev(&writes),
        device_read_mib_s: dev.and_then(|d| mib_s(d.read_bytes)),
        device_write_mib_s: dev.and_then(|d| mib_s(d.write_bytes)),
        device_avg_queue: dev.and_then(|d| d.avg_queue),
        // With no I/O the device had no latency to measure.
        device_latency_ms: dev.filter(|_| ios > 0).map(|d| d.avg_wait_ms),
        cpu_busy_pct: cpu_busy(p),
    }
}

/// The machine's CPUs busy over the phase (/proc/stat at its start and
/// end): user and system (with irq) of all the time, less idle, iowait
/// and steal.
fn cpu_busy(p: &Point) -> Option<f64> {
    let c = p.extra.cpu.as_ref()?;
    let all = c.usr_pct + c.sys_pct + c.iowait_pct + c.idle_pct + c.steal_pct;
    (all > 0.0).then(|| 100.0 * (c.usr_pct + c.sys_pct) / all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::diskstats::DeviceStats;
    use crate::measure::procstat::SystemCpu;

    fn hist(values: &[(u64, u64)]) -> String {
        let mut h = LatencyHistogram::new();
        for &(ns, n) in values {
            h.record_n(ns, n);
        }
        h.encode()
    }

    fn point() -> Point {
        let mut p = Point {
            name: "ycsb-a.run".into(),
            pass: None,
            job: None,
            params: Default::default(),
            started_at: String::new(),
            duration_ns: 2_000_000_000,
            ramp_ns: 0,
            direct: false,
            ops: Default::default(),
            total: crate::results::Totals {
                ops: 1000,
                iops: 500.0,
                ..Default::default()
            },
            batch: None,
            cpu: Default::default(),
            device: None,
            series: Vec::new(),
            verify: None,
            errors: Default::default(),
            warnings: Vec::new(),
            histograms: Default::default(),
            extra: Default::default(),
        };
        // Reads: 90 at 200 us, 10 at 5 ms; a scan at 2 ms joins them.
        p.histograms
            .insert("read.lat".into(), hist(&[(200_000, 90), (5_000_000, 10)]));
        p.histograms
            .insert("scan.lat".into(), hist(&[(2_000_000, 1)]));
        // Writes: 3 of 4 under 1 ms; the whole read-modify-write is not counted.
        p.histograms
            .insert("update.lat".into(), hist(&[(900_000, 3), (1_500_000, 1)]));
        p.histograms
            .insert("read-modify-write.lat".into(), hist(&[(9_000_000, 50)]));
        p
    }

    #[test]
    fn shares_and_stdev_come_from_the_histograms() {
        let r = row(&point(), 1_000_000);
        assert_eq!(r.tps, 500.0);
        let reads = r.reads_under_pct.expect("reads ran");
        assert!((reads - 100.0 * 90.0 / 101.0).abs() < 1e-9, "{reads}");
        assert_eq!(r.writes_under_pct, Some(75.0));
        let sd = r.write_stdev_ns.expect("writes ran");
        // Population stdev of {0.9, 0.9, 0.9, 1.5} ms, to HDR's precision.
        assert!((sd - 259_807.6).abs() < 1_500.0, "{sd}");
        assert!(r.read_stdev_ns.unwrap() > 1e6);
    }

    /// Nothing measured is None, never 0.
    #[test]
    fn what_was_not_measured_is_none() {
        let mut p = point();
        p.histograms.retain(|k, _| k.starts_with("read."));
        let r = row(&p, 1_000_000);
        assert_eq!(r.writes_under_pct, None);
        assert_eq!(r.write_stdev_ns, None);
        assert_eq!(r.device_read_mib_s, None);
        assert_eq!(r.device_avg_queue, None);
        assert_eq!(r.device_latency_ms, None);
        assert_eq!(r.cpu_busy_pct, None);
    }

    #[test]
    fn device_and_cpu_figures() {
        let mut p = point();
        let mut d: DeviceStats = serde_json::from_value(serde_json::json!({
            "device": "vda", "read_ios": 10, "write_ios": 30, "read_bytes": 4u64 << 20,
            "write_bytes": 8u64 << 20, "read_merges": 0, "write_merges": 0, "flushes": 0,
            "util_pct": 50.0, "avg_wait_ms": 0.75
        }))
        .expect("device stats");
        d.avg_queue = Some(1.5);
        p.device = Some(d);
        // Two CPUs: 50 of 200 busy, the rest idle, waiting or stolen.
        p.extra.cpu = Some(SystemCpu {
            usr_pct: 30.0,
            sys_pct: 20.0,
            iowait_pct: 40.0,
            idle_pct: 100.0,
            steal_pct: 10.0,
        });
        let r = row(&p, 1_000_000);
        assert_eq!(r.device_read_mib_s, Some(2.0));
        assert_eq!(r.device_write_mib_s, Some(4.0));
        assert_eq!(r.device_avg_queue, Some(1.5));
        assert_eq!(r.device_latency_ms, Some(0.75));
        assert_eq!(r.cpu_busy_pct, Some(25.0));
    }
}
