//! ACT's table on a terminal (`--profile act`): per slice of the run, the
//! percentage of small reads slower than 1, 2, 4 ... 64 ms, then the whole
//! run, and what the large-block streams did.

use comfy_table::Table;

use crate::results::ext::act::{ActInterval, ActPoint};

/// At most this many slices are printed; the results keep every interval.
const MAX_ROWS: usize = 20;

/// Intervals merged into `MAX_ROWS` slices or fewer, each slice's
/// percentages weighted by its reads (exact: they are shares of counts).
fn slices(rows: &[ActInterval]) -> Vec<ActInterval> {
    let per = rows.len().div_ceil(MAX_ROWS).max(1);
    rows.chunks(per)
        .map(|c| {
            let reads: u64 = c.iter().map(|r| r.reads).sum();
            let width = c.first().map_or(0, |r| r.over_pct.len());
            let over_pct = (0..width)
                .map(|i| {
                    let over: f64 = c.iter().map(|r| r.over_pct[i] * r.reads as f64).sum();
                    if reads == 0 {
                        0.0
                    } else {
                        over / reads as f64
                    }
                })
                .collect();
            ActInterval {
                t_s: c[0].t_s,
                reads,
                over_pct,
            }
        })
        .collect()
}

/// The rows to print: the judged slices (hours), or for results written
/// before them, the intervals merged into at most `MAX_ROWS`.
fn rows(a: &ActPoint) -> Vec<(ActInterval, Option<bool>)> {
    match a.slices.is_empty() {
        true => slices(&a.intervals)
            .into_iter()
            .map(|r| (r, None))
            .collect(),
        false => a
            .slices
            .iter()
            .map(|s| {
                let r = ActInterval {
                    t_s: s.t_s,
                    reads: s.reads,
                    over_pct: s.over_pct.clone(),
                };
                (r, Some(s.pass))
            })
            .collect(),
    }
}

fn pass_cell(pass: Option<bool>) -> String {
    match pass {
        Some(true) => "PASS".into(),
        Some(false) => "FAIL".into(),
        None => String::new(),
    }
}

/// ACT's verdict in one line: PASS or FAIL, the criteria, why.
pub fn verdict_line(a: &ActPoint) -> Option<String> {
    let v = a.verdict.as_ref()?;
    let limits: Vec<String> = v
        .criteria
        .iter()
        .map(|c| format!("< {}% over {} ms", c.max_pct, c.over_ms))
        .collect();
    let mut line = format!(
        "ACT verdict: {} ({} in every {}; {} of {} slice(s) failed)",
        pass_cell(Some(v.pass)),
        limits.join(", "),
        slice_name(a.slice_s),
        v.failed_slices,
        a.slices.len()
    );
    if let Some(l) = &a.lag_stop {
        line.push_str(&format!(
            "; stopped: the {} fell {:.1} s behind (max-lag {} s)",
            l.stream,
            l.lag_ms / 1e3,
            l.max_lag_s
        ));
    }
    Some(line)
}

fn slice_name(slice_s: Option<f64>) -> String {
    match slice_s {
        Some(3600.0) => "hour".into(),
        Some(s) => format!("{s:.0} s"),
        None => "slice".into(),
    }
}

pub fn table(a: &ActPoint) -> String {
    let mut t = Table::new();
    t.load_preset(comfy_table::presets::UTF8_BORDERS_ONLY);
    let mut header = vec!["from s".to_string(), "reads".into()];
    header.extend(a.thresholds_ms.iter().map(|ms| format!("% > {ms} ms")));
    let judged = a.verdict.is_some();
    if judged {
        header.push("ACT".into());
    }
    t.set_header(header);
    let pct = |v: &[f64]| v.iter().map(|p| format!("{p:.2}")).collect::<Vec<_>>();
    for (r, pass) in rows(a) {
        let mut row = vec![format!("{:.0}", r.t_s), r.reads.to_string()];
        row.extend(pct(&r.over_pct));
        if judged {
            row.push(pass_cell(pass));
        }
        t.add_row(row);
    }
    let total: u64 = a.intervals.iter().map(|r| r.reads).sum();
    let mut row = vec!["all".to_string(), total.to_string()];
    row.extend(pct(&a.over_pct));
    if let Some(v) = &a.verdict {
        row.push(pass_cell(Some(v.pass)));
    }
    t.add_row(row);
    let stream = |name: &str, s: &crate::results::ext::act::LargeBlockStream| {
        format!(
            "  large-block {name}: {} at {:.2}/s of {:.2}/s, mean {:.2} ms, worst lag {:.0} ms",
            s.ops,
            s.rate_per_s,
            a.large_block_rate_per_s,
            s.lat.as_ref().map_or(0.0, |l| l.mean_ns / 1e6),
            s.max_lag_ms
        )
    };
    let per = match judged {
        true => format!("per {}", slice_name(a.slice_s)),
        false => "per slice".into(),
    };
    let verdict = verdict_line(a)
        .map(|l| format!("{l}\n"))
        .unwrap_or_default();
    format!(
        "ACT {}x: small reads slower than each threshold (device time of each read), {per}\n{t}\n{verdict}{}\n{}\n",
        a.scale,
        stream("writes", &a.large_block_writes),
        stream("reads", &a.large_block_reads),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_weigh_intervals_by_their_reads() {
        let row = |t_s: f64, reads: u64, p: f64| ActInterval {
            t_s,
            reads,
            over_pct: vec![p],
        };
        let rows: Vec<ActInterval> = (0..40)
            .map(|i| row(i as f64, 100 * (i % 2 + 1), (i % 2) as f64))
            .collect();
        let s = slices(&rows);
        assert_eq!(s.len(), 20);
        // 100 reads at 0% and 200 at 1%: 2/300 of them over.
        assert!((s[0].over_pct[0] - 200.0 / 300.0).abs() < 1e-9);
        assert_eq!(s[0].reads, 300);
        let a = ActPoint {
            scale: 2.0,
            thresholds_ms: vec![1],
            intervals: rows,
            over_pct: vec![0.5],
            ..ActPoint::default()
        };
        let text = table(&a);
        assert!(
            text.contains("ACT 2x") && text.contains("% > 1 ms") && text.contains("all"),
            "{text}"
        );
    }

    #[test]
    fn judged_slices_print_pass_or_fail_and_the_verdict() {
        let rows: Vec<ActInterval> = (0..7200)
            .map(|i| ActInterval {
                t_s: i as f64,
                reads: 10,
                over_pct: vec![if i < 3600 { 1.0 } else { 9.0 }, 0.0, 0.0],
            })
            .collect();
        let thresholds = [1, 8, 64];
        let slices = crate::analysis::act::slices(&rows, &thresholds, 3600.0);
        let a = ActPoint {
            scale: 1.0,
            large_block_rate_per_s: 2000.0 / 85.0,
            thresholds_ms: thresholds.to_vec(),
            intervals: rows,
            over_pct: vec![5.0, 0.0, 0.0],
            slice_s: Some(3600.0),
            verdict: Some(crate::analysis::act::verdict(&slices, None)),
            slices,
            ..ActPoint::default()
        };
        let text = table(&a);
        assert!(text.contains("per hour"), "{text}");
        assert_eq!(text.matches("PASS").count(), 1, "{text}");
        assert!(text.contains("ACT verdict: FAIL"), "{text}");
        assert!(text.contains("of 23.53/s"), "{text}");
        assert!(text.contains("1 of 2 slice(s) failed"), "{text}");
    }
}
