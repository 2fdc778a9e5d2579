//! redb, a pure-Rust copy-on-write B-tree; one write transaction per write.

use crate::kv::engine::{mib, EngineOptions, KvEngine, KvSession};
use anyhow::{Context, Result};
use redb::{Database, Durability, ReadableDatabase, TableDefinition};
use std::path::Path;

const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("kv");

pub struct Redb {
    db: Database,
    opts: EngineOptions,
}

impl Redb {
    pub fn open(dir: &Path, o: &EngineOptions) -> Result<Redb> {
        let mut b = Database::builder();
        b.set_cache_size(o.cache_size as usize);
        let path = dir.join("kv.redb");
        let db = b
            .create(&path)
            .with_context(|| format!("opening redb at {}", path.display()))?;
        let tx = db.begin_write()?;
        tx.open_table(TABLE)?;
        tx.commit()?;
        Ok(Redb {
            db,
            opts: o.clone(),
        })
    }

    fn write(
        &self,
        f: impl FnOnce(&mut redb::Table<&[u8], &[u8]>) -> Result<bool>,
    ) -> Result<bool> {
        let mut tx = self.db.begin_write()?;
        tx.set_durability(if self.opts.sync {
            Durability::Immediate
        } else {
            Durability::None
        })?;
        let r = {
            let mut t = tx.open_table(TABLE)?;
            f(&mut t)?
        };
        tx.commit()?;
        Ok(r)
    }
}

struct RedbSession<'a> {
    e: &'a Redb,
    /// readseq's range, kept across calls (it holds its read transaction).
    seq: Option<redb::Range<'static, &'static [u8], &'static [u8]>>,
}

impl KvSession for RedbSession<'_> {
    fn insert(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.e.write(|t| {
            t.insert(key, value)?;
            Ok(true)
        })?;
        Ok(())
    }
    fn read(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let tx = self.e.db.begin_read()?;
        let t = tx.open_table(TABLE)?;
        match t.get(key)? {
            Some(v) => {
                out.clear();
                out.extend_from_slice(v.value());
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
        let tx = self.e.db.begin_read()?;
        let t = tx.open_table(TABLE)?;
        let mut n = 0;
        for item in t.range(start..)? {
            if n >= count {
                break;
            }
            let (k, v) = item?;
            visit(k.value(), v.value());
            n += 1;
        }
        Ok(n)
    }
    fn delete(&mut self, key: &[u8]) -> Result<bool> {
        self.e.write(|t| Ok(t.remove(key)?.is_some()))
    }
    fn next_in_order(&mut self, visit: &mut dyn FnMut(&[u8], &[u8])) -> Result<bool> {
        if self.seq.is_none() {
            let tx = self.e.db.begin_read()?;
            let t = tx.open_table(TABLE)?;
            self.seq = Some(t.range::<&[u8]>(..)?);
        }
        let range = self.seq.as_mut().expect("opened above");
        match range.next() {
            Some(Ok((k, v))) => {
                visit(k.value(), v.value());
                Ok(true)
            }
            end => {
                self.seq = None;
                end.transpose()?;
                Ok(false)
            }
        }
    }
}

impl KvEngine for Redb {
    fn name(&self) -> &'static str {
        "redb"
    }
    fn version(&self) -> String {
        format!(
            "redb {} (pure Rust)",
            crate::kv::engine::locked_version("redb")
        )
    }
    fn settings(&self) -> Vec<(String, String)> {
        let o = &self.opts;
        vec![
            (
                "durability".into(),
                if o.sync { "Immediate" } else { "None" }.into(),
            ),
            ("cache_size".into(), mib(o.cache_size)),
            ("page_size".into(), "4096 (redb fixed)".into()),
        ]
    }
    fn session(&self) -> Result<Box<dyn KvSession + '_>> {
        Ok(Box::new(RedbSession { e: self, seq: None }))
    }
    fn flush(&self) -> Result<()> {
        let mut tx = self.db.begin_write()?;
        tx.set_durability(Durability::Immediate)?;
        tx.commit()?;
        Ok(())
    }
}
