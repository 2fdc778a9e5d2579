//! OLTP (TPC-C-derived) charts: NOPM against virtual users, the latency of
//! each transaction type per user count (table), transactions per second
//! over each point's measured time, and the server's use and storage per
//! point (table, from `extra.server`). Read from `extra.oltp`, the points'
//! ops and series; a file without oltp points has none.

use super::{Section, Table};
use crate::figures::fmt;
use crate::oltp::point::OltpInfo;
use crate::report::svg::{self, Axis, LineChart, Scale, Series};
use crate::results::{Point, Results};

/// (x, y, hover text)
type Pt = (f64, f64, String);

fn oltp_points(r: &Results) -> Vec<(&Point, &OltpInfo)> {
    r.points
        .iter()
        .filter_map(|p| p.extra.oltp.as_deref().map(|o| (p, o)))
        .collect()
}

/// `LABEL rN` of a point of a media run (several targets), else none.
fn pass_of(p: &Point) -> Option<String> {
    let id = crate::analysis::media::pass_of(p)?;
    Some(format!("{} r{}", id.setup, id.round))
}

/// How a point is told apart: its users, after its pass in a media run.
fn who(p: &Point, o: &OltpInfo) -> String {
    match pass_of(p) {
        Some(pass) => format!("{pass}, {} users", o.users),
        None => format!("{} users", o.users),
    }
}

/// Every oltp section of the report.
pub fn oltp(r: &Results) -> Vec<Section> {
    let pts = oltp_points(r);
    if pts.is_empty() {
        return Vec::new();
    }
    // A media run (several targets): a target column in every table.
    let media = pts.iter().any(|(p, _)| pass_of(p).is_some());
    let mut out = vec![
        nopm_vs_users(&pts, media),
        latency_table(&pts, media),
        tps_over_time(&pts, media),
    ];
    out.extend(server_table(&pts, media));
    out
}

/// A table of `headers`, and `target` last in a media run.
fn table_of(headers: &[&str], media: bool) -> Table {
    let mut t = Table::new(headers);
    if media {
        t.headers.push("target".into());
    }
    t
}

/// A row's cells, and the point's pass last in a media run.
fn row_of(mut cells: Vec<String>, p: &Point, media: bool) -> Vec<String> {
    if media {
        cells.push(pass_of(p).unwrap_or_default());
    }
    cells
}

fn server_table(pts: &[(&Point, &OltpInfo)], media: bool) -> Option<Section> {
    let label = |p: &Point, o: &OltpInfo| match media {
        true => who(p, o),
        false => o.users.to_string(),
    };
    let rows = pts.iter().map(|(p, o)| (label(p, o), *p));
    super::server::server_table(
        if media { "point" } else { "users" },
        rows,
        "oltp-server",
        "The database server per virtual-user count",
        "transaction",
    )
}

fn nopm_vs_users(pts: &[(&Point, &OltpInfo)], media: bool) -> Section {
    let mut table = table_of(
        &[
            "users",
            "NOPM",
            "TPM",
            "efficiency %",
            "engine",
            "warehouses",
        ],
        media,
    );
    // One NOPM line per pass of a media run; NOPM and TPM lines otherwise.
    let mut passes: Vec<(Option<String>, Vec<Pt>)> = Vec::new();
    let mut tpm = Vec::new();
    for (p, o) in pts {
        let u = o.users as f64;
        let pass = pass_of(p);
        let at = match passes.iter().position(|(name, _)| *name == pass) {
            Some(i) => i,
            None => {
                passes.push((pass, Vec::new()));
                passes.len() - 1
            }
        };
        passes[at]
            .1
            .push((u, o.nopm, format!("{}: NOPM {:.0}", who(p, o), o.nopm)));
        tpm.push((u, o.tpm, format!("{}: TPM {:.0}", who(p, o), o.tpm)));
        table.rows.push(row_of(
            vec![
                o.users.to_string(),
                format!("{:.0}", o.nopm),
                format!("{:.0}", o.tpm),
                format!("{:.1}", o.efficiency_pct),
                o.engine.clone(),
                o.warehouses.to_string(),
            ],
            p,
            media,
        ));
    }
    let several = passes.len() > 1;
    let mut series: Vec<Series> = passes
        .into_iter()
        .enumerate()
        .map(|(i, (pass, mut points))| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series {
                label: pass.unwrap_or_else(|| "NOPM".into()),
                points,
                dashed: false,
                color: i,
                line: true,
            }
        })
        .collect();
    if !several {
        tpm.sort_by(|a, b| a.0.total_cmp(&b.0));
        series.push(Series {
            label: "TPM (all types)".into(),
            points: tpm,
            dashed: true,
            color: 1,
            line: true,
        });
    }
    let xs = svg::auto_scale(pts.iter().map(|(_, o)| o.users as f64));
    Section {
        id: "oltp-nopm".into(),
        title: "New orders per minute vs virtual users".into(),
        note: format!(
            "TPC-C-derived workload (not audited TPC-C): New-Order transactions committed per minute of measured time, and transactions of every type per minute, for each virtual-user count{}.",
            if media { " (a media run: NOPM of each target and round)" } else { "" }
        ),
        svgs: vec![svg::line_chart(&LineChart {
            title: "NOPM vs virtual users".into(),
            x: Axis::new("virtual users", if xs == Scale::Log { Scale::Log2 } else { xs }, fmt::plain),
            y: Axis::new("per minute", Scale::Linear, fmt::count),
            series,
            shade: None,
            marks: vec![],
            hlines: vec![],
        })],
        table,
    }
}

fn latency_table(pts: &[(&Point, &OltpInfo)], media: bool) -> Section {
    let mut table = table_of(
        &[
            "users",
            "transaction",
            "count",
            "mean ns",
            "p50 ns",
            "p90 ns",
            "p95 ns",
            "p99 ns",
            "max ns",
            "rollbacks",
            "retries",
            "failures",
        ],
        media,
    );
    for (p, o) in pts {
        for (name, c) in &o.transactions {
            let lat = p.ops.get(name).and_then(|s| s.lat.as_ref());
            let pct = |q: f64| {
                lat.and_then(|l| l.percentile(q))
                    .map_or(String::new(), |v| v.to_string())
            };
            table.rows.push(row_of(
                vec![
                    o.users.to_string(),
                    name.clone(),
                    (c.commits + c.rollbacks).to_string(),
                    lat.map_or(String::new(), |l| format!("{:.0}", l.mean_ns)),
                    pct(50.0),
                    pct(90.0),
                    pct(95.0),
                    pct(99.0),
                    lat.map_or(String::new(), |l| l.max_ns.to_string()),
                    c.rollbacks.to_string(),
                    c.retries.to_string(),
                    c.failures.to_string(),
                ],
                p,
                media,
            ));
        }
    }
    Section {
        id: "oltp-latency".into(),
        title: "Transaction latency per virtual-user count".into(),
        note: "Client-side latency of each transaction type, retries included (TPC-C limits the 90th percentile).".into(),
        svgs: vec![],
        table,
    }
}

fn tps_over_time(pts: &[(&Point, &OltpInfo)], media: bool) -> Section {
    let mut table = table_of(&["users", "t (s)", "transactions/s", "new orders/s"], media);
    let mut series = Vec::new();
    for (i, (p, o)) in pts.iter().enumerate() {
        let mut line = Vec::new();
        for (k, s) in p.series.iter().enumerate() {
            let no = o.new_orders_per_s.get(k).copied().unwrap_or(0.0);
            line.push((
                s.t_s,
                s.iops,
                format!("{}, {:.0} s: {:.0} txn/s", who(p, o), s.t_s, s.iops),
            ));
            table.rows.push(row_of(
                vec![
                    o.users.to_string(),
                    format!("{:.0}", s.t_s),
                    format!("{:.1}", s.iops),
                    format!("{no:.1}"),
                ],
                p,
                media,
            ));
        }
        series.push(Series {
            label: who(p, o),
            points: line,
            dashed: false,
            color: i,
            line: true,
        });
    }
    Section {
        id: "oltp-tps".into(),
        title: "Transactions per second over time".into(),
        note: "Transactions of every type finished in each second of a point's measured time (the ramp is not shown).".into(),
        svgs: vec![svg::line_chart(&LineChart {
            title: "Transactions per second".into(),
            x: Axis::new("seconds", Scale::Linear, fmt::plain),
            y: Axis::new("transactions per second", Scale::Linear, fmt::count),
            series,
            shade: None,
            marks: vec![],
            hlines: vec![],
        })],
        table,
    }
}
