//! What a database phase (kv's load and run phases, oltp's load and each
//! point) measures besides its operations, from the start of its measured
//! time to its end: the device under the data (the embedded database's
//! directory or the private server's data directory), the server's side (`measure::server::ServerSampler`: its
//! CPU and I/O, the database's size, device bytes per transaction, write
//! amplification against what the server says it wrote) and the
//! per-second timeline (`measure::timeline`). An external server
//! (`--server-url`) has no known processes or directory: its phases get
//! the machine's CPU and the client's rate only.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use super::diskstats::DeviceStats;
use super::server::ServerSampler;
use super::server_stats::{ServerPointStats, TimelineSeries};
use super::timeline::{Timeline, TimelineSources};

/// What a probe needs of a database server (`servers::Server` implements
/// it): its process group, its data directory and what it says it wrote.
/// measure imports no `servers`.
pub trait ProbedServer {
    /// The server's process group (a private server iolab started).
    fn pgid(&self) -> Option<u32>;
    /// Its data directory, when iolab knows it.
    fn data_dir(&self) -> Option<&Path>;
    /// What the server says it has written, if it says.
    fn written_bytes(&self) -> Option<u64>;
}

/// What a phase's probe measured.
#[derive(Debug, Default)]
pub struct ProbeResult {
    /// The device under the data, over the measured time.
    pub device: Option<DeviceStats>,
    /// A server's side (server engines with a data directory iolab knows).
    pub server: Option<ServerPointStats>,
    pub timeline: Option<TimelineSeries>,
}

/// Measures one phase; `begin` and `end` bracket its measured time.
pub struct PhaseProbe<'a> {
    server: Option<&'a dyn ProbedServer>,
    data_dir: Option<PathBuf>,
    /// The timeline's disk when no sampler names it (`timeline_only`).
    disk: Option<String>,
    /// The client's operations so far (operations, transactions, rows loaded).
    ops: Arc<AtomicU64>,
    sampler: Option<ServerSampler>,
    timeline: Option<Timeline>,
    pub result: ProbeResult,
}

impl<'a> PhaseProbe<'a> {
    /// A probe of the data in `data_dir` (an embedded database's directory; for a server,
    /// its own data directory is used), on `server` if there is one.
    pub fn new(server: Option<&'a dyn ProbedServer>, data_dir: Option<&Path>) -> PhaseProbe<'a> {
        let data_dir = match server {
            Some(s) => s.data_dir().map(Path::to_path_buf),
            None => data_dir.map(Path::to_path_buf),
        };
        PhaseProbe {
            server,
            data_dir,
            disk: None,
            ops: Arc::new(AtomicU64::new(0)),
            sampler: None,
            timeline: None,
            result: ProbeResult::default(),
        }
    }

    /// Only the timeline, of `disk`: for a phase whose device and size
    /// are measured elsewhere (kv's embedded engines: `kv::loadstats`), so
    /// the directory is not walked twice.
    pub fn timeline_only(disk: Option<String>) -> PhaseProbe<'static> {
        PhaseProbe {
            disk,
            ..PhaseProbe::new(None, None)
        }
    }

    /// The counter the workload bumps (rows for the load).
    pub fn ops(&self) -> &AtomicU64 {
        &self.ops
    }

    /// The same counter, for a workload on other threads.
    pub fn counter(&self) -> Arc<AtomicU64> {
        self.ops.clone()
    }

    pub fn begin(&mut self) {
        let pgid = self.server.and_then(|s| s.pgid());
        if let Some(dir) = &self.data_dir {
            let written = self.server.and_then(|s| s.written_bytes());
            self.sampler = Some(ServerSampler::start(pgid, dir).with_db_written(written));
        }
        self.timeline = Some(Timeline::start(TimelineSources {
            disk: self
                .sampler
                .as_ref()
                .and_then(|s| s.device().map(str::to_string))
                .or_else(|| self.disk.clone()),
            pgid,
            client_ops: self.ops.clone(),
        }));
    }

    /// The measured time is over, `ops` operations done in it.
    pub fn end_with(&mut self, ops: u64) {
        self.result.timeline = self.timeline.take().map(Timeline::stop);
        let Some(sampler) = self.sampler.take() else {
            return;
        };
        let server = self.server;
        let stats = sampler.finish_with_db_written(ops, || server.and_then(|s| s.written_bytes()));
        self.result.device = stats.device.clone();
        if server.is_some() {
            self.result.server = Some(stats);
        }
    }
}
