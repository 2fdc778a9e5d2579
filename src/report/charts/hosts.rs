//! Points measured on several hosts at once (`--hosts`): each host's IOPS
//! per point, stacked so a bar's height is the aggregate, and a table of
//! every host's row beside the aggregate, with the start skew.

use super::{Section, Table};
use crate::report::hosts_table;
use crate::report::svg::{self, BarChart};
use crate::results::Results;

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
    let chart = svg::bar_chart(&BarChart {
        title: "IOPS per host".into(),
        y_title: "IOPS (stacked hosts: the bar is the aggregate)".into(),
        y_fmt: crate::report::fmt::count,
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
