//! Intel's NoSQL table on a terminal: one row per kv phase of a results
//! file (`extra.kv.intel`), figures a phase did not measure shown as
//! "not measured".

use crate::plan::parse::format_ns;
use crate::results::Results;
use comfy_table::Table;

const NOT_MEASURED: &str = "not measured";

fn or_not_measured(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    or(v, NOT_MEASURED, f)
}

fn or(v: Option<f64>, none: &str, f: impl Fn(f64) -> String) -> String {
    v.map(f).unwrap_or_else(|| none.to_string())
}

/// The table's header and rows (the terminal's and the HTML report's),
/// and the threshold as text; `None` when no point carries the row.
pub fn cells(r: &Results) -> Option<(String, Vec<String>, Vec<Vec<String>>)> {
    let points: Vec<_> = r
        .points
        .iter()
        .filter_map(|p| Some((p, p.extra.kv.as_ref()?.intel.as_ref()?)))
        .collect();
    let threshold = format_ns(points.first()?.1.threshold_ns as f64);
    let header = vec![
        "phase".to_string(),
        "TPS".into(),
        format!("reads <= {threshold}"),
        format!("writes <= {threshold}"),
        "read stdev".into(),
        "write stdev".into(),
        "dev read MiB/s".into(),
        "dev write MiB/s".into(),
        "avg queue".into(),
        "dev latency".into(),
        "CPU busy".into(),
    ];
    let pct = |v: f64| format!("{v:.2}%");
    let ns = |v: f64| format_ns(v);
    let num = |v: f64| format!("{v:.1}");
    let rows = points
        .into_iter()
        .map(|(p, i)| {
            vec![
                p.name.clone(),
                format!("{:.0}", i.tps),
                or(i.reads_under_pct, "no reads", pct),
                or(i.writes_under_pct, "no writes", pct),
                or(i.read_stdev_ns, "no reads", ns),
                or(i.write_stdev_ns, "no writes", ns),
                or_not_measured(i.device_read_mib_s, num),
                or_not_measured(i.device_write_mib_s, num),
                or_not_measured(i.device_avg_queue, |v| format!("{v:.2}")),
                or_not_measured(i.device_latency_ms, |v| format!("{v:.2} ms")),
                or_not_measured(i.cpu_busy_pct, |v| format!("{v:.0}%")),
            ]
        })
        .collect();
    Some((threshold, header, rows))
}

/// The terminal table, or `None` when no point carries the row.
pub fn table(r: &Results) -> Option<String> {
    let (threshold, header, rows) = cells(r)?;
    let mut t = Table::new();
    t.load_preset(comfy_table::presets::UTF8_BORDERS_ONLY);
    t.set_header(header);
    for row in rows {
        t.add_row(row);
    }
    Some(format!(
        "Intel's table (reads and writes at or under {threshold}; device from /proc/diskstats, CPU busy of the whole machine):\n{t}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::ext::intel::IntelRow;
    use crate::results::ext::KvPhaseInfo;

    #[test]
    fn unmeasured_figures_say_so() {
        let fixture = include_str!("../../tests/fixtures/report/kv-ycsb-rocksdb.json");
        let mut r: Results = serde_json::from_str(fixture).expect("fixture");
        assert!(table(&r).is_none(), "older files have no row");
        let p = &mut r.points[0];
        p.name = "fillrandom".into();
        let kv = p
            .extra
            .kv
            .get_or_insert_with(|| Box::new(KvPhaseInfo::default()));
        kv.intel = Some(IntelRow {
            tps: 1234.4,
            threshold_ns: 1_000_000,
            writes_under_pct: Some(99.5),
            write_stdev_ns: Some(12_000.0),
            ..IntelRow::default()
        });
        let t = table(&r).expect("a row");
        let row = t
            .lines()
            .find(|l| l.contains("fillrandom"))
            .expect("the phase's row");
        assert!(row.contains("1234") && row.contains("99.50%"), "{row}");
        assert_eq!(row.matches("no reads").count(), 2, "{row}");
        assert_eq!(row.matches("not measured").count(), 5, "{row}");
        assert!(
            t.contains("reads <= 1ms") || t.contains("reads <= 1.00ms"),
            "{t}"
        );
    }
}
