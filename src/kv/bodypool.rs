//! Random bytes to copy value bodies from, with each body's hash cached.
//!
//! db_bench's RandomGenerator idea without compressibility: a fresh
//! value's body is `len` pool bytes, taken in pool order from where the
//! worker's `BodyCursor` stands (each worker starts at a random place), as
//! db_bench's generator hands out its data: the copies and the hash
//! lookups stream through memory, where bodies at random offsets missed
//! the cache on each (the hash slot's load was 2.6% of a fillseq's CPU
//! samples). Offsets are multiples of `STRIDE`, so the hash of the body at
//! each offset (`value::body_hash`) for the pool's body length is computed
//! once, the first time that offset is used, and kept: sealing a fresh
//! value then hashes its key, not its body. Consecutive bodies do not
//! overlap, so values stay incompressible. Memory: one u64 per `STRIDE`
//! pool bytes (1/8 of the pool: 128 KiB for the 1 MiB pool of values up
//! to 512 KiB, a quarter of the value size above).

use super::value::{body_hash, HEADER};
use rand::Rng;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Bodies start at multiples of this many pool bytes.
pub const STRIDE: usize = 64;

/// Where a worker takes its next fresh body from a `BodyPool`: a slot
/// index, reduced into the pool on use.
#[derive(Debug, Clone, Copy)]
pub struct BodyCursor(usize);

impl BodyCursor {
    /// A cursor at a random place, so workers do not all hand out the
    /// same bodies in the same order.
    pub fn random<R: Rng + ?Sized>(rng: &mut R) -> BodyCursor {
        BodyCursor(rng.next_u64() as usize)
    }
}

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
        crate::dut::verify::fill_random(&mut data, seed);
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

    /// The next `len` pool bytes from `cursor` and their `body_hash`
    /// (cached when `len` is the pool's body length, else computed); the
    /// cursor moves past them to the next `STRIDE`-aligned offset, back to
    /// the start of the pool when the rest is too short.
    #[inline]
    pub fn body(&self, cursor: &mut BodyCursor, len: usize) -> (&[u8], u64) {
        let n = slots(self.data.len(), len);
        let mut slot = cursor.0;
        if slot >= n {
            slot %= n;
        }
        cursor.0 = slot + len.div_ceil(STRIDE).max(1);
        let off = STRIDE * slot;
        let body = &self.data[off..off + len];
        if len != self.body_len {
            return (body, body_hash(body));
        }
        // Threads racing on a slot store the same hash.
        let cached = &self.hashes[slot];
        match cached.load(Relaxed) {
            0 => {
                let h = body_hash(body);
                cached.store(h, Relaxed);
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
        let mut c = BodyCursor::random(&mut SplitMix64(1));
        let base = pool.data.as_ptr() as usize;
        let mut seen = std::collections::HashSet::new();
        let mut last_end = None;
        for _ in 0..10_000 {
            let (b, _) = pool.body(&mut c, 388);
            let off = b.as_ptr() as usize - base;
            assert_eq!(off % STRIDE, 0);
            assert!(off + 388 <= pool.data.len());
            // In pool order, never overlapping the body before it, unless
            // the walk went back to the start.
            if let Some(end) = last_end {
                assert!(off >= end || off < STRIDE * 7, "{off} after {end}");
            }
            last_end = Some(off + 388);
            seen.insert(off);
        }
        // Each pass takes every 7th offset, from another one each time round.
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
            let mut c = BodyCursor::random(&mut SplitMix64(seed));
            let body_len = value_len - HEADER;
            for i in 0..400 {
                // Mostly the cached length, sometimes another.
                let len = if i % 8 == 7 { other } else { body_len };
                let at = c;
                let (b, h) = pool.body(&mut c, len);
                prop_assert_eq!(b.len(), len);
                prop_assert_eq!(h, body_hash(b));
                // The same offset again: its hash now from the cache.
                let (again, h2) = pool.body(&mut { at }, len);
                prop_assert_eq!(again.as_ptr(), b.as_ptr());
                prop_assert_eq!(h2, h);
            }
        }
    }
}
