//! Counters of the other side of a remote job, sampled by the job's main
//! thread at the same instants as its own CPU: the CPU time of the target's
//! processes (utime and stime of every thread, from /proc/PID/stat, in
//! clock ticks; the nanoseconds each thread ran, from
//! /proc/PID/task/TID/schedstat, for CPU per I/O) and the
//! bytes and packets of the network interface the job's traffic crosses
//! (from /proc/thread-self/net/dev, so the interface is looked up in the
//! network namespace of the thread that samples, the initiator's).

use serde::{Deserialize, Serialize};

/// What to sample besides iolab itself.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PeerSampling {
    /// (role, pid): the target's server processes.
    pub processes: Vec<(String, u32)>,
    /// The initiator's end of the link ("lo" on loopback).
    pub interface: Option<String>,
}

/// One process's CPU over a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerCpu {
    pub role: String,
    pub pid: u32,
    /// Percent of one CPU.
    pub usr_pct: f64,
    pub sys_pct: f64,
    /// CPU microseconds (user + system) per I/O of the job: from the
    /// nanoseconds the scheduler counted when no thread ended between the
    /// samples (a clock tick, 10 ms, is coarser than a short point's CPU),
    /// else from the ticks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub us_per_io: Option<f64>,
}

/// Bytes and packets through the link over a job, seen from the initiator.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NetStats {
    pub interface: String,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub rx_packets: u64,
    pub tx_packets: u64,
}

/// The peers' counters over a job.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PeerStats {
    pub processes: Vec<PeerCpu>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net: Option<NetStats>,
    /// Second by second over the measured phase.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<PeerSecond>,
}

/// One second of the peers' counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PeerSecond {
    /// End of the second, seconds since the measured phase began.
    pub t_s: f64,
    /// CPU of all the target's processes, percent of one CPU.
    pub target_cpu_pct: f64,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub rx_packets: u64,
    pub tx_packets: u64,
}

/// Builds the per-second series from one sample to the next.
pub struct PeerSeries {
    last: PeerSnapshot,
    last_t: std::time::Duration,
    out: Vec<PeerSecond>,
}

impl PeerSeries {
    pub fn starting_at(first: PeerSnapshot) -> PeerSeries {
        PeerSeries {
            last: first,
            last_t: std::time::Duration::ZERO,
            out: Vec::new(),
        }
    }

    /// Sample now (`t` since the measured phase began) and keep the delta.
    pub fn tick(&mut self, sampling: &PeerSampling, t: std::time::Duration) {
        let now = sampling.sample_ticks();
        let wall = (t - self.last_t).as_nanos() as u64;
        let d = sampling.between(&self.last, &now, wall, 0);
        let net = d.net.unwrap_or_default();
        self.out.push(PeerSecond {
            t_s: t.as_secs_f64(),
            target_cpu_pct: d.processes.iter().map(|c| c.usr_pct + c.sys_pct).sum(),
            rx_bytes: net.rx_bytes,
            tx_bytes: net.tx_bytes,
            rx_packets: net.rx_packets,
            tx_packets: net.tx_packets,
        });
        self.last = now;
        self.last_t = t;
    }

    pub fn finish(self) -> Vec<PeerSecond> {
        self.out
    }
}

/// One sample of every peer counter.
#[derive(Debug, Clone, Default)]
pub struct PeerSnapshot {
    /// (utime, stime) ticks per process, None once a process is gone.
    cpu: Vec<Option<(u64, u64)>>,
    /// (thread id, nanoseconds on a CPU) of every thread, per process.
    run_ns: Vec<Vec<(u32, u64)>>,
    net: Option<NetStats>,
}

impl PeerSampling {
    /// Every counter, the threads' run time included (a point's ends).
    pub fn sample(&self) -> PeerSnapshot {
        PeerSnapshot {
            run_ns: self
                .processes
                .iter()
                .map(|(_, pid)| thread_run_ns(*pid))
                .collect(),
            ..self.sample_ticks()
        }
    }

    /// The counters without the threads' run time: the per-second series
    /// has no CPU per I/O, so it reads no schedstat file.
    fn sample_ticks(&self) -> PeerSnapshot {
        PeerSnapshot {
            cpu: self
                .processes
                .iter()
                .map(|(_, pid)| process_ticks(*pid))
                .collect(),
            run_ns: Vec::new(),
            net: self.interface.as_deref().and_then(net_counters),
        }
    }

    /// The counters between two samples `wall_ns` apart, for `ops` I/Os.
    pub fn between(&self, a: &PeerSnapshot, b: &PeerSnapshot, wall_ns: u64, ops: u64) -> PeerStats {
        let hz = clock_ticks_per_second();
        let secs = wall_ns as f64 / 1e9;
        let processes = self
            .processes
            .iter()
            .enumerate()
            .filter_map(|(i, (role, pid))| {
                let ((u0, s0), (u1, s1)) = ((*a.cpu.get(i)?)?, (*b.cpu.get(i)?)?);
                let (usr, sys) = ((u1 - u0) as f64 / hz, (s1 - s0) as f64 / hz);
                let ran_s = || {
                    let ns = ran_between(a.run_ns.get(i)?, b.run_ns.get(i)?)?;
                    Some(ns as f64 / 1e9)
                };
                Some(PeerCpu {
                    role: role.clone(),
                    pid: *pid,
                    usr_pct: 100.0 * usr / secs.max(1e-9),
                    sys_pct: 100.0 * sys / secs.max(1e-9),
                    us_per_io: (ops > 0).then(|| ran_s().unwrap_or(usr + sys) * 1e6 / ops as f64),
                })
            })
            .collect();
        let net = match (&a.net, &b.net) {
            (Some(x), Some(y)) => Some(NetStats {
                interface: x.interface.clone(),
                rx_bytes: y.rx_bytes.saturating_sub(x.rx_bytes),
                tx_bytes: y.tx_bytes.saturating_sub(x.tx_bytes),
                rx_packets: y.rx_packets.saturating_sub(x.rx_packets),
                tx_packets: y.tx_packets.saturating_sub(x.tx_packets),
            }),
            _ => None,
        };
        PeerStats {
            processes,
            net,
            series: Vec::new(),
        }
    }
}

fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// utime and stime (ticks) of every thread of `pid`.
pub fn process_ticks(pid: u32) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat_times(&text)
}

/// (thread id, nanoseconds on a CPU) of every thread of `pid`, by thread
/// id; empty when the process is gone or the kernel keeps no schedstat.
pub fn thread_run_ns(pid: u32) -> Vec<(u32, u64)> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut v: Vec<(u32, u64)> = tasks
        .flatten()
        .filter_map(|t| {
            let tid = t.file_name().to_str()?.parse().ok()?;
            let text = std::fs::read_to_string(t.path().join("schedstat")).ok()?;
            Some((tid, text.split_whitespace().next()?.parse().ok()?))
        })
        .collect();
    v.sort_unstable();
    v
}

/// Nanoseconds the threads ran between two samples (each sorted by thread
/// id): a thread that began meanwhile counts whole. `None` when a thread
/// ended meanwhile (its last run is lost with it) or nothing was read.
pub fn ran_between(a: &[(u32, u64)], b: &[(u32, u64)]) -> Option<u64> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let mut sum = 0u64;
    let mut before = a.iter().peekable();
    for &(tid, ns) in b {
        if before.next_if(|(t, _)| *t < tid).is_some() {
            return None; // a thread of the first sample ended
        }
        match before.next_if(|(t, _)| *t == tid) {
            Some(&(_, was)) => sum += ns.saturating_sub(was),
            None => sum += ns,
        }
    }
    before.peek().is_none().then_some(sum)
}

/// Fields 14 and 15 of /proc/PID/stat (after the command, which may hold
/// spaces and parentheses, so the fields are counted from its last ')').
pub fn parse_stat_times(text: &str) -> Option<(u64, u64)> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state).
    Some((f.get(11)?.parse().ok()?, f.get(12)?.parse().ok()?))
}

fn net_counters(iface: &str) -> Option<NetStats> {
    let text = std::fs::read_to_string("/proc/thread-self/net/dev").ok()?;
    parse_net_dev(&text, iface)
}

/// The interface's line of /proc/net/dev: receive bytes and packets are
/// the first two numbers, transmit bytes and packets the ninth and tenth.
pub fn parse_net_dev(text: &str, iface: &str) -> Option<NetStats> {
    let line = text
        .lines()
        .find(|l| l.split(':').next().map(str::trim) == Some(iface))?;
    let v: Vec<u64> = line
        .split_once(':')?
        .1
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    Some(NetStats {
        interface: iface.to_string(),
        rx_bytes: *v.first()?,
        rx_packets: *v.get(1)?,
        tx_bytes: *v.get(8)?,
        tx_packets: *v.get(9)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_times_survive_odd_command_names() {
        let line =
            "1234 (a (b) c) S 1 1234 1234 0 -1 4194560 100 0 0 0 37 11 0 0 20 0 3 0 5555 0 0";
        assert_eq!(parse_stat_times(line), Some((37, 11)));
        let me = std::process::id();
        assert!(process_ticks(me).is_some());
        assert_eq!(process_ticks(u32::MAX), None);
    }

    #[test]
    fn run_time_between_samples_counts_new_threads_and_gives_up_on_ended_ones() {
        assert_eq!(
            ran_between(&[(10, 100), (11, 50)], &[(10, 130), (11, 55)]),
            Some(35)
        );
        // Thread 12 began after the first sample: all its time is inside.
        assert_eq!(ran_between(&[(10, 100)], &[(10, 130), (12, 7)]), Some(37));
        // Thread 11 ended: its last run is unknown.
        assert_eq!(ran_between(&[(10, 100), (11, 50)], &[(10, 130)]), None);
        assert_eq!(ran_between(&[(9, 1), (10, 100)], &[(10, 130)]), None);
        assert_eq!(ran_between(&[], &[(10, 130)]), None);
        let me = thread_run_ns(std::process::id());
        assert!(!me.is_empty() && me.iter().any(|&(_, ns)| ns > 0));
        assert!(thread_run_ns(u32::MAX).is_empty());
    }

    #[test]
    fn net_dev_lines_are_read_by_interface() {
        let text = "Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:  1000      10    0    0    0     0          0         0     2000      20    0    0    0     0       0          0
veth-i: 77 7 0 0 0 0 0 0 88 8 0 0 0 0 0 0
";
        let lo = parse_net_dev(text, "lo").unwrap();
        assert_eq!(
            (lo.rx_bytes, lo.rx_packets, lo.tx_bytes, lo.tx_packets),
            (1000, 10, 2000, 20)
        );
        let v = parse_net_dev(text, "veth-i").unwrap();
        assert_eq!((v.rx_bytes, v.tx_packets), (77, 8));
        assert_eq!(parse_net_dev(text, "eth9"), None);
        assert!(
            net_counters("lo").is_some(),
            "this thread's namespace has lo"
        );
    }
}
