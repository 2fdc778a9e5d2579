//! MariaDB: a private instance made with mariadb-install-db (no test
//! database, no defaults files read), started on 127.0.0.1 with InnoDB's
//! `innodb_flush_method=O_DIRECT` unless told otherwise, and a user
//! `iolab` with a random password created by its init file; and the client
//! side every MariaDB user of iolab shares. Clients use TCP, as YCSB's JDBC
//! binding and go-tpc do (the crate would otherwise switch to the socket),
//! unless the endpoint names a socket file (`?socket=PATH`).

use std::process::Command;
use std::time::Duration;

use anyhow::Context;
use mysql::prelude::Queryable;

use super::endpoint::Endpoint;
use super::private::{private_file, program_on_path, Layout, RunAs};
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

/// How to reach `db` on `ep` (empty: no default database), by TCP or by
/// its socket file, before connecting.
pub fn opts(ep: &Endpoint, db: &str) -> mysql::OptsBuilder {
    let b = mysql::OptsBuilder::new()
        .user(Some(ep.user.clone()))
        .pass((!ep.password.is_empty()).then(|| ep.password.clone()))
        .db_name((!db.is_empty()).then(|| db.to_string()))
        .tcp_nodelay(true)
        .tcp_connect_timeout(Some(Duration::from_secs(5)));
    match &ep.socket {
        Some(path) => b.socket(Some(path.to_string_lossy().into_owned())),
        None => b
            .ip_or_hostname(Some(ep.host.clone()))
            .tcp_port(ep.port)
            .prefer_socket(false),
    }
}

/// Connect to `db` on `ep` (empty: no default database).
pub fn connect(ep: &Endpoint, db: &str) -> anyhow::Result<mysql::Conn> {
    mysql::Conn::new(opts(ep, db)).with_context(|| format!("connecting to {}", ep.display_url()))
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
    let prog = program_on_path("mariadb-install-db").context("mariadb-install-db not found")?;
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
    let prog = program_on_path("mariadbd").context("mariadbd not found")?;
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

/// Bytes InnoDB says it has written: data pages and the doublewrite
/// buffer (Innodb_data_written, which leaves the redo log out) plus the
/// redo log (Innodb_os_log_written).
pub(super) fn written_bytes(ep: &Endpoint) -> anyhow::Result<u64> {
    let mut c = connect(ep, "")?;
    let rows: Vec<(String, String)> = c.query(
        "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_data_written', 'Innodb_os_log_written')",
    )?;
    anyhow::ensure!(rows.len() == 2, "InnoDB's write counters are missing");
    rows.iter()
        .map(|(name, v)| {
            v.parse::<u64>()
                .map_err(|_| anyhow::anyhow!("{name} is not a number: {v}"))
        })
        .sum()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_file_replaces_tcp() {
        let tcp = mysql::Opts::from(opts(
            &Endpoint::parse("mysql://u:pw@127.0.0.1:3307/x").unwrap(),
            "x",
        ));
        assert_eq!(tcp.get_socket(), None);
        assert_eq!(
            (tcp.get_ip_or_hostname().as_ref(), tcp.get_tcp_port()),
            ("127.0.0.1", 3307)
        );
        assert!(!tcp.get_prefer_socket());
        assert_eq!(tcp.get_pass(), Some("pw"));
        let unix = mysql::Opts::from(opts(
            &Endpoint::parse("mysql://u@localhost/x?socket=/run/mysqld/mysqld.sock").unwrap(),
            "",
        ));
        assert_eq!(unix.get_socket(), Some("/run/mysqld/mysqld.sock"));
        assert_eq!((unix.get_db_name(), unix.get_pass()), (None, None));
    }
}
