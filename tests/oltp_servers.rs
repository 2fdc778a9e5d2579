//! `iolab oltp` on private servers with the real binary: a short run on a
//! private PostgreSQL and on a private MariaDB (row counts after the load,
//! consistency conditions 1-4, the `server` and `timeline` sections with
//! plausible values, `ServerInfo` in the results with the settings given on
//! the command line read back from the server, and afterwards no server
//! process and no directory left), and SIGINT at a random moment of a
//! private-server run (while the server starts, while it loads, while it
//! runs). Skips, saying why, where a server is not installed.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{files_in, results, server_installed as installed, text, Rng};
use iolab::servers::ServerKind;
use serde_json::Value;

/// A directory every server user can enter (a server refuses a target its
/// user cannot reach), on the real disk.
fn server_dir() -> tempfile::TempDir {
    tempfile::tempdir_in("/var/tmp").unwrap()
}

/// Processes whose command line names `dir` (the server's data directory).
fn processes_in(dir: &str) -> String {
    let o = Command::new("pgrep")
        .args(["-a", "-f", dir])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Run `iolab oltp` with crash records in `state`.
fn oltp(args: &[&str], state: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
        .arg("oltp")
        .args(args)
        .env("IOLAB_STATE_DIR", state)
        .output()
        .unwrap()
}

/// What every private-server run must show: the load's rows, consistency,
/// the server's provenance and its sections, nothing left behind.
fn check_private_run(r: &Value, kind: &str, target: &Path, state: &Path, time_s: f64) {
    assert_eq!(r["complete"], true);
    let rows = &r["extra"]["oltp_load"]["rows"];
    for (table, n) in [
        ("item", 100_000),
        ("warehouse", 1),
        ("stock", 100_000),
        ("district", 10),
        ("customer", 30_000),
    ] {
        assert_eq!(rows[table], n, "{table}: {rows}");
    }
    let load = &r["extra"]["oltp_load"];
    assert!(
        load["device"]["write_bytes"].as_u64().unwrap() > 0,
        "{load}"
    );
    assert!(load["write_amplification"].as_f64().unwrap() > 0.0);
    assert!(load["timeline"]["t_s"].as_array().unwrap().len() >= 2);
    let info = &r["extra"]["server"];
    assert_eq!(info["kind"], kind);
    assert_eq!(info["private"], true);
    assert!(info["version"].as_str().unwrap().len() > 3, "{info}");
    let url = info["url"].as_str().unwrap();
    assert!(url.contains("127.0.0.1") && url.contains("***"), "{url}");
    let data = info["data_dir"].as_str().unwrap().to_string();
    assert!(
        data.starts_with(target.canonicalize().unwrap().to_str().unwrap()),
        "{data}"
    );
    assert_eq!(r["provenance"]["target"]["path"], data.as_str());
    let p = &r["points"][0];
    let checks = p["extra"]["oltp"]["consistency"].as_array().unwrap();
    assert_eq!(checks.len(), 4);
    assert!(checks.iter().all(|c| c["passed"] == true), "{checks:?}");
    let s = &p["extra"]["server"];
    let cpu = s["process"]["usr_pct"].as_f64().unwrap() + s["process"]["sys_pct"].as_f64().unwrap();
    assert!(cpu > 0.0, "server CPU: {s}");
    assert!(s["process"]["processes"].as_u64().unwrap() >= 1);
    assert!(s["db_size_bytes"].as_u64().unwrap() > 50 << 20, "{s}");
    assert_eq!(s["ops"], p["total"]["ops"]);
    assert!(
        s["device_write_bytes_per_op"].as_f64().unwrap() > 0.0,
        "{s}"
    );
    assert!(s["write_amplification"].as_f64().unwrap() > 0.0, "{s}");
    assert!(s["db_written_bytes"].as_u64().unwrap() > 0, "{s}");
    let t = &p["extra"]["timeline"];
    let n = t["t_s"].as_array().unwrap().len();
    // A phase under 10 s is sampled every 100 ms (a loaded machine may
    // merge some intervals: at least one a second).
    assert_eq!(t["interval_s"].as_f64(), Some(0.1), "{t}");
    assert!(
        (time_s as usize..=time_s as usize * 10 + 1).contains(&n),
        "{n} intervals in a {time_s} s point: {t}"
    );
    let span: f64 = t["len_s"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .sum();
    assert!((span - time_s).abs() < 0.6, "{span} s sampled: {t}");
    for col in [
        "cpu_usr_pct",
        "disk_write_iops",
        "server_usr_pct",
        "client_ops_s",
    ] {
        assert_eq!(t[col].as_array().unwrap().len(), n, "{col}");
    }
    let server_cpu: f64 = ["server_usr_pct", "server_sys_pct"]
        .iter()
        .flat_map(|c| t[*c].as_array().unwrap())
        .map(|v| v.as_f64().unwrap())
        .sum();
    assert!(server_cpu > 0.0, "{t}");
    assert!(t["client_ops_s"]
        .as_array()
        .unwrap()
        .iter()
        .any(|v| v.as_f64().unwrap() > 0.0));
    // Gone: the server's processes, its directory, the crash records.
    assert_eq!(processes_in(&data), "", "server processes left");
    assert!(files_in(target).is_empty(), "left: {:?}", files_in(target));
    assert!(files_in(state).is_empty(), "crash records left");
}

/// `iolab oltp --engine ENGINE -t TARGET --users 2 ARGS -o OUT` in a
/// fresh directory; the results, checked as every private run must be.
fn private_run(engine: &str, time_s: f64, args: &[&str]) -> Value {
    let (dir, state) = (server_dir(), server_dir());
    let out = dir.path().join("r.json");
    let target = dir.path().join("t");
    std::fs::create_dir(&target).unwrap();
    let time = format!("{time_s}s");
    let mut all = vec!["--engine", engine, "-t", target.to_str().unwrap()];
    all.extend(["--users", "2", "--time", &time, "-o", out.to_str().unwrap()]);
    all.extend(args);
    let o = oltp(&all, state.path());
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("server: private"), "{}", text(&o));
    let r = results(&out);
    check_private_run(&r, engine, &target, state.path(), time_s);
    r
}

#[test]
fn a_private_postgres_runs_measures_and_goes_away() {
    if !installed(ServerKind::Postgres) {
        return;
    }
    let r = private_run(
        "postgres",
        3.0,
        &["-w", "1", "--ramp", "1s", "--shared-buffers", "64m"],
    );
    // --shared-buffers reached the server: it says so itself.
    assert_eq!(
        r["extra"]["server"]["config"]["shared_buffers"],
        iolab::kv::report::human(64 << 20)
    );
    assert_eq!(r["extra"]["server"]["config"]["fsync"], "on");
}

#[test]
fn a_private_mariadb_runs_measures_and_goes_away() {
    if !installed(ServerKind::Mariadb) {
        return;
    }
    let r = private_run("mariadb", 2.0, &["--ramp", "0s", "--buffer-pool", "64m"]);
    let config = &r["extra"]["server"]["config"];
    assert_eq!(config["innodb_buffer_pool_size"], (64u64 << 20).to_string());
    assert_eq!(config["innodb_flush_method"], "O_DIRECT");
}

/// The server's directory under `target`, once it is there.
fn server_dir_in(target: &Path) -> Option<PathBuf> {
    files_in(target).into_iter().find(|p| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("iolab-postgres-"))
    })
}

fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(
            start.elapsed() < Duration::from_secs(180),
            "{what} never came"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[derive(Debug, Clone, Copy)]
enum Moment {
    /// After the server's directory appears (initdb, start, readiness).
    Start,
    /// While the tables are loaded (the server answers, no results yet).
    Load,
    /// During a point (the results file exists: the load is done).
    Run,
}

#[test]
fn sigint_at_a_random_moment_leaves_no_server_and_no_directory() {
    if !installed(ServerKind::Postgres) {
        return;
    }
    let mut rng = Rng::from_env_or_clock();
    for moment in [Moment::Start, Moment::Load, Moment::Run] {
        let (dir, state) = (server_dir(), server_dir());
        let target = dir.path().join("t");
        std::fs::create_dir(&target).unwrap();
        let out = dir.path().join("r.json");
        let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
            .args(["oltp", "--engine", "postgres", "-t"])
            .arg(&target)
            .args(["--users", "2", "--time", "30s", "--ramp", "0s", "-q", "-o"])
            .arg(&out)
            .env("IOLAB_STATE_DIR", state.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let delay = match moment {
            Moment::Start => {
                wait_for("the server's directory", || {
                    server_dir_in(&target).is_some()
                });
                rng.below(2_000)
            }
            Moment::Load => {
                // The data directory holds postmaster.pid once it started.
                wait_for("the started server", || {
                    server_dir_in(&target).is_some_and(|d| d.join("data/postmaster.pid").exists())
                });
                1_000 + rng.below(5_000)
            }
            Moment::Run => {
                wait_for("the load's end", || out.exists());
                rng.below(3_000)
            }
        };
        let data = server_dir_in(&target).map(|d| d.join("data"));
        std::thread::sleep(Duration::from_millis(delay));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let o = child.wait_with_output().unwrap();
        let code = o.status.code();
        assert!(
            code == Some(130) || code == Some(0),
            "{moment:?} +{delay} ms: {code:?} {}",
            text(&o)
        );
        if let Some(d) = data {
            assert_eq!(
                processes_in(d.to_str().unwrap()),
                "",
                "{moment:?} +{delay} ms: server left"
            );
        }
        assert!(
            files_in(&target).is_empty(),
            "{moment:?} +{delay} ms: left {:?}",
            files_in(&target)
        );
        assert!(files_in(state.path()).is_empty(), "crash records left");
        eprintln!("{moment:?} +{delay} ms: exit {code:?}, nothing left");
    }
}
