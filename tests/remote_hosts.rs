//! `iolab remote --hosts A,B --target-host T` end to end, against
//! namespace hosts with their own sshd (tests/fleet_common): T serves
//! iolab's NBD and NVMe/TCP exports, the two hosts load each at once,
//! every point is merged exactly with T's CPU beside the hosts', and
//! nothing is left on T or the hosts afterwards; the refusals; T
//! unreachable. Needs root, ip netns and sshd for the lab; skips otherwise.

mod fleet_common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use fleet_common::{text, Lab};
use iolab::measure::histogram::LatencyHistogram;
use iolab::results::Results;

const IOLAB: &str = env!("CARGO_BIN_EXE_iolab");

/// `iolab remote` from hosts 0..n-1 of `lab` against its last host as T.
fn remote(lab: &Lab, target_dir: &Path, extra: &[&str]) -> Command {
    let n = lab.hosts.len();
    let hosts: Vec<&str> = lab.hosts[..n - 1].iter().map(|h| h.addr.as_str()).collect();
    let mut c = Command::new(IOLAB);
    c.args(["remote", "--hosts", &hosts.join(",")])
        .args(["--target-host", &lab.hosts[n - 1].addr, "--ssh-config"])
        .arg(&lab.ssh_config)
        .args(["--host-iolab", IOLAB, "--quiet", "-t"])
        .arg(target_dir)
        .args(["--size", "16m", "--mixes", "100", "--qd", "2"])
        .args(["--ramp", "0s", "--rates", "none"])
        .args(extra);
    c
}

fn leftovers(lab: &Lab, dir: &Path) {
    let left = lab.wait_quiet(Duration::from_secs(20));
    assert!(left.is_empty(), "left on the hosts or T: {left:?}");
    let files: Vec<_> = std::fs::read_dir(dir).unwrap().collect();
    assert!(files.is_empty(), "left in T's directory: {files:?}");
}

#[test]
fn two_hosts_against_nbd_and_nvme_tcp_served_on_t_merge_exactly_with_t_cpu() {
    let Some(lab) = fleet_common::lab(3, &[]) else {
        return;
    };
    let addr = lab.serve_from(2);
    let served = lab.dir.path().join("served");
    std::fs::create_dir_all(&served).unwrap();
    let out = lab.dir.path().join("out");
    let o = remote(&lab, &served, &["--transports", "iolab,nvme-tcp"])
        .args(["--runtime", "1s", "--target-address", &addr, "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let r = Results::read(&out.join("results.json")).unwrap();
    let transports: Vec<&str> = r
        .points
        .iter()
        .filter_map(|p| p.params.get("transport").map(String::as_str))
        .collect();
    assert_eq!(
        transports,
        ["nbd-iolab", "nvme-tcp-iolab"],
        "{:?}",
        r.warnings
    );
    // T's disk under the served file, second by second (O_DIRECT reads
    // reach it), unless T's directory is on no block device.
    let on_disk = iolab::measure::diskstats::device_of(&served).is_some();
    if !on_disk {
        eprintln!(
            "note: {} is on no block device (tmpfs?): T's disk series is not checked",
            served.display()
        );
    }
    let mut randread = 0;
    for p in r
        .points
        .iter()
        .filter(|p| on_disk && p.params.get("rw").is_some_and(|rw| rw == "randread"))
    {
        let t = p
            .extra
            .hosts
            .as_ref()
            .and_then(|h| h.target_host.as_ref())
            .expect("T's figures");
        let d = t
            .disk
            .as_ref()
            .unwrap_or_else(|| panic!("{}: no disk series: {:?}", p.name, t.no_disk));
        assert!(
            !d.read_bytes_s.is_empty() && d.read_bytes_s.len() == d.write_bytes_s.len(),
            "{d:?}"
        );
        assert!(
            d.read_bytes_s.iter().sum::<u64>() > 0,
            "{}: T's disk read nothing: {d:?}",
            p.name
        );
        randread += 1;
    }
    assert!(
        !on_disk || randread > 0,
        "no randread point: {:?}",
        r.points.iter().map(|p| &p.params).collect::<Vec<_>>()
    );
    for p in &r.points {
        let h = p.extra.hosts.as_ref().expect("a hosts section");
        assert_eq!(h.per_host.len(), 2, "{}", p.name);
        assert!(h.per_host.iter().all(|x| x.ops > 0), "{h:?}");
        let sum: u64 = h.per_host.iter().map(|x| x.ops).sum();
        assert_eq!(p.total.ops, sum, "{}", p.name);
        let merged = LatencyHistogram::decode(&p.histograms["read.lat"]).unwrap();
        assert_eq!(merged.len(), p.ops["read"].ops, "{}", p.name);
        let t = h.target_host.as_ref().expect("T's CPU");
        assert_eq!(t.host, lab.hosts[2].addr);
        assert!(t.window_ns > 0 && t.cpu.idle_pct + t.cpu.usr_pct + t.cpu.sys_pct > 0.0);
        let peers = p.extra.peers.as_ref().expect("T's CPU per I/O");
        assert!(peers.processes[0].us_per_io.is_some(), "{peers:?}");
        let url = p.extra.other["export"].as_str().unwrap();
        assert!(url.contains(&addr), "{url}");
    }
    // The report draws the hosts' table with T's row beside them.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("IOPS per host"), "no hosts section");
    assert!(
        html.contains(&format!("target {}", lab.hosts[2].addr)),
        "no target host row"
    );
    if on_disk {
        assert!(
            html.contains("Target disk bandwidth over time"),
            "no target disk section"
        );
    }
    leftovers(&lab, &served);
}

#[test]
fn qemu_nbd_and_nbdkit_served_on_t_are_measured_and_stopped() {
    let missing = ["qemu-nbd", "nbdkit"].into_iter().find(|p| {
        !Command::new("sh")
            .args(["-c", &format!("command -v {p}")])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if let Some(p) = missing {
        eprintln!("skipping: {p} is not installed (scripts/install-deps.sh)");
        return;
    }
    let Some(lab) = fleet_common::lab(3, &[]) else {
        return;
    };
    let addr = lab.serve_from(2);
    let served = lab.dir.path().join("served");
    std::fs::create_dir_all(&served).unwrap();
    let out = lab.dir.path().join("out");
    let o = remote(&lab, &served, &["--transports", "qemu-nbd,nbdkit-file"])
        .args(["--runtime", "500ms", "--target-address", &addr, "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let r = Results::read(&out.join("results.json")).unwrap();
    let transports: Vec<&str> = r
        .points
        .iter()
        .filter_map(|p| p.params.get("transport").map(String::as_str))
        .collect();
    assert_eq!(
        transports,
        ["nbd-qemu", "nbd-nbdkit-file"],
        "{:?}",
        r.warnings
    );
    for p in &r.points {
        let h = p.extra.hosts.as_ref().unwrap();
        assert_eq!(p.total.ops, h.per_host.iter().map(|x| x.ops).sum::<u64>());
        assert!(h.per_host.iter().all(|x| x.ops > 0), "{h:?}");
        assert!(h.target_host.is_some());
    }
    leftovers(&lab, &served);
}

#[test]
fn t_unreachable_or_unable_to_serve_is_exit_2_and_nothing_is_left() {
    let Some(mut lab) = fleet_common::lab(3, &[]) else {
        return;
    };
    let served = lab.dir.path().join("served");
    std::fs::create_dir_all(&served).unwrap();
    // An address that is not T's: T's agent cannot listen there.
    let o = remote(&lab, &served, &["--target-address", "192.0.2.7"])
        .arg("-o")
        .arg(lab.dir.path().join("o1"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--target-address"),
        "{}",
        text(&o)
    );
    leftovers(&lab, &served);
    // T does not answer: named, and nothing was started on the hosts.
    lab.stop_sshd(2);
    let o = remote(&lab, &served, &[])
        .arg("-o")
        .arg(lab.dir.path().join("o2"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--target-host") && err.contains(&lab.hosts[2].addr),
        "{err}"
    );
    let left = lab.wait_quiet(Duration::from_secs(20));
    assert!(left.is_empty(), "{left:?}");
}

fn refused(args: &[&str], flag: &str, says: &str) {
    let o = Command::new(IOLAB)
        .args(["remote", "-t", "/tmp", "--dry-run"])
        .args(args)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(flag) && err.contains(says), "{args:?}: {err}");
}

#[test]
fn what_hosts_cannot_run_is_refused_naming_the_flag() {
    refused(
        &["--target-host", "t1"],
        "--target-host",
        "only with --hosts",
    );
    refused(&["--hosts", "h1,h2"], "--hosts", "needs --target-host");
    refused(
        &["--target-address", "10.0.0.1"],
        "--target-address",
        "only with --target-host",
    );
    refused(&["--deploy"], "--deploy", "only with --hosts");
    let on = ["--hosts", "h1,h2", "--target-host", "t1"];
    fn with<'a>(on: &[&'a str], more: &[&'a str]) -> Vec<&'a str> {
        [on, more].concat()
    }
    refused(
        &with(&on, &["--transports", "iolab,das"]),
        "--transports",
        "das",
    );
    refused(
        &with(&on, &["--transports", "tgtd"]),
        "--transports",
        "iscsi-tgtd",
    );
    refused(
        &with(&on, &["--transports", "nvme-tcp-kernel"]),
        "--transports",
        "nvme-tcp-kernel",
    );
    refused(&with(&on, &["--db", "800"]), "--db", "not with --hosts");
    // The old spelling is the same flag, named as it is now.
    refused(
        &with(&on, &["--breakdown", "100"]),
        "--breakdown-requests",
        "not with --hosts",
    );
    refused(&with(&on, &["--fabric-rate", "1gbit"]), "--fabric-rate", "");
    refused(
        &["--hosts", "h1,h2", "--target-host", "h1"],
        "--target-host",
        "also in --hosts",
    );
    let o = Command::new(IOLAB)
        .args(["remote", "-t", "/tmp", "--dry-run"])
        .args(on)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let plan = String::from_utf8_lossy(&o.stdout);
    assert!(
        plan.contains("nbd-iolab") && plan.contains("nvme-tcp-iolab"),
        "{plan}"
    );
    assert!(plan.contains("breakdown is skipped"), "{plan}");
}

/// Wait (bounded) until T's scratch file exists: T is serving.
fn wait_serving(dir: &Path, err: &Path) {
    let end = std::time::Instant::now() + Duration::from_secs(60);
    while std::fs::read_dir(dir).unwrap().next().is_none() {
        let said = std::fs::read_to_string(err).unwrap_or_default();
        assert!(std::time::Instant::now() < end, "T never served: {said}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: a process this test started, or its agent in a namespace it made.
    unsafe { libc::kill(pid as i32, sig) };
}

#[test]
fn ctrl_c_sigkill_of_the_control_side_and_of_t_s_agent_leave_nothing() {
    let Some(lab) = fleet_common::lab(3, &[]) else {
        return;
    };
    let addr = lab.serve_from(2);
    let served = lab.dir.path().join("served");
    std::fs::create_dir_all(&served).unwrap();
    let start = |k: usize| {
        remote(&lab, &served, &["--target-address", &addr])
            .args(["--runtime", "30s", "-o"])
            .arg(lab.dir.path().join(format!("o{k}")))
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(lab.dir.path().join(format!("err{k}"))).unwrap())
            .spawn()
            .unwrap()
    };
    for (k, sig) in [libc::SIGINT, libc::SIGKILL].into_iter().enumerate() {
        let mut c = start(k);
        wait_serving(&served, &lab.dir.path().join(format!("err{k}")));
        std::thread::sleep(Duration::from_millis(1500));
        signal(c.id(), sig);
        let status = c.wait().unwrap();
        if sig == libc::SIGINT {
            assert!(matches!(status.code(), Some(130) | Some(0)), "{status:?}");
        }
        leftovers(&lab, &served);
    }
    // T's agent SIGKILLed: its file stays until T's next iolab start.
    let k = 2;
    let mut c = start(k);
    wait_serving(&served, &lab.dir.path().join(format!("err{k}")));
    let agent = lab.hosts[2]
        .others()
        .into_iter()
        .find(|p| p.contains(" agent"))
        .expect("T's agent");
    let pid: u32 = agent.split(':').next().unwrap().parse().unwrap();
    signal(pid, libc::SIGKILL);
    let status = c.wait().unwrap();
    assert!(!status.success(), "losing T is a failed run");
    assert_eq!(std::fs::read_dir(&served).unwrap().count(), 1);
    let out = Command::new("ip")
        .args(["netns", "exec", &lab.hosts[2].ns, IOLAB, "sysinfo"])
        .env("IOLAB_STATE_DIR", &lab.hosts[2].state)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    leftovers(&lab, &served);
}

/// The measurement of docs/benchmarks.md ("remote across hosts"): 3
/// namespace hosts and then 1 against a namespace T, iolab's NBD and
/// NVMe/TCP targets, 4 KiB random reads at QD 1 and 32, T's CPU.
/// `cargo test --test remote_hosts -- --ignored --nocapture measure`
/// (IOLAB_BENCH_DIR: T's directory, default /var/tmp; IOLAB_BENCH_RUNTIME: 5s).
#[test]
#[ignore]
fn measure_three_hosts_against_one_target_host() {
    let Some(lab) = fleet_common::lab(4, &[]) else {
        return;
    };
    let addr = lab.serve_from(3);
    let base = std::env::var("IOLAB_BENCH_DIR").unwrap_or_else(|_| "/var/tmp".into());
    let served = tempfile::tempdir_in(base).unwrap();
    let runtime = std::env::var("IOLAB_BENCH_RUNTIME").unwrap_or_else(|_| "5s".into());
    for n in [3usize, 1] {
        let hosts: Vec<&str> = lab.hosts[..n].iter().map(|h| h.addr.as_str()).collect();
        let out = lab.dir.path().join(format!("bench-{n}"));
        let o = Command::new(IOLAB)
            .args(["remote", "--hosts", &hosts.join(","), "--target-host"])
            .arg(&lab.hosts[3].addr)
            .arg("--ssh-config")
            .arg(&lab.ssh_config)
            .args(["--host-iolab", IOLAB, "--quiet", "--target-address", &addr])
            .arg("-t")
            .arg(served.path())
            .args(["--size", "1g", "--transports", "iolab,nvme-tcp"])
            .args(["--mixes", "100", "--qd", "1,32", "--rates", "none"])
            .args(["--runtime", &runtime, "--ramp", "1s", "-o"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        let r = Results::read(&out.join("results.json")).unwrap();
        for p in &r.points {
            let h = p.extra.hosts.as_ref().unwrap();
            let t = h.target_host.as_ref().unwrap();
            let per: Vec<String> = h
                .per_host
                .iter()
                .map(|x| format!("{:.0}", x.iops))
                .collect();
            let p99 = p.main_lat().and_then(|l| l.percentile(99.0)).unwrap_or(0);
            println!(
                "hosts {n} | {:<16} | qd {:>2} | IOPS {:>7.0} (per host {}) | p99 {:.0} us | hosts' agents CPU {:.0}% | T usr {:.0}% sys {:.0}% iowait {:.0}% idle {:.0}% | skew {:.2} ms",
                p.params["transport"],
                p.job.as_ref().unwrap().qd,
                p.total.iops,
                per.join("/"),
                p99 as f64 / 1e3,
                p.cpu.usr_pct + p.cpu.sys_pct,
                t.cpu.usr_pct,
                t.cpu.sys_pct,
                t.cpu.iowait_pct,
                t.cpu.idle_pct,
                h.start_skew_ns as f64 / 1e6,
            );
        }
    }
    leftovers(&lab, served.path());
}
