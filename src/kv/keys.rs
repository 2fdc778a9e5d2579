//! Key naming: YCSB's (FNV-1a-64 `Utils.fnvhash64` and `CoreWorkload.buildKeyName`)
//! and db_bench's (a record number as decimal digits or as its binary keys).

/// FNV-1a 64-bit offset basis, as in YCSB's `Utils.FNV_OFFSET_BASIS_64`.
pub const FNV_OFFSET_BASIS_64: u64 = 0xCBF2_9CE4_8422_2325;
/// FNV 64-bit prime, as in YCSB's `Utils.FNV_PRIME_64`.
pub const FNV_PRIME_64: u64 = 1_099_511_628_211;

/// YCSB's `Utils.fnvhash64`: FNV-1a over the 8 bytes of `val`, low byte first,
/// then `Math.abs` of the signed result. Like Java, `abs(i64::MIN)` stays
/// `i64::MIN` (wrapping), which is why the result is signed.
pub fn fnvhash64(val: i64) -> i64 {
    let mut v = val;
    let mut hash = FNV_OFFSET_BASIS_64;
    for _ in 0..8 {
        let octet = (v & 0xff) as u64;
        v >>= 8; // arithmetic shift, as Java's `>>`
        hash ^= octet;
        hash = hash.wrapping_mul(FNV_PRIME_64);
    }
    (hash as i64).wrapping_abs()
}

/// Whether keys are hashed (YCSB default) or in insertion order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InsertOrder {
    Hashed,
    Ordered,
}

/// YCSB's `CoreWorkload.buildKeyName`: "user" + (hashed) record number,
/// left-padded with zeros to `zeropadding` digits. Writes into `out`
/// (cleared first) so the hot path does not allocate.
pub fn build_key_name(keynum: i64, zeropadding: usize, order: InsertOrder, out: &mut Vec<u8>) {
    let n = match order {
        InsertOrder::Hashed => fnvhash64(keynum),
        InsertOrder::Ordered => keynum,
    };
    out.clear();
    out.extend_from_slice(b"user");
    let mut digits = [0u8; 24];
    let len = format_i64(n, &mut digits);
    for _ in len..zeropadding {
        out.push(b'0');
    }
    out.extend_from_slice(&digits[..len]);
}

/// Convenience wrapper returning the key as a `String`.
pub fn key_name(keynum: i64, zeropadding: usize, order: InsertOrder) -> String {
    let mut v = Vec::with_capacity(24);
    build_key_name(keynum, zeropadding, order, &mut v);
    String::from_utf8_lossy(&v).into_owned()
}

/// `Long.toString` without allocation; returns the number of bytes written.
fn format_i64(n: i64, buf: &mut [u8; 24]) -> usize {
    let neg = n < 0;
    let mut u = n.unsigned_abs();
    let mut tmp = [0u8; 24];
    let mut i = 0;
    loop {
        tmp[i] = b'0' + (u % 10) as u8;
        u /= 10;
        i += 1;
        if u == 0 {
            break;
        }
    }
    let mut w = 0;
    if neg {
        buf[0] = b'-';
        w = 1;
    }
    for j in (0..i).rev() {
        buf[w] = tmp[j];
        w += 1;
    }
    w
}

/// How a db_bench-style benchmark spells record number `num` as a key of
/// `--key-size` bytes (`--key-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyFormat {
    /// Decimal digits, zero-padded on the left: readable, sorts numerically
    /// (iolab's default).
    Decimal,
    /// db_bench's own: the number's low 8 bytes big-endian (fewer when the
    /// key is shorter), then `'0'` up to the key size. The same key bytes as
    /// db_bench, so the same SST files and memtable comparisons.
    Binary,
}

impl KeyFormat {
    pub const ALL: [KeyFormat; 2] = [KeyFormat::Decimal, KeyFormat::Binary];

    pub fn parse(s: &str) -> Option<KeyFormat> {
        Self::ALL.into_iter().find(|f| f.name() == s)
    }

    pub fn name(self) -> &'static str {
        match self {
            KeyFormat::Decimal => "decimal",
            KeyFormat::Binary => "binary",
        }
    }

    /// Write key `num` of `key_size` bytes into `out`.
    #[inline]
    pub fn write(self, num: u64, key_size: usize, out: &mut Vec<u8>) {
        match self {
            KeyFormat::Decimal => fixed_key(num, key_size, out),
            KeyFormat::Binary => binary_key(num, key_size, out),
        }
    }

    /// Whether `key_size` bytes tell `num` different keys apart.
    pub fn holds(self, key_size: usize, num: u64) -> bool {
        let largest = num.saturating_sub(1);
        match self {
            KeyFormat::Decimal => key_size > largest.max(1).ilog10() as usize,
            KeyFormat::Binary => key_size >= 8 || largest >> (8 * key_size) == 0,
        }
    }

    /// A key for a message: as text when it is printable, else in hex.
    pub fn show(key: &[u8]) -> String {
        if key.iter().all(|b| b.is_ascii_graphic()) {
            String::from_utf8_lossy(key).into_owned()
        } else {
            key.iter().map(|b| format!("{b:02x}")).collect()
        }
    }
}

/// db_bench-style fixed-size key: the record number as 16 decimal digits,
/// zero-padded (truncated or padded to `key_size`), so keys sort numerically.
fn fixed_key(num: u64, key_size: usize, out: &mut Vec<u8>) {
    // Digits written from the end in place: the last `key_size` digits of
    // `num`, zero-padded on the left.
    out.clear();
    out.resize(key_size, b'0');
    let mut n = num;
    for d in out.iter_mut().rev() {
        if n == 0 {
            break;
        }
        *d = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

/// db_bench's `GenerateKeyFromInt` (no key prefixes): the low
/// `min(key_size, 8)` bytes of `num` big-endian, then `'0'` bytes.
fn binary_key(num: u64, key_size: usize, out: &mut Vec<u8>) {
    out.clear();
    out.resize(key_size, b'0');
    let n = key_size.min(8);
    out[..n].copy_from_slice(&num.to_be_bytes()[8 - n..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values from bench/kv_generators_reference.py (an independent
    // Python implementation of YCSB's Utils.fnvhash64 and buildKeyName).
    #[test]
    fn fnv_fixed_values() {
        assert_eq!(fnvhash64(0), 6_284_781_860_667_377_211);
        assert_eq!(fnvhash64(1), 8_517_097_267_634_966_620);
        assert_eq!(fnvhash64(2), 1_820_151_046_732_198_393);
        assert_eq!(fnvhash64(12345), 1_792_800_413_050_876_852);
        assert_eq!(fnvhash64(-1), 8_289_690_350_564_177_859);
    }

    #[test]
    fn key_names() {
        assert_eq!(
            key_name(0, 1, InsertOrder::Hashed),
            "user6284781860667377211"
        );
        assert_eq!(key_name(5, 1, InsertOrder::Ordered), "user5");
        assert_eq!(key_name(5, 8, InsertOrder::Ordered), "user00000005");
        assert_eq!(
            key_name(1, 25, InsertOrder::Hashed),
            "user0000008517097267634966620"
        );
    }

    #[test]
    fn fixed_keys() {
        let mut k = Vec::new();
        fixed_key(42, 16, &mut k);
        assert_eq!(k, b"0000000000000042");
        fixed_key(123456, 4, &mut k);
        assert_eq!(k, b"3456");
    }

    #[test]
    fn binary_keys_are_db_bench_keys() {
        let mut k = Vec::new();
        binary_key(0x0102_0304, 16, &mut k);
        assert_eq!(k, b"\0\0\0\0\x01\x02\x03\x0400000000");
        binary_key(0x0102_0304, 3, &mut k);
        assert_eq!(k, b"\x02\x03\x04");
        KeyFormat::Binary.write(7, 8, &mut k);
        assert_eq!(k, 7u64.to_be_bytes());
        KeyFormat::Decimal.write(42, 6, &mut k);
        assert_eq!(k, b"000042");
        // Binary keys sort as their numbers do.
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for n in [0u64, 1, 255, 256, 65_535, 1 << 40] {
            binary_key(n, 16, &mut a);
            binary_key(n + 1, 16, &mut b);
            assert!(a < b, "{n}");
        }
    }

    #[test]
    fn key_formats_say_what_a_key_size_holds() {
        assert!(KeyFormat::Decimal.holds(6, 1_000_000));
        assert!(!KeyFormat::Decimal.holds(6, 1_000_001));
        assert!(KeyFormat::Binary.holds(2, 65_536));
        assert!(!KeyFormat::Binary.holds(2, 65_537));
        assert!(KeyFormat::Binary.holds(8, u64::MAX));
        assert!(KeyFormat::Decimal.holds(1, 1));
        for f in KeyFormat::ALL {
            assert_eq!(KeyFormat::parse(f.name()), Some(f));
        }
        assert_eq!(KeyFormat::show(b"0042"), "0042");
        assert_eq!(KeyFormat::show(b"\0\x01ab"), "00016162");
    }
}
