//! Stages of a request (user prepare, syscall + kernel submission, block layer
//! Q2G/G2I/I2D or Q2M/M2D, device D2C split at the interrupt, completion path,
//! reaping, residual) and their btt-style statistics table.

use super::correlate::RequestTimeline;
pub use crate::results::ext::trace::{Breakdown, StageStats};

/// Names of the intervals between consecutive timeline edges.
fn stage_name(from: &'static str, to: &'static str) -> &'static str {
    match (from, to) {
        ("P", "E") => "user prepare",
        ("E", "Q") => "syscall+submit",
        ("P", "Q") => "prepare+submit",
        ("Q", "G") => "Q2G",
        ("G", "I") => "G2I",
        ("I", "D") => "I2D",
        ("G", "D") => "G2D",
        ("Q", "M") => "Q2M",
        ("M", "D") => "M2D",
        ("Q", "D") => "Q2D",
        ("D", "irq") => "D2irq device",
        ("irq", "C") => "irq2C driver",
        ("D", "C") => "D2C device",
        ("C", "X") => "completion path",
        ("X", "U") => "reaping",
        ("C", "U") => "completion+reap",
        ("E", "X") => "syscall (no block I/O)",
        ("P", "X") => "prepare+syscall",
        ("P", "U") => "untraced",
        // A request re-dispatched after a requeue, or whose D was not seen.
        ("I", "irq") | ("G", "irq") | ("M", "irq") | ("Q", "irq") => "?2irq (no D seen)",
        ("I", "C") | ("G", "C") | ("M", "C") | ("Q", "C") => "?2C (no D seen)",
        _ => "other",
    }
}

/// Order of rows in the table.
pub const ORDER: &[&str] = &[
    "user prepare",
    "syscall+submit",
    "prepare+submit",
    "Q2G",
    "G2I",
    "I2D",
    "G2D",
    "Q2M",
    "M2D",
    "Q2D",
    "D2irq device",
    "irq2C driver",
    "D2C device",
    "completion path",
    "completion+reap",
    "reaping",
    "syscall (no block I/O)",
    "prepare+syscall",
    "untraced",
    "?2irq (no D seen)",
    "?2C (no D seen)",
    "other",
    "residual",
];

/// Stages that are the device's time (the rest is software).
pub fn is_device(stage: &str) -> bool {
    matches!(
        stage,
        "D2irq device" | "D2C device" | "?2irq (no D seen)" | "?2C (no D seen)"
    )
}

/// Split one timeline into named stages; the residual is the total minus the
/// sum of stages. An edge earlier than the one before it gives a zero stage
/// and does not move the chain back (so the stages never sum past the total);
/// `split_checked` reports such edges.
pub fn split(t: &RequestTimeline) -> Vec<(&'static str, u64)> {
    split_checked(t).0
}

/// `split`, plus the first out-of-order edge pair if any (e.g. "M>D").
pub fn split_checked(t: &RequestTimeline) -> (Vec<(&'static str, u64)>, Option<String>) {
    let pts: [(&'static str, Option<u64>); 11] = [
        ("P", Some(t.p)),
        ("E", t.e),
        ("Q", t.q),
        ("G", if t.m.is_some() { None } else { t.g }),
        ("I", if t.m.is_some() { None } else { t.i }),
        ("M", t.m),
        ("D", t.d),
        ("irq", t.irq),
        ("C", t.c),
        ("X", t.x),
        ("U", Some(t.u)),
    ];
    let mut out = Vec::with_capacity(10);
    let mut prev: Option<(&'static str, u64)> = None;
    let mut sum = 0u64;
    let mut reordered = None;
    for (label, ts) in pts {
        let Some(ts) = ts else { continue };
        let mut ts = ts;
        if let Some((pl, pt)) = prev {
            if ts < pt {
                reordered.get_or_insert_with(|| format!("{pl}>{label}"));
                ts = pt;
            }
            let d = ts - pt;
            sum += d;
            out.push((stage_name(pl, label), d));
        }
        prev = Some((label, ts));
    }
    let total = t.u.saturating_sub(t.p);
    out.push(("residual", total.saturating_sub(sum)));
    (out, reordered)
}

fn stats(name: &str, mut v: Vec<u64>, denom: f64, requests: usize) -> StageStats {
    v.sort_unstable();
    let n = v.len();
    let pct = |p: f64| -> u64 {
        if n == 0 {
            return 0;
        }
        let rank = ((p / 100.0) * n as f64).ceil() as usize;
        v[rank.clamp(1, n) - 1]
    };
    let sum: u128 = v.iter().map(|&x| x as u128).sum();
    let mut h = crate::measure::histogram::LatencyHistogram::new();
    for &x in &v {
        h.record(x);
    }
    StageStats {
        histogram: if n == 0 { String::new() } else { h.encode() },
        stage: name.to_string(),
        n: n as u64,
        min_ns: v.first().copied().unwrap_or(0),
        mean_ns: if n == 0 { 0.0 } else { sum as f64 / n as f64 },
        p50_ns: pct(50.0),
        p99_ns: pct(99.0),
        p999_ns: pct(99.9),
        max_ns: v.last().copied().unwrap_or(0),
        share: if denom > 0.0 { sum as f64 / denom } else { 0.0 },
        per_request_ns: Some(if requests == 0 {
            0.0
        } else {
            sum as f64 / requests as f64
        }),
    }
}

/// Aggregate timelines into per-stage statistics.
pub fn breakdown(timelines: &[RequestTimeline]) -> Breakdown {
    let mut per: Vec<Vec<u64>> = vec![Vec::new(); ORDER.len()];
    let mut totals = Vec::with_capacity(timelines.len());
    let (mut q2c, mut d2c) = (Vec::new(), Vec::new());
    let mut device = 0u128;
    let (mut merged, mut split_n, mut requeued, mut cross, mut with_irq) = (0, 0, 0, 0, 0);
    let mut reordered = std::collections::BTreeMap::new();
    for t in timelines {
        totals.push(t.u.saturating_sub(t.p));
        let (parts, bad) = split_checked(t);
        if let Some(b) = bad {
            *reordered.entry(b).or_insert(0) += 1;
        }
        for (name, d) in parts {
            let k = ORDER
                .iter()
                .position(|&o| o == name)
                .unwrap_or(ORDER.len() - 2);
            per[k].push(d);
            if is_device(name) {
                device += d as u128;
            }
        }
        if let (Some(q), Some(c)) = (t.q, t.c) {
            q2c.push(c.saturating_sub(q));
        }
        if let (Some(d), Some(c)) = (t.d, t.c) {
            d2c.push(c.saturating_sub(d));
        }
        merged += t.merged as u64;
        split_n += t.split as u64;
        requeued += (t.requeues > 0) as u64;
        cross += t.cross_cpu as u64;
        with_irq += t.irq.is_some() as u64;
    }
    let denom: f64 = totals.iter().map(|&x| x as f64).sum();
    let stages = ORDER
        .iter()
        .zip(per)
        .filter(|(_, v)| !v.is_empty())
        .map(|(name, v)| stats(name, v, denom, timelines.len()))
        .collect();
    let device_share = if denom > 0.0 {
        device as f64 / denom
    } else {
        0.0
    };
    Breakdown {
        requests: timelines.len() as u64,
        stages,
        total: stats("total", totals, denom, timelines.len()),
        q2c: (!q2c.is_empty()).then(|| stats("Q2C", q2c, denom, timelines.len())),
        d2c: (!d2c.is_empty()).then(|| stats("D2C", d2c, denom, timelines.len())),
        device_share,
        software_share: if denom > 0.0 { 1.0 - device_share } else { 0.0 },
        merged,
        split: split_n,
        requeued,
        cross_cpu_completions: cross,
        with_irq,
        reordered,
    }
}

fn us(ns: f64) -> String {
    format!("{:.1}", ns / 1000.0)
}

/// The terminal table (times in microseconds).
pub fn render(b: &Breakdown) -> String {
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::UTF8_BORDERS_ONLY);
    table.set_header([
        "stage", "min us", "mean us", "p50 us", "p99 us", "p99.9 us", "max us", "N", "share",
    ]);
    let row = |s: &StageStats, share: bool| -> Vec<String> {
        vec![
            s.stage.clone(),
            us(s.min_ns as f64),
            us(s.mean_ns),
            us(s.p50_ns as f64),
            us(s.p99_ns as f64),
            us(s.p999_ns as f64),
            us(s.max_ns as f64),
            s.n.to_string(),
            if share {
                format!("{:.1}%", s.share * 100.0)
            } else {
                String::new()
            },
        ]
    };
    for s in &b.stages {
        table.add_row(row(s, true));
    }
    table.add_row(row(&b.total, true));
    for s in [&b.q2c, &b.d2c].into_iter().flatten() {
        table.add_row(row(s, false));
    }
    let mut out = table.to_string();
    if !b.reordered.is_empty() {
        let v: Vec<String> = b
            .reordered
            .iter()
            .map(|(k, n)| format!("{k}: {n}"))
            .collect();
        out.push_str(&format!(
            "\nedges out of order (counted as 0): {}",
            v.join(", ")
        ));
    }
    out.push_str(&format!(
        "\nsoftware {:.1}% / device {:.1}% of the mean request; {} requests, {} merged, {} split, {} requeued, {} completed on another CPU, {} with the device irq seen\n",
        b.software_share * 100.0,
        b.device_share * 100.0,
        b.requests,
        b.merged,
        b.split,
        b.requeued,
        b.cross_cpu_completions,
        b.with_irq
    ));
    out
}
