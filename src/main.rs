//! iolab binary: parse the command line, dispatch, print the error chain, exit.

use clap::Parser;

fn main() {
    let cli = iolab::cli::Cli::parse();
    // What a SIGKILLed run left (scratch files, tracefs instances) goes first.
    for line in iolab::testbed::sweep_stale() {
        eprintln!("iolab: {line}");
    }
    if let Err(err) = iolab::commands::dispatch(cli) {
        let mut msg = format!("iolab: error: {err}");
        for cause in err.chain().skip(1) {
            msg.push_str(&format!("\n  caused by: {cause}"));
        }
        eprintln!("{msg}");
        std::process::exit(iolab::error::exit_code(&err));
    }
}
