//! The agent as the target host of `remote --hosts` (docs/fleet.md): it
//! serves iolab's own NBD or NVMe/TCP target over a scratch file it makes
//! (registered in the testbed, so what a SIGKILL leaves is swept by the
//! host's next iolab start), on the one address it is given or the one
//! the control side's ssh reached it at, never another; and it samples the
//! machine's CPU, and the disk under the served file, so the control side
//! can ask for them over each point.

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
use crate::measure::diskstats::{self, DiskCounters, DiskSampler};
use crate::measure::procstat::CpuTicks;
use crate::plan::endpoint::WireProtocol;
use crate::results::ext::{TargetDisk, MAX_DISK_SECONDS};
use crate::servers::storage::Transport;
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
        .filter(|t| t.facts().served_as.is_some())
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
    let threads = c.transport.threads().unwrap_or(1);
    let (running, url) = match (c.transport.own(), c.transport.wire()) {
        (true, Some(WireProtocol::NvmeTcp)) => {
            let mut cfg = nvme_target::NvmeTargetConfig::new(&backing.path, c.addr);
            cfg.threads = threads;
            cfg.delay = delay;
            cfg.subnqn = crate::servers::storage::NVME_NQN.into();
            let t = nvme_target::start_on(&cfg, listener)?;
            let url = t.url();
            (Running::Nvme(t), url)
        }
        (true, _) => {
            let mut cfg = nbd_target::TargetConfig::new(&backing.path, c.addr);
            cfg.threads = threads;
            cfg.delay = delay;
            let t = nbd_target::start_on(&cfg, listener)?;
            let url = format!("nbd://{}/", t.addr);
            (Running::Nbd(t), url)
        }
        (false, _) => {
            let t = c.transport;
            // The program binds the port itself: this one was free a moment ago.
            let port = listener.local_addr()?.port();
            drop(listener);
            let logs = tempfile::tempdir()?;
            let own = crate::servers::storage::OwnTargetOptions::default();
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

/// How often the machine's CPU (and the disk) is read, and how much is kept.
const SAMPLE_EVERY: Duration = Duration::from_millis(50);
const KEPT: usize = 24_000; // 20 minutes

/// One reading: when (mono ns), the CPU, the disk's counters (if one is sampled).
#[derive(Clone, Copy)]
struct Sample {
    at: u64,
    cpu: CpuTicks,
    disk: Option<DiskCounters>,
}

type Samples = Arc<Mutex<VecDeque<Sample>>>;
/// The disk sampled, or why none is.
type Disk = Arc<Mutex<Result<DiskSampler, String>>>;

/// /proc/stat (and /proc/diskstats' line of the served file's disk) read
/// every 50 ms on a thread of its own, kept 20 minutes.
pub struct CpuLog {
    samples: Samples,
    disk: Disk,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn sample(samples: &Samples, disk: &Disk) {
    let d = match &*disk.lock().unwrap_or_else(|e| e.into_inner()) {
        Ok(sampler) => sampler.sample(),
        Err(_) => None,
    };
    if let Some(t) = CpuTicks::now() {
        let mut s = samples.lock().unwrap_or_else(|e| e.into_inner());
        if s.len() == KEPT {
            s.pop_front();
        }
        s.push_back(Sample {
            at: mono_now_ns(),
            cpu: t,
            disk: d,
        });
    }
}

/// The disk under `file`, or why there is none to sample.
fn disk_of(file: &Path) -> Result<DiskSampler, String> {
    let dir = file.parent().unwrap_or(file);
    diskstats::device_of(dir)
        .map(DiskSampler::new)
        .filter(|d| d.sample().is_some())
        .ok_or_else(|| {
            format!(
                "{} is on no block device iolab can read in /proc/diskstats (tmpfs?)",
                dir.display()
            )
        })
}

/// Each second of `[a, b]` (the last one the remainder, folded into the
/// second before it when under half a second: a 50 ms tail scaled to a
/// second is a spike the disk never did): bytes per second read and
/// written, between the samples nearest its ends (so the seconds partition
/// the window: no byte is counted twice). At most an hour.
fn per_second(disk: &[(u64, DiskCounters)]) -> (Vec<u64>, Vec<u64>) {
    let (mut read, mut write) = (Vec::new(), Vec::new());
    let (Some(first), Some(last)) = (disk.first(), disk.last()) else {
        return (read, write);
    };
    let nearest = |at: u64| {
        let i = disk.partition_point(|x| x.0 < at).min(disk.len() - 1);
        if i > 0 && at - disk[i - 1].0 < disk[i].0.saturating_sub(at) {
            i - 1
        } else {
            i
        }
    };
    let mut edges = vec![0];
    let mut at = first.0 + 1_000_000_000;
    while at < last.0 && edges.len() <= MAX_DISK_SECONDS {
        edges.push(nearest(at));
        at += 1_000_000_000;
    }
    let end = disk.len() - 1;
    if edges.len() > 1 && last.0 - disk[edges[edges.len() - 1]].0 < 500_000_000 {
        edges.pop();
    }
    edges.push(end);
    edges.dedup();
    let rate = |bytes: u64, ns: u64| (bytes as u128 * 1_000_000_000 / ns.max(1) as u128) as u64;
    for w in edges.windows(2).take(MAX_DISK_SECONDS) {
        let ((ta, a), (tb, b)) = (disk[w[0]], disk[w[1]]);
        let ns = tb - ta;
        read.push(rate(
            b.read_sectors.saturating_sub(a.read_sectors) * 512,
            ns,
        ));
        write.push(rate(
            b.write_sectors.saturating_sub(a.write_sectors) * 512,
            ns,
        ));
    }
    (read, write)
}

impl CpuLog {
    pub fn start() -> CpuLog {
        let samples: Samples = Arc::default();
        let disk: Disk = Arc::new(Mutex::new(Err("no file served yet".into())));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, d, st) = (samples.clone(), disk.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("agent-cpu".into())
            .spawn(move || {
                while !st.load(Ordering::SeqCst) {
                    sample(&s, &d);
                    std::thread::sleep(SAMPLE_EVERY);
                }
            })
            .ok();
        CpuLog {
            samples,
            disk,
            stop,
            thread,
        }
    }

    /// Sample the disk under `file` from now on (a disk sampled before is
    /// forgotten if it was another).
    pub fn follow_disk(&self, file: &Path) {
        let new = disk_of(file);
        let mut d = self.disk.lock().unwrap_or_else(|e| e.into_inner());
        let same = matches!((&*d, &new), (Ok(a), Ok(b)) if a.device == b.device);
        if !same {
            let mut s = self.samples.lock().unwrap_or_else(|e| e.into_inner());
            s.iter_mut().for_each(|x| x.disk = None);
        }
        *d = new;
    }

    /// The machine's CPU from the last sample at or before `from` to the
    /// first at or after `to` (waiting a little for it; else a fresh one),
    /// and the disk's seconds between the same samples.
    pub fn over(&self, from: u64, to: u64) -> Option<CpuOver> {
        let end = Instant::now() + SAMPLE_EVERY * 4;
        while self.last_at().is_none_or(|t| t < to) && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10));
        }
        if self.last_at().is_none_or(|t| t < to) {
            sample(&self.samples, &self.disk);
        }
        let s = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        let ia = s.iter().rposition(|x| x.at <= from).unwrap_or(0);
        let ib = s
            .iter()
            .position(|x| x.at >= to)
            .unwrap_or(s.len().checked_sub(1)?);
        let (a, b) = (s.get(ia)?, s.get(ib)?);
        if b.at <= a.at {
            return None;
        }
        let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
        let (disk, no_disk) = self.disk_over(s.range(ia..=ib));
        Some(CpuOver {
            cpu: b.cpu.since(&a.cpu, ncpu),
            from_ns: a.at,
            to_ns: b.at,
            disk,
            no_disk,
        })
    }

    /// The disk's seconds over `window` (the samples of a cpu-over), or why none.
    fn disk_over<'a>(
        &self,
        window: impl Iterator<Item = &'a Sample>,
    ) -> (Option<TargetDisk>, Option<String>) {
        let device = match &*self.disk.lock().unwrap_or_else(|e| e.into_inner()) {
            Ok(d) => d.device.clone(),
            Err(why) => return (None, Some(why.clone())),
        };
        let disk: Vec<_> = window.filter_map(|x| x.disk.map(|d| (x.at, d))).collect();
        if disk.len() < 2 {
            return (
                None,
                Some(format!("{device}: too few samples over the window")),
            );
        }
        let (read_bytes_s, write_bytes_s) = per_second(&disk);
        let series = TargetDisk {
            device,
            read_bytes_s,
            write_bytes_s,
        };
        (Some(series), None)
    }

    fn last_at(&self) -> Option<u64> {
        let s = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        s.back().map(|x| x.at)
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
                if let Some(log) = &self.cpu {
                    log.follow_disk(Path::new(&serving.backing));
                }
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
        // No file served: no disk series, and why.
        assert!(c.disk.is_none() && c.no_disk.is_some(), "{c:?}");
    }

    fn counters(read_sectors: u64, write_sectors: u64) -> DiskCounters {
        DiskCounters {
            read_sectors,
            write_sectors,
            ..DiskCounters::default()
        }
    }

    #[test]
    fn the_disk_s_seconds_come_from_the_samples_nearest_their_ends() {
        const S: u64 = 1_000_000_000;
        // Samples every 250 ms over 2.5 s: 1 MiB read the first second,
        // 2 MiB the next, then 512 KiB written in the last 0.5 s.
        let mut disk = Vec::new();
        for k in 0..=10u64 {
            let at = 7 + k * S / 4;
            let read = 512 * k.min(4) + 1024 * k.saturating_sub(4).min(4);
            let write = 512 * k.saturating_sub(8);
            disk.push((at, counters(read, write)));
        }
        let (read, write) = per_second(&disk);
        assert_eq!(read, [1 << 20, 2 << 20, 0]);
        assert_eq!(write, [0, 0, 1 << 20]);
        // Every byte once: rate times each slice's length adds up.
        let bytes = (1 << 20) + (2 << 20);
        assert_eq!(read[0] + read[1] + read[2] / 2, bytes);
        // A sample jittered 20 ms past a second's end is still its end.
        disk[4].0 += 20_000_000;
        let (read, _) = per_second(&disk);
        assert_eq!(read.len(), 3);
        assert!(read[0] < 1 << 20 && read[1] > 2 << 20, "{read:?}");
        // Too few samples: nothing; a series is never longer than an hour.
        assert_eq!(per_second(&disk[..1]), (vec![], vec![]));
        let long: Vec<_> = (0..=2 * MAX_DISK_SECONDS as u64)
            .map(|k| (k * S, counters(k, 0)))
            .collect();
        assert_eq!(per_second(&long).0.len(), MAX_DISK_SECONDS);
    }

    /// Issue 44 item 6: a window ending 50 ms into a second leaves no
    /// 50 ms "second" scaled to a rate.
    #[test]
    fn a_short_last_second_of_the_disk_is_folded_into_the_one_before() {
        const S: u64 = 1_000_000_000;
        // 100 sectors per 50 ms sample over 2.05 s, the last sample 1100.
        let disk: Vec<_> = (0..=41u64)
            .map(|k| (k * S / 20, counters(100 * k + 1000 * (k / 41), 0)))
            .collect();
        let (read, _) = per_second(&disk);
        assert_eq!(read.len(), 2, "{read:?}");
        assert_eq!(read[0], 2000 * 512);
        assert_eq!(read[1], 3100 * 512 * 20 / 21);
    }

    #[test]
    fn the_disk_under_a_served_file_is_followed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("backing");
        std::fs::write(&file, b"x").unwrap();
        let log = CpuLog::start();
        log.follow_disk(&file);
        let from = mono_now_ns();
        std::thread::sleep(Duration::from_millis(120));
        let c = log.over(from, mono_now_ns()).unwrap();
        match diskstats::device_of(dir.path()) {
            Some(dev) => assert_eq!(c.disk.unwrap().device, dev),
            None => assert!(c.no_disk.unwrap().contains("no block device")),
        }
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
