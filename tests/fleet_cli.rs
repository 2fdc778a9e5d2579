//! `iolab device --hosts` end to end, against namespace hosts with their
//! own sshd (tests/fleet_common): one merged point per job with each
//! host's row, a sweep over a file on every host, refused logins and
//! flags, a host killed mid-point under --on-host-loss stop and continue,
//! and SIGINT, a double SIGINT and SIGKILL of the control side leaving
//! nothing on any host. Needs root, ip netns and sshd; skips otherwise.

mod fleet_common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fleet_common::{all_hosts, load, text, Lab};
use iolab::measure::histogram::LatencyHistogram;
use iolab::results::Results;

const IOLAB: &str = env!("CARGO_BIN_EXE_iolab");

fn device(lab: &Lab, hosts: &str, extra: &[&str]) -> Command {
    let mut c = Command::new(IOLAB);
    c.args(["device", "--hosts", hosts, "--ssh-config"])
        .arg(&lab.ssh_config)
        .args(["--host-iolab", IOLAB, "--quiet"])
        .args(extra);
    c
}

/// The merge is exact: the aggregate's ops are the hosts' sum, and its
/// merged histogram counts every host's requests.
fn assert_exact(r: &Results) {
    for p in &r.points {
        let h = p.extra.hosts.as_ref().expect("a hosts section");
        let sum: u64 = h.per_host.iter().map(|x| x.ops).sum();
        assert_eq!(p.total.ops, sum, "{}", p.name);
        if let Some(e) = p.histograms.get("read.lat") {
            let merged = LatencyHistogram::decode(e).unwrap();
            assert_eq!(merged.len(), p.ops["read"].ops, "{}", p.name);
        }
    }
}

fn leftover_check(lab: &Lab) {
    let left = lab.wait_quiet(Duration::from_secs(20));
    assert!(left.is_empty(), "left on the hosts: {left:?}");
}

#[test]
fn a_sweep_runs_on_every_host_and_merges_exactly() {
    let Some(lab) = fleet_common::lab(2, &[]) else {
        return;
    };
    let out = lab.dir.path().join("out.json");
    let work = lab.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let o = device(
        &lab,
        &all_hosts(&lab),
        &["--engine", "psync", "--rw", "randread"],
    )
    .args([
        "--qd",
        "1",
        "--jobs",
        "1,2",
        "--size",
        "8m",
        "--runtime",
        "1s",
        "--target",
    ])
    .arg(&work)
    .arg("--json")
    .arg(&out)
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let r = load(&out);
    assert_eq!(r.points.len(), 2);
    assert_exact(&r);
    for p in &r.points {
        let h = p.extra.hosts.as_ref().unwrap();
        assert_eq!(h.per_host.len(), 2, "{}", p.name);
        assert!(h.per_host.iter().all(|x| x.ops > 0), "{h:?}");
        assert!(h.lost.is_empty());
        assert!(!p.is_interrupted());
    }
    let described = &r.extra.hosts.as_ref().unwrap().hosts;
    assert_eq!(described.len(), 2);
    // No scratch file is left in the hosts' directory, nothing runs there.
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0);
    leftover_check(&lab);
    // The report draws the hosts.
    let html = lab.dir.path().join("r.html");
    let o = Command::new(IOLAB)
        .arg("report")
        .arg(&out)
        .arg("-o")
        .arg(&html)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("IOPS per host"), "no hosts chart");
    assert!(
        page.contains(&lab.hosts[1].addr),
        "no row of the second host"
    );
    // On a terminal: each point's table of hosts under the point.
    let o = Command::new(IOLAB)
        .args(["device", "--hosts", &all_hosts(&lab), "--ssh-config"])
        .arg(&lab.ssh_config)
        .args([
            "--host-iolab",
            IOLAB,
            "--engine",
            "null",
            "--io-count",
            "20000",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let shown = String::from_utf8_lossy(&o.stdout);
    println!("{shown}");
    assert!(
        shown.contains("all 2 hosts") && shown.contains("start skew"),
        "{shown}"
    );
}

/// Issue 46: a media run on hosts: two setups (a directory each on every
/// host) in two rounds against a baseline, every pass on both hosts at
/// once, merged exactly, compared by `analysis.media`; then `--make`
/// built on every host (`made_on_every_host`).
#[test]
fn several_targets_run_on_every_host_in_rounds_with_a_baseline() {
    let Some(lab) = fleet_common::lab(2, &[]) else {
        return;
    };
    let (a, b) = (lab.dir.path().join("a"), lab.dir.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let out = lab.dir.path().join("media.json");
    let o = device(
        &lab,
        &all_hosts(&lab),
        &["--engine", "psync", "--rw", "randread"],
    )
    .args([
        "--size",
        "8m",
        "--runtime",
        "1s",
        "--rounds",
        "2",
        "--baseline",
        "fast",
    ])
    .arg("--target")
    .arg(format!("fast={}", a.display()))
    .arg("--target")
    .arg(format!("slow={}", b.display()))
    .arg("--json")
    .arg(&out)
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let r = load(&out);
    assert_eq!(r.points.len(), 4, "2 setups x 2 rounds");
    assert_exact(&r);
    let mut seen: Vec<(String, String)> = Vec::new();
    for p in &r.points {
        let h = p.extra.hosts.as_ref().expect("each pass on the hosts");
        assert_eq!(h.per_host.len(), 2, "{}", p.name);
        assert!(h.per_host.iter().all(|x| x.ops > 0), "{h:?}");
        seen.push((p.params["medium"].clone(), p.params["round"].clone()));
    }
    seen.sort();
    let want: Vec<(String, String)> = [("fast", "1"), ("fast", "2"), ("slow", "1"), ("slow", "2")]
        .iter()
        .map(|(m, r)| (m.to_string(), r.to_string()))
        .collect();
    assert_eq!(seen, want);
    let media = r.analysis.media.as_ref().expect("the setups compared");
    assert!(format!("{media:?}").contains("slow"), "{media:?}");
    assert_eq!(r.extra.hosts.as_ref().unwrap().hosts.len(), 2);
    for d in [&a, &b] {
        assert_eq!(
            std::fs::read_dir(d).unwrap().count(),
            0,
            "{} left",
            d.display()
        );
    }
    leftover_check(&lab);
    made_on_every_host(&lab, &a);
}

/// Issue 46: `--make` on hosts: every host builds the configuration in
/// `--make-in` (its own directory) and each pass runs on all of them at
/// once, beside a given directory; every host's configuration is gone at
/// the end. What hosts cannot build is refused naming the flag.
fn made_on_every_host(lab: &Lab, given: &std::path::Path) {
    let make_in = lab.dir.path().join("make-in");
    std::fs::create_dir_all(&make_in).unwrap();
    let out = lab.dir.path().join("made.json");
    let o = device(
        lab,
        &all_hosts(lab),
        &["--engine", "psync", "--rw", "randread"],
    )
    .args(["--size", "8m", "--runtime", "1s", "--make", "tmpfs"])
    .arg("--make-in")
    .arg(&make_in)
    .arg("--target")
    .arg(format!("disk={}", given.display()))
    .arg("--json")
    .arg(&out)
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let r = load(&out);
    assert_exact(&r);
    let media: Vec<&str> = r
        .points
        .iter()
        .map(|p| p.params["medium"].as_str())
        .collect();
    assert_eq!(media, ["disk", "tmpfs"], "one pass each");
    for p in &r.points {
        let h = p.extra.hosts.as_ref().expect("each pass on the hosts");
        assert!(
            h.per_host.len() == 2 && h.per_host.iter().all(|x| x.ops > 0),
            "{h:?}"
        );
    }
    leftover_check(lab);
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    let dir = make_in.display().to_string();
    assert!(!mounts.contains(&dir), "still mounted under {dir}");
    assert_eq!(
        std::fs::read_dir(&make_in).unwrap().count(),
        0,
        "left in --make-in"
    );
    for (args, flag) in [
        (vec!["--make", "raw"], "--make"),
        (
            vec!["--make", "tmpfs", "--make-in", "relative"],
            "--make-in",
        ),
    ] {
        let o = device(lab, &all_hosts(lab), &args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(flag), "{args:?}: {}", text(&o));
    }
}

/// Issue 46: `--rate` is the point's whole offered load, shared evenly
/// over the hosts (as `run --hosts` shares a share of the maximum): the
/// point says the whole rate, each host offered its share, and the merged
/// open-loop statistics count every host's requests from the intended start.
#[test]
fn a_rate_is_the_whole_load_shared_over_the_hosts() {
    let Some(lab) = fleet_common::lab(2, &[]) else {
        return;
    };
    let out = lab.dir.path().join("rate.json");
    let o = device(&lab, &all_hosts(&lab), &["--engine", "null", "--qd", "4"])
        .args(["--rate", "2000", "--runtime", "1s", "--json"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let r = load(&out);
    assert_exact(&r);
    let p = &r.points[0];
    assert_eq!(p.params["rate"], "2000");
    let h = p.extra.hosts.as_ref().unwrap();
    assert_eq!(h.rate_per_host, Some(1000.0));
    let ol = p
        .extra
        .open_loop
        .as_ref()
        .expect("the hosts' open loop, merged");
    assert_eq!(ol.target_iops, 2000.0);
    let intended = ol.lat_from_intended["read"].n;
    assert_eq!(intended, p.ops["read"].ops, "every host's requests");
    // Offered 1,000 a second each, the hosts did about that, not 2,000.
    for row in &h.per_host {
        assert!(row.iops < 1500.0, "{}: {} IOPS", row.host, row.iops);
    }
    leftover_check(&lab);
}

#[test]
fn refused_logins_and_flags_are_exit_2_and_nothing_starts() {
    let Some(lab) = fleet_common::lab(2, &[1]) else {
        return;
    };
    let o = device(
        &lab,
        &all_hosts(&lab),
        &["--engine", "null", "--runtime", "1s"],
    )
    .output()
    .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&lab.hosts[1].addr), "{err}");
    leftover_check(&lab);
    for (args, field) in [
        (vec!["--breakdown"], "--breakdown"),
        (vec!["--target", "relative/dir"], "--target"),
    ] {
        let o = device(&lab, &lab.hosts[0].addr, &args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(field), "{args:?}: {err}");
    }
    let o = Command::new(IOLAB)
        .args(["device", "--engine", "null", "--deploy", "--io-count", "10"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--deploy"));
}

/// Several hosts verifying one shared export overwrite each other's
/// stamped blocks (exit 3 with 21,209 false mismatches in the audit):
/// refused before anything is set up, naming --verify.
#[test]
fn verify_on_a_shared_export_from_several_hosts_is_refused() {
    let o = Command::new(IOLAB)
        .args([
            "device",
            "--hosts",
            "h0,h1,h2",
            "--target",
            "nbd://127.0.0.1:10809/",
            "--overwrite",
            "--rw",
            "randrw",
            "--verify",
            "--runtime",
            "1s",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--verify") && err.contains("shared export"),
        "{err}"
    );
}

/// The agent's pid on host `i`, once it runs.
fn agent_pid(lab: &Lab, i: usize) -> u32 {
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        let found = lab.hosts[i]
            .others()
            .into_iter()
            .find(|p| p.contains(" agent"))
            .and_then(|p| p.split(':').next()?.parse().ok());
        if let Some(pid) = found {
            return pid;
        }
        assert!(Instant::now() < end, "no agent on host {i}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn host_lost(on_loss: &str) -> Results {
    let lab = fleet_common::lab(2, &[]).unwrap();
    let out = lab.dir.path().join("out.json");
    let child = device(
        &lab,
        &all_hosts(&lab),
        &["--engine", "null", "--qd", "1,2,4"],
    )
    .args(["--runtime", "4s", "--on-host-loss", on_loss, "--json"])
    .arg(&out)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let victim = agent_pid(&lab, 1);
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: an agent in a namespace this test made.
    unsafe { libc::kill(victim as i32, libc::SIGKILL) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    leftover_check(&lab);
    let r = load(&out);
    let first = &r.points[0];
    let h = first.extra.hosts.as_ref().unwrap();
    assert_eq!(h.lost.len(), 1, "{h:?}");
    assert_eq!(h.lost[0].host, lab.hosts[1].addr);
    assert!(first.is_interrupted(), "a partial point is marked");
    assert!(first.total.ops > 0, "the other host's data is kept");
    assert_exact(&r);
    r
}

#[test]
fn a_host_lost_mid_point_stops_the_run_or_the_others_go_on() {
    if fleet_common::missing().is_some() {
        eprintln!("skipping: {}", fleet_common::missing().unwrap());
        return;
    }
    let stopped = host_lost("stop");
    assert_eq!(stopped.points.len(), 1, "no point after the loss");
    let skipped = stopped.extra.skipped_points.as_ref().unwrap();
    assert_eq!(skipped.len(), 2);
    let went_on = host_lost("continue");
    assert_eq!(went_on.points.len(), 3);
    for p in &went_on.points[1..] {
        assert_eq!(p.extra.hosts.as_ref().unwrap().per_host.len(), 1);
    }
}

fn signal(c: &Child, sig: i32) {
    // SAFETY: our own child.
    unsafe { libc::kill(c.id() as i32, sig) };
}

#[test]
fn interrupts_and_sigkill_of_the_control_side_leave_nothing_on_the_hosts() {
    let Some(lab) = fleet_common::lab(2, &[]) else {
        return;
    };
    let work = lab.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    // Moments spread over connecting, preparing and measuring.
    let seed = std::process::id() as u64;
    let cases = [
        (libc::SIGINT, Some(100)),
        (libc::SIGINT, None),
        (-libc::SIGINT, None),
        (libc::SIGKILL, Some(100)),
        (libc::SIGKILL, None),
    ];
    for (k, (sig, early)) in cases.into_iter().enumerate() {
        let random = 200 + (seed.wrapping_mul(7919).wrapping_add(k as u64 * 131) % 2500);
        let delay = early.unwrap_or(random);
        let out = lab.dir.path().join(format!("out-{k}.json"));
        let mut child = device(
            &lab,
            &all_hosts(&lab),
            &["--engine", "psync", "--size", "16m"],
        )
        .args(["--qd", "1", "--runtime", "30s", "--target"])
        .arg(&work)
        .arg("--json")
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
        std::thread::sleep(Duration::from_millis(delay));
        match sig {
            s if s < 0 => {
                signal(&child, -s);
                std::thread::sleep(Duration::from_millis(100));
                signal(&child, -s);
            }
            s => signal(&child, s),
        }
        let status = child.wait().unwrap();
        if sig != libc::SIGKILL {
            assert!(
                matches!(status.code(), Some(130) | Some(0)),
                "signal {sig} after {delay} ms: {status:?}"
            );
            if out.exists() {
                load(&out);
            }
        }
        leftover_check(&lab);
        let left: Vec<_> = std::fs::read_dir(&work)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(left.is_empty(), "after signal {sig}: {left:?}");
    }
}

/// Wait until `addr:port` answers inside namespace `ns`.
fn wait_port(ns: &str, addr: &str, port: u16) {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let probe = format!("exec 3<>/dev/tcp/{addr}/{port}");
        let ok = Command::new("ip")
            .args(["netns", "exec", ns, "bash", "-c", &probe])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return;
        }
        assert!(
            Instant::now() < end,
            "nothing listens on {addr}:{port} in {ns}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn several_hosts_drive_one_shared_nbd_target() {
    let Some(lab) = fleet_common::lab(2, &[]) else {
        return;
    };
    let t = lab.shared_target();
    let served = lab.dir.path().join("served");
    std::fs::create_dir_all(&served).unwrap();
    let listen = format!("{}:10809", t.addr);
    let mut serve = t
        .command(IOLAB)
        .args([
            "serve",
            "--size",
            "32m",
            "--read-only",
            "--quiet",
            "--time-limit",
            "60s",
        ])
        .arg("--target")
        .arg(&served)
        .args(["--listen", &listen])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_port(&t.ns, &t.addr, 10809);
    let out = lab.dir.path().join("out.json");
    let url = format!("nbd://{}:10809/", t.addr);
    let o = device(
        &lab,
        &all_hosts(&lab),
        &["--target", &url, "--rw", "randread"],
    )
    .args(["--qd", "4", "--runtime", "1s", "--json"])
    .arg(&out)
    .output()
    .unwrap();
    // A write to a read-only export is refused by each host, named.
    let w = device(
        &lab,
        &all_hosts(&lab),
        &["--target", &url, "--rw", "randwrite"],
    )
    .args(["--io-count", "10"])
    .output()
    .unwrap();
    signal(&serve, libc::SIGTERM);
    let _ = serve.wait();
    assert!(o.status.success(), "{}", text(&o));
    let r = load(&out);
    assert_exact(&r);
    let p = &r.points[0];
    assert_eq!(p.params.get("engine").map(String::as_str), Some("nbd"));
    let h = p.extra.hosts.as_ref().unwrap();
    assert_eq!(h.per_host.len(), 2);
    assert!(h.per_host.iter().all(|x| x.ops > 0), "{h:?}");
    assert_eq!(w.status.code(), Some(2), "{}", text(&w));
    let err = String::from_utf8_lossy(&w.stderr);
    assert!(
        err.contains("read-only") && err.contains("host 10.213."),
        "{err}"
    );
    leftover_check(&lab);
}

/// `--connect-concurrency` takes 1 to 1024 (exit 2 naming the flag
/// otherwise, before any host is contacted), and only with --hosts.
#[test]
fn connect_concurrency_out_of_range_is_exit_2_naming_the_flag() {
    for bad in ["0", "1025", "x", "-3", ""] {
        let o = Command::new(IOLAB)
            .args(["device", "--hosts", "192.0.2.1", "--engine", "null"])
            .args(["--connect-concurrency", bad])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", text(&o));
        assert!(
            text(&o).contains("--connect-concurrency"),
            "{bad}: {}",
            text(&o)
        );
    }
    let o = Command::new(IOLAB)
        .args(["device", "--engine", "null", "--connect-concurrency", "8"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--connect-concurrency"), "{}", text(&o));
}

/// Processes whose command line names `needle` (ssh masters of a run).
fn processes_naming(needle: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            cmd.contains(needle)
                .then(|| format!("{:?}: {cmd}", e.file_name()))
        })
        .collect()
}

/// The run's sessions to a host share one ssh connection (a control
/// socket in a private directory); after the run, and after a Ctrl-C'd
/// run, the connections are ended and the directory is gone.
#[test]
fn the_ssh_control_directory_is_gone_after_a_run_and_after_ctrl_c() {
    let Some(lab) = fleet_common::lab(2, &[]) else {
        return;
    };
    let tmp = lab.dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let entries = || -> Vec<String> {
        std::fs::read_dir(&tmp)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    };
    let o = device(&lab, &all_hosts(&lab), &["--engine", "null"])
        .args(["--runtime", "1s", "--deploy", "--connect-concurrency", "1"])
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(entries().is_empty(), "{:?}", entries());
    let needle = tmp.display().to_string();
    assert!(
        processes_naming(&needle).is_empty(),
        "{:?}",
        processes_naming(&needle)
    );
    let mut child = device(&lab, &all_hosts(&lab), &["--engine", "null"])
        .args(["--runtime", "30s"])
        .env("TMPDIR", &tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // A shared connection is up: a socket in the run's directory.
    let end = Instant::now() + Duration::from_secs(30);
    let sockets = || -> usize {
        entries()
            .iter()
            .filter_map(|d| std::fs::read_dir(tmp.join(d)).ok())
            .map(|d| d.count())
            .sum()
    };
    while sockets() < 2 && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(sockets(), 2, "one control socket per host: {:?}", entries());
    std::thread::sleep(Duration::from_millis(500));
    signal(&child, libc::SIGINT);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert!(entries().is_empty(), "left: {:?}", entries());
    assert!(
        processes_naming(&needle).is_empty(),
        "{:?}",
        processes_naming(&needle)
    );
    leftover_check(&lab);
}
