//! `iolab kv --instances N` on this machine: N databases run at once, each
//! phase merged exactly (operations summed, histograms added) with a row per
//! instance, and no directory left; bad counts are exit 2 naming the flag.

use std::path::Path;
use std::process::Command;

use iolab::measure::histogram::LatencyHistogram;

fn iolab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("iolab-kv-"))
        .collect()
}

/// Every phase point's histogram counts equal its operations, which equal
/// the sum of its rows (`extra.KEY`); the rows named `names`.
pub fn assert_merged_exactly(p: &serde_json::Value, key: &str, names: &[&str]) {
    let rows = p["extra"][key]["per_host"].as_array().expect("rows");
    let got: Vec<&str> = rows.iter().map(|r| r["host"].as_str().unwrap()).collect();
    assert_eq!(got, names, "{p}");
    let sum: u64 = rows.iter().map(|r| r["ops"].as_u64().unwrap()).sum();
    let ops = p["total"]["ops"].as_u64().unwrap();
    assert_eq!(ops, sum, "merged ops are the rows' sum");
    assert!(rows.iter().all(|r| r["ops"].as_u64().unwrap() > 0), "{p}");
    let counted: u64 = p["histograms"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.ends_with(".lat"))
        .map(|(_, h)| LatencyHistogram::decode(h.as_str().unwrap()).unwrap().len())
        .sum();
    assert_eq!(counted, ops, "merged histograms count every operation");
}

#[test]
fn two_instances_merge_exactly_and_leave_no_directory() {
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let out = d.path().join("r.json");
    let o = iolab()
        .args([
            "kv",
            "a",
            "--engine",
            "sqlite",
            "--instances",
            "2",
            "--quiet",
        ])
        .args(["-p", "recordcount=300", "-p", "operationcount=400"])
        .arg("--dir")
        .arg(d.path())
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let points = r["points"].as_array().unwrap();
    let names: Vec<&str> = points.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["ycsb-a.load", "ycsb-a.run"]);
    for p in points {
        assert_merged_exactly(p, "instances", &["inst-1", "inst-2"]);
        assert_eq!(p["params"]["instances"], "2");
    }
    assert_eq!(
        points[0]["total"]["ops"], 600,
        "each instance loads its records"
    );
    assert_eq!(points[1]["total"]["ops"], 800);
    // Every instance's checked reads count in the merged point.
    assert_eq!(points[1]["verify"]["mismatches"], 0);
    assert!(points[1]["verify"]["blocks_checked"].as_u64().unwrap() > 0);
    assert_eq!(r["provenance"]["plan"]["instances"], 2);
    assert!(leftovers(d.path()).is_empty(), "{:?}", leftovers(d.path()));
}

#[test]
fn a_bad_instance_count_is_exit_2_naming_the_flag() {
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for (n, extra) in [
        ("0", vec![]),
        ("65", vec![]),
        ("2", vec!["--engine", "postgres"]),
    ] {
        let o = iolab()
            .args(["kv", "a", "--instances", n, "--quiet"])
            .args(extra)
            .arg("--dir")
            .arg(d.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "--instances {n}: {err}");
        assert!(err.contains("--instances"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    assert!(leftovers(d.path()).is_empty());
}
