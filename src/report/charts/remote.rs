//! The "local vs remote" section (`iolab remote`): IOPS of every transport
//! normalized to DAS per workload, mean latency likewise, CPU per I/O on
//! the initiator and the target, and the unloaded latency breakdown of
//! each transport with DAS as the reference. Everything is drawn from `analysis.remote` and
//! `extra.remote.breakdown`; nothing is derived here.

use super::{Section, Table};
use crate::analysis::remote::RemoteRow;
use crate::figures::fmt;
use crate::report::remote_errors;
use crate::report::svg::{self, BarChart};
use crate::results::Results;
use crate::target::stamps::{StampBreakdown, STAGES};

fn rows(r: &Results) -> &[RemoteRow] {
    &r.analysis.remote
}

/// Workloads and transports in the order they ran.
pub(super) fn axes(rows: &[RemoteRow]) -> (Vec<String>, Vec<String>) {
    let mut w: Vec<String> = Vec::new();
    let mut t: Vec<String> = Vec::new();
    for r in rows {
        if !w.contains(&r.workload) {
            w.push(r.workload.clone());
        }
        if !t.contains(&r.transport) {
            t.push(r.transport.clone());
        }
    }
    (w, t)
}

fn grid(
    rows: &[RemoteRow],
    value: impl Fn(&RemoteRow) -> Option<f64>,
) -> (Vec<String>, Vec<(String, Vec<f64>)>) {
    let (workloads, transports) = axes(rows);
    let stacks = transports
        .iter()
        .map(|t| {
            let v = workloads
                .iter()
                .map(|w| {
                    rows.iter()
                        .find(|r| &r.transport == t && &r.workload == w)
                        .and_then(&value)
                        .unwrap_or(0.0)
                })
                .collect();
            (t.clone(), v)
        })
        .collect();
    (workloads, stacks)
}

fn opt(v: Option<f64>, f: fn(f64) -> String) -> String {
    v.map(f).unwrap_or_default()
}

/// IOPS and latency per workload and transport, normalized to DAS.
pub fn local_vs_remote(r: &Results) -> Option<Section> {
    let rows = rows(r);
    if rows.is_empty() {
        return None;
    }
    let errors = remote_errors::any_in_rows(r);
    let mut headers = vec![
        "workload",
        "transport",
        "IOPS",
        "IOPS vs DAS",
        "mean",
        "mean vs DAS",
        "p95",
        "initiator CPU/IO",
        "target CPU/IO",
    ];
    if errors {
        headers.push("errors");
    }
    headers.extend(["initiator cache", "target cache"]);
    let mut table = Table::new(&headers);
    let us = |v: f64| format!("{v:.1} us");
    let caching = crate::report::remote_terminal::caching_of(r);
    let cache_of = |label: &str| caching.iter().find(|(l, _, _)| l == label);
    for x in rows {
        let mut row = vec![
            x.workload.clone(),
            x.transport.clone(),
            format!("{:.0}", x.iops),
            opt(x.iops_vs_das, fmt::times),
            opt(x.mean_ns, fmt::ns),
            opt(x.mean_vs_das, fmt::times),
            opt(x.p95_ns.map(|v| v as f64), fmt::ns),
            opt(x.host_cpu_us_per_io, us),
            opt(x.target_cpu_us_per_io, us),
        ];
        if errors {
            row.push(remote_errors::count(&x.errors));
        }
        row.push(cache_of(&x.transport).map_or(String::new(), |c| c.1.clone()));
        row.push(cache_of(&x.transport).map_or(String::new(), |c| c.2.clone()));
        table.rows.push(row);
    }
    let error_notes: String = remote_errors::notes(r)
        .iter()
        .map(|n| format!(" {n}."))
        .collect();
    let buffered: Vec<&str> = caching
        .iter()
        .filter(|(_, _, t)| t.starts_with("buffered"))
        .map(|(l, _, _)| l.as_str())
        .collect();
    let (categories, iops) = grid(rows, |x| x.iops_vs_das);
    let (_, mean) = grid(rows, |x| x.mean_vs_das);
    let chart = |title: &str, y: &str, stacks| {
        svg::bar_chart(&BarChart {
            title: title.into(),
            y_title: y.into(),
            y_fmt: fmt::times,
            categories: categories.clone(),
            stacks,
            stacked: false,
        })
    };
    Some(Section {
        id: "remote".into(),
        title: "Local vs remote".into(),
        note: format!(
            "The same jobs on the scratch file locally (das) and through each transport's server on the target host; one bar per transport, as a ratio to DAS (1.0 = as fast as local). Mean latency is over reads and writes. DAS is O_DIRECT; the remote initiators are in user space (no page cache on this side); the table says each target's caching.{}{error_notes}",
            if buffered.is_empty() {
                String::new()
            } else {
                format!(
                    " {}: the target is buffered (page cache), so its ratios set a cache against the device.",
                    buffered.join(", ")
                )
            }
        ),
        svgs: vec![
            chart("IOPS relative to DAS", "IOPS / DAS IOPS", iops),
            chart("Mean latency relative to DAS", "mean latency / DAS mean", mean),
        ],
        table,
    })
}

/// CPU microseconds per I/O on each side, per transport and workload.
pub fn cpu_per_io(r: &Results) -> Option<Section> {
    let rows = rows(r);
    if !rows.iter().any(|x| x.target_cpu_us_per_io.is_some()) {
        return None;
    }
    let (categories, _) = axes(rows);
    let mut svgs = Vec::new();
    let mut table = Table::new(&["workload", "transport", "initiator us/IO", "target us/IO"]);
    for w in &categories {
        let here: Vec<&RemoteRow> = rows.iter().filter(|x| &x.workload == w).collect();
        for x in &here {
            table.rows.push(vec![
                w.clone(),
                x.transport.clone(),
                opt(x.host_cpu_us_per_io, |v| format!("{v:.2}")),
                opt(x.target_cpu_us_per_io, |v| format!("{v:.2}")),
            ]);
        }
    }
    // One chart for the deepest queue's read-only workload (or the last).
    let pick = categories
        .iter()
        .rev()
        .find(|w| w.starts_with("randread"))
        .or(categories.last())?;
    let here: Vec<&RemoteRow> = rows.iter().filter(|x| &x.workload == pick).collect();
    svgs.push(svg::bar_chart(&BarChart {
        title: format!("CPU per I/O, {pick}"),
        y_title: "CPU time per I/O (stacked sides)".into(),
        y_fmt: |v| format!("{v:.0} us"),
        categories: here.iter().map(|x| x.transport.clone()).collect(),
        stacks: vec![
            (
                "initiator".into(),
                here.iter()
                    .map(|x| x.host_cpu_us_per_io.unwrap_or(0.0))
                    .collect(),
            ),
            (
                "target".into(),
                here.iter()
                    .map(|x| x.target_cpu_us_per_io.unwrap_or(0.0))
                    .collect(),
            ),
        ],
        stacked: true,
    }));
    Some(Section {
        id: "remote-cpu".into(),
        title: "CPU per I/O, initiator and target".into(),
        note: "User plus system CPU time per I/O: iolab's process (the initiator) and the target's server process, sampled over the same measured phase (DAS has no target).".into(),
        svgs,
        table,
    })
}

/// The unloaded latency breakdown (QD1) per transport, stacked, DAS first.
fn stage_index(name: &str) -> usize {
    STAGES.iter().position(|s| *s == name).unwrap_or(0)
}

pub fn breakdown(r: &Results) -> Option<Section> {
    let remote = r.extra.remote()?;
    let parsed: Vec<(String, StampBreakdown)> = remote
        .breakdown
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    parsed.first()?;
    // Every stage some transport measured, in the order of a request's life.
    let stage_names: Vec<&str> = STAGES
        .into_iter()
        .filter(|name| {
            parsed
                .iter()
                .any(|(_, b)| b.stages().iter().any(|s| s.0 == *name))
        })
        .collect();
    let mut table = Table::new(&["transport", "stage", "mean", "share", "covers"]);
    for (t, b) in &parsed {
        for (name, v) in b.stages() {
            table.rows.push(vec![
                t.clone(),
                name.to_string(),
                fmt::ns(v),
                format!("{:.1}%", 100.0 * v / b.latency_ns.max(1.0)),
                match b.covers(stage_index(name)) {
                    Some(c) => c.to_string(),
                    None if name == STAGES[0] => b.initiator_scope().to_string(),
                    None => String::new(),
                },
            ]);
        }
        table.rows.push(vec![
            t.clone(),
            format!("measured mean ({} requests)", b.requests),
            fmt::ns(b.latency_ns),
            "100%".into(),
            String::new(),
        ]);
    }
    let stacks = stage_names
        .iter()
        .map(|name| {
            (
                name.to_string(),
                parsed
                    .iter()
                    .map(|(_, b)| b.all_stages()[stage_index(name)].1)
                    .collect(),
            )
        })
        .collect();
    Some(Section {
        id: "remote-breakdown".into(),
        title: "Where the time of a remote request goes".into(),
        note: "Queue depth 1 random reads on each transport, DAS (the local disk through io_uring) first as the reference. Over iolab's own targets the initiator (due, taken by the engine, reply received, reaped) and the target (arrival, device submit, device completion, reply send) stamp each request with the same CLOCK_MONOTONIC, joined request by request; fabric includes the system calls, TCP and the wake-up of the side that receives. Over other targets (tgtd, qemu-nbd, nbdkit, the kernel's path) only the initiator stamps: fabric, target and device stay one stage. The initiator stage does not end at the same place everywhere (the table's \"covers\" says where): with the nbd and nvme-tcp engines it is iolab's user space only (due to the send call, the receive call's return to reaped); on DAS and with iscsi it runs from due to the return of the submit call, so it includes the kernel's submission path. The rest is the device's (DAS) or fabric, target and device together. The stages add up to each transport's measured mean.".into(),
        svgs: vec![svg::bar_chart(&BarChart {
            title: "Unloaded latency breakdown, DAS as the reference".into(),
            y_title: "time per request (stacked stages)".into(),
            y_fmt: fmt::ns,
            categories: parsed.iter().map(|(t, _)| t.clone()).collect(),
            stacks,
            stacked: true,
        })],
        table,
    })
}
