//! Redis as a YCSB store, with YCSB's Redis binding's layout: a hash per
//! record (`HMSET key field0 v0 ...`) plus the sorted set `_indices` scored
//! by the key's Java `String.hashCode`, which scans walk
//! (`ZRANGEBYSCORE _indices hash(start) +inf LIMIT 0 n`, then `HGETALL`
//! each key). Read is `HGETALL`, update `HMSET` of the fields written,
//! delete `DEL` and `ZREM`. One connection per client thread. On an
//! existing server every key is prefixed `iolab_<pid>:`.

use anyhow::{Context, Result};
use redis::{Connection, Value};

use super::server_ns::{layout_settings, owned_namespace};
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
            version: format!("Redis {} (rust redis 1)", server.version()),
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
            c: srv::connect(&self.ep)?,
            index: format!("{}{INDEX}", self.prefix),
            prefix: self.prefix.clone(),
            fields: self.fields,
            key: Vec::new(),
            names: (0..self.fields)
                .map(|i| format!("field{i}").into_bytes())
                .collect(),
            rec: Vec::new(),
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
    c: Connection,
    index: String,
    prefix: String,
    fields: usize,
    /// The prefixed key of the current operation.
    key: Vec<u8>,
    names: Vec<Vec<u8>>,
    rec: Vec<u8>,
}

impl RedisSession {
    fn full_key(&mut self, key: &[u8]) -> &[u8] {
        self.key.clear();
        self.key.extend_from_slice(self.prefix.as_bytes());
        self.key.extend_from_slice(key);
        &self.key
    }

    fn hmset(
        &mut self,
        key: &[u8],
        fields: &mut dyn Iterator<Item = (usize, &[u8])>,
    ) -> Result<()> {
        let mut cmd = redis::cmd("HMSET");
        cmd.arg(self.full_key(key));
        for (i, f) in fields {
            cmd.arg(&self.names[i]).arg(f);
        }
        cmd.query::<()>(&mut self.c)?;
        Ok(())
    }

    /// HGETALL of the prefixed `key`, its `fields` fields placed in index
    /// order into `out`; false when the key does not exist. Fields of
    /// unequal length, missing or unknown fields leave a record that fails
    /// its check.
    fn hgetall(c: &mut Connection, key: &[u8], fields: usize, out: &mut Vec<u8>) -> Result<bool> {
        let v: Value = redis::cmd("HGETALL").arg(key).query(c)?;
        let pairs: Vec<(&Value, &Value)> = match &v {
            Value::Array(items) => items
                .chunks(2)
                .filter(|p| p.len() == 2)
                .map(|p| (&p[0], &p[1]))
                .collect(),
            Value::Map(m) => m.iter().map(|(k, v)| (k, v)).collect(),
            Value::Nil => Vec::new(),
            other => anyhow::bail!("HGETALL returned {other:?}"),
        };
        if pairs.is_empty() {
            return Ok(false);
        }
        let len = match pairs[0].1 {
            Value::BulkString(b) => b.len(),
            _ => 0,
        };
        out.clear();
        out.resize(fields * len, 0);
        let mut seen = 0;
        for (name, val) in pairs {
            let (Value::BulkString(n), Value::BulkString(b)) = (name, val) else {
                anyhow::bail!("HGETALL returned a pair that is not two strings");
            };
            let idx = std::str::from_utf8(n)
                .ok()
                .and_then(|s| s.strip_prefix("field"))
                .and_then(|s| s.parse::<usize>().ok());
            match idx {
                Some(i) if i < fields && b.len() == len => {
                    out[i * len..(i + 1) * len].copy_from_slice(b);
                    seen += 1;
                }
                // A field iolab did not write: the record fails its check.
                _ => out.truncate(0),
            }
        }
        if seen != fields {
            out.truncate(seen * len);
        }
        Ok(true)
    }
}

/// The length of each of the `fields` equal fields of `record`.
fn field_len(record: &[u8], fields: usize) -> Result<usize> {
    anyhow::ensure!(
        fields > 0 && !record.is_empty() && record.len().is_multiple_of(fields),
        "a record of {} bytes does not split into {fields} fields",
        record.len()
    );
    Ok(record.len() / fields)
}

impl KvSession for RedisSession {
    fn insert(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let len = field_len(value, self.fields)?;
        self.hmset(key, &mut value.chunks(len).enumerate())?;
        // hmset left the prefixed key in self.key.
        redis::cmd("ZADD")
            .arg(&self.index)
            .arg(java_hash(key))
            .arg(&self.key)
            .query::<()>(&mut self.c)?;
        Ok(())
    }
    fn update(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let len = field_len(value, self.fields)?;
        self.hmset(key, &mut value.chunks(len).enumerate())
    }
    fn update_field(&mut self, key: &[u8], index: usize, value: &[u8]) -> Result<()> {
        anyhow::ensure!(
            index < self.fields,
            "field{index} is not a field of the records"
        );
        self.hmset(key, &mut std::iter::once((index, value)))
    }
    fn read(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        self.full_key(key);
        Self::hgetall(&mut self.c, &self.key, self.fields, out)
    }
    fn scan(
        &mut self,
        start: &[u8],
        count: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        let keys: Vec<Vec<u8>> = redis::cmd("ZRANGEBYSCORE")
            .arg(&self.index)
            .arg(java_hash(start))
            .arg("+inf")
            .arg("LIMIT")
            .arg(0)
            .arg(count)
            .query(&mut self.c)?;
        let mut n = 0;
        for k in &keys {
            if Self::hgetall(&mut self.c, k, self.fields, &mut self.rec)? {
                visit(&k[self.prefix.len().min(k.len())..], &self.rec);
                n += 1;
            }
        }
        Ok(n)
    }
    fn delete(&mut self, key: &[u8]) -> Result<bool> {
        let full = self.full_key(key).to_vec();
        let n: i64 = redis::cmd("DEL").arg(&full).query(&mut self.c)?;
        redis::cmd("ZREM")
            .arg(&self.index)
            .arg(&full)
            .query::<()>(&mut self.c)?;
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
