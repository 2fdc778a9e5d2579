//! `iolab run` over several targets: the same plan on two directories,
//! each job on every target in the round's order, one results directory
//! whose analysis and report have the media sections, the scratch files
//! gone; bad input refused with exit 2 naming the field before anything
//! runs.

mod common;

use common::{iolab, text};

#[test]
fn two_directories_one_results_dir_with_the_media_sections() {
    let (d, a, b) = common::two_dirs();
    let out = d.path().join("out");
    let o = iolab(&[
        "run",
        a.to_str().unwrap(),
        &format!("fast={}", b.display()),
        "--rounds",
        "2",
        "--baseline",
        "fast",
        "--profile",
        "quick",
        "--budget",
        "12s",
        "--size",
        "8m",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("per-round ratios: median (range)"),
        "{}",
        text(&o)
    );
    let r = common::results(&out.join("results.json"));
    assert_eq!(r["kind"], "run");
    let pts = r["points"].as_array().unwrap();
    // Job by job: the first job on a then fast in round 1, ...
    let first: Vec<(&str, &str)> = pts
        .iter()
        .take(2)
        .map(|p| {
            (
                p["params"]["medium"].as_str().unwrap(),
                p["params"]["round"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(first, [("a", "1"), ("fast", "1")]);
    assert!(
        pts[0]["name"]
            .as_str()
            .unwrap()
            .starts_with("a r1: latency: "),
        "{}",
        pts[0]["name"]
    );
    let last = &pts[pts.len() - 1]["params"];
    assert_eq!(
        (last["medium"].as_str(), last["round"].as_str()),
        (Some("a"), Some("2"))
    );
    let m = &r["analysis"]["media"];
    assert_eq!(m["baseline"], "fast");
    assert_eq!(m["targets"], serde_json::json!(["a", "fast"]));
    let rows = m["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    for row in rows {
        if row["target"] == "fast" {
            assert_eq!(row["vs_baseline"], 1.0, "{row}");
        }
    }
    assert!(r["extra"]["media"]["overhead"]["wall_s"].as_f64().unwrap() > 0.0);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("Storage media side by side"), "media section");
    assert!(html.contains("Latency on each target"), "latency section");
    assert!(common::files_in(&a).is_empty() && common::files_in(&b).is_empty());
}

#[test]
fn bad_input_is_refused_naming_the_field() {
    let (d, a, b) = common::two_dirs();
    let file = d.path().join("f");
    std::fs::write(&file, b"x").unwrap();
    let (a, b, f) = (
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        file.to_str().unwrap(),
    );
    for (args, field) in [
        (vec![a, b, "--remote"], "--remote"),
        (vec![a, b, "--rounds", "0"], "--rounds"),
        (vec![a, b, "--baseline", "zz"], "--baseline"),
        (vec![a, "--rounds", "2"], "--rounds"),
        (vec![a, b, "--budget", "1s"], "--budget"),
        (vec![a, f], f),
        (vec![a, "--make", "zfs"], "--make"),
    ] {
        let mut all = vec!["run"];
        all.extend_from_slice(&args);
        let o = iolab(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(field), "{args:?}: {}", text(&o));
    }
    assert_eq!(common::files_in(d.path()).len(), 3, "nothing was created");
}

/// SIGINT while a media run of `run` measures: it stops after the point,
/// writes the report of what it measured and exits 130; no scratch file
/// is left in either target.
#[test]
fn sigint_keeps_what_was_measured_and_leaves_no_scratch_file() {
    let (d, a, b) = common::two_dirs();
    let out = d.path().join("out");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_iolab"))
        .arg("run")
        .args([&a, &b])
        .args([
            "--profile",
            "quick",
            "--budget",
            "60s",
            "--size",
            "8m",
            "--quiet",
        ])
        .arg("-o")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let o = common::interrupt_after_first_point(child, &out.join("results.json"));
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    let r = common::results(&out.join("results.json"));
    assert_eq!(r["interrupted"], true);
    assert!(!r["points"].as_array().unwrap().is_empty());
    assert!(out.join("report.html").exists());
    assert!(common::files_in(&a).is_empty() && common::files_in(&b).is_empty());
}
