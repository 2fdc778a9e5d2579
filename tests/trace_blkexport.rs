//! blktrace export: record layout and action bits, and (where blkparse is
//! installed) that blkparse reads an iolab export back with the same events.

use std::process::Command;

use iolab::trace::blkexport::{action, export, record, BLK_IO_TRACE_MAGIC};
use iolab::trace::events::{Event, Kind};
use iolab::trace::tracefs::{parse_cpu_list, TracefsCpuStats};

fn blk(ts: u64, cpu: u16, kind: Kind, sector: u64, nr: i64, rwbs: &str) -> Event {
    let mut r = [0u8; 8];
    r[..rwbs.len()].copy_from_slice(rwbs.as_bytes());
    Event {
        ts,
        cpu,
        pid: 1234,
        kind,
        dev: 254 << 20,
        a: sector,
        b: nr,
        rwbs: r,
        c: 0,
    }
}

#[test]
fn record_layout_and_actions() {
    let e = blk(5_000, 1, Kind::Queue, 4096, 8, "RS");
    let r = record(&e, 7, 1_000, 8 << 20).unwrap();
    let u32_at = |i: usize| u32::from_ne_bytes(r[i..i + 4].try_into().unwrap());
    let u64_at = |i: usize| u64::from_ne_bytes(r[i..i + 8].try_into().unwrap());
    assert_eq!(u32_at(0), BLK_IO_TRACE_MAGIC | 7);
    assert_eq!(u32_at(4), 7);
    assert_eq!(u64_at(8), 4_000);
    assert_eq!(u64_at(16), 4096);
    assert_eq!(u32_at(24), 4096);
    // __BLK_TA_QUEUE | (QUEUE | READ | SYNC | FS) << 16
    assert_eq!(u32_at(28), 1 | ((1 << 4 | 1 | 1 << 3 | 1 << 8) << 16));
    assert_eq!(u32_at(32), 1234);
    assert_eq!(u32_at(36), 8 << 20);
    assert_eq!(u32_at(40), 1);
    assert_eq!(&r[44..48], &[0, 0, 0, 0]);
    let w = action(&blk(0, 0, Kind::Complete, 0, 8, "W")).unwrap();
    assert_eq!(w, 8 | ((1 << 7 | 1 << 1 | 1 << 8) << 16));
    assert!(action(&Event {
        kind: Kind::SysEnter,
        ..e
    })
    .is_none());
}

#[test]
fn blkparse_reads_an_iolab_export() {
    let have = Command::new("blkparse").arg("-h").output().is_ok();
    if !have {
        eprintln!("SKIP blkparse_reads_an_iolab_export: blkparse not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let events = vec![
        blk(1_000, 0, Kind::Queue, 800, 8, "RS"),
        blk(2_000, 0, Kind::GetRq, 800, 8, "RS"),
        blk(3_000, 0, Kind::Insert, 800, 8, "RS"),
        blk(4_000, 0, Kind::Issue, 800, 8, "RS"),
        blk(50_000, 1, Kind::Complete, 800, 8, "RS"),
    ];
    let files = export(&events, dir.path(), "t", 8 << 20).unwrap();
    assert_eq!(files.len(), 2);
    let out = Command::new("blkparse")
        .args(["-q", "-i", "t", "-f", "%a %S %n %T.%t\n"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with("Input file"))
        .collect();
    assert_eq!(
        lines,
        [
            "Q 800 8 0.000000000",
            "G 800 8 0.000001000",
            "I 800 8 0.000002000",
            "D 800 8 0.000003000",
            "C 800 8 0.000049000"
        ],
        "{text}"
    );
}

#[test]
fn cpu_stats_and_lists() {
    let s = TracefsCpuStats::parse(
        "entries: 5\noverrun: 2\ncommit overrun: 1\nbytes: 100\noldest event ts:  1.0\nnow ts:  2.0\ndropped events: 3\nread events: 9\n",
    );
    assert_eq!(
        (s.entries, s.overrun, s.commit_overrun, s.dropped, s.read),
        (5, 2, 1, 3, 9)
    );
    assert_eq!(parse_cpu_list("0-1").unwrap(), [0, 1]);
    assert_eq!(parse_cpu_list("0,2-3,7").unwrap(), [0, 2, 3, 7]);
    assert!(parse_cpu_list("x").is_err());
}
