//! Throughput against database size, as the NVMe-vs-SATA study draws its
//! Cassandra sweep: the run phases of a kv run's parts that differ in
//! record count, grouped into one line per everything else that differs
//! between them (client threads, the server's `--server-set` settings,
//! workload, medium), each size's median ops/s over the rounds. The
//! report draws it (`report/charts/kv_size.rs`).

use crate::results::Param;
use std::collections::{BTreeMap, BTreeSet};

use super::baseline::median;
use crate::results::{Point, Results};

/// Params that name a pass or the point itself, not what the line is about.
const NOT_A_LINE: [&str; 10] = [
    "records",
    "record_bytes",
    "part",
    "round",
    "baseline",
    "operations",
    "phase",
    "fieldlength",
    "engine",
    "target",
];

/// One database size of a line.
#[derive(Debug, Clone, PartialEq)]
pub struct SizeCell {
    pub records: u64,
    /// Median ops/s over the rounds.
    pub ops: f64,
    pub rounds: usize,
}

/// One line: the settings that tell it apart (`ops/s` when nothing does)
/// and its sizes in increasing order.
#[derive(Debug, Clone, PartialEq)]
pub struct SizeLine {
    pub label: String,
    pub cells: Vec<SizeCell>,
}

/// The run phases of YCSB workloads with a record count.
fn run_points(r: &Results) -> Vec<(&Point, u64)> {
    r.points
        .iter()
        .filter(|p| p.extra.contains_key("kv") && p.param(Param::Phase) == Some("run"))
        .filter_map(|p| Some((p, p.param_num(Param::Records)?)))
        .collect()
}

/// The params of `p` that tell its line apart from the others'.
fn line_of(p: &Point, varying: &BTreeSet<&str>) -> String {
    let parts: Vec<String> = p
        .params
        .iter()
        .filter(|(k, _)| varying.contains(k.as_str()))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if parts.is_empty() {
        "ops/s".into()
    } else {
        parts.join(" ")
    }
}

/// The lines, in label order, when the run phases cover at least two
/// record counts.
pub fn size_sweep(r: &Results) -> Option<Vec<SizeLine>> {
    let pts = run_points(r);
    let sizes: BTreeSet<u64> = pts.iter().map(|(_, n)| *n).collect();
    if sizes.len() < 2 {
        return None;
    }
    // The params whose values differ between the run phases.
    let mut values: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (p, _) in &pts {
        for (k, v) in &p.params {
            values.entry(k.as_str()).or_default().insert(v.as_str());
        }
    }
    let varying: BTreeSet<&str> = values
        .iter()
        .filter(|(k, v)| v.len() > 1 && !NOT_A_LINE.contains(k))
        .map(|(k, _)| *k)
        .collect();
    let mut runs: BTreeMap<(String, u64), Vec<f64>> = BTreeMap::new();
    for (p, n) in &pts {
        runs.entry((line_of(p, &varying), *n))
            .or_default()
            .push(p.total.iops);
    }
    let mut lines: BTreeMap<String, Vec<SizeCell>> = BTreeMap::new();
    for ((line, records), ops) in runs {
        lines.entry(line).or_default().push(SizeCell {
            records,
            ops: median(&ops).unwrap_or(0.0),
            rounds: ops.len(),
        });
    }
    Some(
        lines
            .into_iter()
            .map(|(label, cells)| SizeLine { label, cells })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::ext::KvPhaseInfo;

    fn run_phase(records: u64, threads: u32, round: u32, ops: f64) -> Point {
        let mut p = Point {
            name: format!("ycsb-a r{round}: run"),
            pass: None,
            job: None,
            params: Default::default(),
            started_at: String::new(),
            duration_ns: 1_000_000_000,
            ramp_ns: 0,
            direct: false,
            ops: Default::default(),
            total: crate::results::Totals {
                iops: ops,
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
        p.extra.kv = Some(Box::new(KvPhaseInfo::default()));
        for (k, v) in [
            ("phase", "run".to_string()),
            ("records", records.to_string()),
            ("threads", threads.to_string()),
            ("round", round.to_string()),
        ] {
            p.params.insert(k.into(), v);
        }
        p
    }

    fn results(points: Vec<Point>) -> Results {
        let mut r = Results::new("kv", crate::results::Provenance::minimal());
        r.points = points;
        r
    }

    #[test]
    fn one_line_per_thread_count_with_each_sizes_median_over_rounds() {
        let mut pts = Vec::new();
        for (round, f) in [(1, 1.0), (2, 1.2), (3, 0.9)] {
            pts.push(run_phase(1000, 4, round, 100.0 * f));
            pts.push(run_phase(1_000_000, 4, round, 10.0 * f));
            pts.push(run_phase(1000, 16, round, 300.0 * f));
            pts.push(run_phase(1_000_000, 16, round, 20.0 * f));
        }
        let lines = size_sweep(&results(pts)).expect("two sizes make a sweep");
        let labels: Vec<&str> = lines.iter().map(|l| l.label.as_str()).collect();
        // `round` differs between points but names a pass, not a line.
        assert_eq!(labels, ["threads=16", "threads=4"]);
        let four = &lines[1].cells;
        assert_eq!(
            four.iter().map(|c| c.records).collect::<Vec<_>>(),
            [1000, 1_000_000]
        );
        assert_eq!((four[0].ops, four[0].rounds), (100.0, 3));
        assert_eq!(four[1].ops, 10.0);
    }

    #[test]
    fn one_size_is_no_sweep() {
        let pts = vec![run_phase(1000, 4, 1, 1.0), run_phase(1000, 16, 1, 2.0)];
        assert!(size_sweep(&results(pts)).is_none());
    }
}
