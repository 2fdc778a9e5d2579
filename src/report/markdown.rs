//! Markdown output for `iolab report --format markdown`: headlines,
//! warnings, points and each chart's data table (for issues and wikis).

use crate::report::charts::{self, Table};
use crate::report::summary;
use crate::results::Results;

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

pub fn table_md(t: &Table) -> String {
    let mut o = String::new();
    o.push_str(&format!(
        "| {} |\n",
        t.headers
            .iter()
            .map(|h| cell(h))
            .collect::<Vec<_>>()
            .join(" | ")
    ));
    o.push_str(&format!("|{}\n", "---|".repeat(t.headers.len())));
    for r in &t.rows {
        o.push_str(&format!(
            "| {} |\n",
            r.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | ")
        ));
    }
    o
}

pub fn render(r: &Results) -> String {
    let mut o = format!("# iolab {} report\n\n", r.kind);
    let pv = &r.provenance;
    o.push_str(&format!(
        "{} point(s), started {}{}, iolab {}\n\n",
        r.points.len(),
        pv.started_at,
        match (pv.hostname.as_str(), pv.kernel.as_str()) {
            ("", _) => String::new(),
            (h, "") => format!(" on {h}"),
            (h, k) => format!(" on {h} ({k})"),
        },
        pv.iolab_version
    ));
    let heads = summary::headlines(r);
    if !heads.is_empty() {
        o.push_str("## Summary\n\n");
        for h in heads {
            o.push_str(&format!("- **{}**: {} ({})\n", h.label, h.value, h.detail));
        }
        o.push('\n');
    }
    let warns = summary::warnings(r);
    if !warns.is_empty() {
        o.push_str("## Warnings\n\n");
        for w in warns {
            o.push_str(&format!("- {w}\n"));
        }
        o.push('\n');
    }
    o.push_str("## Points\n\n");
    let oltp = summary::oltp_table(r);
    if let Some(t) = &oltp {
        o.push_str(&table_md(t));
    }
    use summary::PointColumn as C;
    let columns = [
        C::Point,
        C::Op,
        C::Throughput,
        C::MibS,
        C::Mean,
        C::P99,
        C::Max,
    ];
    let t = summary::points_table(r, &columns, false);
    if oltp.is_none() || !t.rows.is_empty() {
        o.push_str(&table_md(&t));
    }
    for s in charts::sections(r) {
        if s.table.rows.len() > 60 {
            continue;
        }
        o.push_str(&format!("\n## {}\n\n{}\n\n", s.title, s.note));
        o.push_str(&table_md(&s.table));
    }
    o
}
