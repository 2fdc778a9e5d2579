//! Per-CPU readers of `per_cpu/cpuN/trace_pipe_raw`: one background thread
//! drains every CPU's buffer with non-blocking reads of whole pages while the
//! job runs, and keeps the raw pages for parsing after the run (so nothing is
//! decoded while requests are being measured).

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result};

use super::tracefs::Instance;

/// Raw pages read from one CPU, each `page_size` bytes long.
#[derive(Debug, Clone, Default)]
pub struct CpuPages {
    pub cpu: usize,
    pub page_size: usize,
    pub data: Vec<u8>,
}

impl CpuPages {
    pub fn pages(&self) -> impl Iterator<Item = &[u8]> {
        self.data.chunks(self.page_size.max(1))
    }
}

/// The background drain thread.
pub struct Readers {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<Vec<CpuPages>>>>,
}

impl Readers {
    /// Open every CPU's trace_pipe_raw and start draining every `period`.
    pub fn start(inst: &Instance, period: Duration) -> Result<Readers> {
        let page_size = inst.header_page.page_size();
        let mut files = Vec::new();
        for &cpu in &inst.cpus {
            let p = inst.trace_pipe_raw(cpu);
            let f = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&p)
                .with_context(|| format!("opening {}", p.display()))?;
            files.push((
                f,
                CpuPages {
                    cpu,
                    page_size,
                    data: Vec::new(),
                },
            ));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let handle = std::thread::Builder::new()
            .name("iolab-trace-rd".into())
            .spawn(move || {
                let mut buf = vec![0u8; page_size];
                loop {
                    let last = stop2.load(Ordering::Acquire);
                    for (f, pages) in files.iter_mut() {
                        drain(f, &mut buf, pages)?;
                    }
                    if last {
                        break;
                    }
                    std::thread::sleep(period);
                }
                // Files close here, before the instance is removed.
                Ok(files.into_iter().map(|(_, p)| p).collect())
            })?;
        Ok(Readers {
            stop,
            handle: Some(handle),
        })
    }

    /// Drain once more and return every page read. Call after tracing is off.
    pub fn finish(mut self) -> Result<Vec<CpuPages>> {
        self.stop.store(true, Ordering::Release);
        match self.handle.take() {
            Some(h) => h
                .join()
                .map_err(|_| anyhow::anyhow!("trace reader thread panicked"))?,
            None => Ok(Vec::new()),
        }
    }
}

impl Drop for Readers {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn drain(f: &mut File, buf: &mut [u8], pages: &mut CpuPages) -> Result<()> {
    loop {
        match f.read(buf) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                let start = pages.data.len();
                pages.data.extend_from_slice(&buf[..n]);
                pages.data.resize(start + pages.page_size, 0);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).context("reading trace_pipe_raw"),
        }
    }
}
