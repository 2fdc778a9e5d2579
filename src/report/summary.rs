//! Headline numbers of a results file (max 4k random IOPS, max bandwidth,
//! unloaded latency, batching parallelism, load-latency knee, steady
//! state, stack breakdown shares) and the de-duplicated list of
//! warnings, shared by the terminal summary, HTML and Markdown.

use std::collections::BTreeSet;

use crate::analysis::types::{LoadLatencyGroup, SteadyGroup};
use crate::figures::fmt;
use crate::figures::{self as catalogue, Basis, FigureId, Measure, Unit};
use crate::report::charts::{
    basis_note, batch_of, bs_of, main_measure, param_u64, read_pct, rw_of, Table,
};
use crate::report::headline_figure::{detail, figures, pick, Cached};
use crate::results::Param;
use crate::results::{op_order, Family};
use crate::results::{Point, Results};

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

/// Device points (not database operations or transactions).
fn device_points(r: &Results) -> impl Iterator<Item = &Point> {
    r.points.iter().filter(|p| p.family() == Family::Device)
}

/// A figure over all of a point's operations, 0 where not measured (for
/// picking the largest).
fn whole(figure: FigureId, p: &Point) -> f64 {
    Measure::whole(figure).of(p).unwrap_or(0.0)
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
        let figs = figures(&cands, |p| whole(FigureId::Iops, p), &cached);
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
        let figs = figures(&cands, |p| whole(FigureId::MibS, p), &cached);
        let n = figs.len();
        let mib_s = |v: f64| FigureId::MibS.def().with_unit(v);
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
        if let Some((p, value)) = p.and_then(|p| Some((p, mean_and_p99(p)?))) {
            out.push(Headline {
                label: label.into(),
                value,
                detail: match cached.why(p) {
                    Some(why) => format!("{}; {why}: a cache, not a device", p.name),
                    None => p.name.clone(),
                },
            });
        }
    }
    out
}

/// "176.4us mean, 310us p99" of the point's main operation type, each
/// naming its basis when it is not the total latency ("(clat)"); the p99
/// left out where it was not measured.
fn mean_and_p99(p: &Point) -> Option<String> {
    let (mean, v) = main_measure(p, FigureId::LatMean)?;
    let mut s = format!("{} mean{}", mean.format(v), basis_note(&mean));
    if let Some((p99, v)) = main_measure(p, FigureId::LatP99) {
        s.push_str(&format!(", {} p99{}", p99.format(v), basis_note(&p99)));
    }
    Some(s)
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
        detail: format!(
            "{}: mean {} traced",
            p.name,
            Unit::Nanoseconds.format(t.traced_mean_ns)
        ),
    })
}

/// The fastest database point (a media workload: the median of its
/// rounds), a phase merged over hosts or instances too.
fn kv_headline(r: &Results) -> Option<Headline> {
    let kv: Vec<&Point> = r
        .points
        .iter()
        .filter(|p| p.family() == Family::Kv)
        .collect();
    let ops = FigureId::OpsPerS.def();
    let figs = figures(&kv, |p| whole(FigureId::OpsPerS, p), &Cached::of(r));
    let (m, above) = pick(figs, |a, b| a > b)?;
    let value = |v| ops.unit.format(v);
    Some(Headline {
        label: format!("max database {}", ops.name),
        value: value(m.value),
        detail: detail(&m, above.as_ref(), value),
    })
}

/// The highest NOPM of an oltp run, with its TPM (every transaction,
/// rollbacks too) and the users it took.
fn oltp_headline(r: &Results) -> Option<Headline> {
    let oltp = r.points.iter().filter(|p| p.family() == Family::Oltp);
    let p = best(oltp, |p| whole(FigureId::Nopm, p))?;
    let (nopm, tpm) = (FigureId::Nopm.def(), FigureId::Tpm.def());
    let o = p.extra.oltp.as_ref()?;
    Some(Headline {
        label: format!("{} (new orders per minute)", nopm.name),
        value: nopm.unit.format(Measure::whole(nopm.id).of(p)?),
        detail: format!(
            "{}: {} users; {} {} (every transaction, rollbacks too)",
            p.name,
            o.users,
            tpm.name,
            Measure::whole(tpm.id)
                .of(p)
                .map_or("-".into(), |v| tpm.unit.format(v))
        ),
    })
}

/// The oltp points: NOPM and TPM, transactions per second, the new-order
/// latency TPC-C bounds (p90), and the server's CPU beside iolab's own;
/// names and units from the catalogue.
pub fn oltp_table(r: &Results) -> Option<Table> {
    let figs = [FigureId::Nopm, FigureId::Tpm, FigureId::TxnPerS].map(Measure::whole);
    let p90 = Measure::latency(FigureId::LatP90, "new_order", Basis::Total);
    let mut headers = vec!["point".to_string(), "users".to_string()];
    headers.extend(figs.iter().chain([&p90]).map(Measure::label));
    headers.extend(["server CPU usr/sys %", "client (iolab) CPU usr/sys %"].map(String::from));
    let mut t = Table {
        headers,
        rows: Vec::new(),
    };
    for p in r.points.iter().filter(|p| p.family() == Family::Oltp) {
        let server = p.extra.server.as_ref().and_then(|s| s.process.as_ref());
        let users = p.extra.oltp.as_ref().map(|o| o.users.to_string());
        let mut row = vec![p.name.clone(), users.unwrap_or_else(|| "-".into())];
        for m in figs.iter().chain([&p90]) {
            row.push(m.of(p).map_or("-".into(), |v| m.format(v)));
        }
        row.push(server.map_or("not measured".into(), |s| {
            format!("{:.0}/{:.0}", s.usr_pct, s.sys_pct)
        }));
        row.push(format!("{:.0}/{:.0}", p.cpu.usr_pct, p.cpu.sys_pct));
        t.rows.push(row);
    }
    (!t.rows.is_empty()).then_some(t)
}

/// A column of the points table (`points_table`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointColumn {
    Point,
    Op,
    /// The point's kind's throughput (IOPS, ops/s).
    Throughput,
    MibS,
    Mean,
    P50,
    P99,
    P999,
    Max,
    Cpu,
}

/// One row of a point in the points table: an operation type (`None`:
/// the point's totals), its latencies from the intended start or not.
#[derive(Debug, Clone, Copy)]
struct RowOf<'a> {
    op: Option<&'a str>,
    intended: bool,
}

/// The rows of a point: an operation type's in table order, each followed
/// (open loop) by its latencies from the intended start.
fn rows_of(p: &Point) -> Vec<RowOf<'_>> {
    let mut ops: Vec<&str> = p.ops.keys().map(String::as_str).collect();
    ops.sort_by_key(|o| op_order(o));
    let from_intended = |op: &str| {
        Measure::latency(FigureId::LatMean, op, Basis::FromIntended)
            .of(p)
            .is_some()
    };
    let mut out = Vec::new();
    for op in ops {
        out.push(RowOf {
            op: Some(op),
            intended: false,
        });
        if from_intended(op) {
            out.push(RowOf {
                op: Some(op),
                intended: true,
            });
        }
    }
    out
}

impl PointColumn {
    /// The latency figure of a latency column.
    fn latency(self) -> Option<FigureId> {
        match self {
            PointColumn::Mean => Some(FigureId::LatMean),
            PointColumn::P50 => Some(FigureId::LatP50),
            PointColumn::P99 => Some(FigureId::LatP99),
            PointColumn::P999 => Some(FigureId::LatP999),
            PointColumn::Max => Some(FigureId::LatMax),
            _ => None,
        }
    }

    /// The header; `tput` is the table's one throughput figure, `None`
    /// where its points are of several kinds (each cell names its unit).
    fn header(self, tput: Option<FigureId>) -> String {
        if let Some(f) = self.latency() {
            return f.def().name.to_string();
        }
        match self {
            PointColumn::Point => "point",
            PointColumn::Op => "op",
            PointColumn::Throughput => tput.map_or("throughput", |f| f.def().name),
            PointColumn::MibS => FigureId::MibS.def().name,
            _ => "usr/sys %",
        }
        .to_string()
    }

    /// This column's cell of point `p`'s `row` in a table of `columns`.
    fn cell(self, p: &Point, row: RowOf, tput: Option<FigureId>, columns: &[Self]) -> String {
        if let Some(f) = self.latency() {
            let m = lat_measure(p, f, row);
            return m.and_then(|m| Some(m.format(m.of(p)?))).unwrap_or_default();
        }
        let rate = |figure| {
            let m = Measure {
                figure,
                op: row.op.map(String::from),
                basis: None,
            };
            m.of(p).filter(|_| !row.intended)
        };
        match self {
            PointColumn::Point => p.name.clone(),
            PointColumn::Op => op_label(p, row, columns),
            PointColumn::Throughput => {
                let f = catalogue::throughput(p.family());
                rate(f).map_or(String::new(), |v| match tput {
                    Some(_) => f.def().unit.format(v),
                    None => f.def().with_unit(v),
                })
            }
            PointColumn::MibS => rate(FigureId::MibS).map_or(String::new(), fmt::mib),
            _ => format!("{:.0}/{:.0}", p.cpu.usr_pct, p.cpu.sys_pct),
        }
    }
}

/// The measure a latency column reads in `row`: from the intended start,
/// or the basis the point has for that operation type (total; from issue
/// in open loop; clat where fio reported only its percentiles).
fn lat_measure(p: &Point, figure: FigureId, row: RowOf) -> Option<Measure> {
    let op = row.op?;
    if row.intended {
        return Some(Measure::latency(figure, op, Basis::FromIntended));
    }
    Measure::of_point(figure, p)
        .into_iter()
        .find(|m| m.op.as_deref() == Some(op) && m.basis != Some(Basis::FromIntended))
}

/// The op cell: the operation type and, when its latencies are not the
/// total latency, their basis: "read, from issue", or, where only some
/// columns are on another, which ("read (p50, p99: clat)").
fn op_label(p: &Point, row: RowOf, columns: &[PointColumn]) -> String {
    let Some(op) = row.op else {
        return String::new();
    };
    let bases: Vec<(FigureId, Basis)> = columns
        .iter()
        .filter_map(|c| {
            let m = lat_measure(p, c.latency()?, row)?;
            m.of(p)?;
            Some((m.figure, m.basis?))
        })
        .collect();
    let other: BTreeSet<Basis> = bases
        .iter()
        .map(|b| b.1)
        .filter(|b| *b != Basis::Total)
        .collect();
    match other.first() {
        None => op.to_string(),
        Some(b) if other.len() == 1 && bases.iter().all(|x| x.1 == *b) => {
            format!("{op}, {}", b.name())
        }
        Some(_) => {
            let on: Vec<String> = other
                .iter()
                .map(|b| {
                    let keys: Vec<&str> = bases
                        .iter()
                        .filter(|x| x.1 == *b)
                        .map(|x| x.0.def().key)
                        .collect();
                    format!("{}: {}", keys.join(", "), b.name())
                })
                .collect();
            format!("{op} ({})", on.join("; "))
        }
    }
}

/// The throughput figure a points table names in its header: its points'
/// kind's, `None` where they are of several kinds.
fn table_throughput(points: &[&Point]) -> Option<FigureId> {
    let kinds: BTreeSet<Family> = points.iter().map(|p| p.family()).collect();
    match kinds.len() {
        0 => Some(FigureId::Iops),
        1 => kinds.first().map(|f| catalogue::throughput(*f)),
        _ => None,
    }
}

/// The points table of the HTML and Markdown reports: one row per point
/// and op kind (open loop: and one of its latencies from the intended
/// start), with `columns`; oltp points are left out (they have
/// `oltp_table`). With `totals`, a point without op kinds gets one row of
/// its totals. Values through the catalogue: a figure a point's kind does
/// not have (a kv phase's MiB/s) is blank.
pub fn points_table(r: &Results, columns: &[PointColumn], totals: bool) -> Table {
    let points: Vec<&Point> = r
        .points
        .iter()
        .filter(|p| p.family() != Family::Oltp)
        .collect();
    let tput = table_throughput(&points);
    let mut t = Table {
        headers: columns.iter().map(|c| c.header(tput)).collect(),
        rows: Vec::new(),
    };
    for p in points {
        let mut rows = rows_of(p);
        if totals && rows.is_empty() {
            rows.push(RowOf {
                op: None,
                intended: false,
            });
        }
        for row in rows {
            let cells = columns.iter().map(|c| c.cell(p, row, tput, columns));
            t.rows.push(cells.collect());
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
        assert_eq!(t.headers, ["point", "op", "p99 lat", "usr/sys %"]);
        let names: Vec<&str> = t.rows.iter().map(|row| row[0].as_str()).collect();
        assert_eq!(names, ["dev", "bare"]);
        assert_eq!(t.rows[0][2], "90.0us", "three significant digits");
        assert_eq!(t.rows[1][1..3], [String::new(), String::new()]);
        let t = points_table(&r, &[C::Point, C::Throughput], false);
        assert_eq!(t.rows.len(), 1, "no totals row");
    }

    fn fixture(name: &str) -> Results {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/report")
            .join(name);
        Results::read(&path).unwrap()
    }

    const COLUMNS: [PointColumn; 5] = [
        PointColumn::Point,
        PointColumn::Op,
        PointColumn::Throughput,
        PointColumn::MibS,
        PointColumn::P99,
    ];

    /// A kv phase's throughput is ops/s, not IOPS, and it has no MiB/s; a
    /// table of device and kv points names each cell's unit.
    #[test]
    fn a_kv_point_is_in_ops_per_second_without_mib_s() {
        let mut dev = point(&JobSpec::default(), 1000.0, 50_000.0, 90_000);
        dev.name = "dev".into();
        let mut kv = dev.clone();
        kv.name = "kv".into();
        kv.params.insert("workload".into(), "ycsb-a".into());
        let mut r = Results::new("kv", Provenance::default());
        r.points = vec![kv.clone()];
        let t = points_table(&r, &COLUMNS, false);
        assert_eq!(t.headers[2..4], ["ops/s", "MiB/s"]);
        assert_eq!(t.rows[0][2..4], ["1000".to_string(), String::new()]);
        r.points = vec![dev, kv];
        let t = points_table(&r, &COLUMNS, false);
        assert_eq!(t.headers[2], "throughput");
        assert_eq!(t.rows[0][2], "1000 IOPS");
        assert_eq!(t.rows[1][2], "1000 ops/s");
        assert!(!t.rows[0][3].is_empty() && t.rows[1][3].is_empty());
    }

    /// Open loop: a row from issue and one from the intended start, each
    /// naming its basis, the second with its own value.
    #[test]
    fn open_loop_rows_name_their_basis() {
        let r = fixture("device-loadlat.json");
        let p = r
            .points
            .iter()
            .find(|p| p.extra.open_loop.is_some())
            .unwrap();
        let want = p.extra.open_loop.as_ref().unwrap().lat_from_intended["read"]
            .percentile(99.0)
            .unwrap();
        let t = points_table(&r, &COLUMNS, false);
        let rows: Vec<&Vec<String>> = t.rows.iter().filter(|row| row[0] == p.name).collect();
        assert_eq!(rows[0][1], "read, from issue");
        assert_eq!(rows[1][1], "read, from intended start");
        assert_eq!(rows[1][4], fmt::ns3(want as f64));
        assert!(rows[1][2].is_empty(), "the throughput is on the first row");
    }

    /// fio reports clat's percentiles only: the row says which columns
    /// are on clat.
    #[test]
    fn a_fio_import_names_its_clat_percentiles() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/report/fio-randread.json");
        let text = std::fs::read_to_string(path).unwrap();
        let r = crate::report::fio_json::from_fio_text(&text).unwrap();
        let t = points_table(&r, &COLUMNS, false);
        assert_eq!(t.rows[0][1], "read, clat");
        let mean_p99 = [PointColumn::Op, PointColumn::Mean, PointColumn::P99];
        let t = points_table(&r, &mean_p99, false);
        assert_eq!(t.rows[0][0], "read (p99: clat)", "the mean is fio's lat");
    }

    /// NOPM, TPM, txn/s and the new-order p90 through the catalogue.
    #[test]
    fn the_oltp_table_reads_the_catalogue() {
        let t = oltp_table(&fixture("oltp-postgres.json")).unwrap();
        assert_eq!(
            t.headers[2..6],
            ["NOPM", "TPM", "txn/s", "new_order p90 lat"]
        );
        assert_eq!(t.rows[0][2], "4950");
        assert!(t.rows[0][5].ends_with("ms"), "{:?}", t.rows[0]);
    }
}

#[cfg(test)]
mod headline_tests {
    use super::*;
    use crate::analysis::testutil::point;
    use crate::plan::job::{JobSpec, Pattern};
    use crate::results::Provenance;

    /// Headline latencies have three significant digits, as the tables.
    #[test]
    fn qd1_latency_has_three_significant_digits() {
        let spec = JobSpec {
            pattern: Pattern::RandRead,
            qd: 1,
            ..JobSpec::default()
        };
        let mut r = Results::new("device", Provenance::default());
        r.points = vec![point(&spec, 300_000.0, 3_010.0, 48_200)];
        let h = latency_headlines(&r);
        assert_eq!(h[0].value, "3.01us mean, 48.2us p99");
    }

    /// A kv phase merged over hosts keeps no kv section, only its
    /// workload: it is a database point, not a device one.
    #[test]
    fn a_merged_kv_point_is_a_database_point() {
        let spec = JobSpec {
            pattern: Pattern::RandRead,
            qd: 1,
            ..JobSpec::default()
        };
        let mut p = point(&spec, 20_000.0, 3_010.0, 48_200);
        p.params.insert("workload".into(), "ycsb-c".into());
        let mut r = Results::new("kv", Provenance::default());
        r.points = vec![p];
        let h = headlines(&r);
        assert_eq!(h.len(), 1, "{h:?}");
        assert_eq!(h[0].label, "max database ops/s");
        assert_eq!(h[0].value, "20.0k");
    }
}
