//! The transports of `iolab remote` as setups of a campaign: a
//! transport's server started on the local scratch file and its export
//! prepared as a target (`serve`), the port each uses, and `OwnTarget`,
//! iolab's own NBD target with the topology around it (`iolab run
//! --remote`'s step). Each is a guard: dropped, the server stops and the
//! namespaces go.

use crate::results::sections::{RemoteRecord, RemoteTransport};
use std::path::{Path, PathBuf};

use crate::dut::{self, Target, TargetOptions};
use crate::measure::peers::PeerSampling;
use crate::remote::breakdown::{self, BreakdownSpec};
use crate::remote::servers;
use crate::remote::topology::Topology;
use crate::results::Results;
use crate::servers::storage::{OwnTargetOptions, StorageServer, Transport};

/// First port of the servers on the target host (one per transport).
const FIRST_PORT: u16 = 10809;

/// `extra.remote.breakdown.LABEL`: the unloaded breakdown over a transport.
pub fn record_breakdown(
    results: &mut Results,
    label: &str,
    b: &crate::target::stamps::StampBreakdown,
) {
    if let Some(r) = results.extra.remote.as_mut() {
        r.breakdown
            .get_or_insert_with(Default::default)
            .insert(label.to_string(), *b);
    }
}

/// Start the server of transport `t` (the `index`th of the run) on
/// `local`'s file and prepare its export as a target.
pub fn serve(
    t: Transport,
    topo: &Topology,
    local: &Target,
    index: usize,
    own: &OwnTargetOptions,
    dir: &Path,
    seed: u64,
) -> anyhow::Result<(StorageServer, Target)> {
    let port = port_for(topo, index)?;
    let server = servers::start(t, topo, &local.path, local.size, port, own, dir)?;
    let remote = dut::prepare(
        &TargetOptions {
            path: Some(PathBuf::from(&server.url)),
            overwrite: true,
            ..Default::default()
        },
        true,
        None,
        seed,
    )?;
    Ok((server, remote))
}

/// The port of the `index`th transport of the run.
pub fn port_for(topo: &Topology, index: usize) -> anyhow::Result<u16> {
    if topo.kind == "loopback" {
        free_port()
    } else {
        Ok(FIRST_PORT + index as u16)
    }
}

fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// iolab's own NBD target serving a local scratch file, with the topology
/// around it and the export as a target: `iolab run --remote`'s step. The
/// calling thread is in the initiator namespace while it lives.
pub struct OwnTarget {
    /// The served export, for jobs on the nbd engine.
    pub remote: Target,
    pub sampling: PeerSampling,
    stamps: PathBuf,
    server: StorageServer,
    topo: Topology,
}

impl OwnTarget {
    /// Namespaces as root (loopback otherwise), the target started on
    /// `local`'s file, the export probed. Logs and stamps go into `dir`.
    pub fn start(local: &Target, dir: &Path, seed: u64) -> anyhow::Result<OwnTarget> {
        let mut topo = Topology::choose(false)?;
        topo.enter_initiator()?;
        let stamps = dir.join("stamps-nbd-iolab.txt");
        let own = OwnTargetOptions {
            stamps: Some(stamps.clone()),
            ..Default::default()
        };
        let t = Transport::own_nbd();
        let (server, remote) = serve(t, &topo, local, 0, &own, dir, seed)?;
        let sampling = PeerSampling {
            processes: vec![server.sampled()],
            interface: Some(topo.initiator_iface.clone()),
        };
        Ok(OwnTarget {
            remote,
            sampling,
            stamps,
            server,
            topo,
        })
    }

    /// What `extra.remote` says about the link.
    pub fn describe(&self) -> RemoteRecord {
        let named = |t: Transport| RemoteTransport {
            label: t.label(),
            backing: Some(t.backing().to_string()),
            ..RemoteTransport::default()
        };
        RemoteRecord {
            topology: self.topo.kind.to_string(),
            note: Some(self.topo.note.clone()),
            target_addr: Some(self.topo.target_addr.to_string()),
            initiator_interface: Some(self.topo.initiator_iface.clone()),
            transports: vec![named(Transport::local()), named(self.server.transport)],
            ..RemoteRecord::default()
        }
    }

    /// The unloaded breakdown of `requests` QD1 reads of `block` bytes,
    /// recorded into `results`.
    pub fn breakdown(
        &self,
        results: &mut Results,
        requests: usize,
        block: u32,
        seed: u64,
    ) -> anyhow::Result<()> {
        let spec = BreakdownSpec {
            requests,
            warmup: (requests / 10).max(1),
            block,
            span: self.remote.size,
            seed,
        };
        let b = breakdown::measure(&self.remote, &spec, &self.stamps)?;
        record_breakdown(results, &self.server.transport.label(), &b);
        Ok(())
    }
}

impl Drop for OwnTarget {
    fn drop(&mut self) {
        // The server goes first (field order), then the namespaces.
        self.topo.leave_initiator();
    }
}
