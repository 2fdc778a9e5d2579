//! MariaDB: a private instance made with mariadb-install-db (no test
//! database, no defaults files read), started on 127.0.0.1 with InnoDB's
//! `innodb_flush_method=O_DIRECT` unless told otherwise, and a user
//! `iolab` with a random password created by its init file; and the client
//! side every MariaDB user of iolab shares. Clients use TCP, as YCSB's JDBC
//! binding and go-tpc do (the crate would otherwise switch to the socket).

use std::process::Command;
use std::time::Duration;

use anyhow::Context;
use mysql::prelude::Queryable;

use super::endpoint::{Endpoint, ServerKind};
use super::private::{find_program, private_file, Layout, RunAs};
use super::settings::ServerSettings;

/// The variables reported in provenance.
const REPORTED: &[&str] = &[
    "innodb_buffer_pool_size",
    "innodb_flush_method",
    "innodb_flush_log_at_trx_commit",
    "innodb_log_file_size",
    "innodb_doublewrite",
    "innodb_io_capacity",
    "sync_binlog",
    "log_bin",
    "max_connections",
];

/// Connect to `db` on `ep` (empty: no default database).
pub fn connect(ep: &Endpoint, db: &str) -> anyhow::Result<mysql::Conn> {
    let opts = mysql::OptsBuilder::new()
        .ip_or_hostname(Some(ep.host.clone()))
        .tcp_port(ep.port)
        .user(Some(ep.user.clone()))
        .pass((!ep.password.is_empty()).then(|| ep.password.clone()))
        .db_name((!db.is_empty()).then(|| db.to_string()))
        .prefer_socket(false)
        .tcp_nodelay(true)
        .tcp_connect_timeout(Some(Duration::from_secs(5)));
    mysql::Conn::new(opts).with_context(|| format!("connecting to {}", ep.display_url()))
}

pub(super) fn init_command(
    layout: &Layout,
    run_as: &RunAs,
    password: &str,
) -> anyhow::Result<Command> {
    let init = layout.dir.join("init.sql");
    private_file(
        &init,
        &format!(
            "CREATE USER IF NOT EXISTS 'iolab'@'127.0.0.1' IDENTIFIED BY '{password}';\n\
             GRANT ALL PRIVILEGES ON *.* TO 'iolab'@'127.0.0.1' WITH GRANT OPTION;\n\
             CREATE DATABASE IF NOT EXISTS iolab;\n"
        ),
        run_as,
    )?;
    let prog = find_program(ServerKind::Mariadb, "mariadb-install-db")
        .context("mariadb-install-db not found")?;
    let mut cmd = Command::new(prog);
    cmd.arg("--no-defaults")
        .arg(format!("--datadir={}", layout.data.display()))
        .args([
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
            "--skip-name-resolve",
        ]);
    Ok(cmd)
}

pub(super) fn server_command(
    layout: &Layout,
    ep: &Endpoint,
    s: &ServerSettings,
) -> anyhow::Result<Command> {
    let prog = find_program(ServerKind::Mariadb, "mariadbd").context("mariadbd not found")?;
    let mut cmd = Command::new(prog);
    cmd.arg("--no-defaults")
        .arg(format!("--datadir={}", layout.data.display()))
        .arg(format!("--port={}", ep.port))
        .arg("--bind-address=127.0.0.1")
        .arg(format!("--socket={}", layout.socket.display()))
        .arg(format!(
            "--pid-file={}",
            layout.dir.join("mysqld.pid").display()
        ))
        .arg(format!(
            "--init-file={}",
            layout.dir.join("init.sql").display()
        ))
        .arg(format!("--innodb-flush-method={}", s.flush_method))
        .args(["--skip-name-resolve", "--max-connections=300"]);
    if let Some(b) = s.buffer_pool {
        cmd.arg(format!("--innodb-buffer-pool-size={b}"));
    }
    for (k, v) in &s.set {
        cmd.arg(format!("--{k}={v}"));
    }
    Ok(cmd)
}

/// Connects as iolab to its database (made by the init file).
pub(super) fn ready(ep: &Endpoint) -> anyhow::Result<()> {
    let mut c = connect(ep, &ep.database)?;
    c.query_drop("SELECT 1")?;
    Ok(())
}

/// The version and the reported variables.
pub(super) fn describe(ep: &Endpoint) -> anyhow::Result<(String, Vec<(String, String)>)> {
    let mut c = connect(ep, "")?;
    let version: Option<String> = c.query_first("SELECT VERSION()")?;
    let list = REPORTED
        .iter()
        .map(|v| format!("'{v}'"))
        .collect::<Vec<_>>()
        .join(",");
    let rows: Vec<(String, String)> = c.query(format!(
        "SHOW GLOBAL VARIABLES WHERE Variable_name IN ({list})"
    ))?;
    Ok((format!("MariaDB {}", version.unwrap_or_default()), rows))
}
