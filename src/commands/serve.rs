//! `iolab serve`: run iolab's own NBD target until interrupted.

use std::net::SocketAddr;
use std::time::Duration;

use crate::cli::serve::ServeArgs;
use crate::dut::{self, TargetOptions};
use crate::error::usage;
use crate::interrupt;
use crate::plan::parse::{parse_duration_ns, parse_size};
use crate::remote::nbd_target::{self, TargetConfig};

/// The checked settings of a target.
pub fn config(args: &ServeArgs, backing: &std::path::Path) -> anyhow::Result<TargetConfig> {
    let listen: SocketAddr = args.listen.parse().map_err(|_| {
        usage(
            "--listen",
            format!(
                "'{}' is not ADDR:PORT (for example 127.0.0.1:10809)",
                args.listen
            ),
        )
    })?;
    if !(1..=64).contains(&args.threads) {
        return Err(usage("--threads", "must be 1 to 64"));
    }
    let max_block = parse_size("--max-block", &args.max_block)?;
    if !(4096..=(32 << 20)).contains(&max_block) || max_block % 4096 != 0 {
        return Err(usage(
            "--max-block",
            "must be a multiple of 4 KiB between 4 KiB and 32 MiB",
        ));
    }
    let delay = match &args.fabric_delay {
        None => None,
        Some(s) => {
            let ns = parse_duration_ns("--fabric-delay", s)?;
            if ns > 10_000_000_000 {
                return Err(usage("--fabric-delay", "must be at most 10 s"));
            }
            Some(Duration::from_nanos(ns))
        }
    };
    if let Some(p) = &args.stamps {
        check_stamps_file(p, backing)?;
    }
    let mut cfg = TargetConfig::new(backing, listen);
    cfg.threads = args.threads;
    cfg.read_only = args.read_only;
    cfg.max_block = max_block as u32;
    cfg.delay = delay;
    cfg.stamps = args.stamps.clone();
    Ok(cfg)
}

pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    interrupt::install();
    let opts = TargetOptions {
        path: Some(args.target.clone()),
        size: match &args.size {
            Some(s) => Some(parse_size("--size", s)?),
            None if args.target.is_dir() => Some(dut::DEFAULT_SCRATCH_SIZE),
            None => None,
        },
        overwrite: args.overwrite,
        destroy_data: args.destroy_data.clone(),
        keep: args.keep,
    };
    // Validate everything before creating the scratch file.
    config(&args, &args.target)?;
    let limit = args
        .time_limit
        .as_deref()
        .map(|t| parse_duration_ns("--time-limit", t))
        .transpose()?
        .map(Duration::from_nanos);
    let backing = dut::prepare(&opts, !args.read_only, None, 1)?;
    let cfg = config(&args, &backing.path)?;
    let target = nbd_target::start(&cfg)?;
    println!(
        "iolab serve: nbd://{}/ serving {} ({} bytes, {}{}, {} reactor thread{})",
        target.addr,
        backing.path.display(),
        target.export.size,
        if target.direct {
            "O_DIRECT"
        } else {
            "buffered: the filesystem refuses O_DIRECT"
        },
        if cfg.read_only { ", read-only" } else { "" },
        cfg.threads,
        if cfg.threads == 1 { "" } else { "s" },
    );
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let started = std::time::Instant::now();
    while !interrupt::stop_requested() && limit.is_none_or(|l| started.elapsed() < l) {
        std::thread::sleep(Duration::from_millis(50));
    }
    target.stop()?;
    drop(backing);
    Ok(())
}

/// Stamps are appended: to a new file, or to an earlier stamps file.
fn check_stamps_file(p: &std::path::Path, backing: &std::path::Path) -> anyhow::Result<()> {
    use crate::results::output::{check, Destination};
    // `check` refuses directories, devices and the target itself; an
    // existing file is fine only if it holds stamps (or nothing).
    match check(p, "--stamps", true, &[backing])? {
        Destination::Stream(_) => Ok(()),
        Destination::File(f) => match std::fs::read(&f) {
            Ok(b) if !b.is_empty() && !b.starts_with(b"conn ") => Err(usage(
                "--stamps",
                format!("{} exists and is not a stamps file", p.display()),
            )),
            _ => Ok(()),
        },
    }
}
