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
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("{}: still running 60 s after {how:?}", verb.name);
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
