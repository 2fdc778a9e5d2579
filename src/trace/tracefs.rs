//! A private tracefs instance (`instances/iolab-<pid>`): mounting tracefs when
//! needed, `trace_clock=mono`, enabling events with filters, the per-CPU
//! buffer size, and teardown on drop (the instance directory is removed, which
//! drops every setting made inside it; a tracefs mount iolab made is undone).
//! Interrupts are handled by the caller's stop flag: the run loop ends, the
//! guard drops, the instance goes.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};

use super::format::{EventFormat, HeaderEvent, HeaderPage};
pub use crate::results::ext::trace::LostEvents;

pub use crate::testbed::mount::TRACEFS;

/// What the machine offers, probed before tracing.
#[derive(Debug, Clone)]
pub struct Capabilities {
    pub root: bool,
    pub tracefs: Option<PathBuf>,
    pub mounted_by_us: bool,
    pub why_not: Option<String>,
    /// This run's share of tracefs with other runs (handed to the mount guard).
    pub share: Option<std::sync::Arc<crate::testbed::tracefs_share::TracefsShare>>,
}

/// Check root and tracefs; mount tracefs if it is not mounted (needs root).
pub fn probe() -> Capabilities {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let share = root.then(crate::testbed::tracefs_share::join).flatten();
    let caps = probe_mount(root);
    if let Some(s) = &share {
        s.shared();
    }
    Capabilities {
        share: share.map(std::sync::Arc::new),
        ..caps
    }
}

fn probe_mount(root: bool) -> Capabilities {
    let base = Path::new(TRACEFS);
    if base.join("instances").is_dir() {
        return Capabilities {
            root,
            tracefs: Some(base.to_path_buf()),
            mounted_by_us: false,
            why_not: if root { None } else { Some("not root".into()) },
            share: None,
        };
    }
    if !root {
        return Capabilities {
            root,
            tracefs: None,
            mounted_by_us: false,
            why_not: Some("not root: tracing needs root".into()),
            share: None,
        };
    }
    let r = std::process::Command::new("mount")
        .args(["-t", "tracefs", "nodev", TRACEFS])
        .status();
    match r {
        Ok(s) if s.success() && base.join("instances").is_dir() => Capabilities {
            root,
            tracefs: Some(base.to_path_buf()),
            mounted_by_us: true,
            why_not: None,
            share: None,
        },
        _ => Capabilities {
            root,
            tracefs: None,
            mounted_by_us: false,
            why_not: Some(format!("cannot mount tracefs at {TRACEFS}")),
            share: None,
        },
    }
}

/// One event to enable, with an optional filter expression.
#[derive(Debug, Clone)]
pub struct EventSpec {
    pub system: String,
    pub name: String,
    pub filter: Option<String>,
}

impl EventSpec {
    pub fn new(system: &str, name: &str, filter: Option<String>) -> Self {
        EventSpec {
            system: system.into(),
            name: name.into(),
            filter,
        }
    }
}

/// RAII guard of a private tracing instance.
pub struct Instance {
    pub dir: PathBuf,
    pub header_page: HeaderPage,
    pub header_event: HeaderEvent,
    pub formats: Vec<EventFormat>,
    pub cpus: Vec<usize>,
}

impl Instance {
    /// Create `instances/iolab-<pid>` with mono clock, the buffer size and the
    /// events enabled (tracing is left off until `start`).
    pub fn create(caps: &Capabilities, buffer_kb: u32, events: &[EventSpec]) -> Result<Instance> {
        let tracefs = caps
            .tracefs
            .clone()
            .ok_or_else(|| anyhow!("tracefs unavailable"))?;
        let dir = tracefs
            .join("instances")
            .join(format!("iolab-{}", std::process::id()));
        if dir.exists() {
            // A leftover of this same pid (a previous run in this process): reuse is unsafe.
            let _ = fs::remove_dir(&dir);
        }
        crate::testbed::create(crate::testbed::Resource::Path(dir.clone()), || {
            fs::create_dir(&dir)
                .with_context(|| format!("creating tracing instance {}", dir.display()))
        })?;
        // The guard exists from here on, so every error below removes the instance.
        let mut inst = Instance {
            dir,
            header_page: HeaderPage {
                timestamp_offset: 0,
                commit_offset: 8,
                commit_size: 8,
                data_offset: 16,
                data_size: 4080,
            },
            header_event: HeaderEvent::default(),
            formats: Vec::new(),
            cpus: Vec::new(),
        };
        inst.header_page = HeaderPage::parse(&read(&tracefs.join("events/header_page"))?)?;
        inst.header_event = HeaderEvent::parse(&read(&tracefs.join("events/header_event"))?)?;
        inst.cpus = online_cpus()?;
        inst.write("tracing_on", "0")?;
        inst.write("trace_clock", "mono")?;
        inst.write("buffer_size_kb", &buffer_kb.to_string())?;
        for ev in events {
            let edir = inst.dir.join("events").join(&ev.system).join(&ev.name);
            if !edir.is_dir() {
                bail!(
                    "tracepoint {}/{} does not exist on this kernel",
                    ev.system,
                    ev.name
                );
            }
            let text = read(&edir.join("format"))?;
            inst.formats.push(EventFormat::parse(&ev.system, &text)?);
            if let Some(f) = &ev.filter {
                fs::write(edir.join("filter"), f).with_context(|| {
                    format!("setting filter {f:?} on {}/{}", ev.system, ev.name)
                })?;
            }
            fs::write(edir.join("enable"), "1")
                .with_context(|| format!("enabling {}/{}", ev.system, ev.name))?;
        }
        Ok(inst)
    }

    fn write(&self, file: &str, val: &str) -> Result<()> {
        fs::write(self.dir.join(file), val)
            .with_context(|| format!("writing {val:?} to {}/{file}", self.dir.display()))
    }

    pub fn start(&self) -> Result<()> {
        self.write("tracing_on", "1")
    }

    pub fn stop(&self) -> Result<()> {
        self.write("tracing_on", "0")
    }

    /// Change the filter of an enabled event (e.g. once worker tids are known).
    pub fn set_filter(&self, system: &str, name: &str, filter: &str) -> Result<()> {
        let p = self
            .dir
            .join("events")
            .join(system)
            .join(name)
            .join("filter");
        fs::write(&p, filter)
            .with_context(|| format!("setting filter {filter:?} on {system}/{name}"))
    }

    pub fn trace_pipe_raw(&self, cpu: usize) -> PathBuf {
        self.dir.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"))
    }

    /// Events the kernel lost on every CPU (overruns, commit overruns, dropped).
    pub fn lost_events(&self) -> Result<LostEvents> {
        let mut lost = LostEvents::default();
        for &cpu in &self.cpus {
            let text = read(&self.dir.join(format!("per_cpu/cpu{cpu}/stats")))?;
            let s = TracefsCpuStats::parse(&text);
            lost.overrun += s.overrun;
            lost.commit_overrun += s.commit_overrun;
            lost.dropped += s.dropped;
            lost.entries += s.entries;
        }
        Ok(lost)
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = fs::write(self.dir.join("tracing_on"), "0");
        let _ = fs::write(self.dir.join("events/enable"), "0");
        // rmdir fails with EBUSY while a reader holds a file open: retry briefly.
        for _ in 0..50 {
            match fs::remove_dir(&self.dir) {
                Ok(()) => break,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
            }
        }
        crate::testbed::release_path(&self.dir);
    }
}

use crate::testbed::mount::MountGuard;

impl Capabilities {
    /// Hand the "mounted by us" duty to a guard that unmounts at the end.
    pub fn take_mount(&mut self) -> MountGuard {
        let ours = std::mem::take(&mut self.mounted_by_us);
        let share = self
            .share
            .take()
            .and_then(|s| std::sync::Arc::try_unwrap(s).ok());
        MountGuard::adopt_shared(ours.then(|| std::path::PathBuf::from(TRACEFS)), share)
    }
}

/// One `per_cpu/cpuN/stats` file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TracefsCpuStats {
    pub entries: u64,
    pub overrun: u64,
    pub commit_overrun: u64,
    pub dropped: u64,
    pub read: u64,
}

impl TracefsCpuStats {
    pub fn parse(text: &str) -> TracefsCpuStats {
        let mut s = TracefsCpuStats::default();
        for line in text.lines() {
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            let v: u64 = v.trim().parse().unwrap_or(0);
            match k.trim() {
                "entries" => s.entries = v,
                "overrun" => s.overrun = v,
                "commit overrun" => s.commit_overrun = v,
                "dropped events" => s.dropped = v,
                "read events" => s.read = v,
                _ => {}
            }
        }
        s
    }
}

/// Read a tracefs file with one large buffer: some tracefs files regenerate
/// their text on every read and return EOF after a short first read.
fn read(p: &Path) -> Result<String> {
    use std::io::Read;
    let mut f = fs::File::open(p).with_context(|| format!("opening {}", p.display()))?;
    let mut buf = vec![0u8; 256 << 10];
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(len * 2, 0);
        }
        let n = f
            .read(&mut buf[len..])
            .with_context(|| format!("reading {}", p.display()))?;
        if n == 0 {
            break;
        }
        len += n;
    }
    buf.truncate(len);
    String::from_utf8(buf).with_context(|| format!("{} is not text", p.display()))
}

/// Online CPUs from /sys/devices/system/cpu/online (e.g. "0-1").
pub fn online_cpus() -> Result<Vec<usize>> {
    let text = read(Path::new("/sys/devices/system/cpu/online"))?;
    parse_cpu_list(text.trim())
}

pub fn parse_cpu_list(s: &str) -> Result<Vec<usize>> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse()?, b.parse()?);
                out.extend(a..=b);
            }
            None => out.push(part.parse()?),
        }
    }
    Ok(out)
}

/// Remove `iolab-<pid>` instances whose process is gone (left by a process
/// killed with SIGKILL or aborted by a second Ctrl-C). Returns their names.
pub fn remove_stale(tracefs: &Path) -> Vec<String> {
    let mut removed = Vec::new();
    for name in iolab_instances(tracefs) {
        let Some(pid) = name
            .strip_prefix("iolab-")
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let dir = tracefs.join("instances").join(&name);
        let _ = fs::write(dir.join("tracing_on"), "0");
        if fs::remove_dir(&dir).is_ok() {
            removed.push(name);
        }
    }
    removed
}

/// Instances named `iolab-*` currently present (for tests and leak checks).
pub fn iolab_instances(tracefs: &Path) -> Vec<String> {
    fs::read_dir(tracefs.join("instances"))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("iolab-"))
                .collect()
        })
        .unwrap_or_default()
}
