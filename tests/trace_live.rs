//! Live tests of `iolab trace` as root on a scratch file: the stages add up
//! to the measured latency, and the private tracing instance is gone
//! afterwards, also when the run is interrupted with SIGINT. They skip (and
//! say why) without root or tracefs.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TRACEFS: &str = "/sys/kernel/tracing";

/// Root and tracefs. The test never mounts tracefs itself (it stayed
/// mounted after the suite): iolab mounts it when missing and takes it
/// down again, which these tests also check.
fn can_trace() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    let known = std::fs::read_to_string("/proc/filesystems")
        .is_ok_and(|f| f.lines().any(|l| l.ends_with("\ttracefs")));
    if !Path::new(TRACEFS).is_dir() || !known {
        return Some("this kernel has no tracefs".into());
    }
    None
}

fn instance(pid: u32) -> std::path::PathBuf {
    Path::new(TRACEFS)
        .join("instances")
        .join(format!("iolab-{pid}"))
}

#[test]
fn traced_psync_and_uring_stages_sum_to_the_measured_latency() {
    if let Some(why) = can_trace() {
        eprintln!("SKIP traced_psync_and_uring_stages_sum_to_the_measured_latency: {why}");
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let out = dir.path().join("trace.json");
    let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args([
            "trace",
            "--size",
            "64M",
            "--runtime",
            "1s",
            "--engine",
            "psync,io_uring",
            "--qd",
            "4",
            "--buffer-kb",
            "8192",
        ])
        .arg("--dir")
        .arg(dir.path())
        .arg("-o")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let o = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        stdout.contains("D2irq device") || stdout.contains("D2C device"),
        "{stdout}"
    );
    assert!(!instance(pid).exists(), "tracing instance left behind");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(json["kind"], "trace");
    let points = json["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    for p in points {
        let t = &p["extra"]["trace"];
        let b = &t["breakdown"];
        let n = b["requests"].as_u64().unwrap();
        let unmatched = t["unmatched_requests"].as_u64().unwrap();
        assert!(n > 100, "{t}");
        assert!(
            unmatched * 20 < n,
            "too many requests without block I/O: {unmatched} of {n}"
        );
        // The stages of each request sum to its measured latency: the sum of
        // stage shares is 100% and the residual (out-of-order edges) is tiny.
        let shares: f64 = b["stages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["share"].as_f64().unwrap())
            .sum();
        assert!((shares - 1.0).abs() < 1e-6, "shares sum to {shares}");
        let residual = b["stages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["stage"] == "residual")
            .unwrap();
        assert!(residual["share"].as_f64().unwrap() < 0.01, "{residual}");
        // The breakdown's total is the user-measured latency of the matched requests.
        let total = b["total"]["mean_ns"].as_f64().unwrap();
        let measured = t["traced_mean_ns"].as_f64().unwrap();
        assert!(
            (total / measured - 1.0).abs() < 0.05,
            "breakdown total {total} vs measured {measured}"
        );
        assert!(t["lost"]["overrun"].as_u64().is_some());
    }
    // The scratch file is gone too.
    assert_eq!(
        std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path() != out)
            .count(),
        0
    );
}

#[test]
fn sigint_mid_run_removes_the_tracing_instance() {
    if let Some(why) = can_trace() {
        eprintln!("SKIP sigint_mid_run_removes_the_tracing_instance: {why}");
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args([
            "trace",
            "--size",
            "64M",
            "--runtime",
            "60s",
            "--no-overhead",
            "--buffer-kb",
            "4096",
        ])
        .arg("--dir")
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let start = Instant::now();
    while !instance(pid).exists() && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(instance(pid).exists(), "the instance never appeared");
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(130),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        !instance(pid).exists(),
        "tracing instance left behind after SIGINT"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "scratch file left behind"
    );
}

#[test]
fn without_root_the_job_runs_untraced_and_says_why() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || Command::new("setpriv").arg("--help").output().is_err() {
        eprintln!("SKIP without_root_the_job_runs_untraced_and_says_why: needs root and setpriv to drop privileges");
        return;
    }
    // A world-writable directory on the real disk, with a copy of the binary nobody can run.
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let d = dir.path();
    std::fs::set_permissions(d, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let bin = d.join("iolab");
    std::fs::copy(env!("CARGO_BIN_EXE_iolab"), &bin).unwrap();
    let o = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        // Its crash records in the test's directory, not a /tmp/iolab-65534 left behind.
        .env("IOLAB_STATE_DIR", d.join("state"))
        .arg(&bin)
        .args(["trace", "--size", "16M", "--runtime", "300ms", "--dir"])
        .arg(d)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        stdout.contains("tracing: unavailable (not root"),
        "{stdout}"
    );
    assert!(stdout.contains("untraced: mean latency"), "{stdout}");
}

#[test]
fn lost_events_are_detected_and_reported() {
    if let Some(why) = can_trace() {
        eprintln!("SKIP lost_events_are_detected_and_reported: {why}");
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    // An 8 KiB ring buffer per CPU cannot hold 25 ms of a QD16 job's events.
    let o = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args([
            "trace",
            "--size",
            "32M",
            "--runtime",
            "1s",
            "--engine",
            "io_uring",
            "--qd",
            "16",
            "--no-overhead",
            "--buffer-kb",
            "8",
        ])
        .arg("--dir")
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.contains("WARNING: the kernel dropped"), "{stdout}");
}
