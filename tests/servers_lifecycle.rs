//! Private database servers: each kind starts under a directory of the
//! test's, takes connections on loopback with its password, reports its
//! version and settings, runs as its own user when iolab is root (a
//! private FerretDB, MongoDB's wire protocol's test double, has neither
//! password nor user of its own: it listens on loopback only), and is
//! stopped with its directory removed when dropped; a server that cannot
//! start fails with its log named; an existing server is reached through
//! `--server-url` and a refused one is exit 2 naming it. Skips, saying
//! why, where a server is not installed.

use std::path::Path;

use iolab::servers::{private, Server, ServerKind, ServerSettings};

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

/// The tests share the process's state directory (an environment
/// variable): one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn state_dir() -> (std::sync::MutexGuard<'static, ()>, tempfile::TempDir) {
    let guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let state = tempfile::tempdir().unwrap();
    std::env::set_var("IOLAB_STATE_DIR", state.path());
    (guard, state)
}

/// A directory every server user can enter, on the real disk.
fn server_dir() -> tempfile::TempDir {
    tempfile::tempdir_in("/var/tmp").unwrap()
}

fn installed(kind: ServerKind) -> bool {
    common::server_installed(kind)
}

fn running(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z "))
}

fn entries(dir: &Path) -> Vec<String> {
    common::files_in(dir)
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn each_server_starts_answers_and_goes_away_with_its_directory() {
    let (_one, state) = state_dir();
    for kind in KINDS {
        if !installed(kind) {
            continue;
        }
        let dir = server_dir();
        let server = Server::start_or_connect(kind, None, dir.path(), &ServerSettings::default())
            .unwrap_or_else(|e| panic!("{}: {e:#}", kind.name()));
        let info = server.info();
        let pgid = server.pgid().unwrap();
        assert!(running(pgid), "{info:?}");
        assert!(info.private && !info.version.is_empty(), "{info:?}");
        let passworded = kind != ServerKind::Mongodb;
        assert!(
            info.url.contains("127.0.0.1") && (info.url.contains("***") || !passworded),
            "{info:?}"
        );
        let data = server.data_dir().unwrap().to_path_buf();
        assert!(
            data.starts_with(dir.path().canonicalize().unwrap()),
            "{data:?}"
        );
        assert!(!info.config.is_empty(), "{info:?}");
        match kind {
            ServerKind::Postgres => {
                assert_eq!(
                    info.config.get("fsync").map(String::as_str),
                    Some("on"),
                    "{info:?}"
                );
                let mut c = iolab::servers::postgres::connect(server.endpoint(), "iolab").unwrap();
                let n: i32 = c.query_one("SELECT 41 + 1", &[]).unwrap().get(0);
                assert_eq!(n, 42);
                let who: String = c.query_one("SELECT current_user", &[]).unwrap().get(0);
                assert_eq!(who, "iolab");
            }
            ServerKind::Mariadb => {
                use mysql::prelude::Queryable;
                assert_eq!(
                    info.config.get("innodb_flush_method").map(String::as_str),
                    Some("O_DIRECT"),
                    "{info:?}"
                );
                let mut c = iolab::servers::mariadb::connect(server.endpoint(), "iolab").unwrap();
                let n: Option<i64> = c.query_first("SELECT 41 + 1").unwrap();
                assert_eq!(n, Some(42));
            }
            ServerKind::Redis => {
                assert_eq!(
                    info.config.get("appendonly").map(String::as_str),
                    Some("yes")
                );
                let mut c = iolab::servers::redis::connect(server.endpoint()).unwrap();
                let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut c).unwrap();
                let v: String = redis::cmd("GET").arg("k").query(&mut c).unwrap();
                assert_eq!(v, "v");
            }
            ServerKind::Cassandra => unreachable!("tests/kv_cassandra.rs"),
            ServerKind::Mongodb => {
                use mongodb::bson::doc;
                assert!(info.version.starts_with("FerretDB v1."), "{info:?}");
                let c = iolab::servers::mongodb::connect(server.endpoint()).unwrap();
                let coll = c.database("t").collection::<mongodb::bson::Document>("c");
                coll.insert_one(doc! { "_id": "k", "v": 42 }).run().unwrap();
                let d = coll.find_one(doc! { "_id": "k" }).run().unwrap().unwrap();
                assert_eq!(d.get_i32("v"), Ok(42));
            }
        }
        if !passworded {
            assert!(info.url.starts_with("mongodb://127.0.0.1:"), "{info:?}");
            assert_eq!(entries(state.path()).len(), 2, "records of dir and process");
            drop(server);
            assert!(!running(pgid), "{} still runs", kind.name());
            assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
            assert!(entries(state.path()).is_empty(), "records left");
            continue;
        }
        // A wrong password is refused: the instance is not open to anyone.
        let mut wrong = server.endpoint().clone();
        wrong.password = "wrong".into();
        assert!(private::describe(&wrong).is_err(), "{}", kind.name());
        if unsafe { libc::getuid() } == 0 {
            let owner = std::fs::read_to_string(format!("/proc/{pgid}/status")).unwrap();
            let uid_line = owner
                .lines()
                .find(|l| l.starts_with("Uid:"))
                .unwrap()
                .to_string();
            assert!(
                !uid_line.split_whitespace().nth(1).unwrap().eq("0"),
                "runs as root: {uid_line}"
            );
        }
        assert_eq!(
            entries(state.path()).len(),
            2,
            "records of the dir and the process"
        );
        drop(server);
        assert!(!running(pgid), "{} still runs", kind.name());
        assert!(
            entries(dir.path()).is_empty(),
            "left: {:?}",
            entries(dir.path())
        );
        assert!(entries(state.path()).is_empty(), "records left");
    }
}

#[test]
fn a_server_that_cannot_start_names_its_log_and_leaves_nothing() {
    let (_one, state) = state_dir();
    for kind in [ServerKind::Postgres, ServerKind::Redis] {
        if !installed(kind) {
            continue;
        }
        let dir = server_dir();
        let settings = ServerSettings {
            set: vec![("no_such_setting_iolab".into(), "1".into())],
            ..Default::default()
        };
        let e = Server::start_or_connect(kind, None, dir.path(), &settings).unwrap_err();
        let msg = format!("{e:#}");
        assert!(
            msg.contains("its log is kept as") && msg.contains("exited"),
            "{msg}"
        );
        assert!(
            msg.contains("no_such_setting_iolab"),
            "the log's tail is shown: {msg}"
        );
        assert!(
            entries(dir.path()).is_empty(),
            "left: {:?}",
            entries(dir.path())
        );
        // The log is kept for the user in the state directory's
        // server-logs/ (never swept); no record stays.
        let kept = state.path().join("server-logs");
        let logs = entries(&kept);
        assert_eq!(logs.len(), 1, "{logs:?}");
        assert!(msg.contains(&logs[0]), "{msg}");
        std::fs::remove_dir_all(&kept).unwrap();
        assert!(entries(state.path()).is_empty());
    }
}

#[test]
fn server_urls_are_checked_and_a_refused_connection_is_bad_input() {
    let (_one, _state) = state_dir();
    let dir = server_dir();
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    for (kind, url) in [
        (
            ServerKind::Postgres,
            format!("postgres://u:secret@127.0.0.1:{port}/db"),
        ),
        (
            ServerKind::Mariadb,
            format!("mysql://u:secret@127.0.0.1:{port}/db"),
        ),
        (
            ServerKind::Redis,
            format!("redis://:secret@127.0.0.1:{port}/0"),
        ),
        (
            ServerKind::Mongodb,
            format!("mongodb://u:secret@127.0.0.1:{port}/db"),
        ),
        (
            ServerKind::Mongodb,
            "mongodb://u:secret@h/db?wtimeoutMS=soon".to_string(),
        ),
        (ServerKind::Postgres, "redis://127.0.0.1/0".to_string()),
        (ServerKind::Postgres, "nonsense".to_string()),
    ] {
        let e = Server::start_or_connect(kind, Some(&url), dir.path(), &ServerSettings::default())
            .unwrap_err();
        let msg = format!("{e:#}");
        assert_eq!(iolab::error::exit_code(&e), 2, "{url}: {msg}");
        assert!(msg.contains("--server-url"), "{msg}");
        assert!(!msg.contains("secret"), "password shown: {msg}");
    }
}

#[test]
fn an_existing_server_is_used_through_its_url() {
    let (_one, _state) = state_dir();
    if !installed(ServerKind::Redis) {
        return;
    }
    let dir = server_dir();
    let own = Server::start_or_connect(
        ServerKind::Redis,
        None,
        dir.path(),
        &ServerSettings::default(),
    )
    .unwrap();
    let ep = own.endpoint();
    let url = format!("redis://:{}@127.0.0.1:{}/3", ep.password, ep.port);
    let ext = Server::start_or_connect(
        ServerKind::Redis,
        Some(&url),
        dir.path(),
        &ServerSettings::default(),
    )
    .unwrap();
    assert!(!ext.is_private() && ext.pgid().is_none() && ext.data_dir().is_none());
    assert_eq!(
        ext.info().url,
        format!("redis://:***@127.0.0.1:{}/3", ep.port)
    );
    assert!(ext.version().starts_with("Redis 7"), "{}", ext.version());
}
