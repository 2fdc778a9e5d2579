//! iolab's own namespace on a server several hosts share (`oltp --hosts`
//! with `--server-url`): a PostgreSQL schema or a MariaDB database named
//! after the host's process (`iolab_<pid>_<host>`), made before the load
//! so each host loads and runs its own nine tables, and dropped when the
//! run ends (error and Ctrl-C too). A host lost mid-run leaves its
//! namespace on the server.

use anyhow::{Context, Result};

use super::sql::DbConnect;

/// The namespace, dropped with the guard.
pub struct Namespace {
    /// How to reach the server outside the namespace.
    admin: DbConnect,
    name: String,
}

/// Make `name` on `db`'s server; the endpoint inside it and its guard
/// (SQLite has no namespace: `db` as it is).
pub fn make(db: DbConnect, name: &str) -> Result<(DbConnect, Option<Namespace>)> {
    let (inside, create) = match &db {
        DbConnect::Sqlite { .. } => return Ok((db, None)),
        DbConnect::Postgres { ep, .. } => (
            DbConnect::Postgres {
                ep: ep.clone(),
                schema: Some(name.to_string()),
            },
            format!("CREATE SCHEMA IF NOT EXISTS {name}"),
        ),
        DbConnect::Mariadb(ep) => {
            let mut ep = ep.clone();
            ep.database = name.to_string();
            (
                DbConnect::Mariadb(ep),
                format!("CREATE DATABASE IF NOT EXISTS {name}"),
            )
        }
    };
    let admin = match db {
        DbConnect::Mariadb(mut ep) => {
            ep.database.clear();
            DbConnect::Mariadb(ep)
        }
        other => other,
    };
    let mut c = admin.open_checked(false)?;
    c.batch(&create)
        .map_err(|e| anyhow::anyhow!("{e}"))
        .with_context(|| format!("making {name} on {}", admin.describe()))?;
    let guard = Namespace {
        admin,
        name: name.to_string(),
    };
    Ok((inside, Some(guard)))
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let drop = match &self.admin {
            DbConnect::Postgres { .. } => format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name),
            _ => format!("DROP DATABASE IF EXISTS {}", self.name),
        };
        if let Ok(mut c) = self.admin.open(false) {
            let _ = c.batch(&drop);
        }
    }
}
