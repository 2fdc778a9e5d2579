//! iolab's NVMe/TCP initiator (codec, control path and engine) against
//! Linux's own target: Debian's kernel booted under qemu
//! (`scripts/linux-vm.sh`), nvmet serving a 64 MiB file on a port
//! forwarded to loopback. Connect, enable, Identify, queues, data both ways
//! (in-capsule, R2T/H2CData, C2HData), Flush, an error status in words and
//! a clean shutdown, without and with header and data digests; then
//! `iolab device` on the `nvme-tcp://` URL: a write pass and a verified
//! random pass pipelined at depth 8 on two associations, with fsyncs.
//! Functional only (emulated CPU): no timings.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::common;

use common::have;
use iolab::engine::nvmetcp::codec::{self, Digests, Sqe};
use iolab::engine::nvmetcp::handshake::{connect_admin, connect_io, Params};
use iolab::engine::nvmetcp::identify::CC_SHUTDOWN;
use iolab::engine::nvmetcp::keep_alive::AdminKeeper;

const NQN: &str = "nqn.2025-11.io.iolab:linux";

fn script() -> String {
    format!("{}/scripts/linux-vm.sh", env!("CARGO_MANIFEST_DIR"))
}

/// The VM, powered off (killed) on drop.
struct Vm(Child);

impl Drop for Vm {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Boot the VM with nvmet forwarded to `port`; None (said) when it cannot run here.
fn boot(port: u16) -> Option<Vm> {
    for tool in ["qemu-system-x86_64", "busybox", "cpio"] {
        if !have(tool) {
            eprintln!("SKIP: {tool} is not installed (scripts/install-deps.sh installs it)");
            return None;
        }
    }
    let prep = Command::new("bash")
        .args([&script(), "prepare"])
        .output()
        .unwrap();
    if !prep.status.success() {
        eprintln!(
            "SKIP: the kernel image cannot be prepared: {}",
            String::from_utf8_lossy(&prep.stderr)
        );
        return None;
    }
    let mut child = Command::new("bash")
        .args([&script(), "nvmet", &port.to_string()])
        .env("LIMIT", "240")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let vm = Vm(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if line.contains("IOLAB-NVMET-READY") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(180))
        .expect("the VM's nvmet was not ready within 180 s");
    Some(vm)
}

fn pattern(n: usize, k: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(29).wrapping_add(k))
        .collect()
}

fn round_trip(addr: &str, digests: Digests) {
    let p = Params {
        subnqn: NQN.into(),
        hostnqn: "nqn.2025-11.io.iolab:host".into(),
        hostid: [9; 16],
        nsid: 1,
        digests,
        queue_size: 32,
        kato_ms: 120_000,
    };
    let (mut admin, info) = connect_admin(addr, &p).unwrap();
    assert_eq!(info.id.model, "Linux");
    assert_eq!(info.id.subnqn, NQN);
    assert_eq!(info.ns.bytes(), 64 << 20);
    assert!(info.cap.nvm && info.io_queues >= 1, "{info:?}");
    let mut q = connect_io(addr, &p, &info, 1).unwrap();
    assert_eq!(
        q.digests, digests,
        "the controller took the digests asked for"
    );
    let bs = info.ns.block_size;
    let small = pattern(4096, 1);
    assert!(info.id.in_capsule_data() >= 4096, "{:?}", info.id);
    let cid = q.next_cid();
    q.command(
        &Sqe::write(cid, 1, 8, 4096 / bs, 4096, true),
        &small,
        &mut Vec::new(),
    )
    .unwrap();
    // 1 MiB: the controller asks for it with R2T.
    let big = pattern(1 << 20, 2);
    let cid = q.next_cid();
    q.command(
        &Sqe::write(cid, 1, 4096, (1 << 20) / bs, 1 << 20, false),
        &big,
        &mut Vec::new(),
    )
    .unwrap();
    for (lba, want) in [(8u64, &small), (4096, &big)] {
        let mut got = Vec::new();
        let cid = q.next_cid();
        let n = want.len() as u32;
        q.command(&Sqe::read(cid, 1, lba, n / bs, n), &[], &mut got)
            .unwrap();
        assert!(got == *want, "lba {lba}: data read back differs");
    }
    let cid = q.next_cid();
    q.command(&Sqe::flush(cid, 1), &[], &mut Vec::new())
        .unwrap();
    let cid = q.next_cid();
    let e = q
        .command(
            &Sqe::read(cid, 1, info.ns.nsze, 1, bs),
            &[],
            &mut Vec::new(),
        )
        .unwrap_err();
    // Linux answers Capacity Exceeded (0x81) or LBA Out of Range (0x80).
    assert!(format!("{e:#}").contains("(type 0 code 0x8"), "{e:#}");
    // A clean shutdown before the sockets close.
    let cid = admin.next_cid();
    let shn = Sqe::property_set(cid, codec::PROP_CC, false, CC_SHUTDOWN as u64);
    admin.command(&shn, &[], &mut Vec::new()).unwrap();
}

/// `iolab device` on `url`: a write pass over the first 8 MiB, then random
/// reads and writes checked against it on two jobs, at depth 8 with a
/// flush every 50 writes.
fn verified_passes(url: &str, bs_kib: usize) {
    let dir = common::workdir();
    let bs = format!("{bs_kib}k");
    let whole = (8192 / bs_kib).to_string();
    for (name, rw, count, jobs) in [("w", "write", &*whole, "1"), ("rw", "randrw", "1500", "2")] {
        let json = dir.path().join(format!("{name}.json"));
        let o = common::iolab(&[
            "device",
            "--target",
            url,
            "--size",
            "8m",
            "--rw",
            rw,
            "--bs",
            &bs,
            "--qd",
            "8",
            "--jobs",
            jobs,
            "--io-count",
            count,
            "--fsync-every",
            "50",
            "--verify",
            "--overwrite",
            "--quiet",
            "-o",
            json.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{url} {rw}: {}", common::text(&o));
        let p = &common::results(&json)["points"][0];
        assert_eq!(p["job"]["engine"], "nvme-tcp", "{url}");
        assert_eq!(p["verify"]["mismatches"], 0, "{url} {rw}");
        if rw == "randrw" {
            assert!(
                p["verify"]["blocks_checked"].as_u64().unwrap() > 100,
                "{url}: {}",
                p["verify"]
            );
        }
    }
}

/// An association with a 1 s keep-alive timeout, idle for 3.5 s: with the
/// keeper thread sending Keep Alive its I/O queue still works; without
/// it, nvmet has torn the controller down and the same read fails.
fn keep_alive(addr: &str) {
    let p = Params {
        subnqn: NQN.into(),
        hostnqn: "nqn.2025-11.io.iolab:host".into(),
        hostid: [9; 16],
        nsid: 1,
        digests: Digests::default(),
        queue_size: 8,
        kato_ms: 1000,
    };
    let read = |q: &mut iolab::engine::nvmetcp::handshake::Queue| {
        let cid = q.next_cid();
        q.command(&Sqe::read(cid, 1, 0, 1, 4096), &[], &mut Vec::new())
    };
    let (admin, info) = connect_admin(addr, &p).unwrap();
    let mut q = connect_io(addr, &p, &info, 1).unwrap();
    let mut keeper = AdminKeeper::start(admin, p.kato_ms).unwrap();
    std::thread::sleep(Duration::from_millis(3500));
    read(&mut q).expect("kept alive");
    keeper.stop();

    let (_admin, info) = connect_admin(addr, &p).unwrap();
    let mut q = connect_io(addr, &p, &info, 1).unwrap();
    q.sock
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    std::thread::sleep(Duration::from_millis(3500));
    assert!(
        read(&mut q).is_err(),
        "nvmet kept an association without Keep Alive"
    );
}

#[test]
fn the_initiator_speaks_to_linux_nvmet() {
    let port = common::free_port();
    let Some(_vm) = boot(port) else {
        return;
    };
    let addr = format!("127.0.0.1:{port}");
    round_trip(&addr, Digests::default());
    round_trip(
        &addr,
        Digests {
            header: true,
            data: true,
        },
    );
    keep_alive(&addr);
    let url = format!("nvme-tcp://{addr}/{NQN}");
    // 4 KiB writes travel in the capsule, 64 KiB ones after R2T.
    verified_passes(&url, 4);
    verified_passes(&format!("{url}?hdr_digest=1&data_digest=1"), 64);
}

/// A controller that goes away mid-run (the VM killed in the second point)
/// ends that point with an error naming the NVMe/TCP queue; the first
/// point is kept.
#[test]
fn a_controller_that_dies_mid_run_ends_the_point_clearly() {
    let port = common::free_port();
    let Some(vm) = boot(port) else {
        return;
    };
    let dir = common::workdir();
    let json = dir.path().join("d.json");
    let url = format!("nvme-tcp://127.0.0.1:{port}/{NQN}");
    let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["device", "--quiet", "--target", &url, "--size", "8m"])
        .args(["--rw", "randread", "--qd", "1,4", "--runtime", "2s"])
        .arg("-o")
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let points_in = || -> usize {
        std::fs::read_to_string(&json)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v["points"].as_array().map(|a| a.len()))
            .unwrap_or(0)
    };
    let t0 = std::time::Instant::now();
    while points_in() == 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the first point never finished"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    drop(vm);
    let o = child.wait_with_output().unwrap();
    let out = common::text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let r = common::results(&json);
    let warnings = r["warnings"].to_string();
    assert!(warnings.contains("NVMe/TCP I/O queue"), "{warnings}");
    assert_eq!(r["points"].as_array().unwrap().len(), 1, "{warnings}");
    assert!(!out.contains("panicked"), "{out}");
}

/// The other direction: the guest kernel's nvme-tcp initiator connects to
/// iolab's NVMe/TCP target on the host (`iolab serve --protocol nvme-tcp`;
/// the host is 10.0.2.2 from the guest), writes 1 MiB of a pattern with a
/// flush and reads it back past its page cache; the test checks the bytes
/// in the target's backing file on the host.
#[test]
fn linux_nvme_tcp_initiator_speaks_to_iolabs_target() {
    if let Some(why) = common::vm::unavailable() {
        eprintln!("SKIP: {why}");
        return;
    }
    let dir = common::workdir();
    let backing = dir.path().join("disk");
    std::fs::write(&backing, vec![0u8; 64 << 20]).unwrap();
    let port = common::free_port();
    let nqn = "nqn.2025-11.io.iolab:guest-test";
    let mut serve = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args([
            "serve",
            "--protocol",
            "nvme-tcp",
            "--nqn",
            nqn,
            "--overwrite",
        ])
        .arg("-t")
        .arg(&backing)
        .args([
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--time-limit",
            "300s",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "iolab serve did not listen"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let console = common::vm::run_to_end(
        "initiator",
        &[&port.to_string(), nqn],
        Duration::from_secs(180),
    );
    let _ = serve.kill();
    let _ = serve.wait();
    let line = console
        .lines()
        .find_map(|l| l.find("IOLAB-MD5").map(|at| &l[at..]))
        .unwrap_or_else(|| panic!("the guest reported no result:\n{console}"));
    let sums: Vec<&str> = line.split_whitespace().skip(1).collect();
    assert_eq!(sums.len(), 2, "{line}");
    assert_eq!(
        sums[0], sums[1],
        "the guest read back other bytes: {console}"
    );
    let written: Vec<u8> = (0..16384)
        .flat_map(|i| format!("iolab guest line {i:046}\n").into_bytes())
        .collect();
    let on_host = std::fs::read(&backing).unwrap();
    assert!(
        on_host[..written.len()] == written[..],
        "the backing file lacks the guest's pattern: it starts with {:?}",
        String::from_utf8_lossy(&on_host[..128])
    );
}
