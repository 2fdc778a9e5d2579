//! Seeded mutations of what a peer sends: flipped bytes, truncation,
//! random bytes, extreme values in length and offset fields, garbage
//! appended. A small xorshift generator keeps every case reproducible.

/// xorshift64*: a seeded generator with no dependencies.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // splitmix64, so that neighbouring seeds start far apart.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)) | 1)
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

/// Values an 8-byte offset field is set to (some wrap around when a
/// length is added).
const EXTREMES_64: [u64; 5] = [u64::MAX - 7, u64::MAX, 1 << 63, (1 << 63) + 12345, 0];

/// Where a protocol's headers keep their lengths and offsets.
#[derive(Debug, Clone, Copy)]
pub struct Fields {
    pub big_endian: bool,
    /// (position, width) of the length and offset fields of its messages.
    pub at: &'static [(usize, usize)],
}

/// `b` mutated one of five ways, chosen by `rng`; an extreme value (the
/// likeliest) goes into one of the protocol's length or offset fields or
/// a 4-byte aligned field of the first 32 bytes, in its byte order.
pub fn mutate(rng: &mut Rng, mut b: Vec<u8>, fields: Fields) -> Vec<u8> {
    match rng.below(7) {
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
        3..=5 => {
            let known = fields.at[rng.below(fields.at.len() as u64) as usize];
            let (at, n) = if rng.below(2) == 0 && b.len() >= known.0 + known.1 {
                known
            } else {
                let n = if rng.below(2) == 0 { 8 } else { 4 };
                let slots = (b.len().saturating_sub(n) / 4 + 1).min(8) as u64;
                (4 * rng.below(slots) as usize, n)
            };
            let v = if n == 8 {
                EXTREMES_64[rng.below(EXTREMES_64.len() as u64) as usize]
            } else {
                EXTREMES[rng.below(EXTREMES.len() as u64) as usize]
            };
            if b.len() >= at + n {
                // The value's low `n` bytes, in the protocol's order.
                if fields.big_endian {
                    b[at..at + n].copy_from_slice(&v.to_be_bytes()[8 - n..]);
                } else {
                    b[at..at + n].copy_from_slice(&v.to_le_bytes()[..n]);
                }
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
