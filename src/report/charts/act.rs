//! ACT's table in the HTML and markdown reports (`--profile act` points,
//! `extra.act`): per point and slice (an hour), the share of small reads
//! over each threshold and ACT's PASS/FAIL, then the whole run.

use super::{Section, Table};
use crate::results::ext::act::ActPoint;
use crate::results::Results;

fn verdict(pass: Option<bool>) -> String {
    match pass {
        Some(true) => "PASS".into(),
        Some(false) => "FAIL".into(),
        None => "-".into(),
    }
}

fn rows(name: &str, a: &ActPoint) -> Vec<Vec<String>> {
    let pct = |v: &[f64]| v.iter().map(|p| format!("{p:.2}")).collect::<Vec<String>>();
    let mut out: Vec<Vec<String>> = a
        .slices
        .iter()
        .map(|s| {
            let mut row = vec![
                name.to_string(),
                format!("{:.0}", s.t_s),
                s.reads.to_string(),
            ];
            row.extend(pct(&s.over_pct));
            row.push(verdict(Some(s.pass)));
            row
        })
        .collect();
    let total: u64 = a.intervals.iter().map(|r| r.reads).sum();
    let mut all = vec![name.to_string(), "all".into(), total.to_string()];
    all.extend(pct(&a.over_pct));
    let mut v = verdict(a.verdict.as_ref().map(|v| v.pass));
    if let Some(l) = &a.lag_stop {
        v.push_str(&format!(
            " (stopped: {} {:.1} s behind)",
            l.stream,
            l.lag_ms / 1e3
        ));
    }
    all.push(v);
    out.push(all);
    out
}

pub fn act(r: &Results) -> Option<Section> {
    let points: Vec<(&str, &ActPoint)> = r
        .points
        .iter()
        .filter_map(|p| Some((p.name.as_str(), p.extra.act.as_deref()?)))
        .collect();
    let thresholds = &points.first()?.1.thresholds_ms;
    let mut header = vec!["point".to_string(), "from s".into(), "reads".into()];
    header.extend(thresholds.iter().map(|ms| format!("% > {ms} ms")));
    header.push("ACT".into());
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut table = Table::new(&header);
    for (name, a) in points {
        table.rows.extend(rows(name, a));
    }
    Some(Section {
        id: "act".into(),
        title: "ACT".into(),
        note: "Per hour of the run (act_latency's slices), the percentage of ACT's small reads \
               slower than each threshold, and ACT's standard acceptance: fewer than 5% over \
               1 ms, 1% over 8 ms and 0.1% over 64 ms in every hour; then the whole run."
            .into(),
        svgs: Vec::new(),
        table,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::ext::act::{ActSlice, ActVerdict};

    #[test]
    fn each_slice_and_the_run_are_a_row_with_the_verdict() {
        let json = include_str!("../../../tests/fixtures/report/device-loadlat.json");
        let mut r: Results = serde_json::from_str(json).expect("fixture");
        assert!(act(&r).is_none(), "no ACT point, no section");
        let a = ActPoint {
            thresholds_ms: vec![1, 8, 64],
            over_pct: vec![6.0, 0.0, 0.0],
            slices: vec![
                ActSlice {
                    t_s: 0.0,
                    len_s: 3600.0,
                    reads: 10,
                    over_pct: vec![1.0, 0.0, 0.0],
                    pass: true,
                },
                ActSlice {
                    t_s: 3600.0,
                    len_s: 3600.0,
                    reads: 10,
                    over_pct: vec![11.0, 0.0, 0.0],
                    pass: false,
                },
            ],
            verdict: Some(ActVerdict {
                pass: false,
                ..ActVerdict::default()
            }),
            ..ActPoint::default()
        };
        r.points[0].extra.act = Some(Box::new(a));
        let s = act(&r).expect("a section");
        assert_eq!(s.table.headers.last().unwrap(), "ACT");
        assert_eq!(s.table.rows.len(), 3);
        assert_eq!(s.table.rows[0].last().unwrap(), "PASS");
        assert_eq!(s.table.rows[1].last().unwrap(), "FAIL");
        assert_eq!(s.table.rows[2][1], "all");
        assert_eq!(s.table.rows[2].last().unwrap(), "FAIL");
    }
}
