//! The nvme-tcp engine through the CLI against iolab's own NVMe/TCP
//! target (`iolab serve --protocol nvme-tcp` on loopback): verified write
//! and random passes pipelined on two associations, with and without
//! digests, in-capsule and R2T writes, flushes; the open loop; a --qd
//! deeper than the controller's queues refused before the run (exit 2,
//! naming --qd); the probe's facts in provenance. Linux's own target and
//! initiator are in tests/nvmetcp_linux.rs.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{iolab, text, workdir};

/// `iolab serve --protocol nvme-tcp` on a free loopback port, killed on drop.
struct Served {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Served {
    fn drop(&mut self) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let _ = self.child.wait();
    }
}

fn serve() -> Served {
    let dir = workdir();
    let port = common::free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["serve", "--protocol", "nvme-tcp", "--size", "32m", "-t"])
        .arg(dir.path())
        .args([
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--time-limit",
            "120s",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "iolab serve did not listen"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Served {
        child,
        url: format!("nvme-tcp://127.0.0.1:{port}/nqn.2025-11.io.iolab:target"),
        _dir: dir,
    }
}

fn device(url: &str, json: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["device", "--target", url, "--size", "16m", "--overwrite"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", json.to_str().unwrap(), "--quiet"]);
    let o = iolab(&all);
    assert!(o.status.success(), "{args:?}: {}", text(&o));
    common::results(json)
}

#[test]
fn verified_passes_with_and_without_digests() {
    let srv = serve();
    let dir = workdir();
    for (query, bs, whole) in [
        ("", "4k", "4096"),
        ("?hdr_digest=1&data_digest=1", "64k", "256"),
    ] {
        let url = format!("{}{query}", srv.url);
        let w = dir.path().join("w.json");
        device(
            &url,
            &w,
            &[
                "--rw",
                "write",
                "--bs",
                bs,
                "--qd",
                "4",
                "--io-count",
                whole,
                "--verify",
            ],
        );
        let rw = dir.path().join("rw.json");
        let r = device(
            &url,
            &rw,
            &[
                "--rw",
                "randrw",
                "--bs",
                bs,
                "--qd",
                "16",
                "--jobs",
                "2",
                "--io-count",
                "3000",
                "--fsync-every",
                "25",
                "--verify",
            ],
        );
        let p = &r["points"][0];
        assert_eq!(p["job"]["engine"], "nvme-tcp");
        assert_eq!(p["verify"]["mismatches"], 0, "{query}");
        assert!(
            p["verify"]["blocks_checked"].as_u64().unwrap() > 500,
            "{}",
            p["verify"]
        );
        let export = &r["provenance"]["target"]["export"];
        assert_eq!(export["size_bytes"], 32 << 20);
        assert_eq!(export["max_depth"], 126, "{export}");
        assert!(
            export["detail"]
                .as_str()
                .unwrap()
                .contains("iolab NVMe/TCP target"),
            "{export}"
        );
    }
}

#[test]
fn the_open_loop_runs_on_nvme_tcp() {
    let srv = serve();
    let dir = workdir();
    let j = dir.path().join("o.json");
    let r = device(
        &srv.url,
        &j,
        &["--rw", "randread", "--rate", "500", "--runtime", "1s"],
    );
    let ol = &r["points"][0]["extra"]["open_loop"];
    let achieved = ol["achieved_iops"].as_f64().unwrap();
    assert!(achieved > 0.0, "{ol}");
}

#[test]
fn a_queue_deeper_than_the_controllers_is_refused_before_the_run() {
    let srv = serve();
    let o = iolab(&[
        "device",
        "--target",
        &srv.url,
        "--rw",
        "randread",
        "--qd",
        "200",
        "--io-count",
        "10",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--qd"), "{}", text(&o));
}
