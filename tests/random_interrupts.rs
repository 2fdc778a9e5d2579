//! Interrupts at random moments for every verb that sets things up: one
//! SIGINT, two SIGINTs 5 ms apart, and a SIGKILL followed by the next iolab
//! start. After each, nothing iolab created may be left: no scratch file or
//! database, no temporary output file, no crash record, no tracefs instance,
//! no memory cgroup. The moments are drawn from a seed printed at the start
//! (set IOLAB_INTERRUPT_SEED to replay one).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{files_in, workdir, Rng};

#[derive(Clone, Copy, Debug)]
enum Signal {
    Int,
    DoubleInt,
    Kill,
}

/// One verb's command line, writing into `dir`.
struct Verb {
    name: &'static str,
    args: fn(&Path) -> Vec<String>,
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

fn at(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

fn verbs() -> Vec<Verb> {
    let mut v = vec![
        Verb {
            name: "device",
            args: |d| {
                let mut a = s(&["device", "--rw", "randwrite", "--bs", "4k", "--size", "16m"]);
                a.extend(s(&["--runtime", "20s", "--quiet", "--target"]));
                a.extend([d.display().to_string(), "--json".into(), at(d, "r.json")]);
                a
            },
        },
        Verb {
            name: "device sweep with fio export",
            args: |d| {
                let mut a = s(&["device", "--rw", "randread", "--qd", "1,2,4,8,16"]);
                a.extend(s(&[
                    "--size",
                    "16m",
                    "--runtime",
                    "300ms",
                    "--quiet",
                    "--target",
                ]));
                a.extend([d.display().to_string(), "--json".into(), at(d, "r.json")]);
                a.extend(["--export".into(), "fio-json".into(), at(d, "f.json")]);
                a
            },
        },
        Verb {
            name: "kv",
            args: |d| {
                let mut a = s(&["kv", "a", "--engine", "rocksdb", "-p", "recordcount=200000"]);
                a.extend(s(&["-p", "operationcount=2000000", "--dir"]));
                a.extend([d.display().to_string(), "-o".into(), at(d, "k.json")]);
                a
            },
        },
        Verb {
            name: "kv wiredtiger",
            args: |d| {
                let mut a = s(&["kv", "fillrandom,readrandom", "--engine", "wiredtiger"]);
                a.extend(s(&["--num", "2000000", "--dir"]));
                a.extend([d.display().to_string(), "-o".into(), at(d, "k.json")]);
                a
            },
        },
        Verb {
            name: "run",
            args: |d| {
                let mut a = s(&["run", "--budget", "20s", "--size", "32m", "--quiet"]);
                a.extend([d.display().to_string(), "-o".into(), at(d, "out")]);
                a
            },
        },
    ];
    if iolab::testbed::cgroup::available().is_ok() {
        v.push(Verb {
            name: "kv in a memory cgroup",
            args: |d| {
                let mut a = s(&["kv", "fillrandom,readrandom", "--engine", "lmdb"]);
                a.extend(s(&["--num", "2000000", "--memory-limit", "256m", "--dir"]));
                a.extend([d.display().to_string(), "-o".into(), at(d, "k.json")]);
                a
            },
        });
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        v.push(Verb {
            name: "trace",
            args: |d| {
                let mut a = s(&["trace", "--size", "32M", "--runtime", "2s", "--engine"]);
                a.extend(s(&["psync,io_uring", "--qd", "1,4", "--dir"]));
                a.extend([d.display().to_string(), "-o".into(), at(d, "t.json")]);
                a
            },
        });
    }
    v
}

/// What iolab may leave in the work directory: its outputs.
fn leftovers(dir: &Path) -> Vec<PathBuf> {
    let mut left = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for p in files_in(&d) {
            if p.is_dir() {
                stack.push(p.clone());
            }
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            if name.starts_with("iolab-scratch-")
                || name.starts_with("iolab-kv-")
                || name.ends_with(".tmp")
            {
                left.push(p);
            }
        }
    }
    left
}

/// Memory cgroups and tracefs instances named after `pid`.
fn system_leftovers(pid: u32) -> Vec<PathBuf> {
    let mut left = Vec::new();
    let instance = Path::new("/sys/kernel/tracing/instances").join(format!("iolab-{pid}"));
    if instance.exists() {
        left.push(instance);
    }
    let cgroup = format!("iolab-kv-{pid}");
    for root in ["/sys/fs/cgroup/memory", "/sys/fs/cgroup"] {
        let mut stack = vec![(PathBuf::from(root), 0)];
        while let Some((d, depth)) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                if !p.is_dir() {
                    continue;
                }
                if e.file_name().to_string_lossy() == cgroup {
                    left.push(p.clone());
                }
                if depth < 4 {
                    stack.push((p, depth + 1));
                }
            }
        }
    }
    left
}

fn records(state: &Path) -> Vec<PathBuf> {
    files_in(state)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect()
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: signalling the child this test spawned.
    unsafe { libc::kill(pid as i32, sig) };
}

/// Each thread of a process that would not end: name, state and kernel
/// wait channel, then its stacks from gdb when gdb is installed, so a rare
/// hang seen once (a single SIGINT to `kv wiredtiger` under heavy load,
/// 2026-11-27) says where it waited.
fn what_its_threads_wait_for(pid: u32) -> String {
    let mut out = String::new();
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten();
    for t in tasks.flatten() {
        let read = |f: &str| std::fs::read_to_string(t.path().join(f)).unwrap_or_default();
        let stat = read("stat");
        let state = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .next();
        out += &format!(
            "{} {} {}\n",
            read("comm").trim(),
            state.unwrap_or("?"),
            read("wchan")
        );
    }
    let gdb = Command::new("timeout")
        .args(["30", "gdb", "-p", &pid.to_string(), "-batch"])
        .args(["-ex", "thread apply all bt"])
        .output();
    if let Ok(o) = gdb {
        out += &String::from_utf8_lossy(&o.stdout);
        out += &String::from_utf8_lossy(&o.stderr);
    }
    out
}

/// Start `verb`, interrupt it after `delay` with `how`, and return what
/// was left behind (after the next start, for a SIGKILL).
fn trial(verb: &Verb, how: Signal, delay: Duration) -> Vec<PathBuf> {
    let dir = workdir();
    let state = workdir();
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args((verb.args)(dir.path()))
        .env("IOLAB_STATE_DIR", state.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start iolab");
    let pid = child.id();
    std::thread::sleep(delay);
    match how {
        Signal::Int => signal(pid, libc::SIGINT),
        Signal::DoubleInt => {
            signal(pid, libc::SIGINT);
            std::thread::sleep(Duration::from_millis(5));
            signal(pid, libc::SIGINT);
        }
        Signal::Kill => signal(pid, libc::SIGKILL),
    }
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let threads = what_its_threads_wait_for(pid);
            child.kill().unwrap();
            child.wait().unwrap();
            panic!(
                "{}: still running 60 s after {how:?} (sent {delay:?} after the start); its threads:\n{threads}",
                verb.name
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if let Signal::Kill = how {
        common::next_start(state.path());
    }
    let mut left = leftovers(dir.path());
    left.extend(records(state.path()));
    left.extend(system_leftovers(pid));
    left
}

#[test]
fn interrupts_at_random_moments_leave_nothing() {
    let mut rng = Rng::from_env_or_clock();
    let mut failures = Vec::new();
    for verb in verbs() {
        for how in [Signal::Int, Signal::DoubleInt, Signal::Kill] {
            let delay = Duration::from_millis(rng.below(1500));
            let left = trial(&verb, how, delay);
            if !left.is_empty() {
                failures.push(format!("{} {how:?} after {delay:?}: {left:?}", verb.name));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "left behind (IOLAB_INTERRUPT_SEED={}):\n{}",
        rng.seed,
        failures.join("\n")
    );
}

/// Whether `child` has exited (left unreaped, so a signal still reaches
/// only it).
fn exited(child: &std::process::Child) -> bool {
    // SAFETY: waitid with WNOWAIT only looks at our own child.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let r = libc::waitid(
            libc::P_PID,
            child.id(),
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        );
        r == 0 && info.si_pid() != 0
    }
}

/// Run `args` (results in `json`) until the results file says the run is
/// complete, that is during the final teardown, then send one SIGINT.
/// `None` when the run ended before the signal could be sent (missed).
fn sigint_in_final_teardown(args: &[String], json: &Path, state: &Path) -> Option<Output> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(args)
        .env("IOLAB_STATE_DIR", state)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start iolab");
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(json).unwrap_or_default();
        if text.contains("\"complete\": true") {
            break;
        }
        if exited(&child) || start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("the run never completed: {}", common::text(&out));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    if exited(&child) {
        child.wait().unwrap();
        return None;
    }
    signal(child.id(), libc::SIGINT);
    Some(child.wait_with_output().unwrap())
}

/// Up to three tries to catch the teardown of `args`; the run must then
/// exit 130 and its results say interrupted.
fn check_sigint_in_final_teardown(name: &str, args: ArgsOf) {
    for _ in 0..3 {
        // On the real disk, enterable by a server's own user.
        let (dir, state) = (tempfile::tempdir_in("/var/tmp").unwrap(), workdir());
        std::fs::set_permissions(
            dir.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let json = dir.path().join("out.json");
        let work = dir.path().join("w");
        std::fs::create_dir(&work).unwrap();
        std::fs::set_permissions(&work, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let Some(out) = sigint_in_final_teardown(&args(&work, &json), &json, state.path()) else {
            continue;
        };
        assert_eq!(
            out.status.code(),
            Some(130),
            "{name}: {}",
            common::text(&out)
        );
        let r = common::results(&json);
        assert_eq!(r["interrupted"], true, "{name}: the results say so");
        assert!(files_in(state.path()).is_empty(), "{name}: records left");
        return;
    }
    eprintln!("SKIP {name}: the teardown was over before the signal, three times");
}

use std::process::Output;

/// A command line, given the work directory and the results file.
type ArgsOf = fn(&Path, &Path) -> Vec<String>;

#[test]
fn a_sigint_in_the_final_teardown_of_device_make_exits_130() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !Path::new("/dev/loop-control").exists() {
        eprintln!("SKIP: device --make needs root and loop devices");
        return;
    }
    check_sigint_in_final_teardown("device --make", |work, json| {
        let mut a = s(&["device", "--make", "tmpfs,ext4", "--size", "64m", "--rw"]);
        a.extend(s(&["randread", "--runtime", "300ms", "--quiet", "-t"]));
        a.extend([work.display().to_string(), "--json".into()]);
        a.push(json.display().to_string());
        a
    });
}

#[test]
fn a_sigint_in_the_final_teardown_of_kv_redis_exits_130() {
    if !common::server_installed(iolab::servers::ServerKind::Redis) {
        return;
    }
    check_sigint_in_final_teardown("kv --engine redis", |work, json| {
        let mut a = s(&["kv", "--engine", "redis", "a", "-p", "recordcount=20000"]);
        a.extend(s(&["-p", "operationcount=20000", "--quiet", "-t"]));
        a.extend([work.display().to_string(), "-o".into()]);
        a.push(json.display().to_string());
        a
    });
}

#[test]
fn a_sigint_in_the_final_teardown_of_kv_mongodb_exits_130() {
    if !common::server_installed(iolab::servers::ServerKind::Mongodb) {
        return;
    }
    check_sigint_in_final_teardown("kv --engine mongodb", |work, json| {
        let mut a = s(&["kv", "--engine", "mongodb", "a", "-p", "recordcount=300"]);
        a.extend(s(&["-p", "operationcount=300", "--quiet", "-t"]));
        a.extend([work.display().to_string(), "-o".into()]);
        a.push(json.display().to_string());
        a
    });
}

/// Two SIGINTs once a first point is saved: exit 130, the results say
/// interrupted, no temporary file (a sweep of device points; trace as
/// root, whose double SIGINT exited 1 on "... .tmp not written").
#[test]
fn a_double_sigint_exits_130_and_the_results_say_interrupted() {
    let mut rng = Rng::from_env_or_clock();
    let mut cases: Vec<(&str, ArgsOf)> = vec![("device sweep", |d, json| {
        let mut a = s(&["device", "--rw", "randread", "--qd", "1,2,4,8,16,32"]);
        a.extend(s(&["--size", "16m", "--runtime", "400ms", "--quiet"]));
        a.extend(["--target".into(), d.display().to_string(), "--json".into()]);
        a.push(json.display().to_string());
        a
    })];
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        cases.push(("trace", |d, json| {
            let mut a = s(&["trace", "--size", "32M", "--runtime", "400ms", "--engine"]);
            a.extend(s(&["psync,io_uring", "--qd", "1,2,4", "--dir"]));
            a.extend([d.display().to_string(), "-o".into()]);
            a.push(json.display().to_string());
            a
        }));
    }
    for (name, args) in cases {
        for _ in 0..3 {
            let (dir, state) = (workdir(), workdir());
            let json = dir.path().join("r.json");
            let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
                .args(args(dir.path(), &json))
                .env("IOLAB_STATE_DIR", state.path())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start iolab");
            let start = Instant::now();
            while !std::fs::read_to_string(&json).is_ok_and(|t| t.contains("\"points\": [\n")) {
                assert!(
                    start.elapsed() < Duration::from_secs(120),
                    "{name}: no point"
                );
                std::thread::sleep(Duration::from_millis(2));
            }
            std::thread::sleep(Duration::from_millis(rng.below(300)));
            let out = common::sigint_and_wait(child, true);
            let why = format!("{name} (seed {}): {}", rng.seed, common::text(&out));
            assert_eq!(out.status.code(), Some(130), "{why}");
            assert_eq!(common::results(&json)["interrupted"], true, "{why}");
            assert!(
                leftovers(dir.path()).is_empty(),
                "{why}: {:?}",
                leftovers(dir.path())
            );
            assert!(records(state.path()).is_empty(), "{why}: records left");
        }
    }
}
