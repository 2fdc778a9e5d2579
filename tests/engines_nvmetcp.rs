//! The nvme-tcp engine through the CLI against iolab's own NVMe/TCP
//! target (`iolab serve --protocol nvme-tcp` on loopback, and across a
//! network namespace pair): verified write and random passes pipelined on
//! two associations, with and without digests, in-capsule and R2T writes,
//! flushes; the open loop; a --qd
//! deeper than the controller's queues refused before the run (exit 2,
//! naming --qd); the probe's facts in provenance. Linux's own target and
//! initiator are in tests/linux_vm/nvmet_tcp.rs.

mod common;

use std::io::{BufRead, BufReader};
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

/// `iolab serve` on an ephemeral loopback port; its URL from its first line.
fn serve() -> Served {
    let dir = workdir();
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["serve", "--protocol", "nvme-tcp", "--size", "32m", "-t"])
        .arg(dir.path())
        .args(["--listen", "127.0.0.1:0", "--time-limit", "120s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("nvme-tcp://"))
        .unwrap_or_else(|| panic!("iolab serve said {line:?}"))
        .trim_end_matches("?nsid=1")
        .to_string();
    Served {
        child,
        url,
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
                .contains("iolab NVMe-oF target"),
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

/// Two network namespaces joined by a veth pair, deleted on drop.
struct NamespacePair {
    names: [String; 2],
}

impl NamespacePair {
    fn new() -> Option<NamespacePair> {
        if unsafe { libc::geteuid() } != 0 || !common::have("ip") {
            eprintln!("SKIP: network namespaces need root and ip");
            return None;
        }
        let pid = std::process::id();
        let pair = NamespacePair {
            names: [
                format!("iolabtest-{pid}-ini"),
                format!("iolabtest-{pid}-tgt"),
            ],
        };
        let [a, b] = &pair.names;
        let (va, vb) = (format!("it{pid}a"), format!("it{pid}b"));
        for args in [
            vec!["netns", "add", a],
            vec!["netns", "add", b],
            vec![
                "-n", a, "link", "add", &va, "type", "veth", "peer", "name", &vb, "netns", b,
            ],
            vec!["-n", a, "addr", "add", "10.201.77.1/30", "dev", &va],
            vec!["-n", b, "addr", "add", "10.201.77.2/30", "dev", &vb],
            vec!["-n", a, "link", "set", &va, "up"],
            vec!["-n", b, "link", "set", &vb, "up"],
            vec!["-n", a, "link", "set", "lo", "up"],
            vec!["-n", b, "link", "set", "lo", "up"],
        ] {
            let o = Command::new("ip").args(&args).output().unwrap();
            assert!(o.status.success(), "ip {args:?}: {}", text(&o));
        }
        Some(pair)
    }

    fn exec(&self, which: usize, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.names[which], program]);
        c
    }
}

impl Drop for NamespacePair {
    fn drop(&mut self) {
        for n in &self.names {
            let _ = Command::new("ip").args(["netns", "delete", n]).output();
        }
    }
}

/// The engine against iolab's target across a namespace pair (the target
/// in one namespace, the initiator in the other, TCP over the veth), with
/// --verify: a write pass, then verified random reads and writes.
#[test]
fn verified_across_a_network_namespace_pair() {
    let Some(ns) = NamespacePair::new() else {
        return;
    };
    let dir = workdir();
    let mut server = ns
        .exec(1, env!("CARGO_BIN_EXE_iolab"))
        .args(["serve", "--protocol", "nvme-tcp", "--size", "16m", "-t"])
        .arg(dir.path())
        .args(["--listen", "10.201.77.2:4420", "--allow-remote"])
        .args(["--time-limit", "120s"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let url = "nvme-tcp://10.201.77.2:4420/nqn.2025-11.io.iolab:target";
    let out = workdir();
    let json = out.path().join("n.json");
    let run = |args: &[&str]| {
        ns.exec(0, env!("CARGO_BIN_EXE_iolab"))
            .args([
                "device",
                "--target",
                url,
                "--size",
                "8m",
                "--overwrite",
                "--quiet",
                "-o",
            ])
            .arg(&json)
            .args(args)
            .output()
            .unwrap()
    };
    let write = [
        "--rw",
        "write",
        "--bs",
        "4k",
        "--qd",
        "8",
        "--io-count",
        "2048",
        "--verify",
    ];
    let t0 = Instant::now();
    let mut o = run(&write);
    while !o.status.success() && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(200)); // the target is still starting
        o = run(&write);
    }
    assert!(o.status.success(), "{}", text(&o));
    let o = run(&[
        "--rw",
        "randrw",
        "--bs",
        "4k",
        "--qd",
        "16",
        "--io-count",
        "4000",
        "--verify",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let p = &common::results(&json)["points"][0];
    assert_eq!(p["job"]["engine"], "nvme-tcp");
    assert_eq!(p["verify"]["mismatches"], 0);
    assert!(
        p["verify"]["blocks_checked"].as_u64().unwrap() > 1000,
        "{}",
        p["verify"]
    );
    // SAFETY: signalling our own child (ip netns exec became iolab serve).
    unsafe { libc::kill(server.id() as i32, libc::SIGINT) };
    let _ = server.wait();
}
