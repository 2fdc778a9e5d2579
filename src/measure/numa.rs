//! NUMA and interrupt placement: the machine's nodes (CPUs, memory,
//! distances), a disk's node, its blk-mq hardware queues and its IRQs with
//! their affinities, read from sysfs and procfs under a root path (tests
//! point it at a fake tree); and where a worker thread ran and where its
//! buffer lives (getcpu(2), get_mempolicy(2)), and the binding of a
//! worker's buffers to a node (mbind(2)), as raw syscalls.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The machine's NUMA topology and the target device's place in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct NumaInfo {
    pub nodes: Vec<NumaNode>,
    /// Why an on-node/off-node difference measured here cannot be a real
    /// NUMA penalty (a hypervisor's guest, equal distances); `None` on
    /// bare metal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emulated: Option<String>,
    /// The target's disk: its node, hardware queues and IRQs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceNuma>,
}

/// One node: its CPUs (a cpulist, "0-3,8"), memory and distances.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct NumaNode {
    pub node: u32,
    pub cpus: String,
    pub memory_bytes: u64,
    /// Distance to every node, in node order (the node's `distance` file).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub distance: Vec<u32>,
}

/// A disk's NUMA node (-1: the device reports none), its blk-mq
/// hardware queues and the interrupts of the device behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct DeviceNuma {
    pub disk: String,
    pub node: i32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queues: Vec<HwQueue>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub irqs: Vec<IrqAffinity>,
}

/// One blk-mq hardware queue and the CPUs that submit to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct HwQueue {
    pub queue: u32,
    pub cpus: String,
}

/// One interrupt of the device: its name in /proc/interrupts, the CPUs
/// it may go to and the CPUs it goes to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct IrqAffinity {
    pub irq: u32,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    pub affinity: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effective: Option<String>,
}

/// Where one worker ran and where its buffers were, read at its end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct WorkerPlacement {
    pub worker: u32,
    pub cpu: u32,
    /// The node of `cpu`.
    pub cpu_node: u32,
    /// The node of the buffer pool's first page (None: not known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_node: Option<u32>,
}

/// A point's placement: where each worker ran and where its buffers
/// were (`Point.extra.placement`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct PointPlacement {
    pub workers: Vec<WorkerPlacement>,
}

fn read_trim(p: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

/// Parse a kernel cpulist ("0-3,8,10-11"); None if malformed.
pub fn parse_cpulist(s: &str) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if a > b {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().ok()?),
        }
    }
    Some(out)
}

/// The node numbers under `root`/sys/devices/system/node, ascending
/// (empty: no NUMA support in the kernel).
pub fn node_ids(root: &Path) -> Vec<u32> {
    let mut ids: Vec<u32> = fs::read_dir(root.join("sys/devices/system/node"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.strip_prefix("node")?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    ids.sort_unstable();
    ids
}

fn node_dir(root: &Path, node: u32) -> PathBuf {
    root.join(format!("sys/devices/system/node/node{node}"))
}

/// The CPUs of `node` (empty when it has none or does not exist).
pub fn node_cpus(root: &Path, node: u32) -> Vec<usize> {
    read_trim(node_dir(root, node).join("cpulist"))
        .and_then(|s| parse_cpulist(&s))
        .unwrap_or_default()
}

/// Every node with its CPUs, memory and distances.
pub fn nodes(root: &Path) -> Vec<NumaNode> {
    node_ids(root)
        .into_iter()
        .map(|node| {
            let dir = node_dir(root, node);
            let memory_bytes = read_trim(dir.join("meminfo"))
                .and_then(|m| {
                    m.lines()
                        .find(|l| l.contains("MemTotal:"))
                        .and_then(|l| l.split(':').nth(1))
                        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
                })
                .map_or(0, |kb| kb * 1024);
            NumaNode {
                node,
                cpus: read_trim(dir.join("cpulist")).unwrap_or_default(),
                memory_bytes,
                distance: read_trim(dir.join("distance"))
                    .map(|d| {
                        d.split_whitespace()
                            .filter_map(|v| v.parse().ok())
                            .collect()
                    })
                    .unwrap_or_default(),
            }
        })
        .collect()
}

/// The node CPU `cpu` belongs to.
pub fn node_of_cpu(nodes: &[NumaNode], cpu: usize) -> Option<u32> {
    nodes
        .iter()
        .find(|n| parse_cpulist(&n.cpus).is_some_and(|c| c.contains(&cpu)))
        .map(|n| n.node)
}

/// Why nodes under `root` cannot show a real NUMA penalty: the CPU is a
/// hypervisor's guest (/proc/cpuinfo's `hypervisor` flag), or every
/// distance is the same.
pub fn emulated(root: &Path, nodes: &[NumaNode]) -> Option<String> {
    let cpuinfo = read_trim(root.join("proc/cpuinfo")).unwrap_or_default();
    let guest = cpuinfo
        .lines()
        .filter(|l| l.starts_with("flags"))
        .any(|l| l.split_whitespace().any(|f| f == "hypervisor"));
    if guest {
        return Some(
            "the CPUs are a hypervisor's guest (cpuinfo flag hypervisor): its NUMA nodes are what the hypervisor presents, so an on-node/off-node difference here is not a real NUMA penalty"
                .into(),
        );
    }
    let all: Vec<u32> = nodes.iter().flat_map(|n| n.distance.clone()).collect();
    (nodes.len() > 1 && all.windows(2).all(|w| w[0] == w[1])).then(|| {
        "every NUMA distance is the same: the nodes are emulated, so an on-node/off-node difference here is not a real NUMA penalty".into()
    })
}

/// The sysfs directory of `disk`'s device: the first directory above
/// /sys/block/DISK (resolved) that has a `numa_node` file, else its
/// `device` directory.
fn device_dir(root: &Path, disk: &str) -> Option<PathBuf> {
    let block = fs::canonicalize(root.join("sys/block").join(disk)).ok()?;
    let mut dir = block.join("device");
    if let Ok(d) = fs::canonicalize(&dir) {
        dir = d;
    }
    let sys = fs::canonicalize(root.join("sys")).ok()?;
    let mut cur = Some(dir.clone());
    while let Some(c) = cur {
        if !c.starts_with(&sys) {
            break;
        }
        if c.join("numa_node").is_file() {
            return Some(c);
        }
        cur = c.parent().map(Path::to_path_buf);
    }
    dir.is_dir().then_some(dir)
}

/// `disk`'s NUMA node (-1 when the device reports none), hardware queues
/// and IRQs; None when /sys/block/DISK does not exist.
pub fn device(root: &Path, disk: &str) -> Option<DeviceNuma> {
    let block = root.join("sys/block").join(disk);
    if !block.exists() {
        return None;
    }
    let dev = device_dir(root, disk);
    let node = dev
        .as_ref()
        .and_then(|d| read_trim(d.join("numa_node")))
        .and_then(|n| n.parse().ok())
        .unwrap_or(-1);
    let mut queues: Vec<HwQueue> = fs::read_dir(block.join("mq"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| {
                    let queue = e.file_name().to_str()?.parse().ok()?;
                    Some(HwQueue {
                        queue,
                        cpus: read_trim(e.path().join("cpu_list")).unwrap_or_default(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    queues.sort_by_key(|q| q.queue);
    Some(DeviceNuma {
        disk: disk.to_string(),
        node,
        queues,
        irqs: irqs(root, disk, dev.as_deref()),
    })
}

/// The IRQs of a disk: its PCI device's `msi_irqs/`, else the lines of
/// /proc/interrupts that name the disk or its device (virtio1-req.0,
/// nvme0q1), each with its affinity from /proc/irq/N.
fn irqs(root: &Path, disk: &str, dev: Option<&Path>) -> Vec<IrqAffinity> {
    let interrupts = read_trim(root.join("proc/interrupts")).unwrap_or_default();
    let names: Vec<(u32, String)> = interrupts
        .lines()
        .filter_map(|l| {
            let (n, rest) = l.trim_start().split_once(':')?;
            Some((
                n.trim().parse().ok()?,
                rest.split_whitespace().last()?.to_string(),
            ))
        })
        .collect();
    let name_of = |irq: u32| {
        names
            .iter()
            .find(|(n, _)| *n == irq)
            .map(|(_, s)| s.clone())
            .unwrap_or_default()
    };
    let mut ids: Vec<u32> = dev
        .and_then(|d| fs::read_dir(d.join("msi_irqs")).ok())
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    if ids.is_empty() {
        // The names a device's interrupts carry: the disk's controller
        // (nvme0 of nvme0n1) and the device directories under the PCI one.
        let mut stems = Vec::new();
        if let Some(n) = disk.strip_prefix("nvme").and_then(|r| r.split('n').next()) {
            stems.push(format!("nvme{n}q"));
        }
        let under = fs::canonicalize(root.join("sys/block").join(disk)).ok();
        for c in under.iter().flat_map(|p| p.ancestors()) {
            if let Some(n) = c.file_name().and_then(|n| n.to_str()) {
                if n.starts_with("virtio") {
                    stems.push(format!("{n}-"));
                }
            }
        }
        ids = names
            .iter()
            .filter(|(_, s)| stems.iter().any(|st| s.starts_with(st.as_str())))
            .map(|(n, _)| *n)
            .collect();
    }
    ids.sort_unstable();
    ids.into_iter()
        .map(|irq| {
            let dir = root.join(format!("proc/irq/{irq}"));
            IrqAffinity {
                irq,
                name: name_of(irq),
                affinity: read_trim(dir.join("smp_affinity_list")).unwrap_or_default(),
                effective: read_trim(dir.join("effective_affinity_list")),
            }
        })
        .collect()
}

/// The topology under `root`, with `disk`'s place in it when given.
pub fn collect(root: &Path, disk: Option<&str>) -> Option<NumaInfo> {
    let nodes = nodes(root);
    if nodes.is_empty() {
        return None;
    }
    Some(NumaInfo {
        emulated: emulated(root, &nodes),
        device: disk.and_then(|d| device(root, d)),
        nodes,
    })
}

const MPOL_BIND: libc::c_int = 2;
const MPOL_F_NODE: libc::c_ulong = 1;
const MPOL_F_ADDR: libc::c_ulong = 2;

/// Bind the pages of `[addr, addr + len)` to `node` (mbind(2) with
/// MPOL_BIND), before they are first touched; `addr` is page-aligned
/// memory of a mapping the caller owns.
pub fn bind_range(addr: usize, len: usize, node: u32) -> std::io::Result<()> {
    let mut mask = [0 as libc::c_ulong; 16];
    let bits = 8 * std::mem::size_of::<libc::c_ulong>();
    let n = node as usize;
    if n >= mask.len() * bits {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    mask[n / bits] |= 1 << (n % bits);
    // SAFETY: the mask outlives the call; maxnode counts its bits; the
    // range is the caller's own mapping.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            addr,
            len as libc::c_ulong,
            MPOL_BIND,
            mask.as_ptr(),
            (mask.len() * bits) as libc::c_ulong,
            0 as libc::c_uint,
        )
    };
    match r {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// The CPU and node the calling thread runs on (getcpu(2)).
pub fn current_cpu() -> Option<(u32, u32)> {
    let (mut cpu, mut node): (libc::c_uint, libc::c_uint) = (0, 0);
    // SAFETY: both out-pointers are valid; the cache argument may be NULL.
    let r = unsafe {
        libc::syscall(
            libc::SYS_getcpu,
            &mut cpu as *mut libc::c_uint,
            &mut node as *mut libc::c_uint,
            std::ptr::null_mut::<libc::c_void>(),
        )
    };
    (r == 0).then_some((cpu, node))
}

/// The node of the page at `addr` (get_mempolicy(MPOL_F_NODE|MPOL_F_ADDR)).
pub fn node_of_address(addr: usize) -> Option<u32> {
    let mut node: libc::c_int = -1;
    // SAFETY: `node` is a valid out-pointer; no mask is asked for.
    let r = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut node as *mut libc::c_int,
            std::ptr::null_mut::<libc::c_ulong>(),
            0 as libc::c_ulong,
            addr,
            MPOL_F_NODE | MPOL_F_ADDR,
        )
    };
    (r == 0 && node >= 0).then_some(node as u32)
}

/// Where the calling worker is now and where `buffer` lives.
pub fn worker_placement(worker: u32, buffer: usize) -> Option<WorkerPlacement> {
    let (cpu, cpu_node) = current_cpu()?;
    Some(WorkerPlacement {
        worker,
        cpu,
        cpu_node,
        mem_node: node_of_address(buffer),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn put(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    /// Two nodes; nvme0n1 on node 1 with 2 hardware queues and 3 IRQs.
    pub(crate) fn fake_tree(root: &Path, with_msi: bool) {
        let n = "sys/devices/system/node";
        put(root, &format!("{n}/node0/cpulist"), "0-1\n");
        put(
            root,
            &format!("{n}/node0/meminfo"),
            "Node 0 MemTotal:       1024 kB\nNode 0 MemFree: 12 kB\n",
        );
        put(root, &format!("{n}/node0/distance"), "10 21\n");
        put(root, &format!("{n}/node1/cpulist"), "2-3\n");
        put(
            root,
            &format!("{n}/node1/meminfo"),
            "Node 1 MemTotal:       2048 kB\n",
        );
        put(root, &format!("{n}/node1/distance"), "21 10\n");
        put(root, &format!("{n}/online"), "0-1\n");
        let pci = "sys/devices/pci0000:00/0000:00:04.0";
        put(root, &format!("{pci}/numa_node"), "1\n");
        if with_msi {
            for irq in [40, 41, 42] {
                put(root, &format!("{pci}/msi_irqs/{irq}"), "msix\n");
            }
        }
        let disk = format!("{pci}/nvme/nvme0/nvme0n1");
        put(root, &format!("{disk}/mq/0/cpu_list"), "0, 1\n");
        put(root, &format!("{disk}/mq/1/cpu_list"), "2, 3\n");
        symlink(
            root.join("sys/devices/pci0000:00/0000:00:04.0/nvme/nvme0"),
            root.join(format!("{disk}/device")),
        )
        .unwrap();
        fs::create_dir_all(root.join("sys/block")).unwrap();
        symlink(
            format!("../{}", disk.trim_start_matches("sys/")),
            root.join("sys/block/nvme0n1"),
        )
        .unwrap();
        put(
            root,
            "proc/interrupts",
            "           CPU0       CPU1\n 40:  1 0 PCI-MSIX-0000:00:04.0 0-edge nvme0q0\n 41: 5 0 PCI-MSIX-0000:00:04.0 1-edge nvme0q1\n 42: 0 7 PCI-MSIX-0000:00:04.0 2-edge nvme0q2\n 50: 0 0 IO-APIC 4-edge ttyS0\n",
        );
        for (irq, aff, eff) in [(40, "0-3", "0"), (41, "0-1", "1"), (42, "2-3", "3")] {
            put(
                root,
                &format!("proc/irq/{irq}/smp_affinity_list"),
                &format!("{aff}\n"),
            );
            put(
                root,
                &format!("proc/irq/{irq}/effective_affinity_list"),
                &format!("{eff}\n"),
            );
        }
        put(root, "proc/cpuinfo", "processor : 0\nflags : fpu sse2\n");
    }

    fn check_device(root: &Path) {
        let info = collect(root, Some("nvme0n1")).unwrap();
        assert_eq!(info.nodes.len(), 2);
        assert_eq!(info.nodes[0].cpus, "0-1");
        assert_eq!(info.nodes[0].memory_bytes, 1024 * 1024);
        assert_eq!(info.nodes[1].memory_bytes, 2048 * 1024);
        assert_eq!(info.nodes[1].distance, vec![21, 10]);
        assert_eq!(info.emulated, None);
        let d = info.device.unwrap();
        assert_eq!(d.node, 1);
        assert_eq!(
            d.queues,
            vec![
                HwQueue {
                    queue: 0,
                    cpus: "0, 1".into()
                },
                HwQueue {
                    queue: 1,
                    cpus: "2, 3".into()
                }
            ]
        );
        assert_eq!(d.irqs.len(), 3);
        assert_eq!(d.irqs[1].irq, 41);
        assert_eq!(d.irqs[1].name, "nvme0q1");
        assert_eq!(d.irqs[1].affinity, "0-1");
        assert_eq!(d.irqs[2].effective.as_deref(), Some("3"));
    }

    #[test]
    fn a_device_on_node_1_with_its_queues_and_msi_irqs() {
        let t = tempfile::tempdir().unwrap();
        fake_tree(t.path(), true);
        check_device(t.path());
    }

    #[test]
    fn irqs_are_found_by_name_without_msi_irqs() {
        let t = tempfile::tempdir().unwrap();
        fake_tree(t.path(), false);
        check_device(t.path());
    }

    #[test]
    fn node_cpus_and_the_node_of_a_cpu() {
        let t = tempfile::tempdir().unwrap();
        fake_tree(t.path(), true);
        assert_eq!(node_ids(t.path()), vec![0, 1]);
        assert_eq!(node_cpus(t.path(), 1), vec![2, 3]);
        assert!(node_cpus(t.path(), 7).is_empty());
        let n = nodes(t.path());
        assert_eq!(node_of_cpu(&n, 3), Some(1));
        assert_eq!(node_of_cpu(&n, 9), None);
    }

    #[test]
    fn a_guest_or_equal_distances_are_emulated() {
        let t = tempfile::tempdir().unwrap();
        fake_tree(t.path(), true);
        put(t.path(), "proc/cpuinfo", "flags : fpu hypervisor sse2\n");
        let n = nodes(t.path());
        assert!(emulated(t.path(), &n).unwrap().contains("hypervisor"));
        put(t.path(), "proc/cpuinfo", "flags : fpu\n");
        put(
            t.path(),
            "sys/devices/system/node/node0/distance",
            "10 10\n",
        );
        put(
            t.path(),
            "sys/devices/system/node/node1/distance",
            "10 10\n",
        );
        let n = nodes(t.path());
        assert!(emulated(t.path(), &n).unwrap().contains("distance"));
    }

    #[test]
    fn cpulists_parse() {
        assert_eq!(parse_cpulist("0-2,5"), Some(vec![0, 1, 2, 5]));
        assert_eq!(parse_cpulist("0, 1"), Some(vec![0, 1]));
        assert_eq!(parse_cpulist(""), Some(vec![]));
        assert_eq!(parse_cpulist("3-1"), None);
    }

    #[test]
    fn this_thread_has_a_cpu_and_its_buffer_a_node() {
        let buf = vec![1u8; 8192];
        let p = worker_placement(0, buf.as_ptr() as usize).unwrap();
        assert!(p.mem_node.is_some(), "{p:?}");
    }
}
