//! `iolab kv` end to end: results file, scratch directory lifecycle, --db
//! reuse, exit codes for bad input and for corrupted data, the readers
//! sweep, and a memory-limited run in a cgroup (as root).

use std::path::Path;
use std::process::Command;

fn iolab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("iolab-kv-"))
        .collect()
}

#[test]
fn ycsb_run_writes_results_and_removes_scratch() {
    let d = tmp();
    let out = d.path().join("r.json");
    let o = iolab()
        .args([
            "kv",
            "c",
            "--engine",
            "sqlite",
            "-p",
            "recordcount=200",
            "-p",
            "operationcount=500",
            "--threads",
            "2",
        ])
        .arg("--dir")
        .arg(d.path())
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.contains("[READ], Operations, 500"), "{stdout}");
    assert!(stdout.contains("[OVERALL], Throughput(ops/sec)"));
    let r = json(&out);
    assert_eq!(r["kind"], "kv");
    assert!(r["complete"].as_bool().unwrap());
    assert!(r["provenance"]["tools"]["sqlite"]
        .as_str()
        .unwrap()
        .contains("SQLite 3."));
    let pts = r["points"].as_array().unwrap();
    assert_eq!(pts.len(), 2);
    assert_eq!(pts[0]["name"], "ycsb-c.load");
    assert_eq!(pts[1]["ops"]["read"]["ops"], 500);
    assert_eq!(pts[1]["verify"]["mismatches"], 0);
    assert!(pts[1]["histograms"]["read.lat"].is_string());
    // Which clock timed the operations: the TSC where it can be used.
    for p in pts {
        let source = p["extra"]["clock"]["source"].as_str().unwrap_or("none");
        assert!(["tsc", "mono"].contains(&source), "{}", p["extra"]);
    }
    assert!(
        pts[0]["extra"]["kv"]["load"]["db_size_bytes"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(
        pts[0]["extra"]["kv"]["load"]["logical_written_bytes"]
            .as_u64()
            .unwrap()
            >= 200 * 1000
    );
    assert!(
        leftovers(d.path()).is_empty(),
        "scratch database left behind"
    );
    // The core's report and compare read kv results.
    let rep = iolab()
        .args(["report", "--format", "text"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        rep.status.success(),
        "{}",
        String::from_utf8_lossy(&rep.stderr)
    );
    assert!(String::from_utf8_lossy(&rep.stdout).contains("ycsb-c.run"));
    let cmp = iolab().arg("compare").arg(&out).arg(&out).output().unwrap();
    assert!(
        cmp.status.success(),
        "{}",
        String::from_utf8_lossy(&cmp.stderr)
    );
}

#[test]
fn db_reuse_and_corruption_exit_code() {
    let d = tmp();
    let db = d.path().join("db");
    let base = |phase: &str| {
        let mut c = iolab();
        c.args([
            "kv",
            "c",
            "--engine",
            "sqlite",
            "-p",
            "recordcount=10",
            "-p",
            "operationcount=300",
        ])
        .args(["-p", "requestdistribution=uniform", "--phase", phase])
        .arg("--db")
        .arg(&db);
        c
    };
    assert!(base("load").status().unwrap().success());
    assert!(db.join("kv.sqlite").exists(), "--db is kept");
    assert!(
        base("run").status().unwrap().success(),
        "run phase on the reused database"
    );
    // Corrupt one record behind iolab's back.
    let c = rusqlite::Connection::open(db.join("kv.sqlite")).unwrap();
    let mut v: Vec<u8> = c
        .query_row("SELECT v FROM kv LIMIT 1", [], |r| r.get(0))
        .unwrap();
    let k: Vec<u8> = c
        .query_row("SELECT k FROM kv LIMIT 1", [], |r| r.get(0))
        .unwrap();
    v[40] ^= 1;
    c.execute("UPDATE kv SET v = ?1 WHERE k = ?2", rusqlite::params![v, k])
        .unwrap();
    drop(c);
    let o = base("run").output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("checksum mismatch"));
}

#[test]
fn bad_input_exits_2() {
    let d = tmp();
    for args in [
        vec!["kv", "a", "-p", "recordcount=abc"],
        vec!["kv", "z"],
        vec!["kv", "readwhilewriting", "--readers", "0"],
        vec!["kv", "a", "--cache-size", "lots"],
        vec!["kv", "a", "-p", "requestdistribution=pareto"],
        vec!["kv", "readrandom", "--engine", "lmdb"],
        vec!["kv", "a", "--phase", "run"],
        vec!["kv", "fillrandom", "--value-size", "4"],
    ] {
        let o = iolab()
            .args(&args)
            .arg("--dir")
            .arg(d.path())
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    assert!(leftovers(d.path()).is_empty());
}

#[test]
fn readers_sweep_and_db_bench() {
    let d = tmp();
    let out = d.path().join("r.json");
    let o = iolab()
        .args([
            "kv",
            "fillseq,readrandom,readseq,seekrandom,overwrite,readwhilewriting",
            "--engine",
            "rocksdb",
            "--num",
            "3000",
            "--reads",
            "500",
        ])
        .args(["--readers", "1,2", "--dir"])
        .arg(d.path())
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = json(&out);
    let names: Vec<&str> = r["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "fillseq",
            "readrandom",
            "readseq",
            "seekrandom",
            "overwrite",
            "readwhilewriting.readers1",
            "readwhilewriting.readers2"
        ]
    );
    // readseq and seekrandom: --reads records or seeks, one op each.
    assert_eq!(r["points"][2]["ops"]["readseq"]["ops"], 500);
    assert_eq!(
        r["points"][2]["ops"]["readseq"]["lat"]["n"], 500,
        "one latency per record"
    );
    assert_eq!(r["points"][3]["ops"]["seek"]["ops"], 500);
    for p in r["points"].as_array().unwrap() {
        assert_eq!(p["verify"]["mismatches"], 0, "{}", p["name"]);
    }
    let rww = &r["points"][6];
    assert_eq!(rww["ops"]["read"]["ops"], 1000);
    // The writer runs until the readers are done; reads from the memtable
    // can all finish before it is first scheduled, so it may have written 0.
    // After fillseq every key exists: all reads found and verified.
    assert_eq!(r["points"][1]["verify"]["blocks_checked"], 500);
}

#[test]
fn memory_limited_run_in_a_cgroup() {
    if let Err(why) = iolab::testbed::cgroup::available() {
        eprintln!("SKIP memory_limited_run_in_a_cgroup: {why}");
        return;
    }
    let d = tmp();
    let out = d.path().join("r.json");
    let o = iolab()
        .args([
            "kv",
            "fillrandom,readrandom",
            "--engine",
            "lmdb",
            "--num",
            "5000",
            "--value-size",
            "1000",
        ])
        .args(["--map-size", "1g", "--memory-limit", "48m", "--dir"])
        .arg(d.path())
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = json(&out);
    let cg = r["extra"]["memory_cgroup"]["path"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(r["extra"]["memory_cgroup"]["limit"], 48 << 20);
    assert!(
        r["extra"]["memory_cgroup_peak_bytes"].as_u64().unwrap() > 0,
        "nothing was charged to the cgroup"
    );
    assert!(!Path::new(&cg).exists(), "cgroup {cg} was not removed");
}

#[test]
fn ctrl_c_keeps_results_and_cleans_up() {
    let d = tmp();
    let out = d.path().join("r.json");
    let mut cmd = iolab();
    cmd.args([
        "kv",
        "fillseq,readrandom",
        "--engine",
        "lmdb",
        "--num",
        "20000000",
        "--map-size",
        "4g",
        "--dir",
    ])
    .arg(d.path())
    .arg("-o")
    .arg(&out)
    .stdout(std::process::Stdio::piped());
    let with_cgroup = iolab::testbed::cgroup::available().is_ok();
    if with_cgroup {
        cmd.args(["--memory-limit", "256m"]);
    } else {
        eprintln!("note: running without --memory-limit (no cgroup memory controller or not root)");
    }
    let child = cmd.spawn().unwrap();
    let pid = child.id();
    // Wait until the database exists, then interrupt.
    let start = std::time::Instant::now();
    while leftovers(d.path()).is_empty() && start.elapsed().as_secs() < 20 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    // SAFETY: sending SIGINT to the child we spawned.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(
        leftovers(d.path()).is_empty(),
        "scratch database left after Ctrl-C"
    );
    let r = json(&out);
    assert_eq!(r["interrupted"], true);
    assert_eq!(r["points"][0]["name"], "fillseq");
    if with_cgroup {
        let cg = r["extra"]["memory_cgroup"]["path"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(!Path::new(&cg).exists(), "cgroup {cg} left after Ctrl-C");
    }
}

/// `kv --target OPS` was renamed (device's --target is a path): the old
/// spelling exits 2 and names the new flags; --target-ops and --rate work.
#[test]
fn kv_target_was_renamed_to_target_ops() {
    let d = tmp();
    let dir = d.path().to_str().unwrap();
    let o = iolab()
        .args([
            "kv", "c", "--engine", "sqlite", "--dir", dir, "--target", "500",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--target-ops 500") && err.contains("--rate 500"),
        "{err}"
    );
    for flag in ["--target-ops", "--rate"] {
        let out = d.path().join("r.json");
        let o = iolab()
            .args(["kv", "c", "--engine", "sqlite", "--dir", dir])
            .args(["-p", "recordcount=200", "-p", "operationcount=200"])
            .args([flag, "2000", "--json", out.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(o.status.success(), "{flag}: {o:?}");
        let r = json(&out);
        let run = r["points"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["params"]["target"] == "2000")
            .cloned();
        assert!(run.is_some(), "{flag}: no point paced at 2000 ops/s");
    }
}

/// A property file without recordcount would load YCSB's default of
/// 2^31-1 records; a load that cannot fit is refused before it starts.
#[test]
fn oversized_loads_are_refused_before_they_start() {
    let d = tmp();
    let props = d.path().join("workload-norecords");
    std::fs::write(&props, "readproportion=1\noperationcount=10\n").unwrap();
    let dir = d.path().to_str().unwrap();
    let o = iolab()
        .args([
            "kv",
            "-P",
            props.to_str().unwrap(),
            "--engine",
            "lmdb",
            "--dir",
            dir,
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("recordcount"), "{err}");
    assert!(leftovers(d.path()).is_empty());

    let o = iolab()
        .args(["kv", "a", "--engine", "lmdb", "--dir", dir])
        .args(["-p", "recordcount=1000000000000", "-p", "operationcount=10"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("recordcount") && err.contains("free"), "{err}");
    assert!(leftovers(d.path()).is_empty(), "nothing created");
}

/// SST files of a RocksDB directory.
fn sst_files(db: &Path) -> usize {
    std::fs::read_dir(db)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".sst")
        })
        .count()
}

/// db_bench does not flush the memtable between benchmarks: a readrandom
/// after a small fill reads the memtable. `--flush-between` flushes.
#[test]
fn phases_do_not_flush_unless_asked() {
    let d = tmp();
    for (flag, ssts) in [(None, 0), (Some("--flush-between"), 1)] {
        let db = d.path().join(format!("db{ssts}"));
        let o = iolab()
            .args(["kv", "fillseq,readrandom", "--engine", "rocksdb"])
            .args(["--num", "3000", "--db"])
            .arg(&db)
            .args(flag)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(sst_files(&db), ssts, "{flag:?}");
    }
}

/// readseq on LMDB failed with MDB_BAD_VALSIZE (an empty start key); every
/// engine now reads each record once per thread through one cursor.
#[test]
fn readseq_reads_every_record_on_every_engine() {
    let d = tmp();
    for engine in ["lmdb", "sqlite", "redb", "fjall", "rocksdb", "wiredtiger"] {
        let out = d.path().join(format!("{engine}.json"));
        let o = iolab()
            .args(["kv", "fillseq,readseq", "--engine", engine])
            .args(["--num", "700", "--threads", "2", "--dir"])
            .arg(d.path())
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{engine}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let r = json(&out);
        let p = &r["points"][1];
        assert_eq!(p["ops"]["readseq"]["ops"], 1400, "{engine}");
        assert_eq!(p["verify"]["mismatches"], 0, "{engine}");
    }
}

/// db_bench's chain steps run between benchmarks: `waitforcompaction`
/// leaves a quiet LSM for the next phase, `compact` moves L0 into L1, and
/// every RocksDB point records the LSM state at its start and end with the
/// chain steps that preceded it.
#[test]
fn chain_steps_settle_the_lsm_and_points_record_it() {
    let d = tmp();
    let out = d.path().join("chain.json");
    let o = iolab()
        .args([
            "kv",
            "fillrandom,waitforcompaction,readrandom,flush,compact,seekrandom",
        ])
        .args([
            "--engine",
            "rocksdb",
            "--num",
            "20000",
            "--value-size",
            "400",
        ])
        .args(["--write-buffer-size", "1m", "--dir"])
        .arg(d.path())
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = json(&out);
    let names: Vec<&str> = r["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["fillrandom", "readrandom", "seekrandom"],
        "chain steps make no point"
    );
    let lsm = |i: usize| r["points"][i]["extra"]["kv"]["lsm"].clone();
    assert!(lsm(0)["after_steps"].is_null());
    // The fill flushed SST files (to L0, or already compacted into L1).
    let files: u64 = lsm(0)["end"]["files_per_level"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert!(files >= 1, "{}", lsm(0));
    let read = lsm(1);
    assert_eq!(read["after_steps"][0]["step"], "waitforcompaction");
    for key in [
        "running_flushes",
        "running_compactions",
        "flush_pending",
        "compaction_pending",
    ] {
        assert_eq!(read["start"][key], 0, "readrandom starts quiet: {read}");
    }
    assert!(read["start"]["pending_compaction_bytes"].is_u64());
    let seek = lsm(2);
    let steps: Vec<&str> = seek["after_steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"].as_str().unwrap())
        .collect();
    assert_eq!(steps, ["flush", "compact"]);
    assert_eq!(seek["start"]["l0_files"], 0, "compact empties L0: {seek}");
    let below_l0: u64 = seek["start"]["files_per_level"].as_array().unwrap()[1..]
        .iter()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert!(below_l0 >= 1, "{seek}");
    assert_eq!(r["points"][2]["verify"]["mismatches"], 0);
    // Engines without an LSM accept the steps (flush, nothing to wait for)
    // and record no LSM state.
    let lmdb = d.path().join("lmdb.json");
    let o = iolab()
        .args([
            "kv",
            "fillseq,waitforcompaction,compact,readrandom",
            "--engine",
            "lmdb",
        ])
        .args(["--num", "500", "--dir"])
        .arg(d.path())
        .arg("-o")
        .arg(&lmdb)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(json(&lmdb)["points"][1]["extra"]["kv"]["lsm"].is_null());
}

/// `--check-values auto|all|sample|none` each run; `all` checks every
/// value read (and catches one corrupted behind iolab's back), `sample` one
/// in 64 per thread, `none` none, `auto` (the default) all but readseq's
/// (one in 64 there). YCSB refuses anything but auto and all.
#[test]
fn check_values_modes_and_a_corrupted_value() {
    let d = tmp();
    let db = d.path().join("db");
    let run = |list: &str, mode: &str, out: &str| {
        iolab()
            .args(["kv", list, "--engine", "rocksdb", "--num", "1000"])
            .args(["--value-size", "400", "--check-values", mode, "--db"])
            .arg(&db)
            .arg("-o")
            .arg(d.path().join(out))
            .output()
            .unwrap()
    };
    let o = run("fillseq", "all", "fill.json");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Values checked by readrandom, readseq and seekrandom in each mode.
    let modes = [
        ("auto", [1000, 16, 1000]),
        ("all", [1000, 1000, 1000]),
        ("sample", [16, 16, 16]),
        ("none", [0, 0, 0]),
    ];
    for (mode, checked) in modes {
        let out = format!("{mode}.json");
        let o = run("readrandom,readseq,seekrandom", mode, &out);
        assert!(
            o.status.success(),
            "{mode}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let r = json(&d.path().join(&out));
        let points = r["points"].as_array().unwrap();
        assert_eq!(points.len(), 3);
        for (p, checked) in points.iter().zip(checked) {
            assert_eq!(
                p["verify"]["blocks_checked"], checked,
                "{mode}: {}",
                p["name"]
            );
            assert_eq!(p["verify"]["mismatches"], 0);
        }
    }
    // Replace record 7's value with one of the same length whose check fails.
    {
        let rdb = rocksdb::DB::open_default(&db).unwrap();
        let key = b"0000000000000007";
        let mut v = rdb.get(key).unwrap().unwrap();
        v[200] ^= 1;
        rdb.put(key, &v).unwrap();
    }
    let o = run("readseq", "all", "bad.json");
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("0000000000000007"));
    // Record 7 is not among the sampled ones (the 1st, 65th, ...): unseen.
    assert!(run("readseq", "sample", "s.json").status.success());
    assert!(run("readseq", "none", "n.json").status.success());
    let o = iolab()
        .args(["kv", "c", "--check-values", "none", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--check-values"));
}

/// WiredTiger runs db_bench's benchmarks and a YCSB workload from the
/// command line, btree and LSM, with its settings in the results and
/// nothing left in the target directory.
#[test]
fn wiredtiger_runs_db_bench_and_ycsb() {
    let d = tmp();
    for (table, eviction) in [("btree", "4"), ("lsm", "auto")] {
        let out = d.path().join(format!("wt-{table}.json"));
        let o = iolab()
            .args([
                "kv",
                "fillseq,fillrandom,overwrite,readrandom,readseq,seekrandom,a",
                "--engine",
                "wiredtiger",
                "--wt-table",
                table,
                "--cache-size",
                "32m",
                "--checkpoint-interval",
                "1s",
                "--wt-eviction-threads",
                eviction,
                "--num",
                "2000",
                "-p",
                "recordcount=1000",
                "-p",
                "operationcount=2000",
                "--threads",
                "2",
                "--dir",
            ])
            .arg(d.path())
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{table}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let r = json(&out);
        let points = r["points"].as_array().unwrap();
        assert_eq!(
            points.len(),
            8,
            "{table}: six benchmarks, YCSB load and run"
        );
        for p in points {
            assert_eq!(p["verify"]["mismatches"], 0, "{table} {}", p["name"]);
            let kv = &p["extra"]["kv"];
            assert_eq!(kv["engine"], "wiredtiger");
            assert_eq!(kv["engine_settings"]["table"], table);
            assert_eq!(kv["engine_settings"]["checkpoint_interval"], "1 s");
            let threads = kv["engine_settings"]["eviction_threads"].as_str().unwrap();
            assert!(threads.starts_with(eviction), "{table}: {threads}");
            assert!(kv["engine_version"]
                .as_str()
                .unwrap()
                .contains("WiredTiger 3."));
        }
        assert_eq!(points[3]["ops"]["read"]["ops"], 4000, "{table}");
        assert!(points[3]["errors"]["not_found"].is_null(), "{table}");
        assert!(points[7]["ops"]["read"]["ops"].as_u64().unwrap() > 0);
        let left: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_dir())
            .collect();
        assert!(left.is_empty(), "{table}: left {left:?}");
    }
}

/// Every kv phase carries Intel's table (`extra.kv.intel`), and the
/// terminal prints it for the whole run: workload C's reads at or under
/// 1 ms are the `--under` share of its one op kind, and a phase with no
/// writes has no write figures (null, not 0).
#[test]
fn intels_table_for_every_phase() {
    let d = tmp();
    let out = d.path().join("intel.json");
    let o = iolab()
        .args(["kv", "c", "--engine", "lmdb", "-p", "recordcount=500"])
        .args(["-p", "operationcount=20000", "--dir"])
        .arg(d.path())
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("Intel's table"), "{stdout}");
    assert!(stdout.contains("ycsb-c.run"), "{stdout}");
    let r = json(&out);
    let load = &r["points"][0]["extra"]["kv"]["intel"];
    assert!(
        load["reads_under_pct"].is_null(),
        "the load only writes: {load}"
    );
    assert!(load["writes_under_pct"].as_f64().unwrap() > 0.0);
    let run = &r["points"][1];
    let intel = &run["extra"]["kv"]["intel"];
    assert_eq!(
        intel["reads_under_pct"],
        run["extra"]["kv"]["under"]["share_pct"]["read"]
    );
    assert!(intel["writes_under_pct"].is_null());
    assert!(intel["write_stdev_ns"].is_null());
    assert_eq!(
        intel["read_stdev_ns"],
        run["ops"]["read"]["lat"]["stdev_ns"]
    );
    assert_eq!(intel["tps"], run["total"]["iops"]);
    assert_eq!(intel["threshold_ns"], 1_000_000);
    assert!(intel["cpu_busy_pct"].as_f64().is_some(), "{intel}");
}

/// `--key-format binary` writes db_bench's own keys: db_bench's readrandom
/// on iolab's database finds every key (with decimal keys, none), and
/// iolab reads and checks its values back.
#[test]
fn binary_keys_are_the_keys_db_bench_reads() {
    if Command::new("db_bench").arg("--version").output().is_err() {
        eprintln!("skipped: db_bench (rocksdb-tools) is not installed");
        return;
    }
    let d = tmp();
    for (format, found) in [
        ("binary", "2000 of 2000 found"),
        ("decimal", "0 of 2000 found"),
    ] {
        let db = d.path().join(format);
        let out = d.path().join(format!("{format}.json"));
        let o = iolab()
            .args(["kv", "fillseq,readrandom,readseq", "--engine", "rocksdb"])
            .args([
                "--num",
                "2000",
                "--value-size",
                "400",
                "--key-format",
                format,
            ])
            .arg("--db")
            .arg(&db)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let r = json(&out);
        for p in r["points"].as_array().unwrap() {
            assert_eq!(p["params"]["key_format"], format);
            assert_eq!(p["verify"]["mismatches"], 0, "{format}");
            assert_eq!(p["extra"]["kv"]["missing"], 0, "{format}");
        }
        let o = Command::new("db_bench")
            .args([
                "--benchmarks=readrandom",
                "--use_existing_db=1",
                "--num=2000",
            ])
            .args(["--key_size=16", "--value_size=400", "--reads=2000"])
            .arg(format!("--db={}", db.display()))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(text.contains(found), "{format}: {text}");
    }
}

/// Each benchmark of a chain draws its own random keys, as db_bench's do:
/// an overwrite after a fillrandom of the same `--num` adds the keys the
/// fill missed (1 - e^-2 of them are there after both, 86%), where one
/// shared sequence rewrote the fill's own keys (1 - e^-1, 63%).
#[test]
fn each_benchmark_of_a_chain_draws_its_own_keys() {
    let d = tmp();
    let out = d.path().join("chain.json");
    let o = iolab()
        .args(["kv", "fillrandom,overwrite,readseq", "--engine", "rocksdb"])
        .args(["--num", "5000", "--dir"])
        .arg(d.path())
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = json(&out);
    let walked = r["points"][2]["ops"]["readseq"]["ops"].as_u64().unwrap();
    assert!(
        (4_000..=4_700).contains(&walked),
        "{walked} distinct keys after 10,000 random writes of 5,000"
    );
}
