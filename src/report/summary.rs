//! Headline numbers of a results file (max 4k random IOPS, max bandwidth,
//! unloaded latency, batching parallelism, load-latency knee, steady
//! state, stack breakdown shares) and the de-duplicated list of
//! warnings, shared by the terminal summary, HTML and Markdown.

use crate::analysis::types::{LoadLatencyGroup, SteadyGroup};
use crate::report::charts::{batch_of, bs_of, param_u64, read_pct, rw_of, Table};
use crate::report::fmt;
use crate::report::headline_figure::{detail, figures, pick, Cached};
use crate::results::Param;
use crate::results::{OpStats, Point, Results};

/// One headline: label, value, where it comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct Headline {
    pub label: String,
    pub value: String,
    pub detail: String,
}

fn best<'a>(
    pts: impl Iterator<Item = &'a Point>,
    key: impl Fn(&Point) -> f64,
) -> Option<&'a Point> {
    pts.max_by(|a, b| key(a).total_cmp(&key(b)))
}

/// Every headline of `r`, in the order they are shown.
pub fn headlines(r: &Results) -> Vec<Headline> {
    let mut out = throughput_headlines(r);
    out.extend(latency_headlines(r));
    out.extend(batching_headlines(r));
    out.extend(r.analysis.load_latency.iter().map(knee_headline));
    out.extend(r.analysis.steady_state.iter().map(steady_headline));
    out.extend(r.points.iter().filter_map(trace_headline));
    out.extend(kv_headline(r));
    out.extend(oltp_headline(r));
    out
}

/// Device points (not database operations).
fn device_points(r: &Results) -> impl Iterator<Item = &Point> {
    r.points.iter().filter(|p| !p.extra.contains_key("kv"))
}

/// The steps of `iolab run` that seek maximum throughput: only their
/// points make a "max" headline of a run.
const MAX_STEPS: [&str; 3] = ["iops", "bandwidth", "matrix"];

/// Closed-loop device points that may carry a maximum: in a run, those of
/// the steps that look for one; elsewhere every closed-loop point.
fn max_candidates(r: &Results) -> impl Iterator<Item = &Point> {
    device_points(r).filter(|p| {
        p.extra.open_loop.is_none() && p.param(Param::Step).is_none_or(|s| MAX_STEPS.contains(&s))
    })
}

/// Max 4k random IOPS and max bandwidth, read and write. A figure from a
/// single point is no maximum: it is labelled with its queue depth. A
/// media workload's figure is the median of its rounds; a cached one is
/// said to be (`headline_figure`).
fn throughput_headlines(r: &Results) -> Vec<Headline> {
    let mut out = Vec::new();
    let cached = Cached::of(r);
    let small_random =
        |p: &&Point| rw_of(p).starts_with("rand") && bs_of(p).is_some_and(|b| b <= 4096);
    let label = |what: &str, n: usize, p: &Point| {
        if n > 1 {
            format!("max {what}")
        } else {
            format!("{what} at QD{}", param_u64(p, Param::Qd).unwrap_or(1))
        }
    };
    for (what, want) in [("4k random read IOPS", 100), ("4k random write IOPS", 0)] {
        let cands: Vec<&Point> = max_candidates(r)
            .filter(small_random)
            .filter(|p| read_pct(p) == Some(want))
            .collect();
        let figs = figures(&cands, |p| p.total.iops, &cached);
        let n = figs.len();
        if let Some((m, above)) = pick(figs, |a, b| a > b) {
            out.push(Headline {
                label: label(what, n, m.point),
                value: fmt::count(m.value),
                detail: detail(&m, above.as_ref(), fmt::count),
            });
        }
    }
    for (what, want) in [("read bandwidth", 100), ("write bandwidth", 0)] {
        let cands: Vec<&Point> = max_candidates(r)
            .filter(|p| read_pct(p) == Some(want))
            .collect();
        let figs = figures(&cands, |p| p.total.mib_s, &cached);
        let n = figs.len();
        let mib_s = |v: f64| format!("{} MiB/s", fmt::mib(v));
        if let Some((m, above)) = pick(figs, |a, b| a > b) {
            if m.value > 0.0 {
                out.push(Headline {
                    label: label(what, n, m.point),
                    value: mib_s(m.value),
                    detail: detail(&m, above.as_ref(), mib_s),
                });
            }
        }
    }
    out
}

/// Unloaded latency: QD1, not batched, smallest block, on a device rather
/// than a cache where both were measured.
fn latency_headlines(r: &Results) -> Vec<Headline> {
    let mut out = Vec::new();
    let cached = Cached::of(r);
    for (label, want) in [
        ("QD1 random read latency", 100),
        ("QD1 random write latency", 0),
    ] {
        let p = device_points(r)
            .filter(|p| param_u64(p, Param::Qd) == Some(1) && batch_of(p).is_none())
            .filter(|p| rw_of(p).starts_with("rand") && read_pct(p) == Some(want))
            .min_by_key(|p| (cached.why(p).is_some(), bs_of(p).unwrap_or(u64::MAX)));
        if let Some(l) = p.and_then(|p| p.main_lat().map(|l| (p, l))) {
            out.push(Headline {
                label: label.into(),
                value: format!(
                    "{} mean, {} p99",
                    fmt::ns(l.1.mean_ns),
                    fmt::ns(l.1.percentile(99.0).unwrap_or(0) as f64)
                ),
                detail: match cached.why(l.0) {
                    Some(why) => format!("{}; {why}: a cache, not a device", l.0.name),
                    None => l.0.name.clone(),
                },
            });
        }
    }
    out
}

/// The effective parallelism of every batching group.
fn batching_headlines(r: &Results) -> Vec<Headline> {
    let mut out = Vec::new();
    for g in &r.analysis.batching {
        if let Some(p) = &g.parallelism {
            out.push(Headline {
                label: "batching: effective parallelism".into(),
                value: fmt::times(p.max_speedup),
                detail: format!(
                    "{} B={} at k={}; 90% of it from k={}",
                    g.group,
                    fmt::bytes(p.bs as f64),
                    p.k_at_max,
                    p.k_reaching_90pct
                ),
            });
        }
    }
    out
}

/// The load-latency knee and saturation of one open-loop group.
fn knee_headline(g: &LoadLatencyGroup) -> Headline {
    // Several transports (`iolab remote`) each have a curve: say whose.
    let transport = g
        .group
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("transport="));
    Headline {
        label: match transport {
            Some(t) => format!("load-latency knee, {t}"),
            None => "load-latency knee".into(),
        },
        value: match &g.knee {
            Some(k) => format!("{} IOPS", fmt::count(k.achieved_iops)),
            None if g.curve.len() < crate::analysis::loadlat::MIN_CURVE_POINTS => {
                "none (one rate: no curve)".into()
            }
            None => "none".into(),
        },
        detail: format!(
            "p99 from the intended start under {}x the lowest rate's {}{}; max achieved {} IOPS open loop",
            g.knee_factor,
            fmt::ns3(g.unloaded_p99_ns),
            g.curve
                .first()
                .map(|c| format!(" at {} IOPS", fmt::count(c.target_iops)))
                .unwrap_or_default(),
            g.saturation
                .max_achieved_iops
                .map_or("-".to_string(), fmt::count)
        ),
    }
}

/// Whether a steady-state run converged.
fn steady_headline(g: &SteadyGroup) -> Headline {
    Headline {
        label: "steady state".into(),
        value: if g.steady {
            "reached".into()
        } else {
            "NOT reached".into()
        },
        detail: format!(
            "{} after {} round(s), {}",
            g.metric.name(),
            g.rounds.len(),
            g.group
        ),
    }
}

/// Software and device shares of a traced point.
fn trace_headline(p: &Point) -> Option<Headline> {
    let t = p.extra.trace.as_ref()?;
    let b = t.breakdown.as_ref()?;
    let (sw, dev) = (b.software_share, b.device_share);
    Some(Headline {
        label: "stack breakdown".into(),
        value: format!("{:.0}% software / {:.0}% device", 100.0 * sw, 100.0 * dev),
        detail: format!("{}: mean {} traced", p.name, fmt::ns(t.traced_mean_ns)),
    })
}

/// The fastest database point (a media workload: the median of its rounds).
fn kv_headline(r: &Results) -> Option<Headline> {
    let kv: Vec<&Point> = r
        .points
        .iter()
        .filter(|p| p.extra.contains_key("kv"))
        .collect();
    let (m, above) = pick(figures(&kv, |p| p.total.iops, &Cached::of(r)), |a, b| a > b)?;
    Some(Headline {
        label: "max database ops/s".into(),
        value: fmt::count(m.value),
        detail: detail(&m, above.as_ref(), fmt::count),
    })
}

/// The highest NOPM of an oltp run, with its TPM (every transaction,
/// rollbacks too) and the users it took.
fn oltp_headline(r: &Results) -> Option<Headline> {
    let oltp = r.points.iter().filter(|p| p.extra.oltp.is_some());
    let p = best(oltp, |p| p.extra.oltp.as_ref().map_or(0.0, |o| o.nopm))?;
    let o = p.extra.oltp.as_ref()?;
    Some(Headline {
        label: "NOPM (new orders per minute)".into(),
        value: fmt::count(o.nopm),
        detail: format!(
            "{}: {} users; TPM {} (every transaction, rollbacks too)",
            p.name,
            o.users,
            fmt::count(o.tpm)
        ),
    })
}

/// The oltp points: NOPM and TPM, transactions per second, the new-order
/// latency TPC-C bounds (p90), and the server's CPU beside iolab's own.
pub fn oltp_table(r: &Results) -> Option<Table> {
    let mut t = Table::new(&[
        "point",
        "users",
        "NOPM",
        "TPM (incl. rollbacks)",
        "txn/s",
        "new_order p90",
        "server CPU usr/sys %",
        "client (iolab) CPU usr/sys %",
    ]);
    for p in &r.points {
        let Some(o) = &p.extra.oltp else { continue };
        let new_order = p.ops.get("new_order").and_then(|o| o.lat.as_ref());
        let server = p.extra.server.as_ref().and_then(|s| s.process.as_ref());
        t.rows.push(vec![
            p.name.clone(),
            o.users.to_string(),
            fmt::count(o.nopm),
            fmt::count(o.tpm),
            fmt::count(p.total.iops),
            new_order
                .and_then(|l| l.percentile(90.0))
                .map(|v| fmt::ns(v as f64))
                .unwrap_or_else(|| "-".into()),
            server.map_or("not measured".into(), |s| {
                format!("{:.0}/{:.0}", s.usr_pct, s.sys_pct)
            }),
            format!("{:.0}/{:.0}", p.cpu.usr_pct, p.cpu.sys_pct),
        ]);
    }
    (!t.rows.is_empty()).then_some(t)
}

/// A column of the points table (`points_table`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointColumn {
    Point,
    Op,
    Iops,
    MibS,
    Mean,
    P50,
    P99,
    P999,
    Max,
    Cpu,
}

impl PointColumn {
    fn header(self) -> &'static str {
        match self {
            PointColumn::Point => "point",
            PointColumn::Op => "op",
            PointColumn::Iops => "IOPS",
            PointColumn::MibS => "MiB/s",
            PointColumn::Mean => "mean",
            PointColumn::P50 => "p50",
            PointColumn::P99 => "p99",
            PointColumn::P999 => "p99.9",
            PointColumn::Max => "max",
            PointColumn::Cpu => "usr/sys %",
        }
    }

    /// This column's cell of point `p`'s row for `op` (with its stats),
    /// or of its totals row (`None`: a point without op kinds).
    fn cell(self, p: &Point, op: Option<(&String, &OpStats)>) -> String {
        let l = op.and_then(|(_, o)| o.lat.as_ref().or(o.clat.as_ref()));
        let pc = |q: f64| {
            l.and_then(|l| l.percentile(q))
                .map(|v| fmt::ns(v as f64))
                .unwrap_or_default()
        };
        match self {
            PointColumn::Point => p.name.clone(),
            PointColumn::Op => op.map(|(name, _)| name.clone()).unwrap_or_default(),
            PointColumn::Iops => fmt::count(op.map_or(p.total.iops, |(_, o)| o.iops)),
            PointColumn::MibS => fmt::mib(op.map_or(p.total.mib_s, |(_, o)| o.mib_s)),
            PointColumn::Mean => l.map(|l| fmt::ns(l.mean_ns)).unwrap_or_default(),
            PointColumn::P50 => pc(50.0),
            PointColumn::P99 => pc(99.0),
            PointColumn::P999 => pc(99.9),
            PointColumn::Max => l.map(|l| fmt::ns(l.max_ns as f64)).unwrap_or_default(),
            PointColumn::Cpu => format!("{:.0}/{:.0}", p.cpu.usr_pct, p.cpu.sys_pct),
        }
    }
}

/// The points table of the HTML and Markdown reports: one row per point
/// and op kind, with `columns`; oltp points are left out (they have
/// `oltp_table`). With `totals`, a point without op kinds gets one row of
/// its totals.
pub fn points_table(r: &Results, columns: &[PointColumn], totals: bool) -> Table {
    let headers: Vec<&str> = columns.iter().map(|c| c.header()).collect();
    let mut t = Table::new(&headers);
    let row = |p: &Point, op| columns.iter().map(|c| c.cell(p, op)).collect();
    for p in r.points.iter().filter(|p| p.extra.oltp.is_none()) {
        for op in &p.ops {
            t.rows.push(row(p, Some(op)));
        }
        if totals && p.ops.is_empty() {
            t.rows.push(row(p, None));
        }
    }
    t
}

/// Run warnings, then point warnings prefixed with the point name, without repeats.
pub fn warnings(r: &Results) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |w: String| {
        if !out.contains(&w) {
            out.push(w);
        }
    };
    for w in &r.warnings {
        push(w.clone());
    }
    // The same warning on many points is said once, naming how many.
    let mut counts: Vec<(String, Vec<String>)> = Vec::new();
    for p in &r.points {
        for w in &p.warnings {
            match counts.iter_mut().find(|(x, _)| x == w) {
                Some((_, names)) => names.push(p.name.clone()),
                None => counts.push((w.clone(), vec![p.name.clone()])),
            }
        }
    }
    for (w, names) in counts {
        if names.len() == 1 {
            push(format!("{}: {w}", names[0]));
        } else {
            push(format!("{} points ({}, ...): {w}", names.len(), names[0]));
        }
    }
    if r.interrupted {
        push(
            "the run was interrupted: this report holds the points measured before the signal"
                .into(),
        );
    } else if !r.complete {
        push("the results are incomplete (the run was still going or was killed)".into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testutil::point;
    use crate::plan::job::{JobSpec, Pattern};
    use crate::results::Provenance;

    fn job(pattern: Pattern, qd: u32) -> JobSpec {
        JobSpec {
            pattern,
            qd,
            ..JobSpec::default()
        }
    }

    fn in_step(mut p: Point, step: &str) -> Point {
        p.params.insert("step".into(), step.into());
        p
    }

    fn labels(r: &Results) -> Vec<(String, String)> {
        throughput_headlines(r)
            .into_iter()
            .map(|h| (h.label, h.value))
            .collect()
    }

    /// A quick run's QD1 latency point is faster than nothing, but it is
    /// not the maximum the iops step looked for.
    #[test]
    fn headlines_that_are_not_maxima_come_from_the_steps_that_seek_them() {
        let mut r = Results::new("run", Provenance::default());
        r.points = vec![
            in_step(
                point(&job(Pattern::RandWrite, 1), 90_000.0, 1e4, 20_000),
                "latency",
            ),
            in_step(
                point(&job(Pattern::RandWrite, 32), 60_000.0, 5e5, 900_000),
                "iops",
            ),
            in_step(
                point(&job(Pattern::RandRead, 1), 95_000.0, 1e4, 20_000),
                "latency",
            ),
        ];
        let h = labels(&r);
        assert!(
            h.contains(&("4k random write IOPS at QD32".into(), "60.0k".into())),
            "{h:?}"
        );
        // The read side has no point from a step that seeks a maximum.
        assert!(!h.iter().any(|(l, _)| l.contains("read")), "{h:?}");
    }

    #[test]
    fn a_single_point_is_labelled_with_its_queue_depth_not_as_a_maximum() {
        let mut r = Results::new("device", Provenance::default());
        r.points = vec![point(&job(Pattern::RandRead, 1), 15_000.0, 6e4, 100_000)];
        let h = labels(&r);
        assert_eq!(h[0].0, "4k random read IOPS at QD1", "{h:?}");
        r.points
            .push(point(&job(Pattern::RandRead, 8), 50_000.0, 1.6e5, 300_000));
        let h = labels(&r);
        assert_eq!(h[0], ("max 4k random read IOPS".into(), "50.0k".into()));
    }
}

#[cfg(test)]
mod points_table_tests {
    use super::*;
    use crate::analysis::testutil::point;
    use crate::plan::job::JobSpec;
    use crate::results::ext::oltp::OltpInfo;
    use crate::results::Provenance;

    /// One builder for HTML's and Markdown's points tables: the columns
    /// asked, oltp points left out, a totals row only where asked.
    #[test]
    fn points_table_has_the_columns_asked_and_no_oltp_points() {
        let mut r = Results::new("device", Provenance::default());
        let mut dev = point(&JobSpec::default(), 1000.0, 50_000.0, 90_000);
        dev.name = "dev".into();
        let mut bare = dev.clone();
        bare.name = "bare".into();
        bare.ops.clear();
        let mut oltp = dev.clone();
        oltp.name = "oltp".into();
        oltp.extra.oltp = Some(Box::new(OltpInfo::default()));
        r.points = vec![dev, bare, oltp];
        use PointColumn as C;
        let t = points_table(&r, &[C::Point, C::Op, C::P99, C::Cpu], true);
        assert_eq!(t.headers, ["point", "op", "p99", "usr/sys %"]);
        let names: Vec<&str> = t.rows.iter().map(|row| row[0].as_str()).collect();
        assert_eq!(names, ["dev", "bare"]);
        assert_eq!(t.rows[0][2], fmt::ns(90_000.0));
        assert_eq!(t.rows[1][1..3], [String::new(), String::new()]);
        let t = points_table(&r, &[C::Point, C::Iops], false);
        assert_eq!(t.rows.len(), 1, "no totals row");
    }
}
