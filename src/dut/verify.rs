//! The content iolab puts on a target's blocks: random, incompressible
//! bytes from a seed (`fill_random`; scratch files, write buffers, kv
//! values) and the on-disk format of verified data, which the scratch
//! file's layout and the runner's checks share (here in dut/, below the
//! runner). A written block is stamped in
//! units (4 KiB when its size is a multiple of 4 KiB, else 512 bytes, else
//! the block itself), each unit opening with a 56-byte header: magic, the
//! unit's offset, the writer's run id and sequence number, the write's
//! start and length, the unit's length, and a checksum over header and
//! payload. A read is checked unit by unit, so a 4 KiB read inside a 64 KiB
//! stamped write verifies and two corrupted units in one read are two
//! mismatches, each at its offset.
//!
//! Like fio, only what a --verify pass wrote is checked: a unit without a
//! stamp (zeroes, another program's data) is counted as never written, not
//! as a mismatch, unless this run wrote it or a stamped unit of the same
//! read says its write covered it (garbage over part of a stamped block).
//! A stamp whose magic is right but whose offset, length or checksum is
//! wrong is corruption; a good stamp from an older write of this run is
//! stale data.

use std::sync::atomic::{AtomicU64, Ordering};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};

use crate::measure::clock::mono_now_ns;

pub const HEADER_LEN: usize = 56;
/// The smallest block --verify can stamp: a header and as much payload.
pub const MIN_UNIT: usize = crate::plan::job::MIN_VERIFIED_BLOCK as usize;
const _: () = assert!(MIN_UNIT == 2 * HEADER_LEN);
const MAX_UNIT: usize = 4096;
/// Blocks of sizes that are no multiple of 512 are one unit, up to --bs's 1 GiB.
const MAX_STAMPED_BLOCK: u64 = 1 << 30;
const MAGIC: u64 = u64::from_le_bytes(*b"iolabv02");

/// Who wrote a unit: the run (random per worker and run) and the write's
/// sequence number within it. Scratch files are laid out as run 0, seq 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub run: u64,
    pub seq: u64,
}

/// Why a unit failed verification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockMismatch {
    /// No stamp where a --verify write put one (this run's, or the one a
    /// neighbouring unit of the read names).
    NoStamp,
    /// Magic right, length fields impossible or not what this run wrote.
    BadLength { found: u64 },
    /// Header names another offset (misdirected write or read).
    WrongOffset { found: u64 },
    /// Valid unit from an older write (of this run or an earlier one).
    Stale { found: Stamp, expected: Stamp },
    /// Header or payload does not match the checksum.
    BadChecksum,
}

impl BlockMismatch {
    pub fn describe(&self) -> String {
        match self {
            BlockMismatch::NoStamp => "no iolab stamp inside a block written with --verify".into(),
            BlockMismatch::BadLength { found } => format!("stamp names a length of {found} bytes"),
            BlockMismatch::WrongOffset { found } => format!("stamp says offset {found}"),
            BlockMismatch::Stale { found, expected } => format!(
                "stale data: run {:x} sequence {}, expected run {:x} sequence {}",
                found.run, found.seq, expected.run, expected.seq
            ),
            BlockMismatch::BadChecksum => "checksum mismatch (data corrupted)".into(),
        }
    }
}

/// What checking one read found, unit by unit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadTally {
    /// Units checked against a stamp (good or not).
    pub checked: u64,
    /// Units without a stamp no write of this run or of the read's stamps
    /// covered, and units of a stamp larger than the read (a 512-byte read
    /// of 4 KiB stamps): not checked.
    pub never_written: u64,
    pub mismatches: u64,
}

/// A run id for a worker's writes: differs between runs and workers, so
/// a block a lost write left from an earlier run is stale, not current.
pub fn new_run_id() -> u64 {
    static WORKERS: AtomicU64 = AtomicU64::new(0);
    let n = WORKERS.fetch_add(1, Ordering::Relaxed);
    let seed = [mono_now_ns(), u64::from(std::process::id()), n];
    let bytes: Vec<u8> = seed.iter().flat_map(|v| v.to_le_bytes()).collect();
    xxh3_64(&bytes) | 1
}

/// The stamp unit of blocks of `bs` bytes.
pub fn unit_for(bs: u64) -> usize {
    let bs = bs as usize;
    if bs.is_multiple_of(MAX_UNIT) {
        MAX_UNIT
    } else if bs.is_multiple_of(512) {
        512
    } else {
        bs
    }
}

fn read_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn read_u32(b: &[u8], at: usize) -> u64 {
    u64::from(u32::from_le_bytes(
        b[at..at + 4].try_into().expect("4 bytes"),
    ))
}

fn checksum(unit: &[u8]) -> u64 {
    xxh3_64_with_seed(&unit[HEADER_LEN..], xxh3_64(&unit[..HEADER_LEN - 8]))
}

/// Stamp every unit of `block`, written at `offset`, as written by `by`
/// (payload left as is). Units too short for a header stay unstamped.
pub fn stamp(block: &mut [u8], offset: u64, by: Stamp) {
    let unit = unit_for(block.len() as u64);
    let write_len = block.len() as u32;
    for (i, u) in block.chunks_mut(unit).enumerate() {
        if u.len() < MIN_UNIT {
            continue;
        }
        let unit_len = u.len() as u32;
        u[0..8].copy_from_slice(&MAGIC.to_le_bytes());
        u[8..16].copy_from_slice(&(offset + (i * unit) as u64).to_le_bytes());
        u[16..24].copy_from_slice(&by.run.to_le_bytes());
        u[24..32].copy_from_slice(&by.seq.to_le_bytes());
        u[32..40].copy_from_slice(&offset.to_le_bytes());
        u[40..44].copy_from_slice(&write_len.to_le_bytes());
        u[44..48].copy_from_slice(&unit_len.to_le_bytes());
        let sum = checksum(u);
        u[48..56].copy_from_slice(&sum.to_le_bytes());
    }
}

/// Check `buf`, read at `offset`, unit by unit. `expected` is the stamp of
/// this run's last write of the whole block (`None`: this run did not
/// write it, so an earlier pass's stamps are checked). Each mismatch is
/// passed to `on_mismatch` with its unit's offset.
pub fn check(
    buf: &[u8],
    offset: u64,
    expected: Option<Stamp>,
    mut on_mismatch: impl FnMut(u64, BlockMismatch),
) -> ReadTally {
    let own_unit = unit_for(buf.len() as u64);
    let mut tally = ReadTally::default();
    let mut bad = |tally: &mut ReadTally, at: u64, m| {
        tally.checked += 1;
        tally.mismatches += 1;
        on_mismatch(at, m);
    };
    // Unstamped units not yet judged (from, to in `buf`), and the write
    // the good unit before them named.
    let mut pending: Option<(usize, usize, Option<Span>)> = None;
    let mut last_write = None;
    let mut at = 0;
    while at < buf.len() {
        let unit_offset = offset + at as u64;
        let (step, outcome) = check_unit(&buf[at..], unit_offset, expected, own_unit);
        let next_write = match outcome {
            Outcome::Good(write) => Some(write),
            _ => None,
        };
        if !matches!(outcome, Outcome::Unstamped) {
            if let Some((from, to, before)) = pending.take() {
                let writes = [before, next_write];
                for (i, m) in unstamped_units(from, to, own_unit, offset, &writes) {
                    match m {
                        Some(m) => bad(&mut tally, i, m),
                        None => tally.never_written += 1,
                    }
                }
            }
        }
        match outcome {
            Outcome::Good(write) => {
                tally.checked += 1;
                last_write = Some(write);
            }
            Outcome::Unstamped => {
                let from = pending.map_or(at, |p| p.0);
                let before = pending.map_or(last_write, |p| p.2);
                pending = Some((from, at + step, before));
            }
            Outcome::Partial => tally.never_written += 1,
            Outcome::Bad(m) => {
                bad(&mut tally, unit_offset, m);
                last_write = None;
            }
        }
        at += step;
    }
    if let Some((from, to, before)) = pending {
        for (i, m) in unstamped_units(from, to, own_unit, offset, &[before, None]) {
            match m {
                Some(m) => bad(&mut tally, i, m),
                None => tally.never_written += 1,
            }
        }
    }
    tally
}

/// The offsets of the unstamped units in `buf[from..to]` (read at
/// `offset`), each with a mismatch when one of `writes` covered it.
fn unstamped_units(
    from: usize,
    to: usize,
    unit: usize,
    offset: u64,
    writes: &[Option<Span>; 2],
) -> impl Iterator<Item = (u64, Option<BlockMismatch>)> + '_ {
    (from..to).step_by(unit).map(move |at| {
        let at = offset + at as u64;
        let covered = writes.iter().flatten().any(|w| w.covers(at));
        (at, covered.then_some(BlockMismatch::NoStamp))
    })
}

/// The bytes one stamped write covered.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: u64,
    len: u64,
}

impl Span {
    fn covers(&self, at: u64) -> bool {
        self.start <= at && at - self.start < self.len
    }
}

enum Outcome {
    /// A good stamp, naming the write it was part of.
    Good(Span),
    /// No stamp (judged once the read's stamped neighbours are known).
    Unstamped,
    /// A stamp larger than the rest of the read: cannot be checked.
    Partial,
    Bad(BlockMismatch),
}

/// Check the unit at the start of `rest`: how far to step, and the outcome.
fn check_unit(
    rest: &[u8],
    offset: u64,
    expected: Option<Stamp>,
    own_unit: usize,
) -> (usize, Outcome) {
    let skip = own_unit.min(rest.len());
    if rest.len() < 8 || read_u64(rest, 0) != MAGIC {
        return match expected {
            Some(_) => (skip, Outcome::Bad(BlockMismatch::NoStamp)),
            None => (skip, Outcome::Unstamped),
        };
    }
    if rest.len() < HEADER_LEN {
        return (skip, Outcome::Bad(BlockMismatch::BadLength { found: 0 }));
    }
    let len = read_u32(rest, 44);
    let write = Span {
        start: read_u64(rest, 32),
        len: read_u32(rest, 40),
    };
    if !(MIN_UNIT as u64..=MAX_STAMPED_BLOCK).contains(&len) || len > write.len {
        return (skip, Outcome::Bad(BlockMismatch::BadLength { found: len }));
    }
    let len = len as usize;
    if expected.is_some() && len != own_unit {
        return (
            skip,
            Outcome::Bad(BlockMismatch::BadLength { found: len as u64 }),
        );
    }
    if len > rest.len() {
        return (rest.len(), Outcome::Partial);
    }
    let unit = &rest[..len];
    if checksum(unit) != read_u64(unit, 48) {
        return (len, Outcome::Bad(BlockMismatch::BadChecksum));
    }
    let found_offset = read_u64(unit, 8);
    if found_offset != offset || !write.covers(offset) {
        return (
            len,
            Outcome::Bad(BlockMismatch::WrongOffset {
                found: found_offset,
            }),
        );
    }
    let found = Stamp {
        run: read_u64(unit, 16),
        seq: read_u64(unit, 24),
    };
    match expected {
        Some(e) if e != found => (
            len,
            Outcome::Bad(BlockMismatch::Stale { found, expected: e }),
        ),
        _ => (len, Outcome::Good(write)),
    }
}

/// Fill with pseudo-random (incompressible) bytes from a seed.
pub fn fill_random(buf: &mut [u8], seed: u64) {
    SmallRng::seed_from_u64(seed).fill_bytes(buf);
}

#[cfg(test)]
mod tests {
    use super::*;

    const BY: Stamp = Stamp { run: 9, seq: 5 };

    fn block(len: usize, offset: u64, by: Stamp) -> Vec<u8> {
        let mut b: Vec<u8> = (0..len as u32).map(|i| (i * 7 + 3) as u8).collect();
        stamp(&mut b, offset, by);
        b
    }

    /// Check `b` at `offset`: the tally and each mismatch with its offset.
    fn run_check(
        b: &[u8],
        offset: u64,
        e: Option<Stamp>,
    ) -> (ReadTally, Vec<(u64, BlockMismatch)>) {
        let mut found = Vec::new();
        let t = check(b, offset, e, |o, m| found.push((o, m)));
        (t, found)
    }

    fn good(units: u64) -> ReadTally {
        ReadTally {
            checked: units,
            ..ReadTally::default()
        }
    }

    #[test]
    fn roundtrip_and_every_failure() {
        let b = block(4096, 8192, BY);
        assert_eq!(run_check(&b, 8192, Some(BY)), (good(1), vec![]));
        assert_eq!(run_check(&b, 8192, None), (good(1), vec![]));
        let (_, m) = run_check(&b, 4096, None);
        assert_eq!(m, vec![(4096, BlockMismatch::WrongOffset { found: 8192 })]);
        let newer = Stamp { run: 9, seq: 6 };
        let (_, m) = run_check(&b, 8192, Some(newer));
        assert_eq!(
            m,
            vec![(
                8192,
                BlockMismatch::Stale {
                    found: BY,
                    expected: newer
                }
            )]
        );
        let mut c = b.clone();
        c[1000] ^= 1;
        assert_eq!(
            run_check(&c, 8192, None).1,
            vec![(8192, BlockMismatch::BadChecksum)]
        );
        // A damaged header field is caught by the checksum too.
        let mut h = b.clone();
        h[20] ^= 1;
        assert_eq!(
            run_check(&h, 8192, None).1,
            vec![(8192, BlockMismatch::BadChecksum)]
        );
        let mut l = b.clone();
        l[45] ^= 1;
        assert_eq!(run_check(&l, 8192, None).0.mismatches, 1);
    }

    /// Data without a stamp is never written, not corrupted (issue 28
    /// item 9: every such read was a mismatch and the run exited 3),
    /// unless this run wrote it.
    #[test]
    fn unstamped_data_is_never_written_unless_this_run_wrote_it() {
        let zeroes = vec![0u8; 65536];
        let t = run_check(&zeroes, 0, None);
        assert_eq!(
            t,
            (
                ReadTally {
                    never_written: 16,
                    ..ReadTally::default()
                },
                vec![]
            )
        );
        let random: Vec<u8> = (0..4096u32).map(|i| (i * 131 % 251) as u8).collect();
        assert_eq!(run_check(&random, 4096, None).0.never_written, 1);
        let (t, m) = run_check(&zeroes[..4096], 4096, Some(BY));
        assert_eq!((t.mismatches, m), (1, vec![(4096, BlockMismatch::NoStamp)]));
    }

    /// A 4 KiB read inside a 64 KiB stamped write verifies (it was a
    /// mismatch before: the only header was at the write's start).
    #[test]
    fn smaller_reads_inside_a_stamped_block_verify() {
        let b = block(65536, 1 << 20, BY);
        for i in 0..16 {
            let at = i * 4096;
            let read = &b[at..at + 4096];
            assert_eq!(
                run_check(read, (1 << 20) + at as u64, None),
                (good(1), vec![])
            );
        }
        // A read smaller than the stamp unit cannot check it.
        assert_eq!(run_check(&b[..512], 1 << 20, None).0.never_written, 1);
        assert_eq!(
            run_check(&b[512..1024], (1 << 20) + 512, None).0.mismatches,
            0
        );
    }

    /// Two corrupted units in one 64 KiB read are two mismatches, each at
    /// its own offset (they were one before).
    #[test]
    fn each_corrupted_unit_is_located() {
        let mut b = block(65536, 0, BY);
        b[3 * 4096 + 100] ^= 1;
        b[9 * 4096..10 * 4096].fill(0xa5);
        let (t, m) = run_check(&b, 0, Some(BY));
        assert_eq!(t.checked, 16);
        assert_eq!(
            m,
            vec![
                (3 * 4096, BlockMismatch::BadChecksum),
                (9 * 4096, BlockMismatch::NoStamp)
            ]
        );
        // Read by a later run, the garbage unit has no stamp, but its
        // neighbours say their write covered it.
        let (t, m) = run_check(&b, 0, None);
        assert_eq!((t.checked, t.never_written), (16, 0));
        assert_eq!(
            m,
            vec![
                (3 * 4096, BlockMismatch::BadChecksum),
                (9 * 4096, BlockMismatch::NoStamp)
            ]
        );
        // Also when the garbage opens the read.
        let mut first = block(65536, 0, BY);
        first[..8192].fill(0);
        let (_, m) = run_check(&first, 0, None);
        assert_eq!(
            m,
            vec![(0, BlockMismatch::NoStamp), (4096, BlockMismatch::NoStamp)]
        );
    }

    /// Unstamped units between stamped writes that did not cover them were
    /// never written: nothing is claimed for them.
    #[test]
    fn gaps_between_stamped_writes_are_never_written() {
        let mut b = block(4096, 0, BY);
        b.extend(vec![0u8; 8192]);
        b.extend(block(4096, 12288, BY));
        assert_eq!(
            run_check(&b, 0, None),
            (
                ReadTally {
                    checked: 2,
                    never_written: 2,
                    mismatches: 0
                },
                vec![]
            )
        );
    }

    /// Reads larger than the blocks an earlier pass stamped, and stamps at
    /// 512 bytes for block sizes that are not multiples of 4 KiB.
    #[test]
    fn units_follow_the_stamp_not_the_read() {
        let mut b = Vec::new();
        for i in 0..4u64 {
            b.extend(block(1536, i * 1536, Stamp { run: 1, seq: i }));
        }
        assert_eq!(unit_for(1536), 512);
        assert_eq!(run_check(&b[..4096], 0, None), (good(8), vec![]));
        assert_eq!(unit_for(1000), 1000);
        let odd = block(1000, 0, BY);
        assert_eq!(run_check(&odd, 0, Some(BY)), (good(1), vec![]));
        let tiny = block(64, 0, BY);
        assert_eq!(run_check(&tiny, 0, None).0.never_written, 1);
    }
}
