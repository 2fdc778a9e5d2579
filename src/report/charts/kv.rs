//! Database (kv) charts: throughput per workload, latency per operation,
//! the readers sweep, the load statistics and the server's table of each
//! phase. Shapes are read tolerantly: a missing or unknown field skips the
//! chart.

use crate::results::Param;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{param_u64, Section, Table};
use crate::figures::fmt;
use crate::figures::{FigureId, Measure};
use crate::report::svg::{self, Axis, BarChart, LineChart, Series};
use crate::results::Family;
use crate::results::{Point, Results};

/// (x, y, hover text)
type Pt = (f64, f64, String);

/// The kv phases, a phase merged over hosts or instances (no kv section,
/// its workload) too.
fn kv_points(r: &Results) -> Vec<&Point> {
    r.points
        .iter()
        .filter(|p| p.family() == Family::Kv)
        .collect()
}

fn workload(p: &Point) -> String {
    p.param(Param::Workload)
        .map_or_else(|| p.name.clone(), str::to_string)
}

/// The workload and its phase ("ycsb-a load", "ycsb-a run"): a load and a
/// run of one workload are two bars and two rows, not one label twice.
fn workload_phase(p: &Point) -> String {
    match p.param(Param::Phase) {
        Some(phase) => format!("{} {phase}", workload(p)),
        None => workload(p),
    }
}

fn engine(p: &Point) -> String {
    p.param(Param::Engine)
        .map(str::to_string)
        .unwrap_or_default()
}

/// Database sections: throughput per workload, latency per operation,
/// readers sweep, load statistics.
pub fn kv(r: &Results) -> Vec<Section> {
    let pts = kv_points(r);
    if pts.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    // Throughput and latency per workload (not the readers sweep points).
    let plain: Vec<&Point> = pts
        .iter()
        .copied()
        .filter(|p| !p.has_param(Param::Readers))
        .collect();
    if !plain.is_empty() {
        let engines: BTreeSet<String> = plain.iter().map(|p| engine(p)).collect();
        out.push(throughput(&plain, &engines));
        out.extend(latency(&plain, engines.len() > 1));
    }
    out.extend(under_threshold(&plain));
    out.extend(intel_table(r));
    out.extend(readers_sweep(&pts));
    out.extend(load_stats(&pts));
    let rows = pts.iter().map(|p| {
        let phase = p.param(Param::Phase).unwrap_or("");
        (
            format!("{} {} {phase}", engine(p), workload(p))
                .trim_end()
                .to_string(),
            *p,
        )
    });
    out.extend(super::server::server_table(
        "phase",
        rows,
        "kv-server",
        "The database server per phase",
        "operation",
    ));
    out
}

/// Intel's NoSQL figure: the share of each operation kind at or under the
/// latency threshold, per workload (and record size), with the standard
/// deviation of its latency.
fn under_threshold(plain: &[&Point]) -> Option<Section> {
    let measured: Vec<(&Point, &crate::kv::point::LatencyShare)> = plain
        .iter()
        .filter_map(|p| Some((*p, p.extra.kv.as_ref()?.under.as_ref()?)))
        .filter(|(p, _)| p.param(Param::Phase) != Some("load"))
        .collect();
    let threshold = measured.first()?.1.threshold_ns;
    let mut cats: Vec<String> = Vec::new();
    let mut kinds: Vec<String> = Vec::new();
    for (p, u) in &measured {
        let w = workload(p);
        if !cats.contains(&w) {
            cats.push(w);
        }
        for k in u.share_pct.keys() {
            if !kinds.contains(k) && !k.starts_with("rmw_") {
                kinds.push(k.clone());
            }
        }
    }
    let share = |w: &str, k: &str| {
        measured
            .iter()
            .filter(|(p, _)| workload(p) == w)
            .filter_map(|(_, u)| u.share_pct.get(k).copied())
            .next_back()
            .unwrap_or(0.0)
    };
    let stacks = kinds
        .iter()
        .map(|k| (k.clone(), cats.iter().map(|w| share(w, k)).collect()))
        .collect();
    let limit = fmt::ns(threshold as f64);
    let mut table = Table::new(&[
        "workload",
        "engine",
        "record bytes",
        "op",
        "ops",
        "share <= limit %",
        "mean ns",
        "stdev ns",
    ]);
    for (p, u) in &measured {
        for (op, o) in &p.ops {
            let (Some(l), Some(pct)) = (&o.lat, u.share_pct.get(op)) else {
                continue;
            };
            table.rows.push(vec![
                workload(p),
                engine(p),
                p.param(Param::RecordBytes)
                    .map(str::to_string)
                    .unwrap_or_default(),
                op.clone(),
                o.ops.to_string(),
                format!("{pct:.2}"),
                format!("{:.0}", l.mean_ns),
                format!("{:.0}", l.stdev_ns),
            ]);
        }
    }
    Some(Section {
        id: "kv-under".into(),
        title: format!("Operations at or under {limit}"),
        note: format!(
            "The share of each operation kind that completed within {limit} (--under), per workload \
             and record size (-p fieldlength=1024,2048,4096 sweeps it), as Intel's NoSQL study \
             reported; the table adds the latency's standard deviation."
        ),
        svgs: vec![svg::bar_chart(&BarChart {
            title: format!("Share of operations at or under {limit}"),
            y_title: "% of operations".into(),
            y_fmt: fmt::count,
            categories: cats,
            stacks,
            stacked: false,
        })],
        table,
    })
}

/// Intel's table: one row per phase (`extra.kv.intel`).
fn intel_table(r: &Results) -> Option<Section> {
    let (threshold, header, rows) = crate::report::kv_intel::cells(r)?;
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut table = Table::new(&header);
    table.rows = rows;
    Some(Section {
        id: "kv-intel".into(),
        title: "Intel's table".into(),
        note: format!(
            "Per phase, the figures of Intel's NoSQL study: throughput, the share of reads and of \
             writes at or under {threshold} (from the HDR histograms), their latency's standard \
             deviation, the device's MiB/s, average queue size and latency (/proc/diskstats) and \
             the whole machine's CPU busy (/proc/stat). \"not measured\": the phase had no such figure."
        ),
        svgs: Vec::new(),
        table,
    })
}

/// Operations per second of each workload, one bar per engine.
fn throughput(plain: &[&Point], engines: &BTreeSet<String>) -> Section {
    let mut cats: Vec<String> = Vec::new();
    for p in plain {
        let w = workload_phase(p);
        if !cats.contains(&w) {
            cats.push(w);
        }
    }
    let ops_s = FigureId::OpsPerS.def().name;
    let mut table = Table::new(&["workload", "engine", ops_s, "ops"]);
    let stacks: Vec<(String, Vec<f64>)> = engines
        .iter()
        .map(|e| {
            let v = cats
                .iter()
                .map(|w| {
                    plain
                        .iter()
                        .filter(|p| &engine(p) == e && &workload_phase(p) == w)
                        .map(|p| ops_per_s(p))
                        .next_back()
                        .unwrap_or(0.0)
                })
                .collect();
            (
                if e.is_empty() {
                    ops_s.into()
                } else {
                    e.clone()
                },
                v,
            )
        })
        .collect();
    for p in plain {
        table.rows.push(vec![
            workload_phase(p),
            engine(p),
            format!("{:.0}", ops_per_s(p)),
            p.total.ops.to_string(),
        ]);
    }
    Section {
        id: "kv-throughput".into(),
        title: "Database throughput per workload".into(),
        note: "Operations per second of each workload phase, one bar per engine.".into(),
        svgs: vec![svg::bar_chart(&BarChart {
            title: "Throughput per workload".into(),
            y_title: format!("operations per second ({ops_s})"),
            y_fmt: fmt::count,
            categories: cats,
            stacks,
            stacked: false,
        })],
        table,
    }
}

/// A phase's operations per second, through the catalogue.
fn ops_per_s(p: &Point) -> f64 {
    Measure::whole(FigureId::OpsPerS).of(p).unwrap_or(0.0)
}

/// Mean and p99 latency of each operation kind of each workload: the
/// service time (the total basis), each from its operation's actual start.
fn latency(plain: &[&Point], several_engines: bool) -> Option<Section> {
    let mut cats = Vec::new();
    let (mut mean, mut p99) = (Vec::new(), Vec::new());
    let mut table = Table::new(&[
        "workload", "engine", "op", "count", "mean ns", "p95 ns", "p99 ns", "max ns",
    ]);
    for p in plain {
        for (op, o) in &p.ops {
            let Some(l) = &o.lat else { continue };
            let e = engine(p);
            let pct = |q| l.percentile(q).map_or(String::new(), |v| v.to_string());
            cats.push(format!(
                "{} {op}{}",
                workload(p),
                if several_engines {
                    format!(" ({e})")
                } else {
                    String::new()
                }
            ));
            mean.push(l.mean_ns);
            p99.push(l.percentile(99.0).unwrap_or(0) as f64);
            table.rows.push(vec![
                workload(p),
                e,
                op.clone(),
                l.n.to_string(),
                format!("{:.0}", l.mean_ns),
                pct(95.0),
                pct(99.0),
                l.max_ns.to_string(),
            ]);
        }
    }
    if cats.is_empty() {
        return None;
    }
    Some(Section {
        id: "kv-latency".into(),
        title: "Database latency per operation".into(),
        note: "Client-side latency of each operation kind, from the operation's actual start (service time; a rate-limited run's latency from the intended start is in its kv section).".into(),
        svgs: vec![svg::bar_chart(&BarChart {
            title: "Latency per operation".into(),
            y_title: "latency".into(),
            y_fmt: fmt::ns,
            categories: cats,
            stacks: vec![("mean".into(), mean), ("p99".into(), p99)],
            stacked: false,
        })],
        table,
    })
}

/// Throughput as reader threads are added next to one writer.
fn readers_sweep(pts: &[&Point]) -> Option<Section> {
    let sweep: Vec<&Point> = pts
        .iter()
        .copied()
        .filter(|p| param_u64(p, Param::Readers).is_some())
        .collect();
    if sweep.len() < 2 {
        return None;
    }
    let mut lines: BTreeMap<(String, String), Vec<Pt>> = BTreeMap::new();
    let mut table = Table::new(&["engine", "readers", "op", "ops/s"]);
    for p in &sweep {
        let n = param_u64(p, Param::Readers).unwrap_or(0) as f64;
        for (op, o) in &p.ops {
            lines.entry((engine(p), op.clone())).or_default().push((
                n,
                o.iops,
                format!(
                    "{} {op}, {n} readers: {} ops/s",
                    engine(p),
                    fmt::count(o.iops)
                ),
            ));
            table.rows.push(vec![
                engine(p),
                n.to_string(),
                op.clone(),
                format!("{:.0}", o.iops),
            ]);
        }
    }
    let series: Vec<Series> = lines
        .into_iter()
        .enumerate()
        .map(|(i, ((e, op), mut v))| {
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series {
                label: format!("{e} {op}").trim().to_string(),
                points: v,
                dashed: op != "read",
                color: i,
                line: true,
            }
        })
        .collect();
    let xs = svg::auto_scale(series.iter().flat_map(|s| s.points.iter().map(|p| p.0)));
    let ys = svg::auto_scale(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
    Some(Section {
        id: "kv-readers".into(),
        title: "Readers sweep".into(),
        note: "Read and write throughput as reader threads are added next to one writer (readwhilewriting).".into(),
        svgs: vec![svg::line_chart(&LineChart {
            title: "Throughput vs reader threads".into(),
            x: Axis::new("reader threads", xs, fmt::plain),
            y: Axis::new("operations per second", ys, fmt::count),
            series,
            shade: None,
            marks: vec![],
            hlines: vec![],
        })],
        table,
    })
}

/// Phases up to which the load statistics are a row per statistic.
const LOAD_STATS_TRANSPOSED: usize = 8;

/// Wall, CPU, context switches, filesystem operations and sizes per phase.
fn load_stats(pts: &[&Point]) -> Option<Section> {
    let mut cols: Vec<String> = Vec::new();
    let mut rows: Vec<(String, BTreeMap<String, String>)> = Vec::new();
    for p in pts {
        let Some(load) = p
            .extra
            .json("kv")
            .and_then(|mut k| k.get_mut("load").map(Value::take))
        else {
            continue;
        };
        let mut flat = BTreeMap::new();
        flatten("", &load, &mut flat, 0);
        for k in flat.keys() {
            if !cols.contains(k) {
                cols.push(k.clone());
            }
        }
        rows.push((p.name.clone(), flat));
    }
    if rows.is_empty() {
        return None;
    }
    // getrusage counts CPU time in scheduler ticks: a short phase may
    // show none of one kind, which is not "no CPU".
    let cell = |flat: &BTreeMap<String, String>, c: &String| -> String {
        let v = flat.get(c).cloned().unwrap_or_default();
        let cpu_time = ["cpu.user_ns", "cpu.sys_ns", "cpu.usr_pct", "cpu.sys_pct"];
        if c == "write_amplification" && (v.is_empty() || v == "0") {
            // Older files wrote 0 when nothing had reached the device.
            return "not measured".into();
        }
        match cpu_time.contains(&c.as_str()) && v == "0" {
            true => "0 (under a tick)".into(),
            false => v,
        }
    };
    let mut table = Table::default();
    if rows.len() <= LOAD_STATS_TRANSPOSED {
        // A row per statistic, a column per phase: a few phases fit the
        // page (a column per statistic needed scrolling sideways).
        table.headers.push("statistic".into());
        table
            .headers
            .extend(rows.iter().map(|(name, _)| name.clone()));
        for c in &cols {
            let mut row = vec![load_label(c)];
            row.extend(rows.iter().map(|(_, flat)| cell(flat, c)));
            table.rows.push(row);
        }
    } else {
        table.headers.push("point".into());
        table.headers.extend(cols.iter().map(|c| load_label(c)));
        for (name, flat) in &rows {
            let mut row = vec![name.clone()];
            row.extend(cols.iter().map(|c| cell(flat, c)));
            table.rows.push(row);
        }
    }
    Some(Section {
        id: "kv-load".into(),
        title: "Database load statistics".into(),
        note: "Wall, CPU, context switches, filesystem operations and sizes of each phase. CPU time is the process's (getrusage), counted in scheduler ticks: \"under a tick\" is less than one, not none.".into(),
        svgs: vec![],
        table,
    })
}

/// A load statistic's key with what it means where the key alone misleads:
/// which size is which, whose device bytes, the write amplification's
/// denominator.
fn load_label(key: &str) -> String {
    let meaning = match key {
        "db_apparent_bytes" => "db size (logical: its files' lengths)",
        "db_size_bytes" => "db allocated on disk (incl. preallocation)",
        "write_amplification" => crate::measure::write_amp::PER_KV_BYTES,
        "logical_written_bytes" => "kv bytes written",
        k if k.starts_with("device.") && k.ends_with("_bytes") => "whole device, all processes",
        _ => return key.to_string(),
    };
    format!("{key}: {meaning}")
}

/// Flatten scalar fields of a JSON object into "a.b" keys (two levels).
fn flatten(prefix: &str, v: &Value, out: &mut BTreeMap<String, String>, depth: usize) {
    match v {
        Value::Object(m) if depth < 2 => {
            for (k, v) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out, depth + 1);
            }
        }
        Value::Number(n) => {
            let s = n
                .as_f64()
                .map(|f| {
                    if f.fract() == 0.0 {
                        format!("{f:.0}")
                    } else {
                        format!("{f:.3}")
                    }
                })
                .unwrap_or_else(|| n.to_string());
            out.insert(prefix.to_string(), s);
        }
        Value::String(s) => {
            out.insert(prefix.to_string(), s.clone());
        }
        Value::Bool(b) => {
            out.insert(prefix.to_string(), b.to_string());
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workload's load and run phases were two rows labelled alike, and
    /// the chart kept only the last of them: each phase is its own bar.
    #[test]
    fn each_phase_of_a_workload_is_its_own_throughput_row_and_bar() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/report/kv-ycsb-rocksdb.json");
        let r = Results::read(&path).unwrap();
        let plain = kv_points(&r);
        let engines: BTreeSet<String> = plain.iter().map(|p| engine(p)).collect();
        let s = throughput(&plain, &engines);
        let labels: Vec<&str> = s.table.rows.iter().map(|row| row[0].as_str()).collect();
        assert_eq!(
            labels,
            ["ycsb-a load", "ycsb-a run", "ycsb-c load", "ycsb-c run"]
        );
    }
}
