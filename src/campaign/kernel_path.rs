//! `iolab remote --transports nvme-tcp-kernel,nvme-rdma-kernel`: the
//! kernel's own NVMe-oF target (nvmet, set up through configfs on the
//! target host, its namespace the scratch file) and initiator (connected
//! from the initiator host through /dev/nvme-fabrics), and the namespace's
//! block device as the target of the same jobs as every other transport.
//! Over RDMA both ends use the initial network namespace (nvmet-rdma and
//! nvme-rdma know no other) and a soft-RoCE link iolab makes
//! (`testbed::soft_roce`) instead of the topology's. Everything is a
//! registered resource, taken down on drop, on a second Ctrl-C, and at the
//! next start after a SIGKILL (`testbed::nvme_kernel`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::dut::{self, Target, TargetOptions};
use crate::engine::nvmetcp::engine::host_identity;
use crate::remote::topology::Topology;
use crate::testbed::nvme_kernel::{KernelController, KernelTarget, NvmeTrtype};
use crate::testbed::soft_roce::SoftRoce;

/// How long the kernel may take to show the namespace after connecting.
const NAMESPACE_LIMIT: Duration = Duration::from_secs(10);

/// The kernel path, set up. Field order is drop order: the job target,
/// then the initiator's controller, then nvmet's subsystem and port, then
/// the soft-RoCE link under them.
pub struct KernelPath {
    pub target: Target,
    controller: KernelController,
    nvmet: KernelTarget,
    link: Option<SoftRoce>,
}

impl KernelPath {
    /// nvmet serving `local`'s file over `trtype` on the target host's
    /// `port` (over RDMA: on a soft-RoCE link of its own), the kernel's
    /// initiator connected to it from here (the initiator host).
    pub fn connect(
        trtype: NvmeTrtype,
        topo: &Topology,
        local: &Target,
        port: u16,
        seed: u64,
    ) -> anyhow::Result<KernelPath> {
        if let Some(why) = crate::testbed::kernel_modules::nvme_kernel_unavailable_modules(trtype) {
            anyhow::bail!("{why}");
        }
        let (link, addr, netns) = match trtype {
            NvmeTrtype::Tcp => (None, topo.target_addr, topo.target_netns()),
            NvmeTrtype::Rdma => {
                let link = SoftRoce::create()?;
                let addr = link.addr.into();
                (Some(link), addr, None)
            }
        };
        let nvmet = KernelTarget::create(trtype, &local.path, addr, port, netns)?;
        let (_, hostnqn) = host_identity();
        let controller =
            KernelController::connect(trtype, addr, port, &nvmet.nqn, &hostnqn, NAMESPACE_LIMIT)?;
        let target = dut::prepare(
            &TargetOptions {
                path: Some(controller.device.clone()),
                destroy_data: Some(controller.device.clone()),
                ..Default::default()
            },
            true,
            None,
            seed,
        )?;
        Ok(KernelPath {
            target,
            controller,
            nvmet,
            link,
        })
    }

    /// The namespace's block device (`/dev/nvmeXnY`).
    pub fn device(&self) -> &Path {
        &self.controller.device
    }

    /// The soft-RoCE link under an RDMA path, in words.
    pub fn soft_rdma(&self) -> Option<String> {
        self.link.as_ref().map(SoftRoce::describe)
    }

    /// What the results say about the path.
    pub fn describe(&self) -> String {
        let over = self
            .soft_rdma()
            .map(|l| format!(" over {l}"))
            .unwrap_or_default();
        format!(
            "nvmet subsystem {} ({}) -> kernel initiator {} ({}){over}",
            self.nvmet.nqn,
            if self.nvmet.direct {
                "O_DIRECT"
            } else {
                "buffered_io: the file refused O_DIRECT"
            },
            self.controller.name,
            PathBuf::from(&self.controller.device).display()
        )
    }
}
