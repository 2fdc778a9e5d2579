//! Cassandra as a YCSB store, with YCSB's cassandra-cql binding's schema
//! and statements: `usertable(y_id varchar PRIMARY KEY, field0..n
//! varchar)` in keyspace `ycsb` (a private server) or iolab's own
//! `iolab_<pid>` (an existing server, dropped at the end); read by key,
//! update of the fields written without reading, scan as
//! `token(y_id) >= token(?) LIMIT ?` (token order, as YCSB scans), every
//! statement prepared once per session with the consistency YCSB's
//! `cassandra.readconsistencylevel` / `cassandra.writeconsistencylevel`
//! name (ONE by default). Values are varchar like YCSB's: iolab's server
//! records are printable text that checks itself (`kv::fields`), so the
//! server stores what YCSB's would, byte for byte. One CQL session per
//! client thread on its own current-thread tokio runtime: a request is
//! sent and its reply read by the client thread itself.

use anyhow::{Context, Result};
use scylla::deserialize::row::ColumnIterator;
use scylla::frame::types::Consistency;
use scylla::response::query_result::QueryResult;
use scylla::statement::prepared::PreparedStatement;

use super::server_ns::{field_statement, field_texts, key_text, layout_settings, owned_namespace};
use crate::error::usage;
use crate::kv::engine::{locked_version, KvEngine, KvSession};
use crate::kv::props::Props;
use crate::servers::cassandra::Cql;
use crate::servers::{Endpoint, Server};

/// The consistency levels of reads (read, scan) and writes (insert,
/// update, delete).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CqlOptions {
    pub read: Consistency,
    pub write: Consistency,
    /// The table's compaction strategy (`--cassandra-compaction`): a class
    /// of `COMPACTIONS`; `None`, the server's default.
    pub compaction: Option<&'static str>,
}

/// Cassandra's compaction strategies: short name, class.
pub const COMPACTIONS: &[(&str, &str)] = &[
    ("stcs", "SizeTieredCompactionStrategy"),
    ("lcs", "LeveledCompactionStrategy"),
    ("ucs", "UnifiedCompactionStrategy"),
    ("twcs", "TimeWindowCompactionStrategy"),
];

/// A strategy by its short name, its class or its class without
/// "CompactionStrategy" (any case): the class.
pub fn parse_compaction(s: &str) -> Option<&'static str> {
    let s = s.trim().to_ascii_lowercase();
    COMPACTIONS.iter().find_map(|&(short, class)| {
        let full = class.to_ascii_lowercase();
        let stem = full.trim_end_matches("compactionstrategy");
        (s == short || s == full || s == stem).then_some(class)
    })
}

/// YCSB's table, with the compaction strategy when one is chosen.
fn create_table(keyspace: &str, fields: usize, compaction: Option<&str>) -> String {
    let cols: Vec<String> = (0..fields).map(|i| format!("field{i} varchar")).collect();
    let with = compaction
        .map(|c| format!(" WITH compaction = {{'class': '{c}'}}"))
        .unwrap_or_default();
    format!(
        "CREATE TABLE {keyspace}.usertable (y_id varchar PRIMARY KEY, {}){with}",
        cols.join(", ")
    )
}

impl Default for CqlOptions {
    fn default() -> Self {
        CqlOptions {
            read: Consistency::One,
            write: Consistency::One,
            compaction: None,
        }
    }
}

/// The YCSB properties this engine reads.
pub const PROPS: &[&str] = &[
    "cassandra.readconsistencylevel",
    "cassandra.writeconsistencylevel",
];

impl CqlOptions {
    /// From YCSB's properties (exit 2 naming the property when unknown).
    pub fn from_props(p: &Props) -> Result<CqlOptions> {
        let level = |k: &str| -> Result<Consistency> {
            match p.get(k) {
                None => Ok(Consistency::One),
                Some(v) => parse_level(v).ok_or_else(|| {
                    usage(
                        k,
                        format!(
                            "'{v}' is not a consistency level (ONE, TWO, THREE, QUORUM, ALL, ANY, \
                             LOCAL_QUORUM, EACH_QUORUM, LOCAL_ONE)"
                        ),
                    )
                }),
            }
        };
        let o = CqlOptions {
            read: level(PROPS[0])?,
            write: level(PROPS[1])?,
            compaction: None,
        };
        if o.read == Consistency::Any {
            return Err(usage(PROPS[0], "ANY applies to writes only"));
        }
        Ok(o)
    }
}

/// The levels a client may ask for, as YCSB (and CQL) spell them.
const LEVELS: &[(&str, Consistency)] = &[
    ("ANY", Consistency::Any),
    ("ONE", Consistency::One),
    ("TWO", Consistency::Two),
    ("THREE", Consistency::Three),
    ("QUORUM", Consistency::Quorum),
    ("ALL", Consistency::All),
    ("LOCAL_QUORUM", Consistency::LocalQuorum),
    ("EACH_QUORUM", Consistency::EachQuorum),
    ("LOCAL_ONE", Consistency::LocalOne),
];

fn parse_level(s: &str) -> Option<Consistency> {
    let s = s.trim().to_ascii_uppercase();
    LEVELS.iter().find(|(n, _)| *n == s).map(|(_, c)| *c)
}

fn level_name(c: Consistency) -> String {
    LEVELS
        .iter()
        .find(|(_, l)| *l == c)
        .map_or_else(|| format!("{c:?}"), |(n, _)| n.to_string())
}

pub struct CassandraKv {
    ep: Endpoint,
    keyspace: String,
    /// iolab created the keyspace on a server it did not start: dropped at the end.
    drop_keyspace: bool,
    fields: usize,
    cql: CqlOptions,
    version: String,
    settings: Vec<(String, String)>,
}

fn columns(fields: usize) -> String {
    (0..fields)
        .map(|i| format!("field{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl CassandraKv {
    pub fn open(server: &Server, fields: usize, cql: CqlOptions) -> Result<CassandraKv> {
        let ep = server.endpoint().clone();
        let ns = owned_namespace(server);
        let keyspace = match (&ns, ep.database.is_empty()) {
            (None, _) | (Some(_), false) => ep.database.clone(),
            (Some(n), true) => n.clone(),
        };
        let c = Cql::connect(&ep, None)?;
        if !server.is_private() {
            let found = c.texts(&format!(
                "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = '{keyspace}'"
            ))?;
            if !found.is_empty() {
                return Err(usage(
                    "--server-url",
                    format!(
                        "keyspace {keyspace} exists on {}; iolab creates a keyspace of its own and drops it \
                         at the end: name one that does not exist, or none (iolab_<pid>)",
                        ep.display_url()
                    ),
                ));
            }
        }
        c.run(&format!(
            "CREATE KEYSPACE IF NOT EXISTS {keyspace} WITH replication = \
             {{'class': 'SimpleStrategy', 'replication_factor': 1}}"
        ))?;
        c.run(&format!("DROP TABLE IF EXISTS {keyspace}.usertable"))?;
        c.run(&create_table(&keyspace, fields, cql.compaction))?;
        let shape = format!(
            "{keyspace}.usertable (y_id varchar PRIMARY KEY, field0..field{} varchar), \
             SimpleStrategy replication_factor 1 (YCSB's cassandra-cql)",
            fields - 1
        );
        let mut settings = layout_settings(
            server,
            fields,
            &ns.as_ref().map(|_| keyspace.clone()),
            &shape,
        );
        settings.push(("readconsistencylevel".into(), level_name(cql.read)));
        settings.push(("writeconsistencylevel".into(), level_name(cql.write)));
        settings.push((
            "compaction".into(),
            match cql.compaction {
                Some(c) => c.to_string(),
                None => "the server's default".into(),
            },
        ));
        Ok(CassandraKv {
            version: format!(
                "{} (rust scylla {})",
                server.version(),
                locked_version("scylla")
            ),
            drop_keyspace: !server.is_private(),
            ep,
            keyspace,
            fields,
            cql,
            settings,
        })
    }
}

impl KvEngine for CassandraKv {
    fn name(&self) -> &'static str {
        "cassandra"
    }
    fn version(&self) -> String {
        self.version.clone()
    }
    fn settings(&self) -> Vec<(String, String)> {
        self.settings.clone()
    }
    fn session(&self) -> Result<Box<dyn KvSession + '_>> {
        Ok(Box::new(CqlSession::new(self)?))
    }
    fn flush(&self) -> Result<()> {
        // Writes are in the commit log as commitlog_sync says; memtables
        // flush on their own, as in a YCSB run.
        Ok(())
    }
    fn field_count(&self) -> Option<usize> {
        Some(self.fields)
    }
    fn reset(&self) -> Result<()> {
        let c = Cql::connect(&self.ep, None)?;
        c.run(&format!("TRUNCATE {}.usertable", self.keyspace))?;
        Ok(())
    }
    fn cleanup(&self) -> Result<()> {
        if self.drop_keyspace {
            let c = Cql::connect(&self.ep, None)?;
            c.run(&format!("DROP KEYSPACE IF EXISTS {}", self.keyspace))?;
        }
        Ok(())
    }
}

struct CqlSession {
    c: Cql,
    fields: usize,
    write: Consistency,
    insert: PreparedStatement,
    read: PreparedStatement,
    update_all: PreparedStatement,
    /// `UPDATE usertable SET fieldI = ? WHERE y_id = ?`, prepared at first use.
    update_one: Vec<Option<PreparedStatement>>,
    scan: PreparedStatement,
    delete: PreparedStatement,
    scratch: Vec<u8>,
}

impl CqlSession {
    fn new(e: &CassandraKv) -> Result<CqlSession> {
        let c = Cql::connect(&e.ep, Some(&e.keyspace))?;
        let cols = columns(e.fields);
        let marks = vec!["?"; e.fields].join(", ");
        let sets: Vec<String> = (0..e.fields).map(|i| format!("field{i} = ?")).collect();
        let prepare = |cql: String, level: Consistency| -> Result<PreparedStatement> {
            let mut st =
                c.rt.block_on(c.session.prepare(cql.as_str()))
                    .with_context(|| format!("preparing {cql}"))?;
            st.set_consistency(level);
            Ok(st)
        };
        let (r, w) = (e.cql.read, e.cql.write);
        let insert = prepare(
            format!("INSERT INTO usertable (y_id, {cols}) VALUES (?, {marks})"),
            w,
        )?;
        let read = prepare(
            format!("SELECT {cols} FROM usertable WHERE y_id = ? LIMIT 1"),
            r,
        )?;
        let update_all = prepare(
            format!("UPDATE usertable SET {} WHERE y_id = ?", sets.join(", ")),
            w,
        )?;
        let scan = prepare(
            format!("SELECT y_id, {cols} FROM usertable WHERE token(y_id) >= token(?) LIMIT ?"),
            r,
        )?;
        let delete = prepare("DELETE FROM usertable WHERE y_id = ?".into(), w)?;
        Ok(CqlSession {
            c,
            fields: e.fields,
            write: w,
            insert,
            read,
            update_all,
            update_one: vec![None; e.fields],
            scan,
            delete,
            scratch: Vec::new(),
        })
    }

    fn execute(
        &self,
        st: &PreparedStatement,
        values: impl scylla::serialize::row::SerializeRow,
    ) -> Result<QueryResult> {
        Ok(self
            .c
            .rt
            .block_on(self.c.session.execute_unpaged(st, values))?)
    }
}

/// The text columns from `first` on of `row`, concatenated into `out`; a
/// null field leaves a record that fails its check.
fn row_record(row: ColumnIterator<'_, '_>, first: usize, out: &mut Vec<u8>) -> Result<()> {
    out.clear();
    for col in row.skip(first) {
        if let Some(s) = col?.slice {
            out.extend_from_slice(s.as_slice());
        }
    }
    Ok(())
}

impl KvSession for CqlSession {
    fn insert(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut v = field_texts(value, self.fields)?;
        v.insert(0, key_text(key)?);
        self.execute(&self.insert, &v)?;
        Ok(())
    }
    fn update(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut v = field_texts(value, self.fields)?;
        v.push(key_text(key)?);
        self.execute(&self.update_all, &v)?;
        Ok(())
    }
    fn update_field(&mut self, key: &[u8], index: usize, value: &[u8]) -> Result<()> {
        let k = key_text(key)?;
        let v = std::str::from_utf8(value).context("field is not text")?;
        let (c, write) = (&self.c, self.write);
        let st = field_statement(&mut self.update_one, index, "field", |i| {
            let cql = format!("UPDATE usertable SET field{i} = ? WHERE y_id = ?");
            let mut st = c.rt.block_on(c.session.prepare(cql.as_str()))?;
            st.set_consistency(write);
            Ok(st)
        })?;
        self.execute(&st, (v, k))?;
        Ok(())
    }
    fn read(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let k = key_text(key)?;
        let rows = self.execute(&self.read, (k,))?.into_rows_result()?;
        let mut it = rows.rows::<ColumnIterator>()?;
        match it.next() {
            Some(row) => {
                row_record(row?, 0, out)?;
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
        let limit = i32::try_from(count).unwrap_or(i32::MAX);
        let rows = self.execute(&self.scan, (k, limit))?.into_rows_result()?;
        let mut n = 0;
        for row in rows.rows::<ColumnIterator>()? {
            let mut row = row?;
            let key = match row.next() {
                Some(c) => c?.slice.map(|s| s.as_slice()).unwrap_or_default(),
                None => continue,
            };
            row_record(row, 0, &mut self.scratch)?;
            visit(key, &self.scratch);
            n += 1;
        }
        Ok(n)
    }
    fn delete(&mut self, key: &[u8]) -> Result<bool> {
        let k = key_text(key)?;
        self.execute(&self.delete, (k,))?;
        // CQL's DELETE does not say whether the row existed.
        Ok(true)
    }
    fn next_in_order(&mut self, _visit: &mut dyn FnMut(&[u8], &[u8])) -> Result<bool> {
        anyhow::bail!("db_bench's readseq does not run on servers")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compaction_strategies_by_any_name_go_into_create_table() {
        assert_eq!(parse_compaction("lcs"), Some("LeveledCompactionStrategy"));
        assert_eq!(
            parse_compaction("Leveled"),
            Some("LeveledCompactionStrategy")
        );
        assert_eq!(
            parse_compaction("UnifiedCompactionStrategy"),
            Some("UnifiedCompactionStrategy")
        );
        assert_eq!(
            parse_compaction("stcs"),
            Some("SizeTieredCompactionStrategy")
        );
        assert_eq!(parse_compaction("Leveled'}; DROP"), None);
        assert_eq!(parse_compaction(""), None);
        assert_eq!(
            create_table("ycsb", 2, Some("LeveledCompactionStrategy")),
            "CREATE TABLE ycsb.usertable (y_id varchar PRIMARY KEY, field0 varchar, field1 varchar) \
             WITH compaction = {'class': 'LeveledCompactionStrategy'}"
        );
        assert_eq!(
            create_table("ycsb", 1, None),
            "CREATE TABLE ycsb.usertable (y_id varchar PRIMARY KEY, field0 varchar)"
        );
    }

    #[test]
    fn consistency_levels_as_ycsb_spells_them() {
        let mut p = Props::default();
        assert_eq!(CqlOptions::from_props(&p).unwrap(), CqlOptions::default());
        p.set("cassandra.readconsistencylevel", "quorum");
        p.set("cassandra.writeconsistencylevel", "LOCAL_ONE");
        let o = CqlOptions::from_props(&p).unwrap();
        assert_eq!(
            (o.read, o.write),
            (Consistency::Quorum, Consistency::LocalOne)
        );
        assert_eq!(level_name(o.write), "LOCAL_ONE");
        p.set("cassandra.writeconsistencylevel", "MOST");
        let e = CqlOptions::from_props(&p).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert!(format!("{e:#}").contains("cassandra.writeconsistencylevel"));
        p.set("cassandra.writeconsistencylevel", "ONE");
        p.set("cassandra.readconsistencylevel", "ANY");
        assert!(CqlOptions::from_props(&p).is_err());
    }
}
