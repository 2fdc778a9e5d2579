//! Arguments of `iolab oltp` (a TPC-C-derived OLTP workload).

use clap::Args;
use std::path::PathBuf;

use super::media::MediaArgs;
use super::server::ServerArgs;
use crate::plan::units::Size;

/// `--server-url` as oltp takes it: the shared flag's help lists kv's
/// Redis, Cassandra and MongoDB URLs too, which oltp refuses.
pub const SERVER_URL_HELP: &str = "Use this running server instead of starting a private one \
(postgres://USER:PW@HOST:PORT/DB with --engine postgres, mysql://USER:PW@HOST:PORT/DB or \
mariadb://... with --engine mariadb; a unix socket as ?host=DIR for PostgreSQL, ?socket=PATH \
for MariaDB); iolab drops and loads only its nine tables";

#[derive(Debug, Clone, Args)]
#[command(
    after_help = "TPC-C-derived: the spec's schema, load, five transactions and mix, \
not an audited TPC-C result; it reports NOPM (new orders per minute).

Examples:
  iolab oltp --engine postgres -t /mnt/nvme -w 4 --users 1,2,4,8 -o pg-nvme.json
  iolab oltp --engine mariadb -t /mnt/sata -w 4 --users 8 --buffer-pool 1g --runtime 5m
  iolab oltp --engine postgres -t /mnt/nvme --shared-buffers 1g --max-wal-size 4g --users 16
  iolab oltp -t /mnt/nvme -w 1 --users 1,2,4,8,16 --runtime 60s -o sqlite-nvme.json
  iolab oltp -t /mnt/sata -w 4 --users 8 --runtime 5m --ramp 30s --keep
  iolab oltp --db /mnt/sata/iolab-oltp-1234/tpcc.sqlite -w 4 --users 16
  iolab oltp --engine postgres --server-url postgres://tpcc:secret@db.example:5432/tpcc -w 10 --users 32
  iolab oltp --engine mariadb --server-url 'mysql://root@localhost/tpcc?socket=/run/mysqld/mysqld.sock'
  iolab oltp --engine postgres -t sata=/mnt/sata -t nvme=/mnt/nvme --rounds 3 -w 4 --users 8 -o pg-media.json
  iolab oltp --engine postgres -t disk=/mnt/test --make tmpfs --make-in /mnt/test --rounds 2 --users 4 --runtime 30s
  iolab oltp --hosts h1,h2,h3 -t /data -w 2 --users 1,4 --runtime 60s -o sqlite-3-hosts.json
  iolab oltp --engine postgres --server-url postgres://tpcc@db1:5432/tpcc --hosts h1,h2 --users 8
  iolab oltp --hosts h1,h2 -t nvme=/mnt/nvme -t sata=/mnt/sata --rounds 3 --baseline sata --users 4
  iolab report pg-nvme.json

postgres and mariadb start a private server with its data under --target
(own port on 127.0.0.1, random password), stopped and removed at the end;
--server-url uses a running server instead (its tables are dropped and
loaded anew, nothing else is touched). Several --target (or --make) run
the same load and points on each, interleaved by rounds, one results file
normalized to --baseline (docs/media.md).

--hosts runs the load and every point on every host at once over ssh
(docs/fleet.md): each host its own SQLite database in a scratch directory
of --target (an absolute directory on every host, /var/tmp by default),
or one server every host shares (--server-url: each host loads into a
schema or database of its own, iolab_PID_HOST, dropped at the end); one
merged point per users count, NOPM summed, each host's row beside it;
several -t (directories on every host) with --rounds and --baseline: a
media run on the hosts."
)]
pub struct OltpArgs {
    /// Database engine: sqlite (embedded, in --target), postgres or mariadb
    /// (a private server started with its data under --target, or the
    /// running server named by --server-url)
    #[arg(long, default_value = "sqlite", value_parser = ["sqlite", "postgres", "mariadb"])]
    pub engine: String,

    /// Directory on the filesystem under test: the SQLite database, or the
    /// private server's data directory, goes in a scratch directory made
    /// inside it, removed at the end (SQLite's unless --keep). Several
    /// (`-t LABEL=DIR ...`): the same run on each, side by side (default: .)
    #[arg(short = 't', long, value_name = "[LABEL=]DIR")]
    pub target: Vec<PathBuf>,

    #[command(flatten)]
    pub media: MediaArgs,

    /// With --make: the room of each configuration (default: 256 MiB per
    /// warehouse plus the server's log, at least 1 GiB)
    #[arg(long, value_name = "SIZE", help_heading = "Media")]
    pub size: Option<Size>,

    #[command(flatten)]
    pub server: ServerArgs,

    /// Warehouses (the scale: about 100 MB each on SQLite)
    #[arg(short = 'w', long, default_value_t = 1)]
    pub warehouses: u32,

    /// Virtual users, a comma-separated sweep (one point per count, in order,
    /// on the same loaded database)
    #[arg(long, default_value = "1")]
    pub users: String,

    /// Measured time of each point (--runtime in every verb; --time is the same)
    #[arg(
        long = "runtime",
        visible_alias = "time",
        default_value = "60s",
        value_name = "DUR"
    )]
    pub time: String,

    /// Ramp before each point's measured time (run, not counted)
    #[arg(long, default_value = "5s", value_name = "DUR")]
    pub ramp: String,

    /// Keying and think times of the spec (off: every user runs
    /// transactions back to back)
    #[arg(long)]
    pub wait: bool,

    /// Loader threads (default: the number of cores)
    #[arg(long, value_name = "N")]
    pub loader_threads: Option<usize>,

    /// Keep the scratch directory and its loaded database (reuse it with --db)
    #[arg(long)]
    pub keep: bool,

    /// Reuse this kept, loaded SQLite database: no load
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,

    /// Seed of the load and of the terminals' inputs (the same default in every verb)
    #[arg(long, default_value_t = 4207)]
    pub seed: u64,

    /// Write results (iolab results model, JSON) to this file
    #[arg(short = 'o', long, visible_alias = "json")]
    pub output: Option<PathBuf>,

    /// Replace an existing output file iolab did not write
    #[arg(long)]
    pub force: bool,
    /// Also write the results as FORMAT into FILE at the end (html, text,
    /// markdown, csv, fio-json; repeat for several), Ctrl-C too
    #[arg(long, num_args = 2, value_names = ["FORMAT", "FILE"], action = clap::ArgAction::Append)]
    pub export: Option<Vec<String>>,

    /// No progress, header or tables (warnings and errors still go to stderr)
    #[arg(short, long)]
    pub quiet: bool,

    /// Print the plan and exit
    #[arg(long)]
    pub dry_run: bool,

    /// Print a status line to stdout every SECS seconds while loading and running
    #[arg(long, value_name = "SECS")]
    pub status_interval: Option<f64>,

    /// Skip the consistency conditions after each point
    #[arg(long)]
    pub no_check: bool,

    /// Several hosts at once (docs/fleet.md).
    #[command(flatten)]
    pub hosts: crate::cli::hosts::HostsArgs,
}
