//! The database server's table, shared by kv and oltp points: the server's
//! processes' CPU, the data directory's allocated size, the (whole)
//! device's bytes written per operation and the write amplification over
//! the server-reported bytes (from each point's `extra.server`).

use super::{Section, Table};
use crate::measure::write_amp::PER_SERVER_BYTES;
use crate::results::Point;

/// One row per point that has a server section, labelled by `label`
/// (`what` names an operation: "operation", "transaction"); `None`
/// without any.
pub fn server_table<'a>(
    label: &str,
    points: impl Iterator<Item = (String, &'a Point)>,
    id: &str,
    title: &str,
    what: &str,
) -> Option<Section> {
    let per = format!("device bytes per {what}");
    let mut table = Table::new(&[
        label,
        "server usr % of one CPU",
        "server sys % of one CPU",
        "processes",
        "data directory bytes allocated (incl. preallocation)",
        "device bytes written (whole device, all processes)",
        &per,
        "server-reported bytes written",
        PER_SERVER_BYTES,
    ]);
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.2}"));
    for (name, p) in points {
        let Some(s) = p.extra.server.as_deref() else {
            continue;
        };
        let pr = s.process.as_ref();
        table.rows.push(vec![
            name,
            opt(pr.map(|p| p.usr_pct)),
            opt(pr.map(|p| p.sys_pct)),
            pr.map_or(String::new(), |p| p.processes.to_string()),
            s.db_size_bytes.map_or(String::new(), |b| b.to_string()),
            s.device
                .as_ref()
                .map_or(String::new(), |d| d.write_bytes.to_string()),
            opt(s.device_write_bytes_per_op),
            s.db_written_bytes.map_or(String::new(), |b| b.to_string()),
            opt(s.write_amplification),
        ]);
    }
    (!table.rows.is_empty()).then(|| Section {
        id: id.into(),
        title: title.into(),
        note: format!("The server's processes' CPU over the measured time (the client's own is the point's cpu), the bytes allocated under its data directory at the end (what it preallocated included), the bytes the device under it wrote (the whole device's, every process's writes, from /proc/diskstats) in all and per {what}, and the write amplification over what the server reports it wrote: device bytes written / server-reported bytes written (PostgreSQL: WAL and data pages; MariaDB: InnoDB's data, doublewrite and redo log). Empty where not measured (no device under the data, or nothing reached it)."),
        svgs: vec![],
        table,
    })
}
