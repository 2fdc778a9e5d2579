//! The views (src/report, src/analysis) read a point's parameters through
//! `results::Param` and its sections through their types, never by a
//! string key: a parameter renamed in one place cannot silently vanish from
//! a table. This test reads the sources (tests included: a fixture built
//! by string key is written, not read).

mod common;

use std::path::Path;

/// `params.get("…")` or `params\n.get("…")`, after joining lines.
fn string_key_reads(text: &str) -> Vec<String> {
    let joined: String = text.lines().map(str::trim).collect::<Vec<_>>().join("");
    let mut found = Vec::new();
    for pat in [
        "params.get(\"",
        "params.contains_key(\"",
        "extra.other.get(\"",
    ] {
        let mut at = 0;
        while let Some(i) = joined[at..].find(pat) {
            let start = at + i;
            let end = joined[start..]
                .find(')')
                .map_or(joined.len(), |e| start + e + 1);
            found.push(joined[start..end].to_string());
            at = end;
        }
    }
    found
}

#[test]
fn views_read_no_parameter_or_section_by_string_key() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    for dir in ["report", "analysis"] {
        files.extend(common::rust_sources(&root.join(dir)));
    }
    assert!(files.len() > 20, "the views' sources were found");
    let mut bad = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for hit in string_key_reads(&text) {
            bad.push(format!("{}: {hit}", f.display()));
        }
    }
    assert!(
        bad.is_empty(),
        "read these through results::Param (Point::param) or their typed section:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_scan_finds_a_string_key_read() {
    let hits = string_key_reads("let t = p\n    .params\n    .get(\"transport\");");
    assert_eq!(hits, ["params.get(\"transport\")"]);
}
