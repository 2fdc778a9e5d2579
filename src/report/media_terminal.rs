//! A media run on a terminal (`device`, `kv` and `run` over several
//! targets): the comparison table of `analysis.media` (per workload, each
//! target's throughput, its ratio to the baseline with the range over
//! the rounds, and the mean-latency ratio), the wall time spent outside
//! the measured intervals (`extra.media.overhead`) and the run's warnings
//! (a busy machine among them), which are not only for the JSON and HTML.

use crate::analysis::media::MediaAnalysis;
use crate::results::sections::MediaOverhead;
use crate::results::Results;

/// The terminal table: per workload, each target's throughput and ratios.
pub fn table(m: &MediaAnalysis) -> Vec<String> {
    let width = m
        .rows
        .iter()
        .map(|r| r.workload.len())
        .max()
        .unwrap_or(0)
        .max(8);
    let twidth = m
        .rows
        .iter()
        .map(|r| r.target.len())
        .max()
        .unwrap_or(0)
        .max(6);
    let mut out = vec![format!(
        "{:<width$} {:<twidth$} {:>14} {:>8} {:>34} {:>9} {:>12}",
        "workload",
        "target",
        "throughput",
        format!("vs {}", m.baseline),
        "per-round ratios: median (range)",
        "mean lat",
        format!("vs {}", m.baseline)
    )];
    let times = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.2}x"));
    for r in &m.rows {
        let rounds = match (r.vs_baseline, r.vs_min, r.vs_max) {
            (Some(v), Some(lo), Some(hi)) => format!(
                "{v:.2}x ({lo:.2}..{hi:.2}){}",
                if r.noise { " ~noise" } else { "" }
            ),
            _ => "-".into(),
        };
        let (ratio, lat_ratio) = crate::analysis::media::shown_ratios(m, r);
        out.push(format!(
            "{:<width$} {:<twidth$} {:>14} {:>8} {:>34} {:>9} {:>12}",
            r.workload,
            r.target,
            format!("{:.0} {}", r.throughput, r.unit),
            times(ratio),
            rounds,
            r.mean_lat_ns
                .map_or_else(|| "-".to_string(), crate::figures::fmt::ns3),
            times(lat_ratio)
        ));
    }
    out.push(
        "(throughput and mean latency: medians over the rounds; \"vs\" is their ratio; the per-round ratios pair each round with the baseline's)"
            .into(),
    );
    out
}

/// The line of an overhead record (`campaign::Overhead`).
pub fn overhead_line(o: &MediaOverhead) -> String {
    let share = o
        .share_of_measured
        .map(|s| format!(" ({:.1}% of the measured time)", s * 100.0))
        .unwrap_or_default();
    format!(
        "outside the measured intervals: {:.1} s{share}: set-up {:.1} s, between points {:.1} s, teardown {:.1} s; measured {:.1} s",
        o.overhead_s, o.setup_s, o.between_s, o.teardown_s, o.measured_s
    )
}

/// A media run's closing summary (`session::Presenter::summary`): its
/// `summary` lines, after a blank line.
pub fn closing_summary(r: &Results, _secs: f64) -> String {
    format!("\n{}", summary(r).join("\n"))
}

/// What a media run prints at its end: the table, the overhead, then the
/// warnings (`device`, `kv` and `run` over several targets alike).
pub fn summary(r: &Results) -> Vec<String> {
    let mut out = r.analysis.media.as_ref().map(table).unwrap_or_default();
    if let Some(line) = r
        .extra
        .media()
        .and_then(|m| m.overhead.as_ref().map(overhead_line))
    {
        out.push(line);
    }
    for w in crate::report::summary::warnings(r) {
        out.push(format!("warning: {w}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 44 item 9: a media run's warnings were only in the JSON and HTML.
    #[test]
    fn the_summary_ends_with_the_run_s_warnings() {
        let mut prov = crate::results::Provenance::minimal();
        prov.load_average = [8.0, 8.0, 8.0];
        prov.cpu_count = 2;
        let mut r = Results::new("device", prov);
        r.warnings.extend(r.provenance.busy_warning());
        let lines = summary(&r);
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("warning: the machine was busy at start")),
            "{lines:?}"
        );
    }

    /// Issue 44 item 15: the table gave a mean-latency ratio without the
    /// latencies it divides; each row shows its mean beside the ratio.
    #[test]
    fn the_table_shows_the_mean_latency_beside_its_ratio() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/report/media.json");
        let r = Results::read(&path).unwrap();
        let m = r.analysis.media.as_ref().expect("media analysis");
        let lines = table(m);
        assert!(lines[0].contains("mean lat"), "{}", lines[0]);
        let row = &m.rows[0];
        let want = crate::figures::fmt::ns3(row.mean_lat_ns.unwrap());
        assert!(lines[1].contains(&want), "{want} not in {}", lines[1]);
    }
}
