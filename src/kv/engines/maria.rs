//! MariaDB (InnoDB) as a YCSB store, with YCSB's JDBC binding's table and
//! statements (see `pg.rs`): server-side prepared statements (the binary
//! protocol), one connection per client thread, autocommit.

use anyhow::{Context, Result};
use mysql::prelude::Queryable;
use mysql::{Conn, Params, Statement, Value};

use super::server_ns::{field_statement, field_texts, key_text, layout_settings, owned_namespace};
use crate::kv::engine::{KvEngine, KvSession};
use crate::servers::{mariadb as maria, Endpoint, Server};

pub struct Maria {
    ep: Endpoint,
    /// The database the table is in: iolab's own on a private server, or
    /// `iolab_<pid>` made on an existing one.
    database: String,
    owned_database: bool,
    fields: usize,
    version: String,
    settings: Vec<(String, String)>,
}

fn columns(fields: usize) -> Vec<String> {
    (0..fields).map(|i| format!("FIELD{i}")).collect()
}

impl Maria {
    pub fn open(server: &Server, fields: usize) -> Result<Maria> {
        let ep = server.endpoint().clone();
        let ns = owned_namespace(server);
        let database = ns.clone().unwrap_or_else(|| ep.database.clone());
        let mut c = maria::connect(&ep, if ns.is_some() { "" } else { &database })?;
        if ns.is_some() {
            c.query_drop(format!("CREATE DATABASE IF NOT EXISTS {database}"))
                .with_context(|| format!("creating database {database} on {}", ep.display_url()))?;
            c.select_db(&database)?;
        }
        let cols: Vec<String> = columns(fields)
            .iter()
            .map(|c| format!("{c} TEXT"))
            .collect();
        c.query_drop("DROP TABLE IF EXISTS usertable")?;
        c.query_drop(format!(
            "CREATE TABLE usertable (YCSB_KEY VARCHAR(255) PRIMARY KEY, {}) ENGINE=InnoDB",
            cols.join(", ")
        ))
        .context("creating usertable")?;
        let shape = format!(
            "usertable (YCSB_KEY VARCHAR(255) PRIMARY KEY, FIELD0..FIELD{} TEXT), InnoDB",
            fields - 1
        );
        Ok(Maria {
            settings: layout_settings(server, fields, &ns, &shape),
            version: format!("{} (rust mysql 28)", server.version()),
            ep,
            owned_database: ns.is_some(),
            database,
            fields,
        })
    }
}

impl KvEngine for Maria {
    fn name(&self) -> &'static str {
        "mariadb"
    }
    fn version(&self) -> String {
        self.version.clone()
    }
    fn settings(&self) -> Vec<(String, String)> {
        self.settings.clone()
    }
    fn session(&self) -> Result<Box<dyn KvSession + '_>> {
        Ok(Box::new(MariaSession::new(self)?))
    }
    fn flush(&self) -> Result<()> {
        // Commits are durable (innodb_flush_log_at_trx_commit=1).
        Ok(())
    }
    fn field_count(&self) -> Option<usize> {
        Some(self.fields)
    }
    fn reset(&self) -> Result<()> {
        let mut c = maria::connect(&self.ep, &self.database)?;
        c.query_drop("TRUNCATE TABLE usertable")?;
        Ok(())
    }
    fn cleanup(&self) -> Result<()> {
        if self.owned_database {
            let mut c = maria::connect(&self.ep, "")?;
            c.query_drop(format!("DROP DATABASE IF EXISTS {}", self.database))?;
        }
        Ok(())
    }
}

struct MariaSession {
    c: Conn,
    fields: usize,
    insert: Statement,
    read: Statement,
    update_all: Statement,
    update_one: Vec<Option<Statement>>,
    scan: Statement,
    delete: Statement,
}

impl MariaSession {
    fn new(e: &Maria) -> Result<MariaSession> {
        let mut c = maria::connect(&e.ep, &e.database)?;
        let cols = columns(e.fields);
        let marks = vec!["?"; cols.len()].join(", ");
        let sets: Vec<String> = cols.iter().map(|c| format!("{c} = ?")).collect();
        let insert = c.prep(format!(
            "INSERT INTO usertable (YCSB_KEY, {}) VALUES (?, {marks})",
            cols.join(", ")
        ))?;
        let read = c.prep("SELECT * FROM usertable WHERE YCSB_KEY = ?")?;
        let update_all = c.prep(format!(
            "UPDATE usertable SET {} WHERE YCSB_KEY = ?",
            sets.join(", ")
        ))?;
        let scan =
            c.prep("SELECT * FROM usertable WHERE YCSB_KEY >= ? ORDER BY YCSB_KEY LIMIT ?")?;
        let delete = c.prep("DELETE FROM usertable WHERE YCSB_KEY = ?")?;
        Ok(MariaSession {
            c,
            fields: e.fields,
            insert,
            read,
            update_all,
            update_one: vec![None; e.fields],
            scan,
            delete,
        })
    }
}

/// The fields of `row` (after its key column) concatenated into `out`.
fn row_record(row: &mysql::Row, out: &mut Vec<u8>) {
    out.clear();
    for i in 1..row.len() {
        if let Some(Value::Bytes(b)) = row.as_ref(i) {
            out.extend_from_slice(b);
        }
    }
}

fn text(v: &str) -> Value {
    Value::Bytes(v.as_bytes().to_vec())
}

impl KvSession for MariaSession {
    fn insert(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut p = vec![text(key_text(key)?)];
        p.extend(field_texts(value, self.fields)?.into_iter().map(text));
        self.c.exec_drop(&self.insert, Params::Positional(p))?;
        Ok(())
    }
    fn update(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut p: Vec<Value> = field_texts(value, self.fields)?
            .into_iter()
            .map(text)
            .collect();
        p.push(text(key_text(key)?));
        self.c.exec_drop(&self.update_all, Params::Positional(p))?;
        Ok(())
    }
    fn update_field(&mut self, key: &[u8], index: usize, value: &[u8]) -> Result<()> {
        let k = key_text(key)?;
        let c = &mut self.c;
        let st = field_statement(&mut self.update_one, index, "FIELD", |i| {
            Ok(c.prep(format!(
                "UPDATE usertable SET FIELD{i} = ? WHERE YCSB_KEY = ?"
            ))?)
        })?;
        self.c.exec_drop(
            &st,
            Params::Positional(vec![Value::Bytes(value.to_vec()), text(k)]),
        )?;
        Ok(())
    }
    fn read(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let k = key_text(key)?;
        let row: Option<mysql::Row> = self.c.exec_first(&self.read, (k,))?;
        match row {
            Some(r) => {
                row_record(&r, out);
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
        let rows: Vec<mysql::Row> = self.c.exec(&self.scan, (k, count as u64))?;
        let mut rec = Vec::new();
        for row in &rows {
            let key = match row.as_ref(0) {
                Some(Value::Bytes(b)) => b.as_slice(),
                _ => &[],
            };
            row_record(row, &mut rec);
            visit(key, &rec);
        }
        Ok(rows.len())
    }
    fn delete(&mut self, key: &[u8]) -> Result<bool> {
        let k = key_text(key)?;
        self.c.exec_drop(&self.delete, (k,))?;
        Ok(self.c.affected_rows() > 0)
    }
    fn next_in_order(&mut self, _visit: &mut dyn FnMut(&[u8], &[u8])) -> Result<bool> {
        anyhow::bail!("db_bench's readseq does not run on servers")
    }
}
