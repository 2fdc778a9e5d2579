//! Arguments shared by the verbs that run against a database server
//! (`kv` and `oltp` with a server engine): an existing server's URL, or the
//! settings of the private server iolab starts with its data on the target.

use crate::plan::units::Size;
use clap::Args;

#[derive(Debug, Clone, Default, Args)]
pub struct ServerArgs {
    /// Use this running server instead of starting a private one
    /// (postgres://USER:PW@HOST:PORT/DB, mysql://USER:PW@HOST:PORT/DB,
    /// redis://[:PW@]HOST:PORT[/N], cassandra://HOST:PORT[/KEYSPACE],
    /// mongodb://[USER:PW@]HOST:PORT[/DB][?OPTIONS]; a unix socket as
    /// ?host=DIR for PostgreSQL, ?socket=PATH for MariaDB); iolab creates
    /// and drops only its own tables, keyspace, database or key prefix
    #[arg(long, value_name = "URL")]
    pub server_url: Option<String>,

    /// Private PostgreSQL: shared_buffers (for example 128m, 1g)
    #[arg(long, value_name = "SIZE")]
    pub shared_buffers: Option<Size>,

    /// Private PostgreSQL: max_wal_size (for example 1g)
    #[arg(long, value_name = "SIZE")]
    pub max_wal_size: Option<Size>,

    /// Private MariaDB: innodb_buffer_pool_size (for example 256m)
    #[arg(long, value_name = "SIZE")]
    pub buffer_pool: Option<Size>,

    /// Private MariaDB: innodb_flush_method
    #[arg(long, value_name = "METHOD", default_value = "O_DIRECT")]
    pub flush_method: String,

    /// Private Redis: aof, rdb or none
    #[arg(long, value_name = "MODE", default_value = "aof")]
    pub persistence: String,

    /// Private Redis with AOF: appendfsync always, everysec or no
    #[arg(long, value_name = "WHEN", default_value = "everysec")]
    pub appendfsync: String,

    /// Private Cassandra: the JVM heap (-Xms and -Xmx; default 1g; its
    /// memtables take a quarter of it unless memtable_heap_space is set)
    #[arg(long, value_name = "SIZE")]
    pub heap: Option<Size>,

    /// Private Cassandra: put the commit log in a directory of its own
    /// under DIR (another medium) instead of beside the data
    #[arg(long, value_name = "DIR")]
    pub commitlog_dir: Option<std::path::PathBuf>,

    /// Private server: any other option as KEY=VALUE (repeatable), passed
    /// to the server as is (postgres -c, mariadbd --KEY=VALUE, redis config,
    /// a cassandra.yaml key)
    #[arg(long = "server-set", value_name = "KEY=VALUE")]
    pub server_set: Vec<String>,
}
