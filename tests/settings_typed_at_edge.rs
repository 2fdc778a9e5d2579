//! Sizes, durations and rates the user types are parsed once, at the edge:
//! clap's value parsers make `plan::units` values of a flag (plan files reach
//! them through the same clap definitions), and fio job files parse in
//! plan/. Below cli/ and commands/ nothing calls a size, duration or rate
//! parser. The parsers' own homes are allowed, and so are the readers of
//! stored data: results/params.rs (a size iolab recorded) and
//! plan/fiojob.rs (fio's job options, from a job file or fio's JSON).

mod common;

use std::path::Path;

/// The parsers of what users type as sizes, durations and rates.
const PARSERS: [&str; 6] = [
    "parse_size(",
    "parse_duration_ns(",
    "parse_bs_split(",
    "parse_bs_axis(",
    "parse_rate_axis(",
    "parse_count(",
];

/// Where calling them is the job: the edge, the parsers' homes, and the
/// readers of stored formats.
const ALLOWED: [&str; 7] = [
    "cli/",
    "commands/",
    "plan/parse.rs",
    "plan/units.rs",
    "plan/sweep.rs",
    "plan/fiojob.rs",
    "results/params.rs",
];

/// The calls in `text` (definitions are not calls).
fn calls(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        for p in PARSERS {
            if code.contains(p) && !code.contains(&format!("fn {p}")) {
                found.push(format!("line {}: {}", n + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn nothing_below_the_edge_parses_a_size_duration_or_rate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = common::rust_sources(&root);
    assert!(files.len() > 100, "the sources were found");
    let mut bad = Vec::new();
    for f in files {
        let rel = f.strip_prefix(&root).unwrap().to_string_lossy().to_string();
        if ALLOWED.iter().any(|a| rel.starts_with(a)) {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        bad.extend(calls(&text).into_iter().map(|c| format!("src/{rel} {c}")));
    }
    assert!(
        bad.is_empty(),
        "parse these at the edge (a plan::units type in the clap struct and its settings):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_scan_sees_a_call_and_skips_a_definition() {
    assert_eq!(calls("let n = parse_size(\"--bs\", s)?;").len(), 1);
    assert!(calls("pub fn parse_size(field: &str, s: &str)").is_empty());
    assert!(calls("// parse_size(x) in a comment").is_empty());
}
