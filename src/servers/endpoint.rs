//! Which database server, and how to reach it: the kinds iolab drives
//! (PostgreSQL, MariaDB, Redis, Cassandra, MongoDB's wire protocol; each
//! one's facts in `ServerFacts`) and an
//! `Endpoint` (host, port, user,
//! password, database, or a unix socket) parsed from `--server-url` or
//! handed back by a private instance iolab started. The one URL parser of
//! iolab's server users (kv and oltp).

use std::path::PathBuf;

use crate::error::usage;

/// A database server iolab can start or connect to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServerKind {
    Postgres,
    Mariadb,
    Redis,
    Cassandra,
    /// MongoDB's wire protocol: a user's MongoDB, or a private FerretDB
    /// (the protocol's test double).
    Mongodb,
}

impl ServerKind {
    pub const ALL: [ServerKind; 5] = [
        ServerKind::Postgres,
        ServerKind::Mariadb,
        ServerKind::Redis,
        ServerKind::Cassandra,
        ServerKind::Mongodb,
    ];

    /// Everything iolab knows about this server outside the code that
    /// launches it (`servers::private`) and the URL rules below.
    pub fn facts(self) -> &'static ServerFacts {
        match self {
            ServerKind::Postgres => &ServerFacts {
                name: "postgres",
                program: "postgres",
                default_port: 5432,
                schemes: &["postgres", "postgresql"],
                written_bytes: Some(super::postgres::written_bytes),
                starting_note: None,
            },
            ServerKind::Mariadb => &ServerFacts {
                name: "mariadb",
                program: "mariadbd",
                default_port: 3306,
                schemes: &["mysql", "mariadb"],
                written_bytes: Some(super::mariadb::written_bytes),
                starting_note: None,
            },
            ServerKind::Redis => &ServerFacts {
                name: "redis",
                program: "redis-server",
                default_port: 6379,
                schemes: &["redis"],
                written_bytes: None,
                starting_note: None,
            },
            // A JVM running CassandraDaemon.
            ServerKind::Cassandra => &ServerFacts {
                name: "cassandra",
                program: "cassandra",
                default_port: 9042,
                schemes: &["cassandra"],
                written_bytes: None,
                starting_note: Some(super::cassandra::STARTING),
            },
            // The private one: FerretDB (a user's MongoDB is never started).
            ServerKind::Mongodb => &ServerFacts {
                name: "mongodb",
                program: "ferretdb",
                default_port: 27017,
                schemes: &["mongodb"],
                written_bytes: None,
                starting_note: None,
            },
        }
    }

    /// Every server kind.
    pub fn all() -> impl Iterator<Item = ServerKind> {
        ServerKind::ALL.into_iter()
    }

    /// The server called `name` (`ServerKind::name`).
    pub fn parse(name: &str) -> Option<ServerKind> {
        ServerKind::ALL.into_iter().find(|k| k.name() == name)
    }

    pub fn name(self) -> &'static str {
        self.facts().name
    }

    /// The server program (what its process is called; crash records name it).
    pub fn program(self) -> &'static str {
        self.facts().program
    }

    /// The port a URL without one means.
    pub fn default_port(self) -> u16 {
        self.facts().default_port
    }

    /// What `iolab` says before starting a private one, if it is slow to start.
    pub fn starting_note(self) -> Option<&'static str> {
        self.facts().starting_note
    }

    /// The kind a URL scheme names.
    fn from_scheme(scheme: &str) -> Option<ServerKind> {
        ServerKind::ALL
            .into_iter()
            .find(|k| k.facts().schemes.contains(&scheme))
    }
}

/// One server's facts (`ServerKind::facts`).
pub struct ServerFacts {
    /// Its name in `--engine`, results and messages.
    pub name: &'static str,
    /// Its program (what its process is called; crash records name it).
    pub program: &'static str,
    /// The port a URL without one means.
    pub default_port: u16,
    /// The URL schemes that name it.
    pub schemes: &'static [&'static str],
    /// What it says it has written to storage since it started, if it can
    /// be asked (PostgreSQL: WAL and data pages; MariaDB: InnoDB's data,
    /// doublewrite and redo log).
    pub written_bytes: Option<fn(&Endpoint) -> anyhow::Result<u64>>,
    /// What `iolab` says before starting a private one (Cassandra's JVM).
    pub starting_note: Option<&'static str>,
}

/// How to reach a server.
#[derive(Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub kind: ServerKind,
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: String,
    /// PostgreSQL/MariaDB: the database; Redis: the database number;
    /// Cassandra: the keyspace (empty: iolab's own name).
    /// MongoDB: the URL's database (where a user authenticates; iolab's
    /// records go in a database of its own).
    pub database: String,
    /// A unix socket instead of TCP: PostgreSQL's socket directory
    /// (`?host=DIR`; the file in it is named after the port), MariaDB's
    /// socket file (`?socket=PATH`).
    pub socket: Option<PathBuf>,
    /// MongoDB: the URL's options as given (`w=majority&journal=true`),
    /// checked by the driver; empty for the others.
    pub options: String,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display_url())
    }
}

impl Endpoint {
    /// Parse `--server-url`: `postgres://USER[:PASSWORD]@HOST[:PORT]/DB`,
    /// `mysql://...` (or `mariadb://`), `redis://[:PASSWORD@]HOST[:PORT][/N]`,
    /// `cassandra://[USER:PASSWORD@]HOST[:PORT][/KEYSPACE]`,
    /// `mongodb://[USER[:PASSWORD]@]HOST[:PORT][/DB][?OPTIONS]`;
    /// a unix socket as `postgres://USER@/DB?host=DIR` or
    /// `mysql://USER@localhost/DB?socket=PATH`.
    pub fn parse(url: &str) -> anyhow::Result<Endpoint> {
        let bad = |why: &str| usage("--server-url", format!("'{}': {why}", mask(url)));
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| bad("expected SCHEME://[USER[:PASSWORD]@]HOST[:PORT][/DATABASE]"))?;
        if scheme == "mongodb+srv" {
            return Err(bad(
                "mongodb+srv:// (a DNS seed list) is not supported: give mongodb://HOST:PORT",
            ));
        }
        let kind = ServerKind::from_scheme(scheme).ok_or_else(|| {
            bad("the scheme must be postgres://, mysql:// (mariadb://), redis://, cassandra:// or mongodb://")
        })?;
        let (auth, hostpart) = match rest.rsplit_once('@') {
            Some((a, h)) => (Some(a), h),
            None => (None, rest),
        };
        let (hostpart, query) = hostpart.split_once('?').unwrap_or((hostpart, ""));
        let (hostport, database) = match hostpart.split_once('/') {
            Some((h, d)) => (h, d),
            None => (hostpart, ""),
        };
        let (socket, options) = match kind {
            ServerKind::Mongodb => (None, query.to_string()),
            _ => (
                socket_option(kind, query).map_err(|why| bad(&why))?,
                String::new(),
            ),
        };
        let (host, port) = split_host_port(hostport).ok_or_else(|| bad("bad HOST[:PORT]"))?;
        if host.is_empty() && socket.is_none() {
            return Err(bad("no host"));
        }
        let port = match port {
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| bad("the port must be 1..65535"))?,
            None => kind.default_port(),
        };
        let (user, password) = match auth {
            Some(a) => match a.split_once(':') {
                Some((u, p)) => (
                    decode(u).ok_or_else(|| bad("bad %-escape"))?,
                    decode(p).ok_or_else(|| bad("bad %-escape"))?,
                ),
                None => (decode(a).ok_or_else(|| bad("bad %-escape"))?, String::new()),
            },
            None => (String::new(), String::new()),
        };
        let database = decode(database).ok_or_else(|| bad("bad %-escape"))?;
        let ep = Endpoint {
            kind,
            host: if host.is_empty() { "localhost" } else { host }.to_string(),
            port,
            user,
            password,
            database,
            socket,
            options,
        };
        match kind {
            ServerKind::Redis => {
                if !ep.database.is_empty() && ep.database.parse::<u32>().is_err() {
                    return Err(bad("a Redis database is a number (redis://HOST:PORT/N)"));
                }
            }
            ServerKind::Cassandra => {
                if !ep.database.is_empty() && !is_cql_name(&ep.database) {
                    return Err(bad(
                        "a keyspace is 1 to 48 letters, digits or _ (cassandra://HOST:PORT/KEYSPACE)",
                    ));
                }
                if !ep.user.is_empty() && ep.password.is_empty() {
                    return Err(bad("a Cassandra user needs its password (USER:PASSWORD@)"));
                }
            }
            ServerKind::Mongodb => {
                if ep.database.contains(['/', '\\', '.', ' ', '"', '$']) {
                    return Err(bad("a MongoDB database name has none of / \\ . space \" $"));
                }
                super::mongodb::check_url(&ep.mongodb_url()).map_err(|why| bad(&why))?;
            }
            _ => {
                if ep.user.is_empty() {
                    return Err(bad("name the user (SCHEME://USER[:PASSWORD]@HOST...)"));
                }
                if ep.database.is_empty() {
                    return Err(bad("name the database (.../DATABASE)"));
                }
            }
        }
        Ok(ep)
    }

    /// Refuse (exit 2 naming `--server-url`) a URL of another kind than
    /// the engine's.
    pub fn check_kind(&self, kind: ServerKind) -> anyhow::Result<()> {
        if self.kind == kind {
            return Ok(());
        }
        Err(usage(
            "--server-url",
            format!(
                "{} is a {} URL, and the engine is {}",
                self.display_url(),
                self.kind.name(),
                kind.name()
            ),
        ))
    }

    /// The URL with the password masked (provenance, messages).
    pub fn display_url(&self) -> String {
        let auth = match (self.user.is_empty(), self.password.is_empty()) {
            (true, true) => String::new(),
            (false, true) => format!("{}@", self.user),
            (_, false) => format!("{}:***@", self.user),
        };
        let scheme = match self.kind {
            ServerKind::Postgres => "postgres",
            ServerKind::Mariadb => "mysql",
            ServerKind::Redis => "redis",
            ServerKind::Cassandra => "cassandra",
            ServerKind::Mongodb => "mongodb",
        };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let db = if self.database.is_empty() {
            String::new()
        } else {
            format!("/{}", self.database)
        };
        let socket = match (&self.socket, self.kind) {
            (None, _) => String::new(),
            (Some(s), ServerKind::Postgres) => format!("?host={}", s.display()),
            (Some(s), _) => format!("?socket={}", s.display()),
        };
        let options = if self.options.is_empty() {
            String::new()
        } else {
            format!("?{}", self.options)
        };
        format!("{scheme}://{auth}{host}:{}{db}{socket}{options}", self.port)
    }

    /// The MongoDB connection URL (with the password and the options).
    pub fn mongodb_url(&self) -> String {
        let auth = match (self.user.is_empty(), self.password.is_empty()) {
            (true, _) => String::new(),
            (false, true) => format!("{}@", encode(&self.user)),
            (false, false) => format!("{}:{}@", encode(&self.user), encode(&self.password)),
        };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let options = if self.options.is_empty() {
            String::new()
        } else {
            format!("?{}", self.options)
        };
        format!(
            "mongodb://{auth}{host}:{}/{}{options}",
            self.port,
            encode(&self.database)
        )
    }

    /// The Redis connection URL (with the password).
    pub fn redis_url(&self) -> String {
        let auth = match (self.user.is_empty(), self.password.is_empty()) {
            (_, true) => String::new(),
            (true, false) => format!(":{}@", encode(&self.password)),
            (false, false) => format!("{}:{}@", encode(&self.user), encode(&self.password)),
        };
        let db = if self.database.is_empty() {
            "0"
        } else {
            &self.database
        };
        format!("redis://{auth}{}:{}/{db}", self.host, self.port)
    }
}

/// The socket a URL's query names (`host=DIR` for PostgreSQL, `socket=PATH`
/// for MariaDB, an absolute path either way); anything else is refused.
fn socket_option(kind: ServerKind, query: &str) -> Result<Option<PathBuf>, String> {
    let mut socket = None;
    for kv in query.split('&').filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        let expected = match kind {
            ServerKind::Postgres => "host",
            ServerKind::Mariadb => "socket",
            ServerKind::Redis | ServerKind::Cassandra | ServerKind::Mongodb => "",
        };
        if k != expected || expected.is_empty() {
            return Err(match kind {
                ServerKind::Postgres => format!("unknown URL option '{k}' (host=SOCKET_DIR)"),
                ServerKind::Mariadb => format!("unknown URL option '{k}' (socket=SOCKET_FILE)"),
                ServerKind::Redis | ServerKind::Mongodb => {
                    format!("unknown URL option '{k}' (Redis URLs take none)")
                }
                ServerKind::Cassandra => {
                    format!("unknown URL option '{k}' (Cassandra URLs take none)")
                }
            });
        }
        let path = decode(v).ok_or("bad %-escape")?;
        if !path.starts_with('/') {
            return Err(format!("{k}={path}: the socket must be an absolute path"));
        }
        socket = Some(PathBuf::from(path));
    }
    Ok(socket)
}

/// A keyspace name CQL takes unquoted (and Cassandra's 48-character limit).
pub fn is_cql_name(s: &str) -> bool {
    !s.is_empty() && s.len() <= 48 && s.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// `url` with anything between `:` and `@` of its authority masked.
fn mask(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    match rest.rsplit_once('@') {
        Some((auth, host)) => match auth.split_once(':') {
            Some((u, _)) => format!("{scheme}://{u}:***@{host}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

fn split_host_port(s: &str) -> Option<(&str, Option<&str>)> {
    if let Some(rest) = s.strip_prefix('[') {
        let (h, after) = rest.split_once(']')?;
        return match after {
            "" => Some((h, None)),
            a => Some((h, Some(a.strip_prefix(':')?))),
        };
    }
    Some(match s.split_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (s, None),
    })
}

/// Percent-decoding of a URL part.
fn decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|c| match c {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (c as char).to_string()
            }
            _ => format!("%{c:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_of_each_server_parse() {
        let e = Endpoint::parse("postgres://bench:s%40cret@db.example:5433/tpcc").unwrap();
        assert_eq!(
            (
                e.kind,
                e.host.as_str(),
                e.port,
                e.user.as_str(),
                e.password.as_str(),
                e.database.as_str()
            ),
            (
                ServerKind::Postgres,
                "db.example",
                5433,
                "bench",
                "s@cret",
                "tpcc"
            )
        );
        assert_eq!(e.display_url(), "postgres://bench:***@db.example:5433/tpcc");
        let m = Endpoint::parse("mysql://root@127.0.0.1/ycsb").unwrap();
        assert_eq!(
            (m.kind, m.port, m.password.as_str()),
            (ServerKind::Mariadb, 3306, "")
        );
        let r = Endpoint::parse("redis://:pw@[::1]:6380/2").unwrap();
        assert_eq!(
            (r.kind, r.host.as_str(), r.port, r.database.as_str()),
            (ServerKind::Redis, "::1", 6380, "2")
        );
        assert_eq!(r.redis_url(), "redis://:pw@::1:6380/2");
        assert_eq!(Endpoint::parse("redis://localhost").unwrap().port, 6379);
        let c = Endpoint::parse("cassandra://127.0.0.1/ycsb").unwrap();
        assert_eq!(
            (c.kind, c.port, c.database.as_str()),
            (ServerKind::Cassandra, 9042, "ycsb")
        );
        assert_eq!(c.display_url(), "cassandra://127.0.0.1:9042/ycsb");
        let c = Endpoint::parse("cassandra://u:pw@h:19042").unwrap();
        assert_eq!((c.port, c.database.as_str()), (19042, ""));
        assert_eq!(e.socket, None);
    }

    #[test]
    fn mongodb_urls_keep_their_options_for_the_driver() {
        let m = Endpoint::parse("mongodb://127.0.0.1").unwrap();
        assert_eq!(
            (m.kind, m.port, m.database.as_str()),
            (ServerKind::Mongodb, 27017, "")
        );
        assert_eq!(m.mongodb_url(), "mongodb://127.0.0.1:27017/");
        let m =
            Endpoint::parse("mongodb://bob:s%40c@db:27018/admin?w=majority&journal=true").unwrap();
        assert_eq!(
            (m.user.as_str(), m.password.as_str(), m.database.as_str()),
            ("bob", "s@c", "admin")
        );
        assert_eq!(m.options, "w=majority&journal=true");
        assert_eq!(
            m.display_url(),
            "mongodb://bob:***@db:27018/admin?w=majority&journal=true"
        );
        assert_eq!(
            m.mongodb_url(),
            "mongodb://bob:s%40c@db:27018/admin?w=majority&journal=true"
        );
        for bad in [
            "mongodb://h:0",
            "mongodb+srv://u:pw@cluster.example/db",
            "mongodb://h/a.b",
            "mongodb://u:pw@h/db?journal=maybe",
            "mongodb://u:pw@h/db?nosuchoption=1&w=1&w=2",
        ] {
            let e = Endpoint::parse(bad).unwrap_err();
            let msg = format!("{e:#}");
            assert_eq!(crate::error::exit_code(&e), 2, "{bad}: {msg}");
            assert!(msg.contains("--server-url"), "{msg}");
            assert!(!msg.contains(":pw@"), "password shown: {msg}");
        }
    }

    #[test]
    fn unix_sockets_are_query_options() {
        let p = Endpoint::parse("postgres://bob:pw@/tpcc?host=/run/postgresql").unwrap();
        assert_eq!(
            (
                p.socket.as_deref(),
                p.host.as_str(),
                p.port,
                p.database.as_str()
            ),
            (
                Some(std::path::Path::new("/run/postgresql")),
                "localhost",
                5432,
                "tpcc"
            )
        );
        assert_eq!(
            p.display_url(),
            "postgres://bob:***@localhost:5432/tpcc?host=/run/postgresql"
        );
        let p = Endpoint::parse("postgres://bob@h:5433/db?host=%2Ftmp%2Fpg").unwrap();
        assert_eq!(
            (p.socket.as_deref(), p.port),
            (Some(std::path::Path::new("/tmp/pg")), 5433)
        );
        let m =
            Endpoint::parse("mysql://root@localhost/db?socket=/run/mysqld/mysqld.sock").unwrap();
        assert_eq!(
            m.socket.as_deref(),
            Some(std::path::Path::new("/run/mysqld/mysqld.sock"))
        );
        assert!(m
            .display_url()
            .ends_with("/db?socket=/run/mysqld/mysqld.sock"));
        for bad in [
            "postgres://u@h/db?socket=/x",
            "mysql://u@h/db?host=/x",
            "postgres://u@h/db?host=relative",
            "postgres://u@h/db?sslmode=disable",
            "redis://h/0?socket=/x",
            "postgres://u@/db",
        ] {
            let e = Endpoint::parse(bad).unwrap_err();
            assert_eq!(crate::error::exit_code(&e), 2, "{bad}");
            assert!(format!("{e:#}").contains("--server-url"), "{bad}");
        }
    }

    #[test]
    fn bad_urls_name_the_flag_and_hide_the_password() {
        for bad in [
            "localhost:5432",
            "http://x/y",
            "postgres://u:pw@h:0/db",
            "postgres://u:pw@h:99999/db",
            "postgres://u:pw@h/",
            "postgres://h/db",
            "mysql://u@:3306/db",
            "redis://h/x",
            "postgres://u:p%zz@h/db",
            "cassandra://h/bad-keyspace",
            "cassandra://u@h/ks",
            "cassandra://h:0/ks",
            "cassandra://h/ks?x=1",
        ] {
            let e = Endpoint::parse(bad).unwrap_err();
            let msg = format!("{e:#}");
            assert_eq!(crate::error::exit_code(&e), 2, "{bad}");
            assert!(msg.contains("--server-url"), "{msg}");
            assert!(!msg.contains(":pw@"), "password shown: {msg}");
        }
    }
}
