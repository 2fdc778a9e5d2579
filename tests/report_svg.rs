//! SVG snapshot tests: the charts of the synthetic fixture (every chart
//! type) must render byte for byte as committed. After an intended change,
//! regenerate with `IOLAB_UPDATE_SNAPSHOTS=1 cargo test --test report_svg`
//! and review the diff (open the .svg files in a browser).

use std::path::Path;

use iolab::report::charts;
use iolab::results::Results;

#[test]
fn charts_match_snapshots() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report");
    let r = Results::read(&root.join("synthetic-all.json"))
        .unwrap()
        .with_analysis();
    let snaps = root.join("snapshots");
    let update = std::env::var_os("IOLAB_UPDATE_SNAPSHOTS").is_some();
    if update {
        std::fs::create_dir_all(&snaps).unwrap();
    }
    let mut names = Vec::new();
    let mut failures = Vec::new();
    for s in charts::sections(&r) {
        for (i, svg) in s.svgs.iter().enumerate() {
            // Rendering is deterministic: twice gives the same bytes.
            let name = format!("{}-{}.svg", s.id, i + 1);
            let path = snaps.join(&name);
            names.push(name.clone());
            if update {
                std::fs::write(&path, svg).unwrap();
                continue;
            }
            match std::fs::read_to_string(&path) {
                Ok(want) if want == *svg => {}
                Ok(_) => failures.push(format!("{name} differs")),
                Err(_) => failures.push(format!("{name} has no snapshot")),
            }
        }
    }
    assert!(names.len() >= 18, "{names:?}");
    let again: Vec<String> = charts::sections(&r)
        .into_iter()
        .flat_map(|s| s.svgs)
        .collect();
    let first: Vec<String> = charts::sections(&r)
        .into_iter()
        .flat_map(|s| s.svgs)
        .collect();
    assert_eq!(again, first, "deterministic");
    assert!(
        failures.is_empty(),
        "{failures:?}; if intended, rerun with IOLAB_UPDATE_SNAPSHOTS=1 and review"
    );
}

#[test]
fn every_chart_has_its_points() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report");
    for f in [
        "synthetic-all.json",
        "run-standard.json",
        "run-all-steps.json",
        "device-loadlat.json",
        "device-batching.json",
        "device-steady.json",
        "device-snia-iops.json",
        "trace-sample.json",
        "remote-nbd.json",
    ] {
        let r = Results::read(&root.join(f)).unwrap();
        for s in charts::sections(&r) {
            for svg in &s.svgs {
                let n: usize = svg
                    .split("data-points=\"")
                    .nth(1)
                    .and_then(|t| t.split('"').next())
                    .and_then(|t| t.parse().ok())
                    .unwrap();
                assert!(n > 0, "{f} {}: empty chart", s.id);
                assert_eq!(svg.matches("class=\"pt\"").count(), n, "{f} {}", s.id);
            }
            assert!(!s.table.rows.is_empty(), "{f} {}: no data table", s.id);
        }
    }
}
