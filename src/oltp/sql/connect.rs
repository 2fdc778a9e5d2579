//! How to reach the database: `DbConnect` (an SQLite file, or a PostgreSQL
//! or MariaDB server by TCP or unix socket), parsed from `--server-url`
//! (`postgres://user:pw@host:port/db`, `mysql://user:pw@host:port/db`, a
//! socket as `?host=/dir` / `?socket=/path`, or a bare socket path), and
//! `open`, which makes one connection. `for_plan` is the one place where
//! the endpoint of a plan is decided: the private servers of
//! `src/servers/` plug in there.

use std::path::{Path, PathBuf};

use super::{Conn, DbResult};
use crate::error::usage;
use anyhow::Result;

/// The engine of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
    Mariadb,
}

impl Engine {
    pub const ALL: [Engine; 3] = [Engine::Sqlite, Engine::Postgres, Engine::Mariadb];

    pub fn name(self) -> &'static str {
        match self {
            Engine::Sqlite => "sqlite",
            Engine::Postgres => "postgres",
            Engine::Mariadb => "mariadb",
        }
    }

    pub fn parse(s: &str) -> Option<Engine> {
        match s {
            "sqlite" => Some(Engine::Sqlite),
            "postgres" | "postgresql" => Some(Engine::Postgres),
            "mariadb" | "mysql" => Some(Engine::Mariadb),
            _ => None,
        }
    }
}

/// Where a server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerAddr {
    Tcp {
        host: String,
        port: u16,
    },
    /// PostgreSQL: the socket's directory (its file is named after the
    /// port); MariaDB: the socket file.
    Socket {
        path: PathBuf,
        port: u16,
    },
}

/// A server endpoint and its credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerEndpoint {
    pub addr: ServerAddr,
    pub user: String,
    pub password: Option<String>,
    pub dbname: String,
}

impl ServerEndpoint {
    /// For messages: no password.
    pub fn describe(&self) -> String {
        let at = match &self.addr {
            ServerAddr::Tcp { host, port } => format!("{host}:{port}"),
            ServerAddr::Socket { path, .. } => path.display().to_string(),
        };
        format!("{}@{at}/{}", self.user, self.dbname)
    }
}

/// How to connect to the database of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbConnect {
    Sqlite { path: PathBuf },
    Postgres(ServerEndpoint),
    Mariadb(ServerEndpoint),
}

impl DbConnect {
    pub fn engine(&self) -> Engine {
        match self {
            DbConnect::Sqlite { .. } => Engine::Sqlite,
            DbConnect::Postgres(_) => Engine::Postgres,
            DbConnect::Mariadb(_) => Engine::Mariadb,
        }
    }

    /// `--server-url URL` for `engine`; errors name `--server-url` (exit 2).
    pub fn parse_url(engine: Engine, url: &str) -> Result<DbConnect> {
        let ep = parse_endpoint(engine, url)?;
        match engine {
            Engine::Postgres => Ok(DbConnect::Postgres(ep)),
            Engine::Mariadb => Ok(DbConnect::Mariadb(ep)),
            Engine::Sqlite => Err(usage(
                "--server-url",
                "sqlite has no server: give --target DIR (or --db FILE) instead",
            )),
        }
    }

    /// For messages and provenance: where, without the password.
    pub fn describe(&self) -> String {
        match self {
            DbConnect::Sqlite { path } => path.display().to_string(),
            DbConnect::Postgres(e) => format!("postgres://{}", e.describe()),
            DbConnect::Mariadb(e) => format!("mysql://{}", e.describe()),
        }
    }

    /// One connection; `loading`: settings for the bulk load (SQLite: no
    /// fsync per commit).
    pub fn open(&self, loading: bool) -> DbResult<Box<dyn Conn>> {
        Ok(match self {
            DbConnect::Sqlite { path } => Box::new(super::sqlite::SqliteConn::open(path, loading)?),
            DbConnect::Postgres(e) => Box::new(super::postgres::PgConn::open(e)?),
            DbConnect::Mariadb(e) => Box::new(super::mariadb::MariaConn::open(e)?),
        })
    }

    /// A first connection, refused with exit 2 naming `--server-url` when
    /// the server cannot be reached.
    pub fn open_checked(&self, loading: bool) -> Result<Box<dyn Conn>> {
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

/// The endpoint a plan runs against: the SQLite file in `db_dir` (or the
/// plan's `--db`), or the server of `--server-url`. The private servers
/// iolab will start itself (src/servers/) plug in here.
pub fn for_plan(engine: Engine, server_url: Option<&str>, sqlite_file: &Path) -> Result<DbConnect> {
    match (engine, server_url) {
        (Engine::Sqlite, None) => Ok(DbConnect::Sqlite {
            path: sqlite_file.to_path_buf(),
        }),
        (_, Some(url)) => DbConnect::parse_url(engine, url),
        (e, None) => Err(usage(
            "--server-url",
            format!(
                "{} needs a running server: give --server-url {} (iolab does not start private {} servers yet)",
                e.name(),
                if e == Engine::Postgres {
                    "postgres://USER:PASSWORD@HOST:PORT/DB"
                } else {
                    "mysql://USER:PASSWORD@HOST:PORT/DB"
                },
                e.name()
            ),
        )),
    }
}

fn bad(msg: impl Into<String>) -> anyhow::Error {
    usage("--server-url", msg)
}

/// `scheme://[user[:password]@][host][:port]/db[?host=DIR|socket=PATH]`,
/// or a bare socket path (directory for PostgreSQL, file for MariaDB).
fn parse_endpoint(engine: Engine, url: &str) -> Result<ServerEndpoint> {
    let (default_port, default_user, schemes): (u16, &str, &[&str]) = match engine {
        Engine::Postgres => (5432, "postgres", &["postgres", "postgresql"]),
        _ => (3306, "root", &["mysql", "mariadb"]),
    };
    if url.starts_with('/') {
        return Ok(ServerEndpoint {
            addr: ServerAddr::Socket {
                path: PathBuf::from(url),
                port: default_port,
            },
            user: default_user.into(),
            password: None,
            dbname: "tpcc".into(),
        });
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(bad(format!(
            "'{url}' is not a URL: give {}://USER:PASSWORD@HOST:PORT/DB or a unix socket path",
            schemes[0]
        )));
    };
    if !schemes.contains(&scheme) {
        return Err(bad(format!(
            "scheme '{scheme}' is not {}'s ({})",
            engine.name(),
            schemes.join(" or ")
        )));
    }
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (auth_host, db) = rest.split_once('/').unwrap_or((rest, ""));
    let (auth, hostport) = match auth_host.rsplit_once('@') {
        Some((a, h)) => (Some(a), h),
        None => (None, auth_host),
    };
    let (user, password) = match auth {
        Some(a) => match a.split_once(':') {
            Some((u, p)) => (decode(u)?, Some(decode(p)?)),
            None => (decode(a)?, None),
        },
        None => (default_user.to_string(), None),
    };
    let hostport = decode(hostport)?;
    let mut addr = if hostport.starts_with('/') {
        ServerAddr::Socket {
            path: PathBuf::from(hostport),
            port: default_port,
        }
    } else {
        let (host, port) = split_host_port(&hostport, default_port)?;
        ServerAddr::Tcp {
            host: if host.is_empty() {
                "localhost".into()
            } else {
                host
            },
            port,
        }
    };
    for kv in query.split('&').filter(|s| !s.is_empty()) {
        match kv.split_once('=') {
            Some(("host", v)) | Some(("socket", v)) if decode(v)?.starts_with('/') => {
                let port = match addr {
                    ServerAddr::Tcp { port, .. } | ServerAddr::Socket { port, .. } => port,
                };
                addr = ServerAddr::Socket {
                    path: PathBuf::from(decode(v)?),
                    port,
                };
            }
            _ => {
                return Err(bad(format!(
                    "unknown URL option '{kv}' (host=DIR or socket=PATH)"
                )))
            }
        }
    }
    let db = decode(db)?;
    if db.is_empty() {
        return Err(bad(format!("'{url}' names no database (…/DB at the end)")));
    }
    Ok(ServerEndpoint {
        addr,
        user,
        password,
        dbname: db,
    })
}

/// `host[:port]` or `[v6]:port`.
fn split_host_port(hp: &str, default_port: u16) -> Result<(String, u16)> {
    let (host, port) = if let Some(v6) = hp.strip_prefix('[') {
        let (h, after) = v6
            .split_once(']')
            .ok_or_else(|| bad(format!("'{hp}': unclosed '['")))?;
        (h, after.strip_prefix(':'))
    } else {
        match hp.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (hp, None),
        }
    };
    let port = match port {
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| bad(format!("'{p}' is not a port (1..65535)")))?,
        None => default_port,
    };
    Ok((host.to_string(), port))
}

/// Percent-decoding of a URL part.
fn decode(s: &str) -> Result<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| bad(format!("bad percent escape in '{s}'")))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| bad(format!("'{s}' is not UTF-8 once decoded")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse() {
        let c = DbConnect::parse_url(
            Engine::Postgres,
            "postgres://bob:p%40ss@127.0.0.1:5433/tpcc",
        )
        .unwrap();
        let DbConnect::Postgres(e) = c else { panic!() };
        assert_eq!(
            e.addr,
            ServerAddr::Tcp {
                host: "127.0.0.1".into(),
                port: 5433
            }
        );
        assert_eq!(
            (e.user.as_str(), e.password.as_deref()),
            ("bob", Some("p@ss"))
        );
        assert_eq!(e.dbname, "tpcc");
        let c = DbConnect::parse_url(
            Engine::Mariadb,
            "mysql://root@localhost/db?socket=/tmp/m.sock",
        )
        .unwrap();
        let DbConnect::Mariadb(e) = c else { panic!() };
        assert_eq!(
            e.addr,
            ServerAddr::Socket {
                path: "/tmp/m.sock".into(),
                port: 3306
            }
        );
        let c = DbConnect::parse_url(Engine::Postgres, "postgres://u@%2Ftmp%2Fpg/db").unwrap();
        let DbConnect::Postgres(e) = c else { panic!() };
        assert_eq!(
            e.addr,
            ServerAddr::Socket {
                path: "/tmp/pg".into(),
                port: 5432
            }
        );
        let c = DbConnect::parse_url(
            Engine::Postgres,
            "postgres://u@localhost:5433/db?host=/run/pg",
        )
        .unwrap();
        let DbConnect::Postgres(e) = c else { panic!() };
        assert_eq!(
            e.addr,
            ServerAddr::Socket {
                path: "/run/pg".into(),
                port: 5433
            }
        );
    }

    #[test]
    fn bad_urls_name_the_flag() {
        for (eng, url) in [
            (Engine::Postgres, "mysql://a@b/c"),
            (Engine::Postgres, "postgres://a@b:99999/c"),
            (Engine::Mariadb, "mysql://a@b:3306"),
            (Engine::Mariadb, "nonsense"),
        ] {
            let e = DbConnect::parse_url(eng, url).unwrap_err();
            assert_eq!(crate::error::exit_code(&e), 2, "{url}");
            assert!(e.to_string().contains("--server-url"), "{e}");
        }
        let e = for_plan(Engine::Postgres, None, Path::new("x")).unwrap_err();
        assert!(e.to_string().contains("--server-url"), "{e}");
    }
}
