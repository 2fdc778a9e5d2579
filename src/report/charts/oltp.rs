//! OLTP (TPC-C-derived) charts: NOPM against virtual users, the latency of
//! each transaction type per user count (table), transactions per second
//! over each point's measured time, and the server's use and storage per
//! point (table, from `extra.server`). Read from `extra.oltp`, the points'
//! ops and series; a file without oltp points has none.

use super::{Section, Table};
use crate::oltp::point::OltpInfo;
use crate::report::fmt;
use crate::report::svg::{self, Axis, LineChart, Scale, Series};
use crate::results::{Point, Results};

fn oltp_points(r: &Results) -> Vec<(&Point, &OltpInfo)> {
    r.points
        .iter()
        .filter_map(|p| p.extra.oltp.as_deref().map(|o| (p, o)))
        .collect()
}

/// Every oltp section of the report.
pub fn oltp(r: &Results) -> Vec<Section> {
    let pts = oltp_points(r);
    if pts.is_empty() {
        return Vec::new();
    }
    let mut out = vec![
        nopm_vs_users(&pts),
        latency_table(&pts),
        tps_over_time(&pts),
    ];
    out.extend(server_table(&pts));
    out
}

fn server_table(pts: &[(&Point, &OltpInfo)]) -> Option<Section> {
    let rows = pts.iter().map(|(p, o)| (o.users.to_string(), *p));
    super::server::server_table(
        "users",
        rows,
        "oltp-server",
        "The database server per virtual-user count",
        "transaction",
    )
}

fn nopm_vs_users(pts: &[(&Point, &OltpInfo)]) -> Section {
    let mut table = Table::new(&[
        "users",
        "NOPM",
        "TPM",
        "efficiency %",
        "engine",
        "warehouses",
    ]);
    let mut nopm = Vec::new();
    let mut tpm = Vec::new();
    for (_, o) in pts {
        let u = o.users as f64;
        nopm.push((u, o.nopm, format!("{} users: NOPM {:.0}", o.users, o.nopm)));
        tpm.push((u, o.tpm, format!("{} users: TPM {:.0}", o.users, o.tpm)));
        table.rows.push(vec![
            o.users.to_string(),
            format!("{:.0}", o.nopm),
            format!("{:.0}", o.tpm),
            format!("{:.1}", o.efficiency_pct),
            o.engine.clone(),
            o.warehouses.to_string(),
        ]);
    }
    nopm.sort_by(|a, b| a.0.total_cmp(&b.0));
    tpm.sort_by(|a, b| a.0.total_cmp(&b.0));
    let series = vec![
        Series {
            label: "NOPM".into(),
            points: nopm,
            dashed: false,
            color: 0,
            line: true,
        },
        Series {
            label: "TPM (all types)".into(),
            points: tpm,
            dashed: true,
            color: 1,
            line: true,
        },
    ];
    let xs = svg::auto_scale(series[0].points.iter().map(|p| p.0));
    Section {
        id: "oltp-nopm".into(),
        title: "New orders per minute vs virtual users".into(),
        note: "TPC-C-derived workload (not audited TPC-C): New-Order transactions committed per minute of measured time, and transactions of every type per minute, for each virtual-user count.".into(),
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

fn latency_table(pts: &[(&Point, &OltpInfo)]) -> Section {
    let mut table = Table::new(&[
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
    ]);
    for (p, o) in pts {
        for (name, c) in &o.transactions {
            let lat = p.ops.get(name).and_then(|s| s.lat.as_ref());
            let pct = |q: f64| {
                lat.and_then(|l| l.percentile(q))
                    .map_or(String::new(), |v| v.to_string())
            };
            table.rows.push(vec![
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
            ]);
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

fn tps_over_time(pts: &[(&Point, &OltpInfo)]) -> Section {
    let mut table = Table::new(&["users", "t (s)", "transactions/s", "new orders/s"]);
    let mut series = Vec::new();
    for (i, (p, o)) in pts.iter().enumerate() {
        let mut line = Vec::new();
        for (k, s) in p.series.iter().enumerate() {
            let no = o.new_orders_per_s.get(k).copied().unwrap_or(0.0);
            line.push((
                s.t_s,
                s.iops,
                format!("{} users, {:.0} s: {:.0} txn/s", o.users, s.t_s, s.iops),
            ));
            table.rows.push(vec![
                o.users.to_string(),
                format!("{:.0}", s.t_s),
                format!("{:.1}", s.iops),
                format!("{no:.1}"),
            ]);
        }
        series.push(Series {
            label: format!("{} users", o.users),
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
