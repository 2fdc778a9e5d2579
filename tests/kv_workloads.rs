//! YCSB and db_bench workloads through the library: each core workload's
//! operation mix, verification catching an injected corruption, and load
//! statistics that add up.

use iolab::kv::dbbench::{Bench, DbBench, DbBenchConfig};
use iolab::kv::engine::{open, EngineOptions, KvEngine, KvEngineKind};
use iolab::kv::phase::{run, PhaseSpec};
use iolab::kv::props::Props;
use iolab::kv::recorder::KvOp;
use iolab::kv::ycsb::{YcsbConfig, YcsbLoad, YcsbRun};
use std::path::Path;

fn small_opts() -> EngineOptions {
    EngineOptions {
        map_size: 1 << 30,
        cache_size: 8 << 20,
        ..EngineOptions::default()
    }
}

fn cfg(letter: &str, records: i64, ops: i64) -> YcsbConfig {
    let mut p = Props::builtin(letter).unwrap();
    p.set("recordcount", records);
    p.set("operationcount", ops);
    YcsbConfig::from_props(&p).unwrap()
}

fn load(eng: &dyn KvEngine, c: &YcsbConfig, dir: &Path) {
    let o = run(
        eng,
        &YcsbLoad::new(c, 1, false),
        &PhaseSpec::split(c.insertcount as u64, 2, None, 1),
        dir,
    )
    .unwrap();
    assert_eq!(o.rec.ops[KvOp::Insert.idx()], c.insertcount as u64);
}

fn share(o: &iolab::kv::phase::PhaseOutcome, k: KvOp, total: u64) -> f64 {
    o.rec.ops[k.idx()] as f64 / total as f64
}

#[test]
fn ycsb_core_workload_mixes() {
    core_workload_mixes(KvEngineKind::Lmdb);
}

#[test]
fn ycsb_core_workload_mixes_on_wiredtiger() {
    core_workload_mixes(KvEngineKind::Wiredtiger);
}

fn core_workload_mixes(kind: KvEngineKind) {
    // (workload, [(op, expected share)])
    let cases: [(&str, &[(KvOp, f64)]); 6] = [
        ("a", &[(KvOp::Read, 0.5), (KvOp::Update, 0.5)]),
        ("b", &[(KvOp::Read, 0.95), (KvOp::Update, 0.05)]),
        ("c", &[(KvOp::Read, 1.0)]),
        ("d", &[(KvOp::Read, 0.95), (KvOp::Insert, 0.05)]),
        ("e", &[(KvOp::Scan, 0.95), (KvOp::Insert, 0.05)]),
        ("f", &[(KvOp::Read, 0.5), (KvOp::Rmw, 0.5)]),
    ];
    for (w, mix) in cases {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let eng = open(kind, dir.path(), &small_opts()).unwrap();
        let n = 4000u64;
        let c = cfg(w, 500, n as i64);
        load(eng.as_ref(), &c, dir.path());
        let o = run(
            eng.as_ref(),
            &YcsbRun::new(&c, 7, false),
            &PhaseSpec::split(n, 2, None, 7),
            dir.path(),
        )
        .unwrap();
        for (k, want) in mix {
            let got = share(&o, *k, n);
            assert!(
                (got - want).abs() < 0.03,
                "workload {w}: {k:?} share {got}, want {want}"
            );
        }
        assert_eq!(
            o.rec.mismatches, 0,
            "workload {w}: {:?}",
            o.rec.first_mismatches
        );
        assert!(o.rec.verified > 0, "workload {w} verified reads");
        if w == "f" {
            // RMW is measured as a whole and per part.
            assert_eq!(o.rec.ops[KvOp::RmwRead.idx()], o.rec.ops[KvOp::Rmw.idx()]);
            assert_eq!(o.rec.ops[KvOp::RmwUpdate.idx()], o.rec.ops[KvOp::Rmw.idx()]);
        }
    }
}

#[test]
fn verification_catches_injected_corruption() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let eng = open(KvEngineKind::Rocksdb, dir.path(), &small_opts()).unwrap();
    let mut p = Props::builtin("c").unwrap();
    p.set("recordcount", 20);
    p.set("operationcount", 400);
    p.set("requestdistribution", "uniform");
    let c = YcsbConfig::from_props(&p).unwrap();
    load(eng.as_ref(), &c, dir.path());
    // Flip one byte of record 3's stored value.
    let key = iolab::kv::keys::key_name(3, 1, iolab::kv::keys::InsertOrder::Hashed);
    {
        let mut s = eng.session().unwrap();
        let mut v = Vec::new();
        assert!(s.read(key.as_bytes(), &mut v).unwrap());
        let mid = v.len() / 2;
        v[mid] ^= 0x40;
        s.update(key.as_bytes(), &v).unwrap();
    }
    let o = run(
        eng.as_ref(),
        &YcsbRun::new(&c, 3, false),
        &PhaseSpec::split(400, 1, None, 3),
        dir.path(),
    )
    .unwrap();
    assert!(o.rec.mismatches > 0, "corruption not detected");
    assert!(
        o.rec.first_mismatches[0].contains(&key),
        "{:?}",
        o.rec.first_mismatches
    );
}

#[test]
fn load_statistics_are_consistent() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let opts = EngineOptions {
        sync: true,
        ..small_opts()
    };
    let eng = open(KvEngineKind::Rocksdb, dir.path(), &opts).unwrap();
    let c = DbBenchConfig {
        num: 2000,
        key_size: 16,
        key_format: iolab::kv::keys::KeyFormat::Decimal,
        value_size: 400,
        read_percent: 90,
        check_values: iolab::kv::value::CheckValues::All,
    };
    let o = run(
        eng.as_ref(),
        &DbBench::new(Bench::FillRandom, c, 1),
        &PhaseSpec::split(2000, 1, None, 1),
        dir.path(),
    )
    .unwrap();
    let l = &o.load;
    let cores = std::thread::available_parallelism().unwrap().get() as u64;
    assert!(
        l.cpu.user_ns + l.cpu.sys_ns <= l.wall_ns * cores + 20_000_000,
        "{l:?}"
    );
    assert_eq!(l.logical_written_bytes, 2000 * 416);
    assert!(l.db_size_bytes.is_some_and(|b| b > 0));
    match (&l.device, l.write_amplification) {
        (Some(_), Some(wa)) => assert!(
            wa >= 1.0,
            "durable engine with sync: write amplification {wa} < 1"
        ),
        _ => eprintln!(
            "SKIP write amplification: no /proc/diskstats device for {}",
            dir.path().display()
        ),
    }
    // db_bench readrandom after fillrandom: reads verify, misses are allowed.
    let r = run(
        eng.as_ref(),
        &DbBench::new(Bench::ReadRandom, c, 2),
        &PhaseSpec::split(2000, 2, None, 2),
        dir.path(),
    )
    .unwrap();
    assert_eq!(r.rec.mismatches, 0);
    assert!(r.rec.verified > 1000);
}

#[test]
fn readrandomwriterandom_reads_the_percent_of_every_thread() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let eng = open(KvEngineKind::Rocksdb, dir.path(), &small_opts()).unwrap();
    let c = DbBenchConfig {
        num: 1000,
        key_size: 16,
        key_format: iolab::kv::keys::KeyFormat::Decimal,
        value_size: 800,
        read_percent: 80,
        check_values: iolab::kv::value::CheckValues::All,
    };
    run(
        eng.as_ref(),
        &DbBench::new(Bench::FillSeq, c, 1),
        &PhaseSpec::split(1000, 1, None, 1),
        dir.path(),
    )
    .unwrap();
    // Two threads of 250 operations: 2 x (80+80+50 reads, 20+20 writes).
    let o = run(
        eng.as_ref(),
        &DbBench::new(Bench::ReadRandomWriteRandom, c, 2),
        &PhaseSpec::split(500, 2, None, 2),
        dir.path(),
    )
    .unwrap();
    assert_eq!(o.rec.ops[KvOp::Read.idx()], 420);
    assert_eq!(o.rec.ops[KvOp::Write.idx()], 80);
    // Every key was loaded: every read finds and verifies its value.
    assert_eq!((o.rec.not_found, o.rec.mismatches), (0, 0));
    assert_eq!(o.rec.verified, 420);
}

#[test]
fn open_loop_records_intended_latency() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let eng = open(KvEngineKind::Null, dir.path(), &small_opts()).unwrap();
    let c = cfg("a", 100, 200);
    let spec = PhaseSpec::split(200, 2, Some(2000.0), 1);
    let o = run(eng.as_ref(), &YcsbRun::new(&c, 1, false), &spec, dir.path()).unwrap();
    let read = o.rec.intended[KvOp::Read.idx()].as_ref().unwrap();
    assert!(!read.is_empty());
    // 200 ops at 2000/s take about 0.1 s.
    assert!(o.duration_ns >= 90_000_000, "{}", o.duration_ns);
}
