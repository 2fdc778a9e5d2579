//! PostgreSQL as a YCSB store, with YCSB's JDBC binding's table and
//! statements: `usertable(YCSB_KEY VARCHAR(255) PRIMARY KEY, FIELD0..n
//! TEXT)`; read is `SELECT *` by key, update sets the fields it writes
//! (one, or all with `writeallfields`) without reading, scan is
//! `YCSB_KEY >= ? ORDER BY YCSB_KEY LIMIT ?`; every statement prepared once
//! per connection, one connection per client thread, autocommit.

use anyhow::{Context, Result};
use postgres::types::ToSql;
use postgres::{Client, Statement};

use super::server_ns::{field_statement, field_texts, key_text, layout_settings, owned_namespace};
use crate::kv::engine::{KvEngine, KvSession};
use crate::servers::{postgres as pg, Endpoint, Server};

pub struct Pg {
    ep: Endpoint,
    /// The schema of an existing server; `None`: `public` of iolab's database.
    schema: Option<String>,
    fields: usize,
    version: String,
    settings: Vec<(String, String)>,
}

fn columns(fields: usize) -> Vec<String> {
    (0..fields).map(|i| format!("field{i}")).collect()
}

impl Pg {
    pub fn open(server: &Server, fields: usize) -> Result<Pg> {
        let ep = server.endpoint().clone();
        let schema = owned_namespace(server);
        let mut c = pg::connect(&ep, &ep.database)?;
        if let Some(s) = &schema {
            c.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {s}"))
                .with_context(|| format!("creating schema {s} on {}", ep.display_url()))?;
        }
        let table = format!(
            "{}usertable",
            schema.as_ref().map(|s| format!("{s}.")).unwrap_or_default()
        );
        let cols: Vec<String> = columns(fields)
            .iter()
            .map(|c| format!("{c} TEXT"))
            .collect();
        c.batch_execute(&format!(
            "DROP TABLE IF EXISTS {table}; \
             CREATE TABLE {table} (ycsb_key VARCHAR(255) PRIMARY KEY, {})",
            cols.join(", ")
        ))
        .with_context(|| format!("creating {table}"))?;
        let shape = format!(
            "usertable (YCSB_KEY VARCHAR(255) PRIMARY KEY, FIELD0..FIELD{} TEXT)",
            fields - 1
        );
        Ok(Pg {
            settings: layout_settings(server, fields, &schema, &shape),
            version: format!("{} (rust postgres 0.19)", server.version()),
            ep,
            schema,
            fields,
        })
    }
}

impl KvEngine for Pg {
    fn name(&self) -> &'static str {
        "postgres"
    }
    fn version(&self) -> String {
        self.version.clone()
    }
    fn settings(&self) -> Vec<(String, String)> {
        self.settings.clone()
    }
    fn session(&self) -> Result<Box<dyn KvSession + '_>> {
        Ok(Box::new(PgSession::new(self)?))
    }
    fn flush(&self) -> Result<()> {
        // Every commit is durable already (fsync and synchronous_commit on).
        Ok(())
    }
    fn field_count(&self) -> Option<usize> {
        Some(self.fields)
    }
    fn reset(&self) -> Result<()> {
        let mut c = pg::connect_in(&self.ep, &self.ep.database, self.schema.as_deref())?;
        c.batch_execute("TRUNCATE usertable")?;
        Ok(())
    }
    fn cleanup(&self) -> Result<()> {
        if let Some(s) = &self.schema {
            let mut c = pg::connect(&self.ep, &self.ep.database)?;
            c.batch_execute(&format!("DROP SCHEMA IF EXISTS {s} CASCADE"))?;
        }
        Ok(())
    }
}

struct PgSession {
    c: Client,
    fields: usize,
    insert: Statement,
    read: Statement,
    update_all: Statement,
    /// `UPDATE ... SET FIELDi = $1`, prepared at first use.
    update_one: Vec<Option<Statement>>,
    scan: Statement,
    delete: Statement,
    scratch: Vec<u8>,
}

impl PgSession {
    fn new(e: &Pg) -> Result<PgSession> {
        let mut c = pg::connect_in(&e.ep, &e.ep.database, e.schema.as_deref())?;
        let cols = columns(e.fields);
        let marks: Vec<String> = (2..=cols.len() + 1).map(|i| format!("${i}")).collect();
        let sets: Vec<String> = cols
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c} = ${}", i + 2))
            .collect();
        let insert = c.prepare(&format!(
            "INSERT INTO usertable (ycsb_key, {}) VALUES ($1, {})",
            cols.join(", "),
            marks.join(", ")
        ))?;
        let read = c.prepare("SELECT * FROM usertable WHERE ycsb_key = $1")?;
        let update_all = c.prepare(&format!(
            "UPDATE usertable SET {} WHERE ycsb_key = $1",
            sets.join(", ")
        ))?;
        let scan =
            c.prepare("SELECT * FROM usertable WHERE ycsb_key >= $1 ORDER BY ycsb_key LIMIT $2")?;
        let delete = c.prepare("DELETE FROM usertable WHERE ycsb_key = $1")?;
        Ok(PgSession {
            c,
            fields: e.fields,
            insert,
            read,
            update_all,
            update_one: vec![None; e.fields],
            scan,
            delete,
            scratch: Vec::new(),
        })
    }

    /// Key and fields as statement parameters, in column order.
    fn write_all(&mut self, which: &Statement, key: &[u8], record: &[u8]) -> Result<u64> {
        let k = key_text(key)?;
        let f = field_texts(record, self.fields)?;
        let mut params: Vec<&(dyn ToSql + Sync)> = Vec::with_capacity(f.len() + 1);
        params.push(&k);
        params.extend(f.iter().map(|s| s as &(dyn ToSql + Sync)));
        Ok(self.c.execute(which, &params)?)
    }
}

/// The fields of `row` (after its key column) concatenated into `out`.
fn row_record(row: &postgres::Row, out: &mut Vec<u8>) -> Result<()> {
    out.clear();
    for i in 1..row.len() {
        let f: Option<&str> = row.try_get(i)?;
        out.extend_from_slice(f.unwrap_or("").as_bytes());
    }
    Ok(())
}

impl KvSession for PgSession {
    fn insert(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let st = self.insert.clone();
        self.write_all(&st, key, value)?;
        Ok(())
    }
    fn update(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let st = self.update_all.clone();
        self.write_all(&st, key, value)?;
        Ok(())
    }
    fn update_field(&mut self, key: &[u8], index: usize, value: &[u8]) -> Result<()> {
        let k = key_text(key)?;
        let v = std::str::from_utf8(value).context("field is not text")?;
        let c = &mut self.c;
        let st = field_statement(&mut self.update_one, index, "field", |i| {
            Ok(c.prepare(&format!(
                "UPDATE usertable SET field{i} = $1 WHERE ycsb_key = $2"
            ))?)
        })?;
        self.c.execute(&st, &[&v, &k])?;
        Ok(())
    }
    fn read(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let k = key_text(key)?;
        match self.c.query_opt(&self.read, &[&k])? {
            Some(row) => {
                row_record(&row, out)?;
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
        let k = key_text(start)?;
        let rows = self.c.query(&self.scan, &[&k, &(count as i64)])?;
        for row in &rows {
            let key: &str = row.try_get(0)?;
            row_record(row, &mut self.scratch)?;
            visit(key.as_bytes(), &self.scratch);
        }
        Ok(rows.len())
    }
    fn delete(&mut self, key: &[u8]) -> Result<bool> {
        let k = key_text(key)?;
        Ok(self.c.execute(&self.delete, &[&k])? > 0)
    }
    fn next_in_order(&mut self, _visit: &mut dyn FnMut(&[u8], &[u8])) -> Result<bool> {
        anyhow::bail!("db_bench's readseq does not run on servers")
    }
}
