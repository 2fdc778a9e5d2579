//! Each engine adapter's insert, read, update, scan, delete and sequential
//! cursor on a real database.

use iolab::kv::engine::{open, EngineOptions, KvEngineKind};

fn exercise(kind: KvEngineKind) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let opts = EngineOptions {
        map_size: 1 << 30,
        cache_size: 8 << 20,
        ..EngineOptions::default()
    };
    let eng = open(kind, dir.path(), &opts).unwrap();
    assert_eq!(eng.name(), kind.name());
    assert!(!eng.version().is_empty());
    assert!(!eng.settings().is_empty());
    let mut s = eng.session().unwrap();
    for i in 0..100u32 {
        let k = format!("key{i:05}");
        s.insert(k.as_bytes(), format!("value{i}").as_bytes())
            .unwrap();
    }
    let mut out = Vec::new();
    assert!(s.read(b"key00042", &mut out).unwrap());
    assert_eq!(out, b"value42");
    assert!(!s.read(b"nokey", &mut out).unwrap());
    s.update(b"key00042", b"changed").unwrap();
    assert!(s.read(b"key00042", &mut out).unwrap());
    assert_eq!(out, b"changed");
    let mut seen = Vec::new();
    let n = s
        .scan(b"key00010", 5, &mut |k, _v| {
            seen.push(String::from_utf8_lossy(k).into_owned())
        })
        .unwrap();
    assert_eq!(n, 5);
    assert_eq!(
        seen,
        ["key00010", "key00011", "key00012", "key00013", "key00014"]
    );
    let n = s.scan(b"key00098", 10, &mut |_, _| {}).unwrap();
    assert_eq!(n, 2, "scan stops at the end");
    s.delete(b"key00042").unwrap();
    assert!(!s.read(b"key00042", &mut out).unwrap());
    // A second session (another connection for SQLite) sees the data.
    let mut s2 = eng.session().unwrap();
    assert!(s2.read(b"key00043", &mut out).unwrap());
    // readseq's cursor: every record once, in key order (more than one
    // SQLite page), then the end, then again from the first key.
    for i in 0..600u32 {
        s2.insert(format!("seq{i:05}").as_bytes(), b"v").unwrap();
    }
    let mut walked = Vec::new();
    while s
        .next_in_order(&mut |k, _| walked.push(k.to_vec()))
        .unwrap()
    {}
    assert_eq!(walked.len(), 99 + 600);
    assert!(walked.windows(2).all(|w| w[0] < w[1]), "not in key order");
    assert_eq!(walked[0], b"key00000");
    assert_eq!(walked.last().unwrap(), b"seq00599");
    let mut first = Vec::new();
    assert!(s.next_in_order(&mut |k, _| first = k.to_vec()).unwrap());
    assert_eq!(first, b"key00000", "the cursor starts again after the end");
    drop(s);
    drop(s2);
    eng.flush().unwrap();
    let _ = eng.stats();
}

#[test]
fn rocksdb_adapter() {
    exercise(KvEngineKind::Rocksdb);
}

#[test]
fn lmdb_adapter() {
    exercise(KvEngineKind::Lmdb);
}

#[test]
fn sqlite_adapter() {
    exercise(KvEngineKind::Sqlite);
}

#[test]
fn redb_adapter() {
    exercise(KvEngineKind::Redb);
}

#[test]
fn fjall_adapter() {
    exercise(KvEngineKind::Fjall);
}

#[test]
fn wiredtiger_adapter() {
    exercise(KvEngineKind::Wiredtiger);
}

/// The LSM table type runs the same operations.
#[test]
fn wiredtiger_lsm_adapter() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let opts = EngineOptions {
        wt_table: iolab::kv::engine::WtTable::Lsm,
        cache_size: 32 << 20,
        checkpoint_interval_s: 0,
        ..EngineOptions::default()
    };
    let eng = open(KvEngineKind::Wiredtiger, dir.path(), &opts).unwrap();
    assert!(eng
        .settings()
        .contains(&("table".to_string(), "lsm".to_string())));
    let mut s = eng.session().unwrap();
    for i in 0..2000u32 {
        s.insert(format!("k{i:06}").as_bytes(), &[i as u8; 100])
            .unwrap();
    }
    let mut out = Vec::new();
    assert!(s.read(b"k001234", &mut out).unwrap());
    assert_eq!(out, [1234u32 as u8; 100]);
    let n = s.scan(b"k001998", 5, &mut |_, _| {}).unwrap();
    assert_eq!(n, 2);
    drop(s);
    eng.flush().unwrap();
    drop(eng);
    // Reopened, the records are there.
    let eng = open(KvEngineKind::Wiredtiger, dir.path(), &opts).unwrap();
    assert!(eng.session().unwrap().read(b"k000007", &mut out).unwrap());
}
