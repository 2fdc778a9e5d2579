//! `iolab run` end to end through the real binary on a small scratch file:
//! the output directory, results.json and report.html, the terminal
//! summary, the scratch file removed, and Ctrl-C keeping what was measured.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn iolab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(args)
        .output()
        .expect("run iolab")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// On the real disk (not tmpfs), so O_DIRECT works.
fn workdir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn run_with_a_small_budget_writes_results_and_report() {
    let dir = workdir();
    let d = dir.path().to_str().unwrap();
    let elsewhere = workdir();
    let md = elsewhere.path().join("run.md");
    let o = iolab(&[
        "run",
        d,
        "--budget",
        "6s",
        "--size",
        "64m",
        "--profile",
        "quick",
        "--export",
        "markdown",
        md.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let tail: Vec<&str> = out.lines().rev().take(2).collect();
    assert!(
        tail[1].starts_with("report:") && tail[1].ends_with("report.html"),
        "{out}"
    );
    assert_eq!(tail[0], format!("markdown: {}", md.display()), "{out}");
    assert!(out.contains("4k random read IOPS"), "{out}");
    // Only the output directory is left: the scratch file is gone.
    let left = entries(dir.path());
    assert_eq!(left.len(), 1, "{left:?}");
    let name = left[0].file_name().unwrap().to_string_lossy().to_string();
    assert!(name.starts_with("iolab-") && name.ends_with('Z'), "{name}");
    let r = json(&left[0].join("results.json"));
    assert_eq!(r["kind"], "run");
    assert_eq!(r["complete"], true);
    let points = r["points"].as_array().unwrap();
    assert!(points.len() >= 6, "{}", points.len());
    assert!(points.iter().all(|p| p["params"]["step"].is_string()));
    assert!(r["extra"]["run"]["steps"].as_array().unwrap().len() >= 4);
    // --export writes what `iolab report` renders from the results file.
    let again = iolab(&[
        "report",
        left[0].join("results.json").to_str().unwrap(),
        "--format",
        "markdown",
    ]);
    assert_eq!(std::fs::read(&md).unwrap(), again.stdout);
    let html = std::fs::read_to_string(left[0].join("report.html")).unwrap();
    assert!(
        html.contains("id=\"batching\""),
        "quick profile has a batching chart"
    );
    assert!(html.contains("id=\"percentiles\""));
}

#[test]
fn dry_run_and_bad_input() {
    let dir = workdir();
    let d = dir.path().to_str().unwrap();
    let o = iolab(&["run", d, "--dry-run", "--budget", "1m"]);
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("latency") && t.contains("batching"), "{t}");
    assert!(entries(dir.path()).is_empty(), "dry run creates nothing");
    // Every step is listed, active ones with the time of each job.
    for step in ["iops", "load-latency", "breakdown", "kv"] {
        assert!(
            t.lines().any(|l| l.trim_start().starts_with(step)),
            "{step}: {t}"
        );
    }
    assert!(
        t.contains("load-latency: randread-4k-qd32-50%max") && t.contains(" ramp"),
        "{t}"
    );
    // A short budget drops optional steps from the end, and says so.
    let o = iolab(&["run", d, "--dry-run", "--budget", "5s"]);
    let t = text(&o);
    assert!(
        t.contains("kv") && t.contains("skipped: dropped to fit"),
        "{t}"
    );
    // Issue 44 item 13: a budget under the core jobs' 0.5 s each is
    // refused with its minimum (it planned 8 x 250 ms for 1s).
    let o = iolab(&["run", d, "--dry-run", "--budget", "1s"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("--budget") && t.contains("give at least 4.00s"),
        "{t}"
    );
    for (args, field) in [
        (vec!["--budget", "soon"], "--budget"),
        (vec!["--budget", "0.5s"], "--budget"),
        (vec!["--profile", "huge"], "--profile"),
        (vec!["--size", "4k"], "--size"),
        (vec!["--engine", "null"], "--engine"),
    ] {
        let mut a = vec!["run", d, "--dry-run"];
        a.extend(args);
        let o = iolab(&a);
        assert_eq!(o.status.code(), Some(2), "{a:?}: {}", text(&o));
        assert!(text(&o).contains(field), "{a:?}: {}", text(&o));
    }
    let o = iolab(&["run", "/nonexistent-dir", "--dry-run"]);
    assert_eq!(o.status.code(), Some(2));
    // The dry run checks -o as the run does: a file where the directory
    // would go is exit 2 naming --output, and nothing is made.
    let file = dir.path().join("taken");
    std::fs::write(&file, "x").unwrap();
    let o = iolab(&["run", d, "--dry-run", "-o", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--output"), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
}

#[test]
fn ctrl_c_keeps_measured_points_and_the_report() {
    let dir = workdir();
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args([
            "run",
            dir.path().to_str().unwrap(),
            "--budget",
            "60s",
            "--size",
            "64m",
            "--profile",
            "quick",
            "--quiet",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until at least one point is in results.json, then interrupt.
    let t0 = Instant::now();
    loop {
        let done = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.path().join("results.json"))
            .find(|p| p.exists())
            .and_then(|p| std::fs::read_to_string(p).ok())
            .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
            .is_some_and(|v| !v["points"].as_array().unwrap().is_empty());
        if done {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no point after 60 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: signalling our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let left = entries(dir.path());
    assert_eq!(left.len(), 1, "scratch file removed: {left:?}");
    let r = json(&left[0].join("results.json"));
    assert_eq!(r["interrupted"], true);
    assert_eq!(r["complete"], false);
    let html = std::fs::read_to_string(left[0].join("report.html")).unwrap();
    assert!(html.contains("Interrupted run"));
    // And `report` re-renders it.
    let o = iolab(&[
        "report",
        left[0].join("results.json").to_str().unwrap(),
        "--format",
        "text",
    ]);
    assert!(o.status.success(), "{}", text(&o));
}

/// The standard profile in a small budget: every step runs (or says why
/// not), the load-latency curve is a ramp of the iops step's maximum, the
/// database step runs YCSB A and C, and the analyses `iolab device` writes
/// are in the results.
#[test]
fn standard_run_has_load_latency_breakdown_and_analyses() {
    let dir = workdir();
    let out = dir.path().join("out");
    let o = iolab(&[
        "run",
        dir.path().to_str().unwrap(),
        "--budget",
        "16s",
        "--size",
        "64m",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let r = json(&out.join("results.json"));
    let points = r["points"].as_array().unwrap();
    let steps = r["extra"]["run"]["steps"].as_array().unwrap();
    let step = |id: &str| steps.iter().find(|s| s["id"] == id).unwrap().clone();
    // Load-latency: open-loop points at rates below the closed-loop max.
    let max = points
        .iter()
        .find(|p| p["params"]["step"] == "iops" && p["params"]["rw"] == "randread")
        .map(|p| p["total"]["iops"].as_f64().unwrap())
        .unwrap();
    let ll: Vec<_> = points
        .iter()
        .filter(|p| p["params"]["step"] == "load-latency")
        .collect();
    assert!(step("load-latency")["skipped"].is_null(), "{steps:?}");
    assert_eq!(ll.len(), 5);
    for p in &ll {
        let rate: f64 = p["params"]["rate"].as_str().unwrap().parse().unwrap();
        assert!(rate > 0.0 && rate < max, "{rate} vs {max}");
        assert!(p["extra"]["open_loop"].is_object());
    }
    let a = &r["analysis"];
    assert!(
        a["load_latency"][0]["closed_loop_max_iops"]
            .as_f64()
            .unwrap()
            > 0.0,
        "{a}"
    );
    assert_eq!(a["load_latency"][0]["curve"].as_array().unwrap().len(), 5);
    assert!(
        a["batching"][0]["parallelism"]["max_speedup"]
            .as_f64()
            .unwrap()
            > 0.0,
        "{a}"
    );
    // Breakdown: a traced point, or skipped with the reason.
    let bd = step("breakdown");
    let traced = points.iter().find(|p| p["params"]["step"] == "breakdown");
    match (&traced, bd["skipped"].as_str()) {
        (Some(p), None) => assert!(p["extra"]["trace"]["breakdown"]["stages"].is_array(), "{p}"),
        (None, Some(why)) => eprintln!("breakdown skipped: {why}"),
        other => panic!("breakdown step inconsistent: {other:?}"),
    }
    // Database: YCSB A and C on RocksDB (load and run phases).
    assert!(step("kv")["skipped"].is_null(), "{steps:?}");
    let kv: Vec<_> = points
        .iter()
        .filter(|p| p["params"]["step"] == "kv")
        .collect();
    assert_eq!(kv.len(), 4, "{kv:?}");
    assert!(kv.iter().all(|p| p["extra"]["kv"].is_object()));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("id=\"load-latency\"") && html.contains("id=\"kv-throughput\""));
    if traced.is_some() {
        assert!(html.contains("id=\"breakdown\""));
    }
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("batching: effective parallelism"),
        "{stdout}"
    );
    assert!(stdout.contains("load-latency knee"), "{stdout}");
}
