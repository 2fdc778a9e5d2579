//! The timeline of a database run (what the NVMe vs SATA study drew
//! during each run): a sampler thread, started at the beginning of a
//! point's measured time and stopped at its end, reads every 100 ms for
//! the first 10 s and once a second after (a phase that lasts 10 s or more
//! is kept in whole seconds), on boundaries aligned to its start, the machine's CPU (/proc/stat), the
//! device under the data (/proc/diskstats), the server's CPU (its process
//! and descendants, `procgroup::GroupReader`) and the client's operation
//! counter, and keeps the differences as `TimelineSeries` columns. The two
//! proc files stay open and are re-read from offset 0 into one buffer, so
//! a sample allocates nothing beyond the columns' pushes. It stops within
//! 100 ms of `stop()` or of Ctrl-C, keeping the last partial second.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::server_stats::TimelineSeries;
use crate::measure::clock::mono_now_ns;
use crate::measure::diskstats::{parse_diskstats, DiskCounters};
use crate::measure::procgroup::GroupReader;
use crate::measure::procstat::CpuTicks;

const SECOND_NS: u64 = 1_000_000_000;
/// The first `FINE_SPAN_NS` are sampled every `FINE_NS`, so a phase of a
/// few seconds still draws a line (at 1 s, a 0.4 s phase was one dot); a
/// phase that lasts longer is re-binned to whole seconds at its end.
const FINE_NS: u64 = 100_000_000;
const FINE_SPAN_NS: u64 = 10 * SECOND_NS;
/// A last interval shorter than this is dropped (nothing to say in it).
const SHORTEST_NS: u64 = 50_000_000;

/// What a timeline samples.
pub struct TimelineSources {
    /// The /proc/diskstats name of the device under the data (see
    /// `measure::diskstats::device_of`); none: no disk columns.
    pub disk: Option<String>,
    /// The server's first process (its process group leader); none: no
    /// server columns.
    pub pgid: Option<u32>,
    /// Operations the client finished so far (bumped or published by the
    /// workload; read once a second).
    pub client_ops: Arc<AtomicU64>,
}

/// A running sampler; `stop` ends it and hands back the series.
pub struct Timeline {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<TimelineSeries>>,
}

impl Timeline {
    /// Take the first reading now (the series' time zero) and sample once
    /// a second from here on.
    pub fn start(src: TimelineSources) -> Timeline {
        let mut reader = Reader::new(src);
        let first = reader.read();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("iolab-timeline".into())
            .spawn(move || sample_loop(reader, first, &flag))
            .ok();
        Timeline { stop, handle }
    }

    /// Stop (a last reading closes the partial second) and return the series.
    pub fn stop(mut self) -> TimelineSeries {
        self.end().unwrap_or_default()
    }

    fn end(&mut self) -> Option<TimelineSeries> {
        let h = self.handle.take()?;
        self.stop.store(true, Ordering::Release);
        h.thread().unpark();
        h.join().ok()
    }
}

impl Drop for Timeline {
    fn drop(&mut self) {
        self.end();
    }
}

/// One reading of every source.
#[derive(Debug, Clone, Copy, Default)]
struct Reading {
    t_ns: u64,
    cpu: Option<CpuTicks>,
    disk: Option<DiskCounters>,
    /// (user, system) ticks of the server.
    server: Option<(u64, u64)>,
    ops: u64,
}

/// The open sources and the buffer they are read into.
struct Reader {
    stat: Option<File>,
    diskstats: Option<File>,
    group: Option<GroupReader>,
    ops: Arc<AtomicU64>,
    buf: String,
    series: TimelineSeries,
    hz: f64,
}

impl Reader {
    fn new(src: TimelineSources) -> Reader {
        // SAFETY: sysconf cannot fail for these names.
        let (cpus, hz) = unsafe {
            (
                libc::sysconf(libc::_SC_NPROCESSORS_ONLN).max(1) as usize,
                libc::sysconf(libc::_SC_CLK_TCK).max(1) as f64,
            )
        };
        Reader {
            stat: File::open("/proc/stat").ok(),
            diskstats: src
                .disk
                .as_ref()
                .and_then(|_| File::open("/proc/diskstats").ok()),
            group: src.pgid.map(GroupReader::new),
            ops: src.client_ops,
            buf: String::with_capacity(16 << 10),
            series: TimelineSeries {
                device: src.disk,
                cpus,
                ..Default::default()
            },
            hz,
        }
    }

    fn read(&mut self) -> Reading {
        let cpu = reread(&mut self.stat, &mut self.buf)
            .then(|| CpuTicks::parse(&self.buf))
            .flatten();
        let disk = match &self.series.device {
            Some(name) => reread(&mut self.diskstats, &mut self.buf)
                .then(|| parse_diskstats(&self.buf, name))
                .flatten(),
            None => None,
        };
        Reading {
            t_ns: mono_now_ns(),
            cpu,
            disk,
            server: self.group.as_mut().and_then(GroupReader::ticks),
            ops: self.ops.load(Ordering::Relaxed),
        }
    }
}

/// Read an open proc file again from its start into `buf`.
fn reread(file: &mut Option<File>, buf: &mut String) -> bool {
    let Some(f) = file else {
        return false;
    };
    buf.clear();
    f.seek(SeekFrom::Start(0)).is_ok() && f.read_to_string(buf).is_ok()
}

fn sample_loop(mut reader: Reader, first: Reading, stop: &AtomicBool) -> TimelineSeries {
    let t0 = first.t_ns;
    let mut prev = first;
    let mut due = t0 + FINE_NS;
    loop {
        let stopped = wait_until(due, stop);
        let cur = reader.read();
        if !stopped || cur.t_ns.saturating_sub(prev.t_ns) >= SHORTEST_NS.min(FINE_NS / 2) {
            push(&mut reader.series, t0, &prev, &cur, reader.hz);
        }
        if stopped {
            return finish(reader.series);
        }
        prev = cur;
        // After a stall, the next boundary still on the grid.
        let step = if cur.t_ns - t0 < FINE_SPAN_NS {
            FINE_NS
        } else {
            SECOND_NS
        };
        due = t0 + ((cur.t_ns - t0) / step + 1) * step;
    }
}

/// The series as kept: 100 ms intervals for a phase under 10 s, else
/// whole seconds (the first 10 s re-binned); its interval said.
fn finish(mut s: TimelineSeries) -> TimelineSeries {
    let end = s.t_s.last().zip(s.len_s.last()).map_or(0.0, |(t, l)| t + l);
    if end * 1e9 >= FINE_SPAN_NS as f64 {
        s = rebin_to_seconds(&s);
        s.interval_s = Some(1.0);
    } else {
        s.interval_s = Some(FINE_NS as f64 / 1e9);
    }
    s
}

/// Intervals that start in the same whole second merged into one: each
/// column's values weighted by their intervals' lengths.
fn rebin_to_seconds(s: &TimelineSeries) -> TimelineSeries {
    let mut groups: Vec<(f64, Vec<usize>)> = Vec::new();
    for (i, t) in s.t_s.iter().enumerate() {
        let sec = t.floor();
        match groups.last_mut() {
            Some((g, ix)) if *g == sec => ix.push(i),
            _ => groups.push((sec, vec![i])),
        }
    }
    let merge = |col: &[f64]| -> Vec<f64> {
        if col.is_empty() {
            return Vec::new();
        }
        groups
            .iter()
            .map(|(_, ix)| {
                let len: f64 = ix.iter().map(|&i| s.len_s[i]).sum();
                let sum: f64 = ix
                    .iter()
                    .map(|&i| col.get(i).copied().unwrap_or(0.0) * s.len_s[i])
                    .sum();
                round2(sum / len.max(1e-9))
            })
            .collect()
    };
    TimelineSeries {
        device: s.device.clone(),
        cpus: s.cpus,
        t_s: groups
            .iter()
            .map(|(g, ix)| round2(g.max(s.t_s[ix[0]])))
            .collect(),
        len_s: groups
            .iter()
            .map(|(_, ix)| round2(ix.iter().map(|&i| s.len_s[i]).sum()))
            .collect(),
        cpu_usr_pct: merge(&s.cpu_usr_pct),
        cpu_sys_pct: merge(&s.cpu_sys_pct),
        cpu_iowait_pct: merge(&s.cpu_iowait_pct),
        cpu_idle_pct: merge(&s.cpu_idle_pct),
        cpu_irq_pct: merge(&s.cpu_irq_pct),
        cpu_steal_pct: merge(&s.cpu_steal_pct),
        disk_read_mib_s: merge(&s.disk_read_mib_s),
        disk_write_mib_s: merge(&s.disk_write_mib_s),
        disk_read_iops: merge(&s.disk_read_iops),
        disk_write_iops: merge(&s.disk_write_iops),
        server_usr_pct: merge(&s.server_usr_pct),
        server_sys_pct: merge(&s.server_sys_pct),
        client_ops_s: merge(&s.client_ops_s),
        interval_s: s.interval_s,
    }
}

/// Sleep until `due`; true when stopped first (`stop()` or Ctrl-C).
fn wait_until(due: u64, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Acquire) || crate::interrupt::stop_requested() {
            return true;
        }
        let now = mono_now_ns();
        if now >= due {
            return false;
        }
        std::thread::park_timeout(Duration::from_nanos((due - now).min(100_000_000)));
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Append the interval from `a` to `b` to every column.
fn push(s: &mut TimelineSeries, t0: u64, a: &Reading, b: &Reading, hz: f64) {
    let len = b.t_ns.saturating_sub(a.t_ns).max(1) as f64 / 1e9;
    s.t_s.push(round2((a.t_ns - t0) as f64 / 1e9));
    s.len_s.push(round2(len));
    let cpu = match (&a.cpu, &b.cpu) {
        // Percent of the whole machine: shares of all CPUs' ticks.
        (Some(x), Some(y)) => y.shares_since(x),
        _ => Default::default(),
    };
    s.cpu_usr_pct.push(round2(cpu.usr_pct));
    s.cpu_sys_pct.push(round2(cpu.sys_pct));
    s.cpu_iowait_pct.push(round2(cpu.iowait_pct));
    s.cpu_idle_pct.push(round2(cpu.idle_pct));
    s.cpu_irq_pct.push(round2(cpu.irq_pct));
    s.cpu_steal_pct.push(round2(cpu.steal_pct));
    if s.device.is_some() {
        let (x, y) = (a.disk.unwrap_or_default(), b.disk.unwrap_or_default());
        let rate = |d: u64| round2(d as f64 / len);
        let mib = |sectors: u64| round2(sectors as f64 * 512.0 / 1048576.0 / len);
        let d = |f: fn(&DiskCounters) -> u64| f(&y).saturating_sub(f(&x));
        s.disk_read_mib_s.push(mib(d(|c| c.read_sectors)));
        s.disk_write_mib_s.push(mib(d(|c| c.write_sectors)));
        s.disk_read_iops.push(rate(d(|c| c.reads)));
        s.disk_write_iops.push(rate(d(|c| c.writes)));
    }
    if let (Some((u0, s0)), Some((u1, s1))) = (a.server, b.server) {
        let pct = |ticks: u64| round2(ticks as f64 / hz / len / s.cpus as f64 * 100.0);
        // Columns stay aligned: a server found late has zeros before.
        while s.server_usr_pct.len() + 1 < s.t_s.len() {
            s.server_usr_pct.push(0.0);
            s.server_sys_pct.push(0.0);
        }
        s.server_usr_pct.push(pct(u1.saturating_sub(u0)));
        s.server_sys_pct.push(pct(s1.saturating_sub(s0)));
    } else if !s.server_usr_pct.is_empty() {
        s.server_usr_pct.push(0.0);
        s.server_sys_pct.push(0.0);
    }
    s.client_ops_s
        .push(round2(b.ops.saturating_sub(a.ops) as f64 / len));
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT_A: &str =
        "cpu  1000 0 500 8000 400 50 50 0 0 0\ncpu0 500 0 250 4000 200 25 25 0 0 0\n";
    const STAT_B: &str =
        "cpu  1100 0 550 8300 450 50 50 0 0 0\ncpu0 550 0 275 4150 225 25 25 0 0 0\n";
    const DISK_A: &str = "   8       0 sda 5 0 40 1 6 0 48 2 0 3 3 0 0 0 0 0 0\n 254       0 vda 1000 10 80000 500 2000 20 160000 900 0 1200 1400 0 0 0 0 0 0\n";
    const DISK_B: &str = "   8       0 sda 5 0 40 1 6 0 48 2 0 3 3 0 0 0 0 0 0\n 254       0 vda 1100 10 82048 520 2400 20 164096 950 0 1300 1500 0 0 0 0 0 0\n";

    fn reading(t_ns: u64, stat: &str, disk: &str, server: Option<(u64, u64)>, ops: u64) -> Reading {
        Reading {
            t_ns,
            cpu: CpuTicks::parse(stat),
            disk: parse_diskstats(disk, "vda"),
            server,
            ops,
        }
    }

    #[test]
    fn an_interval_of_synthetic_proc_text_becomes_one_row() {
        let mut s = TimelineSeries {
            device: Some("vda".into()),
            cpus: 2,
            ..Default::default()
        };
        let t0 = 5 * SECOND_NS;
        let a = reading(t0, STAT_A, DISK_A, Some((300, 100)), 1_000);
        // Two seconds later: 500 ticks in all (user 100, system 50, idle
        // 300, iowait 50); 2048 + 4096 sectors; 100 reads, 400 writes;
        // the server 100 + 20 ticks at 100 Hz; 700 operations.
        let b = reading(t0 + 2 * SECOND_NS, STAT_B, DISK_B, Some((400, 120)), 1_700);
        push(&mut s, t0, &a, &b, 100.0);
        assert_eq!((s.t_s[0], s.len_s[0]), (0.0, 2.0));
        assert_eq!(s.cpu_usr_pct, [20.0]);
        assert_eq!(s.cpu_sys_pct, [10.0]);
        assert_eq!(s.cpu_idle_pct, [60.0]);
        assert_eq!(s.cpu_iowait_pct, [10.0]);
        assert_eq!((s.cpu_irq_pct[0], s.cpu_steal_pct[0]), (0.0, 0.0));
        assert_eq!(s.disk_read_mib_s, [0.5]);
        assert_eq!(s.disk_write_mib_s, [1.0]);
        assert_eq!((s.disk_read_iops[0], s.disk_write_iops[0]), (50.0, 200.0));
        // 100 ticks = 1 CPU-second over 2 s on 2 CPUs: 25% of the machine.
        assert_eq!((s.server_usr_pct[0], s.server_sys_pct[0]), (25.0, 5.0));
        assert_eq!(s.client_ops_s, [350.0]);
        // The next second starts where this one ended.
        let c = reading(t0 + 3 * SECOND_NS, STAT_B, DISK_B, None, 1_700);
        push(&mut s, t0, &b, &c, 100.0);
        assert_eq!(s.t_s, [0.0, 2.0]);
        assert_eq!(s.server_usr_pct, [25.0, 0.0], "columns stay aligned");
        assert_eq!(s.disk_write_iops[1], 0.0);
    }

    #[test]
    fn the_cpu_shares_of_a_row_add_to_100_with_steal_and_irq() {
        let mut s = TimelineSeries {
            cpus: 2,
            ..Default::default()
        };
        // 400 ticks: user 100, system 40, irq 20 + softirq 20, iowait 20,
        // idle 120, steal 80 (a busy VM host).
        let a = reading(0, "cpu  1000 0 500 8000 400 50 50 100 0 0\n", "", None, 0);
        let b = reading(
            SECOND_NS,
            "cpu  1100 0 540 8120 420 70 70 180 0 0\n",
            "",
            None,
            0,
        );
        push(&mut s, 0, &a, &b, 100.0);
        assert_eq!(s.cpu_usr_pct, [25.0]);
        assert_eq!(s.cpu_sys_pct, [10.0]);
        assert_eq!(s.cpu_irq_pct, [10.0]);
        assert_eq!(s.cpu_iowait_pct, [5.0]);
        assert_eq!(s.cpu_idle_pct, [30.0]);
        assert_eq!(s.cpu_steal_pct, [20.0]);
    }

    #[test]
    fn without_disk_or_server_their_columns_stay_empty() {
        let mut s = TimelineSeries {
            cpus: 1,
            ..Default::default()
        };
        let a = reading(0, STAT_A, "", None, 0);
        let b = reading(SECOND_NS, STAT_B, "", None, 10);
        push(&mut s, 0, &a, &b, 100.0);
        assert_eq!(s.len(), 1);
        assert!(s.disk_read_mib_s.is_empty() && s.server_usr_pct.is_empty());
        let json = serde_json::to_value(&s).unwrap();
        assert!(json.get("disk_read_mib_s").is_none(), "{json}");
        assert_eq!(serde_json::from_value::<TimelineSeries>(json).unwrap(), s);
    }

    #[test]
    fn a_live_timeline_samples_a_short_phase_finely_and_stops_promptly() {
        let ops = Arc::new(AtomicU64::new(0));
        let disk = {
            let text = std::fs::read_to_string("/proc/diskstats").unwrap();
            text.lines()
                .next()
                .and_then(|l| l.split_whitespace().nth(2))
                .map(str::to_string)
        };
        let me = std::process::id();
        let t = Timeline::start(TimelineSources {
            disk: disk.clone(),
            pgid: Some(me),
            client_ops: ops.clone(),
        });
        std::thread::sleep(Duration::from_millis(1300));
        ops.store(260, Ordering::Relaxed);
        let asked = std::time::Instant::now();
        let s = t.stop();
        // A loaded machine may delay the sampler: bounds, not speeds.
        assert!(
            asked.elapsed() < Duration::from_secs(30),
            "the sampler stopped"
        );
        // 100 ms intervals for a phase this short (a loaded machine may
        // merge some: at least 3, so a chart draws a line).
        assert!((3..=14).contains(&s.len()), "{s:?}");
        assert_eq!(s.interval_s, Some(0.1));
        assert_eq!(s.t_s[0], 0.0);
        assert!(s.span_s() >= 1.0, "{s:?}");
        assert_eq!(s.client_ops_s.len(), s.len());
        // Every share of the machine's time is there, busy or idle (on a
        // VM, steal is real time too): they add up to 100.
        for i in 0..s.len() {
            let total = s.cpu_usr_pct[i]
                + s.cpu_sys_pct[i]
                + s.cpu_irq_pct[i]
                + s.cpu_iowait_pct[i]
                + s.cpu_idle_pct[i]
                + s.cpu_steal_pct[i];
            assert!((total - 100.0).abs() < 0.5, "{total}: {s:?}");
        }
        assert_eq!(s.server_usr_pct.len(), s.len());
        assert_eq!(
            s.disk_write_iops.len(),
            if disk.is_some() { s.len() } else { 0 }
        );
        assert_eq!(s.device, disk);
    }

    /// A phase of 10 s or more is kept in whole seconds: its first 10 s of
    /// 100 ms intervals merge, each column weighted by interval length.
    #[test]
    fn a_long_phase_is_rebinned_to_whole_seconds() {
        let mut s = TimelineSeries {
            cpus: 2,
            ..TimelineSeries::default()
        };
        for i in 0..100 {
            s.t_s.push(round2(i as f64 * 0.1));
            s.len_s.push(0.1);
            s.cpu_usr_pct.push(if i % 10 < 5 { 10.0 } else { 30.0 });
            s.client_ops_s.push(100.0);
        }
        for k in 10..13 {
            s.t_s.push(k as f64);
            s.len_s.push(1.0);
            s.cpu_usr_pct.push(50.0);
            s.client_ops_s.push(200.0);
        }
        let s = finish(s);
        assert_eq!(s.interval_s, Some(1.0));
        assert_eq!(s.len(), 13);
        assert_eq!(s.t_s[..3], [0.0, 1.0, 2.0]);
        assert_eq!(s.len_s[0], 1.0);
        assert_eq!(s.cpu_usr_pct[0], 20.0);
        assert_eq!(s.cpu_usr_pct[12], 50.0);
        assert_eq!(s.client_ops_s[5], 100.0);
        let short = finish(TimelineSeries {
            t_s: vec![0.0, 0.1, 0.2],
            len_s: vec![0.1, 0.1, 0.1],
            client_ops_s: vec![1.0, 2.0, 3.0],
            ..TimelineSeries::default()
        });
        assert_eq!((short.len(), short.interval_s), (3, Some(0.1)));
    }
}
