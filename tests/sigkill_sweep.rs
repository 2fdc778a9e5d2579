//! A SIGKILL at a random moment of every verb that sets things up (media
//! of `device --make`, a private Redis, PostgreSQL and FerretDB of `kv`, SQLite on a tmpfs medium
//! of `oltp`, namespaces and servers of `remote`, `serve`, `trace`), then
//! one next start of iolab: nothing may be left. No mount or loop device
//! under the work directory, no `iolab-*` entry in it, no process naming
//! it, no network namespace of the killed run, no crash record. Each run
//! has its own state directory, so tests running beside it are not swept.
//! The moments come from a seed printed at the start
//! (IOLAB_INTERRUPT_SEED replays one); two moments per verb keep the test
//! short.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{files_in, have, Rng};

struct Verb {
    name: &'static str,
    /// The command line, given the work directory and the output directory.
    args: fn(&Path, &Path) -> Vec<String>,
    /// The window (ms) the SIGKILL falls in: set-up and measuring.
    window_ms: u64,
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

fn p(d: &Path) -> String {
    d.display().to_string()
}

fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn verbs() -> Vec<Verb> {
    let mut v = Vec::new();
    if !root() || !Path::new("/dev/loop-control").exists() {
        eprintln!("SKIP media, remote, serve and trace: they need root and loop devices");
    } else {
        v.push(Verb {
            name: "device --make",
            args: |d, o| {
                let media = if have("mkfs.xfs") {
                    "tmpfs,ext4,xfs"
                } else {
                    "tmpfs,ext4"
                };
                let mut a = s(&["device", "-t", &p(d), "--make", media, "--size", "64m"]);
                a.extend(s(&["--rw", "randread", "--runtime", "2s", "--quiet"]));
                a.extend(["--json".into(), p(&o.join("r.json"))]);
                a
            },
            window_ms: 5000,
        });
        v.push(Verb {
            name: "oltp on a tmpfs medium",
            args: |d, o| {
                let mut a = s(&["oltp", "-t", &p(d), "--make", "tmpfs", "--time", "2s"]);
                a.extend(s(&["--ramp", "0s", "--quiet", "-o", &p(&o.join("o.json"))]));
                a
            },
            window_ms: 4000,
        });
        v.push(Verb {
            name: "remote",
            args: |d, o| {
                let mut a = s(&["remote", "-t", &p(d), "-o", &p(o), "--transports", "iolab"]);
                a.extend(s(&["--mixes", "100", "--qd", "1", "--runtime", "2s"]));
                a.extend(s(&["--breakdown", "0", "--ramp", "100ms", "--size", "32m"]));
                a.push("--quiet".into());
                a
            },
            window_ms: 3000,
        });
        v.push(Verb {
            name: "serve",
            args: |d, _| {
                let port = common::free_port().to_string();
                let listen = format!("127.0.0.1:{port}");
                s(&["serve", "-t", &p(d), "--size", "32m", "--listen", &listen])
            },
            window_ms: 1500,
        });
        v.push(Verb {
            name: "trace",
            args: |d, o| {
                let mut a = s(&["trace", "--size", "32M", "--runtime", "2s", "--engine"]);
                a.extend(s(&["psync", "--dir", &p(d), "-o", &p(&o.join("t.json"))]));
                a
            },
            window_ms: 2500,
        });
    }
    if common::server_installed(iolab::servers::ServerKind::Postgres) {
        v.push(Verb {
            name: "kv --engine postgres",
            args: |d, o| {
                let mut a = s(&["kv", "--engine", "postgres", "-t", &p(d), "a"]);
                a.extend(s(&["-p", "recordcount=5000", "-p", "operationcount=50000"]));
                a.extend(s(&["-o", &p(&o.join("k.json"))]));
                a
            },
            window_ms: 6000,
        });
    }
    if common::server_installed(iolab::servers::ServerKind::Redis) {
        v.push(Verb {
            name: "kv --engine redis",
            args: |d, o| {
                let mut a = s(&["kv", "--engine", "redis", "-t", &p(d), "a"]);
                a.extend(s(&[
                    "-p",
                    "recordcount=50000",
                    "-p",
                    "operationcount=500000",
                ]));
                a.extend(s(&["-o", &p(&o.join("k.json"))]));
                a
            },
            window_ms: 2500,
        });
    }
    if common::server_installed(iolab::servers::ServerKind::Mongodb) {
        v.push(Verb {
            name: "kv --engine mongodb (a private FerretDB)",
            args: |d, o| {
                let mut a = s(&["kv", "--engine", "mongodb", "-t", &p(d), "a"]);
                a.extend(s(&["-p", "recordcount=5000", "-p", "operationcount=50000"]));
                a.extend(s(&["-o", &p(&o.join("k.json"))]));
                a
            },
            window_ms: 3000,
        });
    }
    v
}

/// A work directory on the real disk that server users can enter.
fn work_dir() -> tempfile::TempDir {
    let d = tempfile::tempdir_in("/var/tmp").unwrap();
    std::fs::set_permissions(
        d.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    d
}

/// Processes (other than this test) whose command line names `dir` or
/// whose working directory is inside it (a server retitles itself: Redis
/// shows `redis-server 127.0.0.1:PORT`, but it runs in its data directory).
fn processes_naming(dir: &Path) -> Vec<String> {
    let needle = p(dir);
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter(|e| e.file_name().to_string_lossy() != me)
        .filter_map(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            if stat.contains(") Z ") {
                return None;
            }
            let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            let cwd = std::fs::read_link(e.path().join("cwd")).unwrap_or_default();
            (cmd.contains(&needle) || p(&cwd).starts_with(&needle))
                .then(|| format!("{cmd} (in {})", cwd.display()))
        })
        .collect()
}

/// Everything a killed run of pid `pid` in `dir` may have left.
fn leftovers(pid: u32, dir: &Path, state: &Path) -> Vec<String> {
    let mut left = common::media_leftovers(dir);
    left.extend(
        processes_naming(dir)
            .into_iter()
            .map(|c| format!("process {c}")),
    );
    if let Ok(d) = std::fs::read_dir("/run/netns") {
        left.extend(
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&format!("iolab-{pid}-")))
                .map(|n| format!("netns {n}")),
        );
    }
    left.extend(
        files_in(state)
            .into_iter()
            .map(|r| format!("record {}", r.display())),
    );
    left
}

/// SIGKILL `verb` after `delay`, start iolab once, and return what is left.
fn trial(verb: &Verb, delay: Duration) -> (Vec<String>, String) {
    let (dir, out, state) = (work_dir(), common::workdir(), common::workdir());
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args((verb.args)(dir.path(), out.path()))
        .env("IOLAB_STATE_DIR", state.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start iolab");
    let pid = child.id();
    std::thread::sleep(delay);
    let _ = child.kill();
    child.wait().unwrap();
    let said = common::next_start(state.path());
    // A server killed by the sweep or a lazily detached mount may take a
    // moment to go; bounded generously.
    let start = Instant::now();
    let mut left = leftovers(pid, dir.path(), state.path());
    while !left.is_empty() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
        left = leftovers(pid, dir.path(), state.path());
    }
    (left, said)
}

/// Verbs killed three at a time (each trial has its own directories and
/// state; most of a trial is waiting for the moment to kill): 32 s one
/// verb after another.
const VERBS_AT_ONCE: usize = 3;

#[test]
fn a_sigkill_at_a_random_moment_then_one_next_start_leaves_nothing() {
    let mut rng = Rng::from_env_or_clock();
    // The moments are drawn first, in order, so a seed replays them.
    let plan: Vec<(Verb, Vec<Duration>)> = verbs()
        .into_iter()
        .map(|verb| {
            let delays = (0..2)
                .map(|_| Duration::from_millis(rng.below(verb.window_ms)))
                .collect();
            (verb, delays)
        })
        .collect();
    let failures: Vec<String> = common::each_at_once(&plan, VERBS_AT_ONCE, |(verb, delays)| {
        let mut failed = Vec::new();
        for &delay in delays {
            let (left, said) = trial(verb, delay);
            if !left.is_empty() {
                failed.push(format!(
                    "{} killed after {delay:?}: {left:?}\nthe next start said: {said}",
                    verb.name
                ));
            }
        }
        failed
    })
    .into_iter()
    .flatten()
    .collect();
    assert!(
        failures.is_empty(),
        "left behind (IOLAB_INTERRUPT_SEED={}):\n{}",
        rng.seed,
        failures.join("\n")
    );
}

/// The next start must not claim to have removed what it did not: a
/// medium's mount killed under the old sweep stayed while the sweep said
/// "removed". Every line it says "removed" of is gone.
#[test]
fn what_the_next_start_says_it_removed_is_gone() {
    if !root() || !Path::new("/dev/loop-control").exists() || !have("mkfs.ext4") {
        eprintln!("SKIP: needs root, loop devices and mkfs.ext4");
        return;
    }
    let (dir, out, state) = (work_dir(), common::workdir(), common::workdir());
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["device", "-t", &p(dir.path()), "--make", "ext4"])
        .args(["--size", "64m", "--rw", "randread", "--runtime", "60s"])
        .args(["--quiet", "--json", &p(&out.path().join("r.json"))])
        .env("IOLAB_STATE_DIR", state.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Until the file system is mounted and the job runs on it.
    let start = Instant::now();
    let mounted = |d: &Path| {
        std::fs::read_to_string("/proc/self/mountinfo")
            .unwrap()
            .contains(&p(d))
    };
    while !mounted(dir.path()) {
        assert!(child.try_wait().unwrap().is_none(), "device --make ended");
        assert!(start.elapsed() < Duration::from_secs(60), "never mounted");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1000));
    child.kill().unwrap();
    child.wait().unwrap();
    let said = common::next_start(state.path());
    let removed: Vec<PathBuf> = said
        .lines()
        .filter_map(|l| l.strip_prefix("iolab: removed "))
        .filter_map(|l| l.split(" left by").next())
        .map(|w| PathBuf::from(w.rsplit(' ').next().unwrap_or(w)))
        .collect();
    assert!(!removed.is_empty(), "{said}");
    for r in &removed {
        if r.starts_with("/dev") {
            continue; // a loop device node stays; checked as attached below
        }
        assert!(
            !r.exists(),
            "said removed but still there: {}\n{said}",
            r.display()
        );
    }
    assert!(!mounted(dir.path()), "still mounted\n{said}");
    // A loop device the start said "detaches itself" goes when its last
    // user (udev probing it) closes it: bounded generously.
    let start = Instant::now();
    let mut left = leftovers(0, dir.path(), state.path());
    while !left.is_empty()
        && said.contains("detaches itself")
        && start.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(100));
        left = leftovers(0, dir.path(), state.path());
    }
    assert!(left.is_empty(), "{left:?}\n{said}");
}
