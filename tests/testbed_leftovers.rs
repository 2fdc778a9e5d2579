//! What iolab sets up is taken down also when the run is not allowed to
//! finish: a second Ctrl-C removes the scratch file at once (exit 130), and
//! after a SIGKILL the next iolab start removes what the killed run left,
//! from its crash record in the state directory (IOLAB_STATE_DIR here).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::workdir;

fn scratch_files(dir: &Path) -> Vec<PathBuf> {
    common::files_in(dir)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("iolab-scratch-"))
        })
        .collect()
}

fn records(state: &Path) -> Vec<PathBuf> {
    common::files_in(state)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect()
}

/// A long device run on a scratch file in `dir`, records in `state`.
fn start_run(dir: &Path, state: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["device", "--target", dir.to_str().unwrap()])
        .args(["--engine", "psync", "--rw", "randread", "--bs", "4k"])
        .args(["--size", "16m", "--runtime", "120s", "--quiet"])
        .env("IOLAB_STATE_DIR", state)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start iolab")
}

/// Wait (at most 30 s) until the run has its scratch file and its record.
fn wait_until_running(dir: &Path, state: &Path, child: &mut Child) {
    let start = Instant::now();
    while scratch_files(dir).is_empty() || records(state).is_empty() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "iolab ended before its scratch file appeared"
        );
        assert!(start.elapsed() < Duration::from_secs(30), "no scratch file");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Past the layout, inside the measurement.
    std::thread::sleep(Duration::from_millis(500));
}

#[test]
fn second_ctrl_c_removes_the_scratch_file_at_once() {
    let dir = workdir();
    let state = workdir();
    let mut child = start_run(dir.path(), state.path());
    wait_until_running(dir.path(), state.path(), &mut child);
    let pid = child.id() as i32;
    // SAFETY: signalling the child we spawned.
    unsafe { libc::kill(pid, libc::SIGINT) };
    std::thread::sleep(Duration::from_millis(20));
    unsafe { libc::kill(pid, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", common::text(&out));
    assert!(scratch_files(dir.path()).is_empty(), "scratch file left");
    assert!(records(state.path()).is_empty(), "crash record left");
}

#[test]
fn after_sigkill_the_next_start_removes_the_leftovers() {
    let dir = workdir();
    let state = workdir();
    let mut child = start_run(dir.path(), state.path());
    wait_until_running(dir.path(), state.path(), &mut child);
    child.kill().unwrap(); // SIGKILL: no handler runs
    child.wait().unwrap();
    let left = scratch_files(dir.path());
    assert_eq!(left.len(), 1, "SIGKILL leaves the scratch file");
    assert_eq!(records(state.path()).len(), 1, "and its record");

    let said = common::next_start(state.path());
    assert!(
        said.contains("removed") && said.contains(&*left[0].to_string_lossy()),
        "the sweep says what it removed: {said}"
    );
    assert!(scratch_files(dir.path()).is_empty(), "leftover removed");
    assert!(records(state.path()).is_empty(), "record removed");
}

#[test]
fn records_of_running_processes_and_foreign_paths_are_left_alone() {
    let state = workdir();
    let victim_dir = workdir();
    let victim = victim_dir.path().join("precious.dat");
    std::fs::write(&victim, b"user data").unwrap();
    let start_of = |pid: u32| -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let after = &stat[stat.rfind(')').unwrap() + 1..];
        after.split_whitespace().nth(19).unwrap().parse().unwrap()
    };
    let me = std::process::id();
    // A live owner (this test process) with an iolab path, and a dead owner
    // whose record names a path iolab never creates.
    let live_path = victim_dir.path().join("iolab-scratch-live.dat");
    std::fs::write(&live_path, b"x").unwrap();
    let live =
        serde_json::json!({"pid": me, "start_time": start_of(me), "resource": {"path": live_path}});
    let foreign = serde_json::json!({"pid": me, "start_time": 1, "resource": {"path": victim}});
    std::fs::write(state.path().join("1-0.json"), live.to_string()).unwrap();
    std::fs::write(state.path().join("2-0.json"), foreign.to_string()).unwrap();
    common::next_start(state.path());
    assert!(live_path.exists(), "a running owner's resource was removed");
    assert!(victim.exists(), "a path iolab does not name was removed");
}

/// A record whose owner is gone, naming `resource`.
fn plant_dead_record(state: &Path, resource: serde_json::Value) {
    let rec = serde_json::json!({"pid": u32::MAX - 1, "start_time": 1, "resource": resource});
    std::fs::write(state.join("9-0.json"), rec.to_string()).unwrap();
}

/// The current scheduler of disk `name`.
fn scheduler_of(name: &str) -> String {
    let text = std::fs::read_to_string(format!("/sys/block/{name}/queue/scheduler")).unwrap();
    let cur = text
        .split_whitespace()
        .find(|w| w.starts_with('['))
        .unwrap();
    cur.trim_matches(['[', ']']).to_string()
}

#[test]
fn a_scheduler_switch_left_by_a_killed_run_is_undone_at_next_start() {
    let dir = workdir();
    let state = workdir();
    let backing = dir.path().join("disk.img");
    std::fs::write(&backing, vec![0u8; 4 << 20]).unwrap();
    let lo = match common::loopdev::LoopDev::attach(&backing, &[]) {
        Ok(lo) => lo,
        Err(why) => {
            eprintln!("SKIP scheduler leftover: {why}");
            return;
        }
    };
    let name = lo.name();
    let file = format!("/sys/block/{name}/queue/scheduler");
    let offered = std::fs::read_to_string(&file).unwrap();
    let original = scheduler_of(&name);
    let Some(other) = offered
        .split_whitespace()
        .map(|w| w.trim_matches(['[', ']']))
        .find(|w| *w != original)
    else {
        eprintln!("SKIP scheduler leftover: {name} offers one scheduler only");
        return;
    };
    // What `trace --scheduler` does, then a SIGKILL before the guard drops.
    std::fs::write(&file, other).unwrap();
    assert_eq!(scheduler_of(&name), other);
    plant_dead_record(
        state.path(),
        serde_json::json!({"scheduler": {"path": file, "original": original}}),
    );
    let said = common::next_start(state.path());
    assert!(said.contains("scheduler"), "the sweep says so: {said}");
    assert_eq!(scheduler_of(&name), original, "scheduler put back");
    assert!(records(state.path()).is_empty(), "record removed");
}

/// A long null-engine kv run in a 256 MiB memory cgroup, records in
/// `state`; returns it once its cgroup is recorded, with the cgroup's path.
fn start_kv_in_cgroup(dir: &Path, state: &Path) -> (Child, PathBuf) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["kv", "a", "--engine", "null", "--memory-limit", "256m"])
        .args(["-p", "recordcount=1000", "-p", "operationcount=2000000000"])
        .args(["--dir", dir.to_str().unwrap()])
        .env("IOLAB_STATE_DIR", state)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start iolab kv");
    let start = Instant::now();
    // Both records: the database directory's and the cgroup's.
    loop {
        let all = records(state);
        let cgroups: Vec<PathBuf> = all
            .iter()
            .filter_map(|r| {
                let v: serde_json::Value = serde_json::from_slice(&std::fs::read(r).ok()?).ok()?;
                Some(PathBuf::from(v["resource"]["cgroup"]["path"].as_str()?))
            })
            .collect();
        if all.len() >= 2 && cgroups.len() == 1 {
            // Inside the run phase.
            std::thread::sleep(Duration::from_millis(300));
            return (child, cgroups[0].clone());
        }
        assert!(child.try_wait().unwrap().is_none(), "kv ended early");
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no cgroup record"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_memory_cgroup_left_by_a_killed_kv_run_is_removed_at_next_start() {
    if let Err(why) = iolab::testbed::cgroup::available() {
        eprintln!("SKIP cgroup leftover: {why}");
        return;
    }
    let dir = workdir();
    let state = workdir();
    let (mut child, cgroup) = start_kv_in_cgroup(dir.path(), state.path());
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        cgroup.exists(),
        "SIGKILL leaves the cgroup {}",
        cgroup.display()
    );
    let said = common::next_start(state.path());
    assert!(said.contains("cgroup"), "the sweep says so: {said}");
    assert!(!cgroup.exists(), "cgroup {} removed", cgroup.display());
    assert!(records(state.path()).is_empty(), "records removed");
}

#[test]
fn a_second_ctrl_c_removes_the_memory_cgroup_and_the_database() {
    if let Err(why) = iolab::testbed::cgroup::available() {
        eprintln!("SKIP cgroup teardown: {why}");
        return;
    }
    let dir = workdir();
    let state = workdir();
    let (child, cgroup) = start_kv_in_cgroup(dir.path(), state.path());
    let pid = child.id() as i32;
    // SAFETY: signalling the child we spawned.
    unsafe { libc::kill(pid, libc::SIGINT) };
    std::thread::sleep(Duration::from_millis(5));
    unsafe { libc::kill(pid, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", common::text(&out));
    assert!(!cgroup.exists(), "cgroup {} left", cgroup.display());
    assert!(common::files_in(dir.path()).is_empty(), "database left");
    assert!(records(state.path()).is_empty(), "records left");
}

/// A sweep killed before it finished (an `iolab serve` child of a
/// SIGKILLed `iolab remote` starts, claims its parent's records and dies
/// with it) left its claims renamed `*.sweeping-PID`, and no later start
/// took them again: the scratch file and the netns stayed for ever.
#[test]
fn claims_of_a_sweep_that_died_are_taken_again() {
    let dir = common::workdir();
    let state = common::workdir();
    let file = dir.path().join("iolab-scratch-4194301-0.dat");
    std::fs::write(&file, b"x").unwrap();
    let rec = serde_json::json!({"pid": u32::MAX - 1, "start_time": 1, "resource": {"path": file}});
    let claimed = state.path().join(format!("9-0.sweeping-{}", u32::MAX - 2));
    std::fs::write(&claimed, rec.to_string()).unwrap();
    let said = common::next_start(state.path());
    assert!(!file.exists(), "the scratch file stayed: {said}");
    assert!(
        records(state.path()).is_empty() && !claimed.exists(),
        "{said}"
    );
}

/// A process standing for `program`, a server a dead run spawned (tagged
/// `tag` in its environment, in a process group of its own), and the dead
/// run's record naming it.
fn spawned_server_of_a_dead_run(state: &Path, tag: &str, program: &str) -> Child {
    use std::os::unix::process::CommandExt;
    let server = Command::new("sleep")
        .arg("60")
        .process_group(0)
        .env("IOLAB_SPAWN_TAG", tag)
        .spawn()
        .unwrap();
    plant_dead_record(
        state,
        serde_json::json!({"spawning_process": {"tag": tag, "program": program}}),
    );
    server
}

/// A server spawned just before a SIGKILL of iolab, before its pid was
/// recorded: only the record written before the spawn names it (by the tag
/// in its environment). The next start finds and stops it, and says so.
#[test]
fn a_server_started_just_before_a_sigkill_is_stopped_at_next_start() {
    let state = workdir();
    let tag = format!("{}-77", u32::MAX - 1);
    let mut server = spawned_server_of_a_dead_run(state.path(), &tag, "nbdkit");
    let said = common::next_start(state.path());
    let stopped = (0..200).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(10));
        server.try_wait().unwrap().is_some()
    });
    if !stopped {
        let _ = server.kill();
        let _ = server.wait();
    }
    assert!(stopped, "the server runs on: {said}");
    assert!(said.contains(&tag) && said.contains("removed"), "{said}");
    assert!(records(state.path()).is_empty(), "record removed");
}

/// A run SIGKILLed while writing a crash record left its temporary file
/// (`.NAME.json.PID.tmp`, before the rename): the next start puts a whole
/// one in place and takes its resource down, and removes a torn one.
#[test]
fn a_record_left_unrenamed_by_a_killed_run_is_swept() {
    let dir = workdir();
    let state = workdir();
    let file = dir.path().join("iolab-scratch-4194302-0.dat");
    std::fs::write(&file, b"x").unwrap();
    let dead = u32::MAX - 1;
    let rec = serde_json::json!({"pid": dead, "start_time": 1, "resource": {"path": file}});
    let whole = state.path().join(format!(".9-0.json.{dead}.tmp"));
    let torn = state.path().join(format!(".9-1.json.{dead}.tmp"));
    std::fs::write(&whole, rec.to_string()).unwrap();
    std::fs::write(&torn, &rec.to_string()[..20]).unwrap();
    let said = common::next_start(state.path());
    assert!(!file.exists(), "the scratch file stayed: {said}");
    let left: Vec<_> = std::fs::read_dir(state.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "{left:?}: {said}");
}

/// The sweeper of the claims above was itself a server of the dead run (an
/// `iolab serve` of a SIGKILLed `iolab remote`), still alive when the next
/// start passed its claims and stopped by that start: the start takes the
/// claims in a second pass instead of leaving them to a start that may
/// never come (the scratch file and the netns stayed in the sigkill sweep).
#[test]
fn claims_of_a_sweeper_the_next_start_stopped_are_taken_in_the_same_start() {
    let (dir, state) = (workdir(), workdir());
    let tag = format!("{}-78", u32::MAX - 1);
    let mut sweeper = spawned_server_of_a_dead_run(state.path(), &tag, "iolab");
    let file = dir.path().join("iolab-scratch-4194300-0.dat");
    std::fs::write(&file, b"x").unwrap();
    let rec = serde_json::json!({"pid": u32::MAX - 1, "start_time": 1, "resource": {"path": file}});
    let claimed = state.path().join(format!("9-1.sweeping-{}", sweeper.id()));
    std::fs::write(&claimed, rec.to_string()).unwrap();
    let said = common::next_start(state.path());
    let _ = sweeper.kill();
    let _ = sweeper.wait();
    assert!(!file.exists(), "the scratch file stayed: {said}");
    assert!(common::files_in(state.path()).is_empty(), "{said}");
}

/// A server iolab started (tagged in its environment) does not sweep: its
/// parent did, and its own sweep could be cut short when it is stopped.
#[test]
fn a_server_iolab_started_leaves_the_sweep_to_others() {
    let (dir, state) = (workdir(), workdir());
    let file = dir.path().join("iolab-scratch-4194299-0.dat");
    std::fs::write(&file, b"x").unwrap();
    plant_dead_record(state.path(), serde_json::json!({"path": file}));
    let out = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .arg("sysinfo")
        .env("IOLAB_STATE_DIR", state.path())
        .env("IOLAB_SPAWN_TAG", format!("{}-79", std::process::id()))
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(file.exists(), "a spawned server swept");
    let said = common::next_start(state.path());
    assert!(!file.exists(), "the next start left it: {said}");
}
