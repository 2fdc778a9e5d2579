//! `iolab serve`: run iolab's own NBD or NVMe/TCP target until interrupted
//! (its settings checked, the backing prepared, the target started and
//! stopped); commands/serve.rs turns the command line into `ServeSettings`.

use std::net::SocketAddr;
use std::time::Duration;

use crate::dut::{self, TargetOptions};
use crate::error::usage;
use crate::interrupt;
use crate::plan::parse::parse_cpu_list;
use crate::plan::units::{Size, Span};
use crate::target::nbd_target::{self, TargetConfig};
use crate::target::nvme_target::{self, NvmeTargetConfig};
use crate::target::serving::PollPlan;

/// The settings of `iolab serve`, as given (`cli::serve::ServeSettings`
/// documents each); checked by `run` before anything is made.
#[derive(Debug, Clone)]
pub struct ServeSettings {
    pub target: std::path::PathBuf,
    pub size: Option<Size>,
    pub overwrite: bool,
    pub destroy_data: Option<std::path::PathBuf>,
    pub read_only: bool,
    pub protocol: String,
    pub nqn: String,
    pub listen: Option<String>,
    pub allow_remote: bool,
    pub threads: usize,
    pub max_block: Size,
    pub fabric_delay: Option<Span>,
    pub stamps: Option<std::path::PathBuf>,
    pub stall_timeout: Span,
    pub poll: bool,
    pub poll_cpus: Option<String>,
    pub time_limit: Option<Span>,
    pub keep: bool,
    pub quiet: bool,
}

/// The protocol `--protocol` names (one of those `serving::Protocol`
/// implements).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ServedProtocol {
    Nbd,
    NvmeTcp,
    NvmeRdma,
}

fn protocol(args: &ServeSettings) -> anyhow::Result<ServedProtocol> {
    match args.protocol.as_str() {
        "nbd" => Ok(ServedProtocol::Nbd),
        "nvme-tcp" | "nvme_tcp" | "nvmetcp" => Ok(ServedProtocol::NvmeTcp),
        "nvme-rdma" | "nvme_rdma" | "nvmerdma" => Ok(ServedProtocol::NvmeRdma),
        p => Err(usage(
            "--protocol",
            format!("'{p}' is not a protocol iolab serves (nbd, nvme-tcp or nvme-rdma)"),
        )),
    }
}

fn listen(args: &ServeSettings, default_port: u16) -> anyhow::Result<SocketAddr> {
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
    args: &ServeSettings,
    backing: &std::path::Path,
) -> anyhow::Result<NvmeTargetConfig> {
    let nbd = config(args, backing)?;
    if args.read_only {
        return Err(usage(
            "--read-only",
            "iolab's NVMe/TCP target serves read-write only (use --protocol nbd)",
        ));
    }
    crate::proto::nvme::codec::connect_data([0; 16], 0, &args.nqn, "nqn.x")
        .map_err(|e| usage("--nqn", e.0))?;
    let mut cfg = NvmeTargetConfig::new(backing, listen(args, 4420)?);
    cfg.threads = nbd.threads;
    cfg.subnqn = args.nqn.clone();
    cfg.delay = nbd.delay;
    cfg.stamps = nbd.stamps;
    cfg.stall_timeout = nbd.stall_timeout;
    cfg.poll = nbd.poll;
    Ok(cfg)
}

/// The checked settings of an NBD target.
pub fn config(args: &ServeSettings, backing: &std::path::Path) -> anyhow::Result<TargetConfig> {
    let listen = listen(args, 10809)?;
    if !(1..=64).contains(&args.threads) {
        return Err(usage("--threads", "must be 1 to 64"));
    }
    let max_block = args.max_block.bytes();
    if !(4096..=(32 << 20)).contains(&max_block) || !max_block.is_multiple_of(4096) {
        return Err(usage(
            "--max-block",
            "must be a multiple of 4 KiB between 4 KiB and 32 MiB",
        ));
    }
    let delay = match &args.fabric_delay {
        None => None,
        Some(s) => {
            let ns = s.ns();
            if ns > 10_000_000_000 {
                return Err(usage("--fabric-delay", "must be at most 10 s"));
            }
            Some(Duration::from_nanos(ns))
        }
    };
    if let Some(p) = &args.stamps {
        check_stamps_file(p, backing)?;
    }
    let stall_timeout = stall_timeout(&args.stall_timeout)?;
    let mut cfg = TargetConfig::new(backing, listen);
    cfg.threads = args.threads;
    cfg.read_only = args.read_only;
    cfg.max_block = max_block as u32;
    cfg.delay = delay;
    cfg.stamps = args.stamps.clone();
    cfg.stall_timeout = stall_timeout;
    cfg.poll = poll_plan(args)?;
    Ok(cfg)
}

/// `--poll` and `--poll-cpus`: the reactors' CPUs, each one allowed here.
fn poll_plan(args: &ServeSettings) -> anyhow::Result<Option<PollPlan>> {
    if !args.poll {
        if args.poll_cpus.is_some() {
            return Err(usage("--poll-cpus", "applies with --poll"));
        }
        return Ok(None);
    }
    let given = args
        .poll_cpus
        .as_deref()
        .map(|c| parse_cpu_list("--poll-cpus", c))
        .transpose()?;
    PollPlan::new(args.threads, given)
        .map(Some)
        .map_err(|e| usage("--poll-cpus", e))
}

/// What a polling target says at its start (stdout, one line; `iolab
/// remote` reads it back from the server's log): its reactors' CPUs and
/// SO_BUSY_POLL's outcome.
pub fn polling_line(plan: &PollPlan, threads: usize, busy_poll: &str) -> String {
    format!(
        "{POLLING_PREFIX}{}; SO_BUSY_POLL {busy_poll}",
        plan.describe(threads)
    )
}

/// The start of `polling_line`.
pub const POLLING_PREFIX: &str = "iolab serve: polling (never sleeping) on CPUs ";

/// `--stall-timeout`: a duration of at least a second (shorter would cut
/// off clients that pause for a moment).
fn stall_timeout(s: &Span) -> anyhow::Result<Duration> {
    let ns = s.ns();
    if ns < 1_000_000_000 {
        return Err(usage(
            "--stall-timeout",
            format!("'{s}' is too short: at least 1s"),
        ));
    }
    Ok(Duration::from_nanos(ns))
}

pub fn run(args: ServeSettings) -> anyhow::Result<()> {
    interrupt::install();
    let opts = TargetOptions {
        path: Some(args.target.clone()),
        size: match &args.size {
            Some(s) => Some(s.bytes()),
            None if args.target.is_dir() => Some(dut::DEFAULT_SCRATCH_SIZE),
            None => None,
        },
        overwrite: args.overwrite,
        destroy_data: args.destroy_data.clone(),
        keep: args.keep,
    };
    // Validate everything before creating the scratch file.
    let proto = protocol(&args)?;
    let addr = match proto {
        ServedProtocol::Nbd => config(&args, &args.target)?.listen,
        ServedProtocol::NvmeTcp => nvme_config(&args, &args.target)?.listen,
        ServedProtocol::NvmeRdma => rdma_config(&args, &args.target)?.listen,
    };
    check_exposure(addr, !args.read_only, args.allow_remote)?;
    if proto == ServedProtocol::NvmeRdma {
        return serve_rdma(&args, opts, addr, limit_of(&args));
    }
    let limit = limit_of(&args);
    // The port first: a port in use is bad input, found before a scratch
    // file is laid out. Clients wait in the backlog until the target is ready.
    let listener = bind(addr)?;
    let layout = args.target.is_dir().then_some(opts.size).flatten();
    if let (Some(size), false) = (layout, args.quiet) {
        eprintln!(
            "iolab serve: laying out a {} MiB scratch file in {}; clients are served once it is ready",
            size >> 20,
            args.target.display()
        );
    }
    let laying_out = std::time::Instant::now();
    let backing = dut::prepare(&opts, !args.read_only, None, 1)?;
    if let (Some(_), false) = (layout, args.quiet) {
        eprintln!(
            "iolab serve: scratch file laid out in {:.1} s",
            laying_out.elapsed().as_secs_f64()
        );
    }
    let stop: Box<dyn FnOnce() -> anyhow::Result<()>> = match proto {
        ServedProtocol::Nbd => {
            let cfg = config(&args, &backing.path)?;
            let target = nbd_target::start_on(&cfg, listener)?;
            println!(
                "iolab serve: nbd://{}/ serving {} ({} bytes, {}{}, {})",
                target.addr,
                backing.path.display(),
                target.export.size,
                direct_io(target.direct),
                if cfg.read_only { ", read-only" } else { "" },
                reactors(cfg.threads),
            );
            eprintln!("{}", no_authentication("NBD", target.addr, cfg.read_only));
            if let (Some(p), Some(b)) = (&cfg.poll, &target.busy_poll) {
                println!("{}", polling_line(p, cfg.threads, b));
            }
            Box::new(move || target.stop())
        }
        ServedProtocol::NvmeTcp => {
            let cfg = nvme_config(&args, &backing.path)?;
            let target = nvme_target::start_on(&cfg, listener)?;
            println!(
                "iolab serve: {} serving {} ({} bytes in blocks of {}, {}, {})",
                target.url(),
                backing.path.display(),
                target.size,
                target.block_size,
                direct_io(target.direct),
                reactors(cfg.threads),
            );
            eprintln!("{}", no_authentication("NVMe/TCP", target.addr, false));
            if let (Some(p), Some(b)) = (&cfg.poll, &target.busy_poll) {
                println!("{}", polling_line(p, cfg.threads, b));
            }
            Box::new(move || target.stop())
        }
        ServedProtocol::NvmeRdma => unreachable!("served by serve_rdma"),
    };
    serve_until_stopped(limit, stop, backing)
}

fn limit_of(args: &ServeSettings) -> Option<Duration> {
    args.time_limit
        .as_ref()
        .map(|t| Duration::from_nanos(t.ns()))
}

/// Serve until a signal or the time limit, then stop the target and
/// remove the scratch file; 130 after a signal.
fn serve_until_stopped(
    limit: Option<Duration>,
    stop: Box<dyn FnOnce() -> anyhow::Result<()>>,
    backing: dut::Target,
) -> anyhow::Result<()> {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let started = std::time::Instant::now();
    while !interrupt::stop_requested() && limit.is_none_or(|l| started.elapsed() < l) {
        std::thread::sleep(Duration::from_millis(50));
    }
    stop()?;
    drop(backing);
    if interrupt::stop_requested() {
        // Everything is down; a signal asked for the stop: 130, as the help says.
        eprintln!("iolab serve: stopped by a signal");
        std::process::exit(130);
    }
    Ok(())
}

/// The checked settings of an NVMe/RDMA target: NVMe/TCP's, one reactor.
pub fn rdma_config(
    args: &ServeSettings,
    backing: &std::path::Path,
) -> anyhow::Result<NvmeTargetConfig> {
    if args.threads != 1 {
        return Err(usage(
            "--threads",
            "iolab's NVMe/RDMA target runs one reactor (give 1, or leave it out)",
        ));
    }
    nvme_config(args, backing)
}

/// `serve --protocol nvme-rdma`: the RDMA device checked and the address
/// bound before the scratch file is laid out.
fn serve_rdma(
    args: &ServeSettings,
    opts: TargetOptions,
    addr: SocketAddr,
    limit: Option<Duration>,
) -> anyhow::Result<()> {
    if let Some(why) = crate::native::verbs::unavailable() {
        return Err(usage(
            "--protocol",
            format!("nvme-rdma cannot run here: {why}"),
        ));
    }
    let listener =
        nvme_target::listen_rdma(addr).map_err(|e| usage("--listen", format!("{e:#}")))?;
    let backing = dut::prepare(&opts, true, None, 1)?;
    let cfg = rdma_config(args, &backing.path)?;
    let target = nvme_target::start_rdma_on(&cfg, listener)?;
    println!(
        "iolab serve: {} serving {} ({} bytes in blocks of {}, {}, one reactor{})",
        target.url(),
        backing.path.display(),
        target.size,
        target.block_size,
        direct_io(target.direct),
        if cfg.poll.is_some() { ", polling" } else { "" },
    );
    eprintln!("{}", no_authentication("NVMe/RDMA", target.addr, false));
    serve_until_stopped(limit, Box::new(move || target.stop()), backing)
}

/// Bind and listen on `addr`; any failure is the address's fault (in use,
/// not on this host, a privileged port): exit 2 naming --listen.
fn bind(addr: SocketAddr) -> anyhow::Result<std::net::TcpListener> {
    std::net::TcpListener::bind(addr)
        .map_err(|e| usage("--listen", format!("cannot listen on {addr}: {e}")))
}

/// Whether `addr` reaches beyond this machine (anything but 127.0.0.0/8
/// and ::1, also as an IPv4-mapped IPv6 address).
pub fn beyond_loopback(addr: SocketAddr) -> bool {
    !addr.ip().to_canonical().is_loopback()
}

/// A writable export on an address beyond loopback needs --allow-remote:
/// neither protocol authenticates anyone here.
fn check_exposure(addr: SocketAddr, writable: bool, allowed: bool) -> anyhow::Result<()> {
    if writable && beyond_loopback(addr) && !allowed {
        return Err(usage(
            "--listen",
            format!(
                "{addr} is reachable beyond this machine and the export is writable; \
                 NBD and NVMe/TCP have no authentication here, so anyone who reaches the port \
                 could write it: give --allow-remote to serve it anyway, or --read-only, \
                 or listen on 127.0.0.1"
            ),
        ));
    }
    Ok(())
}

/// What start says on stderr, always: who can reach the export.
pub fn no_authentication(protocol: &str, addr: SocketAddr, read_only: bool) -> String {
    let what = if read_only { "read" } else { "read and write" };
    let who = if beyond_loopback(addr) {
        "anyone who can reach it over the network"
    } else {
        "any process on this machine"
    };
    format!(
        "iolab serve: {protocol} has no authentication here: {who} can {what} the export at {addr}"
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn only_loopback_stays_on_this_machine() {
        for local in [
            "127.0.0.1:1",
            "127.9.8.7:1",
            "[::1]:1",
            "[::ffff:127.0.0.1]:1",
        ] {
            assert!(!beyond_loopback(a(local)), "{local}");
        }
        for remote in [
            "0.0.0.0:1",
            "[::]:1",
            "10.0.0.1:1",
            "192.168.1.2:1",
            "[fe80::1]:1",
        ] {
            assert!(beyond_loopback(a(remote)), "{remote}");
        }
    }

    #[test]
    fn the_stall_timeout_is_a_duration_of_at_least_a_second() {
        let span = |s: &str| s.parse::<Span>().unwrap();
        assert_eq!(
            stall_timeout(&span("30s")).unwrap(),
            Duration::from_secs(30)
        );
        assert_eq!(
            stall_timeout(&span("2m")).unwrap(),
            Duration::from_secs(120)
        );
        for bad in ["0", "0s", "500ms"] {
            let e = stall_timeout(&span(bad)).unwrap_err();
            assert_eq!(crate::error::exit_code(&e), 2, "{bad}");
            assert!(e.to_string().starts_with("--stall-timeout"), "{bad}: {e}");
        }
        for bad in ["soon", "-1s", ""] {
            assert!(bad.parse::<Span>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_writable_export_beyond_loopback_needs_allow_remote() {
        let e = check_exposure(a("0.0.0.0:10809"), true, false).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        let msg = e.to_string();
        assert!(
            msg.starts_with("--listen") && msg.contains("--allow-remote"),
            "{msg}"
        );
        assert!(check_exposure(a("0.0.0.0:10809"), true, true).is_ok());
        assert!(
            check_exposure(a("[::]:10809"), false, false).is_ok(),
            "read-only"
        );
        assert!(check_exposure(a("127.0.0.1:10809"), true, false).is_ok());
        let w = no_authentication("NBD", a("0.0.0.0:10809"), true);
        assert!(
            w.contains("no authentication") && w.contains("network"),
            "{w}"
        );
    }
}
