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

/// A directory on the real disk (not tmpfs), so O_DIRECT works.
pub fn workdir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
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
    use iolab::servers::{private, ServerKind};
    let progs: &[&str] = match kind {
        ServerKind::Postgres => &["initdb", "postgres"],
        ServerKind::Mariadb => &["mariadb-install-db", "mariadbd"],
        ServerKind::Redis => &["redis-server"],
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
