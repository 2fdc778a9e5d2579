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

/// NVMe/TCP joins DAS and NBD in every chart of the remote sections of a
/// real `iolab remote` run (its database is skipped on this kernel, so the
/// database section has DAS and NBD only), and has its own load-latency
/// curve (one chart per transport).
#[test]
fn nvme_tcp_is_in_every_remote_chart() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report");
    let r = Results::read(&root.join("remote-nbd.json"))
        .unwrap()
        .with_analysis();
    let (mut seen, mut curve) = (0, false);
    for s in charts::sections(&r) {
        if s.id == "load-latency" {
            curve |= s.svgs.iter().any(|svg| svg.contains("nvme-tcp-iolab"));
            continue;
        }
        if !s.id.starts_with("remote") || s.id == "remote-db" {
            continue;
        }
        for svg in &s.svgs {
            assert!(svg.contains("nvme-tcp-iolab"), "{}: no NVMe/TCP", s.id);
            assert!(svg.contains("nbd-iolab"), "{}: no NBD", s.id);
            seen += 1;
        }
    }
    assert!(seen >= 3, "only {seen} remote charts");
    assert!(curve, "no load-latency curve of NVMe/TCP");
}
