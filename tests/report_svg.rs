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
        "media.json",
        "oltp-postgres.json",
        "kv-postgres.json",
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

/// The media sections of a real run over four targets (two scratch
/// directories, tmpfs and ext4 built by iolab; two workloads, three
/// rounds): one bar per workload and target with its whisker, a noise mark
/// on exactly the rows the analysis marks, one CDF per workload with a
/// line per target; and the charts as committed (snapshots/media-*.svg).
#[test]
fn media_sections_draw_every_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report");
    let r = Results::read(&root.join("media.json")).unwrap();
    let m = r.analysis.media.as_ref().expect("analysis.media");
    assert_eq!(m.targets, ["a", "b", "tmpfs", "ext4"]);
    assert_eq!(m.workloads.len(), 2);
    let sections = charts::sections(&r);
    let media = sections
        .iter()
        .find(|s| s.id == "media")
        .expect("media section");
    let bars = &media.svgs[0];
    assert_eq!(
        bars.matches("class=\"pt\"").count(),
        8,
        "2 workloads x 4 targets"
    );
    assert_eq!(bars.matches("class=\"whisker\"").count(), 8);
    let noisy = m.rows.iter().filter(|r| r.noise).count();
    assert!(noisy > 0, "the fixture shows a noise mark");
    assert_eq!(bars.matches("class=\"noise-mark\"").count(), noisy);
    assert!(bars.contains("class=\"reference\""));
    assert_eq!(media.table.rows.len(), 2);
    assert_eq!(media.table.headers, ["workload", "a", "b", "tmpfs", "ext4"]);
    let cdfs = sections.iter().find(|s| s.id == "media-latency").unwrap();
    assert_eq!(cdfs.svgs.len(), 2, "one CDF per workload");
    for svg in &cdfs.svgs {
        assert_eq!(
            svg.matches("class=\"series\"").count(),
            4,
            "a line per target"
        );
    }
    assert_eq!(cdfs.table.rows.len(), 8);
    match_snapshots(&[media, cdfs]);
}

/// The charts of `sections` as committed in snapshots/ID-N.svg (written
/// anew with IOLAB_UPDATE_SNAPSHOTS).
fn match_snapshots(sections: &[&charts::Section]) {
    let snaps = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report/snapshots");
    let update = std::env::var_os("IOLAB_UPDATE_SNAPSHOTS").is_some();
    let mut failures = Vec::new();
    for s in sections {
        for (i, svg) in s.svgs.iter().enumerate() {
            let path = snaps.join(format!("{}-{}.svg", s.id, i + 1));
            if update {
                std::fs::write(&path, svg).unwrap();
            } else if std::fs::read_to_string(&path).ok().as_deref() != Some(svg.as_str()) {
                failures.push(path.display().to_string());
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{failures:?} differ; if intended, rerun with IOLAB_UPDATE_SNAPSHOTS=1 and review"
    );
}

/// The timelines of a real oltp run on a private PostgreSQL (the load and
/// two points): a CPU chart per phase with the machine's four lines and
/// the server's, disk bandwidth and IOPS with read and write, the
/// client's rate; every second of each phase drawn; the charts as
/// committed (snapshots/timeline-*.svg).
#[test]
fn timeline_sections_draw_every_phase() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report");
    let r = Results::read(&root.join("oltp-postgres.json"))
        .unwrap()
        .with_analysis();
    let sections: Vec<_> = charts::sections(&r)
        .into_iter()
        .filter(|s| s.id.starts_with("timeline-"))
        .collect();
    let ids: Vec<&str> = sections.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "timeline-cpu",
            "timeline-disk",
            "timeline-iops",
            "timeline-client"
        ]
    );
    let load = r.extra.oltp_load.as_ref().unwrap();
    let seconds: Vec<usize> = std::iter::once(load.timeline.as_ref().unwrap().len())
        .chain(
            r.points
                .iter()
                .map(|p| p.extra.timeline.as_ref().unwrap().len()),
        )
        .collect();
    let lines = [5, 2, 2, 1];
    for (s, lines) in sections.iter().zip(lines) {
        assert_eq!(s.svgs.len(), 3, "{}: load and two points", s.id);
        for (svg, n) in s.svgs.iter().zip(&seconds) {
            assert_eq!(svg.matches("class=\"series\"").count(), lines, "{}", s.id);
            assert_eq!(svg.matches("class=\"pt\"").count(), n * lines, "{}", s.id);
        }
        assert_eq!(
            s.table.rows.len(),
            seconds.iter().sum::<usize>(),
            "{}",
            s.id
        );
    }
    assert!(sections[0].svgs[1].contains("server usr+sys"));
    assert!(sections[3].svgs[0].contains("rows/s") && sections[3].svgs[1].contains("txn/s"));
    match_snapshots(&sections.iter().collect::<Vec<_>>());
}

/// YCSB on a private PostgreSQL (tests/fixtures/report/kv-postgres.json):
/// the server's table has a row per phase, with the server's CPU and the
/// device bytes per operation of each; the share under 1 ms and the
/// timelines are drawn for it too.
#[test]
fn kv_on_a_server_has_its_server_table() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report");
    let r = Results::read(&root.join("kv-postgres.json"))
        .unwrap()
        .with_analysis();
    let sections = charts::sections(&r);
    let ids: Vec<&str> = sections.iter().map(|s| s.id.as_str()).collect();
    for id in ["kv-throughput", "kv-under", "kv-server", "timeline-cpu"] {
        assert!(ids.contains(&id), "{id} missing: {ids:?}");
    }
    let t = &sections.iter().find(|s| s.id == "kv-server").unwrap().table;
    let labels: Vec<&str> = t.rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(
        labels,
        [
            "postgres ycsb-a load",
            "postgres ycsb-a run",
            "postgres ycsb-c load",
            "postgres ycsb-c run"
        ]
    );
    let col = |name: &str| t.headers.iter().position(|h| h == name).unwrap();
    for (row, p) in t.rows.iter().zip(&r.points) {
        let s = p.extra.server.as_ref().unwrap();
        let usr: f64 = row[col("server usr % of one CPU")].parse().unwrap();
        assert!(usr > 0.0, "{row:?}");
        assert_eq!(
            row[col("device bytes per operation")],
            s.device_write_bytes_per_op
                .map_or(String::new(), |v| format!("{v:.2}"))
        );
    }
}
