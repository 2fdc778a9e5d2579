//! SQLite through `rusqlite`, linked against the system libsqlite3.
//! One table `kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID`; each session
//! has its own connection, every operation is its own (autocommit) transaction.
//! readseq reads in key order a page of `SEQ_PAGE` rows at a time (rusqlite
//! cannot keep a statement's rows across calls), handing out one per call.

use crate::kv::engine::{yes, EngineOptions, KvEngine, KvSession};
use anyhow::{Context, Result};
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};

/// Rows readseq fetches per query.
const SEQ_PAGE: i64 = 256;

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
    seq: SeqPage,
}

/// readseq's position: the rows fetched and not yet handed out, and the
/// last key fetched (`None` before the first page).
#[derive(Default)]
struct SeqPage {
    rows: VecDeque<(Vec<u8>, Vec<u8>)>,
    last: Option<Vec<u8>>,
}

impl SqliteSession {
    /// Fetch the page after `seq.last`; false when there is none.
    fn fetch_seq_page(&mut self) -> Result<bool> {
        let mut st = match self.seq.last {
            None => self
                .c
                .prepare_cached("SELECT k, v FROM kv ORDER BY k LIMIT ?1")?,
            Some(_) => self
                .c
                .prepare_cached("SELECT k, v FROM kv WHERE k > ?2 ORDER BY k LIMIT ?1")?,
        };
        let mut rows = match &self.seq.last {
            None => st.query(params![SEQ_PAGE])?,
            Some(last) => st.query(params![SEQ_PAGE, last])?,
        };
        while let Some(r) = rows.next()? {
            let (k, v) = (r.get_ref(0)?.as_blob()?, r.get_ref(1)?.as_blob()?);
            self.seq.rows.push_back((k.to_vec(), v.to_vec()));
        }
        if let Some((k, _)) = self.seq.rows.back() {
            self.seq.last = Some(k.clone());
        }
        Ok(!self.seq.rows.is_empty())
    }
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
    fn next_in_order(&mut self, visit: &mut dyn FnMut(&[u8], &[u8])) -> Result<bool> {
        if self.seq.rows.is_empty() && !self.fetch_seq_page()? {
            self.seq = SeqPage::default();
            return Ok(false);
        }
        let (k, v) = self.seq.rows.pop_front().expect("page is not empty");
        visit(&k, &v);
        Ok(true)
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
            seq: SeqPage::default(),
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
