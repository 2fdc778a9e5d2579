//! `iolab kv --engine cassandra`: one private Cassandra started by the
//! test (a JVM takes 10-30 s to start, so the YCSB runs reach it through
//! `--server-url`) runs YCSB a and e with every record checked, records
//! round-trip field by field and a corrupted field fails its check; bad
//! URLs and flags are exit 2 naming the field; a Ctrl-C during a run stops
//! iolab's own private server and removes its data and commit log; after a
//! SIGKILL of iolab the JVM keeps running until the next start sweeps it.
//! Skips, saying why, where Java or Cassandra's jars are missing
//! (scripts/install-deps.sh fetches them).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use iolab::kv::engine::open_server;
use iolab::kv::fields::{build_record, verify_record, FieldLayout, TextPool};
use iolab::servers::cassandra::Cql;
use iolab::servers::{Server, ServerKind, ServerSettings};

/// One JVM at a time on a 2-core machine; the tests share the process's
/// state directory variable too.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// How long a private server may take to start on a loaded machine, and more.
const START_WITHIN: Duration = Duration::from_secs(240);

fn installed() -> bool {
    common::server_installed(ServerKind::Cassandra)
}

/// A directory on the real disk for the server's files.
fn server_dir() -> tempfile::TempDir {
    tempfile::tempdir_in("/var/tmp").unwrap()
}

fn small_heap() -> ServerSettings {
    ServerSettings {
        heap: Some(512 << 20),
        ..ServerSettings::default()
    }
}

fn kv(state: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
    c.args(["kv", "--engine", "cassandra"])
        .args(args)
        .env("IOLAB_STATE_DIR", state);
    c
}

fn url(s: &Server, keyspace: &str) -> String {
    let ep = s.endpoint();
    format!("cassandra://{}:{}/{keyspace}", ep.host, ep.port)
}

/// Keyspaces named iolab_* on the server.
fn iolab_keyspaces(s: &Server) -> Vec<String> {
    let c = Cql::connect(s.endpoint(), None).unwrap();
    c.texts("SELECT keyspace_name FROM system_schema.keyspaces")
        .unwrap()
        .into_iter()
        .filter_map(|r| r.into_iter().next().flatten())
        .filter(|k| k.starts_with("iolab_"))
        .collect()
}

#[test]
fn one_private_server_runs_checked_ycsb_by_url_and_refuses_bad_input() {
    let _one = one_at_a_time();
    let state = common::workdir();
    std::env::set_var("IOLAB_STATE_DIR", state.path());
    bad_input_is_exit_2_naming_the_field(state.path());
    if !installed() {
        return;
    }
    let dir = server_dir();
    let server = Server::start_or_connect(ServerKind::Cassandra, None, dir.path(), &small_heap())
        .unwrap_or_else(|e| panic!("{e:#}"));
    let info = server.info();
    assert!(info.version.starts_with("Cassandra 5."), "{info:?}");
    assert!(info.url.starts_with("cassandra://127.0.0.1:"), "{info:?}");
    assert!(info.config.contains_key("concurrent_reads"), "{info:?}");
    let data = server.data_dir().unwrap();
    assert!(data.starts_with(dir.path().canonicalize().unwrap()));
    assert!(
        info.config["commitlog_directory"].starts_with(&data.display().to_string()),
        "{info:?}"
    );

    records_round_trip_and_a_corrupt_field_fails(&server);
    ycsb_a_and_e_by_url_check_every_record(&server, state.path());

    // A keyspace iolab did not create is never used (nor dropped).
    let o = kv(
        state.path(),
        &["a", "--server-url", &url(&server, "system")],
    )
    .args(["-p", "recordcount=10", "-p", "operationcount=10"])
    .output()
    .unwrap();
    let msg = common::text(&o);
    assert_eq!(o.status.code(), Some(2), "{msg}");
    assert!(
        msg.contains("--server-url") && msg.contains("system"),
        "{msg}"
    );
    assert!(iolab_keyspaces(&server).is_empty());
    drop(server);
    assert!(common::files_in(dir.path()).is_empty());
    assert!(common::files_in(state.path()).is_empty(), "records left");
}

fn bad_input_is_exit_2_naming_the_field(state: &Path) {
    let dir = server_dir();
    let d = dir.path().to_str().unwrap();
    let refused = format!("cassandra://127.0.0.1:{}", common::free_port());
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--server-url", "cassandra://127.0.0.1/no-dashes"],
            "--server-url",
        ),
        (
            vec!["--server-url", "cassandra://u@127.0.0.1/ks"],
            "--server-url",
        ),
        (
            vec!["--server-url", "cassandra://127.0.0.1:70000/ks"],
            "--server-url",
        ),
        (vec!["--server-url", &refused], "--server-url"),
        (
            vec!["--server-url", "cassandra://h/ks", "--heap", "1g"],
            "--heap",
        ),
        (vec!["-t", d, "--heap", "100m"], "--heap"),
        (
            vec!["-t", d, "--server-set", "commitlog_directory=/x"],
            "--server-set",
        ),
        (
            vec!["-t", d, "--commitlog-dir", "/nonexistent/x"],
            "--commitlog-dir",
        ),
        (
            vec!["-t", d, "-p", "cassandra.readconsistencylevel=MOST"],
            "cassandra.readconsistencylevel",
        ),
    ];
    for (args, field) in cases {
        let o = kv(state, &["a"]).args(&args).output().unwrap();
        let msg = common::text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {msg}");
        assert!(msg.contains(field), "{args:?} names {field}: {msg}");
        assert!(!msg.contains("panicked"), "{msg}");
    }
    assert!(common::files_in(dir.path()).is_empty());
}

fn records_round_trip_and_a_corrupt_field_fails(server: &Server) {
    let eng = open_server(server, 3, Default::default()).unwrap();
    assert_eq!(eng.field_count(), Some(3));
    let layout = FieldLayout { count: 3, len: 40 };
    let pool = TextPool::new(layout.len, 7);
    let mut rng = rand::rng();
    let mut s = eng.session().unwrap();
    let (mut rec, mut out) = (Vec::new(), Vec::new());
    for k in ["user1", "user2", "user3"] {
        build_record(&pool, &mut rng, k.as_bytes(), layout, &mut rec);
        s.insert(k.as_bytes(), &rec).unwrap();
        assert!(s.read(k.as_bytes(), &mut out).unwrap());
        assert_eq!(verify_record(k.as_bytes(), layout, &out), Ok(()), "{k}");
    }
    assert!(!s.read(b"user9", &mut out).unwrap());
    // Token order: all three come back, each checking itself.
    let mut seen = Vec::new();
    let n = s
        .scan(b"user1", 100, &mut |k, v| {
            assert_eq!(verify_record(k, layout, v), Ok(()));
            seen.push(k.to_vec());
        })
        .unwrap();
    assert!(n >= 1 && n == seen.len(), "{n} {seen:?}");
    s.delete(b"user3").unwrap();
    assert!(!s.read(b"user3", &mut out).unwrap());
    // One field changed behind iolab's back fails the check.
    let c = Cql::connect(server.endpoint(), Some("ycsb")).unwrap();
    c.run("UPDATE usertable SET field1 = 'not what iolab wrote' WHERE y_id = 'user2'")
        .unwrap();
    assert!(s.read(b"user2", &mut out).unwrap());
    assert!(verify_record(b"user2", layout, &out).is_err());
}

fn ycsb_a_and_e_by_url_check_every_record(server: &Server, state: &Path) {
    let out = common::workdir();
    let json = out.path().join("r.json");
    let o = kv(state, &["a,e", "--threads", "2", "--quiet"])
        .args(["--server-url", &url(server, "")])
        .args(["-p", "recordcount=300", "-p", "operationcount=400"])
        .args(["-p", "cassandra.writeconsistencylevel=ALL", "-o"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::text(&o));
    let r = common::results(&json);
    assert_eq!(r["extra"]["server"]["kind"], "cassandra");
    assert_eq!(r["extra"]["server"]["private"], false);
    let points = r["points"].as_array().unwrap();
    let names: Vec<&str> = points.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["ycsb-a.load", "ycsb-a.run", "ycsb-e.load", "ycsb-e.run"]
    );
    for p in points {
        assert_eq!(p["verify"]["mismatches"], 0, "{}", p["name"]);
    }
    assert!(points[1]["verify"]["blocks_checked"].as_u64().unwrap() > 0);
    let scans = points[3]["ops"]["scan"]["ops"].as_u64().unwrap_or(0);
    assert!(scans > 0, "workload e scans: {}", points[3]["ops"]);
    let settings = r["provenance"].to_string();
    assert!(settings.contains("writeconsistencylevel"), "{settings}");
    // iolab's keyspace on a server it did not start is dropped at the end.
    assert!(iolab_keyspaces(server).is_empty());
}

/// Processes (not this test) whose command line names `dir`.
fn processes_naming(dir: &Path) -> Vec<u32> {
    let needle = dir.display().to_string();
    let me = std::process::id();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            !stat.contains(") Z ") && String::from_utf8_lossy(&cmd).contains(&needle)
        })
        .collect()
}

/// A path under `dir` (a few levels down) whose name starts with `prefix`.
fn find_under(dir: &Path, prefix: &str, depth: u32) -> Option<PathBuf> {
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let p = e.path();
        if e.file_name().to_string_lossy().starts_with(prefix) {
            return Some(p);
        }
        if depth > 0 && p.is_dir() {
            if let Some(f) = find_under(&p, prefix, depth - 1) {
                return Some(f);
            }
        }
    }
    None
}

/// Wait (bounded) until `ready` holds; fail with the run's output if it
/// ends first.
fn wait_for(child: &mut Child, what: &str, ready: impl Fn() -> bool) {
    let start = Instant::now();
    while !ready() {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut err);
            }
            panic!("iolab ended ({status}) before {what}: {err}");
        }
        assert!(
            start.elapsed() < START_WITHIN,
            "no {what} within {START_WITHIN:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn long_private_run(dir: &Path, state: &Path, extra: &[&str]) -> Child {
    let d = dir.to_str().unwrap();
    kv(state, &["a", "-t", d, "--heap", "512m", "--quiet"])
        .args(["-p", "recordcount=2000000", "-p", "operationcount=2000000"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn ctrl_c_stops_the_private_server_and_removes_its_data_and_commit_log() {
    let _one = one_at_a_time();
    if !installed() {
        return;
    }
    let (dir, logs, state) = (server_dir(), server_dir(), common::workdir());
    let cl = logs.path().to_str().unwrap();
    let mut child = long_private_run(dir.path(), state.path(), &["--commitlog-dir", cl]);
    // Loading: the table exists and the commit log is in its own place.
    wait_for(&mut child, "the table", || {
        find_under(dir.path(), "usertable-", 6).is_some()
    });
    let own = find_under(logs.path(), "iolab-cassandra-commitlog-", 0).unwrap();
    assert!(
        !common::files_in(&own).is_empty(),
        "no commit log in {own:?}"
    );
    assert!(find_under(dir.path(), "commitlog", 6).is_none());
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    let code = o.status.code();
    assert!(
        code == Some(130) || code == Some(0),
        "{code:?} {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(processes_naming(dir.path()).is_empty(), "server left");
    assert!(common::files_in(dir.path()).is_empty());
    assert!(common::files_in(logs.path()).is_empty());
    assert!(common::files_in(state.path()).is_empty(), "records left");
}

#[test]
fn after_a_sigkill_the_next_start_stops_the_server_and_removes_its_files() {
    let _one = one_at_a_time();
    if !installed() {
        return;
    }
    let (dir, state) = (server_dir(), common::workdir());
    let mut child = long_private_run(dir.path(), state.path(), &[]);
    // The JVM has started (it takes seconds more to listen).
    wait_for(&mut child, "the JVM", || {
        !processes_naming(dir.path()).is_empty()
    });
    std::thread::sleep(Duration::from_millis(500));
    child.kill().unwrap();
    child.wait().unwrap();
    // The server is in a process group of its own: it outlives iolab.
    assert!(!processes_naming(dir.path()).is_empty());
    assert!(
        !common::files_in(state.path()).is_empty(),
        "no crash record"
    );
    let said = common::next_start(state.path());
    let start = Instant::now();
    while !processes_naming(dir.path()).is_empty() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        processes_naming(dir.path()).is_empty(),
        "server left: {said}"
    );
    assert!(
        common::files_in(dir.path()).is_empty(),
        "{:?} {said}",
        common::files_in(dir.path())
    );
    assert!(common::files_in(state.path()).is_empty(), "records left");
}

/// What a JVM leaves in /tmp: lz4-java's and snappy-java's unpacked native
/// libraries (and lock files), and the hsperfdata directories' files.
fn jvm_files_in_tmp() -> std::collections::BTreeSet<PathBuf> {
    let mut out = std::collections::BTreeSet::new();
    for e in std::fs::read_dir("/tmp").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("hsperfdata_") {
            out.extend(common::files_in(&e.path()));
        } else if name.starts_with("liblz4-java-") || name.starts_with("snappy-") {
            out.insert(e.path());
        }
    }
    out
}

/// Files under /tmp the process `pid` has mapped (native libraries,
/// hsperfdata), and the lock files beside them.
fn mapped_in_tmp(pid: u32) -> Vec<PathBuf> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    let mut out: Vec<PathBuf> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|p| p.starts_with("/tmp/"))
        .map(PathBuf::from)
        .collect();
    out.sort();
    out.dedup();
    let locks: Vec<PathBuf> = out
        .iter()
        .map(|p| PathBuf::from(format!("{}.lck", p.display())))
        .collect();
    out.extend(locks);
    out
}

/// A private server's JVM unpacks its native libraries into its own
/// directory and writes no hsperfdata: nothing it created stays in /tmp.
/// Others' files there (other JVMs on the machine) are ignored: only new
/// entries this server mapped count.
#[test]
fn a_private_server_leaves_nothing_in_tmp() {
    let _one = one_at_a_time();
    if !installed() {
        eprintln!("SKIP a_private_server_leaves_nothing_in_tmp: Java or Cassandra's jars missing");
        return;
    }
    let state = common::workdir();
    std::env::set_var("IOLAB_STATE_DIR", state.path());
    let before = jvm_files_in_tmp();
    let dir = server_dir();
    let server = Server::start_or_connect(ServerKind::Cassandra, None, dir.path(), &small_heap())
        .unwrap_or_else(|e| panic!("{e:#}"));
    let pid = server.pgid().expect("a private server");
    // Writes go through the commit log (LZ4) and the memtable.
    let c = Cql::connect(server.endpoint(), None).unwrap();
    c.run("CREATE KEYSPACE iolab_tmp WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        .unwrap();
    c.run("CREATE TABLE iolab_tmp.t (k int PRIMARY KEY, v text)")
        .unwrap();
    for k in 0..100 {
        c.run(&format!(
            "INSERT INTO iolab_tmp.t (k, v) VALUES ({k}, 'v{k}')"
        ))
        .unwrap();
    }
    let mapped = mapped_in_tmp(pid);
    drop(c);
    drop(server);
    let after = jvm_files_in_tmp();
    let ours: Vec<&PathBuf> = after
        .difference(&before)
        .filter(|p| {
            mapped.contains(p) || p.file_name().is_some_and(|n| n == pid.to_string().as_str())
        })
        .collect();
    assert!(ours.is_empty(), "left in /tmp: {ours:?}");
    let jvm_files: Vec<&PathBuf> = mapped
        .iter()
        .filter(|p| {
            let s = p.to_string_lossy();
            s.starts_with("/tmp/liblz4-java-")
                || s.starts_with("/tmp/snappy-")
                || s.starts_with("/tmp/hsperfdata_")
        })
        .collect();
    assert!(jvm_files.is_empty(), "the JVM used /tmp: {jvm_files:?}");
    assert!(common::files_in(dir.path()).is_empty());
}

/// `--cassandra-compaction`: a strategy Cassandra does not have, or the
/// flag with another engine, is exit 2 naming it before anything starts.
#[test]
fn a_bad_compaction_strategy_is_exit_2_naming_the_flag() {
    let state = common::workdir();
    let dir = server_dir();
    let d = dir.path().to_str().unwrap();
    let bad = kv(
        state.path(),
        &["a", "-t", d, "--cassandra-compaction", "Leveled'}"],
    )
    .output()
    .unwrap();
    let other = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["kv", "--engine", "rocksdb", "a", "-t", d])
        .args(["--cassandra-compaction", "lcs"])
        .env("IOLAB_STATE_DIR", state.path())
        .output()
        .unwrap();
    for o in [bad, other] {
        let msg = common::text(&o);
        assert_eq!(o.status.code(), Some(2), "{msg}");
        assert!(msg.contains("--cassandra-compaction"), "{msg}");
    }
    assert!(common::files_in(dir.path()).is_empty());
}

/// A private run with `--cassandra-compaction lcs`: the table is created
/// with it (Cassandra refuses an unknown class, so the run would fail) and
/// the results' engine settings say so.
#[test]
fn the_compaction_strategy_is_used_and_recorded() {
    let _one = one_at_a_time();
    if !installed() {
        eprintln!(
            "SKIP the_compaction_strategy_is_used_and_recorded: Java or Cassandra's jars missing"
        );
        return;
    }
    let (dir, state, out) = (server_dir(), common::workdir(), common::workdir());
    let json = out.path().join("kv.json");
    let d = dir.path().to_str().unwrap();
    let o = kv(state.path(), &["a", "-t", d, "--heap", "512m", "--quiet"])
        .args(["-p", "recordcount=200", "-p", "operationcount=200"])
        .args([
            "--cassandra-compaction",
            "lcs",
            "-o",
            json.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::text(&o));
    let text = std::fs::read_to_string(&json).unwrap();
    assert!(text.contains("LeveledCompactionStrategy"), "{text}");
    assert!(common::files_in(dir.path()).is_empty());
}
