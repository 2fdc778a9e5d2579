//! The small connection interface the transactions, the load and the
//! consistency checks are written once against: `begin`/`commit`/`rollback`,
//! statements named by `Stmt` and prepared once per connection, `execute`,
//! `query` into a reusable `Rows` buffer, values as a small `Value` enum.
//! Errors say whether a retry may succeed (deadlocks, serialization
//! failures, lock timeouts, SQLite BUSY) or not. One implementation per
//! engine: `sqlite`, `postgres`, `mariadb`; `connect` decides which.

pub mod connect;
pub mod mariadb;
pub mod postgres;
pub mod sqlite;
pub mod statements;

use std::fmt;

pub use connect::DbConnect;
pub use statements::Stmt;

/// SQL dialects iolab speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    Sqlite,
    Postgres,
    Mariadb,
}

impl Dialect {
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Sqlite => "sqlite",
            Dialect::Postgres => "postgres",
            Dialect::Mariadb => "mariadb",
        }
    }
}

/// A parameter or a column value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Float(f64),
    Text(String),
}

impl Value {
    /// As an integer (numbers in text, as MariaDB's text protocol sends them, parse).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Float(f) => Some(f.round() as i64),
            Value::Text(s) => s
                .trim()
                .parse::<i64>()
                .ok()
                .or_else(|| s.trim().parse::<f64>().ok().map(|f| f.round() as i64)),
            Value::Null => None,
        }
    }

    /// As a number.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            Value::Text(s) => s.trim().parse().ok(),
            Value::Null => None,
        }
    }

    /// As text (numbers formatted).
    pub fn as_text(&self) -> String {
        match self {
            Value::Text(s) => s.clone(),
            Value::Int(i) => i.to_string(),
            Value::Float(f) => f.to_string(),
            Value::Null => String::new(),
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Int(v)
    }
}
impl From<u32> for Value {
    fn from(v: u32) -> Value {
        Value::Int(v as i64)
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Float(v)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::Text(v.to_string())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::Text(v)
    }
}

/// Rows of a query, row-major, reused across queries.
#[derive(Debug, Default, Clone)]
pub struct Rows {
    pub ncols: usize,
    pub vals: Vec<Value>,
}

impl Rows {
    pub fn clear(&mut self) {
        self.ncols = 0;
        self.vals.clear();
    }

    pub fn len(&self) -> usize {
        self.vals.len().checked_div(self.ncols).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Column `c` of row `r` (Null when out of range).
    pub fn get(&self, r: usize, c: usize) -> &Value {
        const NULL: Value = Value::Null;
        if c >= self.ncols {
            return &NULL;
        }
        self.vals.get(r * self.ncols + c).unwrap_or(&NULL)
    }

    pub fn int(&self, r: usize, c: usize) -> i64 {
        self.get(r, c).as_i64().unwrap_or(0)
    }

    pub fn num(&self, r: usize, c: usize) -> f64 {
        self.get(r, c).as_f64().unwrap_or(0.0)
    }
}

/// A database error, classified.
#[derive(Debug, Clone)]
pub struct DbError {
    /// A retry of the whole transaction may succeed (deadlock,
    /// serialization failure, lock wait timeout, SQLite BUSY/LOCKED).
    pub retryable: bool,
    pub msg: String,
}

impl DbError {
    pub fn fatal(msg: impl Into<String>) -> DbError {
        DbError {
            retryable: false,
            msg: msg.into(),
        }
    }
}

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for DbError {}

pub type DbResult<T> = Result<T, DbError>;

/// One connection (one per virtual user or loader thread).
pub trait SqlConn: Send {
    fn dialect(&self) -> Dialect;
    /// Start a transaction; `write`: it will write (SQLite takes the write
    /// lock at once, `BEGIN IMMEDIATE`, so it never fails to upgrade later).
    fn begin(&mut self, write: bool) -> DbResult<()>;
    fn commit(&mut self) -> DbResult<()>;
    /// Roll back (no error if no transaction is open).
    fn rollback(&mut self) -> DbResult<()>;
    /// Run statement `s` (prepared on first use); rows changed.
    fn execute(&mut self, s: Stmt, params: &[Value]) -> DbResult<u64>;
    /// Run query `s` into `out` (cleared first).
    fn query(&mut self, s: Stmt, params: &[Value], out: &mut Rows) -> DbResult<()>;
    /// Run SQL text without parameters (DDL, the load's multi-row INSERTs).
    fn batch(&mut self, sql: &str) -> DbResult<()>;
    /// Run a query given as text, without parameters (checks, counts).
    fn query_sql(&mut self, sql: &str, out: &mut Rows) -> DbResult<()>;
    /// The server or library version, for provenance.
    fn version(&mut self) -> String;
}

/// `query`, then the first row's presence.
pub fn query_row(c: &mut dyn SqlConn, s: Stmt, params: &[Value], out: &mut Rows) -> DbResult<bool> {
    c.query(s, params, out)?;
    Ok(!out.is_empty())
}

/// Quote `s` as an SQL string literal.
pub fn quote(s: &str, out: &mut String) {
    out.push('\'');
    if !s.bytes().any(|b| b == b'\'' || b == b'\\') {
        // Nearly all load data: nothing to escape or drop.
        out.push_str(s);
        out.push('\'');
        return;
    }
    for ch in s.chars() {
        if ch == '\'' {
            out.push('\'');
        }
        if ch == '\\' {
            // MariaDB reads backslash escapes in literals; load data never has one.
            continue;
        }
        out.push(ch);
    }
    out.push('\'');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_index_row_major() {
        let r = Rows {
            ncols: 2,
            vals: vec![Value::Int(1), "a".into(), Value::Int(2), Value::Null],
        };
        assert_eq!(r.len(), 2);
        assert_eq!(r.int(1, 0), 2);
        assert!(r.get(1, 1).is_null());
        assert!(r.get(5, 0).is_null());
        assert_eq!(Value::Text("12.50".into()).as_f64(), Some(12.5));
        assert_eq!(Value::Text("7".into()).as_i64(), Some(7));
        let mut q = String::new();
        quote("it's", &mut q);
        assert_eq!(q, "'it''s'");
        for (plain, quoted) in [("abc", "'abc'"), ("", "''"), ("a\\b'", "'ab'''")] {
            q.clear();
            quote(plain, &mut q);
            assert_eq!(q, quoted);
        }
    }
}
