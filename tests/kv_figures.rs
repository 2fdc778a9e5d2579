//! Issue 44 on `iolab kv`, with the real binary on small embedded
//! databases: the summary lines in YCSB's and db_bench's own formats, the
//! load table's figures (not measured is never 0, each write
//! amplification named by its denominator, the database's logical size
//! apart from what is allocated), and the command line's hints
//! (`--budget`, `--workload`, `--dry-run`'s threads and database).

mod common;

use common::{iolab, text, workdir};

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A user typed `iolab kv --budget 10s` and clap suggested `--quiet`.
#[test]
fn budget_is_refused_naming_what_bounds_a_kv_run() {
    let o = iolab(&["kv", "--budget", "10s"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("--budget") && t.contains("--runtime"), "{t}");
    assert!(t.contains("operationcount") && t.contains("--num"), "{t}");
    assert!(!t.contains("--quiet"), "{t}");
}

/// `--workload` without a value lists the workloads; with one it is the
/// positional WORKLOAD.
#[test]
fn workload_flag_lists_the_workloads() {
    let o = iolab(&["kv", "--workload"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("--workload") && t.contains("readrandom") && t.contains("a-f"),
        "{t}"
    );
    let d = workdir();
    let dir = d.path().to_str().unwrap();
    let o = iolab(&[
        "kv",
        "--workload",
        "c",
        "--engine",
        "sqlite",
        "-t",
        dir,
        "--dry-run",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(stdout(&o).contains("ycsb-c run"), "{}", text(&o));
}

/// `--dry-run` showed the engine and steps, not the threads nor where the
/// database goes.
#[test]
fn dry_run_shows_threads_and_the_database() {
    let d = workdir();
    let dir = d.path().to_str().unwrap();
    let o = iolab(&[
        "kv",
        "a",
        "--engine",
        "sqlite",
        "--threads",
        "3",
        "-t",
        dir,
        "--dry-run",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let s = stdout(&o);
    assert!(s.contains("threads: 3"), "{s}");
    assert!(
        s.contains(&format!(
            "database: {dir}/iolab-kv-sqlite-PID (scratch, removed at exit)"
        )),
        "{s}"
    );
    let o = iolab(&[
        "kv",
        "a",
        "--engine",
        "redis",
        "--server-url",
        "redis://:secret@127.0.0.1:6390/0",
        "--dry-run",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let s = stdout(&o);
    assert!(
        s.contains("database: the server's, at redis://:***@127.0.0.1:6390"),
        "{s}"
    );
    assert!(!s.contains("iolab-kv-") && !s.contains("secret"), "{s}");
}

/// db_bench-style benchmarks print db_bench's line; YCSB workloads YCSB's
/// `Return=OK` and whole-microsecond minimum.
#[test]
fn summaries_read_as_db_bench_and_ycsb_print_them() {
    let d = workdir();
    let dir = d.path().to_str().unwrap();
    let o = iolab(&[
        "kv",
        "fillseq,readrandom",
        "--engine",
        "sqlite",
        "--num",
        "300",
        "-t",
        dir,
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let s = stdout(&o);
    for bench in ["fillseq", "readrandom"] {
        let line = s
            .lines()
            .find(|l| l.starts_with(&format!("{bench:<12} : ")))
            .unwrap_or_else(|| panic!("no db_bench line for {bench}: {s}"));
        let rest = line.split(" : ").nth(1).unwrap().trim_start();
        let (micros, rest) = rest.split_once(" micros/op ").expect(line);
        assert!(micros.parse::<f64>().is_ok(), "{line}");
        let (ops_s, rest) = rest.split_once(" ops/sec ").expect(line);
        assert!(ops_s.parse::<u64>().is_ok(), "{line}");
        assert!(rest.contains(" seconds 300 operations;"), "{line}");
    }
    assert!(s.contains("(300 of 300 found)"), "{s}");
    let o = iolab(&[
        "kv",
        "c",
        "--engine",
        "sqlite",
        "-p",
        "recordcount=100",
        "-p",
        "operationcount=200",
        "-t",
        dir,
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let s = stdout(&o);
    assert!(s.contains("[READ], Return=OK, 200\n"), "{s}");
    let min = s
        .lines()
        .find_map(|l| l.strip_prefix("[READ], MinLatency(us), "))
        .expect("a MinLatency line");
    assert!(min.parse::<u64>().is_ok(), "an integer, as YCSB's: {min}");
}

/// Issue 44 item 7 end to end on RocksDB (which preallocates its WAL):
/// `db size` is the logical size, the allocated one is apart and labelled,
/// the write amplification is named by its denominator and is never 0.
#[test]
fn load_table_sizes_and_write_amp_mean_what_they_say() {
    let d = workdir();
    let dir = d.path().to_str().unwrap();
    let json = d.path().join("r.json");
    let o = iolab(&[
        "kv",
        "fillrandom",
        "--engine",
        "rocksdb",
        "--num",
        "500",
        "-t",
        dir,
        "-o",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let s = stdout(&o);
    for head in [
        "db size",
        "db allocated (incl. prealloc)",
        "write amp (device bytes / kv bytes written)",
    ] {
        assert!(s.contains(head), "{head}: {s}");
    }
    let r = common::results(&json);
    let load = &r["points"][0]["extra"]["kv"]["load"];
    let (logical, allocated) = (
        load["db_apparent_bytes"].as_u64().unwrap(),
        load["db_size_bytes"].as_u64().unwrap(),
    );
    assert!(logical < allocated, "RocksDB preallocates: {load}");
    match load["write_amplification"].as_f64() {
        Some(w) => assert!(w > 0.0, "{load}"),
        None => assert!(s.contains("write amp: not measured: "), "{s}"),
    }
}
