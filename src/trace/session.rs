//! One traced run: private instance, per-CPU readers, the job, then decoding
//! every captured page into one time-sorted event stream with loss counters.

use anyhow::Result;

use super::correlate::reap_syscalls;
use super::events::{Decoder, Event, Kind};
use super::reader::{CpuPages, Readers};
use super::ringbuf::parse_page;
use super::tracefs::{Capabilities, EventSpec, Instance, LostEvents};

/// What to trace.
#[derive(Debug, Clone)]
pub struct TraceSpec {
    /// Kernel dev_t (major << 20 | minor) of the whole disk.
    pub kdev: u32,
    /// The device's interrupt lines (may be empty).
    pub irqs: Vec<u32>,
    /// Worker thread ids whose syscalls to record.
    pub tids: Vec<i32>,
    pub uring: bool,
    /// Record syscall entry/exit (the kernel-submission and reaping edges).
    pub syscalls: bool,
    pub buffer_kb: u32,
}

impl TraceSpec {
    pub fn events(&self) -> Vec<EventSpec> {
        let devf = format!("dev == {}", self.kdev);
        let mut v: Vec<EventSpec> = Kind::BLOCK
            .iter()
            .map(|k| {
                let (s, n) = k.tracepoint();
                EventSpec::new(s, n, Some(devf.clone()))
            })
            .collect();
        // Syscalls: by worker thread when the tids are known up front, else
        // by syscall number (only the I/O syscalls; joined by tid afterwards).
        let f = if self.tids.is_empty() {
            let mut nrs = reap_syscalls();
            nrs.push(libc::SYS_io_submit);
            nrs.retain(|&n| n != libc::SYS_read && n != libc::SYS_write);
            nrs.iter()
                .map(|n| format!("id == {n}"))
                .collect::<Vec<_>>()
                .join(" || ")
        } else {
            self.tids
                .iter()
                .map(|t| format!("common_pid == {t}"))
                .collect::<Vec<_>>()
                .join(" || ")
        };
        if self.syscalls {
            v.push(EventSpec::new("raw_syscalls", "sys_enter", Some(f.clone())));
            v.push(EventSpec::new("raw_syscalls", "sys_exit", Some(f)));
        }
        if self.uring {
            v.push(EventSpec::new("io_uring", "io_uring_submit_req", None));
            v.push(EventSpec::new("io_uring", "io_uring_complete", None));
        }
        if !self.irqs.is_empty() {
            let f = self
                .irqs
                .iter()
                .map(|i| format!("irq == {i}"))
                .collect::<Vec<_>>()
                .join(" || ");
            v.push(EventSpec::new("irq", "irq_handler_entry", Some(f)));
        }
        v
    }
}

/// Everything a traced run captured.
#[derive(Debug, Clone, Default)]
pub struct Capture {
    pub events: Vec<Event>,
    pub lost: LostEvents,
    /// Events the pages themselves flagged as missed.
    pub missed_in_pages: u64,
    pub pages: usize,
    pub bad_pages: usize,
    pub instance: String,
    /// Device sectors of the job's own requests (for a job-only export).
    pub job_sectors: std::collections::HashSet<u64>,
}

impl Capture {
    /// Block events of the job's own requests only (what btt should see to
    /// compare with iolab's per-request numbers).
    pub fn job_events(&self) -> Vec<Event> {
        self.events
            .iter()
            .filter(|e| e.kind.is_block() && self.job_sectors.contains(&e.a))
            .copied()
            .collect()
    }
}

/// Trace `job` (run on this thread) and return its result with the capture.
/// The instance is removed before this returns, whatever happens.
pub fn traced<R>(
    caps: &Capabilities,
    spec: &TraceSpec,
    job: impl FnOnce() -> Result<R>,
) -> Result<(R, Capture)> {
    traced_events(caps, &spec.events(), spec.buffer_kb, job)
}

/// `traced` with the events given one by one (e.g. the NVMe-oF ones).
pub fn traced_events<R>(
    caps: &Capabilities,
    events: &[EventSpec],
    buffer_kb: u32,
    job: impl FnOnce() -> Result<R>,
) -> Result<(R, Capture)> {
    let inst = Instance::create(caps, buffer_kb, events)?;
    let readers = Readers::start(&inst, std::time::Duration::from_millis(25))?;
    inst.start()?;
    let r = job();
    inst.stop()?;
    let pages = readers.finish()?;
    let lost = inst.lost_events()?;
    let dec = Decoder::new(&inst.formats)?;
    let mut cap = decode(&pages, &inst, &dec);
    cap.lost = lost;
    cap.instance = inst.dir.display().to_string();
    drop(inst);
    Ok((r?, cap))
}

fn decode(pages: &[CpuPages], inst: &Instance, dec: &Decoder) -> Capture {
    let mut cap = Capture::default();
    for cp in pages {
        for page in cp.pages() {
            cap.pages += 1;
            let res = parse_page(page, &inst.header_page, &inst.header_event, |ts, rec| {
                if let Some(e) = dec.decode(ts, cp.cpu as u16, rec) {
                    cap.events.push(e);
                }
            });
            match res {
                Ok(s) => cap.missed_in_pages += s.missed.unwrap_or(0) + u64::from(s.missed_unknown),
                Err(_) => cap.bad_pages += 1,
            }
        }
    }
    cap.events.sort_by_key(|e| (e.ts, e.cpu));
    cap
}

/// Interrupt lines of a disk: /proc/interrupts entries named after its
/// parent device (e.g. "virtio1-req.0" for vda, "nvme0q1" for nvme0n1).
pub fn disk_irqs(disk: &str) -> Vec<u32> {
    let dev = std::fs::canonicalize(format!("/sys/block/{disk}/device"))
        .ok()
        .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()));
    let Some(dev) = dev else { return Vec::new() };
    let Ok(text) = std::fs::read_to_string("/proc/interrupts") else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| {
            let (num, rest) = l.trim().split_once(':')?;
            let name = rest.split_whitespace().last()?;
            let hit =
                name.starts_with(&format!("{dev}-req")) || name.starts_with(&format!("{dev}q"));
            hit.then(|| num.trim().parse().ok()).flatten()
        })
        .collect()
}
