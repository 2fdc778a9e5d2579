//! The kernel's NVMe-oF target and initiator over TCP or RDMA
//! (`NvmeTrtype`), as iolab sets them up for `iolab remote --transports
//! nvme-tcp-kernel,nvme-rdma-kernel` and takes them down again (also after
//! a second Ctrl-C, and at the next start after a SIGKILL):
//!
//! - `KernelTarget`: an nvmet subsystem (its NQN iolab's, one per process)
//!   with namespace 1 on a file, open to any host, and a TCP or RDMA port
//!   linking it, made through configfs. The link is made by a thread inside the
//!   target's network namespace, because nvmet-tcp opens its listening
//!   socket in the namespace of whoever links the port.
//! - `KernelController`: the kernel's initiator connected to it by writing
//!   the options to /dev/nvme-fabrics (what `nvme connect` does), its
//!   namespace found as /dev/nvmeXnY; undone with delete_controller.
//!
//! Both are registered resources (`Resource::NvmeTarget`,
//! `Resource::NvmeController`) whose undo checks that what it removes is
//! still iolab's (the subsystem NQN).

use std::io::{Read, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use super::Resource;

pub const NVMET: &str = "/sys/kernel/config/nvmet";
/// Every subsystem iolab makes is named with this prefix and its pid.
pub const NQN_PREFIX: &str = "nqn.2025-11.io.iolab:kernel-";

/// The subsystem NQN of this process.
pub fn own_nqn() -> String {
    format!("{NQN_PREFIX}{}", std::process::id())
}

/// A plausible nvmet subsystem iolab made (for the sweep).
pub fn plausible_subsystem(nqn: &str) -> bool {
    nqn.strip_prefix(NQN_PREFIX)
        .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

/// A subsystem NQN of iolab's (its kernel subsystems, its own target):
/// the only controllers iolab disconnects.
pub fn plausible_nqn(nqn: &str) -> bool {
    nqn.strip_prefix("nqn.2025-11.io.iolab:")
        .is_some_and(|rest| !rest.is_empty())
}

/// The kernel's NVMe-oF transport types iolab sets up (configfs'
/// `addr_trtype`, /dev/nvme-fabrics' `transport=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NvmeTrtype {
    Tcp,
    Rdma,
}

impl NvmeTrtype {
    /// The name configfs and /dev/nvme-fabrics take.
    pub fn name(self) -> &'static str {
        match self {
            NvmeTrtype::Tcp => "tcp",
            NvmeTrtype::Rdma => "rdma",
        }
    }

    /// The target's modules (nvmet and its transport).
    fn target_modules(self) -> [&'static str; 2] {
        match self {
            NvmeTrtype::Tcp => ["nvmet", "nvmet_tcp"],
            NvmeTrtype::Rdma => ["nvmet", "nvmet_rdma"],
        }
    }

    /// The initiator's modules.
    fn host_modules(self) -> [&'static str; 2] {
        match self {
            NvmeTrtype::Tcp => ["nvme_fabrics", "nvme_tcp"],
            NvmeTrtype::Rdma => ["nvme_fabrics", "nvme_rdma"],
        }
    }

    /// Every module the path needs (the RDMA stack and soft-RoCE too).
    pub fn modules(self) -> Vec<&'static str> {
        let mut all = self.host_modules().to_vec();
        all.extend(self.target_modules());
        if self == NvmeTrtype::Rdma {
            all.extend(["ib_core", "rdma_cm", "rdma_rxe"]);
        }
        all
    }
}

/// Load `modules` with modprobe where they are not loaded yet.
pub fn load_modules(modules: &[&str]) -> anyhow::Result<()> {
    for m in modules {
        if Path::new("/sys/module").join(m).exists() {
            continue;
        }
        super::command::bounded("modprobe", &[m.as_ref()], Duration::from_secs(20))
            .with_context(|| format!("cannot load the {m} module"))?;
    }
    Ok(())
}

fn write_attr(path: &Path, value: &str) -> anyhow::Result<()> {
    std::fs::write(path, value)
        .with_context(|| format!("cannot write '{value}' to {}", path.display()))
}

/// Whether `file` can be opened with O_DIRECT (nvmet's file namespace
/// opens it so unless buffered_io is set).
fn takes_direct_io(file: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(file)
        .is_ok()
}

/// An nvmet subsystem and port, removed on drop.
pub struct KernelTarget {
    pub nqn: String,
    /// The namespace reads and writes its file with O_DIRECT.
    pub direct: bool,
    resource: Resource,
}

impl KernelTarget {
    /// Serve `backing` as namespace 1 of this process's subsystem on
    /// `addr`:`port` over `trtype`; `target_netns` is the namespace file
    /// the port listens in (None: the caller's).
    pub fn create(
        trtype: NvmeTrtype,
        backing: &Path,
        addr: IpAddr,
        port: u16,
        target_netns: Option<PathBuf>,
    ) -> anyhow::Result<KernelTarget> {
        load_modules(&trtype.target_modules())?;
        if !Path::new(NVMET).is_dir() {
            bail!("{NVMET} is missing: configfs is not mounted at /sys/kernel/config (mount -t configfs none /sys/kernel/config)");
        }
        let nqn = own_nqn();
        let subsystem = Path::new(NVMET).join("subsystems").join(&nqn);
        let port_dir = Path::new(NVMET)
            .join("ports")
            .join((1000 + std::process::id() % 60_000).to_string());
        let resource = Resource::NvmeTarget {
            subsystem: subsystem.clone(),
            port: port_dir.clone(),
        };
        let direct = takes_direct_io(backing);
        super::create(resource.clone(), || {
            std::fs::create_dir(&subsystem)
                .with_context(|| format!("cannot create {}", subsystem.display()))?;
            Ok(())
        })?;
        let target = KernelTarget {
            nqn: nqn.clone(),
            direct,
            resource,
        };
        let ns = subsystem.join("namespaces/1");
        write_attr(&subsystem.join("attr_allow_any_host"), "1")?;
        std::fs::create_dir(&ns).with_context(|| format!("cannot create {}", ns.display()))?;
        write_attr(&ns.join("device_path"), &backing.display().to_string())?;
        write_attr(&ns.join("buffered_io"), if direct { "0" } else { "1" })?;
        write_attr(&ns.join("enable"), "1")?;
        std::fs::create_dir(&port_dir)
            .with_context(|| format!("cannot create {}", port_dir.display()))?;
        write_attr(&port_dir.join("addr_trtype"), trtype.name())?;
        let family = if addr.is_ipv6() { "ipv6" } else { "ipv4" };
        write_attr(&port_dir.join("addr_adrfam"), family)?;
        write_attr(&port_dir.join("addr_traddr"), &addr.to_string())?;
        write_attr(&port_dir.join("addr_trsvcid"), &port.to_string())?;
        let link = port_dir.join("subsystems").join(&nqn);
        in_namespace(target_netns, || {
            std::os::unix::fs::symlink(&subsystem, &link).with_context(|| {
                format!(
                    "cannot link {} (nvmet-{} could not listen on {addr}:{port})",
                    link.display(),
                    trtype.name()
                )
            })
        })?;
        Ok(target)
    }
}

impl Drop for KernelTarget {
    fn drop(&mut self) {
        let _ = self.resource.undo();
        super::release(&self.resource);
    }
}

/// Run `f` on a thread inside the network namespace `netns` (a file under
/// /run/netns), or here when there is none.
fn in_namespace<T: Send>(
    netns: Option<PathBuf>,
    f: impl FnOnce() -> anyhow::Result<T> + Send,
) -> anyhow::Result<T> {
    let Some(ns) = netns else { return f() };
    std::thread::scope(|s| {
        s.spawn(|| {
            let file = std::fs::File::open(&ns)
                .with_context(|| format!("cannot open namespace {}", ns.display()))?;
            use std::os::fd::AsRawFd;
            // SAFETY: setns on a namespace file descriptor affects only this thread.
            if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                return Err(std::io::Error::last_os_error())
                    .with_context(|| format!("cannot enter namespace {}", ns.display()));
            }
            f()
        })
        .join()
        .map_err(|_| anyhow::anyhow!("the namespace thread panicked"))?
    })
}

/// Take the target down: the port's link, the port, the namespace, the
/// subsystem (each only if there; never anything not named iolab's).
pub fn remove_target(subsystem: &Path, port: &Path) {
    let Some(nqn) = subsystem.file_name().and_then(|n| n.to_str()) else {
        return;
    };
    if !plausible_subsystem(nqn) {
        return;
    }
    let _ = std::fs::remove_file(port.join("subsystems").join(nqn));
    let _ = std::fs::remove_dir(port);
    let ns = subsystem.join("namespaces/1");
    let _ = std::fs::write(ns.join("enable"), "0");
    let _ = std::fs::remove_dir(&ns);
    let _ = std::fs::remove_dir(subsystem);
}

/// The kernel's initiator connected to a subsystem, disconnected on drop.
pub struct KernelController {
    /// The controller's name (`nvme0`).
    pub name: String,
    /// The namespace's block device (`/dev/nvme0n1`).
    pub device: PathBuf,
    resource: Resource,
}

impl KernelController {
    /// Connect to `nqn` at `addr`:`port` over `trtype` (from the calling
    /// thread's network namespace) and wait, `timeout` at most, for its
    /// namespace 1.
    pub fn connect(
        trtype: NvmeTrtype,
        addr: IpAddr,
        port: u16,
        nqn: &str,
        hostnqn: &str,
        timeout: Duration,
    ) -> anyhow::Result<KernelController> {
        load_modules(&trtype.host_modules())?;
        let options = format!(
            "transport={},traddr={addr},trsvcid={port},nqn={nqn},hostnqn={hostnqn}",
            trtype.name()
        );
        let (name, resource) = super::create_with(|| {
            let mut f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open("/dev/nvme-fabrics")
                .context("cannot open /dev/nvme-fabrics")?;
            f.write_all(options.as_bytes())
                .with_context(|| format!("the kernel refused to connect ({options})"))?;
            let mut answer = String::new();
            f.read_to_string(&mut answer)?;
            let name = controller_name(&answer)
                .with_context(|| format!("/dev/nvme-fabrics answered '{}'", answer.trim()))?;
            let res = Resource::NvmeController {
                name: name.clone(),
                nqn: nqn.to_string(),
            };
            Ok(((name, res.clone()), res))
        })?;
        let mut c = KernelController {
            name,
            device: PathBuf::new(),
            resource,
        };
        c.device = wait_namespace(&c.name, timeout)?;
        Ok(c)
    }
}

impl Drop for KernelController {
    fn drop(&mut self) {
        let _ = self.resource.undo();
        super::release(&self.resource);
    }
}

/// `nvmeN` from /dev/nvme-fabrics' answer (`instance=N,cntlid=M`).
pub fn controller_name(answer: &str) -> Option<String> {
    let n = answer
        .trim()
        .split(',')
        .find_map(|kv| kv.strip_prefix("instance="))?;
    n.parse::<u32>().ok().map(|n| format!("nvme{n}"))
}

/// The block device name of a namespace entry under a controller's sysfs
/// directory: `nvme0n1` as is, a multipath path `nvme0c0n1` as its head
/// `nvme0n1`; None for anything else.
pub fn namespace_block(entry: &str) -> Option<String> {
    let rest = entry.strip_prefix("nvme")?;
    let (subsys, tail) = rest.split_at(rest.find(|c: char| !c.is_ascii_digit())?);
    let ns = match tail.split_once('n') {
        Some((c, ns)) if c.starts_with('c') && c[1..].bytes().all(|b| b.is_ascii_digit()) => ns,
        Some(("", ns)) => ns,
        _ => return None,
    };
    (!subsys.is_empty() && !ns.is_empty() && ns.bytes().all(|b| b.is_ascii_digit()))
        .then(|| format!("nvme{subsys}n{ns}"))
}

fn wait_namespace(name: &str, timeout: Duration) -> anyhow::Result<PathBuf> {
    let dir = Path::new("/sys/class/nvme").join(name);
    let until = Instant::now() + timeout;
    loop {
        let found = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| namespace_block(e.file_name().to_str()?))
            .map(|b| Path::new("/dev").join(b))
            .find(|d| d.exists());
        if let Some(d) = found {
            return Ok(d);
        }
        if Instant::now() > until {
            bail!(
                "controller {name} connected, but no namespace block device appeared within {timeout:?}"
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Disconnect controller `name` if it is still connected to `nqn`.
pub fn disconnect(name: &str, nqn: &str) {
    let dir = Path::new("/sys/class/nvme").join(name);
    let connected = std::fs::read_to_string(dir.join("subsysnqn")).unwrap_or_default();
    if connected.trim() == nqn && plausible_nqn(nqn) {
        let _ = std::fs::write(dir.join("delete_controller"), "1");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_the_kernel() {
        assert_eq!(
            controller_name("instance=3,cntlid=1\n").as_deref(),
            Some("nvme3")
        );
        assert_eq!(controller_name("cntlid=1"), None);
        assert_eq!(namespace_block("nvme0n1").as_deref(), Some("nvme0n1"));
        assert_eq!(namespace_block("nvme2c5n3").as_deref(), Some("nvme2n3"));
        for no in [
            "nvme0",
            "nvme0c1",
            "nvme-subsys0",
            "ng0n1",
            "nvmen1",
            "nvme0x1",
            "power",
        ] {
            assert_eq!(namespace_block(no), None, "{no}");
        }
        assert!(plausible_subsystem(&own_nqn()));
        assert!(!plausible_subsystem("nqn.2025-11.io.iolab:kernel-"));
        assert!(!plausible_subsystem("nqn.2025-11.io.iolab:remote"));
        assert!(plausible_nqn("nqn.2025-11.io.iolab:remote"));
        assert!(!plausible_nqn("nqn.2014-08.org.nvmexpress:uuid:x"));
    }
}
