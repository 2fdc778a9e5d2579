//! The private server's flags (`cli::server::ServerArgs`, shared by `kv`
//! and `oltp`) as `servers::flags::ServerFlags`, and checked into
//! `servers::ServerSettings` there: the clap types stay in `cli/` and
//! `commands/`.

use crate::cli::server::ServerArgs;
use crate::servers::flags::{self, ServerFlags};
use crate::servers::settings::ServerSettings;

/// The flags as given.
pub fn flags(a: &ServerArgs) -> ServerFlags {
    let ServerArgs {
        server_url,
        shared_buffers,
        max_wal_size,
        buffer_pool,
        flush_method,
        persistence,
        appendfsync,
        heap,
        commitlog_dir,
        server_set,
    } = a.clone();
    ServerFlags {
        server_url,
        shared_buffers,
        max_wal_size,
        buffer_pool,
        flush_method,
        persistence,
        appendfsync,
        heap,
        commitlog_dir,
        server_set,
    }
}

/// The settings named on the command line, checked (exit 2 naming the
/// flag).
pub fn settings(a: &ServerArgs) -> anyhow::Result<ServerSettings> {
    flags::settings(&flags(a))
}

/// Whether anything was set that only a private server takes.
pub fn private_only(a: &ServerArgs) -> Option<&'static str> {
    flags::private_only(&flags(a))
}
