//! The key-value engine interface every adapter implements, and its options;
//! the engines as a closed set (`KvEngineKind`, each one's facts in a row
//! of `FACTS`) and the factory that opens them (`open`, `open_server`).
//!
//! An engine is opened once and shared by reference; each worker thread
//! takes its own `KvSession` (its own connection, transactions and buffers),
//! so the hot path takes no lock of iolab's.

use anyhow::Result;
use std::path::Path;

use crate::servers::ServerKind;

/// One worker's handle on an engine.
pub trait KvSession {
    /// Insert a new record (or replace it).
    fn insert(&mut self, key: &[u8], value: &[u8]) -> Result<()>;
    /// Replace an existing record.
    fn update(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.insert(key, value)
    }
    /// Read `key` into `out`; false when it does not exist.
    fn read(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool>;
    /// Read `key` and show its value to `visit`, in place where the engine
    /// can (RocksDB's pinned slice), else through `scratch`; false when it
    /// does not exist.
    fn read_with(
        &mut self,
        key: &[u8],
        scratch: &mut Vec<u8>,
        visit: &mut dyn FnMut(&[u8]),
    ) -> Result<bool> {
        if !self.read(key, scratch)? {
            return Ok(false);
        }
        visit(scratch);
        Ok(true)
    }
    /// Visit up to `count` records in key order starting at `start`
    /// (inclusive); returns how many were visited.
    fn scan(
        &mut self,
        start: &[u8],
        count: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize>;
    /// Delete `key`; true when it existed (engines that cannot tell say true).
    fn delete(&mut self, key: &[u8]) -> Result<bool>;
    /// Visit the next record in key order from this session's one sequential
    /// cursor (db_bench's readseq iterator), opened at the first key on the
    /// first call; false at the end of the database, where the cursor closes.
    fn next_in_order(&mut self, visit: &mut dyn FnMut(&[u8], &[u8])) -> Result<bool>;
    /// Replace field `index` of a record of an engine that keeps fields
    /// apart (`KvEngine::fields`), without reading it.
    fn update_field(&mut self, _key: &[u8], _index: usize, _value: &[u8]) -> Result<()> {
        anyhow::bail!("this engine stores records whole: update_field does not apply")
    }
}

/// An opened database.
pub trait KvEngine: Send + Sync {
    /// Short engine name (`rocksdb`, `lmdb`, ...).
    fn name(&self) -> &'static str;
    /// Library version and build actually in use.
    fn version(&self) -> String;
    /// The effective options, as (name, value) pairs, for printing and provenance.
    fn settings(&self) -> Vec<(String, String)>;
    /// A per-thread session.
    fn session(&self) -> Result<Box<dyn KvSession + '_>>;
    /// Make everything written so far durable (end of a phase).
    fn flush(&self) -> Result<()>;
    /// Engine statistics (compaction, stalls, cache) where available.
    fn stats(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    /// Run a db_bench chain step (`kv::chain`). Engines without background
    /// work: `flush` and `compact` make what was written durable and
    /// `waitforcompaction` has nothing to wait for.
    fn chain_step(&self, step: super::chain::ChainStep) -> Result<()> {
        match step {
            super::chain::ChainStep::WaitForCompaction => Ok(()),
            super::chain::ChainStep::Flush | super::chain::ChainStep::Compact => self.flush(),
        }
    }
    /// The LSM tree's background state (RocksDB); `None` for other engines.
    fn lsm_state(&self) -> Option<super::lsm::LsmState> {
        None
    }
    /// Whether reads return what was written (false for the null engine).
    fn stores_data(&self) -> bool {
        true
    }
    /// Bytes the engine may still write to its file system after its
    /// writers stop (memtables a flush writes, a compaction under way), the
    /// part of a phase's free-space reserve that is the engine's
    /// (`kv::space`); `None`: it needs no watch (writes nothing, or into
    /// space reserved beforehand).
    fn space_reserve(&self) -> Option<u64> {
        Some(0)
    }
    /// Servers keep YCSB's fields apart (a column or a hash field each):
    /// records are this many equal fields concatenated, checked field by
    /// field (`kv::fields`). `None`: records are one value (`kv::value`).
    fn field_count(&self) -> Option<usize> {
        None
    }
    /// Empty the database before a load (servers: a YCSB load inserts,
    /// and a second load of the same keys would collide).
    fn reset(&self) -> Result<()> {
        Ok(())
    }
    /// Drop what iolab created on a server it did not start (its schema,
    /// database or keys), at the end of the run.
    fn cleanup(&self) -> Result<()> {
        Ok(())
    }
}

/// Which engine to open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvEngineKind {
    Rocksdb,
    Lmdb,
    Sqlite,
    Redb,
    Fjall,
    /// MongoDB's storage engine (libwiredtiger).
    Wiredtiger,
    /// Does nothing: measures the driver's own per-operation cost.
    Null,
    /// Servers (`crate::servers`): YCSB's JDBC table layout, Redis hashes,
    /// YCSB's cassandra-cql table or MongoDB documents.
    Postgres,
    Mariadb,
    Redis,
    Cassandra,
    /// MongoDB's wire protocol (a user's MongoDB, or a private FerretDB).
    Mongodb,
}

impl KvEngineKind {
    /// Every engine, in `--engine`'s order.
    pub const ALL: [KvEngineKind; 12] = {
        let mut all = [KvEngineKind::Null; FACTS.len()];
        let mut i = 0;
        while i < FACTS.len() {
            all[i] = FACTS[i].kind;
            i += 1;
        }
        all
    };

    /// Every engine, in `--engine`'s order.
    pub fn all() -> impl Iterator<Item = KvEngineKind> {
        FACTS.iter().map(|f| f.kind)
    }

    /// Its row of `FACTS`.
    pub fn facts(self) -> &'static KvEngineFacts {
        &ROWS[self as usize]
    }

    pub fn parse(s: &str) -> Option<KvEngineKind> {
        FACTS.iter().find(|f| f.name == s).map(|f| f.kind)
    }

    pub fn name(self) -> &'static str {
        self.facts().name
    }

    /// The server behind a server engine (named after it); `None` for
    /// embedded engines.
    pub fn server(self) -> Option<ServerKind> {
        self.facts().server.then(|| {
            ServerKind::parse(self.name()).expect("a server engine is named after its server")
        })
    }

    /// The embedded engine of iolab's own steps (`iolab run`'s kv step,
    /// `iolab remote`'s database): db_bench's.
    pub const fn reference() -> KvEngineKind {
        KvEngineKind::Rocksdb
    }
}

/// One kv engine's facts: everything iolab knows about it outside its
/// adapter (kv/engines/) and the factory that opens it (`open`,
/// `open_server`).
#[derive(Debug, Clone, Copy)]
pub struct KvEngineFacts {
    pub kind: KvEngineKind,
    /// Its name in `--engine`, plan files and results.
    pub name: &'static str,
    /// A server engine, named after its server (`ServerKind::name`).
    pub server: bool,
    /// Keeps what it is given (all but null): a load needs room and an
    /// order of benchmarks that reads what was written.
    pub stores_data: bool,
    /// Compresses blocks (`--compression`).
    pub compresses: bool,
    /// Opens a raw block device as its data file (`--make raw`).
    pub raw_device: bool,
    /// With `--mmap`, the data file it maps whole (the map size is taken
    /// on disk).
    pub mapped_file: Option<&'static str>,
    /// Takes WiredTiger's options and checks (`--wt-*`, its cache floor).
    pub wiredtiger_options: bool,
    /// What it keeps in memory (a `--memory-limit` below it warns).
    pub memory: KvMemory,
    /// What iolab makes on its server and drops at the end.
    pub server_object: &'static str,
    /// Its YCSB binding's properties it reads (not reported unused).
    pub ycsb_props: &'static [&'static str],
    /// Takes `--cassandra-compaction`.
    pub compaction: bool,
    /// Its private server takes the private-server flags (mongodb's is a
    /// FerretDB, which takes none).
    pub private_flags: bool,
}

/// What an engine keeps in memory, for `--memory-limit`.
#[derive(Debug, Clone, Copy)]
pub enum KvMemory {
    /// In iolab's process: this many bytes of cache and memtables.
    Embedded(fn(&EngineOptions) -> u64),
    /// A private server in iolab's cgroup: its own memory, said so
    /// (" (the InnoDB buffer pool)", or "").
    Server(&'static str),
}

const EMBEDDED: KvEngineFacts = KvEngineFacts {
    kind: KvEngineKind::Null,
    name: "",
    server: false,
    stores_data: true,
    compresses: false,
    raw_device: false,
    mapped_file: None,
    wiredtiger_options: false,
    memory: KvMemory::Embedded(|o| o.cache_size),
    server_object: "table",
    ycsb_props: &[],
    compaction: false,
    private_flags: true,
};

const fn embedded(kind: KvEngineKind, name: &'static str) -> KvEngineFacts {
    KvEngineFacts {
        kind,
        name,
        ..EMBEDDED
    }
}

const fn server(kind: KvEngineKind, name: &'static str, memory: &'static str) -> KvEngineFacts {
    KvEngineFacts {
        server: true,
        memory: KvMemory::Server(memory),
        ..embedded(kind, name)
    }
}

/// The kv engines' facts, one row per engine in declaration order.
pub const FACTS: [KvEngineFacts; 12] = [
    KvEngineFacts {
        compresses: true,
        memory: KvMemory::Embedded(|o| o.cache_size + 2 * o.write_buffer_size),
        ..embedded(KvEngineKind::Rocksdb, "rocksdb")
    },
    KvEngineFacts {
        raw_device: true,
        mapped_file: Some("data.mdb"),
        memory: KvMemory::Embedded(|_| 0),
        ..embedded(KvEngineKind::Lmdb, "lmdb")
    },
    embedded(KvEngineKind::Sqlite, "sqlite"),
    embedded(KvEngineKind::Redb, "redb"),
    KvEngineFacts {
        compresses: true,
        memory: KvMemory::Embedded(|o| o.cache_size + o.write_buffer_size),
        ..embedded(KvEngineKind::Fjall, "fjall")
    },
    KvEngineFacts {
        wiredtiger_options: true,
        ..embedded(KvEngineKind::Wiredtiger, "wiredtiger")
    },
    KvEngineFacts {
        stores_data: false,
        memory: KvMemory::Embedded(|_| 0),
        ..embedded(KvEngineKind::Null, "null")
    },
    server(
        KvEngineKind::Postgres,
        "postgres",
        " (shared_buffers and its processes)",
    ),
    server(
        KvEngineKind::Mariadb,
        "mariadb",
        " (the InnoDB buffer pool)",
    ),
    KvEngineFacts {
        server_object: "keys",
        ..server(
            KvEngineKind::Redis,
            "redis",
            " (every record: Redis keeps the whole dataset in memory)",
        )
    },
    KvEngineFacts {
        server_object: "keyspace",
        ycsb_props: super::engines::cassandra::PROPS,
        compaction: true,
        ..server(
            KvEngineKind::Cassandra,
            "cassandra",
            " (the JVM's heap and off-heap memory)",
        )
    },
    KvEngineFacts {
        server_object: "database",
        private_flags: false,
        ..server(KvEngineKind::Mongodb, "mongodb", "")
    },
];

/// `FACTS` in a static, for `KvEngineKind::facts`'s `'static` borrow.
static ROWS: [KvEngineFacts; 12] = FACTS;

/// Block compression for engines that have it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Snappy,
    Lz4,
    Zstd,
    Zlib,
}

impl Compression {
    pub const ALL: [Compression; 5] = [
        Compression::None,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
        Compression::Zlib,
    ];

    pub fn parse(s: &str) -> Option<Compression> {
        Self::ALL.into_iter().find(|c| c.name() == s)
    }

    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
            Compression::Zlib => "zlib",
        }
    }
}

/// WiredTiger's table type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WtTable {
    Btree,
    Lsm,
}

impl WtTable {
    pub const ALL: [WtTable; 2] = [WtTable::Btree, WtTable::Lsm];

    pub fn parse(s: &str) -> Option<WtTable> {
        Self::ALL.into_iter().find(|t| t.name() == s)
    }

    pub fn name(self) -> &'static str {
        match self {
            WtTable::Btree => "btree",
            WtTable::Lsm => "lsm",
        }
    }
}

/// Options common to the engines; each adapter maps what applies to it and
/// reports the effective values through `KvEngine::settings`.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// fsync (or the engine's durable commit) on every write.
    pub sync: bool,
    /// Write-ahead log / journal (RocksDB WAL, SQLite WAL mode).
    pub wal: bool,
    /// Block / page cache size in bytes.
    pub cache_size: u64,
    pub compression: Compression,
    /// O_DIRECT for reads and background writes (RocksDB).
    pub direct_io: bool,
    /// Memory-mapped I/O: RocksDB mmap reads, LMDB MDB_WRITEMAP, SQLite mmap_size.
    pub mmap: bool,
    /// Page size in bytes (SQLite, redb); None = engine default.
    pub page_size: Option<u32>,
    /// LMDB map size (upper bound of the database size).
    pub map_size: u64,
    /// RocksDB memtable size.
    pub write_buffer_size: u64,
    /// RocksDB background jobs.
    pub background_jobs: u32,
    /// OS readahead on the database file (off = LMDB MDB_NORDAHEAD).
    pub readahead: bool,
    /// RocksDB bytes_per_sync and wal_bytes_per_sync (0 = off): write back
    /// files incrementally instead of piling up dirty pages.
    pub bytes_per_sync: u64,
    /// RocksDB enable_pipelined_write (db_bench's default is on).
    pub pipelined_write: bool,
    /// WiredTiger: a btree table or an LSM tree.
    pub wt_table: WtTable,
    /// WiredTiger: seconds between checkpoints (0 = none until a flush;
    /// MongoDB's default is 60).
    pub checkpoint_interval_s: u32,
    /// WiredTiger: a fixed number of eviction threads (MongoDB's is 4), or
    /// None for WiredTiger's own tuning between 1 and 8.
    pub wt_eviction_threads: Option<u32>,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            sync: false,
            wal: true,
            cache_size: 64 << 20,
            compression: Compression::None,
            direct_io: false,
            mmap: false,
            page_size: None,
            map_size: 64 << 30,
            write_buffer_size: 64 << 20,
            background_jobs: 2,
            readahead: true,
            bytes_per_sync: 0,
            pipelined_write: false,
            wt_table: WtTable::Btree,
            checkpoint_interval_s: 60,
            wt_eviction_threads: Some(4),
        }
    }
}

/// Open (creating if needed) the engine's database in directory `dir`.
pub fn open(kind: KvEngineKind, dir: &Path, opts: &EngineOptions) -> Result<Box<dyn KvEngine>> {
    std::fs::create_dir_all(dir)?;
    Ok(match kind {
        KvEngineKind::Rocksdb => Box::new(super::engines::rocks::Rocks::open(dir, opts)?),
        KvEngineKind::Lmdb => Box::new(super::engines::lmdb::Lmdb::open(dir, opts)?),
        KvEngineKind::Sqlite => Box::new(super::engines::sqlite::Sqlite::open(dir, opts)?),
        KvEngineKind::Redb => Box::new(super::engines::redb::Redb::open(dir, opts)?),
        KvEngineKind::Fjall => Box::new(super::engines::fjall::Fjall::open(dir, opts)?),
        KvEngineKind::Wiredtiger => Box::new(super::engines::wt::WiredTiger::open(dir, opts)?),
        KvEngineKind::Null => Box::new(super::engines::null::Null),
        KvEngineKind::Postgres
        | KvEngineKind::Mariadb
        | KvEngineKind::Redis
        | KvEngineKind::Cassandra
        | KvEngineKind::Mongodb => {
            anyhow::bail!(
                "{} is a server: open it with kv::engine::open_server",
                kind.name()
            )
        }
    })
}

/// Open a server engine on `server` with records of `fields` fields: the table or
/// keys go in iolab's own database (a private server) or in a schema,
/// database, keyspace or key prefix of iolab's (an existing server),
/// created now. `cql`: Cassandra's consistency levels.
pub fn open_server(
    server: &crate::servers::Server,
    fields: usize,
    cql: super::engines::cassandra::CqlOptions,
) -> Result<Box<dyn KvEngine>> {
    let kind = KvEngineKind::parse(server.kind().name())
        .filter(|k| k.facts().server)
        .expect("every server has its kv engine");
    Ok(match kind {
        KvEngineKind::Postgres => Box::new(super::engines::pg::Pg::open(server, fields)?),
        KvEngineKind::Mariadb => Box::new(super::engines::maria::Maria::open(server, fields)?),
        KvEngineKind::Redis => Box::new(super::engines::redis::RedisKv::open(server, fields)?),
        KvEngineKind::Cassandra => Box::new(super::engines::cassandra::CassandraKv::open(
            server, fields, cql,
        )?),
        KvEngineKind::Mongodb => Box::new(super::engines::mongo::MongoKv::open(server, fields)?),
        embedded => anyhow::bail!("{} is not a server engine", embedded.name()),
    })
}

/// A crate's version as resolved in Cargo.lock (for provenance).
pub fn locked_version(krate: &str) -> &'static str {
    const LOCK: &str = include_str!("../../Cargo.lock");
    let needle = format!("name = \"{krate}\"\nversion = \"");
    match LOCK.find(&needle) {
        Some(i) => {
            let rest = &LOCK[i + needle.len()..];
            rest.split('"').next().unwrap_or("?")
        }
        None => "?",
    }
}

pub(crate) fn yes(b: bool) -> String {
    if b { "on" } else { "off" }.to_string()
}

pub(crate) fn mib(bytes: u64) -> String {
    format!("{} MiB", bytes >> 20)
}

#[cfg(test)]
mod facts_tests {
    use super::*;

    /// `facts` indexes `FACTS` by discriminant, and a server engine is
    /// named after its server.
    #[test]
    fn each_row_of_facts_is_its_variants() {
        for (i, f) in FACTS.iter().enumerate() {
            assert_eq!(f.kind as usize, i, "{}", f.name);
            assert_eq!(KvEngineKind::parse(f.name), Some(f.kind));
            assert_eq!(
                f.kind.server().map(ServerKind::name),
                f.server.then_some(f.name)
            );
        }
        assert_eq!(KvEngineKind::ALL.len(), FACTS.len());
        for s in ServerKind::all() {
            let k = KvEngineKind::parse(s.name()).unwrap();
            assert_eq!(k.server(), Some(s));
        }
    }
}
