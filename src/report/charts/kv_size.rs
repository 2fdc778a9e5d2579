//! Throughput against database size, as the NVMe-vs-SATA study draws its
//! Cassandra sweep: the run phases of a kv run's parts that differ in
//! record count, one line per everything else that differs between them
//! (client threads, the server's `--server-set` settings, workload,
//! medium), x the record count, y the median ops/s over the rounds.

use std::collections::{BTreeMap, BTreeSet};

use super::{param_u64, Section, Table};
use crate::analysis::baseline::median;
use crate::report::fmt;
use crate::report::svg::{self, Axis, LineChart, Scale, Series};
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

/// The run phases of YCSB workloads with a record count.
fn run_points(r: &Results) -> Vec<(&Point, u64)> {
    r.points
        .iter()
        .filter(|p| {
            p.extra.contains_key("kv") && p.params.get("phase").map(String::as_str) == Some("run")
        })
        .filter_map(|p| Some((p, param_u64(p, "records")?)))
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

/// The chart, when the run phases cover at least two record counts.
pub fn size_sweep(r: &Results) -> Option<Section> {
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
    let mut table = Table::new(&["line", "records", "ops/s (median)", "rounds"]);
    let mut lines: BTreeMap<String, Vec<(f64, f64, String)>> = BTreeMap::new();
    for ((line, n), ops) in runs {
        let rounds = ops.len();
        let m = median(&ops).unwrap_or(0.0);
        table.rows.push(vec![
            line.clone(),
            n.to_string(),
            format!("{m:.0}"),
            rounds.to_string(),
        ]);
        let text = format!(
            "{line}: {} records, {} ops/s",
            fmt::count(n as f64),
            fmt::count(m)
        );
        lines.entry(line).or_default().push((n as f64, m, text));
    }
    let series = lines
        .into_iter()
        .enumerate()
        .map(|(i, (label, points))| Series {
            label,
            points,
            dashed: false,
            color: i,
            line: true,
        })
        .collect();
    Some(Section {
        id: "kv-size".into(),
        title: "Throughput vs database size".into(),
        note: "The run phase of each part, by its record count (the database's size), one line per setting that differs between the parts (client threads, the server's --server-set settings, workload, medium); the median ops/s over the rounds. Below the memtables or the cache, reads are served from memory; above them, from the device.".into(),
        svgs: vec![svg::line_chart(&LineChart {
            title: "Throughput vs database size".into(),
            x: Axis::new("records", Scale::Log, fmt::count),
            y: Axis::new("operations per second", Scale::Linear, fmt::count),
            series,
            shade: None,
            marks: vec![],
            hlines: vec![],
        })],
        table,
    })
}
