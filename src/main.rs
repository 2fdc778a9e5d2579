//! iolab binary: parse the command line, dispatch, print the error chain, exit.

fn main() {
    let cli = match iolab::cli::Cli::try_parse_args(std::env::args_os()) {
        Ok(cli) => cli,
        Err(e) => {
            let typed = || iolab::cli::typed_value_error(&e).map(|(f, why)| format!("{f}: {why}"));
            if let Some(msg) = negative_value(&e)
                .or_else(|| foreign_spelling(&e))
                .or_else(typed)
            {
                eprintln!("iolab: error: {msg}");
                std::process::exit(2);
            }
            e.exit()
        }
    };
    // Commands that only print die quietly on a closed pipe (`| head`), as
    // other Unix tools do; runs keep SIGPIPE ignored so their teardown runs.
    let prints_only = prints_only(&cli);
    if prints_only {
        // SAFETY: restoring the default disposition of SIGPIPE has no preconditions.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    // Before anything is set up: a Ctrl-C from here on stops the run
    // through its normal path instead of killing it halfway.
    iolab::wire_signals(!prints_only);
    // What a SIGKILLed run left (scratch files, tracefs instances) goes first.
    for line in iolab::testbed::sweep_stale() {
        eprintln!("iolab: {line}");
    }
    if iolab::interrupt::stop_requested() {
        eprintln!("iolab: interrupted before the run started");
        std::process::exit(130);
    }
    let outcome = iolab::commands::dispatch(cli);
    let code = match &outcome {
        Ok(()) => 0,
        Err(err) => iolab::error::exit_code(err),
    };
    // A signal the run did not see (it came during the final teardown)
    // still makes the exit 130 and the results say interrupted.
    let code = iolab::interrupt::exit_code(code);
    if let Err(err) = outcome {
        let mut causes = iolab::error::chain_messages(&err).into_iter();
        let mut msg = format!("iolab: error: {}", causes.next().unwrap_or_default());
        for cause in causes {
            msg.push_str(&format!("\n  caused by: {cause}"));
        }
        eprintln!("{msg}");
    }
    std::process::exit(code);
}

/// clap reads `--qd -1` as an unknown flag `-1`; name the flag it was
/// given to instead, as every other bad value is named.
fn negative_value(e: &clap::Error) -> Option<String> {
    if e.kind() != clap::error::ErrorKind::UnknownArgument {
        return None;
    }
    // The argument clap did not know, if it is a number after a flag.
    let clap::error::ContextValue::String(value) = e.get(clap::error::ContextKind::InvalidArg)?
    else {
        return None;
    };
    if !value[1..].starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let args: Vec<String> = std::env::args().collect();
    // clap names `-5` for `-5s` (a cluster of short flags): the whole word.
    let i = args.iter().position(|a| a.starts_with(value.as_str()))?;
    let flag = args[..i].last().filter(|f| f.starts_with("--"))?;
    Some(format!(
        "{flag}: '{}' is negative; it takes zero or more",
        args[i]
    ))
}

/// fio's, YCSB's and db_bench's spellings of iolab's options, for a
/// "did you mean" instead of clap's plain "unexpected argument".
const FOREIGN: [(&str, &str, &str); 16] = [
    ("--iodepth", "--qd", "fio's iodepth"),
    ("--numjobs", "--jobs", "fio's numjobs"),
    ("--filename", "--target", "fio's filename"),
    (
        "--directory",
        "--target",
        "fio's directory (a scratch file is made inside)",
    ),
    ("--ioengine", "--engine", "fio's ioengine (libaio is aio)"),
    ("--blocksize", "--bs", "fio's blocksize"),
    ("--readwrite", "--rw", "fio's readwrite"),
    ("--rwmixread", "--mix", "fio's rwmixread"),
    ("--ramp_time", "--ramp", "fio's ramp_time"),
    ("--rate_iops", "--rate", "fio's rate_iops"),
    (
        "--output-format",
        "--json FILE or --export fio-json FILE",
        "fio's output format",
    ),
    (
        "--status_interval",
        "--status-interval",
        "fio's status-interval",
    ),
    ("-threads", "--threads", "YCSB's -threads"),
    ("-target", "--target-ops (or --rate)", "YCSB's -target"),
    (
        "--stats_interval_seconds",
        "--status-interval",
        "db_bench's stats interval",
    ),
    ("--value_size", "--value-size", "db_bench's value_size"),
];

/// An unknown option that is another tool's name for an iolab option (clap
/// reads `-threads` as the short flags `-t -h ...`: the words are checked).
fn foreign_spelling(e: &clap::Error) -> Option<String> {
    if e.kind() != clap::error::ErrorKind::UnknownArgument {
        return None;
    }
    std::env::args().skip(1).find_map(|word| {
        let name = word.split('=').next().unwrap_or(&word).to_string();
        let (_, ours, theirs) = FOREIGN.iter().find(|(f, _, _)| *f == name)?;
        Some(format!(
            "{name}: unknown option; iolab calls {theirs} {ours} (see --help)"
        ))
    })
}

/// Whether a command only reads and prints (nothing to tear down).
fn prints_only(cli: &iolab::cli::Cli) -> bool {
    use iolab::cli::Command;
    match &cli.command {
        Command::Report(_) | Command::Compare(_) | Command::Sysinfo(_) => true,
        Command::Device(a) => a.dry_run,
        Command::Run(a) => a.dry_run,
        Command::Kv(a) => a.dry_run,
        Command::Oltp(a) => a.dry_run,
        Command::Remote(a) => a.dry_run,
        Command::Trace(_) | Command::Serve(_) | Command::Agent(_) => false,
    }
}
