//! SQLite through `rusqlite`, linked against the system libsqlite3.
//! One table `kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID`; each session
//! has its own connection, every operation is its own (autocommit) transaction.

use crate::kv::engine::{yes, EngineOptions, KvEngine, KvSession};
use anyhow::{Context, Result};
use rusqlite::{params, Connection, OptionalExtension};
use std::path::{Path, PathBuf};

pub struct Sqlite {
    path: PathBuf,
    opts: EngineOptions,
}

fn connect(path: &Path, o: &EngineOptions) -> Result<Connection> {
    let c =
        Connection::open(path).with_context(|| format!("opening sqlite at {}", path.display()))?;
    c.busy_timeout(std::time::Duration::from_secs(30))?;
    if let Some(ps) = o.page_size {
        c.pragma_update(None, "page_size", ps)?;
    }
    let mode: String = c.pragma_update_and_check(
        None,
        "journal_mode",
        if o.wal { "WAL" } else { "DELETE" },
        |r| r.get(0),
    )?;
    let _ = mode;
    c.pragma_update(None, "synchronous", if o.sync { "FULL" } else { "OFF" })?;
    c.pragma_update(None, "cache_size", -((o.cache_size / 1024) as i64))?;
    c.pragma_update(
        None,
        "mmap_size",
        if o.mmap { o.map_size as i64 } else { 0 },
    )?;
    Ok(c)
}

impl Sqlite {
    pub fn open(dir: &Path, o: &EngineOptions) -> Result<Sqlite> {
        let path = dir.join("kv.sqlite");
        let c = connect(&path, o)?;
        c.execute_batch(
            "CREATE TABLE IF NOT EXISTS kv (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID;",
        )?;
        Ok(Sqlite {
            path,
            opts: o.clone(),
        })
    }
}

struct SqliteSession {
    c: Connection,
}

impl KvSession for SqliteSession {
    fn insert(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut st = self
            .c
            .prepare_cached("INSERT OR REPLACE INTO kv (k, v) VALUES (?1, ?2)")?;
        st.execute(params![key, value])?;
        Ok(())
    }
    fn update(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut st = self.c.prepare_cached("UPDATE kv SET v = ?2 WHERE k = ?1")?;
        st.execute(params![key, value])?;
        Ok(())
    }
    fn read(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let mut st = self.c.prepare_cached("SELECT v FROM kv WHERE k = ?1")?;
        let found = st
            .query_row(params![key], |r| {
                let v = r.get_ref(0)?.as_blob()?;
                out.clear();
                out.extend_from_slice(v);
                Ok(())
            })
            .optional()?;
        Ok(found.is_some())
    }
    fn scan(
        &mut self,
        start: &[u8],
        count: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        let mut st = self
            .c
            .prepare_cached("SELECT k, v FROM kv WHERE k >= ?1 ORDER BY k LIMIT ?2")?;
        let mut rows = st.query(params![start, count as i64])?;
        let mut n = 0;
        while let Some(r) = rows.next()? {
            visit(r.get_ref(0)?.as_blob()?, r.get_ref(1)?.as_blob()?);
            n += 1;
        }
        Ok(n)
    }
    fn delete(&mut self, key: &[u8]) -> Result<bool> {
        let mut st = self.c.prepare_cached("DELETE FROM kv WHERE k = ?1")?;
        Ok(st.execute(params![key])? > 0)
    }
}

impl KvEngine for Sqlite {
    fn name(&self) -> &'static str {
        "sqlite"
    }
    fn version(&self) -> String {
        format!(
            "SQLite {} (system libsqlite3 via rusqlite {})",
            rusqlite::version(),
            crate::kv::engine::locked_version("rusqlite")
        )
    }
    fn settings(&self) -> Vec<(String, String)> {
        let o = &self.opts;
        vec![
            (
                "synchronous".into(),
                if o.sync { "FULL" } else { "OFF" }.into(),
            ),
            (
                "journal_mode".into(),
                if o.wal { "WAL" } else { "DELETE" }.into(),
            ),
            ("cache_size".into(), format!("{} KiB", o.cache_size / 1024)),
            (
                "page_size".into(),
                o.page_size
                    .map(|p| p.to_string())
                    .unwrap_or_else(|| "4096 (default)".into()),
            ),
            ("mmap".into(), yes(o.mmap)),
        ]
    }
    fn session(&self) -> Result<Box<dyn KvSession + '_>> {
        Ok(Box::new(SqliteSession {
            c: connect(&self.path, &self.opts)?,
        }))
    }
    fn flush(&self) -> Result<()> {
        let c = connect(&self.path, &self.opts)?;
        if self.opts.wal {
            c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        }
        Ok(())
    }
}
