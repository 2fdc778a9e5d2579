//! Records of servers that keep YCSB's fields apart (a column of
//! `usertable` or a field of a Redis hash each), so an update writes one
//! field without reading the record, as YCSB's JDBC and Redis bindings do.
//! Each field checks itself: its first 8 bytes are the hex CRC-32 of the
//! key, the field's index and the rest of the field, which is printable
//! ASCII (the servers store text, like YCSB's RandomByteIterator's). A
//! record travels as its fields concatenated in index order. Fields shorter
//! than 9 bytes carry no check.

use rand::Rng;

/// Bytes of a field's check.
pub const CHECK: usize = 8;

/// The shape of a record: `count` fields of `len` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldLayout {
    pub count: usize,
    pub len: usize,
}

impl FieldLayout {
    pub fn record_len(&self) -> usize {
        self.count * self.len
    }

    /// Whether fields carry a check.
    pub fn checked(&self) -> bool {
        self.len > CHECK
    }

    /// Column / hash field name of field `i` (YCSB's `field` prefix).
    pub fn name(i: usize) -> String {
        format!("field{i}")
    }
}

/// Printable bytes to copy field bodies from.
pub struct TextPool {
    data: Vec<u8>,
}

impl TextPool {
    /// A pool of at least 1 MiB and at least twice `max_len`.
    pub fn new(max_len: usize, seed: u64) -> TextPool {
        let len = (1 << 20).max(max_len * 2);
        let mut data = vec![0u8; len];
        crate::dut::verify::fill_random(&mut data, seed);
        // ' ' .. '~', as YCSB's RandomByteIterator.
        for b in &mut data {
            *b = b' ' + (*b % 95);
        }
        TextPool { data }
    }

    #[inline]
    fn fill<R: Rng + ?Sized>(&self, rng: &mut R, out: &mut [u8]) {
        let max_off = self.data.len() - out.len();
        let off = (rng.next_u64() % (max_off as u64 + 1)) as usize;
        out.copy_from_slice(&self.data[off..off + out.len()]);
    }
}

fn crc(key: &[u8], index: usize, body: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&(key.len() as u32).to_le_bytes());
    h.update(key);
    h.update(&(index as u32).to_le_bytes());
    h.update(body);
    h.finalize()
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Fill `field` (its full length) with a fresh body for field `index` of
/// `key`, and its check.
#[inline]
pub fn build_field<R: Rng + ?Sized>(
    pool: &TextPool,
    rng: &mut R,
    key: &[u8],
    index: usize,
    field: &mut [u8],
) {
    pool.fill(rng, field);
    if field.len() > CHECK {
        let c = crc(key, index, &field[CHECK..]);
        for (i, b) in field[..CHECK].iter_mut().enumerate() {
            *b = HEX[((c >> (28 - 4 * i)) & 0xF) as usize];
        }
    }
}

/// A fresh record of `layout` for `key` into `out`.
pub fn build_record<R: Rng + ?Sized>(
    pool: &TextPool,
    rng: &mut R,
    key: &[u8],
    layout: FieldLayout,
    out: &mut Vec<u8>,
) {
    out.clear();
    out.resize(layout.record_len(), 0);
    for (i, f) in out.chunks_mut(layout.len).enumerate() {
        build_field(pool, rng, key, i, f);
    }
}

/// Check a record read for `key`: its length and every field's check.
pub fn verify_record(key: &[u8], layout: FieldLayout, record: &[u8]) -> Result<(), String> {
    if record.len() != layout.record_len() {
        return Err(format!(
            "record of {} bytes, expected {} fields of {} bytes",
            record.len(),
            layout.count,
            layout.len
        ));
    }
    if !layout.checked() {
        return Ok(());
    }
    for (i, f) in record.chunks(layout.len).enumerate() {
        let stored = std::str::from_utf8(&f[..CHECK])
            .ok()
            .and_then(|s| u32::from_str_radix(s, 16).ok());
        let computed = crc(key, i, &f[CHECK..]);
        if stored != Some(computed) {
            return Err(format!(
                "field{i}: check {:?} does not match {computed:08x}",
                String::from_utf8_lossy(&f[..CHECK])
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv::generator::tests::SplitMix64;

    #[test]
    fn records_check_themselves_field_by_field() {
        let layout = FieldLayout {
            count: 10,
            len: 100,
        };
        let pool = TextPool::new(100, 3);
        let mut r = SplitMix64(9);
        let mut rec = Vec::new();
        build_record(&pool, &mut r, b"user42", layout, &mut rec);
        assert_eq!(rec.len(), 1000);
        assert!(rec.iter().all(|b| (b' '..=b'~').contains(b)), "printable");
        assert_eq!(verify_record(b"user42", layout, &rec), Ok(()));
        assert!(verify_record(b"user43", layout, &rec).is_err(), "wrong key");
        // One field replaced by a fresh one of the same key and index still checks.
        build_field(&pool, &mut r, b"user42", 3, &mut rec[300..400]);
        assert_eq!(verify_record(b"user42", layout, &rec), Ok(()));
        // ...but not as another field's.
        let f3 = rec[300..400].to_vec();
        rec[500..600].copy_from_slice(&f3);
        let e = verify_record(b"user42", layout, &rec).unwrap_err();
        assert!(e.starts_with("field5"), "{e}");
        assert!(
            verify_record(b"user42", layout, &rec[..999]).is_err(),
            "truncated"
        );
        let tiny = FieldLayout { count: 2, len: 4 };
        build_record(&pool, &mut r, b"k", tiny, &mut rec);
        assert_eq!(
            verify_record(b"other", tiny, &rec),
            Ok(()),
            "no check under 9 bytes"
        );
    }
}
