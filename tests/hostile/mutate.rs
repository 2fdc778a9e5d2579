//! Seeded mutations of what a peer sends: flipped bytes, truncation,
//! random bytes, extreme values in length and offset fields, garbage
//! appended. A small xorshift generator keeps every case reproducible.

/// xorshift64*: a seeded generator with no dependencies.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in 0..n (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Values a length, count or offset field is set to.
const EXTREMES: [u64; 8] = [
    0,
    1,
    0x7FFF_FFFF,
    0x8000_0000,
    0xFFFF_FFF0,
    0xFFFF_FFFF,
    0x1000_0000, // 256 MiB
    u64::MAX - 7,
];

/// `b` mutated one of five ways, chosen by `rng`.
pub fn mutate(rng: &mut Rng, mut b: Vec<u8>) -> Vec<u8> {
    match rng.below(5) {
        0 => {
            for _ in 0..=rng.below(4) {
                if !b.is_empty() {
                    let i = rng.below(b.len() as u64) as usize;
                    b[i] ^= 1 << rng.below(8);
                }
            }
            b
        }
        1 => {
            b.truncate(rng.below(b.len() as u64 + 1) as usize);
            b
        }
        2 => {
            let n = rng.below(96) as usize;
            rng.bytes(n)
        }
        3 => {
            let v = EXTREMES[rng.below(EXTREMES.len() as u64) as usize];
            let wide = rng.below(2) == 0;
            let n = if wide { 8 } else { 4 };
            if b.len() >= n {
                let at = rng.below((b.len() - n + 1) as u64) as usize;
                let (be, le) = if wide {
                    (v.to_be_bytes().to_vec(), v.to_le_bytes().to_vec())
                } else {
                    let v = v as u32;
                    (v.to_be_bytes().to_vec(), v.to_le_bytes().to_vec())
                };
                let bytes = if rng.below(2) == 0 { be } else { le };
                b[at..at + n].copy_from_slice(&bytes);
            }
            b
        }
        _ => {
            let n = rng.below(256) as usize;
            b.extend(rng.bytes(n));
            b
        }
    }
}
