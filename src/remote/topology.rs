//! Where `iolab remote` puts the two sides: two network namespaces joined
//! by a veth pair (an initiator host 10.200.77.1 and a target host
//! 10.200.77.2, as two machines on a link), or loopback when namespaces
//! cannot be made (not root, no `ip`), said in the results. Servers start
//! in the target namespace through `ip netns exec`; the initiator side is
//! the calling thread (and every thread it starts afterwards), moved into
//! the initiator namespace with setns(2) and back at the end.

use std::fs::File;
use std::net::IpAddr;
use std::os::fd::AsRawFd;
use std::process::Command;

use anyhow::Context;

use crate::testbed::netns::{self, NetnsGuard};

pub const INITIATOR_ADDR: &str = "10.200.77.1";
pub const TARGET_ADDR: &str = "10.200.77.2";

/// How the initiator reaches the target.
pub struct Topology {
    /// "namespaces" or "loopback".
    pub kind: &'static str,
    /// Why loopback (when it is).
    pub note: Option<String>,
    pub target_addr: IpAddr,
    /// The initiator's interface (for its traffic counters).
    pub initiator_iface: String,
    pub target_iface: Option<String>,
    target_ns: Option<NetnsGuard>,
    initiator_ns: Option<NetnsGuard>,
    /// The caller's namespace, to go back to.
    home: Option<File>,
}

/// Why namespaces cannot be used here, if they cannot.
pub fn namespaces_unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root: network namespaces need CAP_SYS_ADMIN".into());
    }
    if which("ip").is_none() {
        return Some("the ip command (iproute2) is not installed".into());
    }
    if !std::path::Path::new("/proc/self/ns/net").exists() {
        return Some("this kernel has no network namespaces".into());
    }
    None
}

pub use crate::testbed::command::which;

fn ip(args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .context("cannot run ip")?;
    if !out.status.success() {
        anyhow::bail!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

impl Topology {
    /// Loopback, with the reason.
    pub fn loopback(why: String) -> Topology {
        Topology {
            kind: "loopback",
            note: Some(why),
            target_addr: IpAddr::from([127, 0, 0, 1]),
            initiator_iface: "lo".into(),
            target_iface: None,
            target_ns: None,
            initiator_ns: None,
            home: None,
        }
    }

    /// Namespaces where they can be made, loopback (with the reason)
    /// otherwise or when `loopback` asks for it.
    pub fn choose(loopback: bool) -> anyhow::Result<Topology> {
        if loopback {
            return Ok(Topology::loopback("--loopback".into()));
        }
        match namespaces_unavailable() {
            Some(why) => Ok(Topology::loopback(why)),
            None => Topology::namespaces(),
        }
    }

    /// Two namespaces and a veth pair between them.
    pub fn namespaces() -> anyhow::Result<Topology> {
        let pid = std::process::id();
        let ini = NetnsGuard::create(&format!("iolab-{pid}-ini"))?;
        let tgt = NetnsGuard::create(&format!("iolab-{pid}-tgt"))?;
        let (vi, vt) = (format!("il{pid}i"), format!("il{pid}t"));
        // Created inside the initiator namespace, so the pair goes when it goes.
        ip(&[
            "-n", &ini.name, "link", "add", &vi, "type", "veth", "peer", "name", &vt, "netns",
            &tgt.name,
        ])?;
        let cidr = |a: &str| format!("{a}/30");
        ip(&[
            "-n",
            &ini.name,
            "addr",
            "add",
            &cidr(INITIATOR_ADDR),
            "dev",
            &vi,
        ])?;
        ip(&[
            "-n",
            &tgt.name,
            "addr",
            "add",
            &cidr(TARGET_ADDR),
            "dev",
            &vt,
        ])?;
        for (ns, dev) in [(&ini.name, &vi), (&tgt.name, &vt)] {
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
        }
        Ok(Topology {
            kind: "namespaces",
            note: None,
            target_addr: TARGET_ADDR.parse().expect("address"),
            initiator_iface: vi,
            target_iface: Some(vt),
            target_ns: Some(tgt),
            initiator_ns: Some(ini),
            home: None,
        })
    }

    /// A command that runs `program` on the target host.
    pub fn target_command(&self, program: &str) -> Command {
        match &self.target_ns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", &ns.name, program]);
                c
            }
            None => Command::new(program),
        }
    }

    /// The target namespace's file (None on loopback).
    pub fn target_netns(&self) -> Option<std::path::PathBuf> {
        self.target_ns.as_ref().map(|ns| netns::path_of(&ns.name))
    }

    /// Move the calling thread (and the threads it starts from now on)
    /// into the initiator namespace.
    pub fn enter_initiator(&mut self) -> anyhow::Result<()> {
        let Some(ns) = &self.initiator_ns else {
            return Ok(());
        };
        if self.home.is_none() {
            self.home = Some(File::open("/proc/thread-self/ns/net")?);
        }
        let f = File::open(netns::path_of(&ns.name))
            .with_context(|| format!("cannot open namespace {}", ns.name))?;
        setns(&f).with_context(|| format!("cannot enter namespace {}", ns.name))
    }

    /// Run `f` in the namespace the thread was in before `enter_initiator`
    /// (RDMA transports: nvmet-rdma, nvme-rdma and soft-RoCE links live in
    /// the initial namespace), then back in the initiator's. Threads `f`
    /// starts stay where they were started.
    pub fn at_home<T>(&self, f: impl FnOnce() -> T) -> anyhow::Result<T> {
        let (Some(home), Some(ns)) = (&self.home, &self.initiator_ns) else {
            return Ok(f());
        };
        setns(home).context("cannot return to the initial network namespace")?;
        let out = f();
        let back = File::open(netns::path_of(&ns.name))
            .and_then(|ini| setns(&ini))
            .with_context(|| format!("cannot re-enter namespace {}", ns.name));
        back.map(|_| out)
    }

    /// Back to the namespace the thread was in.
    pub fn leave_initiator(&mut self) {
        if let Some(home) = self.home.take() {
            let _ = setns(&home);
        }
    }

    /// Shape the link's bandwidth with tbf on both ends (both directions).
    pub fn limit_rate(&self, rate: &str) -> anyhow::Result<()> {
        let (Some(ini), Some(tgt), Some(vt)) =
            (&self.initiator_ns, &self.target_ns, &self.target_iface)
        else {
            anyhow::bail!("--fabric-rate needs the namespaces (the link is loopback here)");
        };
        for (ns, dev) in [(&ini.name, &self.initiator_iface), (&tgt.name, vt)] {
            let out = Command::new("ip")
                .args([
                    "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root", "tbf",
                ])
                .args(["rate", rate, "burst", "256kb", "latency", "5ms"])
                .output()
                .context("cannot run tc")?;
            if !out.status.success() {
                anyhow::bail!(
                    "tc tbf rate {rate} on {dev}: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
        }
        Ok(())
    }

    /// Whether the kernel has netem (a delay on the link for any server);
    /// the reason when it does not.
    pub fn netem_missing(&self) -> Option<String> {
        let (Some(tgt), Some(vt)) = (&self.target_ns, &self.target_iface) else {
            return Some("the link is loopback".into());
        };
        let tc = |args: &[&str]| {
            Command::new("ip")
                .args(["netns", "exec", &tgt.name, "tc", "qdisc"])
                .args(args)
                .output()
        };
        match tc(&["add", "dev", vt, "root", "netem", "delay", "1ms"]) {
            Ok(o) if o.status.success() => {
                let _ = tc(&["del", "dev", vt, "root"]);
                None
            }
            Ok(o) => Some(format!(
                "netem is not available ({})",
                String::from_utf8_lossy(&o.stderr).trim()
            )),
            Err(e) => Some(format!("cannot run tc: {e}")),
        }
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        self.leave_initiator();
    }
}

fn setns(f: &File) -> std::io::Result<()> {
    // SAFETY: a namespace file descriptor; affects the calling thread only.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
