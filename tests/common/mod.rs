//! Helpers shared by the integration tests that run the iolab binary.
#![allow(dead_code)]

pub mod loopdev;
pub mod vm;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Run the built binary with `args`.
pub fn iolab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(args)
        .output()
        .expect("run iolab")
}

/// stdout and stderr together, for assertions and failure messages.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `f` of every item, `workers` items at a time (each worker takes the
/// next item not yet taken); the results in no particular order.
pub fn each_at_once<T: Sync, R: Send>(
    items: &[T],
    workers: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    while let Some(item) =
                        items.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                    {
                        mine.push(f(item));
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    })
}

/// A directory on the real disk (not tmpfs), so O_DIRECT works.
pub fn workdir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// Every `.rs` file under `dir`, at any depth (the house tests read the
/// sources).
pub fn rust_sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in files_in(dir) {
        if p.is_dir() {
            out.extend(rust_sources(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out
}

pub fn files_in(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect()
}

pub fn results(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Run `iolab device ARGS --json FILE --quiet`, assert success, return the first point.
pub fn device_point(args: &[&str], json: &Path) -> serde_json::Value {
    let mut all = vec!["device"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--json", json.to_str().unwrap(), "--quiet"]);
    let o = iolab(&all);
    assert!(o.status.success(), "{args:?}: {}", text(&o));
    results(json)["points"][0].clone()
}

/// Wait until `child` has written a first point to the results file `json`,
/// then send it SIGINT and return its output.
pub fn interrupt_after_first_point(child: std::process::Child, json: &Path) -> Output {
    let start = std::time::Instant::now();
    loop {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let done = std::fs::read_to_string(json)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
        if done.is_some_and(|r| r["points"].as_array().is_some_and(|p| !p.is_empty())) {
            break;
        }
        assert!(
            start.elapsed().as_secs() < 60,
            "the first point never finished"
        );
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    child.wait_with_output().unwrap()
}

/// Start iolab once (`sysinfo`) with crash records in `state`, as the next
/// start after a killed run: it sweeps what dead runs left. Returns what it
/// said on stderr.
pub fn next_start(state: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .arg("sysinfo")
        .env("IOLAB_STATE_DIR", state)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Whether `tool` is on PATH.
pub fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A loopback TCP port free right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// What a media run may have left under `dir`: mounts and loop devices
/// (their backing files) under it, and whatever is left in it.
pub fn media_leftovers(dir: &Path) -> Vec<String> {
    let d = dir.to_str().unwrap();
    let mut out: Vec<String> = std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .lines()
        .filter(|l| l.contains(d))
        .map(String::from)
        .collect();
    for e in std::fs::read_dir("/sys/block").unwrap().flatten() {
        let back = std::fs::read_to_string(e.path().join("loop/backing_file")).unwrap_or_default();
        if back.starts_with(d) {
            out.push(back);
        }
    }
    out.extend(
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.path().display().to_string()),
    );
    out
}

/// Every row of a media analysis `m` in `unit`, paired over `rounds`
/// rounds; the baseline's rows 1.0, every ratio inside its range; at
/// least one row.
pub fn check_media_ratios(m: &serde_json::Value, baseline: &str, rounds: u64, unit: &str) {
    assert_eq!(m["baseline"], baseline);
    assert!(!m["rows"].as_array().unwrap().is_empty());
    for row in m["rows"].as_array().unwrap() {
        assert_eq!(row["paired_rounds"], rounds, "{row}");
        assert_eq!(row["unit"], unit, "{row}");
        let v = row["vs_baseline"].as_f64().unwrap();
        if row["target"] == baseline {
            assert_eq!(v, 1.0, "{row}");
        }
        assert!(row["vs_min"].as_f64().unwrap() <= v && v <= row["vs_max"].as_f64().unwrap());
    }
}

/// What an interrupted media run must not leave: any file in its work
/// directory `work` but results (`.json`), anything in the state
/// directory (crash records).
pub fn stray_files(work: &Path, state: &Path) -> Vec<PathBuf> {
    files_in(work)
        .into_iter()
        .filter(|p| p.is_file() && p.extension().is_none_or(|e| e != "json"))
        .chain(files_in(state))
        .collect()
}

/// Make a FIFO at `path` (mode 0600).
pub fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// SIGINT to `child` (a second one 5 ms later when `twice`), then wait
/// for its output.
pub fn sigint_and_wait(child: std::process::Child, twice: bool) -> Output {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    if twice {
        std::thread::sleep(std::time::Duration::from_millis(5));
        // SAFETY: as above (the child may have exited: ESRCH is fine).
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    }
    child.wait_with_output().unwrap()
}

/// Check the exit status of a run interrupted after `delay` (one SIGINT:
/// 130, or 0 when it had ended; two: whatever the interrupted step
/// returned) and return the words that explain a later failure.
pub fn interrupted_as_expected(
    out: &Output,
    seed: u64,
    delay: std::time::Duration,
    twice: bool,
) -> String {
    let why = format!(
        "seed {seed}, {delay:?}, twice {twice}: {:?} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    // A signal before main installed its handler ends the process by
    // default (nothing was set up yet); after it, never by a signal.
    use std::os::unix::process::ExitStatusExt;
    let before_handler = out.status.signal() == Some(libc::SIGINT);
    assert!(
        before_handler || twice || matches!(out.status.code(), Some(130) | Some(0)),
        "{why}"
    );
    why
}

/// A work directory with two empty directories in it, `a` and `b` (two
/// targets of a media run).
pub fn two_dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let d = workdir();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    (d, a, b)
}

/// A media run's points: their (round, medium) in order, and their names.
pub fn media_order_and_names(r: &serde_json::Value) -> (Vec<(String, String)>, Vec<String>) {
    let pts = r["points"].as_array().unwrap();
    let order = pts
        .iter()
        .map(|p| {
            (
                p["params"]["round"].as_str().unwrap().to_string(),
                p["params"]["medium"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let names = pts
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect();
    (order, names)
}

/// A small xorshift for reproducible random moments: seeded from
/// IOLAB_INTERRUPT_SEED or the clock, the seed printed so a failure
/// replays.
pub struct Rng {
    state: u64,
    pub seed: u64,
}

impl Rng {
    pub fn from_env_or_clock() -> Rng {
        let seed = std::env::var("IOLAB_INTERRUPT_SEED")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
                    | 1
            });
        eprintln!("IOLAB_INTERRUPT_SEED={seed}");
        Rng { state: seed, seed }
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state % n.max(1)
    }
}

/// Whether a private server of `kind` can start here (its programs are
/// installed); prints why a test skips otherwise.
pub fn server_installed(kind: iolab::servers::ServerKind) -> bool {
    use iolab::servers::{cassandra, private, ServerKind};
    if kind == ServerKind::Cassandra {
        if let Some(why) = cassandra::missing() {
            eprintln!("SKIP cassandra: {why}");
            return false;
        }
        return true;
    }
    let progs: &[&str] = match kind {
        ServerKind::Postgres => &["initdb", "postgres"],
        ServerKind::Mariadb => &["mariadb-install-db", "mariadbd"],
        ServerKind::Redis => &["redis-server"],
        ServerKind::Cassandra => &[],
        ServerKind::Mongodb => {
            let ok = private::find_program(kind, "ferretdb").is_some();
            if !ok {
                eprintln!(
                    "SKIP mongodb: no FerretDB to test the protocol against \
                     (scripts/build-ferretdb.sh builds it from the Go module proxy, \
                     and says why when it cannot)"
                );
            }
            return ok;
        }
    };
    let ok = progs
        .iter()
        .all(|p| private::find_program(kind, p).is_some());
    if !ok {
        eprintln!(
            "SKIP {}: not installed (scripts/install-deps.sh installs it)",
            kind.name()
        );
    }
    ok
}

/// The five stamped stages of a remote breakdown, in a request's order
/// (`extra.remote.breakdown.<label>`).
pub const STAMPED_STAGES: [&str; 5] = [
    "initiator_ns",
    "fabric_out_ns",
    "target_ns",
    "device_ns",
    "fabric_back_ns",
];

/// The sum of a breakdown's stamped stages, in nanoseconds (absent: 0).
pub fn stamped_sum(b: &serde_json::Value) -> f64 {
    STAMPED_STAGES
        .iter()
        .map(|k| b[*k].as_f64().unwrap_or(0.0))
        .sum()
}
