//! What this kernel offers as remote-storage initiators (nbd, iscsi_tcp,
//! nvme_tcp): loaded (in /sys/module), loadable (listed in the modules of
//! the running release) or absent. `iolab remote` always drives the
//! user-space initiators (iolab's nbd engine, libiscsi) and records, per
//! protocol, which path ran and what the kernel would have offered.

use std::path::Path;

use serde::Serialize;

use super::nvme_kernel::NvmeTrtype;

/// A kernel module's state on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ModuleState {
    Loaded,
    Loadable,
    Absent,
}

/// One protocol's initiator: the kernel's module, and the path iolab took.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Initiator {
    pub protocol: &'static str,
    pub module: &'static str,
    pub kernel: ModuleState,
    /// The initiator iolab ran.
    pub path: &'static str,
}

impl Initiator {
    /// As the results file records it (`extra.remote.initiators`).
    pub fn record(&self) -> crate::results::sections::remote::InitiatorRecord {
        crate::results::sections::remote::InitiatorRecord {
            protocol: self.protocol.to_string(),
            module: self.module.to_string(),
            kernel: match self.kernel {
                ModuleState::Loaded => "loaded",
                ModuleState::Loadable => "loadable",
                ModuleState::Absent => "absent",
            }
            .to_string(),
            path: self.path.to_string(),
        }
    }
}

/// The protocols, their kernel modules and iolab's user-space initiator.
const INITIATORS: [(&str, &str, &str); 3] = [
    (
        "nbd",
        "nbd",
        "user space: iolab's nbd engine (for the database's filesystem: the kernel's client where present, else nbdfuse)",
    ),
    ("iscsi", "iscsi_tcp", "user space: libiscsi"),
    (
        "nvme-tcp",
        "nvme_tcp",
        "user space: iolab's nvme-tcp engine",
    ),
];

/// Whether `module` is in `modules_dep` (the text of modules.dep), where
/// file names use '-' or '_' interchangeably.
fn listed(modules_dep: &str, module: &str) -> bool {
    let want = module.replace('-', "_");
    modules_dep.lines().any(|l| {
        let file = l.split(':').next().unwrap_or("");
        let base = file.rsplit('/').next().unwrap_or("");
        let stem = base.split(".ko").next().unwrap_or("");
        !stem.is_empty() && stem.replace('-', "_") == want
    })
}

/// The state of `module` on this machine.
pub fn module_state(module: &str) -> ModuleState {
    if Path::new("/sys/module").join(module).exists() {
        return ModuleState::Loaded;
    }
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let dep = std::fs::read_to_string(format!("/lib/modules/{}/modules.dep", release.trim()))
        .unwrap_or_default();
    if listed(&dep, module) {
        ModuleState::Loadable
    } else {
        ModuleState::Absent
    }
}

/// Every protocol's initiator on this machine.
pub fn initiators() -> Vec<Initiator> {
    INITIATORS
        .iter()
        .map(|&(protocol, module, path)| Initiator {
            protocol,
            module,
            kernel: module_state(module),
            path,
        })
        .collect()
}

/// Why the kernel's NVMe-oF initiator and target over `trtype`
/// (`nvme-tcp-kernel`, `nvme-rdma-kernel`) cannot run here: the modules
/// this kernel lacks, by name, or what else it lacks (root, configfs,
/// /dev/nvme-fabrics, the `rdma` tool soft-RoCE is made with).
pub fn nvme_kernel_unavailable(trtype: NvmeTrtype) -> Option<String> {
    if let Some(why) = nvme_kernel_unavailable_modules(trtype) {
        return Some(why);
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("configfs and /dev/nvme-fabrics need root".into());
    }
    if !Path::new("/sys/kernel/config").is_dir() {
        return Some("configfs is not available (/sys/kernel/config is missing)".into());
    }
    if trtype == NvmeTrtype::Rdma && super::command::which("rdma").is_none() {
        return Some(
            "the rdma tool (iproute2) is not installed: soft-RoCE is made with `rdma link add`"
                .into(),
        );
    }
    None
}

/// The modules the kernel's NVMe-oF path over `trtype` needs that this
/// kernel lacks, in words.
pub fn nvme_kernel_unavailable_modules(trtype: NvmeTrtype) -> Option<String> {
    let needed = trtype.modules();
    let missing: Vec<&str> = needed
        .iter()
        .copied()
        .filter(|m| module_state(m) == ModuleState::Absent)
        .collect();
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let what = match trtype {
        NvmeTrtype::Tcp => "the kernel's NVMe/TCP target and initiator",
        NvmeTrtype::Rdma => "the kernel's NVMe over RDMA (soft-RoCE) target and initiator",
    };
    (!missing.is_empty()).then(|| {
        format!(
            "this kernel ({}) lacks the modules {} (neither loaded nor in its modules.dep); {what} need {}",
            release.trim(),
            missing.join(", "),
            needed.join(", "),
        )
    })
}

/// One line for the terminal and the results' warnings.
pub fn summary(list: &[Initiator]) -> String {
    let kernel: Vec<String> = list
        .iter()
        .map(|i| {
            let state = match i.kernel {
                ModuleState::Loaded => "loaded",
                ModuleState::Loadable => "loadable",
                ModuleState::Absent => "absent",
            };
            format!("{} {state}", i.module)
        })
        .collect();
    format!(
        "initiators run in user space (iolab's nbd and nvme-tcp engines, libiscsi); the kernel's: {}",
        kernel.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_are_found_in_modules_dep_by_either_spelling() {
        let dep = "kernel/drivers/block/nbd.ko.xz:\n\
                   kernel/drivers/nvme/host/nvme-tcp.ko: kernel/drivers/nvme/host/nvme-fabrics.ko\n";
        assert!(listed(dep, "nbd"));
        assert!(listed(dep, "nvme_tcp"));
        assert!(!listed(dep, "iscsi_tcp"));
        assert!(!listed(dep, "nvme"), "a prefix is not the module");
    }

    #[test]
    fn the_state_follows_sys_module() {
        for i in initiators() {
            let loaded = Path::new("/sys/module").join(i.module).exists();
            assert_eq!(i.kernel == ModuleState::Loaded, loaded, "{i:?}");
        }
        assert!(summary(&initiators()).contains("nbd "));
    }

    #[test]
    fn the_kernel_nvme_paths_name_what_is_missing() {
        for trtype in [NvmeTrtype::Tcp, NvmeTrtype::Rdma] {
            names_what_is_missing(trtype);
        }
    }

    fn names_what_is_missing(trtype: NvmeTrtype) {
        let why = nvme_kernel_unavailable_modules(trtype).unwrap_or_default();
        let named: Vec<&str> = why
            .split_once("lacks the modules ")
            .and_then(|(_, rest)| rest.split_once(" (neither"))
            .map(|(list, _)| list.split(", ").collect())
            .unwrap_or_default();
        for m in trtype.modules() {
            let absent = module_state(m) == ModuleState::Absent;
            assert_eq!(absent, named.contains(&m), "{m}: {why}");
        }
    }
}
