//! YCSB on database servers: every record read back from PostgreSQL,
//! MariaDB, Redis and MongoDB's wire protocol (a private FerretDB, its
//! test double) is checked field by field (and a corrupted field is
//! found), a private server and its directory are gone after the run and
//! after SIGINT at a random moment, an existing server keeps nothing of
//! iolab's after the run, and server flags that cannot apply are exit 2
//! naming the field. Skips, saying why, where a server is not installed.

mod common;

/// The servers these tests start (MongoDB's protocol on a private
/// FerretDB); Cassandra (a JVM, slow to start) has a binary of its own
/// that starts it once: tests/kv_cassandra.rs.
const KINDS: [ServerKind; 4] = [
    ServerKind::Postgres,
    ServerKind::Mariadb,
    ServerKind::Redis,
    ServerKind::Mongodb,
];

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::server_installed as installed;
use iolab::kv::engine::{open_server, KvEngine};
use iolab::kv::fields::{build_field, build_record, verify_record, FieldLayout, TextPool};
use iolab::servers::{Endpoint, Server, ServerKind, ServerSettings};

/// Tests here start servers and look for leftover server processes: one
/// at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// A directory every server's system user can enter, on the real disk.
fn server_dir() -> tempfile::TempDir {
    let d = tempfile::tempdir_in("/var/tmp").unwrap();
    std::fs::set_permissions(
        d.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    d
}

/// Pids of every running server process of the three kinds.
fn server_pids() -> Vec<u32> {
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let zombie = stat.contains(") Z ");
        if !zombie && ["postgres", "mariadbd", "redis-server", "ferretdb"].contains(&comm.trim()) {
            pids.push(pid);
        }
    }
    pids
}

/// The URL of `ep`, password included (the test owns the server).
fn url_of(ep: &Endpoint) -> String {
    match ep.kind {
        ServerKind::Postgres => format!(
            "postgres://{}:{}@{}:{}/{}",
            ep.user, ep.password, ep.host, ep.port, ep.database
        ),
        ServerKind::Mariadb => format!(
            "mysql://{}:{}@{}:{}/{}",
            ep.user, ep.password, ep.host, ep.port, ep.database
        ),
        ServerKind::Redis => format!("redis://:{}@{}:{}/0", ep.password, ep.host, ep.port),
        ServerKind::Cassandra => unreachable!("tests/kv_cassandra.rs"),
        ServerKind::Mongodb => format!("mongodb://{}:{}/?w=1", ep.host, ep.port),
    }
}

fn kv_cmd(kind: ServerKind, dir: &Path, state: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
    c.args(["kv", "--engine", kind.name(), "--quiet", "-t"])
        .arg(dir)
        .args(extra)
        .env("IOLAB_STATE_DIR", state);
    c
}

#[test]
fn ycsb_on_each_server_checks_every_record_and_leaves_nothing() {
    let _one = one_at_a_time();
    for kind in KINDS {
        if !installed(kind) {
            continue;
        }
        let before = server_pids();
        let (dir, out, state) = (server_dir(), common::workdir(), common::workdir());
        let json = out.path().join("r.json");
        // A server setting a part changed is named in its points.
        let set: &[&str] = if kind.name() == "redis" {
            &["--server-set", "hz=20"]
        } else {
            &[]
        };
        let o = kv_cmd(kind, dir.path(), state.path(), &["a,e", "--threads", "2"])
            .args(set)
            .args(["-p", "recordcount=300", "-p", "operationcount=400", "-o"])
            .arg(&json)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}: {}", kind.name(), common::text(&o));
        let r = common::results(&json);
        let server = &r["extra"]["server"];
        assert_eq!(server["kind"], kind.name(), "{server}");
        assert_eq!(server["private"], true, "{server}");
        let points = r["points"].as_array().unwrap();
        let names: Vec<&str> = points.iter().map(|p| p["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            ["ycsb-a.load", "ycsb-a.run", "ycsb-e.load", "ycsb-e.run"]
        );
        for p in points {
            if !set.is_empty() {
                assert_eq!(p["params"]["server.hz"], "20", "{}", p["params"]);
            }
            let v = &p["verify"];
            assert_eq!(v["mismatches"], 0, "{}: {v}", p["name"]);
            if p["name"].as_str().unwrap().ends_with(".run") {
                assert!(
                    v["blocks_checked"].as_u64().unwrap() > 0,
                    "{}: {v}",
                    p["name"]
                );
            }
        }
        let scans = points[3]["ops"]["scan"]["ops"].as_u64().unwrap_or(0);
        assert!(scans > 0, "workload e scans: {}", points[3]["ops"]);
        assert!(
            common::files_in(dir.path()).is_empty(),
            "left: {:?}",
            common::files_in(dir.path())
        );
        assert!(
            common::files_in(state.path()).is_empty(),
            "crash records left"
        );
        let left: Vec<u32> = server_pids()
            .into_iter()
            .filter(|p| !before.contains(p))
            .collect();
        assert!(left.is_empty(), "{} processes left: {left:?}", kind.name());
    }
}

/// Write two records, corrupt one field of one, and read both back the
/// way YCSB's read and scan do.
fn check_round_trip(eng: &dyn KvEngine, what: &str) {
    let layout = FieldLayout { count: 3, len: 40 };
    let pool = TextPool::new(layout.len, 7);
    let mut rng = <rand::rngs::Xoshiro256PlusPlus as rand::SeedableRng>::seed_from_u64(11);
    let mut s = eng.session().unwrap();
    let (mut rec, mut out) = (Vec::new(), Vec::new());
    for key in [&b"user1"[..], b"user2"] {
        build_record(&pool, &mut rng, key, layout, &mut rec);
        s.insert(key, &rec).unwrap();
    }
    assert!(s.read(b"user1", &mut out).unwrap(), "{what}");
    assert_eq!(verify_record(b"user1", layout, &out), Ok(()), "{what}");
    // An update of one field, made for its key, still checks.
    let mut field = vec![0u8; layout.len];
    build_field(&pool, &mut rng, b"user1", 2, &mut field);
    s.update_field(b"user1", 2, &field).unwrap();
    assert!(s.read(b"user1", &mut out).unwrap());
    assert_eq!(verify_record(b"user1", layout, &out), Ok(()), "{what}");
    assert_eq!(&out[80..], &field[..], "{what}: the field written is read");
    // A field of another key in user2 is found.
    s.update_field(b"user2", 1, &field).unwrap();
    assert!(s.read(b"user2", &mut out).unwrap());
    let e = verify_record(b"user2", layout, &out).unwrap_err();
    assert!(e.starts_with("field1"), "{what}: {e}");
    let mut seen = Vec::new();
    s.scan(b"user", 10, &mut |k, v| {
        seen.push((k.to_vec(), verify_record(k, layout, v).is_ok()));
    })
    .unwrap();
    seen.sort();
    assert_eq!(
        seen,
        [(b"user1".to_vec(), true), (b"user2".to_vec(), false)],
        "{what}: scan"
    );
    assert!(s.delete(b"user1").unwrap(), "{what}");
    assert!(!s.read(b"user1", &mut out).unwrap(), "{what}: deleted");
    drop(s);
    eng.reset().unwrap();
    let mut s = eng.session().unwrap();
    assert!(
        !s.read(b"user2", &mut out).unwrap(),
        "{what}: reset empties"
    );
}

/// A hash field iolab did not write (or one of another length) makes the
/// record read back fail its check, and the connection stays in step.
fn a_stray_redis_field_fails_the_check(eng: &dyn KvEngine, ep: &Endpoint) {
    let layout = FieldLayout { count: 3, len: 40 };
    let pool = TextPool::new(layout.len, 7);
    let mut rng = <rand::rngs::Xoshiro256PlusPlus as rand::SeedableRng>::seed_from_u64(12);
    let mut s = eng.session().unwrap();
    let (mut rec, mut out) = (Vec::new(), Vec::new());
    let mut c = iolab::servers::redis::connect(ep).unwrap();
    for (key, field, value) in [
        (&b"user3"[..], "other", "x".repeat(40)),
        (b"user4", "field1", "short".to_string()),
    ] {
        build_record(&pool, &mut rng, key, layout, &mut rec);
        s.insert(key, &rec).unwrap();
        redis::cmd("HSET")
            .arg(key)
            .arg(field)
            .arg(&value)
            .query::<()>(&mut c)
            .unwrap();
        assert!(s.read(key, &mut out).unwrap());
        assert!(
            verify_record(key, layout, &out).is_err(),
            "{field}={value} passed"
        );
    }
    build_record(&pool, &mut rng, b"user5", layout, &mut rec);
    s.insert(b"user5", &rec).unwrap();
    assert!(s.read(b"user5", &mut out).unwrap());
    assert_eq!(verify_record(b"user5", layout, &out), Ok(()));
}

/// A document field iolab did not write, one of another length or one
/// that is not binary makes the record read back fail its check.
fn a_stray_mongodb_field_fails_the_check(eng: &dyn KvEngine, ep: &Endpoint) {
    use mongodb::bson::{doc, Bson, Document};
    let layout = FieldLayout { count: 3, len: 40 };
    let pool = TextPool::new(layout.len, 7);
    let mut rng = <rand::rngs::Xoshiro256PlusPlus as rand::SeedableRng>::seed_from_u64(12);
    let mut s = eng.session().unwrap();
    let (mut rec, mut out) = (Vec::new(), Vec::new());
    let c = iolab::servers::mongodb::connect(ep).unwrap();
    let coll = c.database("ycsb").collection::<Document>("usertable");
    let short = Bson::Binary(mongodb::bson::Binary {
        subtype: mongodb::bson::spec::BinarySubtype::Generic,
        bytes: b"short".to_vec(),
    });
    for (key, field, value) in [
        (
            "user3",
            "other",
            Bson::Binary(mongodb::bson::Binary {
                subtype: mongodb::bson::spec::BinarySubtype::Generic,
                bytes: vec![b'x'; 40],
            }),
        ),
        ("user4", "field1", short),
        ("user6", "field2", Bson::String("x".repeat(40))),
    ] {
        build_record(&pool, &mut rng, key.as_bytes(), layout, &mut rec);
        s.insert(key.as_bytes(), &rec).unwrap();
        coll.update_one(
            doc! { "_id": key },
            doc! { "$set": { field: value.clone() } },
        )
        .run()
        .unwrap();
        assert!(s.read(key.as_bytes(), &mut out).unwrap());
        assert!(
            verify_record(key.as_bytes(), layout, &out).is_err(),
            "{field}={value} passed"
        );
    }
    build_record(&pool, &mut rng, b"user5", layout, &mut rec);
    s.insert(b"user5", &rec).unwrap();
    assert!(s.read(b"user5", &mut out).unwrap());
    assert_eq!(verify_record(b"user5", layout, &out), Ok(()));
}

/// Whether iolab's namespace is still on the server `ep`.
fn namespace_exists(ep: &Endpoint, ns: &str) -> bool {
    match ep.kind {
        ServerKind::Postgres => {
            let mut c = iolab::servers::postgres::connect(ep, &ep.database).unwrap();
            let n: i64 = c
                .query_one(
                    "SELECT count(*) FROM information_schema.schemata WHERE schema_name = $1",
                    &[&ns],
                )
                .unwrap()
                .get(0);
            n > 0
        }
        ServerKind::Mariadb => {
            use mysql::prelude::Queryable;
            let mut c = iolab::servers::mariadb::connect(ep, "").unwrap();
            let n: Option<i64> = c
                .exec_first(
                    "SELECT count(*) FROM information_schema.schemata WHERE schema_name = ?",
                    (ns,),
                )
                .unwrap();
            n.unwrap_or(0) > 0
        }
        ServerKind::Redis => {
            let mut c = iolab::servers::redis::connect(ep).unwrap();
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg(format!("{ns}:*"))
                .query(&mut c)
                .unwrap();
            !keys.is_empty()
        }
        ServerKind::Cassandra => unreachable!("tests/kv_cassandra.rs"),
        ServerKind::Mongodb => {
            let c = iolab::servers::mongodb::connect(ep).unwrap();
            let names = c.list_database_names().run().unwrap();
            names.iter().any(|n| n == ns)
        }
    }
}

#[test]
fn records_round_trip_and_an_existing_server_keeps_nothing_of_iolab() {
    let _one = one_at_a_time();
    let state = common::workdir();
    std::env::set_var("IOLAB_STATE_DIR", state.path());
    for kind in KINDS {
        if !installed(kind) {
            continue;
        }
        let dir = server_dir();
        let own = Server::start_or_connect(kind, None, dir.path(), &ServerSettings::default())
            .unwrap_or_else(|e| panic!("{}: {e:#}", kind.name()));
        let eng = open_server(&own, 3, Default::default()).unwrap();
        assert_eq!(eng.field_count(), Some(3));
        check_round_trip(eng.as_ref(), &format!("{} (private)", kind.name()));
        if kind == ServerKind::Redis {
            a_stray_redis_field_fails_the_check(eng.as_ref(), own.endpoint());
        }
        if kind == ServerKind::Mongodb {
            a_stray_mongodb_field_fails_the_check(eng.as_ref(), own.endpoint());
        }
        drop(eng);
        // The same server reached by URL: iolab's namespace, dropped at the end.
        let ext = Server::connect(kind, &url_of(own.endpoint())).unwrap();
        let ns = format!("iolab_{}", std::process::id());
        let eng = open_server(&ext, 3, Default::default()).unwrap();
        check_round_trip(eng.as_ref(), &format!("{} (by URL)", kind.name()));
        let mut s = eng.session().unwrap();
        s.insert(b"user9", &[b'x'; 120]).unwrap();
        drop(s);
        assert!(namespace_exists(own.endpoint(), &ns), "{}", kind.name());
        eng.cleanup().unwrap();
        assert!(
            !namespace_exists(own.endpoint(), &ns),
            "{}: left",
            kind.name()
        );
    }
}

#[test]
fn server_flags_that_cannot_apply_are_refused() {
    let (dir, state) = (server_dir(), common::workdir());
    let port = common::free_port().to_string();
    let refused = format!("redis://127.0.0.1:{port}/0");
    let mongo_refused = format!("mongodb://127.0.0.1:{port}");
    let cases: [(&str, Vec<&str>, &str); 12] = [
        (
            "rocksdb",
            vec!["a", "--server-url", "postgres://u@127.0.0.1/x"],
            "--server-url",
        ),
        ("postgres", vec!["fillrandom"], "WORKLOAD"),
        ("postgres", vec!["a", "--db", "/nonexistent/db"], "--db"),
        (
            "mariadb",
            vec![
                "a",
                "--memory-limit",
                "1g",
                "--server-url",
                "mysql://u:p@127.0.0.1:1/x",
            ],
            "--memory-limit",
        ),
        (
            "postgres",
            vec![
                "a",
                "--server-url",
                "postgres://u@127.0.0.1/x",
                "--shared-buffers",
                "1g",
            ],
            "--shared-buffers",
        ),
        (
            "redis",
            vec!["a", "--appendfsync", "sometimes"],
            "--appendfsync",
        ),
        ("redis", vec!["a", "--server-url", &refused], "--server-url"),
        (
            "mongodb",
            vec!["a", "--server-url", &mongo_refused],
            "--server-url",
        ),
        (
            "mongodb",
            vec!["a", "--server-url", "mongodb://127.0.0.1:70000"],
            "--server-url",
        ),
        (
            "mongodb",
            vec!["a", "--server-url", "mongodb://h/db?journal=maybe"],
            "--server-url",
        ),
        (
            "mongodb",
            vec!["a", "--server-url", "mongodb://h/my.db"],
            "--server-url",
        ),
        (
            "mongodb",
            vec!["a", "--shared-buffers", "1g"],
            "--shared-buffers",
        ),
    ];
    for (engine, args, field) in cases {
        let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
        c.args(["kv", "--engine", engine, "-t"])
            .arg(dir.path())
            .args(&args)
            .env("IOLAB_STATE_DIR", state.path());
        let o = c.output().unwrap();
        let msg = common::text(&o);
        assert_eq!(o.status.code(), Some(2), "{engine} {args:?}: {msg}");
        assert!(
            msg.contains(field),
            "{engine} {args:?} names {field}: {msg}"
        );
        assert!(!msg.contains("panicked"), "{msg}");
    }
    assert!(common::files_in(dir.path()).is_empty());
}

#[test]
fn sigint_at_a_random_moment_of_a_server_run_leaves_nothing() {
    let _one = one_at_a_time();
    let mut rng = common::Rng::from_env_or_clock();
    for kind in [ServerKind::Postgres, ServerKind::Redis, ServerKind::Mongodb] {
        if !installed(kind) {
            continue;
        }
        let before = server_pids();
        let (dir, state) = (server_dir(), common::workdir());
        let child = kv_cmd(kind, dir.path(), state.path(), &["a"])
            .args(["-p", "recordcount=100000", "-p", "operationcount=100000"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Start, load or run: the server starts within about a second.
        let ms = 100 + rng.below(2500);
        std::thread::sleep(Duration::from_millis(ms));
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let o = child.wait_with_output().unwrap();
        let code = o.status.code();
        assert!(
            code == Some(0) || code == Some(130),
            "{} after {ms} ms: {code:?} {}",
            kind.name(),
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            common::files_in(dir.path()).is_empty(),
            "{} after {ms} ms left {:?}",
            kind.name(),
            common::files_in(dir.path())
        );
        assert!(
            common::files_in(state.path()).is_empty(),
            "crash records left"
        );
        let left: Vec<u32> = server_pids()
            .into_iter()
            .filter(|p| !before.contains(p))
            .collect();
        assert!(
            left.is_empty(),
            "{} after {ms} ms: processes left {left:?}",
            kind.name()
        );
    }
}

/// A server URL nothing listens on: exit 2 naming --server-url, and the
/// refusal said once (the Redis client's error and its source both said
/// "Connection refused").
#[test]
fn a_refused_connection_is_said_once() {
    let (dir, state) = (server_dir(), common::workdir());
    let port = common::free_port();
    for (engine, url) in [
        ("redis", format!("redis://127.0.0.1:{port}/0")),
        ("postgres", format!("postgres://u:p@127.0.0.1:{port}/x")),
        ("mongodb", format!("mongodb://127.0.0.1:{port}")),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_iolab"))
            .args(["kv", "--engine", engine, "-t"])
            .arg(dir.path())
            .args(["a", "--server-url", &url])
            .env("IOLAB_STATE_DIR", state.path())
            .output()
            .unwrap();
        let msg = common::text(&o);
        assert_eq!(o.status.code(), Some(2), "{engine}: {msg}");
        assert!(msg.contains("--server-url"), "{engine}: {msg}");
        assert_eq!(
            msg.to_lowercase().matches("connection refused").count(),
            1,
            "{engine}: {msg}"
        );
    }
    assert!(common::files_in(dir.path()).is_empty());
}

/// A Redis iolab started as a user would, for runs given its URL (state
/// and server directories kept with it); None where Redis is absent.
fn own_redis() -> Option<(tempfile::TempDir, tempfile::TempDir, Server)> {
    if !installed(ServerKind::Redis) {
        return None;
    }
    let state = common::workdir();
    std::env::set_var("IOLAB_STATE_DIR", state.path());
    let dir = server_dir();
    let own = Server::start_or_connect(
        ServerKind::Redis,
        None,
        dir.path(),
        &ServerSettings::default(),
    )
    .unwrap();
    Some((state, dir, own))
}

/// Issue 31 item 5: with --server-url (a server iolab did not start,
/// perhaps on another machine) kv reported this machine's disk, a write
/// amplification, "db size 0 B" and a target path; none was measured.
#[test]
fn a_server_by_url_reports_nothing_of_this_machines_disk() {
    let _one = one_at_a_time();
    let Some((state, _dir, own)) = own_redis() else {
        return;
    };
    let work = common::workdir();
    let json = work.path().join("r.json");
    let o = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["kv", "a", "--engine", "redis", "--quiet", "--server-url"])
        .arg(url_of(own.endpoint()))
        .args(["-p", "recordcount=200", "-p", "operationcount=400", "-o"])
        .arg(&json)
        .env("IOLAB_STATE_DIR", state.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert!(
        r["provenance"]["target"].is_null(),
        "{}",
        r["provenance"]["target"]
    );
    let pts = r["points"].as_array().unwrap();
    assert!(!pts.is_empty());
    for p in pts {
        assert!(p["device"].is_null(), "{}: {}", p["name"], p["device"]);
        let load = &p["extra"]["kv"]["load"];
        for absent in [
            "device",
            "db_size_bytes",
            "db_apparent_bytes",
            "write_amplification",
        ] {
            assert!(
                load[absent].is_null(),
                "{}: {absent} = {}",
                p["name"],
                load[absent]
            );
        }
    }
}

/// `--engine mongodb` with neither `--server-url` nor a FerretDB to start:
/// exit 2 saying MongoDB needs a URL, that FerretDB is only a test double,
/// and how to get one; nothing created.
#[test]
fn mongodb_without_a_url_or_a_ferretdb_says_what_it_needs() {
    let (dir, state) = (server_dir(), common::workdir());
    let o = kv_cmd(ServerKind::Mongodb, dir.path(), state.path(), &["a"])
        .env("IOLAB_FERRETDB", dir.path().join("no-ferretdb"))
        .output()
        .unwrap();
    let msg = common::text(&o);
    assert_eq!(o.status.code(), Some(2), "{msg}");
    for said in ["--server-url", "test double", "scripts/build-ferretdb.sh"] {
        assert!(msg.contains(said), "says {said}: {msg}");
    }
    assert!(!msg.contains("panicked"), "{msg}");
    assert!(common::files_in(dir.path()).is_empty());
}

/// Pids of FerretDB processes whose command line names `dir`.
fn ferretdbs_under(dir: &Path) -> Vec<u32> {
    let needle = dir.to_string_lossy().into_owned();
    server_pids()
        .into_iter()
        .filter(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmd).contains(&needle)
        })
        .collect()
}

/// A run SIGKILLed while its private FerretDB serves leaves the server and
/// its directory; the next start of iolab removes both.
#[test]
fn a_sigkilled_runs_ferretdb_is_removed_by_the_next_start() {
    let _one = one_at_a_time();
    if !installed(ServerKind::Mongodb) {
        return;
    }
    let (dir, state) = (server_dir(), common::workdir());
    let mut child = kv_cmd(ServerKind::Mongodb, dir.path(), state.path(), &["a"])
        .args(["-p", "recordcount=100000", "-p", "operationcount=100000"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Until its FerretDB answers: the load has begun once iolab's
    // collection file is there.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let loading = |d: &Path| {
        common::files_in(d)
            .iter()
            .flat_map(|run| common::files_in(run))
            .flat_map(|server| common::files_in(&server.join("data")))
            .any(|f| f.file_name().is_some_and(|n| n == "ycsb.sqlite"))
    };
    while !loading(dir.path()) {
        assert!(std::time::Instant::now() < deadline, "no load within 60 s");
        assert!(child.try_wait().unwrap().is_none(), "iolab ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    let servers = ferretdbs_under(dir.path());
    assert_eq!(servers.len(), 1, "{servers:?}");
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(ferretdbs_under(dir.path()), servers, "left running");
    let said = common::next_start(state.path());
    assert!(said.contains("removed ferretdb"), "{said}");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !ferretdbs_under(dir.path()).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(ferretdbs_under(dir.path()).is_empty(), "still running");
    assert!(
        common::files_in(dir.path()).is_empty(),
        "{:?}",
        common::files_in(dir.path())
    );
    assert!(common::files_in(state.path()).is_empty(), "records left");
}

/// `--memory-limit` with a private server: the server starts inside
/// iolab's memory cgroup (so its data's page cache is limited too), the
/// results say so, and the terminal says what counts against the limit.
#[test]
fn a_private_server_runs_inside_the_memory_cgroup() {
    let _one = one_at_a_time();
    if !installed(ServerKind::Redis) {
        eprintln!("SKIP memory cgroup with a server: redis-server is not installed");
        return;
    }
    if let Err(why) = iolab::testbed::cgroup::available() {
        eprintln!("SKIP memory cgroup with a server: {why}");
        return;
    }
    let (dir, out, state) = (server_dir(), common::workdir(), common::workdir());
    let json = out.path().join("r.json");
    let o = kv_cmd(
        ServerKind::Redis,
        dir.path(),
        state.path(),
        &["c", "--memory-limit", "512m"],
    )
    .args(["-p", "recordcount=200", "-p", "operationcount=200", "-o"])
    .arg(&json)
    .output()
    .unwrap();
    let text = common::text(&o);
    assert!(o.status.success(), "{text}");
    assert!(
        text.contains("runs in iolab's memory cgroup") && text.contains("whole dataset"),
        "{text}"
    );
    let r = common::results(&json);
    let cg = &r["extra"]["memory_cgroup"];
    assert_eq!(cg["server_inside"], true, "{cg}");
    assert_eq!(cg["limit"], 512u64 << 20, "{cg}");
}

/// Issue 44 items 7 and 15: with `--server-url` the header named a local
/// scratch directory (`database: ./iolab-kv-redis-PID (scratch, removed
/// at exit)`) that holds none of the data, and Redis's version read
/// "engine redis Redis Redis 7.0.15".
#[test]
fn a_server_by_url_is_named_as_the_servers_data_and_redis_once() {
    let _one = one_at_a_time();
    let Some((state, _dir, own)) = own_redis() else {
        return;
    };
    let work = common::workdir();
    let o = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["kv", "c", "--engine", "redis", "--server-url"])
        .arg(url_of(own.endpoint()))
        .args(["-p", "recordcount=50", "-p", "operationcount=50", "-t"])
        .arg(work.path())
        .env("IOLAB_STATE_DIR", state.path())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let db = out
        .lines()
        .find(|l| l.trim_start().starts_with("database:"))
        .expect("a database line");
    assert!(db.contains("the server's, at redis://"), "{db}");
    assert!(!db.contains("iolab-kv-") && !db.contains("scratch"), "{db}");
    assert!(out.contains("engine redis Redis 7."), "{out}");
    assert!(!out.contains("Redis Redis"), "{out}");
}
