//! The database server's table, shared by kv and oltp points: the server's
//! processes' CPU, the data directory's size, the device bytes written per
//! operation and write amplification (from each point's `extra.server`).

use super::{Section, Table};
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
        "database bytes",
        "device bytes written",
        &per,
        "server's own bytes written",
        "write amplification",
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
        note: format!("The server's processes' CPU over the measured time (the client's own is the point's cpu), the data directory's size at the end, the bytes the device under it wrote per {what}, and write amplification: device bytes written / the bytes the server says it wrote (PostgreSQL: WAL and data pages; MariaDB: InnoDB's data, doublewrite and redo log)."),
        svgs: vec![],
        table,
    })
}
