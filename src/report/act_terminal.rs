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

pub fn table(a: &ActPoint) -> String {
    let mut t = Table::new();
    t.load_preset(comfy_table::presets::UTF8_BORDERS_ONLY);
    let mut header = vec!["from s".to_string(), "reads".into()];
    header.extend(a.thresholds_ms.iter().map(|ms| format!("% > {ms} ms")));
    t.set_header(header);
    let pct = |v: &[f64]| v.iter().map(|p| format!("{p:.2}")).collect::<Vec<_>>();
    for r in slices(&a.intervals) {
        let mut row = vec![format!("{:.0}", r.t_s), r.reads.to_string()];
        row.extend(pct(&r.over_pct));
        t.add_row(row);
    }
    let total: u64 = a.intervals.iter().map(|r| r.reads).sum();
    let mut row = vec!["all".to_string(), total.to_string()];
    row.extend(pct(&a.over_pct));
    t.add_row(row);
    let stream = |name: &str, s: &crate::results::ext::act::LargeBlockStream| {
        format!(
            "  large-block {name}: {} at {:.1}/s of {:.1}/s, mean {:.2} ms, worst lag {:.0} ms",
            s.ops,
            s.rate_per_s,
            a.large_block_rate_per_s,
            s.lat.as_ref().map_or(0.0, |l| l.mean_ns / 1e6),
            s.max_lag_ms
        )
    };
    format!(
        "ACT {}x: small reads slower than each threshold (device time of each read), per slice\n{t}\n{}\n{}\n",
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
}
