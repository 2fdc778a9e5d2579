//! `iolab remote` drawn as the NVMe-oF study draws it: every transport on
//! the same axes, named in every legend. Absolute IOPS per workload (each
//! read/write mix at each depth), the initiator's and the target's CPU as
//! utilization (percent of one CPU: CPU per I/O times IOPS), and the
//! load-latency curves (the open-loop rates and the closed-loop maximum)
//! of every transport in one chart, mean and p99, and their p95 in another.

use super::{Section, Table};
use crate::figures::fmt;
use crate::report::svg::{self, Axis, BarChart, LineChart, Scale, Series};
use crate::results::Param;
use crate::results::{Point, Results};

/// Percent of one CPU from CPU per I/O (us) and IOPS.
fn utilization(us_per_io: Option<f64>, iops: f64) -> Option<f64> {
    us_per_io.map(|u| u * iops / 1e4)
}

/// A transport's load-latency points: (IOPS, [mean, p95, p99] ns), by IOPS.
type Curve = (String, Vec<(f64, [f64; 3])>);

/// Each transport's curve, in the order the transports ran.
fn curves(r: &Results) -> Vec<Curve> {
    let mut out: Vec<Curve> = Vec::new();
    let on_curve = |p: &Point| p.extra.rate_pct_of_max.is_some() || p.extra.is_closed_loop_max();
    for p in r.points.iter().filter(|p| on_curve(p)) {
        let (Some(t), Some(l)) = (p.param(Param::Transport), p.main_lat()) else {
            continue;
        };
        let (Some(p95), Some(p99)) = (l.percentile(95.0), l.percentile(99.0)) else {
            continue;
        };
        let point = (p.total.iops, [l.mean_ns, p95 as f64, p99 as f64]);
        match out.iter_mut().find(|(n, _)| n == t) {
            Some((_, v)) => v.push(point),
            None => out.push((t.to_string(), vec![point])),
        }
    }
    for (_, v) in &mut out {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

/// One chart of every transport's curves: each of `stats` (an index into
/// the curve's [mean, p95, p99] and its name), the first solid, the second
/// dashed.
fn load_latency_chart(curves: &[Curve], title: &str, stats: &[(usize, &str)]) -> String {
    let mut series = Vec::new();
    for (i, (t, pts)) in curves.iter().enumerate() {
        for (k, &(pick, name)) in stats.iter().enumerate() {
            series.push(Series {
                label: format!("{t} {name}"),
                points: pts
                    .iter()
                    .map(|q| {
                        let y = q.1[pick];
                        (
                            q.0,
                            y,
                            format!("{t}: {} IOPS, {name} {}", fmt::count(q.0), fmt::ns(y)),
                        )
                    })
                    .collect(),
                dashed: k == 1,
                color: i,
                line: true,
            });
        }
    }
    svg::line_chart(&LineChart {
        title: title.into(),
        x: Axis::new("IOPS achieved", Scale::Linear, fmt::count),
        y: Axis::new("latency", Scale::Log, fmt::ns),
        series,
        shade: None,
        marks: Vec::new(),
        hlines: Vec::new(),
    })
}

pub fn study_figures(r: &Results) -> Option<Section> {
    let rows = &r.analysis.remote;
    if rows.is_empty() {
        return None;
    }
    let (workloads, transports) = super::remote::axes(rows);
    let value =
        |t: &str, w: &str, f: &dyn Fn(&crate::analysis::remote::RemoteRow) -> Option<f64>| {
            rows.iter()
                .find(|x| x.transport == t && x.workload == w)
                .and_then(f)
                .unwrap_or(0.0)
        };
    let bars = |title: &str,
                y: &str,
                y_fmt: fn(f64) -> String,
                f: &dyn Fn(&crate::analysis::remote::RemoteRow) -> Option<f64>| {
        svg::bar_chart(&BarChart {
            title: title.into(),
            y_title: y.into(),
            y_fmt,
            categories: workloads.clone(),
            stacks: transports
                .iter()
                .map(|t| {
                    (
                        t.clone(),
                        workloads.iter().map(|w| value(t, w, f)).collect(),
                    )
                })
                .collect(),
            stacked: false,
        })
    };
    let pct = |v: f64| format!("{v:.0}%");
    let mut svgs = vec![
        bars(
            "IOPS per workload, every transport",
            "IOPS",
            fmt::count,
            &|x| Some(x.iops),
        ),
        bars(
            "Initiator CPU utilization",
            "initiator CPU (% of one CPU)",
            pct,
            &|x| utilization(x.host_cpu_us_per_io, x.iops),
        ),
    ];
    if rows.iter().any(|x| x.target_cpu_us_per_io.is_some()) {
        svgs.push(bars(
            "Target CPU utilization",
            "target CPU (% of one CPU)",
            pct,
            &|x| utilization(x.target_cpu_us_per_io, x.iops),
        ));
    }
    let curves = curves(r);
    if !curves.is_empty() {
        svgs.push(load_latency_chart(
            &curves,
            "Load-latency, every transport (solid: mean, dashed: p99)",
            &[(0, "mean"), (2, "p99")],
        ));
        svgs.push(load_latency_chart(
            &curves,
            "Load-latency p95, every transport",
            &[(1, "p95")],
        ));
    }
    let mut table = Table::new(&[
        "workload",
        "transport",
        "IOPS",
        "initiator CPU %",
        "target CPU %",
    ]);
    for x in rows {
        let p = |v: Option<f64>| v.map(pct).unwrap_or_default();
        table.rows.push(vec![
            x.workload.clone(),
            x.transport.clone(),
            fmt::count(x.iops),
            p(utilization(x.host_cpu_us_per_io, x.iops)),
            p(utilization(x.target_cpu_us_per_io, x.iops)),
        ]);
    }
    Some(Section {
        id: "remote-study".into(),
        title: "Transports side by side (the NVMe-oF study's figures)".into(),
        note: "Every transport on the same axes: absolute IOPS per workload, the initiator's and the target's CPU as a share of one CPU (CPU time per I/O times IOPS, so a transport that does more I/O in the same CPU shows it), and the load-latency curves (the open-loop rates and the closed-loop maximum of the deepest read job) of all transports in one chart (mean and p99), their p95 in the next.".into(),
        svgs,
        table,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_transport_is_on_the_same_axes_and_named() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/report/remote-nbd.json"
        );
        let r = Results::read(std::path::Path::new(path)).unwrap();
        let s = study_figures(&r).unwrap();
        assert!(s.svgs.len() >= 3, "{}", s.svgs.len());
        let ll = &s.svgs[s.svgs.len() - 2];
        assert!(ll.contains("Load-latency, every transport"), "{ll}");
        let p95 = s.svgs.last().unwrap();
        assert!(p95.contains("Load-latency p95, every transport"), "{p95}");
        for t in ["das", "nbd-iolab", "nvme-tcp-iolab", "nbd-nbdkit-memory"] {
            assert!(
                ll.contains(&format!("{t} mean")),
                "{t} missing from the load-latency legend"
            );
            assert!(p95.contains(&format!("{t} p95")), "{t}: no p95 curve");
            assert!(
                s.svgs[0].contains(&format!("<title>{t}</title>")),
                "{t} not in the IOPS legend"
            );
        }
        // Utilization: CPU per I/O times IOPS, in percent of one CPU.
        assert_eq!(utilization(Some(20.0), 25_000.0), Some(50.0));
    }
}
