//! How to reach the database: `DbConnect` (an SQLite file, or a PostgreSQL
//! or MariaDB server through a `servers::Endpoint`: TCP, or a unix socket
//! named in `--server-url` as `?host=DIR` / `?socket=PATH`), and `open`,
//! which makes one connection. `for_plan` is the one place where the
//! endpoint of a plan is decided: SQLite's file, or the server
//! (`servers::Server`: a private instance or `--server-url`) the run holds.

use std::path::{Path, PathBuf};

use super::{DbResult, SqlConn};
use crate::error::usage;
use crate::servers::{Endpoint, Server, ServerKind};
use anyhow::Result;

/// The engine of a plan (serialized as its name, for a fleet's hosts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SqlEngine {
    Sqlite,
    Postgres,
    Mariadb,
}

impl SqlEngine {
    pub const ALL: [SqlEngine; 3] = [SqlEngine::Sqlite, SqlEngine::Postgres, SqlEngine::Mariadb];

    pub fn name(self) -> &'static str {
        match self {
            SqlEngine::Sqlite => "sqlite",
            SqlEngine::Postgres => "postgres",
            SqlEngine::Mariadb => "mariadb",
        }
    }

    pub fn parse(s: &str) -> Option<SqlEngine> {
        match s {
            "sqlite" => Some(SqlEngine::Sqlite),
            "postgres" | "postgresql" => Some(SqlEngine::Postgres),
            "mariadb" | "mysql" => Some(SqlEngine::Mariadb),
            _ => None,
        }
    }

    /// The server this engine runs on (none: SQLite is embedded).
    pub fn server_kind(self) -> Option<ServerKind> {
        match self {
            SqlEngine::Sqlite => None,
            SqlEngine::Postgres => Some(ServerKind::Postgres),
            SqlEngine::Mariadb => Some(ServerKind::Mariadb),
        }
    }
}

/// How to connect to the database of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbConnect {
    Sqlite {
        path: PathBuf,
    },
    /// A PostgreSQL database; `schema` first on the search path (iolab's
    /// own namespace on a server the hosts of `--hosts` share).
    Postgres {
        ep: Endpoint,
        schema: Option<String>,
    },
    Mariadb(Endpoint),
}

impl DbConnect {
    pub fn engine(&self) -> SqlEngine {
        match self {
            DbConnect::Sqlite { .. } => SqlEngine::Sqlite,
            DbConnect::Postgres { .. } => SqlEngine::Postgres,
            DbConnect::Mariadb(_) => SqlEngine::Mariadb,
        }
    }

    /// The database of a server endpoint (Redis has no SQL: refused).
    pub fn server(ep: &Endpoint) -> Result<DbConnect> {
        match ep.kind {
            ServerKind::Postgres => Ok(DbConnect::Postgres {
                ep: ep.clone(),
                schema: None,
            }),
            ServerKind::Mariadb => Ok(DbConnect::Mariadb(ep.clone())),
            ServerKind::Redis | ServerKind::Mongodb => Err(usage(
                "--server-url",
                format!(
                    "{} is not an oltp engine (postgres:// or mysql://)",
                    ep.kind.name()
                ),
            )),
            ServerKind::Cassandra => Err(usage(
                "--server-url",
                "Cassandra is not an oltp engine (postgres:// or mysql://)",
            )),
        }
    }

    /// For messages and provenance: where, without the password.
    pub fn describe(&self) -> String {
        match self {
            DbConnect::Sqlite { path } => path.display().to_string(),
            DbConnect::Postgres { ep: e, .. } | DbConnect::Mariadb(e) => e.display_url(),
        }
    }

    /// One connection; `loading`: settings for the bulk load (SQLite: no
    /// fsync per commit).
    pub fn open(&self, loading: bool) -> DbResult<Box<dyn SqlConn>> {
        Ok(match self {
            DbConnect::Sqlite { path } => Box::new(super::sqlite::SqliteConn::open(path, loading)?),
            DbConnect::Postgres { ep, schema } => {
                Box::new(super::postgres::PgConn::open(ep, schema.as_deref())?)
            }
            DbConnect::Mariadb(e) => Box::new(super::mariadb::MariaConn::open(e)?),
        })
    }

    /// A first connection, refused with exit 2 naming `--server-url` when
    /// the server cannot be reached.
    pub fn open_checked(&self, loading: bool) -> Result<Box<dyn SqlConn>> {
        self.open(loading).map_err(|e| match self {
            DbConnect::Sqlite { path } => {
                anyhow::anyhow!("cannot open the SQLite database {}: {e}", path.display())
            }
            _ => usage(
                "--server-url",
                format!("cannot connect to {}: {e}", self.describe()),
            ),
        })
    }
}

/// The endpoint a plan runs against: the SQLite file (the scratch one or
/// `--db`), or the database of the server the run holds (private, or
/// `--server-url`).
pub fn for_plan(
    engine: SqlEngine,
    server: Option<&Server>,
    sqlite_file: &Path,
) -> Result<DbConnect> {
    match (engine, server) {
        (SqlEngine::Sqlite, _) => Ok(DbConnect::Sqlite {
            path: sqlite_file.to_path_buf(),
        }),
        (_, Some(s)) => DbConnect::server(s.endpoint()),
        (e, None) => Err(anyhow::anyhow!(
            "{} runs on a server, and none was started",
            e.name()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_endpoints_name_their_engine_and_hide_the_password() {
        let ep = Endpoint::parse("postgres://bob:p%40ss@127.0.0.1:5433/tpcc").unwrap();
        let c = DbConnect::server(&ep).unwrap();
        assert_eq!(c.engine(), SqlEngine::Postgres);
        assert_eq!(c.describe(), "postgres://bob:***@127.0.0.1:5433/tpcc");
        let DbConnect::Postgres { ep: e, .. } = &c else {
            panic!()
        };
        assert_eq!(e.password, "p@ss");
        let ep = Endpoint::parse("mysql://root@localhost/db?socket=/tmp/m.sock").unwrap();
        let c = DbConnect::server(&ep).unwrap();
        assert_eq!(c.engine(), SqlEngine::Mariadb);
        assert!(
            c.describe().ends_with("?socket=/tmp/m.sock"),
            "{}",
            c.describe()
        );
        let redis = Endpoint::parse("redis://127.0.0.1/0").unwrap();
        let e = DbConnect::server(&redis).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert!(for_plan(SqlEngine::Postgres, None, Path::new("x")).is_err());
        assert_eq!(
            for_plan(SqlEngine::Sqlite, None, Path::new("x")).unwrap(),
            DbConnect::Sqlite { path: "x".into() }
        );
        assert_eq!(SqlEngine::Mariadb.server_kind(), Some(ServerKind::Mariadb));
        assert_eq!(SqlEngine::Sqlite.server_kind(), None);
    }
}
