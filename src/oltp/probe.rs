//! What an oltp phase (the load, each point) measures besides its
//! transactions, from the start of its measured time to its end: the
//! device under the data (SQLite's directory or the private server's data
//! directory), the server's side (`measure::server::ServerSampler`: its
//! CPU and I/O, the database's size, device bytes per transaction, write
//! amplification against what the server says it wrote) and the
//! per-second timeline (`measure::timeline`). An external server
//! (`--server-url`) has no known processes or directory: its phases get
//! the machine's CPU and the client's rate only.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::driver::MeasuredWindow;
use crate::measure::diskstats::DeviceStats;
use crate::measure::server::ServerSampler;
use crate::measure::timeline::{Timeline, TimelineSources};
use crate::results::{ServerPointStats, TimelineSeries};
use crate::servers::Server;

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
    server: Option<&'a Server>,
    data_dir: Option<PathBuf>,
    /// The client's operations so far (transactions, or rows loaded).
    ops: Arc<AtomicU64>,
    sampler: Option<ServerSampler>,
    timeline: Option<Timeline>,
    pub result: ProbeResult,
}

impl<'a> PhaseProbe<'a> {
    /// A probe of the data in `data_dir` (SQLite's directory; for a server,
    /// its own data directory is used), on `server` if there is one.
    pub fn new(server: Option<&'a Server>, data_dir: Option<&Path>) -> PhaseProbe<'a> {
        let data_dir = match server {
            Some(s) => s.data_dir().map(Path::to_path_buf),
            None => data_dir.map(Path::to_path_buf),
        };
        PhaseProbe {
            server,
            data_dir,
            ops: Arc::new(AtomicU64::new(0)),
            sampler: None,
            timeline: None,
            result: ProbeResult::default(),
        }
    }

    /// The counter the workload bumps (rows for the load).
    pub fn ops(&self) -> &AtomicU64 {
        &self.ops
    }

    pub fn begin(&mut self) {
        let pgid = self.server.and_then(Server::pgid);
        if let Some(dir) = &self.data_dir {
            let written = self.server.and_then(Server::written_bytes);
            self.sampler = Some(ServerSampler::start(pgid, dir).with_db_written(written));
        }
        self.timeline = Some(Timeline::start(TimelineSources {
            disk: self
                .sampler
                .as_ref()
                .and_then(|s| s.device().map(str::to_string)),
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
        let stats = sampler.finish_with_db_written(ops, || server.and_then(Server::written_bytes));
        self.result.device = stats.device.clone();
        if server.is_some() {
            self.result.server = Some(stats);
        }
    }
}

impl MeasuredWindow for PhaseProbe<'_> {
    fn begin(&mut self) {
        PhaseProbe::begin(self);
    }

    fn progress(&mut self, txns: u64) {
        self.ops.store(txns, Ordering::Relaxed);
    }

    fn end(&mut self) {
        let ops = self.ops.load(Ordering::Relaxed);
        self.end_with(ops);
    }
}
