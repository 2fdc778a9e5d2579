//! Throughput against database size, as the NVMe-vs-SATA study draws its
//! Cassandra sweep: the lines `analysis::kv_size` computes, x the record
//! count, y the median ops/s over the rounds.

use super::{Section, Table};
use crate::analysis::kv_size::SizeLine;
use crate::figures::fmt;
use crate::report::svg::{self, Axis, LineChart, Scale, Series};
use crate::results::Results;

/// The chart, when the run phases cover at least two record counts.
pub fn size_sweep(r: &Results) -> Option<Section> {
    let lines: Vec<SizeLine> = crate::analysis::kv_size::size_sweep(r)?;
    let mut table = Table::new(&["line", "records", "ops/s (median)", "rounds"]);
    for line in &lines {
        for c in &line.cells {
            table.rows.push(vec![
                line.label.clone(),
                c.records.to_string(),
                format!("{:.0}", c.ops),
                c.rounds.to_string(),
            ]);
        }
    }
    let lines = lines.into_iter().map(|l| {
        let points = l
            .cells
            .iter()
            .map(|c| {
                let text = format!(
                    "{}: {} records, {} ops/s",
                    l.label,
                    fmt::count(c.records as f64),
                    fmt::count(c.ops)
                );
                (c.records as f64, c.ops, text)
            })
            .collect::<Vec<_>>();
        (l.label, points)
    });
    let series = lines
        .into_iter()
        .enumerate()
        .map(|(i, (label, points))| Series {
            label,
            points,
            dashed: false,
            color: i,
            line: true,
        })
        .collect();
    Some(Section {
        id: "kv-size".into(),
        title: "Throughput vs database size".into(),
        note: "The run phase of each part, by its record count (the database's size), one line per setting that differs between the parts (client threads, the server's --server-set settings, workload, medium); the median ops/s over the rounds. Below the memtables or the cache, reads are served from memory; above them, from the device.".into(),
        svgs: vec![svg::line_chart(&LineChart {
            title: "Throughput vs database size".into(),
            x: Axis::new("records", Scale::Log, fmt::count),
            y: Axis::new("operations per second", Scale::Linear, fmt::count),
            series,
            shade: None,
            marks: vec![],
            hlines: vec![],
        })],
        table,
    })
}
