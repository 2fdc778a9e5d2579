//! Random bytes to copy value bodies from, with each body's hash cached.
//!
//! db_bench's RandomGenerator idea without compressibility: a body is
//! `len` pool bytes from a random offset. Offsets are multiples of
//! `STRIDE`, so the hash of the body at each offset (`value::body_hash`)
//! for the pool's body length is computed once, the first time that
//! offset is drawn, and kept: sealing a fresh value then hashes its key,
//! not its body. Memory: one u64 per `STRIDE` pool bytes (1/8 of the pool:
//! 128 KiB for the 1 MiB pool of values up to 512 KiB, a quarter of the
//! value size above).

use super::value::{body_hash, HEADER};
use rand::Rng;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Bodies start at multiples of this many pool bytes.
pub const STRIDE: usize = 64;

pub struct BodyPool {
    data: Vec<u8>,
    /// The body length whose hashes are cached (values of the pool's size).
    body_len: usize,
    /// `body_hash` of the `body_len` bytes at `STRIDE * i`, 0 until
    /// computed (a body whose hash is 0 is hashed every time: still right).
    hashes: Vec<AtomicU64>,
}

impl BodyPool {
    /// A pool for values of `value_len` bytes (header included): at least
    /// 1 MiB and at least twice `value_len`.
    pub fn new(value_len: usize, seed: u64) -> BodyPool {
        let len = (1 << 20).max(value_len * 2);
        let mut data = vec![0u8; len];
        crate::runner::buffers::fill_random(&mut data, seed);
        let body_len = value_len.saturating_sub(HEADER);
        let hashes = (0..slots(len, body_len)).map(|_| AtomicU64::new(0));
        BodyPool {
            data,
            body_len,
            hashes: hashes.collect(),
        }
    }

    /// A random offset, a multiple of `STRIDE`, with `len` bytes after it.
    #[inline]
    fn offset<R: Rng + ?Sized>(&self, rng: &mut R, len: usize) -> usize {
        let n = slots(self.data.len(), len) as u64;
        STRIDE * (rng.next_u64() % n) as usize
    }

    /// `len` pool bytes from a random offset.
    #[inline]
    pub fn slice<R: Rng + ?Sized>(&self, rng: &mut R, len: usize) -> &[u8] {
        let off = self.offset(rng, len);
        &self.data[off..off + len]
    }

    /// Fill `out` with pool bytes from a random offset.
    #[inline]
    pub fn fill<R: Rng + ?Sized>(&self, rng: &mut R, out: &mut [u8]) {
        out.copy_from_slice(self.slice(rng, out.len()));
    }

    /// `len` pool bytes from a random offset and their `body_hash`: cached
    /// when `len` is the pool's body length, else computed.
    #[inline]
    pub fn body<R: Rng + ?Sized>(&self, rng: &mut R, len: usize) -> (&[u8], u64) {
        let off = self.offset(rng, len);
        let body = &self.data[off..off + len];
        if len != self.body_len {
            return (body, body_hash(body));
        }
        // Threads racing on a slot store the same hash.
        let slot = &self.hashes[off / STRIDE];
        match slot.load(Relaxed) {
            0 => {
                let h = body_hash(body);
                slot.store(h, Relaxed);
                (body, h)
            }
            h => (body, h),
        }
    }
}

/// How many `STRIDE`-aligned offsets of a `pool`-byte pool have `len`
/// bytes after them.
fn slots(pool: usize, len: usize) -> usize {
    assert!(len <= pool, "a body of {len} bytes from a pool of {pool}");
    (pool - len) / STRIDE + 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv::generator::tests::SplitMix64;
    use proptest::prelude::*;

    /// Bodies start at multiples of STRIDE and stay inside the pool.
    #[test]
    fn bodies_are_aligned_slices_of_the_pool() {
        let pool = BodyPool::new(400, 3);
        let mut r = SplitMix64(1);
        let base = pool.data.as_ptr() as usize;
        let mut seen = std::collections::HashSet::new();
        for _ in 0..10_000 {
            let (b, _) = pool.body(&mut r, 388);
            let off = b.as_ptr() as usize - base;
            assert_eq!(off % STRIDE, 0);
            assert!(off + 388 <= pool.data.len());
            seen.insert(off);
        }
        // ~16,000 offsets to draw from: 10,000 draws see most of them.
        assert!(seen.len() > 7_000, "{} distinct bodies", seen.len());
        let last = pool.data.len() - 388;
        assert_eq!(slots(pool.data.len(), 388), last / STRIDE + 1);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// The hash `body` hands out, cached or not, is the body's own, for
        /// every offset drawn and any length asked.
        #[test]
        fn cached_body_hash_is_the_direct_one(
            value_len in 12usize..5000,
            other in 0usize..3000,
            seed in any::<u64>(),
        ) {
            let pool = BodyPool::new(value_len, seed);
            let mut r = SplitMix64(seed);
            let body_len = value_len - HEADER;
            for i in 0..400 {
                // Mostly the cached length, sometimes another.
                let len = if i % 8 == 7 { other } else { body_len };
                let state = r.0;
                let (b, h) = pool.body(&mut r, len);
                prop_assert_eq!(b.len(), len);
                prop_assert_eq!(h, body_hash(b));
                // The same offset again: its hash now from the cache.
                let (again, h2) = pool.body(&mut SplitMix64(state), len);
                prop_assert_eq!(again.as_ptr(), b.as_ptr());
                prop_assert_eq!(h2, h);
            }
        }
    }
}
