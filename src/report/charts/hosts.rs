//! Points measured on several hosts at once (`--hosts`): each host's IOPS
//! per point, stacked so a bar's height is the aggregate, and a table of
//! every host's row beside the aggregate, with the start skew; and the
//! target host's disk bandwidth over time (`--target-host`); each host's
//! throughput over time (`per_host_series`).

use super::{Section, Table};
use crate::figures::fmt;
use crate::report::hosts_table;
use crate::report::svg::{self, Axis, BarChart, LineChart, Scale, Series};
use crate::results::ext::TargetHostCpu;
use crate::results::Param;
use crate::results::{Point, Results};

pub fn per_host(r: &Results) -> Option<Section> {
    let points: Vec<_> = r
        .points
        .iter()
        .filter_map(|p| p.extra.hosts.as_ref().map(|h| (p, h)))
        .collect();
    if points.is_empty() {
        return None;
    }
    let mut headers = vec!["point"];
    headers.extend(hosts_table::HEADER);
    let mut table = Table::new(&headers);
    for (p, h) in &points {
        for row in hosts_table::rows(p, h) {
            let mut cells = vec![p.name.clone()];
            cells.extend(row);
            table.rows.push(cells);
        }
    }
    let mut hosts: Vec<String> = Vec::new();
    for (_, h) in &points {
        for row in &h.per_host {
            if !hosts.contains(&row.host) {
                hosts.push(row.host.clone());
            }
        }
    }
    let stacks = hosts
        .iter()
        .map(|name| {
            let per_point = points
                .iter()
                .map(|(_, h)| {
                    h.per_host
                        .iter()
                        .find(|row| &row.host == name)
                        .map_or(0.0, |row| row.iops)
                })
                .collect();
            (name.clone(), per_point)
        })
        .collect();
    // The throughput in the points' own figure: ops/s for kv phases.
    let fams: std::collections::BTreeSet<_> = points.iter().map(|(p, _)| p.family()).collect();
    let unit = match fams.into_iter().collect::<Vec<_>>()[..] {
        [f] => crate::figures::throughput(f).def().name,
        _ => "throughput",
    };
    let chart = svg::bar_chart(&BarChart {
        title: format!("{unit} per host"),
        y_title: format!("{unit} (stacked hosts: the bar is the aggregate)"),
        y_fmt: crate::figures::fmt::count,
        categories: points.iter().map(|(p, _)| p.name.clone()).collect(),
        stacks,
        stacked: true,
    });
    let worst_skew = points
        .iter()
        .map(|(_, h)| h.start_skew_ns)
        .max()
        .unwrap_or(0);
    Some(Section {
        id: "hosts".into(),
        title: "Hosts".into(),
        note: format!(
            "Every point ran on {} host(s) at once, released at one instant (largest start skew {:.0} us); the aggregate's latencies come from the hosts' histograms added, never from averaged percentiles. A host lost during a point is missing from its bar.",
            hosts.len(),
            worst_skew as f64 / 1e3
        ),
        svgs: vec![chart],
        table,
    })
}

/// The points whose hosts kept their own series, at most this many
/// charts (the table has every one).
const MAX_SERIES_CHARTS: usize = 8;

/// Each host's throughput second by second, one chart per point measured
/// on several hosts (the hosts' series on the run's clock: each from its
/// release, which is within the start skew of the common start), and a
/// table of every interval; only when the hosts kept their series
/// (results written since issue 46).
pub fn per_host_series(r: &Results) -> Option<Section> {
    let points: Vec<_> = r
        .points
        .iter()
        .filter_map(|p| p.extra.hosts.as_ref().map(|h| (p, h)))
        .filter(|(_, h)| h.per_host.iter().any(|row| !row.series.is_empty()))
        .collect();
    if points.is_empty() {
        return None;
    }
    let mut table = Table::new(&[
        "point",
        "host",
        "second",
        "throughput",
        "MiB/s",
        "mean",
        "p99",
    ]);
    let mut svgs = Vec::new();
    for (p, h) in &points {
        let tput = crate::figures::throughput(p.family()).def();
        let mut series = Vec::new();
        for (i, row) in h.per_host.iter().enumerate() {
            let at = row.start_offset_ns as f64 / 1e9;
            let mut pts = Vec::new();
            for s in &row.series {
                let x = at + s.t_s;
                pts.push((
                    x,
                    s.iops,
                    format!(
                        "{} at {}: {}",
                        row.host,
                        fmt::secs(x),
                        tput.with_unit(s.iops)
                    ),
                ));
                table.rows.push(vec![
                    p.name.clone(),
                    row.host.clone(),
                    fmt::secs(x),
                    tput.with_unit(s.iops),
                    format!("{:.1}", s.mib_s),
                    crate::plan::parse::format_ns(s.mean_ns),
                    s.p99_ns
                        .map(|v| crate::plan::parse::format_ns(v as f64))
                        .unwrap_or_else(|| "-".into()),
                ]);
            }
            series.push(Series {
                label: row.host.clone(),
                points: pts,
                dashed: false,
                color: i,
                line: true,
            });
        }
        if svgs.len() < MAX_SERIES_CHARTS {
            svgs.push(svg::line_chart(&LineChart {
                title: format!("{}: {} per host over time", p.name, tput.name),
                x: Axis::new("seconds since the common start", Scale::Linear, fmt::secs),
                y: Axis::new(tput.name, Scale::Linear, fmt::count),
                series,
                shade: None,
                marks: Vec::new(),
                hlines: Vec::new(),
            }));
        }
    }
    Some(Section {
        id: "hosts-series".into(),
        title: "Hosts over time".into(),
        note: format!(
            "Each host's throughput per interval of its own measured phase, drawn from its release (within the start skew of the common start); a host that falls behind the others shows here before it shows in the aggregate. Charts for the first {MAX_SERIES_CHARTS} points measured on several hosts; the table has every interval of every host."
        ),
        svgs,
        table,
    })
}

/// The points T measured, in run order: each with the second of the run its
/// window starts at (the windows laid end to end) and T's figures.
fn target_windows(r: &Results) -> Vec<(f64, &Point, &TargetHostCpu)> {
    let mut at = 0.0;
    let mut out = Vec::new();
    for p in &r.points {
        if let Some(t) = p.extra.hosts.as_ref().and_then(|h| h.target_host.as_ref()) {
            out.push((at, p, t));
            at += t.window_ns as f64 / 1e9;
        }
    }
    out
}

/// The target host's disk under the served file, MB/s read (solid) and
/// written (dashed) second by second, one colour per transport; only when
/// some point has a disk series.
pub fn target_disk(r: &Results) -> Option<Section> {
    let windows = target_windows(r);
    if !windows.iter().any(|(_, _, t)| t.disk.is_some()) {
        return None;
    }
    let mut table = Table::new(&[
        "point",
        "transport",
        "device",
        "second",
        "read MB/s",
        "write MB/s",
    ]);
    let mut transports: Vec<String> = Vec::new();
    let mut series: Vec<Series> = Vec::new();
    for (at, p, t) in &windows {
        let Some(d) = &t.disk else { continue };
        let label = p.param(Param::Transport).unwrap_or(&p.name).to_string();
        let i = transports
            .iter()
            .position(|x| *x == label)
            .unwrap_or_else(|| {
                transports.push(label.clone());
                for (k, what) in ["read", "write"].iter().enumerate() {
                    series.push(Series {
                        label: format!("{label} {what}"),
                        points: Vec::new(),
                        dashed: k == 1,
                        color: transports.len() - 1,
                        line: true,
                    });
                }
                transports.len() - 1
            });
        for (s, (rd, wr)) in d.read_bytes_s.iter().zip(&d.write_bytes_s).enumerate() {
            let x = at + s as f64;
            let (rd, wr) = (*rd as f64 / 1e6, *wr as f64 / 1e6);
            for (k, (what, y)) in [("read", rd), ("write", wr)].into_iter().enumerate() {
                let hover = format!(
                    "{} {what} at {}: {} MB/s",
                    p.name,
                    fmt::secs(x),
                    fmt::mib(y)
                );
                series[2 * i + k].points.push((x, y, hover));
            }
            table.rows.push(vec![
                p.name.clone(),
                label.clone(),
                d.device.clone(),
                s.to_string(),
                fmt::mib(rd),
                fmt::mib(wr),
            ]);
        }
    }
    let chart = svg::line_chart(&LineChart {
        title: "Target disk bandwidth over time".into(),
        x: Axis::new(
            "seconds since the first point's start",
            Scale::Linear,
            fmt::secs,
        ),
        y: Axis::new("MB/s (solid: read, dashed: write)", Scale::Linear, fmt::mib),
        series,
        shade: None,
        marks: Vec::new(),
        hlines: Vec::new(),
    });
    Some(Section {
        id: "target-disk".into(),
        title: "Target disk bandwidth over time".into(),
        note: "The disk under the target host's served file, read from /proc/diskstats by its agent every 50 ms and summed per second of each point's measured window (every process on that disk counts); the points' windows are laid end to end in run order. A point whose file is on no block device (tmpfs) has no series.".into(),
        svgs: vec![chart],
        table,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 46: each host's series is drawn and tabled, from its release.
    #[test]
    fn every_host_has_its_series() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/report/kv-ycsb-rocksdb.json"
        );
        let mut r = Results::read(std::path::Path::new(path)).unwrap();
        assert!(per_host_series(&r).is_none());
        for p in &mut r.points {
            crate::results::ext::on_hosts(p, &["h1", "h2"]);
        }
        let s = per_host_series(&r).unwrap();
        let intervals: usize = r.points.iter().map(|p| p.series.len()).sum();
        assert_eq!(s.table.rows.len(), 2 * intervals);
        assert!(s.table.rows.iter().any(|row| row[1] == "h2"));
        assert!(!s.svgs.is_empty() && s.svgs.len() <= MAX_SERIES_CHARTS);
        assert!(s.svgs[0].contains("h2"));
    }
    use crate::results::ext::{HostsInfo, TargetDisk};

    fn with_target(disk: Option<TargetDisk>) -> Results {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/report/remote-nbd.json"
        );
        let mut r = Results::read(std::path::Path::new(path)).unwrap();
        for p in &mut r.points {
            p.extra.hosts = Some(Box::new(HostsInfo {
                per_host: Vec::new(),
                start_skew_ns: 0,
                clock_uncertainty_ns: 0,
                lost: Vec::new(),
                rate_per_host: None,
                target_host: Some(TargetHostCpu {
                    host: "t".into(),
                    cpu: Default::default(),
                    window_ns: 2_000_000_000,
                    disk: disk.clone(),
                    no_disk: disk.is_none().then(|| "tmpfs".into()),
                }),
                groups: Vec::new(),
            }));
        }
        r
    }

    #[test]
    fn the_target_disk_is_drawn_only_with_a_disk_series() {
        let r = with_target(None);
        assert!(target_disk(&r).is_none());
        assert!(!super::super::sections(&r)
            .iter()
            .any(|s| s.id == "target-disk"));
        let r = with_target(Some(TargetDisk {
            device: "vda".into(),
            read_bytes_s: vec![5_000_000, 7_000_000],
            write_bytes_s: vec![0, 1_000_000],
        }));
        let s = target_disk(&r).unwrap();
        assert!(s.svgs[0].contains("Target disk bandwidth over time"));
        assert!(s.svgs[0].contains("nbd-iolab read") && s.svgs[0].contains("nbd-iolab write"));
        assert_eq!(s.table.rows.len(), 2 * r.points.len());
        // The second point starts where the first one's window ended.
        assert_eq!(s.table.rows[0][4], "5");
        assert!(s.svgs[0].contains(&format!("{} read at 2s", r.points[1].name)));
    }
}
