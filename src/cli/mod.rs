//! Command-line definitions (clap derive) only; no behaviour lives here.
//! Each verb's arguments are in a file of their own.

pub mod agent;
pub mod compare;
pub mod device;
pub mod hosts;
pub mod kv;
pub mod man;
pub mod media;
pub mod names;
pub mod oltp;
pub mod remote;
pub mod report;
pub mod run;
pub mod serve;
pub mod server;
pub mod sysinfo;
pub mod trace;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "iolab",
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("IOLAB_GIT_REV"), ")"),
    about = "A storage performance lab in one command",
    long_about = "iolab characterizes a storage stack from the device up to the database: \
IOPS and bandwidth per block size and queue depth, exact latency distributions, \
where the time of a request goes, and what a database gets out of it."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// What every verb's `--help` ends with.
pub const EXIT_CODES: &str = "EXIT CODES:
  0    success
  1    a point, job or phase failed (see the warnings in the results)
  2    bad input: the flag, key or file is named
  3    verification mismatch (--verify)
  130  interrupted (Ctrl-C or SIGTERM); the results so far are saved";

impl Cli {
    /// The command with the exit codes after every verb's help.
    pub fn with_exit_codes() -> clap::Command {
        use clap::CommandFactory;
        let mut cmd = Cli::command().after_help(EXIT_CODES);
        let verbs: Vec<String> = cmd
            .get_subcommands()
            .map(|c| c.get_name().to_string())
            .collect();
        for v in verbs {
            cmd = cmd.mut_subcommand(v, |c| {
                let text = match c.get_after_help() {
                    Some(h) => format!("{h}\n\n{EXIT_CODES}"),
                    None => EXIT_CODES.to_string(),
                };
                c.after_help(text)
            });
        }
        cmd
    }

    /// Parse a command line (the program name first), remembering which
    /// `device`, `remote` and `kv` flags were given on it: they override
    /// plan and fio job files, as fio's command line does.
    pub fn try_parse_args<I, T>(args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        use clap::parser::ValueSource;
        use clap::FromArgMatches;
        let args = kv::ycsb_spellings(args.into_iter().map(Into::into).collect());
        let m = Cli::with_exit_codes().try_get_matches_from(args)?;
        let mut cli = Cli::from_arg_matches(&m)?;
        let given = |sm: &clap::ArgMatches| -> Vec<String> {
            sm.ids()
                .filter(|id| sm.value_source(id.as_str()) == Some(ValueSource::CommandLine))
                .map(|id| id.to_string())
                .collect()
        };
        match (&mut cli.command, m.subcommand()) {
            (Command::Device(a), Some(("device", sm))) => a.given = given(sm),
            (Command::Remote(a), Some(("remote", sm))) => a.given = given(sm),
            (Command::Kv(a), Some(("kv", sm))) => a.given = given(sm),
            _ => {}
        }
        Ok(cli)
    }
}

/// A flag's value its `plan::units` type refused, as (the flag, why): so
/// it is printed as every usage error is (`--bs: ...`), not in clap's words.
pub fn typed_value_error(e: &clap::Error) -> Option<(String, String)> {
    use clap::error::{ContextKind, ContextValue};
    if e.kind() != clap::error::ErrorKind::ValueValidation {
        return None;
    }
    let why = std::error::Error::source(e)?.downcast_ref::<crate::plan::units::UnitError>()?;
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let flag = arg.split([' ', '=']).next().unwrap_or(arg);
    Some((flag.to_string(), why.to_string()))
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Characterize the storage under DIR within a time budget; writes results.json and report.html
    Run(Box<run::RunArgs>),
    /// Re-render a results file (iolab or fio JSON) as HTML, text, Markdown or CSV
    Report(report::ReportArgs),
    /// Several results files (iolab or fio JSON) side by side, with ratios to the first
    Compare(compare::CompareArgs),
    /// One job or a set of jobs on a file or block device (fio's territory)
    Device(Box<device::DeviceArgs>),
    /// Print the provenance block: machine, kernel, target device, timer cost
    Sysinfo(sysinfo::SysinfoArgs),
    /// Key-value / database workloads (YCSB, db_bench style) on embedded engines
    Kv(Box<kv::KvArgs>),
    /// TPC-C-derived OLTP workload (NOPM) on SQLite, PostgreSQL or MariaDB
    #[command(
        mut_arg("server_url", |a| a.help(oltp::SERVER_URL_HELP)),
        // Redis's and Cassandra's settings: refused by oltp, not listed.
        mut_arg("persistence", |a| a.hide(true)),
        mut_arg("appendfsync", |a| a.hide(true)),
        mut_arg("heap", |a| a.hide(true)),
        mut_arg("commitlog_dir", |a| a.hide(true))
    )]
    Oltp(Box<oltp::OltpArgs>),
    /// Per-request latency breakdown through the I/O stack
    Trace(trace::TraceArgs),
    /// Local vs remote block storage: the same jobs on DAS and over NBD, NVMe/TCP and iSCSI targets, both sides measured
    Remote(Box<remote::RemoteArgs>),
    /// Serve a file or device over NBD or NVMe/TCP (iolab's own targets: io_uring, O_DIRECT, per-request stamps)
    Serve(serve::ServeArgs),
    /// The host side of --hosts, started over ssh (speaks the fleet protocol on stdin/stdout)
    #[command(hide = true)]
    Agent(agent::AgentArgs),
}
