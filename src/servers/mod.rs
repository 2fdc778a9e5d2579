//! Every server iolab starts. Database servers iolab measures: a private
//! instance it starts with its data on the storage under test (PostgreSQL,
//! MariaDB, Redis, Cassandra; a FerretDB as MongoDB's wire protocol's test
//! double; see `private`), or an existing server named by
//! `--server-url`, of which iolab uses only what it creates itself. Either
//! way the server's version, settings and data directory go into
//! provenance (`ServerInfo`), and its processes are sampled per point
//! (`measure::procgroup`). And the storage servers `iolab remote` compares
//! transports through (`storage`: iolab's targets, nbdkit, qemu-nbd, tgtd).

pub mod cassandra;
pub mod endpoint;
pub mod ferretdb;
pub mod flags;
pub mod mariadb;
pub mod mongodb;
pub mod postgres;
pub mod private;
pub mod redis;
pub mod settings;
pub mod storage;

use std::path::Path;

pub use endpoint::{Endpoint, ServerKind};
pub use private::PrivateServer;
pub use settings::{Persistence, ServerSettings};

use crate::error::usage;

/// The server a run uses.
#[derive(Debug)]
pub enum Server {
    Private(Box<PrivateServer>),
    External {
        endpoint: Endpoint,
        version: String,
        config: Vec<(String, String)>,
    },
}

pub use crate::results::sections::db::ServerInfo;

impl Server {
    /// Start a private `kind` server under `under`, or connect to `url`.
    pub fn start_or_connect(
        kind: ServerKind,
        url: Option<&str>,
        under: &Path,
        settings: &ServerSettings,
    ) -> anyhow::Result<Server> {
        match url {
            Some(u) => Server::connect(kind, u),
            None => Ok(Server::Private(Box::new(private::start(
                kind, under, settings,
            )?))),
        }
    }

    /// An existing server: the URL must name `kind` and take a connection
    /// (exit 2 naming `--server-url` otherwise).
    pub fn connect(kind: ServerKind, url: &str) -> anyhow::Result<Server> {
        let endpoint = Endpoint::parse(url)?;
        endpoint.check_kind(kind)?;
        let (version, config) = private::describe(&endpoint)
            .map_err(|e| usage("--server-url", crate::error::chain_line(&e)))?;
        Ok(Server::External {
            endpoint,
            version,
            config,
        })
    }

    pub fn endpoint(&self) -> &Endpoint {
        match self {
            Server::Private(p) => &p.endpoint,
            Server::External { endpoint, .. } => endpoint,
        }
    }

    pub fn kind(&self) -> ServerKind {
        self.endpoint().kind
    }

    pub fn is_private(&self) -> bool {
        matches!(self, Server::Private(_))
    }

    /// The process group of a private server (for CPU and I/O sampling).
    pub fn pgid(&self) -> Option<u32> {
        match self {
            Server::Private(p) => Some(p.pgid),
            Server::External { .. } => None,
        }
    }

    /// Where a private server keeps its data.
    pub fn data_dir(&self) -> Option<&Path> {
        match self {
            Server::Private(p) => Some(&p.layout.data),
            Server::External { .. } => None,
        }
    }

    pub fn version(&self) -> &str {
        match self {
            Server::Private(p) => &p.version,
            Server::External { version, .. } => version,
        }
    }

    /// What the server says it has written to storage since it started
    /// (PostgreSQL: WAL and data pages; MariaDB: InnoDB's data,
    /// doublewrite and redo log); none for Redis or when it cannot be
    /// asked. It opens a connection of its own: ask just before a measured
    /// window starts and just after it ends (`ServerSampler` does).
    pub fn written_bytes(&self) -> Option<u64> {
        let ep = self.endpoint();
        ep.kind.facts().written_bytes.and_then(|f| f(ep).ok())
    }

    pub fn info(&self) -> ServerInfo {
        let (config, private) = match self {
            Server::Private(p) => (&p.config, Some(p)),
            Server::External { config, .. } => (config, None),
        };
        ServerInfo {
            kind: self.kind().name().into(),
            version: self.version().into(),
            url: self.endpoint().display_url(),
            private: private.is_some(),
            data_dir: private.map(|p| p.layout.data.display().to_string()),
            log: private.map(|p| p.layout.log.display().to_string()),
            run_as: private.map(|p| p.run_as.name.clone()),
            config: config.iter().cloned().collect(),
        }
    }
}

/// What a phase's probe reads of a server (`measure::probe`).
impl crate::measure::probe::ProbedServer for Server {
    fn pgid(&self) -> Option<u32> {
        Server::pgid(self)
    }

    fn data_dir(&self) -> Option<&Path> {
        Server::data_dir(self)
    }

    fn written_bytes(&self) -> Option<u64> {
        Server::written_bytes(self)
    }
}
