//! The settings of a private server iolab starts: the few every study
//! varies (PostgreSQL's shared_buffers and WAL size, MariaDB's buffer pool
//! and flush method, Redis's persistence and appendfsync) and any other
//! server option passed as is (`--server-set KEY=VALUE`).

use crate::error::usage;

/// Redis persistence (`--persistence`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Persistence {
    /// Append-only file, fsynced as `appendfsync` says.
    Aof,
    /// RDB snapshots (Redis's default `save` points).
    Rdb,
    /// Nothing on disk.
    None,
}

impl Persistence {
    pub fn parse(s: &str) -> Option<Persistence> {
        Some(match s {
            "aof" => Persistence::Aof,
            "rdb" => Persistence::Rdb,
            "none" => Persistence::None,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Persistence::Aof => "aof",
            Persistence::Rdb => "rdb",
            Persistence::None => "none",
        }
    }
}

/// Settings of a private server; `None` leaves the server's default.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSettings {
    /// PostgreSQL `shared_buffers` (bytes).
    pub shared_buffers: Option<u64>,
    /// PostgreSQL `max_wal_size` (bytes).
    pub max_wal_size: Option<u64>,
    /// MariaDB `innodb_buffer_pool_size` (bytes).
    pub buffer_pool: Option<u64>,
    /// MariaDB `innodb_flush_method` (iolab's default: O_DIRECT).
    pub flush_method: String,
    /// Redis persistence.
    pub persistence: Persistence,
    /// Redis `appendfsync`: always, everysec or no.
    pub appendfsync: String,
    /// Cassandra's JVM heap (bytes; `servers::cassandra::DEFAULT_HEAP`).
    pub heap: Option<u64>,
    /// Cassandra's commit log in a directory of its own under this one
    /// (another medium), instead of beside the data.
    pub commitlog_dir: Option<std::path::PathBuf>,
    /// Other server options, passed as is.
    pub set: Vec<(String, String)>,
}

impl Default for ServerSettings {
    fn default() -> Self {
        ServerSettings {
            shared_buffers: None,
            max_wal_size: None,
            buffer_pool: None,
            flush_method: "O_DIRECT".into(),
            persistence: Persistence::Aof,
            appendfsync: "everysec".into(),
            heap: None,
            commitlog_dir: None,
            set: Vec::new(),
        }
    }
}

impl ServerSettings {
    /// Check what can be checked without a server.
    pub fn validate(&self) -> anyhow::Result<()> {
        if !["always", "everysec", "no"].contains(&self.appendfsync.as_str()) {
            return Err(usage("--appendfsync", "must be always, everysec or no"));
        }
        let methods = [
            "O_DIRECT",
            "O_DIRECT_NO_FSYNC",
            "fsync",
            "O_DSYNC",
            "littlesync",
            "nosync",
        ];
        if !methods.contains(&self.flush_method.as_str()) {
            return Err(usage(
                "--flush-method",
                format!("must be one of {}", methods.join(", ")),
            ));
        }
        if let Some(h) = self.heap {
            if h < (256 << 20) {
                return Err(usage("--heap", "Cassandra needs a heap of at least 256m"));
            }
        }
        for (k, v) in &self.set {
            let ok_key = !k.is_empty()
                && k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.');
            if !ok_key {
                return Err(usage(
                    "--server-set",
                    format!("'{k}' is not a server option name (letters, digits, _ - .)"),
                ));
            }
            if v.contains(['\n', '\r', '\0']) {
                return Err(usage(
                    "--server-set",
                    format!("the value of {k} has a line break"),
                ));
            }
        }
        Ok(())
    }

    /// Parse one `--server-set KEY=VALUE`.
    pub fn parse_set(s: &str) -> anyhow::Result<(String, String)> {
        match s.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
            _ => Err(usage("--server-set", format!("'{s}' is not KEY=VALUE"))),
        }
    }
}
