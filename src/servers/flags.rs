//! The server flags `kv` and `oltp` share, as given (`ServerFlags`, copied
//! from `cli::server::ServerArgs` by commands/server_flags.rs), to
//! `ServerSettings`, checked (moved from commands/server_flags.rs).

use crate::error::usage;
use crate::plan::units::Size;
use crate::servers::settings::{Persistence, ServerSettings};

/// The server flags as given (`cli::server::ServerArgs` documents each).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerFlags {
    pub server_url: Option<String>,
    pub shared_buffers: Option<Size>,
    pub max_wal_size: Option<Size>,
    pub buffer_pool: Option<Size>,
    pub flush_method: String,
    pub persistence: String,
    pub appendfsync: String,
    pub heap: Option<Size>,
    pub commitlog_dir: Option<std::path::PathBuf>,
    pub server_set: Vec<String>,
}

/// The settings named on the command line, checked (exit 2 naming the
/// flag).
pub fn settings(a: &ServerFlags) -> anyhow::Result<ServerSettings> {
    let size = |flag: &str, v: &Option<Size>| -> anyhow::Result<Option<u64>> {
        match v {
            None => Ok(None),
            Some(s) => {
                let n = s.bytes();
                if n == 0 {
                    return Err(usage(flag, "must be more than 0"));
                }
                Ok(Some(n))
            }
        }
    };
    let persistence = Persistence::parse(&a.persistence)
        .ok_or_else(|| usage("--persistence", "must be aof, rdb or none"))?;
    let s = ServerSettings {
        shared_buffers: size("--shared-buffers", &a.shared_buffers)?,
        max_wal_size: size("--max-wal-size", &a.max_wal_size)?,
        buffer_pool: size("--buffer-pool", &a.buffer_pool)?,
        flush_method: a.flush_method.clone(),
        persistence,
        appendfsync: a.appendfsync.clone(),
        heap: size("--heap", &a.heap)?,
        commitlog_dir: a.commitlog_dir.clone(),
        set: a
            .server_set
            .iter()
            .map(|s| ServerSettings::parse_set(s))
            .collect::<anyhow::Result<_>>()?,
    };
    s.validate()?;
    Ok(s)
}

/// Whether anything was set that only a private server takes.
pub fn private_only(a: &ServerFlags) -> Option<&'static str> {
    if a.shared_buffers.is_some() {
        Some("--shared-buffers")
    } else if a.max_wal_size.is_some() {
        Some("--max-wal-size")
    } else if a.buffer_pool.is_some() {
        Some("--buffer-pool")
    } else if a.heap.is_some() {
        Some("--heap")
    } else if a.commitlog_dir.is_some() {
        Some("--commitlog-dir")
    } else if !a.server_set.is_empty() {
        Some("--server-set")
    } else {
        None
    }
}
