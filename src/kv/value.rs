//! Record values that carry their own integrity check.
//!
//! Layout: `[version u64 LE][crc32 u32 LE][body ...]`; the CRC covers the
//! key, the version and the body, so a value that is corrupted, truncated,
//! stale in its header, or stored under the wrong key fails `verify`.
//! Bodies are copied from a pool of random bytes (incompressible).

use rand::Rng;

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

fn checksum(key: &[u8], version: u64, body: &[u8]) -> u32 {
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
    let crc = checksum(key, version, &value[HEADER..]);
    value[..8].copy_from_slice(&version.to_le_bytes());
    value[8..12].copy_from_slice(&crc.to_le_bytes());
}

/// Check a value read for `key`; returns its version.
#[inline]
pub fn verify(key: &[u8], value: &[u8]) -> Result<u64, Mismatch> {
    if value.len() < HEADER {
        return Err(Mismatch::TooShort(value.len()));
    }
    let version = u64::from_le_bytes(value[..8].try_into().unwrap_or([0; 8]));
    let stored = u32::from_le_bytes(value[8..12].try_into().unwrap_or([0; 4]));
    let computed = checksum(key, version, &value[HEADER..]);
    if stored != computed {
        return Err(Mismatch::Checksum { stored, computed });
    }
    Ok(version)
}

/// Random bytes to copy value bodies from (db_bench's RandomGenerator idea,
/// without compressibility).
pub struct BodyPool {
    data: Vec<u8>,
}

impl BodyPool {
    /// A pool of at least 1 MiB and at least twice `max_len`.
    pub fn new(max_len: usize, seed: u64) -> BodyPool {
        let len = (1 << 20).max(max_len * 2);
        let mut data = vec![0u8; len];
        crate::runner::buffers::fill_random(&mut data, seed);
        BodyPool { data }
    }

    /// `len` pool bytes from a random offset.
    #[inline]
    pub fn slice<R: Rng + ?Sized>(&self, rng: &mut R, len: usize) -> &[u8] {
        let max_off = self.data.len() - len;
        let off = (rng.next_u64() % (max_off as u64 + 1)) as usize;
        &self.data[off..off + len]
    }

    /// Fill `out` with pool bytes from a random offset.
    #[inline]
    pub fn fill<R: Rng + ?Sized>(&self, rng: &mut R, out: &mut [u8]) {
        out.copy_from_slice(self.slice(rng, out.len()));
    }
}

/// Build a fresh value of `len` bytes (len >= HEADER) for `key` into `out`:
/// the body is appended straight from the pool (no zero fill first), then
/// the header is written in place.
#[inline]
pub fn build<R: Rng + ?Sized>(
    pool: &BodyPool,
    rng: &mut R,
    key: &[u8],
    version: u64,
    len: usize,
    out: &mut Vec<u8>,
) {
    out.clear();
    out.extend_from_slice(&[0u8; HEADER]);
    out.extend_from_slice(pool.slice(rng, len.max(HEADER) - HEADER));
    seal(key, version, out);
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
        build(&pool, &mut r, b"user1", 7, 100, &mut v);
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
}
