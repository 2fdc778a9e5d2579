//! YCSB key naming: FNV-1a-64 (`Utils.fnvhash64`) and `CoreWorkload.buildKeyName`.

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

/// db_bench-style fixed-size key: the record number as 16 decimal digits,
/// zero-padded (truncated or padded to `key_size`), so keys sort numerically.
pub fn fixed_key(num: u64, key_size: usize, out: &mut Vec<u8>) {
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
}
