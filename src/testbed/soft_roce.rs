//! A soft-RoCE link for NVMe over RDMA (`nvme-rdma-kernel`, `nvme-rdma`):
//! a veth pair iolab makes (`iorx<pid><seq>a`/`b`, one per link) in the initial network namespace (nvmet-rdma
//! and nvme-rdma only use that one), an address on each end, and an
//! rdma_rxe device on the first end (`rdma link add`). The target listens
//! on that end's address and the kernel's initiator connects to it; rxe
//! carries the traffic as RoCEv2 in UDP over the pair. Nothing reaches a
//! real interface: the pair is iolab's and goes with it (deleting the veth
//! unregisters the rxe device), as a registered resource (`Resource::RdmaLink`),
//! also after a second Ctrl-C and at the next start after a SIGKILL. A
//! link iolab's own RDMA initiator used goes once iolab has exited (the
//! kernel keeps an rxe device while a process holds a verbs context on it).
//! Soft-RoCE runs the NIC's work on the CPU: it shows the protocol's path,
//! not a real NIC's latency.

use std::net::Ipv4Addr;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;

use super::command::bounded;
use super::Resource;

/// Interfaces iolab makes for its links: `iorx<pid>a` and `iorx<pid>b`.
const PREFIX: &str = "iorx";

/// A name iolab gives the veth end its rxe device sits on.
pub fn plausible_veth(name: &str) -> bool {
    name.strip_prefix(PREFIX)
        .and_then(|rest| rest.strip_suffix('a'))
        .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
        && name.len() <= 15
}

/// The rxe device iolab names after its veth end (`iorxe<pid>`).
fn rxe_name(veth: &str) -> String {
    veth.trim_end_matches('a').replacen(PREFIX, "iorxe", 1)
}

/// The /30 of this process's `seq`th link in 10.211.0.0/14, from the pid.
fn addresses(pid: u32, seq: u32) -> (Ipv4Addr, Ipv4Addr) {
    let block = ((pid % 640) * 100 + seq % 100) * 4;
    let (hi, lo) = ((block >> 8) as u8, (block & 0xff) as u8);
    (
        Ipv4Addr::new(10, 211 + hi / 64, hi % 64, lo + 1),
        Ipv4Addr::new(10, 211 + hi / 64, hi % 64, lo + 2),
    )
}

/// The modules a link needs: rdma_rxe, veth, and the user-space verbs'
/// and connection manager's devices (iolab's own RDMA initiator and target).
const MODULES: [&str; 4] = ["rdma_rxe", "veth", "ib_uverbs", "rdma_ucm"];

/// Why no link can be made here, if not: modules, root, the rdma tool.
pub fn unavailable() -> Option<String> {
    use super::kernel_modules::{module_state, ModuleState};
    let missing: Vec<&str> = MODULES
        .into_iter()
        .filter(|m| module_state(m) == ModuleState::Absent)
        .collect();
    if !missing.is_empty() {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        return Some(format!(
            "this kernel ({}) lacks the modules {} (neither loaded nor in its modules.dep); a soft-RoCE link needs {}",
            release.trim(),
            missing.join(", "),
            MODULES.join(", ")
        ));
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("making a soft-RoCE link (a veth pair, `rdma link add`) needs root".into());
    }
    if super::command::which("rdma").is_none() {
        return Some(
            "the rdma tool (iproute2) is not installed: soft-RoCE is made with `rdma link add`"
                .into(),
        );
    }
    None
}

/// The link, taken down on drop.
pub struct SoftRoce {
    /// The rxe device (`iorxe<pid>`).
    pub device: String,
    /// The veth end it sits on.
    pub netdev: String,
    /// The address the target listens on (and the initiator reaches).
    pub addr: Ipv4Addr,
    resource: Resource,
}

impl SoftRoce {
    /// Make this process's veth pair, its addresses and the rxe device.
    pub fn create() -> anyhow::Result<SoftRoce> {
        super::nvme_kernel::load_modules(&MODULES)?;
        let pid = std::process::id();
        // A link per call: one a run's own initiator used outlives its
        // pass until iolab exits, beside the next one.
        static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 100;
        let netdev = format!("{PREFIX}{pid}{seq:02}a");
        let peer = format!("{PREFIX}{pid}{seq:02}b");
        let device = rxe_name(&netdev);
        let (addr, peer_addr) = addresses(pid, seq);
        let resource = Resource::RdmaLink {
            veth: netdev.clone(),
        };
        super::create(resource.clone(), || {
            ip(&[
                "link", "add", &netdev, "type", "veth", "peer", "name", &peer,
            ])
        })?;
        let link = SoftRoce {
            device,
            netdev,
            addr,
            resource,
        };
        ip(&["addr", "add", &format!("{addr}/30"), "dev", &link.netdev])?;
        ip(&["addr", "add", &format!("{peer_addr}/30"), "dev", &peer])?;
        ip(&["link", "set", &link.netdev, "up"])?;
        ip(&["link", "set", &peer, "up"])?;
        let args = [
            "link",
            "add",
            &link.device,
            "type",
            "rxe",
            "netdev",
            &link.netdev,
        ];
        run("rdma", &args).context("cannot add the soft-RoCE device (rdma_rxe)")?;
        Ok(link)
    }

    /// What the results say about it.
    pub fn describe(&self) -> String {
        format!(
            "soft-RoCE {} (rdma_rxe) on iolab's veth {} at {}",
            self.device, self.netdev, self.addr
        )
    }
}

impl Drop for SoftRoce {
    fn drop(&mut self) {
        // rdma_rxe unregisters a device only once no process holds a verbs
        // context on it, and librdmacm keeps the one iolab's own RDMA
        // initiator used open until exit: deleting it now would wait for
        // ever. A reaper deletes it once iolab is gone; the record stays,
        // so the next start sweeps it should the reaper not.
        if holds_user_verbs() && reap_after_exit(&self.device, &self.netdev) {
            return;
        }
        let _ = self.resource.undo();
        super::release(&self.resource);
    }
}

/// Whether this process has a verbs device open (/dev/infiniband/uverbsN).
fn holds_user_verbs() -> bool {
    std::fs::read_dir("/proc/self/fd")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .any(|t| t.to_string_lossy().starts_with("/dev/infiniband/uverbs"))
}

/// Start a detached shell that deletes `device` and `veth` once this
/// process holds no verbs device (it has exited); whether it started.
fn reap_after_exit(device: &str, veth: &str) -> bool {
    use std::os::unix::process::CommandExt;
    let (Some(rdma), Some(ip)) = (super::command::which("rdma"), super::command::which("ip"))
    else {
        return false;
    };
    let pid = std::process::id();
    let script = format!(
        "while ls -l /proc/{pid}/fd 2>/dev/null | grep -q /dev/infiniband/; do sleep 0.2; done; \
         {} link delete {device}; {} link del {veth}",
        rdma.display(),
        ip.display()
    );
    let mut cmd = std::process::Command::new("sh");
    cmd.args(["-c", &script])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: setsid is async-signal-safe: the reaper leaves iolab's
    // session, so a Ctrl-C to iolab's terminal does not end it.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    cmd.spawn().is_ok()
}

/// Run `program` found on PATH by its full path (a busybox `timeout`
/// would run its own `ip` applet, which knows no veth, for a bare name).
fn run(program: &str, args: &[&str]) -> anyhow::Result<()> {
    let path = super::command::which(program)
        .with_context(|| format!("{program} is not installed (iproute2)"))?;
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
    bounded(&path.to_string_lossy(), &args, Duration::from_secs(20)).map(|_| ())
}

fn ip(args: &[&str]) -> anyhow::Result<()> {
    run("ip", args)
}

/// Take a link down: its rxe device, then the veth pair (best effort;
/// never an interface iolab would not have named).
pub fn remove(veth: &str) {
    if !plausible_veth(veth) {
        return;
    }
    let device = rxe_name(veth);
    if Path::new("/sys/class/infiniband").join(&device).exists() {
        let _ = run("rdma", &["link", "delete", &device]);
    }
    if Path::new("/sys/class/net").join(veth).exists() {
        let _ = ip(&["link", "del", veth]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_addresses_are_iolabs_and_fit() {
        for pid in [1, 4242, 4_194_304] {
            let veth = format!("{PREFIX}{pid}07a");
            assert!(plausible_veth(&veth), "{veth}");
            assert_eq!(rxe_name(&veth), format!("iorxe{pid}07"));
            let (a, b) = addresses(pid, 7);
            assert_eq!(u32::from(b), u32::from(a) + 1, "{a} {b}");
            assert_eq!(u32::from(a) & 3, 1, "{a}: the first host of a /30");
            assert_eq!(a.octets()[0], 10);
            assert!(
                (211..=214).contains(&a.octets()[1]),
                "{a}: in 10.211.0.0/14"
            );
            assert_ne!(addresses(pid, 8).0, a, "a second link of the process");
        }
        for bad in ["eth0", "iorxa", "iorx12b", "iorx1x2a", "iorx12345678901a"] {
            assert!(!plausible_veth(bad), "{bad}");
        }
    }
}
