//! `iolab remote --transports nvme-tcp-kernel`: the kernel's own NVMe/TCP
//! target (nvmet, set up through configfs on the target host, its
//! namespace the scratch file) and initiator (connected from the initiator
//! host through /dev/nvme-fabrics), and the namespace's block device as
//! the target of the same jobs as every other transport. Everything is a
//! registered resource, taken down on drop, on a second Ctrl-C, and at the
//! next start after a SIGKILL (`testbed::nvme_kernel`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::dut::{self, Target, TargetOptions};
use crate::engine::nvmetcp::engine::host_identity;
use crate::remote::topology::Topology;
use crate::testbed::nvme_kernel::{KernelController, KernelTarget};

/// How long the kernel may take to show the namespace after connecting.
const NAMESPACE_LIMIT: Duration = Duration::from_secs(10);

/// The kernel path, set up. Field order is drop order: the job target,
/// then the initiator's controller, then nvmet's subsystem and port.
pub struct KernelPath {
    pub target: Target,
    controller: KernelController,
    nvmet: KernelTarget,
}

impl KernelPath {
    /// nvmet serving `local`'s file on the target host's `port`, the
    /// kernel's initiator connected to it from here (the initiator host).
    pub fn connect(
        topo: &Topology,
        local: &Target,
        port: u16,
        seed: u64,
    ) -> anyhow::Result<KernelPath> {
        if let Some(why) = crate::testbed::kernel_modules::nvme_tcp_kernel_unavailable_modules() {
            anyhow::bail!("{why}");
        }
        let nvmet = KernelTarget::create(&local.path, topo.target_addr, port, topo.target_netns())?;
        let (_, hostnqn) = host_identity();
        let controller = KernelController::connect(
            topo.target_addr,
            port,
            &nvmet.nqn,
            &hostnqn,
            NAMESPACE_LIMIT,
        )?;
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
        })
    }

    /// The namespace's block device (`/dev/nvmeXnY`).
    pub fn device(&self) -> &Path {
        &self.controller.device
    }

    /// What the results say about the path.
    pub fn describe(&self) -> String {
        format!(
            "nvmet subsystem {} ({}) -> kernel initiator {} ({})",
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
