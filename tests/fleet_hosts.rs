//! The fleet against real hosts: network namespaces on this machine, each
//! with its own sshd (tests/fleet_common). Connecting (hello, build check,
//! a refused login, a peer that is not an agent), one pass on three hosts
//! with one start merged exactly, --deploy, and an agent whose control
//! side disappears or that is SIGKILLed. Needs root, ip netns and sshd;
//! says so and skips otherwise.

mod fleet_common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use iolab::error::exit_code;
use iolab::fleet::conn::Conn;
use iolab::fleet::proto::{Hello, JobTarget, Message, Prepare};
use iolab::fleet::{build, ssh, Fleet};
use iolab::measure::histogram::LatencyHistogram;
use iolab::plan::engines::EngineKind;
use iolab::plan::job::{JobSpec, StopCondition};

fn null_job(secs: u64) -> JobSpec {
    JobSpec {
        name: "null-4k".into(),
        engine: EngineKind::Null,
        qd: 4,
        stop: StopCondition {
            runtime_ns: Some(secs * 1_000_000_000),
            io_count: None,
            io_bytes: None,
        },
        ..JobSpec::default()
    }
}

fn no_dir() -> JobTarget {
    JobTarget {
        dir: None,
        size: None,
        overwrite: false,
        ..JobTarget::default()
    }
}

#[test]
fn agents_say_hello_and_another_build_is_refused_naming_the_host() {
    let Some(lab) = fleet_common::lab(2, &[]) else {
        return;
    };
    let hosts = lab.specs();
    let opts = lab.options();
    let mut fleet = Fleet::connect(&hosts[..1], &opts).unwrap();
    let want = build::of_executable(&opts.ssh.local_iolab).unwrap();
    assert_eq!(fleet.agents()[0].hello.build, want);
    assert!(fleet.agents()[0].hello.pid > 0);
    // A target the host does not have is bad input, named with the host.
    let file_job = JobSpec {
        engine: EngineKind::Psync,
        direct: false,
        qd: 1,
        ..null_job(1)
    };
    let nowhere = JobTarget {
        dir: Some("/nonexistent/iolab-fleet-test".into()),
        size: None,
        overwrite: false,
        ..JobTarget::default()
    };
    let err = fleet.run_pass(&file_job, &nowhere).unwrap_err();
    let msg = format!("{err:#}");
    assert_eq!(exit_code(&err), 2, "{msg}");
    assert!(
        msg.contains("target") && msg.contains(&lab.hosts[0].addr),
        "{msg}"
    );
    fleet.close();

    // The second host runs "another build": a hello with another hash.
    let mut other = want.clone();
    other.exe_hash = "0123456789abcdef".into();
    let hello = Message::Hello(Hello {
        protocol: iolab::fleet::proto::PROTOCOL_VERSION,
        build: other,
        hostname: "x".into(),
        pid: 1,
        identity: None,
    });
    std::fs::write(lab.dir.path().join("hello.bin"), hello.encode().unwrap()).unwrap();
    let fake = lab.script(
        "old-iolab",
        &format!("cat {}/hello.bin; sleep 5", lab.dir.path().display()),
    );
    let mut o = opts.clone();
    o.ssh.remote_iolab = fake;
    let err = Fleet::connect(&hosts[1..], &o)
        .err()
        .expect("a mismatch is refused");
    let msg = format!("{err:#}");
    assert_eq!(exit_code(&err), 2, "{msg}");
    assert!(msg.contains(&lab.hosts[1].addr), "{msg}");
    assert!(
        msg.contains("0123456789abcdef") && msg.contains("--deploy"),
        "{msg}"
    );
    assert!(lab.wait_quiet(Duration::from_secs(15)).is_empty());
}

#[test]
fn a_refused_login_is_exit_2_naming_the_host_and_nothing_is_left_running() {
    let Some(mut lab) = fleet_common::lab(3, &[1]) else {
        return;
    };
    lab.stop_sshd(2);
    let err = Fleet::connect(&lab.specs(), &lab.options())
        .err()
        .expect("the login is refused");
    let msg = format!("{err:#}");
    assert_eq!(exit_code(&err), 2, "{msg}");
    assert!(
        msg.contains(&format!("host {}", lab.hosts[1].addr)),
        "{msg}"
    );
    assert!(
        msg.contains("Permission denied"),
        "ssh's reason is quoted: {msg}"
    );
    // The unreachable host is named too, with ssh's reason.
    assert!(
        msg.contains(&format!("host {}", lab.hosts[2].addr)),
        "{msg}"
    );
    assert!(msg.contains("Connection refused"), "{msg}");
    assert!(
        !msg.contains(&format!("host {}:", lab.hosts[0].addr)),
        "{msg}"
    );
    // The host that accepted the login has no agent left.
    let left = lab.wait_quiet(Duration::from_secs(15));
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn text_instead_of_an_agent_is_refused_with_a_clear_error() {
    let Some(lab) = fleet_common::lab(1, &[]) else {
        return;
    };
    let mut o = lab.options();
    o.ssh.remote_iolab = lab.script("chatty", "echo 'Welcome to the host'; sleep 5");
    let err = Fleet::connect(&lab.specs(), &o).err().unwrap();
    let msg = format!("{err:#}");
    assert_eq!(exit_code(&err), 2, "{msg}");
    assert!(msg.contains(&lab.hosts[0].addr), "{msg}");
    assert!(msg.contains("not an iolab agent frame"), "{msg}");
    assert!(msg.contains("Welcome"), "{msg}");
}

#[test]
fn a_null_job_on_three_hosts_starts_once_and_merges_exactly() {
    let Some(lab) = fleet_common::lab(3, &[]) else {
        return;
    };
    let mut fleet = Fleet::connect(&lab.specs(), &lab.options()).unwrap();
    let pass = fleet.run_pass(&null_job(1), &no_dir()).unwrap();
    // A second pass with the file engine: each host makes its own scratch
    // file in the directory and removes it after the pass.
    let dir = tempfile::tempdir().unwrap();
    let file_job = JobSpec {
        engine: EngineKind::Psync,
        direct: false,
        qd: 1,
        ..null_job(1)
    };
    let in_dir = JobTarget {
        dir: Some(dir.path().display().to_string()),
        size: Some(4 << 20),
        overwrite: false,
        ..JobTarget::default()
    };
    let files_pass = fleet.run_pass(&file_job, &in_dir).unwrap();
    fleet.close();
    let merged = LatencyHistogram::decode(&files_pass.aggregate.histograms["read.lat"]).unwrap();
    let ops: u64 = files_pass.per_host.iter().map(|h| h.ops).sum();
    assert!(ops > 0);
    assert_eq!(merged.len(), ops);
    assert!(files(dir.path()).is_empty(), "{:?}", files(dir.path()));
    let agg = &pass.aggregate;
    assert_eq!(pass.per_host.len(), 3);
    let merged = LatencyHistogram::decode(&agg.histograms["read.lat"]).unwrap();
    let per_host_ops: u64 = pass.per_host.iter().map(|h| h.ops).sum();
    assert!(per_host_ops > 0);
    assert_eq!(merged.len(), per_host_ops, "merged histogram count");
    assert_eq!(agg.total.ops, per_host_ops);
    let iops: f64 = pass.per_host.iter().map(|h| h.iops).sum();
    assert_eq!(agg.total.iops, iops);
    // The skew is recorded: the spread of the hosts' releases, with the
    // clock's uncertainty from a real round trip.
    let starts: Vec<i64> = pass.per_host.iter().map(|h| h.start_offset_ns).collect();
    let spread = starts.iter().max().unwrap() - starts.iter().min().unwrap();
    assert_eq!(pass.start_skew_ns, spread as u64);
    assert!(pass
        .per_host
        .iter()
        .all(|h| h.clock.rtt_ns > 0 && h.clock.probes >= 1));
    // Each host's own CPU, the machine's (usr, sys, iowait) beside the agent's.
    assert!(pass.per_host.iter().all(|h| h.system_cpu.is_some()));
    assert!(lab.wait_quiet(Duration::from_secs(15)).is_empty());
}

#[test]
fn deploy_copies_this_build_and_leaves_nothing() {
    let Some(lab) = fleet_common::lab(1, &[]) else {
        return;
    };
    let deployed = || -> Vec<String> {
        std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("iolab-fleet."))
            .collect()
    };
    let before = deployed();
    // Without --deploy, a host with no iolab is refused, naming the way out.
    let mut o = lab.options();
    o.ssh.remote_iolab = "/nonexistent/iolab".into();
    let err = Fleet::connect(&lab.specs(), &o).err().unwrap();
    let msg = format!("{err:#}");
    assert_eq!(exit_code(&err), 2, "{msg}");
    assert!(msg.contains("--deploy"), "{msg}");
    o.ssh.deploy = true;
    let mut fleet = Fleet::connect(&lab.specs(), &o).unwrap();
    let pass = fleet.run_pass(&null_job(1), &no_dir()).unwrap();
    assert!(pass.aggregate.total.ops > 0);
    fleet.close();
    let end = Instant::now() + Duration::from_secs(10);
    while deployed() != before && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(deployed(), before, "the deployed copy is removed");
}

/// Start an agent over ssh by hand and drive it to a running file job.
fn running_file_job(
    lab: &fleet_common::Lab,
    dir: &std::path::Path,
) -> (std::process::Child, Conn, Hello) {
    let opts = lab.options();
    let remote = ssh::agent_command(&opts.ssh, None);
    let mut child = ssh::command(&lab.specs()[0], &opts.ssh, &remote)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut conn = Conn::new(
        "h".into(),
        child.stdout.take().unwrap(),
        child.stdin.take().unwrap(),
    );
    let Message::Hello(hello) = conn.recv_within(Duration::from_secs(30)).unwrap() else {
        panic!("no hello")
    };
    let job = JobSpec {
        engine: EngineKind::Psync,
        direct: false,
        qd: 1,
        ..null_job(120)
    };
    conn.send(&Message::Prepare(Box::new(Prepare::device(
        job,
        JobTarget {
            dir: Some(dir.display().to_string()),
            size: Some(8 << 20),
            overwrite: false,
            ..JobTarget::default()
        },
    ))))
    .unwrap();
    match conn.recv_within(Duration::from_secs(60)).unwrap() {
        Message::Ready { target } => assert!(target.starts_with(&dir.display().to_string())),
        other => panic!("{other:?}"),
    }
    conn.send(&Message::StartAt { agent_ns: 0 }).unwrap();
    // A progress message says the job runs.
    match conn.recv_within(Duration::from_secs(30)).unwrap() {
        Message::Progress(_) => {}
        other => panic!("{other:?}"),
    }
    (child, conn, hello)
}

fn files(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn an_agent_whose_control_side_disappears_tears_down_by_itself() {
    let Some(lab) = fleet_common::lab(1, &[]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (mut child, conn, _) = running_file_job(&lab, dir.path());
    assert_eq!(files(dir.path()).len(), 1, "the scratch file");
    // The ssh dies under the control side.
    child.kill().unwrap();
    child.wait().unwrap();
    drop(conn);
    let left = lab.wait_quiet(Duration::from_secs(20));
    assert!(left.is_empty(), "{left:?}");
    assert!(files(dir.path()).is_empty(), "{:?}", files(dir.path()));
}

#[test]
fn a_sigkilled_agents_scratch_file_is_swept_by_the_hosts_next_start() {
    let Some(lab) = fleet_common::lab(1, &[]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (mut child, _conn, hello) = running_file_job(&lab, dir.path());
    // SAFETY: the agent's pid, in a namespace this test made.
    unsafe { libc::kill(hello.pid as i32, libc::SIGKILL) };
    child.wait().unwrap();
    assert_eq!(
        files(dir.path()).len(),
        1,
        "a SIGKILL leaves the scratch file"
    );
    // The host's next iolab start (same crash-record directory) sweeps it.
    let out = std::process::Command::new("ip")
        .args([
            "netns",
            "exec",
            &lab.hosts[0].ns,
            env!("CARGO_BIN_EXE_iolab"),
            "sysinfo",
        ])
        .env("IOLAB_STATE_DIR", &lab.hosts[0].state)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        files(dir.path()).is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `iolab agent` on this machine, its three streams piped.
fn local_agent() -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_iolab"))
        .arg("agent")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_malformed_message_to_the_agent_is_refused_with_a_clear_error() {
    use std::io::Write;
    let mut agent = local_agent();
    // A frame header claiming a 4 GiB prepare.
    let mut frame = vec![b'I', b'L', iolab::fleet::proto::PROTOCOL_VERSION, 2];
    frame.extend_from_slice(&u32::MAX.to_le_bytes());
    agent.stdin.take().unwrap().write_all(&frame).unwrap();
    let out = agent.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("prepare message of 4294967295 bytes is over its limit"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

fn status_kib(key: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn cpu_ms(who: i32) -> f64 {
    // SAFETY: getrusage into a local struct.
    let mut r: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(who, &mut r) };
    let t = |v: libc::timeval| v.tv_sec as f64 * 1e3 + v.tv_usec as f64 / 1e3;
    t(r.ru_utime) + t(r.ru_stime)
}

/// The control side at scale, for docs/fleet.md (not a check: run with
/// `IOLAB_FLEET_HOSTS=N cargo test --test fleet_hosts -- --ignored --nocapture`).
#[test]
#[ignore]
fn scale_measurement() {
    let n: usize = std::env::var("IOLAB_FLEET_HOSTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16);
    let Some(lab) = fleet_common::lab(n, &[]) else {
        return;
    };
    let rss0 = status_kib("VmRSS:");
    let (cpu0, kids0) = (cpu_ms(libc::RUSAGE_SELF), cpu_ms(libc::RUSAGE_CHILDREN));
    let t = Instant::now();
    let mut fleet = Fleet::connect(&lab.specs(), &lab.options()).unwrap();
    let connect_s = t.elapsed().as_secs_f64();
    let threads = status_kib("Threads:");
    let t = Instant::now();
    let pass = fleet.run_pass(&null_job(2), &no_dir()).unwrap();
    let pass_s = t.elapsed().as_secs_f64();
    // The same with 1,000 requests a second per host: the agents leave the
    // CPUs idle, so the skew is the start's own, not the scheduler's.
    let paced = JobSpec {
        open_loop: Some(iolab::plan::job::OpenLoop {
            rate_iops: 1000.0,
            arrival: Default::default(),
        }),
        ..null_job(2)
    };
    let light = fleet.run_pass(&paced, &no_dir()).unwrap();
    let mut starts: Vec<i64> = light
        .per_host
        .iter()
        .map(|h| h.start_offset_ns / 1000)
        .collect();
    starts.sort();
    println!(
        "hosts {n}, paced: start skew {:.3} ms; release after the common start, us: {starts:?}",
        light.start_skew_ns as f64 / 1e6
    );
    let rss1 = status_kib("VmRSS:");
    fleet.close();
    let (cpu1, kids1) = (cpu_ms(libc::RUSAGE_SELF), cpu_ms(libc::RUSAGE_CHILDREN));
    let pass_json = serde_json::to_vec(&pass).unwrap().len();
    let agg_json = serde_json::to_vec(&pass.aggregate).unwrap().len();
    let hist_bytes: usize = pass.aggregate.histograms.values().map(|h| h.len()).sum();
    let per_host_ops: u64 = pass.per_host.iter().map(|h| h.ops).sum();
    assert_eq!(pass.aggregate.total.ops, per_host_ops);
    println!(
        "hosts {n}: connect {connect_s:.2} s, pass of a 2 s job {pass_s:.2} s, start skew {:.3} ms \
         (clock uncertainty <= {:.3} ms), control threads while connected {threads}, \
         control RSS {rss0} -> {rss1} KiB, control CPU {:.0} ms, ssh clients' CPU {:.0} ms, \
         FleetPass JSON {pass_json} B (aggregate point {agg_json} B, its histograms {hist_bytes} B), \
         aggregate {:.0} IOPS",
        pass.start_skew_ns as f64 / 1e6,
        pass.clock_uncertainty_ns as f64 / 1e6,
        cpu1 - cpu0,
        kids1 - kids0,
        pass.aggregate.total.iops,
    );
}

#[test]
fn the_agent_refuses_a_terminal() {
    if !std::path::Path::new("/usr/bin/script").exists() {
        eprintln!("skipping: script (util-linux) is not installed to give the agent a terminal");
        return;
    }
    let cmd = format!("{} agent", env!("CARGO_BIN_EXE_iolab"));
    let out = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("not to a terminal"), "{text}");
    assert!(!text.contains("IL\u{1}"), "no frame on a terminal: {text}");
}

fn threads_of(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count())
}

#[test]
fn a_host_killed_mid_point_makes_the_pass_partial_and_the_others_are_kept() {
    let Some(lab) = fleet_common::lab(2, &[]) else {
        return;
    };
    let mut fleet = Fleet::connect(&lab.specs(), &lab.options()).unwrap();
    let victim = fleet.agents()[1].hello.pid;
    // Killed once its workers exist: after the start was sent.
    let killer = std::thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(60);
        while threads_of(victim) < 3 && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(300));
        // SAFETY: the agent's pid, in a namespace this test made.
        unsafe { libc::kill(victim as i32, libc::SIGKILL) };
    });
    let pass = fleet.run_pass(&null_job(60), &no_dir()).unwrap();
    killer.join().unwrap();
    assert!(pass.is_partial());
    assert_eq!(pass.lost.len(), 1);
    assert_eq!(pass.lost[0].host, lab.hosts[1].addr);
    assert!(pass.lost[0].why.contains("closed"), "{:?}", pass.lost);
    assert_eq!(pass.per_host.len(), 1);
    assert_eq!(pass.aggregate.total.ops, pass.per_host[0].ops);
    assert!(pass.per_host[0].ops > 0);
    // The surviving host was stopped, not left measuring for a minute.
    assert!(
        pass.per_host[0]
            .warnings
            .iter()
            .any(|w| w.contains("stopped before its end")),
        "{:?}",
        pass.per_host[0]
    );
    let w = &pass.aggregate.warnings;
    assert!(w.iter().any(|w| w.contains("partial")), "{w:?}");
    assert_eq!(fleet.hosts(), vec![lab.hosts[0].addr.clone()]);
    fleet.close();
    assert!(lab.wait_quiet(Duration::from_secs(15)).is_empty());
}

/// A control side that goes silent (a partitioned host: its input never
/// ends) is given up on: the agent tears down and exits after
/// `CONTROL_SILENCE` without a keep-alive. It waited until the link came
/// back (90 s+ in the audit, for ever if it never did).
#[test]
fn an_agent_whose_control_side_goes_silent_exits() {
    let silence = iolab::fleet::proto::CONTROL_SILENCE;
    let mut agent = local_agent();
    // Held open and never written: silence, not an end.
    let _input = agent.stdin.take().unwrap();
    let t = std::time::Instant::now();
    while agent.try_wait().unwrap().is_none() {
        if t.elapsed() > silence * 4 {
            let _ = agent.kill();
            panic!("the agent still waits {:?} into the silence", t.elapsed());
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let out = agent.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("silent for 30 s"), "{err}");
}

/// One host under two names (its address, and root@ its address) was
/// accepted and counted twice: only a literal duplicate was refused. Now
/// the agents' identities (machine id, boot, network namespace) are
/// compared after connecting: exit 2 naming both spellings, nothing left
/// running; two namespaces of this one machine are still two hosts.
#[test]
fn one_host_under_two_names_is_refused_naming_both() {
    let Some(lab) = fleet_common::lab(2, &[]) else {
        return;
    };
    let a = &lab.hosts[0].addr;
    let list = format!("{a},{},root@{a}", lab.hosts[1].addr);
    let hosts = iolab::fleet::parse_hosts(&list, "--hosts").unwrap();
    assert_eq!(hosts.len(), 3, "the list itself is accepted");
    let err = Fleet::connect(&hosts, &lab.options())
        .err()
        .expect("one host named twice is refused");
    let msg = format!("{err:#}");
    assert_eq!(exit_code(&err), 2, "{msg}");
    assert!(msg.contains("--hosts"), "{msg}");
    assert!(
        msg.contains(&format!("{a} and root@{a} are the same host")),
        "{msg}"
    );
    assert!(lab.wait_quiet(Duration::from_secs(15)).is_empty());
    let mut fleet = Fleet::connect(&lab.specs(), &lab.options()).unwrap();
    let pass = fleet.run_pass(&null_job(1), &no_dir()).unwrap();
    fleet.close();
    assert_eq!(pass.per_host.len(), 2);
}

/// `--deploy` sent the whole 110-160 MB debug binary to every host on
/// every run. Now a stripped copy goes, compressed, into a cache on the
/// host named after its hash, once: a second run finds it there and sends
/// nothing; the agent running it passes the build check.
#[test]
fn deploy_sends_a_stripped_copy_once_and_the_next_run_uses_the_cache() {
    let Some(lab) = fleet_common::lab(1, &[]) else {
        return;
    };
    let mut o = lab.options();
    o.ssh.remote_iolab = "/nonexistent/iolab".into();
    o.ssh.deploy = true;
    let mut fleet = Fleet::connect(&lab.specs(), &o).unwrap();
    let first = fleet.agents()[0].deployed.clone().expect("deployed");
    let pass = fleet.run_pass(&null_job(1), &no_dir()).unwrap();
    assert!(pass.aggregate.total.ops > 0);
    let summary = fleet.deploy_summary().unwrap();
    fleet.close();
    let sent = first.sent.expect("the first run sends the copy");
    let local = std::fs::metadata(env!("CARGO_BIN_EXE_iolab"))
        .unwrap()
        .len();
    let cache = lab.dir.path().join("deploy-cache-");
    assert!(
        first.dir.starts_with(&cache.display().to_string()),
        "{first:?}"
    );
    let copy = std::fs::metadata(format!("{}/iolab", first.dir))
        .unwrap()
        .len();
    eprintln!("local {local} B, deployed {copy} B, {sent} B on the wire; {summary}");
    let can_strip = ["/usr/bin/objcopy", "/usr/bin/strip"]
        .iter()
        .any(|t| std::path::Path::new(t).exists());
    if can_strip {
        assert!(copy < local, "stripped: {copy} < {local}");
    }
    assert!(sent <= copy, "compressed or as is: {sent} <= {copy}");
    let mut fleet = Fleet::connect(&lab.specs(), &o).unwrap();
    let second = fleet.agents()[0].deployed.clone().expect("deployed");
    assert_eq!(second.sent, None, "the cached copy is used: {second:?}");
    assert_eq!(second.dir, first.dir);
    assert!(fleet
        .deploy_summary()
        .unwrap()
        .contains("sent to 0 host(s)"));
    fleet.run_pass(&null_job(1), &no_dir()).unwrap();
    fleet.close();
    assert!(lab.wait_quiet(Duration::from_secs(15)).is_empty());
}

/// The progress line said "1s: 999 IOPS", "2s: 14.0k" with 16 hosts paced
/// at 1,000 IOPS each: a second was told at its first host's report, the
/// others' stale or zero. Now each second is told once, summing every
/// host's report of it.
#[test]
fn each_progress_second_sums_every_hosts_report() {
    let Some(lab) = fleet_common::lab(3, &[]) else {
        return;
    };
    let paced = JobSpec {
        open_loop: Some(iolab::plan::job::OpenLoop {
            rate_iops: 1000.0,
            arrival: Default::default(),
        }),
        ..null_job(4)
    };
    let mut fleet = Fleet::connect(&lab.specs(), &lab.options()).unwrap();
    let told = std::sync::Mutex::new(Vec::new());
    fleet
        .run_pass_observed(&paced, &no_dir(), &|p| {
            told.lock().unwrap().push((p.second, p.iops))
        })
        .unwrap();
    fleet.close();
    let told = told.into_inner().unwrap();
    assert!(told.len() >= 2, "{told:?}");
    assert!(
        told.windows(2).all(|w| w[0].0 < w[1].0),
        "once each: {told:?}"
    );
    // A host starved of CPU on a loaded machine may report a second short
    // (its open loop catches up after): so no second may count more than
    // the 3 hosts' 1,000 (no stale report added twice), and some second
    // must sum more than one host's.
    assert!(
        told.iter().all(|(_, iops)| *iops < 3600.0),
        "no second counts a report twice: {told:?}"
    );
    assert!(
        told.iter().any(|(_, iops)| *iops > 2500.0),
        "a second sums the 3 hosts' 1,000: {told:?}"
    );
}
