//! PostgreSQL: a private cluster made with initdb (superuser `iolab` with
//! a random password, scram-sha-256 over TCP), started on 127.0.0.1 with
//! no Unix socket, fsync on (the server's default), the settings asked
//! for; and the client side every PostgreSQL user of iolab shares
//! (connection settings, by TCP or a socket directory; readiness, version
//! and settings).

use std::process::Command;
use std::time::Duration;

use anyhow::Context;

use super::endpoint::Endpoint;
use super::private::{postgres_program, private_file, Layout, RunAs};
use super::settings::ServerSettings;

/// The settings reported in provenance (besides those given with --server-set).
const REPORTED: &[&str] = &[
    "shared_buffers",
    "max_wal_size",
    "fsync",
    "synchronous_commit",
    "wal_level",
    "full_page_writes",
    "wal_buffers",
    "checkpoint_timeout",
    "max_connections",
    "effective_io_concurrency",
];

/// How to reach `db` on `ep` (TCP, or its socket directory), before
/// connecting: callers add what is theirs (an application name).
pub fn config(ep: &Endpoint, db: &str) -> postgres::Config {
    let mut cfg = postgres::Config::new();
    match &ep.socket {
        Some(dir) => cfg.host_path(dir),
        None => cfg.host(&ep.host),
    };
    cfg.port(ep.port)
        .user(&ep.user)
        .dbname(db)
        .connect_timeout(Duration::from_secs(5))
        .application_name("iolab");
    if !ep.password.is_empty() {
        cfg.password(&ep.password);
    }
    cfg
}

/// Connect to `db` on `ep` (one blocking connection).
pub fn connect(ep: &Endpoint, db: &str) -> anyhow::Result<postgres::Client> {
    connect_in(ep, db, None)
}

/// Connect to `db` on `ep` with `schema` first on the search path.
pub fn connect_in(
    ep: &Endpoint,
    db: &str,
    schema: Option<&str>,
) -> anyhow::Result<postgres::Client> {
    let mut cfg = config(ep, db);
    if let Some(s) = schema {
        cfg.options(&format!("-c search_path={s}"));
    }
    cfg.connect(postgres::NoTls)
        .with_context(|| format!("connecting to {}", ep.display_url()))
}

pub(super) fn init_command(
    layout: &Layout,
    run_as: &RunAs,
    password: &str,
) -> anyhow::Result<Command> {
    let pwfile = layout.dir.join("pwfile");
    private_file(&pwfile, &format!("{password}\n"), run_as)?;
    let initdb = postgres_program("initdb").context("initdb not found")?;
    let mut cmd = Command::new(initdb);
    cmd.arg("-D")
        .arg(&layout.data)
        .args([
            "-U",
            "iolab",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
        ])
        .arg(format!("--pwfile={}", pwfile.display()))
        .args(["-E", "UTF8", "--no-locale", "--no-sync"]);
    Ok(cmd)
}

pub(super) fn server_command(
    layout: &Layout,
    ep: &Endpoint,
    s: &ServerSettings,
) -> anyhow::Result<Command> {
    let postgres = postgres_program("postgres").context("postgres not found")?;
    let mut cmd = Command::new(postgres);
    cmd.arg("-D").arg(&layout.data);
    let mut set = |k: &str, v: String| {
        cmd.arg("-c").arg(format!("{k}={v}"));
    };
    set("port", ep.port.to_string());
    set("listen_addresses", "127.0.0.1".into());
    set("unix_socket_directories", String::new());
    set("max_connections", "300".into());
    if let Some(b) = s.shared_buffers {
        set("shared_buffers", format!("{}kB", (b / 1024).max(128)));
    }
    if let Some(b) = s.max_wal_size {
        set("max_wal_size", format!("{}MB", (b >> 20).max(2)));
    }
    for (k, v) in &s.set {
        set(k, v.clone());
    }
    Ok(cmd)
}

/// Connects, and creates the database `iolab` the first time.
pub(super) fn ready(ep: &Endpoint) -> anyhow::Result<()> {
    let mut c = connect(ep, "postgres")?;
    let exists = c
        .query_opt(
            "SELECT 1 FROM pg_database WHERE datname = $1",
            &[&ep.database],
        )?
        .is_some();
    if !exists {
        c.batch_execute(&format!("CREATE DATABASE {}", ep.database))?;
    }
    Ok(())
}

/// The version and the reported settings.
pub(super) fn describe(ep: &Endpoint) -> anyhow::Result<(String, Vec<(String, String)>)> {
    let mut c = connect(ep, &ep.database)?;
    let version: String = c.query_one("SHOW server_version", &[])?.get(0);
    let names: Vec<String> = REPORTED.iter().map(|s| s.to_string()).collect();
    let rows = c.query(
        "SELECT name, setting, COALESCE(unit, '') FROM pg_settings WHERE name = ANY($1) ORDER BY name",
        &[&names],
    )?;
    let config = rows
        .iter()
        .map(|r| {
            let (name, setting, unit): (String, String, String) = (r.get(0), r.get(1), r.get(2));
            (name, with_unit(&setting, &unit))
        })
        .collect();
    Ok((format!("PostgreSQL {version}"), config))
}

/// Bytes the server says it has written: WAL (its position from the
/// start, exact) plus the shared buffers its checkpointer, background
/// writer and backends wrote out (statistics, flushed about once a second).
pub(super) fn written_bytes(ep: &Endpoint) -> anyhow::Result<u64> {
    let mut c = connect(ep, &ep.database)?;
    let n: i64 = c
        .query_one(
            "SELECT ((pg_current_wal_lsn() - '0/0'::pg_lsn) \
             + (SELECT buffers_checkpoint + buffers_clean + buffers_backend FROM pg_stat_bgwriter) \
             * current_setting('block_size')::numeric)::bigint",
            &[],
        )?
        .get(0);
    Ok(n.max(0) as u64)
}

/// A pg_settings value in its unit ("16384" of "8kB" -> "128 MiB").
fn with_unit(setting: &str, unit: &str) -> String {
    let scale = match unit {
        "8kB" => 8 << 10,
        "kB" => 1 << 10,
        "MB" => 1 << 20,
        _ => {
            return if unit.is_empty() {
                setting.to_string()
            } else {
                format!("{setting} {unit}")
            }
        }
    };
    match setting.parse::<u64>() {
        Ok(n) => crate::plan::parse::human_bytes(n * scale),
        Err(_) => format!("{setting} {unit}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_directory_replaces_the_host() {
        use postgres::config::Host;
        let tcp = Endpoint::parse("postgres://u:pw@db.example:5433/x").unwrap();
        let c = config(&tcp, "x");
        assert_eq!(c.get_hosts(), &[Host::Tcp("db.example".into())]);
        assert_eq!(c.get_ports(), &[5433]);
        assert_eq!(c.get_password(), Some(&b"pw"[..]));
        let unix = Endpoint::parse("postgres://u@/x?host=/run/postgresql").unwrap();
        let c = config(&unix, "other");
        assert_eq!(c.get_hosts(), &[Host::Unix("/run/postgresql".into())]);
        assert_eq!(
            (c.get_ports(), c.get_dbname()),
            (&[5432][..], Some("other"))
        );
        assert_eq!(c.get_password(), None);
    }

    #[test]
    fn settings_are_shown_in_their_units() {
        assert_eq!(with_unit("on", ""), "on");
        assert_eq!(with_unit("300", "s"), "300 s");
        assert_eq!(
            with_unit("16384", "8kB"),
            crate::plan::parse::human_bytes(128 << 20)
        );
    }
}
