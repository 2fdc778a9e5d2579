//! CSV output: any report table, and one row per point and op kind for
//! `iolab report --format csv`.

use crate::report::charts::Table;
use crate::results::Results;

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

/// The points as a flat table: params as columns, one row per op kind.
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
    for h in [
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
    ] {
        t.headers.push(h.into());
    }
    for p in &r.points {
        for (op, o) in &p.ops {
            let mut row = vec![p.name.clone()];
            row.extend(
                keys.iter()
                    .map(|k| p.params.get(k).cloned().unwrap_or_default()),
            );
            let l = o.lat.as_ref().or(o.clat.as_ref());
            let pc = |q: f64| {
                l.and_then(|l| l.percentile(q))
                    .map(|v| v.to_string())
                    .unwrap_or_default()
            };
            row.extend([
                op.clone(),
                o.ops.to_string(),
                o.bytes.to_string(),
                format!("{:.1}", o.iops),
                format!("{:.3}", o.mib_s),
                l.map(|l| format!("{:.0}", l.mean_ns)).unwrap_or_default(),
                pc(50.0),
                pc(99.0),
                pc(99.9),
                l.map(|l| l.max_ns.to_string()).unwrap_or_default(),
                format!("{:.1}", p.cpu.usr_pct),
                format!("{:.1}", p.cpu.sys_pct),
                format!("{:.3}", p.duration_ns as f64 / 1e9),
            ]);
            t.rows.push(row);
        }
    }
    t
}

pub fn results_csv(r: &Results) -> String {
    table_csv(&points_table(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"x\""), "\"say \"\"x\"\"\"");
        assert_eq!(field("plain"), "plain");
    }
}
