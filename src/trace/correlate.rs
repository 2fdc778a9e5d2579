//! Request correlation: block events become per-bio timelines (Q, G, I, M, D,
//! C; splits, merges and requeues handled) matched by (dev, sector) while in
//! flight, never by pid, since completions run on any CPU in any task. Each
//! user-space request (the runner's stamps) is then joined to its bios by
//! sector and time window, to its syscalls by thread id, and to its io_uring
//! completion through `user_data`.

use std::collections::{BTreeMap, HashMap};

use super::events::{Event, Kind};
pub use crate::results::ext::trace::BlockStats;

/// The life of one bio through the block layer (times in ns, CLOCK_MONOTONIC).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BioTimeline {
    pub dev: u32,
    pub sector: u64,
    pub nr_sector: u32,
    pub write: bool,
    pub q: u64,
    pub q_pid: i32,
    pub q_cpu: u16,
    pub g: Option<u64>,
    pub i: Option<u64>,
    /// Merged into another request (back or front merge) at this time.
    pub m: Option<u64>,
    pub d: Option<u64>,
    pub c: Option<u64>,
    pub c_cpu: Option<u16>,
    pub requeues: u32,
    /// Part of a split bio.
    pub split: bool,
    /// io_uring submission this bio came from: (ring, user_data).
    pub uring: Option<(u64, u64)>,
}

#[derive(Debug, Default)]
struct Rq {
    dev: u32,
    sector: u64,
    nr: u64,
    g: Option<u64>,
    i: Option<u64>,
    d: Option<u64>,
    requeues: u32,
    bios: Vec<usize>,
}

/// Build bio timelines from events sorted by timestamp.
pub fn block_timelines(events: &[Event]) -> (Vec<BioTimeline>, BlockStats) {
    let mut bios: Vec<BioTimeline> = Vec::new();
    let mut rqs: Vec<Rq> = Vec::new();
    // Bios queued but not yet in a request, by (dev, sector).
    let mut pending: HashMap<(u32, u64), usize> = HashMap::new();
    // Requests in flight by (dev, start sector), and by (dev, end sector) for back merges.
    let mut by_start: HashMap<(u32, u64), usize> = HashMap::new();
    let mut by_end: HashMap<(u32, u64), usize> = HashMap::new();
    // Last io_uring submission per task, consumed by that task's next Q.
    let mut uring_sub: HashMap<i32, (u64, u64)> = HashMap::new();
    let mut st = BlockStats::default();

    for e in events {
        let key = (e.dev, e.a);
        match e.kind {
            Kind::UringSubmit => {
                uring_sub.insert(e.pid, (e.c, e.a));
            }
            Kind::Queue => {
                bios.push(BioTimeline {
                    dev: e.dev,
                    sector: e.a,
                    nr_sector: e.b as u32,
                    write: e.is_write(),
                    q: e.ts,
                    q_pid: e.pid,
                    q_cpu: e.cpu,
                    uring: uring_sub.remove(&e.pid),
                    ..Default::default()
                });
                pending.insert(key, bios.len() - 1);
                st.bios += 1;
            }
            Kind::Split => {
                // The bio at `sector` keeps its head; the rest continues at new_sector.
                if let Some(&b) = pending.get(&key) {
                    let new_sector = e.b as u64;
                    let mut tail = bios[b].clone();
                    let head_len = new_sector.saturating_sub(bios[b].sector) as u32;
                    tail.sector = new_sector;
                    tail.nr_sector = bios[b].nr_sector.saturating_sub(head_len);
                    tail.split = true;
                    bios[b].nr_sector = head_len;
                    bios[b].split = true;
                    bios.push(tail);
                    pending.insert((e.dev, new_sector), bios.len() - 1);
                    st.split += 1;
                } else {
                    st.orphan_events += 1;
                }
            }
            Kind::GetRq => match pending.remove(&key) {
                Some(b) => {
                    bios[b].g = Some(e.ts);
                    let nr = bios[b].nr_sector as u64;
                    rqs.push(Rq {
                        dev: e.dev,
                        sector: e.a,
                        nr,
                        g: Some(e.ts),
                        bios: vec![b],
                        ..Default::default()
                    });
                    let r = rqs.len() - 1;
                    by_start.insert(key, r);
                    by_end.insert((e.dev, e.a + nr), r);
                }
                None => st.orphan_events += 1,
            },
            Kind::BackMerge | Kind::FrontMerge => {
                let Some(b) = pending.remove(&key) else {
                    st.orphan_events += 1;
                    continue;
                };
                bios[b].m = Some(e.ts);
                st.merged += 1;
                let nr = e.b as u64;
                let target = if e.kind == Kind::BackMerge {
                    by_end.remove(&(e.dev, e.a))
                } else {
                    by_start.remove(&(e.dev, e.a + nr))
                };
                match target {
                    Some(r) => {
                        let rq = &mut rqs[r];
                        if e.kind == Kind::BackMerge {
                            rq.nr += nr;
                        } else {
                            by_start.remove(&(rq.dev, rq.sector));
                            rq.sector = e.a;
                            rq.nr += nr;
                            by_end.remove(&(rq.dev, rq.sector + rq.nr));
                        }
                        rq.bios.push(b);
                        bios[b].g = None;
                        by_start.insert((rq.dev, rq.sector), r);
                        by_end.insert((rq.dev, rq.sector + rq.nr), r);
                    }
                    None => {
                        // Merged into a request whose start we never saw: the bio
                        // keeps its Q and M only.
                        st.orphan_events += 1;
                    }
                }
            }
            Kind::Insert | Kind::Issue | Kind::Requeue | Kind::Complete => {
                let Some(&r) = by_start.get(&key) else {
                    st.orphan_events += 1;
                    continue;
                };
                let rq = &mut rqs[r];
                match e.kind {
                    Kind::Insert => rq.i = Some(e.ts),
                    Kind::Issue => rq.d = Some(e.ts),
                    Kind::Requeue => {
                        rq.requeues += 1;
                        rq.d = None;
                        st.requeued += 1;
                    }
                    _ => {
                        by_start.remove(&key);
                        by_end.remove(&(rq.dev, rq.sector + rq.nr));
                        for &b in &rq.bios {
                            let bio = &mut bios[b];
                            if bio.m.is_none() {
                                bio.g = rq.g;
                                bio.i = rq.i;
                            }
                            bio.d = rq.d;
                            bio.c = Some(e.ts);
                            bio.c_cpu = Some(e.cpu);
                            bio.requeues = rq.requeues;
                        }
                    }
                }
            }
            _ => {}
        }
    }
    st.incomplete = bios.iter().filter(|b| b.c.is_none()).count() as u64;
    (bios, st)
}

/// User-space stamps of one request, from the runner's per-request log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct UserStamp {
    pub tid: i32,
    pub write: bool,
    pub offset: u64,
    pub len: u32,
    /// Device sector the offset maps to (file extent map), if known.
    pub sector: Option<u64>,
    pub prepare: u64,
    pub submitted: u64,
    pub done: u64,
}

/// The edges of one request's timeline, in order. Any may be missing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestTimeline {
    /// User prepare stamp.
    pub p: u64,
    /// Entry of the submitting syscall.
    pub e: Option<u64>,
    pub q: Option<u64>,
    pub g: Option<u64>,
    pub i: Option<u64>,
    pub m: Option<u64>,
    pub d: Option<u64>,
    /// Device interrupt (last handler entry between D and C).
    pub irq: Option<u64>,
    pub c: Option<u64>,
    /// Completion visible to the process: io_uring CQE posted, or the reaping syscall's exit.
    pub x: Option<u64>,
    /// User completion-seen stamp.
    pub u: u64,
    pub requeues: u32,
    pub merged: bool,
    pub split: bool,
    pub cross_cpu: bool,
}

/// Syscall numbers that submit I/O (their entry is the kernel-submission edge).
pub fn submit_syscalls() -> Vec<i64> {
    vec![
        libc::SYS_pread64,
        libc::SYS_pwrite64,
        libc::SYS_preadv,
        libc::SYS_pwritev,
        libc::SYS_preadv2,
        libc::SYS_pwritev2,
        libc::SYS_read,
        libc::SYS_write,
        libc::SYS_io_submit,
        libc::SYS_io_uring_enter,
        libc::SYS_fsync,
        libc::SYS_fdatasync,
    ]
}

/// Syscall numbers whose exit hands completions to user space.
pub fn reap_syscalls() -> Vec<i64> {
    let mut v = submit_syscalls();
    v.retain(|&n| n != libc::SYS_io_submit);
    v.push(libc::SYS_io_getevents);
    v
}

/// Join statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct JoinStats {
    pub requests: u64,
    pub with_block_io: u64,
    pub without_block_io: u64,
}

/// Everything needed to join user requests to kernel events.
pub struct Joiner {
    bios: Vec<BioTimeline>,
    /// (dev-less) sector -> bio indices ordered by Q time.
    by_sector: BTreeMap<(u64, u64), usize>,
    sys_enter: HashMap<i32, Vec<(u64, i64)>>,
    sys_exit: HashMap<i32, Vec<(u64, i64)>>,
    irqs: Vec<u64>,
    uring_done: HashMap<(u64, u64), Vec<u64>>,
    submit_nrs: Vec<i64>,
    reap_nrs: Vec<i64>,
}

impl Joiner {
    /// `events` sorted by time; `dev` the traced device (kernel dev_t).
    pub fn new(events: &[Event], bios: Vec<BioTimeline>, dev: u32) -> Joiner {
        let mut by_sector = BTreeMap::new();
        for (i, b) in bios.iter().enumerate() {
            if b.dev == dev {
                by_sector.insert((b.sector, b.q), i);
            }
        }
        let mut sys_enter: HashMap<i32, Vec<(u64, i64)>> = HashMap::new();
        let mut sys_exit: HashMap<i32, Vec<(u64, i64)>> = HashMap::new();
        let mut irqs = Vec::new();
        let mut uring_done: HashMap<(u64, u64), Vec<u64>> = HashMap::new();
        for e in events {
            match e.kind {
                Kind::SysEnter => sys_enter.entry(e.pid).or_default().push((e.ts, e.a as i64)),
                Kind::SysExit => sys_exit.entry(e.pid).or_default().push((e.ts, e.a as i64)),
                Kind::Irq => irqs.push(e.ts),
                Kind::UringComplete => uring_done.entry((e.c, e.a)).or_default().push(e.ts),
                _ => {}
            }
        }
        Joiner {
            bios,
            by_sector,
            sys_enter,
            sys_exit,
            irqs,
            uring_done,
            submit_nrs: submit_syscalls(),
            reap_nrs: reap_syscalls(),
        }
    }

    pub fn bios(&self) -> &[BioTimeline] {
        &self.bios
    }

    /// Build the timeline of one user request.
    pub fn join(&self, u: &UserStamp) -> RequestTimeline {
        let mut t = RequestTimeline {
            p: u.prepare,
            u: u.done,
            ..Default::default()
        };
        let first = u.sector.unwrap_or(u.offset / 512);
        let end = first + (u64::from(u.len) / 512).max(1);
        // Bios of this request: sector in range, queued inside the request's window.
        let mut head: Option<&BioTimeline> = None;
        let mut last_c: Option<(u64, u16)> = None;
        // One bio per sector: when two requests hit the same sector while in
        // flight, keep the latest-queued bio that completed before this
        // request was seen complete.
        let mut picked: Vec<&BioTimeline> = Vec::new();
        for (&(sector, q), &bi) in self.by_sector.range((first, u.prepare)..(end, 0)) {
            if q < u.prepare || q > u.done {
                continue;
            }
            let b = &self.bios[bi];
            if b.write != u.write || b.c.is_some_and(|c| c > u.done) {
                continue;
            }
            match picked.last_mut() {
                Some(last) if last.sector == sector => *last = b,
                _ => picked.push(b),
            }
        }
        for b in picked {
            if head.is_none_or(|h| b.q < h.q) {
                head = Some(b);
            }
            if let Some(c) = b.c {
                if last_c.is_none_or(|(lc, _)| c > lc) {
                    last_c = Some((c, b.c_cpu.unwrap_or(0)));
                }
            }
            t.split |= b.split;
        }
        if let Some(h) = head {
            t.q = Some(h.q);
            t.g = h.g;
            t.i = h.i;
            t.m = h.m;
            t.d = h.d;
            t.c = last_c.map(|c| c.0);
            t.requeues = h.requeues;
            t.merged = h.m.is_some();
            t.cross_cpu = last_c.is_some_and(|(_, cpu)| cpu != h.q_cpu);
            if let (Some(d), Some(c)) = (t.d, t.c) {
                // Last device interrupt in [D, C].
                let k = self.irqs.partition_point(|&x| x <= c);
                if k > 0 && self.irqs[k - 1] >= d {
                    t.irq = Some(self.irqs[k - 1]);
                }
            }
            // The completion edge visible to the process.
            if let Some(c) = t.c {
                if let Some((ring, ud)) = h.uring {
                    if let Some(v) = self.uring_done.get(&(ring, ud)) {
                        let k = v.partition_point(|&x| x < c);
                        if k < v.len() && v[k] <= u.done {
                            t.x = Some(v[k]);
                        }
                    }
                }
                if t.x.is_none() {
                    t.x = first_in(self.sys_exit.get(&u.tid), c, u.done, &self.reap_nrs);
                }
            }
        }
        // Entry of the submitting syscall: the last one on this thread before Q
        // (or before the completion stamp when no block I/O happened).
        // Only when this thread queued the bio itself (not an SQPOLL or io-wq
        // thread, whose submission no syscall of this thread marks).
        let own = head.is_none_or(|h| h.q_pid == u.tid);
        let until = t.q.unwrap_or(u.done);
        if own {
            t.e = last_in(
                self.sys_enter.get(&u.tid),
                u.prepare,
                until,
                &self.submit_nrs,
            );
        }
        if t.q.is_none() {
            t.x = last_in(self.sys_exit.get(&u.tid), u.prepare, u.done, &self.reap_nrs);
        }
        t
    }
}

fn first_in(v: Option<&Vec<(u64, i64)>>, from: u64, to: u64, nrs: &[i64]) -> Option<u64> {
    let v = v?;
    let k = v.partition_point(|&(ts, _)| ts < from);
    v[k..]
        .iter()
        .take_while(|&&(ts, _)| ts <= to)
        .find(|(_, nr)| nrs.contains(nr))
        .map(|&(ts, _)| ts)
}

fn last_in(v: Option<&Vec<(u64, i64)>>, from: u64, to: u64, nrs: &[i64]) -> Option<u64> {
    let v = v?;
    let k = v.partition_point(|&(ts, _)| ts <= to);
    v[..k]
        .iter()
        .rev()
        .take_while(|&&(ts, _)| ts >= from)
        .find(|(_, nr)| nrs.contains(nr))
        .map(|&(ts, _)| ts)
}
