//! `--export FORMAT FILE` in every verb that measures: what a run writes
//! is byte for byte what `iolab report RESULTS --format FORMAT` renders
//! from its results file (single runs and media runs alike), and a bad
//! format or file is exit 2 naming `--export` before anything runs.

use std::path::Path;

mod common;
use common::{iolab, text, workdir};

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Each export equals `iolab report`'s rendering of `json` in its format.
fn exports_match_report(json: &Path, exports: &[(&str, &Path)]) {
    for (format, file) in exports {
        let o = iolab(&["report", p(json), "--format", format, "-o", "-"]);
        assert!(o.status.success(), "{}", text(&o));
        let written =
            std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let want = String::from_utf8_lossy(&o.stdout);
        // Compared line by line: a mismatch names its line, not the file.
        for (i, (w, r)) in written.lines().zip(want.lines()).enumerate() {
            assert_eq!(
                w,
                r,
                "{format} export of {}, line {}",
                json.display(),
                i + 1
            );
        }
        assert_eq!(written.len(), want.len(), "{format} export's length");
    }
}

#[test]
fn kv_writes_its_exports_as_report_renders_them() {
    let dir = workdir();
    let (json, csv, md) = (
        dir.path().join("kv.json"),
        dir.path().join("kv.csv"),
        dir.path().join("kv.md"),
    );
    let o = iolab(&[
        "kv",
        "c",
        "--engine",
        "sqlite",
        "-p",
        "recordcount=200",
        "-p",
        "operationcount=300",
        "--dir",
        p(dir.path()),
        "-o",
        p(&json),
        "--export",
        "csv",
        p(&csv),
        "--export",
        "markdown",
        p(&md),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains(&format!("csv:     {}", csv.display())),
        "{}",
        text(&o)
    );
    exports_match_report(&json, &[("csv", &csv), ("markdown", &md)]);
}

/// A media run (two targets) closes through the same exports.
#[test]
fn a_device_media_run_writes_its_exports_at_the_end() {
    let dir = workdir();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let (json, html) = (dir.path().join("m.json"), dir.path().join("m.html"));
    let o = iolab(&[
        "device",
        "-t",
        p(&a),
        "-t",
        p(&b),
        "--size",
        "16m",
        "--rw",
        "randread",
        "--io-count",
        "500",
        "--json",
        p(&json),
        "--export",
        "html",
        p(&html),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    exports_match_report(&json, &[("html", &html)]);
}

#[test]
fn a_bad_export_is_refused_before_anything_runs() {
    let dir = workdir();
    let out = dir.path().join("never.json");
    for (args, says) in [
        (
            vec!["--export", "pdf", "x.pdf"],
            "unknown export format 'pdf'",
        ),
        (vec!["--export", "csv", "-"], "give a file name"),
    ] {
        for verb in [
            vec!["kv", "a", "--engine", "sqlite", "--dir", p(dir.path())],
            vec!["oltp", "--dry-run"],
            vec!["device", "-t", p(dir.path()), "--dry-run"],
            vec!["trace", "--dry-run"],
        ] {
            let mut all = verb.clone();
            all.extend(["-o", p(&out)].iter().filter(|_| verb[0] == "kv"));
            all.extend(&args);
            let o = iolab(&all);
            assert_eq!(o.status.code(), Some(2), "{all:?}: {}", text(&o));
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(
                err.contains("--export") && err.contains(says),
                "{all:?}: {err}"
            );
        }
    }
    assert!(!out.exists(), "nothing ran");
}
