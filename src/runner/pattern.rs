//! The request generator of one worker: which op, how long, where. Seeded
//! PRNG, precomputed tables, no allocation: it runs on the hot path.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::engine::OpKind;

/// One worker's share of the target and how to walk it.
#[derive(Debug, Clone)]
pub struct PatternSpec {
    pub read_pct: u8,
    pub random: bool,
    /// (block size, weight)
    pub bs: Vec<(u64, u32)>,
    /// Offsets are multiples of this (the smallest block size).
    pub align: u64,
    pub region_start: u64,
    pub region_len: u64,
    pub seed: u64,
    /// Random offsets without repeats: every block once per pass over the
    /// region, as fio's random map does (with one block size). A verified
    /// random write then stamps every block its read-back checks, where
    /// draws with repeats reach about 63% after as many writes as blocks.
    pub cover: bool,
}

/// Every slot of `[0, n)` once per `2^k >= n` draws, in a seeded order: a
/// full-period LCG modulo `2^k` (odd increment, multiplier 1 mod 4) under
/// an invertible scramble, values `>= n` skipped (fewer than half).
#[derive(Debug, Clone)]
struct Cover {
    n: u64,
    mask: u64,
    bits: u32,
    a: u64,
    c: u64,
    x: u64,
}

impl Cover {
    fn new(n: u64, rng: &mut SmallRng) -> Cover {
        let bits = 64 - n.saturating_sub(1).leading_zeros();
        let mask = if bits >= 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        Cover {
            n,
            mask,
            bits,
            a: (rng.next_u64() & !3) | 1,
            c: rng.next_u64() | 1,
            x: rng.next_u64() & mask,
        }
    }

    #[inline(always)]
    fn next(&mut self) -> u64 {
        loop {
            self.x = self.x.wrapping_mul(self.a).wrapping_add(self.c) & self.mask;
            // xor-shift and an odd multiplier are bijections modulo 2^k: the
            // LCG's weak low bits do not become an even/odd stride.
            let mut y = self.x ^ (self.x >> (self.bits / 2 + 1));
            y = y.wrapping_mul(0x9e37_79b9_7f4a_7c15) & self.mask;
            y ^= y >> (self.bits / 2 + 1);
            if y < self.n {
                return y;
            }
        }
    }
}

/// How offsets are drawn: one match per request on the hot path.
#[derive(Debug, Clone)]
enum Offsets {
    Sequential,
    /// Uniform, with repeats.
    Random,
    /// Every block once per pass (`PatternSpec::cover`, one block size).
    Covering(Cover),
}

pub struct RequestGen {
    rng: SmallRng,
    read_pct: u64,
    offsets: Offsets,
    sizes: Vec<u64>,
    /// Cumulative weights, same order as `sizes`.
    cum: Vec<u64>,
    total_weight: u64,
    /// Number of aligned start positions for each size.
    slots: Vec<u64>,
    align: u64,
    start: u64,
    end: u64,
    /// Next sequential offset per op kind (read, write).
    seq_pos: [u64; 2],
}

/// Uniform in [0, n) without division (Lemire's multiply-shift).
#[inline(always)]
fn below(r: u64, n: u64) -> u64 {
    ((r as u128 * n as u128) >> 64) as u64
}

impl RequestGen {
    /// Fails if the region cannot hold the largest block.
    pub fn new(spec: &PatternSpec) -> Result<RequestGen, String> {
        let max_bs = spec.bs.iter().map(|b| b.0).max().unwrap_or(0);
        if max_bs > spec.region_len {
            return Err(format!(
                "block size {max_bs} is larger than the region of {} bytes",
                spec.region_len
            ));
        }
        let mut cum = Vec::new();
        let mut acc = 0u64;
        for &(_, w) in &spec.bs {
            acc += w as u64;
            cum.push(acc);
        }
        let slots: Vec<u64> = spec
            .bs
            .iter()
            .map(|&(b, _)| (spec.region_len - b) / spec.align + 1)
            .collect();
        let mut rng = SmallRng::seed_from_u64(spec.seed);
        let offsets = if spec.cover && spec.random && slots.len() == 1 {
            Offsets::Covering(Cover::new(slots[0], &mut rng))
        } else if spec.random {
            Offsets::Random
        } else {
            Offsets::Sequential
        };
        Ok(RequestGen {
            rng,
            read_pct: spec.read_pct as u64,
            offsets,
            sizes: spec.bs.iter().map(|b| b.0).collect(),
            cum,
            total_weight: acc.max(1),
            slots,
            align: spec.align,
            start: spec.region_start,
            end: spec.region_start + spec.region_len,
            seq_pos: [spec.region_start; 2],
        })
    }

    #[inline(always)]
    pub fn next_request(&mut self) -> (OpKind, u64, u64) {
        let op = match self.read_pct {
            100 => OpKind::Read,
            0 => OpKind::Write,
            p => {
                if below(self.rng.next_u64(), 100) < p {
                    OpKind::Read
                } else {
                    OpKind::Write
                }
            }
        };
        let i = if self.sizes.len() == 1 {
            0
        } else {
            let r = below(self.rng.next_u64(), self.total_weight);
            self.cum.iter().position(|&c| r < c).unwrap_or(0)
        };
        let len = self.sizes[i];
        let offset = match &mut self.offsets {
            Offsets::Random => self.start + below(self.rng.next_u64(), self.slots[i]) * self.align,
            Offsets::Covering(c) => self.start + c.next() * self.align,
            Offsets::Sequential => {
                let p = &mut self.seq_pos[op.index().min(1)];
                if *p + len > self.end {
                    *p = self.start;
                }
                let o = *p;
                *p += len;
                o
            }
        };
        (op, offset, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(read_pct: u8, random: bool, bs: Vec<(u64, u32)>) -> PatternSpec {
        PatternSpec {
            read_pct,
            random,
            bs,
            align: 4096,
            region_start: 1 << 20,
            region_len: 1 << 20,
            seed: 42,
            cover: false,
        }
    }

    /// Issue 44 item 15: verified random writes reached ~63% of the
    /// blocks (draws with repeats); covering, each block comes once per pass.
    #[test]
    fn covering_offsets_visit_every_block_once_per_pass() {
        for (blocks, seed) in [(256u64, 1u64), (255, 2), (1, 3), (1000, 4)] {
            let mut s = spec(0, true, vec![(4096, 1)]);
            s.region_len = blocks * 4096;
            s.seed = seed;
            s.cover = true;
            let mut g = RequestGen::new(&s).unwrap();
            for _pass in 0..2 {
                let mut seen = vec![false; blocks as usize];
                for _ in 0..blocks {
                    let (_, off, _) = g.next_request();
                    let k = ((off - s.region_start) / 4096) as usize;
                    assert!(!seen[k], "{blocks} blocks: block {k} twice in a pass");
                    seen[k] = true;
                }
            }
            if blocks >= 256 {
                // Not a stride: consecutive draws are not all neighbours.
                let mut g = RequestGen::new(&s).unwrap();
                let offs: Vec<u64> = (0..64).map(|_| g.next_request().1).collect();
                let near = offs
                    .windows(2)
                    .filter(|w| w[0].abs_diff(w[1]) == 4096)
                    .count();
                assert!(near < 16, "{near}");
            }
        }
        // Without it, as many draws as blocks leave about 37% unvisited.
        let mut s = spec(0, true, vec![(4096, 1)]);
        s.region_len = 4096 * 4096;
        let mut g = RequestGen::new(&s).unwrap();
        let mut seen = vec![false; 4096];
        for _ in 0..4096 {
            seen[((g.next_request().1 - s.region_start) / 4096) as usize] = true;
        }
        let share = seen.iter().filter(|&&x| x).count() as f64 / 4096.0;
        assert!((0.6..0.67).contains(&share), "{share}");
    }

    #[test]
    fn random_offsets_stay_aligned_in_region() {
        let mut g = RequestGen::new(&spec(70, true, vec![(4096, 70), (65536, 30)])).unwrap();
        let (mut reads, mut big) = (0, 0);
        for _ in 0..100_000 {
            let (op, off, len) = g.next_request();
            assert_eq!(off % 4096, 0);
            assert!(off >= 1 << 20 && off + len <= 2 << 20);
            reads += (op == OpKind::Read) as u32;
            big += (len == 65536) as u32;
        }
        assert!(
            (reads as f64 / 1e5 - 0.70).abs() < 0.01,
            "read share {reads}"
        );
        assert!((big as f64 / 1e5 - 0.30).abs() < 0.01, "64k share {big}");
    }

    #[test]
    fn sequential_wraps() {
        let mut g = RequestGen::new(&spec(100, false, vec![(262144, 100)])).unwrap();
        let offs: Vec<u64> = (0..6).map(|_| g.next_request().1 - (1 << 20)).collect();
        assert_eq!(offs, vec![0, 262144, 524288, 786432, 0, 262144]);
    }

    #[test]
    fn same_seed_same_sequence_and_too_small_region() {
        let a: Vec<_> = {
            let mut g = RequestGen::new(&spec(50, true, vec![(4096, 100)])).unwrap();
            (0..100).map(|_| g.next_request()).collect()
        };
        let b: Vec<_> = {
            let mut g = RequestGen::new(&spec(50, true, vec![(4096, 100)])).unwrap();
            (0..100).map(|_| g.next_request()).collect()
        };
        assert_eq!(a, b);
        assert!(RequestGen::new(&spec(100, true, vec![(4 << 20, 100)])).is_err());
    }
}
