//! Export of block events in blktrace's binary format (struct blk_io_trace,
//! one `<name>.blktrace.<cpu>` file per CPU) so `blkparse` and `btt` can read
//! an iolab capture.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::events::{Event, Kind};

pub const BLK_IO_TRACE_MAGIC: u32 = 0x6561_7400;
pub const BLK_IO_TRACE_VERSION: u32 = 0x07;

// Action codes (__BLK_TA_*) and categories (BLK_TC_*), from linux/blktrace_api.h.
const TA_QUEUE: u32 = 1;
const TA_BACKMERGE: u32 = 2;
const TA_FRONTMERGE: u32 = 3;
const TA_GETRQ: u32 = 4;
const TA_REQUEUE: u32 = 6;
const TA_ISSUE: u32 = 7;
const TA_COMPLETE: u32 = 8;
const TA_INSERT: u32 = 12;
const TA_SPLIT: u32 = 13;
const TC_READ: u32 = 1 << 0;
const TC_WRITE: u32 = 1 << 1;
const TC_FLUSH: u32 = 1 << 2;
const TC_SYNC: u32 = 1 << 3;
const TC_QUEUE: u32 = 1 << 4;
const TC_REQUEUE: u32 = 1 << 5;
const TC_ISSUE: u32 = 1 << 6;
const TC_COMPLETE: u32 = 1 << 7;
const TC_FS: u32 = 1 << 8;
const TC_AHEAD: u32 = 1 << 11;
const TC_META: u32 = 1 << 12;
const TC_DISCARD: u32 = 1 << 13;
const TC_FUA: u32 = 1 << 15;
const TC_SHIFT: u32 = 16;

/// The `action` word of an event (None for non-block events).
pub fn action(e: &Event) -> Option<u32> {
    let (code, cat) = match e.kind {
        Kind::Queue => (TA_QUEUE, TC_QUEUE),
        Kind::BackMerge => (TA_BACKMERGE, TC_QUEUE),
        Kind::FrontMerge => (TA_FRONTMERGE, TC_QUEUE),
        Kind::GetRq => (TA_GETRQ, TC_QUEUE),
        Kind::Insert => (TA_INSERT, TC_QUEUE),
        Kind::Issue => (TA_ISSUE, TC_ISSUE),
        Kind::Requeue => (TA_REQUEUE, TC_REQUEUE),
        Kind::Complete => (TA_COMPLETE, TC_COMPLETE),
        Kind::Split => (TA_SPLIT, 0),
        _ => return None,
    };
    let mut tc = cat;
    let rwbs = e.rwbs_str();
    let mut chars = rwbs.chars().peekable();
    if chars.peek() == Some(&'F') {
        tc |= TC_FLUSH; // a leading F is a preflush
        chars.next();
    }
    for c in chars {
        tc |= match c {
            'W' => TC_WRITE,
            'R' => TC_READ,
            'D' => TC_DISCARD,
            'S' => TC_SYNC,
            'M' => TC_META,
            'A' => TC_AHEAD,
            'F' => TC_FUA,
            _ => 0,
        };
    }
    if tc & (TC_WRITE | TC_DISCARD) == 0 {
        tc |= TC_READ;
    }
    if tc & TC_WRITE != 0 {
        tc &= !TC_READ;
    }
    Some(code | ((tc | TC_FS) << TC_SHIFT))
}

/// One 48-byte blk_io_trace record (native endian, no payload).
pub fn record(e: &Event, seq: u32, t0: u64, device: u32) -> Option<[u8; 48]> {
    let act = action(e)?;
    let (sector, bytes, error) = match e.kind {
        Kind::Split => (e.a, 0u32, 0u16),
        Kind::Complete => (
            e.a,
            (e.b as u32).saturating_mul(512),
            e.c as i32 as i16 as u16,
        ),
        _ => (e.a, (e.b as u32).saturating_mul(512), 0),
    };
    let mut r = [0u8; 48];
    r[0..4].copy_from_slice(&(BLK_IO_TRACE_MAGIC | BLK_IO_TRACE_VERSION).to_ne_bytes());
    r[4..8].copy_from_slice(&seq.to_ne_bytes());
    r[8..16].copy_from_slice(&e.ts.saturating_sub(t0).to_ne_bytes());
    r[16..24].copy_from_slice(&sector.to_ne_bytes());
    r[24..28].copy_from_slice(&bytes.to_ne_bytes());
    r[28..32].copy_from_slice(&act.to_ne_bytes());
    r[32..36].copy_from_slice(&(e.pid as u32).to_ne_bytes());
    r[36..40].copy_from_slice(&device.to_ne_bytes());
    r[40..44].copy_from_slice(&u32::from(e.cpu).to_ne_bytes());
    r[44..46].copy_from_slice(&error.to_ne_bytes());
    // pdu_len (46..48) stays 0. For a split, blktrace puts the new sector in the pdu;
    // iolab leaves it out (blkparse prints the split without it).
    Some(r)
}

/// Write `<dir>/<name>.blktrace.<cpu>` files; `device` is the dev_t to record
/// (kernel format, major << 20 | minor). Returns the files written.
pub fn export(events: &[Event], dir: &Path, name: &str, device: u32) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let t0 = events
        .iter()
        .find(|e| e.kind.is_block())
        .map(|e| e.ts)
        .unwrap_or(0);
    let mut per_cpu: std::collections::BTreeMap<u16, (Vec<u8>, u32)> = Default::default();
    // blkparse reads cpu files 0, 1, ... until one is missing: write them all.
    let max_cpu = events.iter().map(|e| e.cpu).max().unwrap_or(0);
    for cpu in 0..=max_cpu {
        per_cpu.insert(cpu, Default::default());
    }
    for e in events {
        let entry = per_cpu.entry(e.cpu).or_default();
        if let Some(r) = record(e, entry.1, t0, device) {
            entry.0.extend_from_slice(&r);
            entry.1 += 1;
        }
    }
    let mut files = Vec::new();
    for (cpu, (bytes, _)) in per_cpu {
        let p = dir.join(format!("{name}.blktrace.{cpu}"));
        let mut f =
            std::fs::File::create(&p).with_context(|| format!("creating {}", p.display()))?;
        f.write_all(&bytes)?;
        files.push(p);
    }
    Ok(files)
}
