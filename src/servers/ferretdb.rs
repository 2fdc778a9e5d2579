//! A private FerretDB: MongoDB's wire protocol over SQLite, started on
//! 127.0.0.1 with its SQLite files under the target, so `kv --engine
//! mongodb` and its tests have a server to speak the protocol to. It is
//! the protocol's test double: what it measures is FerretDB's and
//! SQLite's, never MongoDB's. Built from the Go module proxy by
//! scripts/build-ferretdb.sh; found through `IOLAB_FERRETDB`, on PATH, or
//! where that script installs it.

use std::path::PathBuf;
use std::process::Command;

use super::endpoint::Endpoint;
use super::private::Layout;

/// The version scripts/build-ferretdb.sh builds.
pub const VERSION: &str = "v1.24.2";

/// What to tell a user who has no FerretDB.
pub const HOW_TO_GET: &str = "build it with scripts/build-ferretdb.sh (from the Go module proxy), \
     put ferretdb on PATH or name it with IOLAB_FERRETDB";

/// Where scripts/build-ferretdb.sh installs the binary.
pub fn built_path() -> Option<PathBuf> {
    let base = match std::env::var_os("IOLAB_FERRETDB_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var_os("HOME")?).join(".cache/iolab/ferretdb"),
    };
    Some(base.join(VERSION).join("ferretdb"))
}

/// The FerretDB binary: `IOLAB_FERRETDB`, else `ferretdb` on PATH, else
/// the one scripts/build-ferretdb.sh built.
pub fn find() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("IOLAB_FERRETDB") {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    crate::testbed::command::which("ferretdb").or_else(|| built_path().filter(|p| p.is_file()))
}

pub(super) fn server_command(layout: &Layout, ep: &Endpoint) -> anyhow::Result<Command> {
    let prog = find().ok_or_else(|| anyhow::anyhow!("ferretdb not found: {HOW_TO_GET}"))?;
    let mut cmd = Command::new(prog);
    cmd.arg("--handler=sqlite")
        // A trailing slash: a directory of one SQLite file per database.
        .arg(format!("--sqlite-url=file:{}/", layout.data.display()))
        .arg(format!("--listen-addr=127.0.0.1:{}", ep.port))
        .arg(format!("--state-dir={}", layout.dir.display()))
        // Its debug HTTP listener would take a fixed port.
        .arg("--debug-addr=-")
        .arg("--telemetry=disable")
        .arg("--log-level=warn")
        .current_dir(&layout.dir);
    Ok(cmd)
}
