//! The iscsi engine (libiscsi) against a real tgtd on loopback: data
//! written is read back with --verify, SYNCHRONIZE CACHE for --fsync-every,
//! several sessions, the export in provenance, a target that dies mid-run
//! leaves the points measured before it and a clear error, and bad URLs or
//! targets exit 2 naming --target. tgtd and libiscsi come from
//! scripts/install-deps.sh; tgtd needs root (CI runs as root).

mod common;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{have, text, workdir};

const IQN: &str = "iqn.2025-11.io.iolab:test";

/// tgtd on a loopback port with one LUN on a file; stopped when dropped.
struct Tgtd {
    child: Child,
    control: u32,
    port: u16,
}

impl Tgtd {
    fn url(&self) -> String {
        format!("iscsi://127.0.0.1:{}/{IQN}/1", self.port)
    }

    fn adm(&self, args: &[&str]) -> bool {
        Command::new("tgtadm")
            .arg("-C")
            .arg(self.control.to_string())
            .args(args)
            .output()
            .is_ok_and(|o| o.status.success())
    }
}

impl Drop for Tgtd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        for s in ["", ".lock"] {
            let _ = std::fs::remove_file(format!("/var/run/tgtd/socket.{}{s}", self.control));
        }
    }
}

fn tgtd(backing: &Path) -> Option<Tgtd> {
    // SAFETY: geteuid has no preconditions.
    if !have("tgtd") || unsafe { libc::geteuid() } != 0 {
        eprintln!(
            "skipped: tgtd (root) is not available here (scripts/install-deps.sh installs it)"
        );
        return None;
    }
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // Apart from `iolab remote`'s (1000..21000); tgtd refuses large values.
    let control = 21_000 + (std::process::id() * 31 + port as u32) % 10_000;
    let child = Command::new("tgtd")
        .args([
            "-f",
            "-C",
            &control.to_string(),
            "--iscsi",
            &format!("portal=127.0.0.1:{port}"),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t = Tgtd {
        child,
        control,
        port,
    };
    let start = Instant::now();
    while !t.adm(&[
        "--lld", "iscsi", "--op", "new", "--mode", "target", "--tid", "1", "-T", IQN,
    ]) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "tgtd did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let b = backing.to_str().unwrap();
    assert!(t.adm(&[
        "--lld",
        "iscsi",
        "--op",
        "new",
        "--mode",
        "logicalunit",
        "--tid",
        "1",
        "--lun",
        "1",
        "-b",
        b,
        "--bstype",
        "aio"
    ]));
    assert!(
        t.adm(&["--lld", "iscsi", "--op", "bind", "--mode", "target", "--tid", "1", "-I", "ALL"])
    );
    Some(t)
}

fn image(dir: &Path) -> std::path::PathBuf {
    let img = dir.join("lun.img");
    std::fs::write(&img, vec![0u8; 16 << 20]).unwrap();
    img
}

fn device(args: &[&str]) -> std::process::Output {
    let mut all = vec!["device", "--quiet"];
    all.extend_from_slice(args);
    common::iolab(&all)
}

#[test]
fn writes_read_back_over_iscsi_with_sync_cache() {
    let dir = workdir();
    let Some(t) = tgtd(&image(dir.path())) else {
        return;
    };
    let url = t.url();
    let mut points = Vec::new();
    for (name, rw, count, extra) in [
        ("w", "write", "2048", &["--fsync-every", "64"][..]),
        ("rw", "randrw", "3000", &[][..]),
    ] {
        let json = dir.path().join(format!("{name}.json"));
        let mut args = vec![
            "--target", &url, "--size", "8m", "--rw", rw, "--bs", "4k", "--qd", "8",
        ];
        args.extend([
            "--io-count",
            count,
            "--verify",
            "--overwrite",
            "-o",
            json.to_str().unwrap(),
        ]);
        args.extend_from_slice(extra);
        let o = device(&args);
        assert!(o.status.success(), "{rw}: {}", text(&o));
        points.push(common::results(&json));
    }
    let p = &points[1]["points"][0];
    assert_eq!(
        p["job"]["engine"], "iscsi",
        "iscsi:// picks the iscsi engine"
    );
    assert_eq!(p["verify"]["mismatches"], 0);
    assert!(
        p["verify"]["blocks_checked"].as_u64().unwrap() > 1000,
        "{}",
        p["verify"]
    );
    let w = &points[0]["points"][0];
    // 2048 writes, a SYNCHRONIZE CACHE after every 64 completed.
    assert!(
        w["ops"]["fsync"]["ops"].as_u64().unwrap() >= 24,
        "{}",
        w["ops"]
    );
    let export = &points[1]["provenance"]["target"]["export"];
    assert_eq!(export["size_bytes"], 16 << 20);
    assert!(
        export["detail"].as_str().unwrap().contains("SCSI LUN"),
        "{export}"
    );
}

#[test]
fn several_sessions_at_depth() {
    let dir = workdir();
    let Some(t) = tgtd(&image(dir.path())) else {
        return;
    };
    let json = dir.path().join("r.json");
    let url = t.url();
    let o = device(&[
        "--target",
        &url,
        "--rw",
        "randread",
        "--qd",
        "16",
        "--jobs",
        "2",
        "--runtime",
        "500ms",
        "-o",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let p = &common::results(&json)["points"][0];
    assert!(p["total"]["ops"].as_u64().unwrap() > 100, "{}", p["total"]);
    assert!(
        p["errors"].as_object().is_none_or(|e| e.is_empty()),
        "{}",
        p["errors"]
    );
}

#[test]
fn a_target_that_dies_mid_run_keeps_the_points_before() {
    let dir = workdir();
    let Some(mut t) = tgtd(&image(dir.path())) else {
        return;
    };
    let json = dir.path().join("s.json");
    let url = t.url();
    let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args([
            "device",
            "--quiet",
            "--target",
            &url,
            "--rw",
            "randread",
            "--qd",
            "1,8",
            "--runtime",
            "1s",
        ])
        .args(["-o", json.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        let done = std::fs::read_to_string(&json)
            .ok()
            .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
            .is_some_and(|r| r["points"].as_array().is_some_and(|p| !p.is_empty()));
        if done {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "no first point");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    t.child.kill().unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(!o.status.success(), "{}", text(&o));
    let r = common::results(&json);
    assert_eq!(r["points"][0]["job"]["qd"], 1, "the first point is kept");
    let all = format!("{}{}", text(&o), r["warnings"]);
    assert!(
        all.contains("iscsi://127.0.0.1"),
        "the error names the target: {all}"
    );
}

#[test]
fn bad_targets_exit_2_naming_target() {
    let dir = workdir();
    // Nothing listens.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("iscsi://127.0.0.1:{port}/{IQN}/1");
    let o = device(&["--target", &url, "--io-count", "10"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--target"), "{}", text(&o));
    // A malformed URL.
    let o = device(&["--target", "iscsi://127.0.0.1/no-lun", "--io-count", "10"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--target"), "{}", text(&o));
    let Some(t) = tgtd(&image(dir.path())) else {
        return;
    };
    // A target the server does not have, and a LUN it does not have.
    for url in [
        format!("iscsi://127.0.0.1:{}/iqn.2025-11.io.iolab:nope/1", t.port),
        format!("iscsi://127.0.0.1:{}/{IQN}/7", t.port),
    ] {
        let o = device(&["--target", &url, "--io-count", "10"]);
        assert_eq!(o.status.code(), Some(2), "{url}: {}", text(&o));
        assert!(text(&o).contains("--target"), "{}", text(&o));
    }
    // Writes need --overwrite, as on any remote export.
    let o = device(&[
        "--target",
        &t.url(),
        "--rw",
        "randwrite",
        "--io-count",
        "10",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--overwrite"), "{}", text(&o));
}
