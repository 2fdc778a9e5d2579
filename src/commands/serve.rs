//! `iolab serve`: run iolab's own NBD or NVMe/TCP target until interrupted.

use std::net::SocketAddr;
use std::time::Duration;

use crate::cli::serve::ServeArgs;
use crate::dut::{self, TargetOptions};
use crate::error::usage;
use crate::interrupt;
use crate::plan::parse::{parse_duration_ns, parse_size};
use crate::remote::nbd_target::{self, TargetConfig};
use crate::remote::nvme_target::{self, NvmeTargetConfig};

/// The protocol `--protocol` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    Nbd,
    NvmeTcp,
}

fn protocol(args: &ServeArgs) -> anyhow::Result<Protocol> {
    match args.protocol.as_str() {
        "nbd" => Ok(Protocol::Nbd),
        "nvme-tcp" | "nvme_tcp" | "nvmetcp" => Ok(Protocol::NvmeTcp),
        p => Err(usage(
            "--protocol",
            format!("'{p}' is not a protocol iolab serves (nbd or nvme-tcp)"),
        )),
    }
}

fn listen(args: &ServeArgs, default_port: u16) -> anyhow::Result<SocketAddr> {
    let Some(l) = &args.listen else {
        return Ok(SocketAddr::from(([127, 0, 0, 1], default_port)));
    };
    l.parse().map_err(|_| {
        usage(
            "--listen",
            format!("'{l}' is not ADDR:PORT (for example 127.0.0.1:{default_port})"),
        )
    })
}

/// The checked settings of an NVMe/TCP target.
pub fn nvme_config(
    args: &ServeArgs,
    backing: &std::path::Path,
) -> anyhow::Result<NvmeTargetConfig> {
    let nbd = config(args, backing)?;
    if args.read_only {
        return Err(usage(
            "--read-only",
            "iolab's NVMe/TCP target serves read-write only (use --protocol nbd)",
        ));
    }
    crate::engine::nvmetcp::codec::connect_data([0; 16], 0, &args.nqn, "nqn.x")
        .map_err(|e| usage("--nqn", e.0))?;
    let mut cfg = NvmeTargetConfig::new(backing, listen(args, 4420)?);
    cfg.threads = nbd.threads;
    cfg.subnqn = args.nqn.clone();
    cfg.delay = nbd.delay;
    cfg.stamps = nbd.stamps;
    Ok(cfg)
}

/// The checked settings of an NBD target.
pub fn config(args: &ServeArgs, backing: &std::path::Path) -> anyhow::Result<TargetConfig> {
    let listen = listen(args, 10809)?;
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
    let proto = protocol(&args)?;
    match proto {
        Protocol::Nbd => drop(config(&args, &args.target)?),
        Protocol::NvmeTcp => drop(nvme_config(&args, &args.target)?),
    }
    let limit = args
        .time_limit
        .as_deref()
        .map(|t| parse_duration_ns("--time-limit", t))
        .transpose()?
        .map(Duration::from_nanos);
    let backing = dut::prepare(&opts, !args.read_only, None, 1)?;
    let stop: Box<dyn FnOnce() -> anyhow::Result<()>> = match proto {
        Protocol::Nbd => {
            let cfg = config(&args, &backing.path)?;
            let target = nbd_target::start(&cfg)?;
            println!(
                "iolab serve: nbd://{}/ serving {} ({} bytes, {}{}, {})",
                target.addr,
                backing.path.display(),
                target.export.size,
                direct_io(target.direct),
                if cfg.read_only { ", read-only" } else { "" },
                reactors(cfg.threads),
            );
            Box::new(move || target.stop())
        }
        Protocol::NvmeTcp => {
            let cfg = nvme_config(&args, &backing.path)?;
            let target = nvme_target::start(&cfg)?;
            println!(
                "iolab serve: {} serving {} ({} bytes in blocks of {}, {}, {})",
                target.url(),
                backing.path.display(),
                target.size,
                target.block_size,
                direct_io(target.direct),
                reactors(cfg.threads),
            );
            Box::new(move || target.stop())
        }
    };
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let started = std::time::Instant::now();
    while !interrupt::stop_requested() && limit.is_none_or(|l| started.elapsed() < l) {
        std::thread::sleep(Duration::from_millis(50));
    }
    stop()?;
    drop(backing);
    Ok(())
}

fn direct_io(direct: bool) -> &'static str {
    if direct {
        "O_DIRECT"
    } else {
        "buffered: the filesystem refuses O_DIRECT"
    }
}

fn reactors(n: usize) -> String {
    format!("{n} reactor thread{}", if n == 1 { "" } else { "s" })
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
