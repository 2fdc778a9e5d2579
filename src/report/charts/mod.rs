//! Which charts a results file supports, decided from the points' params,
//! batch stats, histograms and extra sections, and the data behind each
//! (a `Section`: SVG plus the table it was drawn from). Unknown sections are
//! skipped, so results from newer verbs still render.

pub mod act;
pub mod device;
pub mod hosts;
pub mod kv;
pub mod kv_size;
pub mod latency;
pub mod media;
pub mod oltp;
pub mod other;
pub mod remote;
pub mod remote_db;
pub mod remote_study;
pub mod server;
pub mod timeline;

use crate::results::Param;
use std::collections::BTreeMap;

use crate::results::{Point, Results};

/// A table of strings (rendered as HTML, CSV, Markdown).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(headers: &[&str]) -> Table {
        Table {
            headers: headers.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }
}

/// One chart (or table-only section) of the report.
#[derive(Debug, Clone)]
pub struct Section {
    /// Stable id: also the CSV file name.
    pub id: String,
    pub title: String,
    /// One or two sentences on what the chart shows and how it was derived.
    pub note: String,
    /// SVG markup; empty for table-only sections.
    pub svgs: Vec<String>,
    pub table: Table,
}

/// Every section the results support, in report order.
pub fn sections(r: &Results) -> Vec<Section> {
    let mut out = Vec::new();
    out.extend(device::bs_sweep(r));
    out.extend(device::latency_per_block(r));
    out.extend(device::batching(r));
    out.extend(device::heat_map(r));
    out.extend(device::load_latency(r));
    out.extend(act::act(r));
    out.extend(hosts::per_host(r));
    out.extend(hosts::per_host_series(r));
    out.extend(hosts::target_disk(r));
    out.extend(latency::percentiles(r));
    out.extend(latency::cdf(r));
    out.extend(remote::local_vs_remote(r));
    out.extend(remote::cpu_per_io(r));
    out.extend(remote_study::study_figures(r));
    out.extend(remote::breakdown(r));
    out.extend(remote_db::database(r));
    out.extend(media::media(r));
    out.extend(media::media_latency(r));
    out.extend(kv::kv(r));
    out.extend(kv_size::size_sweep(r));
    out.extend(oltp::oltp(r));
    out.extend(timeline::timelines(r));
    out.extend(other::breakdown(r));
    out.extend(other::steady_state(r));
    out.extend(latency::time_series(r));
    out.extend(latency::cpu(r));
    out
}

/// Single block size of a point, if it has one ("4k", "4096"; not splits).
pub fn bs_of(p: &Point) -> Option<u64> {
    p.param_bytes(Param::Bs).filter(|b| *b > 0)
}

pub fn param_u64(p: &Point, key: Param) -> Option<u64> {
    p.param_num(key)
}

pub fn rw_of(p: &Point) -> &str {
    p.param(Param::Rw).unwrap_or("")
}

/// Batch size K of a batched point.
pub fn batch_of(p: &Point) -> Option<u64> {
    p.batch
        .as_ref()
        .map(|b| b.k as u64)
        .or_else(|| param_u64(p, Param::Batch))
}

/// Read percentage implied by the pattern and mix.
pub fn read_pct(p: &Point) -> Option<u64> {
    match rw_of(p) {
        "read" | "randread" => Some(100),
        "write" | "randwrite" => Some(0),
        "readwrite" | "rw" | "randrw" => param_u64(p, Param::Mix).or(Some(50)),
        _ => None,
    }
}

/// Open-loop (rate-limited) point: the x of a load-latency curve.
pub fn is_open_loop(p: &Point) -> bool {
    p.has_param(Param::Rate) || p.has_param(Param::RateIops) || p.extra.open_loop.is_some()
}

/// Plain device points: closed loop, a pattern and a single block size.
pub fn is_device(p: &Point) -> bool {
    p.family() == crate::results::Family::Device
        && !is_open_loop(p)
        && read_pct(p).is_some()
        && bs_of(p).is_some()
}

/// A latency figure of the point's main operation type, through the
/// catalogue: three significant digits, and its basis where it is not the
/// total latency ("4.01ms (clat)": fio reported clat's percentiles only);
/// empty where not measured.
pub fn main_latency(p: &Point, figure: crate::figures::FigureId) -> String {
    main_measure(p, figure).map_or(String::new(), |(m, v)| {
        format!("{}{}", m.format(v), basis_note(&m))
    })
}

/// The measure of a latency figure of the point's main operation type
/// (`Point::main_op`) on the basis the point has it (not from the
/// intended start), with its value.
pub fn main_measure(
    p: &Point,
    figure: crate::figures::FigureId,
) -> Option<(crate::figures::Measure, f64)> {
    use crate::figures::{Basis, Measure};
    let op = p.main_op()?;
    let m = Measure::of_point(figure, p)
        .into_iter()
        .find(|m| m.op.as_deref() == Some(op) && m.basis != Some(Basis::FromIntended))?;
    let v = m.of(p)?;
    Some((m, v))
}

/// " (clat)", " (from issue)": a latency's basis where it is not the
/// total latency; nothing where it is.
pub fn basis_note(m: &crate::figures::Measure) -> String {
    match m.basis {
        Some(b) if b != crate::figures::Basis::Total => format!(" ({})", b.name()),
        _ => String::new(),
    }
}

/// Write-only patterns are drawn dashed.
pub fn is_write(p: &Point) -> bool {
    read_pct(p) == Some(0)
}

/// Params that differ between points, besides those named (for labels).
pub fn varying(points: &[&Point], except: &[&str]) -> Vec<String> {
    let mut vals: BTreeMap<&str, std::collections::BTreeSet<&str>> = BTreeMap::new();
    for p in points {
        for (k, v) in &p.params {
            vals.entry(k).or_default().insert(v);
        }
    }
    vals.into_iter()
        .filter(|(k, v)| v.len() > 1 && !except.contains(k))
        .map(|(k, _)| k.to_string())
        .collect()
}

/// Short label from chosen params: "randread qd32".
pub fn label(p: &Point, keys: &[String]) -> String {
    let batched = p.has_param(Param::Batch);
    keys.iter()
        .filter(|k| !(batched && k.as_str() == "qd"))
        .filter_map(|k| {
            p.params.get(k).map(|v| match k.as_str() {
                "rw" => v.clone(),
                "qd" => format!("qd{v}"),
                "batch" => format!("batch{v}"),
                "jobs" => format!("j{v}"),
                _ => format!("{k}={v}"),
            })
        })
        .collect::<Vec<_>>()
        .join(" ")
}
