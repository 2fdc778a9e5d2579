//! PostgreSQL connections (crate `postgres`, no TLS): statements prepared
//! once per connection with `$n` placeholders, values sent in the binary
//! format of each parameter's inferred type (NUMERIC encoded here: the
//! crate has no decimal type without extra crates), serialization failures
//! (40001) and deadlocks (40P01) retryable. Transactions run at the
//! server's default isolation (READ COMMITTED), with `SELECT ... FOR
//! UPDATE` where a read is followed by its update.

use std::collections::HashMap;
use std::error::Error;

use bytes::{BufMut, BytesMut};
use postgres::error::SqlState;
use postgres::types::{to_sql_checked, FromSql, IsNull, ToSql, Type};
use postgres::{Client, NoTls, Statement};

use super::statements::text;
use super::{DbError, DbResult, Dialect, Rows, SqlConn, Stmt, Value};
use crate::servers::Endpoint;

type BoxErr = Box<dyn Error + Sync + Send>;

pub struct PgConn {
    c: Client,
    stmts: HashMap<Stmt, Statement>,
}

fn err(e: postgres::Error) -> DbError {
    let retryable = matches!(
        e.code(),
        Some(c) if *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED
    );
    let msg = match e.as_db_error() {
        Some(d) => format!("postgres: {} ({})", d.message(), d.code().code()),
        None => format!("postgres: {e}"),
    };
    DbError { retryable, msg }
}

impl PgConn {
    /// A connection to `e`'s database, `schema` first on its search path.
    pub fn open(e: &Endpoint, schema: Option<&str>) -> DbResult<PgConn> {
        let mut cfg = crate::servers::postgres::config(e, &e.database);
        cfg.application_name("iolab-oltp");
        if let Some(s) = schema {
            cfg.options(&format!("-c search_path={s}"));
        }
        let c = cfg.connect(NoTls).map_err(err)?;
        Ok(PgConn {
            c,
            stmts: HashMap::new(),
        })
    }

    fn prepared(&mut self, s: Stmt) -> DbResult<Statement> {
        if let Some(st) = self.stmts.get(&s) {
            return Ok(st.clone());
        }
        let st = self.c.prepare(&text(s, Dialect::Postgres)).map_err(err)?;
        self.stmts.insert(s, st.clone());
        Ok(st)
    }
}

fn refs(params: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|v| v as &(dyn ToSql + Sync)).collect()
}

fn fill(rows: &[postgres::Row], ncols: usize, out: &mut Rows) -> DbResult<()> {
    out.clear();
    out.ncols = ncols;
    for r in rows {
        for i in 0..ncols {
            out.vals.push(r.try_get::<_, Value>(i).map_err(err)?);
        }
    }
    Ok(())
}

impl SqlConn for PgConn {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn begin(&mut self, _write: bool) -> DbResult<()> {
        self.c.batch_execute("BEGIN").map_err(err)
    }

    fn commit(&mut self) -> DbResult<()> {
        self.c.batch_execute("COMMIT").map_err(err)
    }

    fn rollback(&mut self) -> DbResult<()> {
        self.c.batch_execute("ROLLBACK").map_err(err)
    }

    fn execute(&mut self, s: Stmt, params: &[Value]) -> DbResult<u64> {
        let st = self.prepared(s)?;
        self.c.execute(&st, &refs(params)).map_err(err)
    }

    fn query(&mut self, s: Stmt, params: &[Value], out: &mut Rows) -> DbResult<()> {
        let st = self.prepared(s)?;
        let rows = self.c.query(&st, &refs(params)).map_err(err)?;
        fill(&rows, st.columns().len(), out)
    }

    fn batch(&mut self, sql: &str) -> DbResult<()> {
        self.c.batch_execute(sql).map_err(err)
    }

    fn query_sql(&mut self, sql: &str, out: &mut Rows) -> DbResult<()> {
        let st = self.c.prepare(sql).map_err(err)?;
        let rows = self.c.query(&st, &[]).map_err(err)?;
        fill(&rows, st.columns().len(), out)
    }

    fn version(&mut self) -> String {
        self.c
            .query_one("SHOW server_version", &[])
            .ok()
            .and_then(|r| r.try_get::<_, String>(0).ok())
            .unwrap_or_default()
    }
}

fn int_as(i: i64, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxErr> {
    match *ty {
        Type::INT2 => i16::try_from(i)?.to_sql(ty, out),
        Type::INT4 => i32::try_from(i)?.to_sql(ty, out),
        Type::INT8 => i.to_sql(ty, out),
        Type::FLOAT4 => (i as f32).to_sql(ty, out),
        Type::FLOAT8 => (i as f64).to_sql(ty, out),
        Type::NUMERIC => encode_numeric(i as f64, out),
        _ => i.to_string().as_str().to_sql(ty, out),
    }
}

impl ToSql for Value {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxErr> {
        match self {
            Value::Null => Ok(IsNull::Yes),
            Value::Int(i) => int_as(*i, ty, out),
            Value::Float(f) => match *ty {
                Type::NUMERIC => encode_numeric(*f, out),
                Type::FLOAT4 => (*f as f32).to_sql(ty, out),
                Type::FLOAT8 => f.to_sql(ty, out),
                Type::INT2 | Type::INT4 | Type::INT8 => int_as(f.round() as i64, ty, out),
                _ => f.to_string().as_str().to_sql(ty, out),
            },
            Value::Text(s) => s.as_str().to_sql(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

impl<'a> FromSql<'a> for Value {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, BoxErr> {
        Ok(match *ty {
            Type::INT2 => Value::Int(i16::from_sql(ty, raw)? as i64),
            Type::INT4 => Value::Int(i32::from_sql(ty, raw)? as i64),
            Type::INT8 => Value::Int(i64::from_sql(ty, raw)?),
            Type::FLOAT4 => Value::Float(f32::from_sql(ty, raw)? as f64),
            Type::FLOAT8 => Value::Float(f64::from_sql(ty, raw)?),
            Type::NUMERIC => Value::Float(decode_numeric(raw)?),
            Type::BOOL => Value::Int(bool::from_sql(ty, raw)? as i64),
            // Microseconds since 2000-01-01: only shown, never computed on.
            Type::TIMESTAMP | Type::TIMESTAMPTZ => Value::Int(i64::from_sql(&Type::INT8, raw)?),
            _ => Value::Text(String::from_utf8_lossy(raw).into_owned()),
        })
    }

    fn from_sql_null(_: &Type) -> Result<Self, BoxErr> {
        Ok(Value::Null)
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// NUMERIC's binary form: ndigits, weight, sign, dscale (i16/u16), then
/// base-10000 digits, most significant first.
fn encode_numeric(v: f64, out: &mut BytesMut) -> Result<IsNull, BoxErr> {
    if !v.is_finite() {
        return Err("a non-finite number cannot be sent as NUMERIC".into());
    }
    let s = format!("{:.6}", v.abs());
    let (ip, fp) = s.split_once('.').unwrap_or((&s, ""));
    let fp = fp.trim_end_matches('0');
    let ip = ip.trim_start_matches('0');
    let mut digits: Vec<i16> = Vec::new();
    let lead = (4 - ip.len() % 4) % 4;
    let ip = format!("{}{ip}", "0".repeat(lead));
    for c in ip.as_bytes().chunks(4) {
        digits.push(std::str::from_utf8(c)?.parse()?);
    }
    let mut weight = digits.len() as i16 - 1;
    let trail = (4 - fp.len() % 4) % 4;
    let fp4 = format!("{fp}{}", "0".repeat(trail));
    for c in fp4.as_bytes().chunks(4) {
        digits.push(std::str::from_utf8(c)?.parse()?);
    }
    while digits.first() == Some(&0) {
        digits.remove(0);
        weight -= 1;
    }
    while digits.last() == Some(&0) {
        digits.pop();
    }
    if digits.is_empty() {
        weight = 0;
    }
    out.put_i16(digits.len() as i16);
    out.put_i16(weight);
    out.put_u16(if v < 0.0 && !digits.is_empty() {
        0x4000
    } else {
        0
    });
    out.put_u16(fp.len() as u16);
    for d in digits {
        out.put_i16(d);
    }
    Ok(IsNull::No)
}

fn decode_numeric(raw: &[u8]) -> Result<f64, BoxErr> {
    let word = |i: usize| -> Result<u16, BoxErr> {
        raw.get(i..i + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| "short NUMERIC".into())
    };
    let ndigits = word(0)? as usize;
    let weight = word(2)? as i16 as i32;
    let sign = word(4)?;
    if sign == 0xC000 {
        return Ok(f64::NAN);
    }
    let mut v = 0.0;
    for i in 0..ndigits {
        v += word(8 + 2 * i)? as f64 * 10_000f64.powi(weight - i as i32);
    }
    Ok(if sign == 0x4000 { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_round_trips() {
        for v in [
            0.0, 1.0, -10.0, 12.34, 300000.0, 0.0001, 0.1234, 99999.99, -0.5, 12345678.9,
        ] {
            let mut b = BytesMut::new();
            encode_numeric(v, &mut b).unwrap();
            let back = decode_numeric(&b).unwrap();
            assert!((back - v).abs() < 1e-9, "{v} -> {back}");
        }
    }
}
