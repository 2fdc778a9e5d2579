//! SQLite connections (rusqlite): WAL, a busy handler, `BEGIN IMMEDIATE`
//! for write transactions so a writer waits for the lock up front instead
//! of failing to upgrade, statements from rusqlite's per-connection cache
//! (prepared once). A writer waiting for the lock retries every 100 us for
//! about 10 s. The run commits with `synchronous=FULL` (every commit
//! reaches the device); the load uses `NORMAL`. BUSY and LOCKED are
//! retryable.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, ErrorCode};

use super::statements::text;
use super::{DbError, DbResult, Dialect, Rows, SqlConn, Stmt, Value};

pub struct SqliteConn {
    c: Connection,
    texts: HashMap<Stmt, String>,
}

fn err(e: rusqlite::Error) -> DbError {
    let retryable = matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    );
    DbError {
        retryable,
        msg: format!("sqlite: {e}"),
    }
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            Value::Null => ValueRef::Null,
            Value::Int(i) => ValueRef::Integer(*i),
            Value::Float(f) => ValueRef::Real(*f),
            Value::Text(s) => ValueRef::Text(s.as_bytes()),
        }))
    }
}

fn value_of(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Int(i),
        ValueRef::Real(f) => Value::Float(f),
        ValueRef::Text(t) | ValueRef::Blob(t) => {
            Value::Text(String::from_utf8_lossy(t).into_owned())
        }
    }
}

/// SQLite's busy handler: try again every 100 us for about 10 s. The
/// library's own `busy_timeout` sleeps up to 100 ms between tries, which
/// with several writers measures its back-off rather than the storage.
fn wait_for_lock(tries: i32) -> bool {
    if tries >= 100_000 {
        return false;
    }
    std::thread::sleep(Duration::from_micros(100));
    true
}

impl SqliteConn {
    pub fn open(path: &Path, loading: bool) -> DbResult<SqliteConn> {
        let c = Connection::open(path).map_err(err)?;
        c.busy_handler(Some(wait_for_lock)).map_err(err)?;
        c.set_prepared_statement_cache_capacity(64);
        let sync = if loading { "NORMAL" } else { "FULL" };
        c.execute_batch(&format!(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous={sync}; PRAGMA cache_size=-32768; PRAGMA foreign_keys=OFF;"
        ))
        .map_err(err)?;
        Ok(SqliteConn {
            c,
            texts: HashMap::new(),
        })
    }
}

impl SqlConn for SqliteConn {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn begin(&mut self, write: bool) -> DbResult<()> {
        self.c
            .execute_batch(if write { "BEGIN IMMEDIATE" } else { "BEGIN" })
            .map_err(err)
    }

    fn commit(&mut self) -> DbResult<()> {
        self.c.execute_batch("COMMIT").map_err(err)
    }

    fn rollback(&mut self) -> DbResult<()> {
        if self.c.is_autocommit() {
            return Ok(());
        }
        self.c.execute_batch("ROLLBACK").map_err(err)
    }

    fn execute(&mut self, s: Stmt, params: &[Value]) -> DbResult<u64> {
        let sql = self
            .texts
            .entry(s)
            .or_insert_with(|| text(s, Dialect::Sqlite));
        let mut st = self.c.prepare_cached(sql).map_err(err)?;
        st.execute(rusqlite::params_from_iter(params.iter()))
            .map(|n| n as u64)
            .map_err(err)
    }

    fn query(&mut self, s: Stmt, params: &[Value], out: &mut Rows) -> DbResult<()> {
        let sql = self
            .texts
            .entry(s)
            .or_insert_with(|| text(s, Dialect::Sqlite));
        let mut st = self.c.prepare_cached(sql).map_err(err)?;
        fill(&mut st, params, out)
    }

    fn batch(&mut self, sql: &str) -> DbResult<()> {
        self.c.execute_batch(sql).map_err(err)
    }

    fn query_sql(&mut self, sql: &str, out: &mut Rows) -> DbResult<()> {
        let mut st = self.c.prepare(sql).map_err(err)?;
        fill(&mut st, &[], out)
    }

    fn version(&mut self) -> String {
        rusqlite::version().to_string()
    }
}

fn fill(st: &mut rusqlite::Statement<'_>, params: &[Value], out: &mut Rows) -> DbResult<()> {
    out.clear();
    let n = st.column_count();
    let mut rows = st
        .query(rusqlite::params_from_iter(params.iter()))
        .map_err(err)?;
    out.ncols = n;
    while let Some(r) = rows.next().map_err(err)? {
        for i in 0..n {
            out.vals.push(value_of(r.get_ref(i).map_err(err)?));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_and_locked_are_retryable() {
        let busy = rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(5), None);
        let locked = rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(6), None);
        let constraint = rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(19), None);
        assert!(err(busy).retryable);
        assert!(err(locked).retryable);
        assert!(!err(constraint).retryable);
    }

    #[test]
    fn a_second_writer_waits_for_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite");
        let mut a = SqliteConn::open(&path, false).unwrap();
        a.batch("CREATE TABLE t (x INTEGER)").unwrap();
        let mut b = SqliteConn::open(&path, false).unwrap();
        a.begin(true).unwrap();
        a.batch("INSERT INTO t VALUES (1)").unwrap();
        let waiter = std::thread::spawn(move || {
            b.begin(true).unwrap();
            let mut rows = Rows::default();
            b.query_sql("SELECT COUNT(*) FROM t", &mut rows).unwrap();
            b.commit().unwrap();
            rows.int(0, 0)
        });
        std::thread::sleep(Duration::from_millis(50));
        a.commit().unwrap();
        assert_eq!(
            waiter.join().unwrap(),
            1,
            "the second writer saw the first's commit"
        );
    }
}
