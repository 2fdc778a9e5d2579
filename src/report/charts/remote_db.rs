//! The "database on the remote volume" section (`iolab remote --db`):
//! RocksDB's readrandomwriterandom throughput on every volume normalized to
//! the one on the local file (grouped bars, one group per value size), mean
//! and p99 latency of reads and writes, and the read latency CDF of each
//! volume per value size. Rows come from `analysis.remote_db`; the CDFs
//! from the points' read histograms.

use super::{Section, Table};
use crate::analysis::remote::DbRow;
use crate::figures::fmt;
use crate::measure::histogram::LatencyHistogram;
use crate::report::svg::{self, Axis, BarChart, LineChart, Scale, Series};
use crate::results::Results;

/// Value sizes and transports in the order they ran.
fn axes(rows: &[DbRow]) -> (Vec<u64>, Vec<String>) {
    let mut sizes = Vec::new();
    let mut transports: Vec<String> = Vec::new();
    for r in rows {
        if !sizes.contains(&r.value_size) {
            sizes.push(r.value_size);
        }
        if !transports.contains(&r.transport) {
            transports.push(r.transport.clone());
        }
    }
    (sizes, transports)
}

fn size_label(v: u64) -> String {
    format!("{} values", value_size(v))
}

/// "800 B", "10 KiB".
fn value_size(v: u64) -> String {
    if v >= 1024 && v.is_multiple_of(1024) {
        format!("{} KiB", v / 1024)
    } else {
        format!("{v} B")
    }
}

/// A remote run without `--db`: say that the database runs exist and how
/// to ask for them.
fn not_run() -> Section {
    let mut table = Table::new(&["to run it"]);
    table.rows.push(vec!["iolab remote ... --db 800,4k".into()]);
    Section {
        id: "remote-db".into(),
        title: "A database on the remote volume".into(),
        note: "Not run: without --db, iolab remote measures block I/O only. With --db SIZES it also runs RocksDB (db_bench's fillseq, then readrandomwriterandom, per value size) on ext4 over every transport's volume and on the local file, and draws its throughput relative to DAS and its read latency CDF per volume here.".into(),
        svgs: Vec::new(),
        table,
    }
}

/// A latency CDF as a line (at most ~150 points): `what` names the
/// requests in the hover text ("reads").
pub fn cdf_series(label: &str, color: usize, h: &LatencyHistogram, what: &str) -> Series {
    let cdf = h.cdf();
    let step = (cdf.len() / 150).max(1);
    let points = cdf
        .iter()
        .enumerate()
        .filter(|(j, _)| j % step == 0 || *j == cdf.len() - 1)
        .map(|(_, &(ns, f))| {
            let text = format!(
                "{label}: {:.2}% of {what} within {}",
                f * 100.0,
                fmt::ns(ns as f64)
            );
            (ns as f64, f * 100.0, text)
        })
        .collect();
    Series {
        label: label.to_string(),
        points,
        dashed: false,
        color,
        line: true,
    }
}

/// The read latency CDF of every volume at one value size.
fn read_cdf(r: &Results, rows: &[DbRow], size: u64) -> Option<String> {
    let series: Vec<Series> = rows
        .iter()
        .filter(|x| x.value_size == size)
        .enumerate()
        .filter_map(|(i, x)| {
            let p = r.points.iter().find(|p| p.name == x.point)?;
            let h = LatencyHistogram::decode(p.histograms.get("read.lat")?).ok()?;
            Some(cdf_series(&x.transport, i, &h, "reads"))
        })
        .collect();
    if series.is_empty() {
        return None;
    }
    let scale = svg::auto_scale(series.iter().flat_map(|s| s.points.iter().map(|p| p.0)));
    Some(svg::line_chart(&LineChart {
        title: format!("Read latency CDF, {}", size_label(size)),
        x: Axis::new("read latency", scale, fmt::ns),
        y: Axis::new("reads at or below (%)", Scale::Linear, fmt::plain),
        series,
        shade: None,
        marks: vec![],
        hlines: vec![],
    }))
}

/// The database on every volume beside the one on the local file.
pub fn database(r: &Results) -> Option<Section> {
    let rows = &r.analysis.remote_db;
    if rows.is_empty() {
        return r.extra.remote().map(|_| not_run());
    }
    let (sizes, transports) = axes(rows);
    let mut table = Table::new(&[
        "volume",
        "value size",
        "ops/s",
        "ops/s vs DAS",
        "read mean",
        "read p99",
        "write mean",
        "write p99",
    ]);
    let opt_ns = |v: Option<f64>| v.map(fmt::ns).unwrap_or_default();
    for x in rows {
        table.rows.push(vec![
            x.transport.clone(),
            value_size(x.value_size),
            format!("{:.0}", x.ops_s),
            x.ops_vs_das.map(fmt::times).unwrap_or_default(),
            opt_ns(x.read_mean_ns),
            opt_ns(x.read_p99_ns.map(|v| v as f64)),
            opt_ns(x.write_mean_ns),
            opt_ns(x.write_p99_ns.map(|v| v as f64)),
        ]);
    }
    let stacks = transports
        .iter()
        .map(|t| {
            let v = sizes
                .iter()
                .map(|s| {
                    rows.iter()
                        .find(|x| &x.transport == t && x.value_size == *s)
                        .and_then(|x| x.ops_vs_das)
                        .unwrap_or(0.0)
                })
                .collect();
            (t.clone(), v)
        })
        .collect();
    let mut svgs = vec![svg::bar_chart(&BarChart {
        title: "Database throughput relative to DAS".into(),
        y_title: "ops/s / DAS ops/s".into(),
        y_fmt: fmt::times,
        categories: sizes.iter().map(|s| size_label(*s)).collect(),
        stacks,
        stacked: false,
    })];
    svgs.extend(sizes.iter().filter_map(|s| read_cdf(r, rows, *s)));
    let chains = r
        .extra
        .remote()
        .and_then(|x| {
            let v = &x.db()?.volumes;
            Some(
                v.iter()
                    .map(|(k, c)| format!("{k}: {c}"))
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        })
        .unwrap_or_default();
    Some(Section {
        id: "remote-db".into(),
        title: "A database on the remote volume".into(),
        note: format!(
            "RocksDB (O_DIRECT reads, small block cache, flushed after the load) on ext4, db_bench's readrandomwriterandom after fillseq, one bar per volume as a ratio to the same database on the local file (das). Volumes: {chains}."
        ),
        svgs,
        table,
    })
}
