//! The agent as the target host of `remote --hosts` (docs/fleet.md): it
//! serves iolab's own NBD or NVMe/TCP target over a scratch file it makes
//! (registered in the testbed, so what a SIGKILL leaves is swept by the
//! host's next iolab start), on the one address it is given or the one
//! the control side's ssh reached it at, never another; and it samples the
//! machine's CPU so the control side can ask for it over each point.

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::proto::{CpuOver, Message, ServeRequest, Serving};
use crate::dut::{self, TargetOptions};
use crate::error::usage;
use crate::measure::clock::mono_now_ns;
use crate::measure::procstat::CpuTicks;
use crate::remote::servers::Transport;
use crate::target::{nbd_target, nvme_target};

/// The flag a bad address is the fault of, on the control side.
pub const ADDRESS_FLAG: &str = "--target-address";

/// A served export; dropping it stops the target, then removes the file.
pub struct ServedExport {
    running: Option<Running>,
    _backing: dut::Target,
}

enum Running {
    Nbd(nbd_target::NbdTarget),
    Nvme(nvme_target::NvmeTcpTarget),
    /// qemu-nbd or nbdkit (stopped when dropped), and its log's directory.
    Server(crate::servers::storage::StorageServer, tempfile::TempDir),
}

impl Drop for ServedExport {
    fn drop(&mut self) {
        // In-flight requests finish before the file goes.
        let _ = match self.running.take() {
            Some(Running::Nbd(t)) => t.stop(),
            Some(Running::Nvme(t)) => t.stop(),
            Some(Running::Server(server, logs)) => {
                drop(server);
                drop(logs);
                Ok(())
            }
            None => Ok(()),
        };
    }
}

/// The address to serve on: the one given, else the one this host was
/// reached at over ssh (`SSH_CONNECTION`'s third word); a port of 0 (or
/// none) is any free port.
fn listen_address(given: Option<&str>, ssh: Option<&str>) -> anyhow::Result<SocketAddr> {
    let text = match given {
        Some(a) => a.to_string(),
        None => ssh
            .and_then(|s| s.split_whitespace().nth(2).map(str::to_string))
            .ok_or_else(|| {
                usage(
                    ADDRESS_FLAG,
                    "this agent was not started over ssh: name the address to serve on",
                )
            })?,
    };
    if let Ok(sa) = text.parse::<SocketAddr>() {
        return Ok(sa);
    }
    text.parse::<IpAddr>()
        .map(|ip| SocketAddr::new(ip, 0))
        .map_err(|_| {
            usage(
                ADDRESS_FLAG,
                format!("'{text}' is not an IP address (or ADDR:PORT)"),
            )
        })
}

/// A request checked on this host: the transport (threads applied),
/// where to listen, and the directory of the scratch file.
struct Checked {
    transport: Transport,
    addr: SocketAddr,
    dir: std::path::PathBuf,
}

/// Check `req` on this host without starting anything (its address is
/// bound and let go: a wrong one is bad input, found before any file).
fn check(req: &ServeRequest) -> anyhow::Result<Checked> {
    let ssh = std::env::var("SSH_CONNECTION").ok();
    let addr = listen_address(req.address.as_deref(), ssh.as_deref())?;
    if addr.ip().is_unspecified() {
        return Err(usage(
            ADDRESS_FLAG,
            "serve on one address the hosts reach, not on every address of the target host",
        ));
    }
    if !(1..=64).contains(&req.threads) {
        return Err(usage("--target-threads", "must be 1 to 64"));
    }
    let transport = Transport::parse(&req.transport)
        .filter(|t| SERVED.contains(&t.with_threads(1)))
        .ok_or_else(|| {
            usage(
                "--transports",
                format!(
                    "{} is not served on a target host (iolab, nvme-tcp, qemu-nbd, nbdkit-file and nbdkit-memory are)",
                    req.transport
                ),
            )
        })?
        .with_threads(req.threads);
    if let Some(why) = transport.unavailable() {
        return Err(usage(
            "--transports",
            format!(
                "{} cannot be served on the target host: {why}",
                transport.label()
            ),
        ));
    }
    let dir = Path::new(&req.dir);
    if !dir.is_absolute() || !dir.is_dir() {
        return Err(usage(
            "--target",
            format!("{} is not a directory on the target host", req.dir),
        ));
    }
    TcpListener::bind(addr)
        .map_err(|e| usage(ADDRESS_FLAG, format!("cannot listen on {addr}: {e}")))?;
    Ok(Checked {
        transport,
        addr,
        dir: dir.to_path_buf(),
    })
}

/// The transports a target host serves (with one reactor thread).
const SERVED: [Transport; 5] = [
    Transport::Iolab { threads: 1 },
    Transport::IolabNvme { threads: 1 },
    Transport::QemuNbd,
    Transport::NbdkitFile,
    Transport::NbdkitMemory,
];

/// Serve `req`: checked first, then the scratch file, then the target on
/// the one address (a server program of its own for qemu-nbd and nbdkit,
/// in its own process group and the testbed's records).
pub fn serve(req: &ServeRequest) -> anyhow::Result<(ServedExport, Serving)> {
    let c = check(req)?;
    let listener = TcpListener::bind(c.addr)
        .map_err(|e| usage(ADDRESS_FLAG, format!("cannot listen on {}: {e}", c.addr)))?;
    let opts = TargetOptions {
        path: Some(c.dir.clone()),
        size: Some(req.size),
        ..TargetOptions::default()
    };
    let backing = dut::prepare(&opts, true, None, 1)?;
    let delay = req.delay_ns.map(Duration::from_nanos);
    let (running, url) = match c.transport {
        Transport::IolabNvme { threads } => {
            let mut cfg = nvme_target::NvmeTargetConfig::new(&backing.path, c.addr);
            cfg.threads = threads;
            cfg.delay = delay;
            cfg.subnqn = crate::remote::servers::NVME_NQN.into();
            let t = nvme_target::start_on(&cfg, listener)?;
            let url = t.url();
            (Running::Nvme(t), url)
        }
        Transport::Iolab { threads } => {
            let mut cfg = nbd_target::TargetConfig::new(&backing.path, c.addr);
            cfg.threads = threads;
            cfg.delay = delay;
            let t = nbd_target::start_on(&cfg, listener)?;
            let url = format!("nbd://{}/", t.addr);
            (Running::Nbd(t), url)
        }
        t => {
            // The program binds the port itself: this one was free a moment ago.
            let port = listener.local_addr()?.port();
            drop(listener);
            let logs = tempfile::tempdir()?;
            let own = crate::remote::servers::OwnTargetOptions::default();
            let server = crate::servers::storage::start(
                t,
                c.addr.ip(),
                |exe: &str| std::process::Command::new(exe),
                &backing.path,
                backing.size,
                port,
                &own,
                logs.path(),
            )?;
            let url = server.url.clone();
            (Running::Server(server, logs), url)
        }
    };
    let serving = Serving {
        url,
        backing: backing.path.display().to_string(),
    };
    Ok((
        ServedExport {
            running: Some(running),
            _backing: backing,
        },
        serving,
    ))
}

/// How often the machine's CPU is read, and how much is kept.
const SAMPLE_EVERY: Duration = Duration::from_millis(50);
const KEPT: usize = 24_000; // 20 minutes

type Samples = Arc<Mutex<VecDeque<(u64, CpuTicks)>>>;

/// /proc/stat read every 50 ms on a thread of its own, kept 20 minutes.
pub struct CpuLog {
    samples: Samples,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn sample(samples: &Samples) {
    if let Some(t) = CpuTicks::now() {
        let mut s = samples.lock().unwrap_or_else(|e| e.into_inner());
        if s.len() == KEPT {
            s.pop_front();
        }
        s.push_back((mono_now_ns(), t));
    }
}

impl CpuLog {
    pub fn start() -> CpuLog {
        let samples: Samples = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (samples.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("agent-cpu".into())
            .spawn(move || {
                while !st.load(Ordering::SeqCst) {
                    sample(&s);
                    std::thread::sleep(SAMPLE_EVERY);
                }
            })
            .ok();
        CpuLog {
            samples,
            stop,
            thread,
        }
    }

    /// The machine's CPU from the last sample at or before `from` to the
    /// first at or after `to` (waiting a little for it; else a fresh one).
    pub fn over(&self, from: u64, to: u64) -> Option<CpuOver> {
        let end = Instant::now() + SAMPLE_EVERY * 4;
        while self.last_at().is_none_or(|t| t < to) && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10));
        }
        if self.last_at().is_none_or(|t| t < to) {
            sample(&self.samples);
        }
        let s = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        let a = s.iter().rev().find(|(t, _)| *t <= from).or(s.front())?;
        let b = s.iter().find(|(t, _)| *t >= to).or(s.back())?;
        if b.0 <= a.0 {
            return None;
        }
        let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
        Some(CpuOver {
            cpu: b.1.since(&a.1, ncpu),
            from_ns: a.0,
            to_ns: b.0,
        })
    }

    fn last_at(&self) -> Option<u64> {
        let s = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        s.back().map(|x| x.0)
    }
}

impl Drop for CpuLog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What the agent holds as a target host: the export and the CPU log.
#[derive(Default)]
pub struct TargetSide {
    export: Option<ServedExport>,
    cpu: Option<CpuLog>,
}

impl TargetSide {
    /// The answer to a serve or cpu-window message (errors as `Err`, for
    /// the agent to send as its error message).
    pub fn handle(&mut self, m: Message) -> anyhow::Result<Message> {
        match m {
            Message::Serve(req) if req.check_only => {
                check(&req)?;
                Ok(Message::Serving(Serving {
                    url: String::new(),
                    backing: String::new(),
                }))
            }
            Message::Serve(req) => {
                // One export at a time: the previous one goes first.
                self.export = None;
                self.cpu.get_or_insert_with(CpuLog::start);
                let (export, serving) = serve(&req)?;
                self.export = Some(export);
                Ok(Message::Serving(serving))
            }
            Message::CpuWindow { from_ns, to_ns } => {
                let log = self.cpu.get_or_insert_with(CpuLog::start);
                log.over(from_ns, to_ns)
                    .map(Message::CpuOver)
                    .ok_or_else(|| anyhow::anyhow!("no CPU samples over that window"))
            }
            other => anyhow::bail!("protocol: unexpected {} message", other.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_is_the_one_given_or_ssh_s() {
        let ssh = Some("10.0.0.5 51234 10.0.0.9 22");
        assert_eq!(
            listen_address(Some("10.1.2.3"), ssh).unwrap(),
            "10.1.2.3:0".parse().unwrap()
        );
        assert_eq!(
            listen_address(Some("[::1]:4420"), ssh).unwrap(),
            "[::1]:4420".parse().unwrap()
        );
        // Not given: the address the control side's ssh reached (IPv6 too).
        assert_eq!(
            listen_address(None, ssh).unwrap(),
            "10.0.0.9:0".parse().unwrap()
        );
        assert_eq!(
            listen_address(None, Some("fe80::1 5 2001:db8::9 22")).unwrap(),
            "[2001:db8::9]:0".parse().unwrap()
        );
        let e = listen_address(None, None).unwrap_err();
        assert!(format!("{e:#}").contains("not started over ssh"), "{e:#}");
        let e = listen_address(Some("host name"), ssh).unwrap_err();
        assert!(format!("{e:#}").contains("not an IP address"), "{e:#}");
    }

    #[test]
    fn cpu_over_a_window_comes_from_the_samples_around_it() {
        let log = CpuLog::start();
        let from = mono_now_ns();
        std::thread::sleep(Duration::from_millis(120));
        let to = mono_now_ns();
        let c = log.over(from, to).unwrap();
        assert!(c.to_ns >= to && c.from_ns < c.to_ns, "{c:?}");
        let total = c.cpu.usr_pct + c.cpu.sys_pct + c.cpu.iowait_pct + c.cpu.idle_pct;
        assert!(total > 0.0, "{c:?}");
    }

    #[test]
    fn serving_on_every_address_is_refused() {
        let req = ServeRequest {
            transport: "iolab".into(),
            dir: "/tmp".into(),
            size: 16 << 20,
            address: Some("0.0.0.0".into()),
            threads: 1,
            delay_ns: None,
            check_only: false,
        };
        let e = serve(&req).err().unwrap();
        assert!(format!("{e:#}").contains("not on every address"), "{e:#}");
        // A transport a target host does not serve is refused by name.
        let req = ServeRequest {
            transport: "tgtd".into(),
            address: Some("127.0.0.1".into()),
            ..req
        };
        let e = check(&req).err().unwrap();
        let e = format!("{e:#}");
        assert!(e.contains("--transports") && e.contains("tgtd"), "{e}");
    }
}
