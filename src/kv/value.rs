//! Record values that carry their own integrity check.
//!
//! Layout: `[version u64 LE][check u32 LE][body ...]`; the check covers the
//! key, the version and the body, so a value that is corrupted, truncated,
//! stale in its header, or stored under the wrong key fails `verify`.
//! The check folds the key's hash (seeded by version and key length) with
//! the body's hash, which does not depend on key or version: a fresh
//! value's body comes from a `BodyPool` that caches the hash of each of its
//! bodies, so sealing it hashes 16 key bytes, not 388 body bytes. `verify`
//! hashes the body it reads. Both hashes are `fold_hash` (multiply-fold
//! over 16-byte words in four independent lanes). Values written by
//! earlier iolab builds carry `chained_checksum` (key then body through one
//! `fold_hash`) or a CRC-32, which `verify` still accepts.

pub use super::bodypool::{BodyCursor, BodyPool};

/// Bytes of header before the body.
pub const HEADER: usize = 12;

/// Why a value failed verification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mismatch {
    TooShort(usize),
    Checksum { stored: u32, computed: u32 },
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mismatch::TooShort(n) => write!(
                f,
                "value of {n} bytes is shorter than its {HEADER}-byte header"
            ),
            Mismatch::Checksum { stored, computed } => {
                write!(
                    f,
                    "checksum mismatch: stored {stored:08x}, computed {computed:08x}"
                )
            }
        }
    }
}

/// Which values a db_bench-style read checks (`--check-values`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckValues {
    /// Every value of a point read or seek, one in `SAMPLE_EVERY` of a walk
    /// in key order (readseq), the default: a walk is the one benchmark
    /// where reading each value's bytes costs more than the read itself
    /// (db_bench never reads them).
    Auto,
    /// Every value read.
    All,
    /// One read in `SAMPLE_EVERY` per thread (its first, then every 64th).
    Sample,
    /// None: reads cost what db_bench's do; corruption goes unseen.
    None,
}

impl CheckValues {
    pub const ALL: [CheckValues; 4] = [
        CheckValues::Auto,
        CheckValues::All,
        CheckValues::Sample,
        CheckValues::None,
    ];
    /// `sample` checks one value in this many.
    pub const SAMPLE_EVERY: u64 = 64;

    pub fn parse(s: &str) -> Option<CheckValues> {
        Self::ALL.into_iter().find(|c| c.name() == s)
    }

    pub fn name(self) -> &'static str {
        match self {
            CheckValues::Auto => "auto",
            CheckValues::All => "all",
            CheckValues::Sample => "sample",
            CheckValues::None => "none",
        }
    }

    /// Whether the worker's `n`-th point read or seek checks its value.
    #[inline]
    pub fn due(self, n: u64) -> bool {
        match self {
            CheckValues::Auto | CheckValues::All => true,
            CheckValues::Sample => n.is_multiple_of(Self::SAMPLE_EVERY),
            CheckValues::None => false,
        }
    }

    /// Whether the worker's `n`-th step of a walk in key order checks its
    /// value.
    #[inline]
    pub fn due_in_order(self, n: u64) -> bool {
        match self {
            CheckValues::Auto => CheckValues::Sample.due(n),
            other => other.due(n),
        }
    }

    /// Whether a YCSB workload may run with this mode: YCSB checks every
    /// value it reads (`auto` means all there).
    pub fn fits_ycsb(self) -> bool {
        matches!(self, CheckValues::Auto | CheckValues::All)
    }
}

const P: [u64; 5] = [
    0xa076_1d64_78bd_642f,
    0xe703_7ed1_a0b4_28db,
    0x8ebc_6af0_9c88_c6e3,
    0x5899_65cc_7537_4cc3,
    0x1d8e_4e27_c47d_124f,
];

/// The 128-bit product of `a` and `b`, folded to 64 bits.
#[inline(always)]
fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

#[inline(always)]
fn word(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

/// A 64-bit hash of `data` from `seed`: 64-byte blocks through four
/// independent lanes (one 64x64->128 multiply per 16 bytes), then the
/// rest 16 bytes at a time (the last zero-padded) and the length. A
/// changed byte changes its lane with probability 1 - 2^-64. The
/// function is iolab's own and pinned by a test: stored values depend on it.
#[inline]
pub fn fold_hash(seed: u64, data: &[u8]) -> u64 {
    let mut lanes = [seed ^ P[0], seed ^ P[1], seed ^ P[2], seed ^ P[3]];
    let mut blocks = data.chunks_exact(64);
    for b in &mut blocks {
        for (i, lane) in lanes.iter_mut().enumerate() {
            *lane = fold(word(b, 16 * i) ^ P[i], word(b, 16 * i + 8) ^ *lane);
        }
    }
    let mut h =
        lanes[0] ^ lanes[1].rotate_left(16) ^ lanes[2].rotate_left(32) ^ lanes[3].rotate_left(48);
    let mut rest = blocks.remainder().chunks_exact(16);
    for c in &mut rest {
        h = fold(word(c, 0) ^ P[1], word(c, 8) ^ h);
    }
    let tail = rest.remainder();
    if !tail.is_empty() {
        let mut pad = [0u8; 16];
        pad[..tail.len()].copy_from_slice(tail);
        h = fold(word(&pad, 0) ^ P[2], word(&pad, 8) ^ h);
    }
    fold(h ^ P[4], data.len() as u64 ^ P[3])
}

/// The seed of a body's hash: a constant, so the hash of a pool body
/// serves every key and version it is sealed for.
const BODY_SEED: u64 = 0x2d35_8dcc_aa6c_78a5;

/// The hash of a value's body alone (what `BodyPool` caches).
#[inline]
pub fn body_hash(body: &[u8]) -> u64 {
    fold_hash(BODY_SEED, body)
}

/// The check stored in a value's header, from its body's `body_hash`.
/// Pinned by a test: stored values depend on it.
#[inline]
fn check(key: &[u8], version: u64, body_hash: u64) -> u32 {
    let seed = fold(version ^ P[0], key.len() as u64 ^ P[1]);
    fold(fold_hash(seed, key) ^ P[2], body_hash ^ P[3]) as u32
}

/// The check of values written before `check` (key then body through one
/// `fold_hash`).
fn chained_checksum(key: &[u8], version: u64, body: &[u8]) -> u32 {
    let seed = fold(version ^ P[0], key.len() as u64 ^ P[1]);
    fold_hash(fold_hash(seed, key), body) as u32
}

/// The check of values written before `fold_hash` (CRC-32).
fn legacy_checksum(key: &[u8], version: u64, body: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&(key.len() as u32).to_le_bytes());
    h.update(key);
    h.update(&version.to_le_bytes());
    h.update(body);
    h.finalize()
}

/// Seal `value` (header + body already in place) for `key` at `version`.
#[inline]
pub fn seal(key: &[u8], version: u64, value: &mut [u8]) {
    debug_assert!(value.len() >= HEADER);
    let h = body_hash(&value[HEADER..]);
    seal_hashed(key, version, h, value);
}

/// Seal `value` whose body's `body_hash` is known (a pool body's, cached).
#[inline]
pub fn seal_hashed(key: &[u8], version: u64, body_hash: u64, value: &mut [u8]) {
    let c = check(key, version, body_hash);
    value[..8].copy_from_slice(&version.to_le_bytes());
    value[8..12].copy_from_slice(&c.to_le_bytes());
}

/// Check a value read for `key`; returns its version.
#[inline]
pub fn verify(key: &[u8], value: &[u8]) -> Result<u64, Mismatch> {
    if value.len() < HEADER {
        return Err(Mismatch::TooShort(value.len()));
    }
    let version = u64::from_le_bytes(value[..8].try_into().unwrap_or([0; 8]));
    let stored = u32::from_le_bytes(value[8..12].try_into().unwrap_or([0; 4]));
    let body = &value[HEADER..];
    let computed = check(key, version, body_hash(body));
    // Older formats only when the current check fails: a good value costs
    // one check. Accepting three 32-bit checks lets a corrupted value
    // through with probability ~3 in 2^32.
    if stored != computed
        && stored != chained_checksum(key, version, body)
        && stored != legacy_checksum(key, version, body)
    {
        return Err(Mismatch::Checksum { stored, computed });
    }
    Ok(version)
}

/// Build a fresh value of `len` bytes (len >= HEADER) for `key` into `out`:
/// the body is appended straight from the pool at `cursor` (no zero fill
/// first), then the header is written in place from the body's cached hash.
#[inline]
pub fn build(
    pool: &BodyPool,
    cursor: &mut BodyCursor,
    key: &[u8],
    version: u64,
    len: usize,
    out: &mut Vec<u8>,
) {
    out.clear();
    out.extend_from_slice(&[0u8; HEADER]);
    let (body, h) = pool.body(cursor, len.max(HEADER) - HEADER);
    out.extend_from_slice(body);
    seal_hashed(key, version, h, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv::generator::tests::SplitMix64;

    #[test]
    fn roundtrip_and_corruption() {
        let pool = BodyPool::new(100, 1);
        let mut r = SplitMix64(5);
        let mut v = Vec::new();
        build(
            &pool,
            &mut BodyCursor::random(&mut r),
            b"user1",
            7,
            100,
            &mut v,
        );
        assert_eq!(v.len(), 100);
        assert_eq!(verify(b"user1", &v), Ok(7));
        assert!(verify(b"user2", &v).is_err(), "wrong key");
        let mut bad = v.clone();
        bad[50] ^= 1;
        assert!(verify(b"user1", &bad).is_err(), "flipped body bit");
        let mut bad = v.clone();
        bad[0] ^= 1;
        assert!(verify(b"user1", &bad).is_err(), "changed version");
        assert_eq!(verify(b"user1", &v[..5]), Err(Mismatch::TooShort(5)));
    }

    /// Stored values depend on the hash: it must not change between
    /// versions of iolab (a kept --db is read by later ones).
    #[test]
    fn fold_hash_is_pinned() {
        let data: Vec<u8> = (0..=255u8).cycle().take(416).collect();
        assert_eq!(fold_hash(0, b""), 0xcc97_28a9_fb64_3ab2);
        assert_eq!(fold_hash(7, &data), 0x6460_54b8_3cee_abfc);
        assert_eq!(chained_checksum(b"0000000000000042", 3, &data), 0x7a54_ab54);
    }

    /// The current check, pinned like `fold_hash`.
    #[test]
    fn check_is_pinned() {
        let data: Vec<u8> = (0..=255u8).cycle().take(388).collect();
        assert_eq!(body_hash(&data), 0xfde6_aa54_5114_7346);
        assert_eq!(check(b"0000000000000042", 3, body_hash(&data)), 0xf8ff_23ba);
    }

    /// `build` seals from the pool's cached body hash: the same value as
    /// hashing the body.
    #[test]
    fn built_values_equal_values_sealed_by_hashing_the_body() {
        let pool = BodyPool::new(400, 4);
        let mut r = SplitMix64(6);
        let mut v = Vec::new();
        for n in 0..2000u64 {
            let key = format!("{n:016}");
            build(
                &pool,
                &mut BodyCursor::random(&mut r),
                key.as_bytes(),
                n,
                400,
                &mut v,
            );
            let mut again = v.clone();
            again[..HEADER].fill(0);
            seal(key.as_bytes(), n, &mut again);
            assert_eq!(again, v, "record {n}");
            assert_eq!(verify(key.as_bytes(), &v), Ok(n));
        }
    }

    /// A truncated or extended value fails even when its header is intact.
    #[test]
    fn truncated_or_extended_values_fail() {
        let pool = BodyPool::new(400, 5);
        let mut r = SplitMix64(2);
        let mut v = Vec::new();
        build(&pool, &mut BodyCursor::random(&mut r), b"k", 1, 400, &mut v);
        for len in [HEADER, HEADER + 1, 200, 399] {
            assert!(verify(b"k", &v[..len]).is_err(), "{len} bytes");
        }
        v.push(0);
        assert!(verify(b"k", &v).is_err(), "one byte more");
    }

    /// An update (YCSB's update and read-modify-write) rewrites part of the
    /// body and seals the value again with the next version: it verifies at
    /// that version; the new bytes under the old header do not.
    #[test]
    fn rewritten_values_verify_at_their_new_version() {
        let pool = BodyPool::new(400, 8);
        let mut r = SplitMix64(3);
        let key = b"user42";
        let mut v = Vec::new();
        build(&pool, &mut BodyCursor::random(&mut r), key, 4, 400, &mut v);
        let old = v.clone();
        pool.fill(&mut r, &mut v[HEADER + 100..HEADER + 200]);
        let mut unsealed = v.clone();
        seal(key, 5, &mut v);
        assert_eq!(verify(key, &v), Ok(5));
        assert!(verify(key, &unsealed).is_err(), "new body, old header");
        unsealed[..8].copy_from_slice(&5u64.to_le_bytes());
        assert!(verify(key, &unsealed).is_err(), "new body, old check");
        let mut stale = old.clone();
        stale[..8].copy_from_slice(&5u64.to_le_bytes());
        assert!(verify(key, &stale).is_err(), "old value, new version");
        assert_eq!(verify(key, &old), Ok(4));
    }

    /// Values sealed by the build before `check` (`chained_checksum`) still
    /// verify, and still fail when changed.
    #[test]
    fn chained_checksum_values_of_older_versions_verify() {
        let key = b"0000000000000009";
        let mut v = vec![0u8; HEADER];
        v.extend((0..388u32).map(|i| (i * 7) as u8));
        let c = chained_checksum(key, 2, &v[HEADER..]);
        v[..8].copy_from_slice(&2u64.to_le_bytes());
        v[8..12].copy_from_slice(&c.to_le_bytes());
        assert_ne!(c, check(key, 2, body_hash(&v[HEADER..])));
        assert_eq!(verify(key, &v), Ok(2));
        for at in [0, 8, HEADER, 300, v.len() - 1] {
            let mut bad = v.clone();
            bad[at] ^= 0x10;
            assert!(verify(key, &bad).is_err(), "byte {at}");
        }
        assert!(verify(b"0000000000000008", &v).is_err(), "wrong key");
        assert!(verify(key, &v[..v.len() - 1]).is_err(), "truncated");
    }

    /// Every single-bit flip of a 400-byte value (header, body) and of its
    /// key is caught.
    #[test]
    fn every_bit_flip_is_caught() {
        let pool = BodyPool::new(400, 2);
        let mut r = SplitMix64(9);
        let key = b"0000000000012345".to_vec();
        let mut v = Vec::new();
        build(
            &pool,
            &mut BodyCursor::random(&mut r),
            &key,
            11,
            400,
            &mut v,
        );
        assert_eq!(verify(&key, &v), Ok(11));
        for bit in 0..v.len() * 8 {
            let mut bad = v.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(verify(&key, &bad).is_err(), "value bit {bit}");
        }
        for bit in 0..key.len() * 8 {
            let mut k = key.clone();
            k[bit / 8] ^= 1 << (bit % 8);
            assert!(verify(&k, &v).is_err(), "key bit {bit}");
        }
    }

    /// Values iolab wrote with its former CRC-32 check still verify.
    #[test]
    fn crc32_values_of_older_versions_verify() {
        let key = b"user7";
        let mut v = vec![0u8; HEADER];
        v.extend_from_slice(b"an old body");
        let crc = legacy_checksum(key, 5, &v[HEADER..]);
        v[..8].copy_from_slice(&5u64.to_le_bytes());
        v[8..12].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(verify(key, &v), Ok(5));
        v[HEADER] ^= 1;
        assert!(verify(key, &v).is_err());
    }

    #[test]
    fn check_modes() {
        for c in CheckValues::ALL {
            assert_eq!(CheckValues::parse(c.name()), Some(c));
        }
        assert_eq!(CheckValues::parse("some"), None);
        let due = |c: CheckValues| (0..640).filter(|&n| c.due(n)).count();
        assert_eq!(due(CheckValues::All), 640);
        assert_eq!(due(CheckValues::Auto), 640);
        let in_order = |c: CheckValues| (0..640).filter(|&n| c.due_in_order(n)).count();
        assert_eq!(in_order(CheckValues::Auto), 10);
        assert_eq!(in_order(CheckValues::All), 640);
        assert_eq!(in_order(CheckValues::None), 0);
        assert_eq!(due(CheckValues::Sample), 10);
        assert_eq!(due(CheckValues::None), 0);
    }
}
