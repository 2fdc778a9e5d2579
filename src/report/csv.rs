//! CSV output: any report table, and one row per point and op kind for
//! `iolab report --format csv`.

use std::collections::BTreeSet;

use crate::figures::{self, Basis, FigureId, Measure};
use crate::report::charts::Table;
use crate::results::{op_order, Family};
use crate::results::{Point, Results};

/// Quote a field when it holds a comma, quote or newline.
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub fn table_csv(t: &Table) -> String {
    let mut out = String::new();
    let line = |cells: &[String]| cells.iter().map(|c| field(c)).collect::<Vec<_>>().join(",");
    out.push_str(&line(&t.headers));
    out.push('\n');
    for r in &t.rows {
        out.push_str(&line(r));
        out.push('\n');
    }
    out
}

/// The columns after the params, names kept from before the catalogue
/// (scripts parse them); the catalogue's kind, basis, throughput and oltp
/// figures follow.
const COLUMNS: [&str; 19] = [
    "op",
    "ops",
    "bytes",
    "iops",
    "mib_s",
    "lat_mean_ns",
    "lat_p50_ns",
    "lat_p99_ns",
    "lat_p99.9_ns",
    "lat_max_ns",
    "usr_pct",
    "sys_pct",
    "duration_s",
    "kind",
    "lat_basis",
    "throughput",
    "throughput_unit",
    "nopm",
    "tpm",
];

/// The latency columns, in `COLUMNS`' order.
const LATENCIES: [FigureId; 5] = [
    FigureId::LatMean,
    FigureId::LatP50,
    FigureId::LatP99,
    FigureId::LatP999,
    FigureId::LatMax,
];

/// The points as a flat table: params as columns, one row per op kind
/// and latency basis (open loop: from issue, then from the intended
/// start; a fio import without total-latency percentiles: total, then
/// clat). Values through the catalogue: a cell is empty where the figure
/// was not measured or the point's kind has none (a kv phase's IOPS and
/// MiB/s: its `throughput` is in ops/s), never 0. An operation's counts
/// and rates are on its first row only, so that sums over rows hold.
pub fn points_table(r: &Results) -> Table {
    let mut keys: Vec<String> = Vec::new();
    for p in &r.points {
        for k in p.params.keys() {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    let mut t = Table::default();
    t.headers.push("point".into());
    t.headers.extend(keys.iter().cloned());
    t.headers.extend(COLUMNS.iter().map(|c| c.to_string()));
    // Points measured on several hosts: the aggregate's rows say "all",
    // each host's rows follow with its name (and group: `h0 [readers]`),
    // then each host group's (`group readers`), as in the hosts' table (a
    // column only then).
    let hosts = r.points.iter().any(|p| p.extra.hosts.is_some());
    if hosts {
        t.headers.push("host".into());
    }
    for p in &r.points {
        let params: Vec<String> = keys
            .iter()
            .map(|k| p.params.get(k).cloned().unwrap_or_default())
            .collect();
        let mut parts = vec![(p.clone(), hosts.then(|| "all".to_string()))];
        if let Some(h) = &p.extra.hosts {
            parts.extend(
                h.per_host
                    .iter()
                    .chain(&h.groups)
                    .map(|r| (r.as_point(p), Some(r.label()))),
            );
        }
        for (part, host) in &parts {
            for (op, basis, first) in op_rows(part) {
                let mut row = vec![p.name.clone()];
                row.extend(params.iter().cloned());
                row.extend(op_cells(part, op, basis, first));
                if hosts {
                    row.push(host.clone().unwrap_or_default());
                }
                t.rows.push(row);
            }
        }
    }
    t
}

/// (op, basis, is the op's first row) for every row of a point: an op's
/// bases in `Basis::ALL` order as the catalogue has them; one row without
/// a basis for an op without a latency.
fn op_rows(p: &Point) -> Vec<(&str, Option<Basis>, bool)> {
    let mut ops: Vec<&str> = p.ops.keys().map(String::as_str).collect();
    ops.sort_by_key(|o| op_order(o));
    let mut out = Vec::new();
    for op in ops {
        let bases: BTreeSet<Basis> = LATENCIES
            .iter()
            .flat_map(|f| Measure::of_point(*f, p))
            .filter(|m| m.op.as_deref() == Some(op))
            .filter_map(|m| m.basis)
            .collect();
        if bases.is_empty() {
            out.push((op, None, true));
        }
        for (i, b) in bases.into_iter().enumerate() {
            out.push((op, Some(b), i == 0));
        }
    }
    out
}

/// A latency on `basis` where the catalogue has it for this point (fio's
/// clat-only percentiles are not total latencies), in whole ns.
fn latency_cell(p: &Point, figure: FigureId, op: &str, basis: Option<Basis>) -> String {
    let Some(b) = basis else {
        return String::new();
    };
    let m = Measure::latency(figure, op, b);
    if !Measure::of_point(figure, p).contains(&m) {
        return String::new();
    }
    m.of(p).map(|v| format!("{v:.0}")).unwrap_or_default()
}

/// The cells of `COLUMNS` for one row of point `p`.
fn op_cells(p: &Point, op: &str, basis: Option<Basis>, first: bool) -> Vec<String> {
    let kind = p.family();
    let o = &p.ops[op];
    let rate = |figure, digits: usize| {
        let m = Measure {
            figure,
            op: Some(op.to_string()),
            basis: None,
        };
        m.of(p)
            .filter(|_| first)
            .map(|v| format!("{v:.digits$}"))
            .unwrap_or_default()
    };
    let count = |v: u64| if first { v.to_string() } else { String::new() };
    let tput = figures::throughput(kind);
    let throughput = rate(tput, 1);
    let whole = |f| Measure::whole(f).of(p).map(|v| format!("{v:.1}"));
    let mut row = vec![
        op.to_string(),
        count(o.ops),
        if kind == Family::Oltp {
            String::new()
        } else {
            count(o.bytes)
        },
        rate(FigureId::Iops, 1),
        rate(FigureId::MibS, 3),
    ];
    row.extend(LATENCIES.iter().map(|f| latency_cell(p, *f, op, basis)));
    row.extend([
        format!("{:.1}", p.cpu.usr_pct),
        format!("{:.1}", p.cpu.sys_pct),
        format!("{:.3}", p.duration_ns as f64 / 1e9),
        kind.name().to_string(),
        basis.map(|b| b.name().to_string()).unwrap_or_default(),
        throughput.clone(),
        if throughput.is_empty() {
            ""
        } else {
            tput.def().name
        }
        .to_string(),
        whole(FigureId::Nopm).unwrap_or_default(),
        whole(FigureId::Tpm).unwrap_or_default(),
    ]);
    row
}

pub fn results_csv(r: &Results) -> String {
    table_csv(&points_table(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Results {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/report")
            .join(name);
        let text = std::fs::read_to_string(&path).unwrap();
        if crate::report::fio_json::looks_like_fio(&text) {
            return crate::report::fio_json::from_fio_text(&text).unwrap();
        }
        Results::read(&path).unwrap()
    }

    /// The rows of `point` as column name -> cell maps.
    fn rows(r: &Results, point: &str) -> Vec<std::collections::BTreeMap<String, String>> {
        let t = points_table(r);
        t.rows
            .iter()
            .filter(|row| row[0] == point)
            .map(|row| t.headers.iter().cloned().zip(row.iter().cloned()).collect())
            .collect()
    }

    /// Open loop: a row from issue with the op's counts, then one from the
    /// intended start with its own latencies and no counts.
    #[test]
    fn an_open_loop_point_has_a_row_per_basis() {
        let r = fixture("device-loadlat.json");
        let p = r
            .points
            .iter()
            .find(|p| p.extra.open_loop.is_some())
            .unwrap();
        let want = p.extra.open_loop.as_ref().unwrap().lat_from_intended["read"]
            .percentile(99.0)
            .unwrap();
        let rows = rows(&r, &p.name);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0]["lat_basis"], "from issue");
        assert_eq!(rows[1]["lat_basis"], "from intended start");
        assert_eq!(rows[1]["lat_p99_ns"], want.to_string());
        assert!(!rows[0]["iops"].is_empty() && rows[1]["iops"].is_empty());
        assert_eq!(rows[0]["kind"], "device");
        assert_eq!(rows[0]["throughput_unit"], "IOPS");
    }

    /// fio reported clat's percentiles only: they are on a clat row, and
    /// the total row has fio's lat mean and max, no percentiles.
    #[test]
    fn a_fio_clat_only_import_says_clat() {
        let r = fixture("fio-randread.json");
        let rows = rows(&r, "randread");
        assert_eq!(rows[0]["lat_basis"], "total");
        assert!(rows[0]["lat_p99_ns"].is_empty() && !rows[0]["lat_mean_ns"].is_empty());
        assert_eq!(rows[1]["lat_basis"], "clat");
        let clat = r.points[0].ops["read"].clat.as_ref().unwrap();
        assert_eq!(
            rows[1]["lat_p99_ns"],
            clat.percentile(99.0).unwrap().to_string()
        );
    }

    /// A kv phase has no IOPS or MiB/s: its throughput is in ops/s; an
    /// oltp point's NOPM and TPM have columns of their own.
    #[test]
    fn kinds_carry_their_own_throughput() {
        let r = fixture("kv-ycsb-rocksdb.json");
        let row = &rows(&r, "ycsb-a.load")[0];
        assert_eq!(row["kind"], "kv");
        assert_eq!((row["iops"].as_str(), row["mib_s"].as_str()), ("", ""));
        assert_eq!(row["throughput"], "52370.1");
        assert_eq!(row["throughput_unit"], "ops/s");
        assert_eq!(row["nopm"], "");
        let r = fixture("oltp-postgres.json");
        let row = &rows(&r, "oltp.users1")[0];
        assert_eq!(row["kind"], "oltp");
        assert_eq!(row["throughput_unit"], "txn/s");
        assert_eq!(
            (row["nopm"].as_str(), row["tpm"].as_str()),
            ("4950.0", "10920.0")
        );
        assert_eq!(row["bytes"], "", "transactions count no bytes");
    }

    /// Issue 46: a point measured on several hosts has the aggregate's
    /// rows ("all"), then each host's, every operation type on each.
    #[test]
    fn hosts_have_rows_of_their_own() {
        let mut r = fixture("kv-ycsb-rocksdb.json");
        let p = r
            .points
            .iter_mut()
            .find(|p| p.name == "ycsb-a.run")
            .unwrap();
        crate::results::ext::on_hosts(p, &["h1", "h2"]);
        let rows = rows(&r, "ycsb-a.run");
        let of = |host: &str| -> Vec<&str> {
            rows.iter()
                .filter(|r| r["host"] == host)
                .map(|r| r["op"].as_str())
                .collect()
        };
        assert_eq!(of("all"), ["read", "update"]);
        assert_eq!(of("h1"), ["read", "update"]);
        assert_eq!(of("h2"), ["read", "update"]);
        let h2 = rows
            .iter()
            .find(|r| r["host"] == "h2" && r["op"] == "update")
            .unwrap();
        assert!(!h2["lat_p99_ns"].is_empty(), "{h2:?}");
        let plain = fixture("kv-ycsb-rocksdb.json");
        assert!(!points_table(&plain).headers.iter().any(|h| h == "host"));
    }

    #[test]
    fn quoting() {
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"x\""), "\"say \"\"x\"\"\"");
        assert_eq!(field("plain"), "plain");
    }
}
