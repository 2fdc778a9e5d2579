//! One request over the kernel's NVMe over Fabrics, followed through six
//! tracepoints: the host's block_rq_issue and nvme_setup_cmd (the issue
//! of the request's sector and the command of its SLBA nearest each
//! other), nvmet_req_init, nvmet_req_complete and nvme_complete_rq
//! (the same queue and command id, each the first after the one before)
//! and block_rq_complete. Command ids are reused as soon as a command
//! completes, so only the time order tells one use from the next.

use std::collections::HashMap;

use super::correlate::UserStamp;
use super::events::{Event, Kind};

/// The edges of one request over a kernel NVMe-oF path, in order (ns,
/// CLOCK_MONOTONIC like the runner's log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FabricTimeline {
    /// The runner's due stamp.
    pub prepare: u64,
    /// block_rq_issue.
    pub issue: u64,
    /// nvme_setup_cmd (just before the issue in nvme-rdma and nvme-tcp,
    /// which build the command before starting the request).
    pub setup: u64,
    /// nvmet_req_init.
    pub target_init: u64,
    /// nvmet_req_complete.
    pub target_complete: u64,
    /// nvme_complete_rq.
    pub host_complete: u64,
    /// block_rq_complete.
    pub complete: u64,
    /// The runner's reaped stamp.
    pub done: u64,
}

/// NVMe write opcode (nvme_setup_cmd's `opcode`, in `Event::dev`).
const NVME_CMD_WRITE: u32 = 0x01;

/// The traced events of a run, indexed for the join.
pub struct FabricJoiner {
    issues: Vec<Event>,
    completes: Vec<Event>,
    setups: Vec<Event>,
    /// Times by (qid, cid) and kind, ordered.
    by_command: HashMap<(Kind, i64, u64), Vec<u64>>,
    /// Sectors per LBA of the namespace (its logical block size / 512).
    lba_sectors: u64,
}

impl FabricJoiner {
    /// `events` sorted by time; `lba_sectors` the namespace's logical
    /// block size in 512-byte sectors (block events count sectors, NVMe
    /// commands LBAs).
    pub fn new(events: &[Event], lba_sectors: u64) -> FabricJoiner {
        let mut j = FabricJoiner {
            issues: Vec::new(),
            completes: Vec::new(),
            setups: Vec::new(),
            by_command: HashMap::new(),
            lba_sectors: lba_sectors.max(1),
        };
        for e in events {
            match e.kind {
                Kind::Issue => j.issues.push(*e),
                Kind::Complete => j.completes.push(*e),
                Kind::NvmeSetup if e.b != 0 => j.setups.push(*e),
                Kind::NvmetInit | Kind::NvmetComplete | Kind::NvmeComplete => j
                    .by_command
                    .entry((e.kind, e.b, e.c))
                    .or_default()
                    .push(e.ts),
                _ => {}
            }
        }
        j
    }

    /// The timeline of request `u`, or None where a point is missing or
    /// out of order (that request is left out).
    pub fn join(&self, u: &UserStamp) -> Option<FabricTimeline> {
        let sector = u.sector.unwrap_or(u.offset / 512);
        let (from, to) = (u.prepare, u.done);
        // The issue and the command nearest each other: another disk's
        // request to the same sector may be traced in the window too.
        let (issue, setup) = window(&self.issues, from, to)
            .filter(|e| e.a == sector && e.is_write() == u.write)
            .flat_map(|i| {
                window(&self.setups, from, to)
                    .filter(|e| {
                        e.a.checked_mul(self.lba_sectors) == Some(sector)
                            && (e.dev == NVME_CMD_WRITE) == u.write
                    })
                    .map(move |s| (i.ts, s))
            })
            .min_by_key(|(i, s)| i.abs_diff(s.ts))?;
        let (qid, cid) = (setup.b, setup.c);
        let next = |kind: Kind, after: u64| -> Option<u64> {
            let v = self.by_command.get(&(kind, qid, cid))?;
            let k = v.partition_point(|&t| t < after);
            v.get(k).copied().filter(|&t| t <= to)
        };
        let target_init = next(Kind::NvmetInit, setup.ts.max(issue))?;
        let target_complete = next(Kind::NvmetComplete, target_init)?;
        let host_complete = next(Kind::NvmeComplete, target_complete)?;
        let complete = window(&self.completes, host_complete, to)
            .find(|e| e.a == sector)?
            .ts;
        Some(FabricTimeline {
            prepare: from,
            issue,
            setup: setup.ts,
            target_init,
            target_complete,
            host_complete,
            complete,
            done: to,
        })
    }
}

/// The events of `v` (sorted by time) stamped in [from, to].
fn window(v: &[Event], from: u64, to: u64) -> impl Iterator<Item = &Event> {
    let k = v.partition_point(|e| e.ts < from);
    v[k..].iter().take_while(move |e| e.ts <= to)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ts: u64, kind: Kind, a: u64, qid: i64, cid: u64) -> Event {
        let mut rwbs = [0u8; 8];
        rwbs[0] = b'R';
        Event {
            ts,
            cpu: 0,
            pid: 1,
            kind,
            dev: if kind == Kind::NvmeSetup { 0x02 } else { 0 },
            a,
            b: qid,
            rwbs,
            c: cid,
        }
    }

    fn read(sector: u64, prepare: u64, done: u64) -> UserStamp {
        UserStamp {
            tid: 1,
            write: false,
            offset: sector * 512,
            len: 4096,
            sector: Some(sector),
            prepare,
            submitted: prepare + 5,
            done,
        }
    }

    /// One read of sector 80 (LBA 10 of 4 KiB): its command 7 on queue 1,
    /// with `nvmet` or without the target's events; then command 7 reused
    /// by the next read of sector 16 (LBA 2).
    fn events(nvmet: bool) -> Vec<Event> {
        let mut v = vec![
            ev(100, Kind::NvmeSetup, 10, 1, 7),
            ev(102, Kind::Issue, 80, 0, 0),
            ev(300, Kind::NvmeComplete, 0, 1, 7),
            ev(305, Kind::Complete, 80, 0, 0),
            ev(1100, Kind::NvmeSetup, 2, 1, 7),
            ev(1101, Kind::Issue, 16, 0, 0),
            ev(1150, Kind::NvmetInit, 2, 1, 7),
            ev(1200, Kind::NvmetComplete, 0, 1, 7),
            ev(1250, Kind::NvmeComplete, 0, 1, 7),
            ev(1260, Kind::Complete, 16, 0, 0),
        ];
        if nvmet {
            v.push(ev(150, Kind::NvmetInit, 10, 1, 7));
            v.push(ev(250, Kind::NvmetComplete, 0, 1, 7));
            v.sort_by_key(|e| e.ts);
        }
        v
    }

    #[test]
    fn a_request_is_followed_through_the_six_points() {
        let j = FabricJoiner::new(&events(true), 8);
        let t = j.join(&read(80, 90, 320)).unwrap();
        assert_eq!(
            t,
            FabricTimeline {
                prepare: 90,
                issue: 102,
                setup: 100,
                target_init: 150,
                target_complete: 250,
                host_complete: 300,
                complete: 305,
                done: 320,
            }
        );
        // The command id's next use belongs to the next request only.
        let t = j.join(&read(16, 1090, 1270)).unwrap();
        assert_eq!((t.target_init, t.host_complete), (1150, 1250));
        // Another disk's issue of the same sector in the window is not it.
        let mut other = events(true);
        other.insert(0, ev(92, Kind::Issue, 80, 0, 0));
        let t = FabricJoiner::new(&other, 8)
            .join(&read(80, 90, 320))
            .unwrap();
        assert_eq!(t.issue, 102);
        // The LBA is counted in the namespace's blocks, not in sectors.
        assert!(FabricJoiner::new(&events(true), 1)
            .join(&read(80, 90, 320))
            .is_none());
    }

    #[test]
    fn a_request_without_the_targets_events_is_left_out() {
        let j = FabricJoiner::new(&events(false), 8);
        // Not joined to the command id's next use, after its own completion.
        assert_eq!(j.join(&read(80, 90, 320)), None);
        assert!(j.join(&read(16, 1090, 1270)).is_some());
    }
}
