//! fjall, a pure-Rust LSM tree.

use crate::kv::engine::{mib, yes, Compression, EngineOptions, KvEngine, KvSession};
use anyhow::{Context, Result};
use fjall::config::CompressionPolicy;
use fjall::{CompressionType, Database, Keyspace, KeyspaceCreateOptions, PersistMode};
use std::path::Path;

pub struct Fjall {
    db: Database,
    ks: Keyspace,
    opts: EngineOptions,
    compression: &'static str,
}

impl Fjall {
    pub fn open(dir: &Path, o: &EngineOptions) -> Result<Fjall> {
        let (ct, name) = match o.compression {
            Compression::None => (CompressionType::None, "none"),
            Compression::Lz4 => (CompressionType::Lz4, "lz4"),
            other => {
                return Err(crate::error::usage(
                    "--compression",
                    format!("fjall supports none or lz4, not {other:?}"),
                ))
            }
        };
        let db = Database::builder(dir)
            .cache_size(o.cache_size)
            .open()
            .with_context(|| format!("opening fjall at {}", dir.display()))?;
        let ks = db.keyspace("kv", || {
            KeyspaceCreateOptions::default()
                .data_block_compression_policy(CompressionPolicy::all(ct))
                .max_memtable_size(o.write_buffer_size)
        })?;
        Ok(Fjall {
            db,
            ks,
            opts: o.clone(),
            compression: name,
        })
    }
}

struct FjallSession<'a> {
    e: &'a Fjall,
    /// readseq's iterator (on one snapshot), kept across calls.
    seq: Option<fjall::Iter>,
}

impl KvSession for FjallSession<'_> {
    fn insert(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.e.ks.insert(key, value)?;
        if self.e.opts.sync {
            self.e.db.persist(PersistMode::SyncAll)?;
        }
        Ok(())
    }
    fn read(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        match self.e.ks.get(key)? {
            Some(v) => {
                out.clear();
                out.extend_from_slice(&v);
                Ok(true)
            }
            None => Ok(false),
        }
    }
    fn scan(
        &mut self,
        start: &[u8],
        count: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        let mut n = 0;
        for g in self.e.ks.range(start..) {
            if n >= count {
                break;
            }
            let (k, v) = g.into_inner()?;
            visit(&k, &v);
            n += 1;
        }
        Ok(n)
    }
    fn delete(&mut self, key: &[u8]) -> Result<bool> {
        self.e.ks.remove(key)?;
        if self.e.opts.sync {
            self.e.db.persist(PersistMode::SyncAll)?;
        }
        Ok(true)
    }
    fn next_in_order(&mut self, visit: &mut dyn FnMut(&[u8], &[u8])) -> Result<bool> {
        let ks = &self.e.ks;
        match self.seq.get_or_insert_with(|| ks.iter()).next() {
            Some(g) => {
                let (k, v) = g.into_inner()?;
                visit(&k, &v);
                Ok(true)
            }
            None => {
                self.seq = None;
                Ok(false)
            }
        }
    }
}

impl KvEngine for Fjall {
    fn name(&self) -> &'static str {
        "fjall"
    }
    fn version(&self) -> String {
        format!(
            "fjall {} (pure Rust)",
            crate::kv::engine::locked_version("fjall")
        )
    }
    fn settings(&self) -> Vec<(String, String)> {
        let o = &self.opts;
        vec![
            ("sync".into(), yes(o.sync)),
            ("cache_size".into(), mib(o.cache_size)),
            ("compression".into(), self.compression.into()),
            ("max_memtable_size".into(), mib(o.write_buffer_size)),
        ]
    }
    fn session(&self) -> Result<Box<dyn KvSession + '_>> {
        Ok(Box::new(FjallSession { e: self, seq: None }))
    }
    fn flush(&self) -> Result<()> {
        Ok(self.db.persist(PersistMode::SyncAll)?)
    }
    fn stats(&self) -> Vec<(String, String)> {
        vec![
            (
                "disk_space".into(),
                self.db
                    .disk_space()
                    .map(|d| d.to_string())
                    .unwrap_or_default(),
            ),
            (
                "compactions_completed".into(),
                self.db.compactions_completed().to_string(),
            ),
            (
                "time_compacting_ms".into(),
                self.db.time_compacting().as_millis().to_string(),
            ),
        ]
    }
}
