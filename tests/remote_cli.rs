//! `iolab remote` and `iolab serve` from the outside: DAS vs NBD targets in
//! two network namespaces (root; CI runs as root) or on loopback, both
//! sides measured, the breakdown, the report section; nothing left behind
//! after the run, after Ctrl-C at random points, after a second Ctrl-C or
//! a SIGKILL (the next start sweeps); bad input exits 2 naming the field;
//! iolab's target against fio's nbd engine (libnbd) with verification.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{free_port, have, iolab, text, workdir};
use iolab::testbed::nvme_kernel::NvmeTrtype;

/// Namespaces work here (root and iproute2): the path CI takes.
fn namespaces_work() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    root && have("ip")
}

/// Network namespaces a run with this pid made, still present.
fn namespaces_of(pid: u32) -> Vec<String> {
    std::fs::read_dir("/run/netns")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&format!("iolab-{pid}-")))
                .collect()
        })
        .unwrap_or_default()
}

/// Processes whose command line names `dir` (servers of its scratch file).
fn processes_naming(dir: &Path) -> Vec<String> {
    let needle = dir.to_string_lossy().into_owned();
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .chars()
                .all(|c| c.is_ascii_digit())
        })
        .filter(|e| e.file_name().to_string_lossy() != me)
        .filter_map(|e| {
            let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            cmd.contains(&needle).then_some(cmd)
        })
        .collect()
}

fn scratch_left(dir: &Path) -> bool {
    common::files_in(dir).iter().any(|p| {
        p.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("iolab-scratch-")
    })
}

/// Wait for a child (at most 60 s), killing it if it hangs.
fn wait_bounded(mut child: Child) -> std::process::Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("iolab did not exit within 60 s of the signal");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// Wait up to `secs` for `cond` while `child` runs (it must not end first).
fn wait_while_running(child: &mut Child, secs: u64, what: &str, cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(secs),
            "not within {secs} s: {what}"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "iolab remote ended before: {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// tgtd processes a run with this pid started (its control port is
/// 1000 + pid % 20000, see remote::servers).
fn tgtd_of(pid: u32) -> Vec<String> {
    let needle = format!("tgtd -f -C {} ", 1000 + pid % 20_000);
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.starts_with(&needle))
        .collect()
}

/// Mounts, loop devices and mount-point directories of a database volume
/// under `data` (or over an nbdfuse file) that are still there.
fn volumes_left(data: &Path) -> Vec<String> {
    let needle = data.to_string_lossy().into_owned();
    let mut left: Vec<String> = std::fs::read_to_string("/proc/mounts")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(&needle))
        .map(|l| format!("mount {l}"))
        .collect();
    for e in std::fs::read_dir("/sys/block").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let backing = std::fs::read_to_string(e.path().join("loop/backing_file"));
        if let (true, Ok(b)) = (name.starts_with("loop"), backing) {
            if b.contains(&needle) || b.trim_end().ends_with("/iolab-nbd") {
                left.push(format!("{name} over {}", b.trim_end()));
            }
        }
    }
    for p in common::files_in(data) {
        if p.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("iolab-volume-")
        {
            left.push(format!("directory {}", p.display()));
        }
    }
    left
}

/// Loop devices, mounts and nbdfuse work here (a database can go on a volume).
fn volumes_work() -> bool {
    namespaces_work() && Path::new("/dev/loop-control").exists() && have("nbdfuse")
}

fn assert_nothing_left(pid: u32, data: &Path, state: &Path) {
    // A filesystem still busy at a second Ctrl-C is detached lazily: the
    // kernel releases it, and the loop device under it, once iolab exits.
    let start = Instant::now();
    while !volumes_left(data).is_empty() && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        volumes_left(data).is_empty(),
        "volumes left: {:?}",
        volumes_left(data)
    );
    assert!(
        namespaces_of(pid).is_empty(),
        "namespaces left: {:?}",
        namespaces_of(pid)
    );
    // Servers get up to two seconds after SIGTERM before SIGKILL.
    let start = Instant::now();
    while !processes_naming(data).is_empty() && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    while !tgtd_of(pid).is_empty() && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(tgtd_of(pid).is_empty(), "tgtd left: {:?}", tgtd_of(pid));
    assert!(
        processes_naming(data).is_empty(),
        "servers left: {:?}",
        processes_naming(data)
    );
    assert!(!scratch_left(data), "scratch file left");
    let records: Vec<_> = common::files_in(state);
    assert!(records.is_empty(), "crash records left: {records:?}");
}

fn remote(data: &Path, out: &Path, state: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
    c.args([
        "remote",
        "-t",
        data.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ])
    .args(["--ramp", "100ms", "--quiet"])
    .args(extra)
    .args(if extra.contains(&"--size") {
        &[][..]
    } else {
        &["--size", "32m"][..]
    })
    .env("IOLAB_STATE_DIR", state)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    c
}

#[test]
fn das_and_nbd_targets_side_by_side_with_both_sides_measured() {
    let (data, out, state) = (workdir(), workdir(), workdir());
    let mut transports = "das,iolab,nvme-tcp".to_string();
    if have("nbdkit") {
        transports.push_str(",nbdkit-memory");
    } else {
        eprintln!("nbdkit is not installed: no nbdkit transport");
    }
    if have("tgtd") && namespaces_work() {
        transports.push_str(",tgtd");
    } else {
        eprintln!("tgtd (root) is not available: no iSCSI transport");
    }
    let child = remote(
        data.path(),
        out.path(),
        state.path(),
        &[
            "--transports",
            &transports,
            "--mixes",
            "100,0",
            "--qd",
            "1,4",
        ],
    )
    .args(["--runtime", "300ms", "--breakdown", "300", "--rates", "50"])
    .spawn()
    .unwrap();
    let pid = child.id();
    let o = wait_bounded(child);
    assert!(o.status.success(), "{}", text(&o));
    let r = common::results(&out.path().join("results.json"));
    let ntransports = transports.split(',').count();
    let points = r["points"].as_array().unwrap();
    // Four closed-loop points and one open-loop point (50% of the
    // read-only QD4 point) per transport.
    assert_eq!(points.len(), 5 * ntransports, "{}", text(&o));
    // Which initiator ran, and what the kernel offers, per protocol.
    let initiators = r["extra"]["remote"]["initiators"].as_array().unwrap();
    assert_eq!(initiators.len(), 3, "{initiators:?}");
    for i in initiators {
        let module = i["module"].as_str().unwrap();
        let loaded = Path::new("/sys/module").join(module).exists();
        assert_eq!(i["kernel"] == "loaded", loaded, "{i}");
        assert!(i["path"].as_str().unwrap().contains("user space") || module == "nvme_tcp");
    }
    let topology = r["extra"]["remote"]["topology"].as_str().unwrap();
    assert_eq!(
        topology == "namespaces",
        namespaces_work(),
        "{}",
        r["extra"]["remote"]
    );
    for p in points {
        let t = p["params"]["transport"].as_str().unwrap();
        if t == "das" {
            assert_eq!(p["job"]["engine"], "io_uring");
            assert!(p["extra"]["peers"].is_null());
            continue;
        }
        let engine = if t.starts_with("iscsi") {
            "iscsi"
        } else if t.starts_with("nvme-tcp") {
            "nvme-tcp"
        } else {
            "nbd"
        };
        assert_eq!(p["job"]["engine"], engine, "{t}");
        let peers = &p["extra"]["peers"];
        let cpu = &peers["processes"][0];
        assert_eq!(cpu["role"], t);
        // CPU per I/O falls back to clock ticks (10 ms) when a target
        // thread ended during the point: a 300 ms point on a busy machine
        // may cost its target less than one (seen under CI's load).
        let us = cpu["us_per_io"].as_f64().unwrap();
        assert!(us.is_finite() && us >= 0.0, "{t}: {peers}");
        let net = &peers["net"];
        assert!(net["tx_packets"].as_u64().unwrap() > 0, "{t}: {peers}");
        // Reads bring the data back; writes send it out: all but the
        // requests in flight when the link was first sampled, whose data
        // may have crossed before (a few dozen I/Os on a busy machine).
        let ops = p["total"]["ops"].as_u64().unwrap();
        let qd = p["job"]["qd"].as_u64().unwrap();
        let key = if p["params"]["rw"] == "randread" {
            "rx_bytes"
        } else {
            "tx_bytes"
        };
        let crossed = net[key].as_u64().unwrap();
        assert!(crossed >= ops.saturating_sub(qd) * 4096, "{t}: {peers}");
    }
    let rows = r["analysis"]["remote"].as_array().unwrap();
    assert_eq!(rows.len(), 4 * ntransports, "open-loop points are not rows");
    let open: Vec<_> = points
        .iter()
        .filter(|p| p["extra"]["open_loop"].is_object())
        .collect();
    assert_eq!(open.len(), ntransports);
    for p in &open {
        assert_eq!(p["extra"]["rate_pct_of_max"], 50.0, "{}", p["extra"]);
        let t = &p["params"]["transport"];
        let max = points
            .iter()
            .find(|q| &q["params"]["transport"] == t && q["extra"]["role"] == "closed_loop_max")
            .expect("the closed-loop maximum is marked");
        assert_eq!(max["params"]["qd"], "4");
        let target = p["extra"]["open_loop"]["target_iops"].as_f64().unwrap();
        let half = max["total"]["iops"].as_f64().unwrap() / 2.0;
        assert!((target - half).abs() < 1.0, "{target} vs {half}");
    }
    for row in rows.iter().filter(|x| x["transport"] != "das") {
        assert!(row["iops_vs_das"].as_f64().unwrap() > 0.0, "{row}");
        // In clock ticks at worst, as above: zero is a possible measure.
        assert!(
            row["target_cpu_us_per_io"].as_f64().unwrap() >= 0.0,
            "{row}"
        );
    }
    for own in ["nbd-iolab", "nvme-tcp-iolab"] {
        let b = &r["extra"]["remote"]["breakdown"][own];
        assert_eq!(b["requests"], 270, "{own}: {b} {}", r["warnings"]);
        let sum = common::stamped_sum(b);
        let lat = b["latency_ns"].as_f64().unwrap();
        assert!(
            (sum - lat).abs() < 1.0 && b["device_ns"].as_f64().unwrap() > 0.0,
            "{own}: {b}"
        );
    }
    // DAS, the reference: the initiator's share and the device's, summing
    // to its mean.
    let b = &r["extra"]["remote"]["breakdown"]["das"];
    assert_eq!(b["requests"], 270, "das: {b} {}", r["warnings"]);
    let (ini, dev) = (
        b["initiator_ns"].as_f64().unwrap(),
        b["device_ns"].as_f64().unwrap(),
    );
    let lat = b["latency_ns"].as_f64().unwrap();
    assert!(dev > 0.0 && (ini + dev - lat).abs() < 1.0, "das: {b}");
    assert!(b.get("fabric_out_ns").unwrap().as_f64() == Some(0.0), "{b}");
    // Targets other than iolab's own: the initiator's share and the rest.
    let all = r["extra"]["remote"]["breakdown"].as_object().unwrap();
    assert_eq!(all.len(), ntransports, "{:?}", all.keys());
    for (label, b) in all.iter().filter(|(_, b)| b.get("unstamped_ns").is_some()) {
        let rest = b["unstamped_ns"].as_f64().unwrap();
        let sum = b["initiator_ns"].as_f64().unwrap() + rest;
        let lat = b["latency_ns"].as_f64().unwrap();
        assert!(rest > 0.0 && (sum - lat).abs() < 1.0, "{label}: {b}");
    }
    let unstamped = all.values().filter(|b| b.get("unstamped_ns").is_some());
    assert_eq!(unstamped.count(), ntransports - 3, "{:?}", all);
    let html = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    assert!(html.contains("Unloaded latency breakdown, DAS as the reference"));
    // No --db: the report says the database runs exist and how to ask.
    assert!(html.contains("Not run: without --db"));
    for title in [
        "Local vs remote",
        "CPU per I/O, initiator and target",
        "Where the time of a remote request goes",
    ] {
        assert!(html.contains(title), "report lacks {title}");
    }
    assert_nothing_left(pid, data.path(), state.path());
}

/// `iolab remote` with one short QD1 read point per transport and a
/// database run (`db`: the --db flags) on a 96 MiB volume.
fn remote_db(dirs: (&Path, &Path, &Path), transports: &str, db: &[&str]) -> Command {
    let (data, out, state) = dirs;
    let mut c = remote(
        data,
        out,
        state,
        &["--transports", transports, "--size", "96m"],
    );
    c.args(["--mixes", "100", "--qd", "1", "--rates", "none"])
        .args(["--runtime", "200ms", "--breakdown", "0"])
        .args(db);
    c
}

/// RocksDB on ext4 on a loop device over the local file and over iolab's
/// NBD export through nbdfuse: every point verified, the chains recorded,
/// the rows and the report section there, iSCSI skipped with its reason,
/// and every mount, loop device and nbdfuse gone afterwards.
#[test]
fn a_database_on_the_local_and_the_remote_volume() {
    if !volumes_work() {
        eprintln!("SKIP: needs root, loop devices and nbdfuse");
        return;
    }
    let (data, out, state) = (workdir(), workdir(), workdir());
    let mut transports = "das,iolab".to_string();
    if have("tgtd") {
        transports.push_str(",tgtd");
    }
    let child = remote_db(
        (data.path(), out.path(), state.path()),
        &transports,
        &["--db", "800,4k", "--db-num", "2000", "--db-ops", "1000"],
    )
    .spawn()
    .unwrap();
    let pid = child.id();
    let o = wait_bounded(child);
    assert!(o.status.success(), "{}", text(&o));
    let r = common::results(&out.path().join("results.json"));
    let points = r["points"].as_array().unwrap();
    for t in ["das", "nbd-iolab"] {
        for v in ["800", "4096"] {
            let named = |bench: &str| {
                let name = format!("{t}: db {bench} {v}B");
                points
                    .iter()
                    .find(|p| p["name"] == name.as_str())
                    .unwrap_or_else(|| panic!("no point {name}: {}", text(&o)))
                    .clone()
            };
            let fill = named("fillseq");
            assert_eq!(fill["ops"]["write"]["ops"], 2000, "{t} {v}");
            let mix = named("readrandomwriterandom");
            assert_eq!(mix["params"]["transport"], t);
            assert_eq!(mix["params"]["role"], "db");
            assert_eq!(
                (&mix["ops"]["read"]["ops"], &mix["ops"]["write"]["ops"]),
                (&800.into(), &200.into()),
                "80 reads and 20 writes in every 100 operations"
            );
            // fillseq loaded every key: every read finds and checks its value.
            assert_eq!(mix["verify"]["blocks_checked"], 800, "{t} {v}");
            assert_eq!(mix["verify"]["mismatches"], 0, "{t} {v}");
        }
    }
    let db = &r["extra"]["remote"]["db"];
    let das = db["volumes"]["das"].as_str().unwrap();
    assert!(das.starts_with("ext4") && das.contains("/dev/loop"), "{db}");
    assert!(
        db["volumes"]["nbd-iolab"]
            .as_str()
            .unwrap()
            .contains("nbdfuse nbd://"),
        "{db}"
    );
    assert!(db["kernel_nbd"].is_string(), "{db}");
    let rows = r["analysis"]["remote_db"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{rows:?}");
    for row in rows {
        let vs = row["ops_vs_das"].as_f64().unwrap();
        if row["transport"] == "das" {
            assert_eq!(vs, 1.0);
        } else {
            assert!(vs > 0.0, "{row}");
        }
    }
    if transports.contains("tgtd") {
        let w = r["warnings"].to_string();
        assert!(w.contains("database on iscsi-tgtd skipped"), "{w}");
    }
    let html = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    assert!(html.contains("A database on the remote volume"));
    assert!(!html.contains("Not run: without --db"));
    assert!(html.contains("Read latency CDF, 4 KiB values"));
    assert_nothing_left(pid, data.path(), state.path());
}

/// Ctrl-C, a second Ctrl-C and a SIGKILL while a database runs on a volume:
/// the filesystem, the loop device, the FUSE mount and nbdfuse go too
/// (after the SIGKILL, at the next start, newest first).
#[test]
fn interrupts_while_a_database_runs_leave_no_volume() {
    if !volumes_work() {
        eprintln!("SKIP: needs root, loop devices and nbdfuse");
        return;
    }
    for (round, transport) in ["das", "iolab", "iolab"].into_iter().enumerate() {
        let (data, out, state) = (workdir(), workdir(), workdir());
        let mut child = remote_db(
            (data.path(), out.path(), state.path()),
            transport,
            &["--db", "4k", "--db-num", "3000", "--db-ops", "5000000"],
        )
        .spawn()
        .unwrap();
        let pid = child.id();
        wait_while_running(
            &mut child,
            60,
            "the database's filesystem was mounted",
            || {
                volumes_left(data.path())
                    .iter()
                    .any(|v| v.contains("iolab-ext4"))
            },
        );
        std::thread::sleep(Duration::from_millis(300));
        match round {
            0 => unsafe { libc::kill(pid as i32, libc::SIGINT) },
            1 => unsafe {
                libc::kill(pid as i32, libc::SIGINT);
                std::thread::sleep(Duration::from_millis(30));
                libc::kill(pid as i32, libc::SIGINT)
            },
            _ => {
                child.kill().unwrap();
                0
            }
        };
        let o = wait_bounded(child);
        if round == 2 {
            assert!(
                !volumes_left(data.path()).is_empty(),
                "SIGKILL leaves the volume"
            );
            let said = common::next_start(state.path());
            assert!(
                said.contains("loop device") && said.contains("nbdfuse"),
                "{said}"
            );
        } else {
            assert_eq!(o.status.code(), Some(130), "round {round}: {}", text(&o));
        }
        assert_nothing_left(pid, data.path(), state.path());
    }
}

#[test]
fn loopback_is_said_and_works() {
    let (data, out, state) = (workdir(), workdir(), workdir());
    let o = remote(data.path(), out.path(), state.path(), &["--loopback"])
        .args(["--transports", "das,iolab", "--mixes", "80", "--qd", "2"])
        .args([
            "--runtime",
            "1200ms",
            "--breakdown",
            "50",
            "--rates",
            "none",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let r = common::results(&out.path().join("results.json"));
    assert_eq!(r["extra"]["remote"]["topology"], "loopback");
    let peers = &r["points"][1]["extra"]["peers"];
    assert_eq!(peers["net"]["interface"], "lo");
    // One sample per second of the measured phase.
    let second = &peers["series"][0];
    assert!(second["t_s"].as_f64().unwrap() >= 0.9, "{peers}");
    assert!(second["target_cpu_pct"].as_f64().unwrap() > 0.0, "{peers}");
    assert!(second["tx_packets"].as_u64().unwrap() > 0, "{peers}");
    assert!(
        r["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("loopback")),
        "{}",
        r["warnings"]
    );
    assert!(!scratch_left(data.path()));
}

/// Ctrl-C at random moments (server start, a point, the breakdown,
/// teardown), once or twice, and a SIGKILL followed by the next start:
/// nothing iolab set up is left.
#[test]
fn interrupts_at_random_points_leave_nothing() {
    let mut transports = "das,iolab,nvme-tcp".to_string();
    if have("qemu-nbd") {
        transports.push_str(",qemu-nbd");
    }
    if have("tgtd") && namespaces_work() {
        transports.push_str(",tgtd");
    }
    let seed = std::process::id() as u64;
    for round in 0..4u64 {
        let (data, out, state) = (workdir(), workdir(), workdir());
        let child = remote(
            data.path(),
            out.path(),
            state.path(),
            &["--transports", &transports],
        )
        .args([
            "--mixes",
            "100",
            "--qd",
            "1",
            "--runtime",
            "500ms",
            "--breakdown",
            "200",
        ])
        .spawn()
        .unwrap();
        let pid = child.id();
        // 0.3 to 3.5 s: from the scratch file's layout to the last transport.
        let delay = 300 + (seed.wrapping_mul(2654435761).wrapping_add(round * 977)) % 3200;
        std::thread::sleep(Duration::from_millis(delay));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(pid as i32, libc::SIGINT) };
        if round == 3 {
            std::thread::sleep(Duration::from_millis(30));
            unsafe { libc::kill(pid as i32, libc::SIGINT) };
        }
        let o = wait_bounded(child);
        let code = o.status.code();
        assert!(
            matches!(code, Some(0) | Some(130)),
            "round {round} after {delay} ms: {}",
            text(&o)
        );
        assert_nothing_left(pid, data.path(), state.path());
    }
}

#[test]
fn after_sigkill_the_next_start_removes_namespaces_and_servers() {
    let (data, out, state) = (workdir(), workdir(), workdir());
    let mut child = remote(
        data.path(),
        out.path(),
        state.path(),
        &["--transports", "iolab"],
    )
    .args([
        "--mixes",
        "100",
        "--qd",
        "1",
        "--runtime",
        "30s",
        "--breakdown",
        "0",
    ])
    .spawn()
    .unwrap();
    let pid = child.id();
    wait_while_running(&mut child, 30, "the target started", || {
        processes_naming(data.path())
            .iter()
            .any(|c| c.contains(" serve "))
    });
    std::thread::sleep(Duration::from_millis(500));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        !processes_naming(data.path()).is_empty(),
        "SIGKILL leaves the target running"
    );
    if namespaces_work() {
        assert_eq!(namespaces_of(pid).len(), 2, "and the two namespaces");
    }
    let said = common::next_start(state.path());
    assert!(said.contains("removed"), "{said}");
    assert_nothing_left(pid, data.path(), state.path());
}

#[test]
fn bad_input_exits_2_naming_the_field() {
    let dir = workdir();
    let d = dir.path().to_str().unwrap();
    let file = dir.path().join("precious.img");
    std::fs::write(&file, vec![7u8; 1 << 20]).unwrap();
    let f = file.to_str().unwrap();
    let bad_key = dir.path().join("bad-key.toml");
    std::fs::write(&bad_key, "mixes = [100]\nwarp = 9\n").unwrap();
    let bad_value = dir.path().join("bad-value.toml");
    std::fs::write(&bad_value, "qd = [0]\n").unwrap();
    let target_key = dir.path().join("target.toml");
    std::fs::write(&target_key, "target = \"/\"\n").unwrap();
    let not_stamps = dir.path().join("notes.txt");
    std::fs::write(&not_stamps, "my notes").unwrap();
    for (args, field) in [
        (
            vec!["remote", "-t", d, "--transports", "nfs"],
            "--transports",
        ),
        (vec!["remote", "-t", d, "--mixes", "120"], "--mixes"),
        (vec!["remote", "-t", d, "--qd", "0"], "--qd"),
        (vec!["remote", "-t", d, "--db", "8"], "--db"),
        (vec!["remote", "-t", d, "--db", "800,x"], "--db"),
        (
            vec!["remote", "-t", d, "--db", "800", "--db-read-percent", "101"],
            "--db-read-percent",
        ),
        (
            vec!["remote", "-t", d, "--db", "10k", "--size", "64m"],
            "--db-num",
        ),
        (
            vec!["remote", "-t", d, "--target-threads", "0"],
            "--target-threads",
        ),
        (
            vec!["remote", "-t", d, "--loopback", "--fabric-rate", "1gbit"],
            "--fabric-rate",
        ),
        (vec!["remote", "-t", f], "--target"),
        (
            vec!["remote", "-t", d, "--plan", bad_key.to_str().unwrap()],
            "bad-key.toml",
        ),
        (
            vec!["remote", "-t", d, "--plan", bad_value.to_str().unwrap()],
            "--qd",
        ),
        (
            vec!["remote", "-t", d, "--plan", target_key.to_str().unwrap()],
            "command-line only",
        ),
        (vec!["serve", "-t", d, "--listen", "localhost"], "--listen"),
        (vec!["serve", "-t", f], "--overwrite"),
        (
            vec![
                "serve",
                "-t",
                f,
                "--read-only",
                "--stamps",
                not_stamps.to_str().unwrap(),
            ],
            "--stamps",
        ),
        (vec!["serve", "-t", d, "--max-block", "1000"], "--max-block"),
    ] {
        let o = iolab(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(
            text(&o).contains(field),
            "{args:?} should name {field}: {}",
            text(&o)
        );
    }
    assert_eq!(
        std::fs::read(&file).unwrap(),
        vec![7u8; 1 << 20],
        "the file is untouched"
    );
    assert_eq!(std::fs::read_to_string(&not_stamps).unwrap(), "my notes");
    assert!(!scratch_left(dir.path()));
}

/// A server stopped (SIGTERM) even when an assertion fails first.
struct StopOnDrop(Option<Child>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
            let _ = c.wait();
        }
    }
}

/// `iolab serve` as a plain NBD server: fio's nbd engine (libnbd) writes
/// and verifies through it, nbdinfo reads its limits, SIGTERM ends it
/// cleanly and removes its scratch file.
#[test]
fn iolabs_target_serves_fio_and_nbdinfo() {
    if !have("fio") {
        eprintln!("fio is not installed: skipping the interoperability test");
        return;
    }
    let dir = workdir();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args([
            "serve",
            "-t",
            dir.path().to_str().unwrap(),
            "--size",
            "32m",
            "--listen",
            &listen,
            "--threads",
            "2",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut server = StopOnDrop(Some(child));
    let start = Instant::now();
    while std::net::TcpStream::connect(&listen).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "iolab serve never listened"
        );
        let exited = server.0.as_mut().unwrap().try_wait().unwrap();
        assert!(exited.is_none(), "iolab serve exited");
        std::thread::sleep(Duration::from_millis(50));
    }
    let uri = format!("nbd://{listen}/");
    let fio = Command::new("fio")
        .args([
            "--name=v",
            "--ioengine=nbd",
            &format!("--uri={uri}"),
            "--rw=randwrite",
            "--bs=4k",
        ])
        .args([
            "--iodepth=8",
            "--size=8m",
            "--verify=crc32c",
            "--do_verify=1",
            "--verify_fatal=1",
        ])
        .args(["--output-format=json"])
        .output()
        .unwrap();
    assert!(fio.status.success(), "{}", text(&fio));
    // fio's nbd engine says "fio: connected to NBD server" before the JSON.
    let stdout = String::from_utf8_lossy(&fio.stdout);
    let j: serde_json::Value = serde_json::from_str(&stdout[stdout.find('{').unwrap()..]).unwrap();
    assert_eq!(j["jobs"][0]["error"], 0);
    assert!(
        j["jobs"][0]["read"]["io_bytes"].as_u64().unwrap() >= 8 << 20,
        "verify read it all back"
    );
    if have("nbdinfo") {
        let info = Command::new("nbdinfo").arg(&uri).output().unwrap();
        let t = text(&info);
        assert!(
            t.contains("export-size: 33554432") && t.contains("can_multi_conn: true"),
            "{t}"
        );
    }
    let child = server.0.take().unwrap();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let o = wait_bounded(child);
    assert!(
        o.status.success() || o.status.code() == Some(130),
        "{}",
        text(&o)
    );
    assert!(!scratch_left(dir.path()), "scratch file left");
}

#[test]
fn plan_file_keys_apply_and_the_command_line_wins() {
    let dir = workdir();
    let plan = dir.path().join("p.toml");
    std::fs::write(
        &plan,
        "description = \"x\"\ntransports = [\"das\", \"iolab\"]\nmixes = [100, 0]\nqd = 4\n",
    )
    .unwrap();
    let d = dir.path().to_str().unwrap();
    let p = plan.to_str().unwrap();
    let o = iolab(&["remote", "-t", d, "--plan", p, "--dry-run"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("randread-4k-qd4") && out.contains("randwrite-4k-qd4"),
        "{out}"
    );
    assert!(
        out.contains("nbd-iolab") && !out.contains("nbd-qemu"),
        "{out}"
    );
    let o = iolab(&[
        "remote",
        "-t",
        d,
        "--plan",
        p,
        "--mixes",
        "50",
        "--rates",
        "none",
        "--dry-run",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("randrw-4k-mix50-qd4") && !out.contains("randread"),
        "{out}"
    );
}

/// `iolab run --remote`: the main job gains a step on iolab's target
/// serving its scratch file (QD1 and QD32 locally and over NBD) and the
/// breakdown; nothing is left afterwards.
#[test]
fn run_remote_adds_the_step_and_the_breakdown() {
    let (data, out, state) = (workdir(), workdir(), workdir());
    let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args([
            "run",
            data.path().to_str().unwrap(),
            "--remote",
            "--profile",
            "quick",
        ])
        .args([
            "--budget",
            "6s",
            "--size",
            "32m",
            "--quiet",
            "-o",
            out.path().to_str().unwrap(),
        ])
        .env("IOLAB_STATE_DIR", state.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let o = wait_bounded(child);
    assert!(o.status.success(), "{}", text(&o));
    let r = common::results(&out.path().join("results.json"));
    let remote: Vec<_> = r["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["params"]["step"] == "remote")
        .collect();
    let label = |p: &serde_json::Value| {
        format!(
            "{}/{}",
            p["params"]["transport"].as_str().unwrap(),
            p["job"]["qd"]
        )
    };
    let got: Vec<String> = remote.iter().map(|p| label(p)).collect();
    assert_eq!(
        got,
        ["das/1", "das/32", "nbd-iolab/1", "nbd-iolab/32"],
        "{}",
        r["warnings"]
    );
    // The target's CPU was sampled (in clock ticks when a thread ended:
    // zero is possible on a busy machine over a short point).
    assert!(
        remote[3]["extra"]["peers"]["processes"][0]["us_per_io"]
            .as_f64()
            .unwrap()
            >= 0.0
    );
    assert!(
        r["extra"]["remote"]["breakdown"]["nbd-iolab"]["requests"]
            .as_u64()
            .unwrap()
            > 1000
    );
    assert_eq!(r["analysis"]["remote"].as_array().unwrap().len(), 4);
    let html = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    assert!(
        html.contains("Local vs remote")
            && html.contains("Where the time of a remote request goes")
    );
    assert_nothing_left(pid, data.path(), state.path());
}

/// `--transports nvme-tcp-kernel` on a kernel without the modules (this
/// machine): the plan says it is skipped and which modules are missing.
#[test]
fn the_kernel_nvme_tcp_path_is_detected_and_explained() {
    let dir = workdir();
    let d = dir.path().to_str().unwrap();
    let o = iolab(&[
        "remote",
        "-t",
        d,
        "--transports",
        "das,nvme-tcp-kernel",
        "--dry-run",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let why = iolab::testbed::kernel_modules::nvme_kernel_unavailable(NvmeTrtype::Tcp).unwrap();
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with("nvme-tcp-kernel"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.ends_with(&format!("skipped: {why}")), "{line}");
    if !std::path::Path::new("/sys/module/nvmet").exists() {
        assert!(why.contains("nvmet"), "{why}");
    }
}

/// `--transports nvme-rdma-kernel` on a kernel without RDMA (this
/// machine: no modules at all): a dry run says it is skipped and why, a
/// run exits 2 naming the transport and what is missing, before anything
/// is set up (no scratch file, no namespace).
#[test]
fn the_kernel_nvme_rdma_path_is_detected_and_refused() {
    let Some(why) = iolab::testbed::kernel_modules::nvme_kernel_unavailable(NvmeTrtype::Rdma)
    else {
        eprintln!("SKIP: this kernel has NVMe over RDMA (tests/linux_vm/kernel_paths.rs runs it)");
        return;
    };
    let dir = workdir();
    let d = dir.path().to_str().unwrap();
    let base = ["remote", "-t", d, "--transports", "das,nvme-rdma-kernel"];
    let o = iolab(&[&base[..], &["--dry-run"]].concat());
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with("nvme-rdma-kernel"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.ends_with(&format!("skipped: {why}")), "{line}");
    assert!(line.contains("soft-RoCE"), "{line}");
    let o = iolab(&[&base[..], &["--size", "16m", "--quiet"]].concat());
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--transports")
            && err.contains(&format!("nvme-rdma-kernel cannot run here: {why}")),
        "{err}"
    );
    if !std::path::Path::new("/sys/module/rdma_rxe").exists() && !why.contains("root") {
        assert!(
            why.contains("rdma_rxe") && why.contains("nvmet_rdma"),
            "{why}"
        );
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing made"
    );
    // Beside a transport that runs it is skipped with the same words (a
    // study's plan names every transport: examples/nvmeof-remote.toml).
    let out = dir.path().join("out");
    let o = iolab(&[
        "remote",
        "-t",
        d,
        "--transports",
        "das,iolab,nvme-rdma-kernel",
        "--loopback",
        "--size",
        "16m",
        "--mixes",
        "100",
        "--qd",
        "1",
        "--rates",
        "none",
        "--breakdown",
        "0",
        "--runtime",
        "100ms",
        "--ramp",
        "0",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let warned = r["warnings"].to_string();
    assert!(
        warned.contains(&format!("transport nvme-rdma-kernel skipped: {why}")),
        "{warned}"
    );
}

/// A rate tc cannot read and a transport named twice are refused with
/// the other inputs: exit 2 naming the flag, before any namespace is built
/// (also in a dry run, which builds nothing).
#[test]
fn a_bad_fabric_rate_and_a_repeated_transport_are_refused_first() {
    let (dir, state) = (workdir(), workdir());
    let d = dir.path().to_str().unwrap();
    for (args, field, says) in [
        (
            vec!["--fabric-rate", "abc", "--dry-run"],
            "--fabric-rate",
            "'abc'",
        ),
        (vec!["--fabric-rate", "abc"], "--fabric-rate", "'abc'"),
        (vec!["--fabric-rate", "-5mbit"], "--fabric-rate", "-5mbit"),
        (
            vec!["--transports", "das,das", "--dry-run"],
            "--transports",
            "'das' is named twice",
        ),
        (
            vec!["--transports", "das,iolab,das"],
            "--transports",
            "'das' is named twice",
        ),
    ] {
        let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
        c.args(["remote", "-t", d, "--runtime", "1s", "--size", "32m"])
            .args(&args)
            .env("IOLAB_STATE_DIR", state.path());
        let child = c
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let o = wait_bounded(child);
        let msg = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {msg}");
        assert!(
            msg.contains(&format!("error: {field}:")) && msg.contains(says),
            "{args:?}: {msg}"
        );
        assert!(
            !msg.contains("tc tbf"),
            "{args:?}: refused by tc, after the set-up: {msg}"
        );
        assert!(namespaces_of(pid).is_empty(), "{args:?}: namespaces left");
    }
    assert!(!scratch_left(dir.path()));
    assert!(common::files_in(state.path()).is_empty());
}

/// Issue 44 item 15: `remote --dry-run` did not check `-o`, and remote had
/// no `--json`; both are checked before anything, a dry run too.
#[test]
fn output_and_json_are_checked_before_anything_also_in_a_dry_run() {
    let (dir, state) = (workdir(), workdir());
    let d = dir.path().to_str().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, b"x").unwrap();
    let under_file = blocker.join("deeper").display().to_string();
    let missing = dir.path().join("no/such/dir/r.json").display().to_string();
    for (args, field) in [
        (vec!["-o", under_file.as_str(), "--dry-run"], "--output"),
        (vec!["--json", missing.as_str(), "--dry-run"], "--json"),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_iolab"))
            .args(["remote", "-t", d, "--runtime", "1s", "--size", "32m"])
            .args(&args)
            .env("IOLAB_STATE_DIR", state.path())
            .output()
            .unwrap();
        let msg = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {msg}");
        assert!(msg.contains(&format!("error: {field}:")), "{args:?}: {msg}");
    }
    // A writable --json passes the dry run, which writes nothing.
    let json = dir.path().join("r.json");
    let o = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args([
            "remote",
            "-t",
            d,
            "--runtime",
            "1s",
            "--size",
            "32m",
            "--dry-run",
        ])
        .arg("--json")
        .arg(&json)
        .env("IOLAB_STATE_DIR", state.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(!json.exists());
    // A run writes it beside the output directory's results.json.
    let out = workdir();
    let o = remote(
        dir.path(),
        out.path(),
        state.path(),
        &["--transports", "das"],
    )
    .args(["--mixes", "100", "--qd", "1", "--runtime", "200ms"])
    .args(["--breakdown", "0", "--json"])
    .arg(&json)
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let copy = std::fs::read(&json).unwrap();
    assert_eq!(
        copy,
        std::fs::read(out.path().join("results.json")).unwrap()
    );
}

/// `--transports nvme-rdma` (iolab's NVMe target over RDMA and its
/// nvme-rdma engine, on a soft-RoCE link) where no link can be made (this
/// kernel has no rdma_rxe, or not root): said in the dry run, exit 2 when
/// it is the only remote transport, nothing made. tests/linux_vm/nvme_rdma_target.rs
/// runs it in a guest that has soft-RoCE.
#[test]
fn iolabs_rdma_transport_is_detected_and_refused() {
    let Some(why) = iolab::testbed::soft_roce::unavailable() else {
        eprintln!("SKIP: soft-RoCE can be made here");
        return;
    };
    let dir = workdir();
    let d = dir.path().to_str().unwrap();
    let base = ["remote", "-t", d, "--transports", "das,nvme-rdma"];
    let o = iolab(&[&base[..], &["--dry-run"]].concat());
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with("nvme-rdma-iolab"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.ends_with(&format!("skipped: {why}")), "{line}");
    let o = iolab(&[&base[..], &["--size", "16m", "--quiet"]].concat());
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--transports")
            && err.contains(&format!("nvme-rdma-iolab cannot run here: {why}")),
        "{err}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing made"
    );
}
