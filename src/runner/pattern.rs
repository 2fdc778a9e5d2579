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
}

pub struct RequestGen {
    rng: SmallRng,
    read_pct: u64,
    random: bool,
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
        let slots = spec
            .bs
            .iter()
            .map(|&(b, _)| (spec.region_len - b) / spec.align + 1)
            .collect();
        Ok(RequestGen {
            rng: SmallRng::seed_from_u64(spec.seed),
            read_pct: spec.read_pct as u64,
            random: spec.random,
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
        let offset = if self.random {
            self.start + below(self.rng.next_u64(), self.slots[i]) * self.align
        } else {
            let p = &mut self.seq_pos[op.index().min(1)];
            if *p + len > self.end {
                *p = self.start;
            }
            let o = *p;
            *p += len;
            o
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
        }
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
