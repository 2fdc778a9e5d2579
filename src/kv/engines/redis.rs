//! Redis as a YCSB store, with YCSB's Redis binding's layout: a hash per
//! record (`HMSET key field0 v0 ...`) plus the sorted set `_indices` scored
//! by the key's Java `String.hashCode`, which scans walk
//! (`ZRANGEBYSCORE _indices hash(start) +inf LIMIT 0 n`, then `HGETALL`
//! each key). Read is `HGETALL`, update `HMSET` of the fields written,
//! delete `DEL` and `ZREM`. One connection per client thread, speaking
//! RESP2 through `resp::Resp` (the `redis` crate's generic reply parser
//! was a tenth of the client's CPU). On an existing server every key is
//! prefixed `iolab_<pid>:`.

use anyhow::{Context, Result};

use super::resp::Resp;
use super::server_ns::{field_len, known_field, layout_settings, owned_namespace};
use crate::kv::engine::{KvEngine, KvSession};
use crate::servers::{redis as srv, Endpoint, Server};

/// The sorted set of all keys (YCSB's `INDEX_KEY`).
const INDEX: &str = "_indices";

pub struct RedisKv {
    ep: Endpoint,
    /// `iolab_<pid>:` on an existing server, else empty.
    prefix: String,
    fields: usize,
    version: String,
    settings: Vec<(String, String)>,
}

/// Java's `String.hashCode` of an ASCII key, as YCSB's binding scores it.
pub fn java_hash(key: &[u8]) -> i32 {
    key.iter()
        .fold(0i32, |h, &b| h.wrapping_mul(31).wrapping_add(b as i32))
}

impl RedisKv {
    pub fn open(server: &Server, fields: usize) -> Result<RedisKv> {
        let ns = owned_namespace(server);
        let e = RedisKv {
            settings: layout_settings(
                server,
                fields,
                &ns,
                "a hash per record (field0..n) and the sorted set _indices (YCSB's Redis binding)",
            ),
            // The server's version already reads "Redis 7.0.15".
            version: format!("{} (rust redis 1)", server.version()),
            ep: server.endpoint().clone(),
            prefix: ns.map(|n| format!("{n}:")).unwrap_or_default(),
            fields,
        };
        e.reset().context("emptying iolab's keys")?;
        Ok(e)
    }

    /// Delete iolab's keys: the whole database of a private server, the
    /// prefixed keys of an existing one.
    fn delete_own_keys(&self) -> Result<()> {
        let mut c = srv::connect(&self.ep)?;
        if self.prefix.is_empty() {
            redis::cmd("FLUSHDB").query::<()>(&mut c)?;
            return Ok(());
        }
        let pattern = format!("{}*", self.prefix);
        let mut cursor: u64 = 0;
        loop {
            let (next, keys): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .query(&mut c)?;
            if !keys.is_empty() {
                redis::cmd("DEL").arg(&keys).query::<()>(&mut c)?;
            }
            if next == 0 {
                return Ok(());
            }
            cursor = next;
        }
    }
}

impl KvEngine for RedisKv {
    fn name(&self) -> &'static str {
        "redis"
    }
    fn version(&self) -> String {
        self.version.clone()
    }
    fn settings(&self) -> Vec<(String, String)> {
        self.settings.clone()
    }
    fn session(&self) -> Result<Box<dyn KvSession + '_>> {
        Ok(Box::new(RedisSession {
            c: Resp::connect(&self.ep)?,
            index: format!("{}{INDEX}", self.prefix).into_bytes(),
            prefix: self.prefix.clone(),
            fields: self.fields,
            key: Vec::new(),
            names: (0..self.fields)
                .map(|i| format!("field{i}").into_bytes())
                .collect(),
            rec: Vec::new(),
            scan_keys: Vec::new(),
            scan_ends: Vec::new(),
            name: Vec::new(),
        }))
    }
    fn flush(&self) -> Result<()> {
        Ok(())
    }
    fn field_count(&self) -> Option<usize> {
        Some(self.fields)
    }
    fn reset(&self) -> Result<()> {
        self.delete_own_keys()
    }
    fn cleanup(&self) -> Result<()> {
        if self.prefix.is_empty() {
            return Ok(());
        }
        self.delete_own_keys()
    }
}

struct RedisSession {
    c: Resp,
    index: Vec<u8>,
    prefix: String,
    fields: usize,
    /// The prefixed key of the current operation.
    key: Vec<u8>,
    names: Vec<Vec<u8>>,
    rec: Vec<u8>,
    /// A scan's keys, end to end, and where each ends.
    scan_keys: Vec<u8>,
    scan_ends: Vec<usize>,
    /// A field name of an HGETALL reply.
    name: Vec<u8>,
}

impl RedisSession {
    fn set_key(&mut self, key: &[u8]) {
        self.key.clear();
        self.key.extend_from_slice(self.prefix.as_bytes());
        self.key.extend_from_slice(key);
    }

    /// `HMSET` of the prefixed key (left in `self.key`) and `fields`.
    fn hmset<'a>(
        &mut self,
        key: &[u8],
        fields: impl ExactSizeIterator<Item = (usize, &'a [u8])>,
    ) -> Result<()> {
        self.set_key(key);
        self.c
            .begin(2 + 2 * fields.len())
            .arg(b"HMSET")
            .arg(&self.key);
        for (i, f) in fields {
            self.c.arg(&self.names[i]).arg(f);
        }
        self.c.send()?;
        self.c.read_ok().context("HMSET")
    }

    /// HGETALL of the prefixed `key`, its `fields` fields placed in index
    /// order into `out`; false when the key does not exist. Fields of
    /// unequal length, missing or unknown fields leave a record that fails
    /// its check.
    fn hgetall(
        c: &mut Resp,
        key: &[u8],
        fields: usize,
        name: &mut Vec<u8>,
        out: &mut Vec<u8>,
    ) -> Result<bool> {
        c.begin(2).arg(b"HGETALL").arg(key);
        c.send()?;
        let items = c.read_array_len().context("HGETALL")?.unwrap_or(0);
        if items == 0 {
            return Ok(false);
        }
        out.clear();
        let mut len = None;
        let mut seen = 0;
        let mut broken = items % 2 != 0;
        for _ in 0..items / 2 {
            name.clear();
            let n = c.read_bulk_len()?.unwrap_or(0);
            c.bulk_append(n, name)?;
            let v = c.read_bulk_len()?.unwrap_or(0);
            let len = *len.get_or_insert_with(|| {
                out.resize(fields * v, 0);
                v
            });
            match field_index(name) {
                Some(i) if i < fields && v == len && !broken => {
                    c.bulk_into(&mut out[i * len..(i + 1) * len])?;
                    seen += 1;
                }
                // A field iolab did not write: the record fails its check.
                _ => {
                    c.bulk_skip(v)?;
                    broken = true;
                }
            }
        }
        if items % 2 != 0 {
            let v = c.read_bulk_len()?.unwrap_or(0);
            c.bulk_skip(v)?;
        }
        if broken {
            out.clear();
        } else if seen != fields {
            out.truncate(seen * len.unwrap_or(0));
        }
        Ok(true)
    }
}

/// `N` of a field named `fieldN`.
pub(super) fn field_index(name: &[u8]) -> Option<usize> {
    let digits = name.strip_prefix(b"field")?;
    if digits.is_empty() || digits.len() > 6 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(digits.iter().fold(0, |n, d| n * 10 + (d - b'0') as usize))
}

impl KvSession for RedisSession {
    fn insert(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.update(key, value)?;
        // hmset left the prefixed key in self.key.
        self.c
            .begin(4)
            .arg(b"ZADD")
            .arg(&self.index)
            .arg_int(java_hash(key) as i64)
            .arg(&self.key);
        self.c.send()?;
        self.c.read_int().context("ZADD")?;
        Ok(())
    }
    fn update(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let len = field_len(value, self.fields)?;
        self.hmset(key, value.chunks(len).enumerate())
    }
    fn update_field(&mut self, key: &[u8], index: usize, value: &[u8]) -> Result<()> {
        known_field(index, self.fields, "field")?;
        self.hmset(key, std::iter::once((index, value)))
    }
    fn read(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        self.set_key(key);
        Self::hgetall(&mut self.c, &self.key, self.fields, &mut self.name, out)
    }
    fn scan(
        &mut self,
        start: &[u8],
        count: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        self.c
            .begin(7)
            .arg(b"ZRANGEBYSCORE")
            .arg(&self.index)
            .arg_int(java_hash(start) as i64)
            .arg(b"+inf")
            .arg(b"LIMIT")
            .arg(b"0")
            .arg_int(count as i64);
        self.c.send()?;
        let keys = self
            .c
            .read_array_len()
            .context("ZRANGEBYSCORE")?
            .unwrap_or(0);
        self.scan_keys.clear();
        self.scan_ends.clear();
        for _ in 0..keys {
            let n = self.c.read_bulk_len()?.unwrap_or(0);
            self.c.bulk_append(n, &mut self.scan_keys)?;
            self.scan_ends.push(self.scan_keys.len());
        }
        let mut n = 0;
        let mut start = 0;
        for &end in &self.scan_ends {
            let k = &self.scan_keys[start..end];
            start = end;
            if Self::hgetall(&mut self.c, k, self.fields, &mut self.name, &mut self.rec)? {
                visit(&k[self.prefix.len().min(k.len())..], &self.rec);
                n += 1;
            }
        }
        Ok(n)
    }
    fn delete(&mut self, key: &[u8]) -> Result<bool> {
        self.set_key(key);
        self.c.begin(2).arg(b"DEL").arg(&self.key);
        self.c.send()?;
        let n = self.c.read_int().context("DEL")?;
        self.c.begin(3).arg(b"ZREM").arg(&self.index).arg(&self.key);
        self.c.send()?;
        self.c.read_int().context("ZREM")?;
        Ok(n > 0)
    }
    fn next_in_order(&mut self, _visit: &mut dyn FnMut(&[u8], &[u8])) -> Result<bool> {
        anyhow::bail!("db_bench's readseq does not run on servers")
    }
}

#[cfg(test)]
mod tests {
    use super::java_hash;

    #[test]
    fn java_string_hash_code() {
        // Values of Java's "...".hashCode().
        assert_eq!(java_hash(b""), 0);
        assert_eq!(java_hash(b"a"), 97);
        assert_eq!(java_hash(b"hello"), 99162322);
        // The classic collision, and wrap-around past i32.
        assert_eq!(java_hash(b"Aa"), 2112);
        assert_eq!(java_hash(b"BB"), 2112);
        assert_eq!(java_hash(b"polygenelubricants"), i32::MIN);
    }
}
