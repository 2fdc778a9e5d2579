//! The self-contained HTML report: summary with headline numbers and
//! warnings, provenance, a table of points, and one section per chart type
//! with its SVG and its data (collapsible, with a CSV download as a data:
//! URI). No scripts, no external fonts, styles or images; prints cleanly.

use std::fmt::Write as _;

use crate::report::charts::{self, Section, Table};
use crate::report::svg::esc;
use crate::report::{csv, summary};
use crate::results::Results;

const CSS: &str = r#"
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:0 auto;max-width:1040px;padding:16px 24px;color:#222;line-height:1.4}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ccc;padding-bottom:.2em}
.sub{color:#666}.cards{display:flex;flex-wrap:wrap;gap:10px;margin:12px 0}
.card{border:1px solid #ccd;border-radius:6px;padding:8px 12px;min-width:170px;background:#f7f9fc}
.card .v{font-size:1.35em;font-weight:600}.card .l{font-size:.85em;color:#555}.card .d{font-size:.75em;color:#888}
.warn{background:#fff6e0;border-left:4px solid #e6a000;padding:6px 12px;margin:10px 0}.warn li{margin:3px 0}
.bad{background:#fde8e8;border-left:4px solid #c00;padding:6px 12px}
table{border-collapse:collapse;font-size:.85em;margin:6px 0}td,th{border:1px solid #ddd;padding:3px 7px;text-align:right}
th{background:#f0f0f0}td:first-child,th:first-child{text-align:left}
table.kv td{text-align:left}table.kv td:first-child{font-weight:600;white-space:nowrap}
svg.chart{width:100%;height:auto;max-width:900px;display:block;margin:8px 0}
details{margin:4px 0 14px}summary{cursor:pointer;color:#0550ae}
.note{color:#444;font-size:.92em}.scroll{overflow-x:auto}
@media print{body{max-width:none;padding:0}svg.chart{break-inside:avoid}h2{break-after:avoid}details:not([open]),a.csv,nav{display:none}}
"#;

/// Percent-encode for a data: URI.
fn uri_encode(s: &str) -> String {
    let mut o = String::with_capacity(s.len() * 3 / 2);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            o.push(b as char);
        } else {
            let _ = write!(o, "%{b:02X}");
        }
    }
    o
}

fn table_html(t: &Table, class: &str) -> String {
    let mut o = format!(r#"<div class="scroll"><table class="{class}"><thead><tr>"#);
    for h in &t.headers {
        let _ = write!(o, "<th>{}</th>", esc(h));
    }
    o.push_str("</tr></thead><tbody>");
    for r in &t.rows {
        o.push_str("<tr>");
        for c in r {
            let _ = write!(o, "<td>{}</td>", esc(c));
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table></div>");
    o
}

fn section_html(s: &Section) -> String {
    let mut o = format!(
        r#"<section id="{}" class="chart-section"><h2>{}</h2><p class="note">{}</p>"#,
        esc(&s.id),
        esc(&s.title),
        esc(&s.note)
    );
    for svg in &s.svgs {
        o.push_str(svg);
    }
    let csv = csv::table_csv(&s.table);
    let _ = write!(
        o,
        r#"<details{}><summary>Data ({} rows)</summary>{}<p><a class="csv" download="{}.csv" href="data:text/csv;charset=utf-8,{}">Download CSV</a></p></details></section>"#,
        if s.svgs.is_empty() { " open" } else { "" },
        s.table.rows.len(),
        table_html(&s.table, "data"),
        esc(&s.id),
        uri_encode(&csv)
    );
    o
}

/// The points overview: one row per point and op kind (a point without
/// op kinds: its totals).
fn points_overview(r: &Results) -> Table {
    use summary::PointColumn as C;
    let columns = [
        C::Point,
        C::Op,
        C::Throughput,
        C::MibS,
        C::Mean,
        C::P50,
        C::P99,
        C::P999,
        C::Max,
        C::Cpu,
    ];
    summary::points_table(r, &columns, true)
}

/// Render a whole report. `source` names the file it came from.
pub fn render(r: &Results, source: &str) -> String {
    let pv = &r.provenance;
    let title = format!(
        "iolab {} report{}",
        r.kind,
        if pv.hostname.is_empty() {
            String::new()
        } else {
            format!(" — {}", pv.hostname)
        }
    );
    let mut o = String::new();
    let _ = write!(
        o,
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="generator" content="iolab {}"><title>{}</title><style>{}</style></head><body>"#,
        esc(&pv.iolab_version),
        esc(&title),
        CSS
    );
    let _ = write!(
        o,
        r#"<header><h1>{}</h1><p class="sub">{} point(s), started {}{} · from {}</p></header>"#,
        esc(&title),
        r.points.len(),
        esc(&pv.started_at),
        pv.target
            .as_ref()
            .map(|t| format!(" · target {}", esc(&t.path)))
            .unwrap_or_default(),
        esc(source)
    );
    if r.interrupted || !r.complete {
        let _ = write!(
            o,
            r#"<p class="bad">{}</p>"#,
            if r.interrupted {
                "Interrupted run: only the points measured before the signal are shown."
            } else {
                "Incomplete results: the run had not finished when this file was written."
            }
        );
    }
    o.push_str(r#"<section id="summary"><h2>Summary</h2><div class="cards">"#);
    let heads = summary::headlines(r);
    for h in &heads {
        let _ = write!(
            o,
            r#"<div class="card"><div class="l">{}</div><div class="v">{}</div><div class="d">{}</div></div>"#,
            esc(&h.label),
            esc(&h.value),
            esc(&h.detail)
        );
    }
    if heads.is_empty() {
        o.push_str("<p>No headline numbers: see the points below.</p>");
    }
    o.push_str("</div>");
    let warns = summary::warnings(r);
    if !warns.is_empty() {
        o.push_str(r#"<div class="warn"><strong>Warnings</strong><ul>"#);
        for w in &warns {
            let _ = write!(o, "<li>{}</li>", esc(w));
        }
        o.push_str("</ul></div>");
    }
    o.push_str("</section>");
    let sections = charts::sections(r);
    if !sections.is_empty() {
        o.push_str(r#"<nav><p>Charts: "#);
        let links: Vec<String> = sections
            .iter()
            .map(|s| format!(r##"<a href="#{}">{}</a>"##, esc(&s.id), esc(&s.title)))
            .collect();
        o.push_str(&links.join(" · "));
        o.push_str("</p></nav>");
    }
    o.push_str(r#"<section id="points"><h2>Points</h2>"#);
    let oltp = summary::oltp_table(r);
    let overview = points_overview(r);
    if let Some(t) = &oltp {
        o.push_str(&table_html(t, "data"));
    }
    if oltp.is_none() || !overview.rows.is_empty() {
        o.push_str(&table_html(&overview, "data"));
    }
    o.push_str("</section>");
    for s in &sections {
        o.push_str(&section_html(s));
    }
    o.push_str(r#"<section id="provenance"><h2>Provenance</h2>"#);
    let prov = Table {
        headers: vec!["".into(), "".into()],
        rows: pv.rows().into_iter().map(|(k, v)| vec![k, v]).collect(),
    };
    let mut ptab = table_html(&prov, "kv");
    ptab = ptab.replace("<thead><tr><th></th><th></th></tr></thead>", "");
    o.push_str(&ptab);
    if !pv.tools.is_empty() {
        let tools = Table {
            headers: vec!["tool".into(), "version".into()],
            rows: pv
                .tools
                .iter()
                .map(|(k, v)| vec![k.clone(), v.clone()])
                .collect(),
        };
        o.push_str(&table_html(&tools, "kv"));
    }
    o.push_str("</section>");
    let _ = write!(
        o,
        r#"<footer><p class="sub">Generated by iolab {} ({}). Self-contained: no scripts, no network.</p></footer></body></html>"#,
        esc(&pv.iolab_version),
        esc(&pv.git_revision)
    );
    o.push('\n');
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_encoding() {
        assert_eq!(uri_encode("a,b\n"), "a%2Cb%0A");
    }

    #[test]
    fn empty_results_render() {
        let r = Results::new("device", crate::results::Provenance::minimal());
        let h = render(&r, "x.json");
        assert!(h.starts_with("<!DOCTYPE html>"));
        assert!(!h.contains("<script"));
        assert!(h.contains("Incomplete results"));
    }
}
