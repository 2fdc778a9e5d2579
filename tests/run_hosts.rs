//! `iolab run --hosts` end to end against namespace hosts with their own
//! sshd (tests/fleet_common): the device steps merged exactly per job
//! with each host's row, the open-loop rates shared out over the hosts,
//! the trace and database steps dropped with their reason in the plan
//! and the results, nothing left on the hosts; refused flags and logins
//! are exit 2 naming them; a host lost mid-step leaves a partial point
//! naming it and stops the run (exit 1); Ctrl-C is exit 130 leaving
//! nothing anywhere.
//! The lab needs root, ip netns and sshd (those tests skip otherwise).

mod fleet_common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use fleet_common::{all_hosts, load, text, Lab};

const IOLAB: &str = env!("CARGO_BIN_EXE_iolab");

fn run_on(lab: &Lab, hosts: &str, extra: &[&str]) -> Command {
    let mut c = run_loud(lab, hosts, extra);
    c.arg("--quiet");
    c
}

/// `run_on` with the summary on stdout.
fn run_loud(lab: &Lab, hosts: &str, extra: &[&str]) -> Command {
    let mut c = Command::new(IOLAB);
    c.args(["run", "--hosts", hosts, "--ssh-config"])
        .arg(&lab.ssh_config)
        .args(["--host-iolab", IOLAB])
        .args(extra);
    c
}

fn leftovers(lab: &Lab, work: &Path) {
    let left = lab.wait_quiet(Duration::from_secs(20));
    assert!(left.is_empty(), "left on the hosts: {left:?}");
    let files: Vec<_> = std::fs::read_dir(work)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(files.is_empty(), "left in the hosts' directory: {files:?}");
}

fn iolab(args: &[&str]) -> Output {
    Command::new(IOLAB).args(args).output().unwrap()
}

#[test]
fn device_steps_run_on_every_host_merged_and_the_others_are_dropped() {
    let Some(lab) = fleet_common::lab(2, &[]) else {
        return;
    };
    let work = lab.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let out = lab.dir.path().join("out");
    let o = run_loud(
        &lab,
        &all_hosts(&lab),
        &["--engine", "psync", "--size", "8m", "--budget", "10s"],
    )
    .arg(&work)
    .arg("-o")
    .arg(&out)
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let shown = String::from_utf8_lossy(&o.stdout);
    assert!(shown.contains("4k random read IOPS"), "{shown}");
    println!("{shown}");
    let r = load(&out.join("results.json"));
    assert!(out.join("report.html").is_file());
    assert!(!r.points.is_empty());
    assert_eq!(r.extra.hosts.as_ref().unwrap().hosts.len(), 2);
    assert!(r.provenance.target.is_none(), "no target of this machine");
    for p in &r.points {
        let h = p.extra.hosts.as_ref().expect("a hosts section");
        assert_eq!(h.per_host.len(), 2, "{}", p.name);
        let sum: u64 = h.per_host.iter().map(|x| x.ops).sum();
        assert_eq!(p.total.ops, sum, "{}", p.name);
        assert!(h.lost.is_empty(), "{}", p.name);
    }
    // The rate is the whole load, a share of both hosts' maximum; each
    // host offers its half of it (issue 46: one rule with device --hosts).
    let max = r
        .points
        .iter()
        .find(|p| p.extra.role.as_deref() == Some("closed_loop_max"))
        .map(|p| p.total.iops)
        .expect("the closed-loop maximum");
    let rated: Vec<_> = r
        .points
        .iter()
        .filter(|p| p.params.get("step").is_some_and(|s| s == "load-latency"))
        .collect();
    assert!(!rated.is_empty(), "no load-latency point");
    for p in rated {
        let pct = p.extra.rate_pct_of_max.unwrap();
        let rate = p.job.as_ref().unwrap().open_loop.unwrap().rate_iops;
        let want = (pct / 100.0 * max).max(1.0);
        assert!(
            (rate - want).abs() <= want * 1e-9,
            "{}: {rate} vs {want}",
            p.name
        );
        let each = p.extra.hosts.as_ref().unwrap().rate_per_host.unwrap();
        assert!(
            (each - want / 2.0).abs() <= want * 1e-9,
            "{}: {each}",
            p.name
        );
    }
    let steps = &r.extra.run.as_ref().unwrap().steps;
    for id in ["breakdown", "kv"] {
        let s = steps.iter().find(|s| s.id == id).expect(id);
        let why = s.skipped.as_deref().unwrap_or_default();
        assert!(why.starts_with("not on --hosts"), "{id}: {why}");
        assert!(
            r.warnings
                .iter()
                .any(|w| w.contains("skipped: not on --hosts") && w.contains(s.title.as_str())),
            "{id}: {:?}",
            r.warnings
        );
    }
    leftovers(&lab, &work);
}

/// Issue 46: a media run on hosts as on this machine: a directory on every
/// host and a tmpfs every host builds (`--make`) in two rounds against a
/// baseline, every job on both hosts
/// at once per pass (each point tagged by its pass, the hosts' exact
/// merge), the media comparison in the results, nothing left.
#[test]
fn a_media_run_runs_every_setup_in_rounds_on_every_host() {
    let Some(lab) = fleet_common::lab(2, &[]) else {
        return;
    };
    let work = lab.dir.path().join("work");
    let (a, b) = (work.join("a"), work.join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let out = lab.dir.path().join("media-out");
    // B is a tmpfs every host builds in b (`--make` on hosts).
    let o = run_on(
        &lab,
        &all_hosts(&lab),
        &["--engine", "psync", "--size", "8m", "--budget", "24s"],
    )
    .arg(format!("A={}", a.display()))
    .args(["--make", "tmpfs", "--make-in"])
    .arg(&b)
    .args(["--rounds", "2", "--baseline", "tmpfs", "-o"])
    .arg(&out)
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let r = load(&out.join("results.json"));
    assert_eq!(r.extra.hosts.as_ref().unwrap().hosts.len(), 2);
    let media = r.extra.media.as_ref().expect("the setups");
    assert_eq!(media.targets.as_ref().map(|t| t.len()), Some(2));
    let mut passes = std::collections::BTreeSet::new();
    for p in &r.points {
        let h = p.extra.hosts.as_ref().expect("a hosts section");
        assert_eq!(h.per_host.len(), 2, "{}", p.name);
        let sum: u64 = h.per_host.iter().map(|x| x.ops).sum();
        assert_eq!(p.total.ops, sum, "{}", p.name);
        let pass = p.pass.as_ref().expect("tagged with its pass");
        assert_eq!(pass.baseline, pass.setup == "tmpfs", "{}", p.name);
        passes.insert((pass.setup.clone(), pass.round));
    }
    let want: Vec<(String, u32)> = ["A", "tmpfs"]
        .iter()
        .flat_map(|s| [(s.to_string(), 1), (s.to_string(), 2)])
        .collect();
    assert_eq!(passes.into_iter().collect::<Vec<_>>(), want);
    leftovers(&lab, &a);
    leftovers(&lab, &b);
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    assert!(!mounts.contains(&b.display().to_string()), "a tmpfs left");
}

#[test]
fn a_dry_run_names_the_hosts_and_the_dropped_steps_without_connecting() {
    // Hosts that do not exist: a dry run does not contact them.
    let o = iolab(&[
        "run",
        "/var/tmp",
        "--hosts",
        "h1.invalid,h2.invalid",
        "--dry-run",
        "--budget",
        "20s",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let shown = String::from_utf8_lossy(&o.stdout);
    assert!(
        shown.contains("2 host(s) (h1.invalid, h2.invalid)"),
        "{shown}"
    );
    assert!(
        shown.contains("skipped: not on --hosts: tracing"),
        "{shown}"
    );
    assert!(
        shown.contains("skipped: not on --hosts: the database step"),
        "{shown}"
    );
}

#[test]
fn what_cannot_run_on_hosts_and_the_hosts_flags_alone_are_exit_2_naming_the_flag() {
    for (args, flag) in [
        (vec!["/var/tmp", "--hosts", "h1", "--remote"], "--remote"),
        (vec!["/var/tmp", "--hosts", "h1", "--make", "raw"], "--make"),
        (vec!["/var/tmp", "relative", "--hosts", "h1"], "DIR"),
        (vec!["relative", "--hosts", "h1"], "DIR"),
        (vec!["nbd://10.0.0.1/x", "--hosts", "h1"], "DIR"),
        (
            vec!["/var/tmp", "--hosts", "h1", "--overwrite"],
            "--overwrite",
        ),
        (vec!["/var/tmp", "--hosts", ""], "--hosts"),
        (vec!["/var/tmp", "--deploy"], "--deploy"),
        (
            vec!["/var/tmp", "--on-host-loss", "continue"],
            "--on-host-loss",
        ),
        (vec!["/var/tmp", "--host-iolab", "/x"], "--host-iolab"),
    ] {
        let mut all = vec!["run", "--dry-run"];
        all.extend(&args);
        let o = iolab(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(flag), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn a_refused_login_is_exit_2_naming_the_host_and_nothing_starts() {
    let Some(lab) = fleet_common::lab(2, &[1]) else {
        return;
    };
    let work = lab.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let out = lab.dir.path().join("out");
    let o = run_on(
        &lab,
        &all_hosts(&lab),
        &["--engine", "psync", "--size", "8m", "--budget", "4s"],
    )
    .arg(&work)
    .arg("-o")
    .arg(&out)
    .output()
    .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&lab.hosts[1].addr), "{err}");
    assert!(!out.exists(), "no output before the hosts are connected");
    leftovers(&lab, &work);
}

#[test]
fn ctrl_c_is_exit_130_and_leaves_nothing_on_the_hosts() {
    let Some(lab) = fleet_common::lab(2, &[]) else {
        return;
    };
    let work = lab.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let out = lab.dir.path().join("out");
    let child = run_on(
        &lab,
        &all_hosts(&lab),
        &["--engine", "psync", "--size", "8m", "--budget", "60s"],
    )
    .arg(&work)
    .arg("-o")
    .arg(&out)
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // Once the first point measures on the hosts.
    let end = std::time::Instant::now() + Duration::from_secs(60);
    while !out.join("results.json").exists() && std::time::Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    let r = load(&out.join("results.json"));
    assert!(r.interrupted);
    leftovers(&lab, &work);
}

/// The agent's pid on host `i`, once it runs.
fn agent_pid(lab: &Lab, i: usize) -> u32 {
    let end = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let found = lab.hosts[i]
            .others()
            .into_iter()
            .find(|p| p.contains(" agent"))
            .and_then(|p| p.split(':').next()?.parse().ok());
        if let Some(pid) = found {
            return pid;
        }
        assert!(std::time::Instant::now() < end, "no agent on host {i}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_host_lost_mid_step_leaves_a_partial_point_naming_it_and_stops() {
    let Some(lab) = fleet_common::lab(2, &[]) else {
        return;
    };
    let work = lab.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let out = lab.dir.path().join("out");
    let child = run_on(
        &lab,
        &all_hosts(&lab),
        &["--engine", "psync", "--size", "8m", "--budget", "40s"],
    )
    .args(["--profile", "quick"])
    .arg(&work)
    .arg("-o")
    .arg(&out)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let victim = agent_pid(&lab, 1);
    let end = std::time::Instant::now() + Duration::from_secs(60);
    while !out.join("results.json").exists() && std::time::Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: an agent in a namespace this test made.
    unsafe { libc::kill(victim as i32, libc::SIGKILL) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let r = load(&out.join("results.json"));
    assert!(out.join("report.html").is_file());
    let partial: Vec<_> = r
        .points
        .iter()
        .filter(|p| p.extra.hosts.as_ref().is_some_and(|h| !h.lost.is_empty()))
        .collect();
    assert_eq!(partial.len(), 1, "one partial point");
    let h = partial[0].extra.hosts.as_ref().unwrap();
    assert_eq!(h.lost[0].host, lab.hosts[1].addr);
    assert!(partial[0].is_interrupted(), "a partial point is marked");
    assert!(partial[0].total.ops > 0, "the other host's data is kept");
    // --on-host-loss stop: no point after the lost one.
    assert!(std::ptr::eq(
        *partial.last().unwrap(),
        r.points.last().unwrap()
    ));
    let skipped = r.extra.skipped_points.as_ref().unwrap();
    assert!(!skipped.is_empty(), "the points not run are named");
    let left = lab.wait_quiet(Duration::from_secs(20));
    assert!(left.is_empty(), "left on the hosts: {left:?}");
}
