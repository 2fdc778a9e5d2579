//! `iolab oltp` end to end on SQLite with the real binary: the load's row
//! counts, a two-point sweep with all five transactions and consistency
//! 1-4, the target left empty, `--db` reuse, SIGINT mid-run, bad input
//! (exit 2 naming the field, server settings included) and `iolab report`
//! on the results. The private servers are in tests/oltp_servers.rs.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{files_in, iolab, results, text, workdir};

fn kept_database(target: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = files_in(target)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("iolab-oltp-"))
        })
        .collect();
    assert_eq!(dirs.len(), 1, "one kept scratch directory: {dirs:?}");
    dirs[0].join("tpcc.sqlite")
}

#[test]
fn sweep_runs_every_transaction_passes_consistency_and_leaves_nothing() {
    let dir = workdir();
    let target = dir.path().join("t");
    std::fs::create_dir(&target).unwrap();
    let out = dir.path().join("r.json");
    let o = iolab(&[
        "oltp",
        "-t",
        target.to_str().unwrap(),
        "--users",
        "1,2",
        "--time",
        "3s",
        "--ramp",
        "0s",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("NOPM"), "{}", text(&o));
    assert!(
        files_in(&target).is_empty(),
        "left: {:?}",
        files_in(&target)
    );
    let r = results(&out);
    assert_eq!(r["kind"], "oltp");
    assert_eq!(r["complete"], true);
    let points = r["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    for (p, users) in points.iter().zip([1, 2]) {
        let o = &p["extra"]["oltp"];
        assert_eq!(o["users"], users);
        assert!(o["nopm"].as_f64().unwrap() > 0.0, "{o}");
        for t in [
            "new_order",
            "payment",
            "order_status",
            "delivery",
            "stock_level",
        ] {
            assert!(
                p["ops"][t]["ops"].as_u64().unwrap() > 0,
                "{t} never ran: {p}"
            );
            assert!(o["transactions"][t]["p90_ns"].as_u64().is_some());
        }
        let checks = o["consistency"].as_array().unwrap();
        assert_eq!(checks.len(), 4);
        assert!(checks.iter().all(|c| c["passed"] == true), "{checks:?}");
        assert_eq!(p["params"]["engine"], "sqlite");
        assert!(p["total"]["iops"].as_f64().unwrap() > 0.0);
    }
    let rows = &r["extra"]["oltp_load"]["rows"];
    assert_eq!(rows["stock"], 100_000);
    let html = dir.path().join("r.html");
    let o = iolab(&[
        "report",
        out.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("oltp-nopm") && page.contains("oltp-tps"));
}

#[test]
fn load_has_the_spec_row_counts_and_a_kept_database_is_reused() {
    let dir = workdir();
    let first = dir.path().join("load.json");
    let o = iolab(&[
        "oltp",
        "-t",
        dir.path().to_str().unwrap(),
        "--keep",
        "--time",
        "1s",
        "--ramp",
        "0s",
        "--no-check",
        "-q",
        "-o",
        first.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let db = kept_database(dir.path());
    let c = rusqlite::Connection::open(&db).unwrap();
    let count = |sql: &str| -> i64 { c.query_row(sql, [], |r| r.get(0)).unwrap() };
    // Counted by iolab right after the load, before the run added rows.
    let loaded = &results(&first)["extra"]["oltp_load"]["rows"];
    let lines = count("SELECT SUM(o_ol_cnt) FROM orders WHERE o_id <= 3000");
    for (table, n) in [
        ("item", 100_000),
        ("warehouse", 1),
        ("stock", 100_000),
        ("district", 10),
        ("customer", 30_000),
        ("history", 30_000),
        ("orders", 30_000),
        ("new_order", 9_000),
        ("order_line", lines),
    ] {
        assert_eq!(loaded[table].as_i64(), Some(n), "{table}: {loaded}");
    }
    // And by query here: what the run does not add to.
    for (table, n) in [
        ("item", 100_000),
        ("warehouse", 1),
        ("stock", 100_000),
        ("district", 10),
        ("customer", 30_000),
    ] {
        assert_eq!(
            count(&format!("SELECT COUNT(*) FROM {table}")),
            n,
            "{table}"
        );
    }
    assert!((5 * 30_000..=15 * 30_000).contains(&lines));
    // The run added orders: the load's 3,000 per district are still there.
    assert_eq!(
        count("SELECT COUNT(*) FROM orders WHERE o_id <= 3000"),
        30_000
    );
    assert_eq!(
        count("SELECT COUNT(*) FROM new_order WHERE no_o_id BETWEEN 2101 AND 3000")
            + count("SELECT COUNT(*) FROM orders WHERE o_id BETWEEN 2101 AND 3000 AND o_carrier_id IS NOT NULL"),
        9_000
    );
    assert_eq!(
        count("SELECT COUNT(*) FROM order_line WHERE ol_o_id <= 3000"),
        count("SELECT SUM(o_ol_cnt) FROM orders WHERE o_id <= 3000")
    );
    assert_eq!(
        count("SELECT COUNT(*) FROM orders WHERE o_id < 2101 AND o_carrier_id IS NULL"),
        0
    );
    drop(c);
    let out = dir.path().join("again.json");
    let o = iolab(&[
        "oltp",
        "--db",
        db.to_str().unwrap(),
        "--time",
        "1s",
        "--ramp",
        "0s",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("reused"), "{}", text(&o));
    let r = results(&out);
    assert_eq!(r["extra"]["oltp_load"]["loaded"], false);
    assert!(db.exists(), "--db is never removed");
    let o = iolab(&[
        "oltp",
        "--db",
        db.to_str().unwrap(),
        "-w",
        "2",
        "--time",
        "1s",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--warehouses"), "{}", text(&o));
}

#[test]
fn sigint_mid_run_keeps_the_points_and_leaves_nothing() {
    let dir = workdir();
    let target = dir.path().join("t");
    std::fs::create_dir(&target).unwrap();
    let state = workdir();
    let out = dir.path().join("r.json");
    let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args([
            "oltp",
            "-t",
            target.to_str().unwrap(),
            "--users",
            "2,4",
            "--time",
            "60s",
            "--ramp",
            "0s",
            "-q",
            "-o",
            out.to_str().unwrap(),
        ])
        .env("IOLAB_STATE_DIR", state.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    // The results file is first written when the load is done.
    while !out.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the load never finished"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    assert!(
        files_in(&target).is_empty(),
        "left: {:?}",
        files_in(&target)
    );
    assert!(files_in(state.path()).is_empty(), "crash records left");
    let r = results(&out);
    assert_eq!(r["interrupted"], true);
    assert_eq!(
        r["points"].as_array().unwrap().len(),
        1,
        "the partial point is kept"
    );
}

#[test]
fn bad_input_exits_2_naming_the_field() {
    let dir = workdir();
    let t = dir.path().to_str().unwrap();
    for (args, field) in [
        (vec!["--warehouses", "0"], "--warehouses"),
        (vec!["--users", "0"], "--users"),
        (vec!["--users", "1,,2"], "--users"),
        (vec!["--time", "0"], "--runtime"),
        (vec!["--time", "soon"], "--runtime"),
        (
            vec![
                "--engine",
                "postgres",
                "--server-url",
                "postgres://u@127.0.0.1:1/db",
                "--shared-buffers",
                "64m",
            ],
            "--shared-buffers",
        ),
        (
            vec![
                "--engine",
                "mariadb",
                "--server-url",
                "mysql://u@127.0.0.1:1/db",
                "--server-set",
                "x=1",
            ],
            "--server-set",
        ),
        (vec!["--shared-buffers", "64m"], "--shared-buffers"),
        (
            vec!["--engine", "mariadb", "--shared-buffers", "64m"],
            "--shared-buffers",
        ),
        (
            vec!["--engine", "postgres", "--buffer-pool", "1g"],
            "--buffer-pool",
        ),
        (
            vec!["--engine", "postgres", "--shared-buffers", "lots"],
            "--shared-buffers",
        ),
        (
            vec!["--engine", "postgres", "--persistence", "rdb"],
            "--persistence",
        ),
        (vec!["--engine", "postgres", "--keep"], "--keep"),
        (
            vec!["--engine", "postgres", "--server-url", "/run/postgresql"],
            "--server-url",
        ),
        (
            vec!["--engine", "postgres", "--server-url", "mysql://u@h/db"],
            "--server-url",
        ),
        (
            vec![
                "--engine",
                "postgres",
                "--server-url",
                "postgres://u@127.0.0.1:1/db",
            ],
            "--server-url",
        ),
        (
            vec![
                "--engine",
                "mariadb",
                "--server-url",
                "mysql://u@127.0.0.1:1/db",
            ],
            "--server-url",
        ),
        (
            vec!["--engine", "mariadb", "--server-url", "http://x/y"],
            "--server-url",
        ),
        (vec!["--warehouses", "9999"], "--warehouses"),
        (vec!["--db", "/nonexistent/tpcc.sqlite"], "--db"),
    ] {
        let mut a = vec!["oltp", "-t", t, "-q"];
        a.extend(args.iter().copied());
        let o = iolab(&a);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(field), "{args:?}: {}", text(&o));
        assert!(!text(&o).contains("panicked"), "{}", text(&o));
    }
    assert!(
        files_in(dir.path()).is_empty(),
        "left: {:?}",
        files_in(dir.path())
    );
}

/// Issue 44 item 15: `oltp --help` listed the Redis, Cassandra and MongoDB
/// URLs (and their servers' settings) of the flag group it shares with
/// kv, none of which oltp takes.
#[test]
fn help_lists_only_the_urls_oltp_takes() {
    let o = iolab(&["oltp", "--help"]);
    assert!(o.status.success(), "{}", text(&o));
    let h = String::from_utf8_lossy(&o.stdout);
    assert!(h.contains("postgres://USER:PW@HOST:PORT/DB"), "{h}");
    assert!(h.contains("mysql://USER:PW@HOST:PORT/DB"), "{h}");
    for other in [
        "redis://",
        "cassandra://",
        "mongodb://",
        "--persistence",
        "--heap",
    ] {
        assert!(!h.contains(other), "{other} in oltp's help:\n{h}");
    }
    // kv still lists them.
    let k = iolab(&["kv", "--help"]);
    assert!(String::from_utf8_lossy(&k.stdout).contains("redis://"));
}
