//! MariaDB (and MySQL) connections (crate `mysql`): statements prepared
//! once per connection (the crate's statement cache) with the binary protocol, transactions
//! at InnoDB's default REPEATABLE READ with `SELECT ... FOR UPDATE` where a
//! read is followed by its update; deadlocks (1213) and lock wait
//! timeouts (1205) retryable. DECIMAL columns arrive as text and are
//! parsed by `Value::as_f64`.

use std::collections::HashMap;

use mysql::prelude::Queryable;
use mysql::{Conn as MyConn, Params, Statement, Value as MyValue};

use super::statements::text;
use super::{DbError, DbResult, Dialect, Rows, SqlConn, Stmt, Value};
use crate::servers::Endpoint;

pub struct MariaConn {
    c: MyConn,
    texts: HashMap<Stmt, String>,
}

fn err(e: mysql::Error) -> DbError {
    let retryable = matches!(&e, mysql::Error::MySqlError(m) if m.code == 1213 || m.code == 1205);
    DbError {
        retryable,
        msg: format!("mariadb: {e}"),
    }
}

fn to_my(v: &Value) -> MyValue {
    match v {
        Value::Null => MyValue::NULL,
        Value::Int(i) => MyValue::Int(*i),
        Value::Float(f) => MyValue::Double(*f),
        Value::Text(s) => MyValue::Bytes(s.as_bytes().to_vec()),
    }
}

fn from_my(v: MyValue) -> Value {
    match v {
        MyValue::NULL => Value::Null,
        MyValue::Int(i) => Value::Int(i),
        MyValue::UInt(u) => Value::Int(u as i64),
        MyValue::Float(f) => Value::Float(f as f64),
        MyValue::Double(f) => Value::Float(f),
        MyValue::Bytes(b) => Value::Text(String::from_utf8_lossy(&b).into_owned()),
        MyValue::Date(y, mo, d, h, mi, s, _) => {
            Value::Text(format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}"))
        }
        MyValue::Time(neg, d, h, mi, s, _) => Value::Text(format!(
            "{}{} {h:02}:{mi:02}:{s:02}",
            if neg { "-" } else { "" },
            d
        )),
    }
}

fn params(p: &[Value]) -> Params {
    if p.is_empty() {
        Params::Empty
    } else {
        Params::Positional(p.iter().map(to_my).collect())
    }
}

impl MariaConn {
    pub fn open(e: &Endpoint) -> DbResult<MariaConn> {
        // The crate closes statements it evicts: its cache must hold them all.
        let opts = crate::servers::mariadb::opts(e, &e.database).stmt_cache_size(Some(256));
        let c = MyConn::new(opts).map_err(err)?;
        Ok(MariaConn {
            c,
            texts: HashMap::new(),
        })
    }

    /// The statement, prepared on first use and then found in the crate's
    /// per-connection statement cache.
    fn prepared(&mut self, s: Stmt) -> DbResult<Statement> {
        let sql = self
            .texts
            .entry(s)
            .or_insert_with(|| text(s, Dialect::Mariadb));
        self.c.prep(sql.as_str()).map_err(err)
    }
}

impl SqlConn for MariaConn {
    fn dialect(&self) -> Dialect {
        Dialect::Mariadb
    }

    fn begin(&mut self, _write: bool) -> DbResult<()> {
        self.c.query_drop("START TRANSACTION").map_err(err)
    }

    fn commit(&mut self) -> DbResult<()> {
        self.c.query_drop("COMMIT").map_err(err)
    }

    fn rollback(&mut self) -> DbResult<()> {
        self.c.query_drop("ROLLBACK").map_err(err)
    }

    fn execute(&mut self, s: Stmt, p: &[Value]) -> DbResult<u64> {
        let st = self.prepared(s)?;
        self.c.exec_drop(&st, params(p)).map_err(err)?;
        Ok(self.c.affected_rows())
    }

    fn query(&mut self, s: Stmt, p: &[Value], out: &mut Rows) -> DbResult<()> {
        let st = self.prepared(s)?;
        out.clear();
        out.ncols = st.columns().len();
        let result = self.c.exec_iter(&st, params(p)).map_err(err)?;
        for row in result {
            out.vals
                .extend(row.map_err(err)?.unwrap().into_iter().map(from_my));
        }
        Ok(())
    }

    fn batch(&mut self, sql: &str) -> DbResult<()> {
        self.c.query_drop(sql).map_err(err)
    }

    fn query_sql(&mut self, sql: &str, out: &mut Rows) -> DbResult<()> {
        out.clear();
        let mut result = self.c.query_iter(sql).map_err(err)?;
        out.ncols = result.columns().as_ref().len();
        for row in result.by_ref() {
            out.vals
                .extend(row.map_err(err)?.unwrap().into_iter().map(from_my));
        }
        Ok(())
    }

    fn version(&mut self) -> String {
        self.c
            .query_first::<String, _>("SELECT VERSION()")
            .ok()
            .flatten()
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server_error(code: u16) -> mysql::Error {
        mysql::Error::MySqlError(mysql::MySqlError {
            state: "40001".into(),
            message: "test".into(),
            code,
        })
    }

    #[test]
    fn deadlocks_and_lock_timeouts_are_retryable() {
        assert!(err(server_error(1213)).retryable);
        assert!(err(server_error(1205)).retryable);
        assert!(!err(server_error(1062)).retryable);
        assert_eq!(
            from_my(MyValue::Bytes(b"12.50".to_vec())).as_f64(),
            Some(12.5)
        );
    }
}
