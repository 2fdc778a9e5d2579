//! The correlator on synthetic event streams: merges, requeues, splits,
//! cross-CPU completions in unrelated tasks, io_uring joins, and the stage
//! split of joined requests (stages sum to the measured latency).

use iolab::trace::correlate::{block_timelines, Joiner, UserStamp};
use iolab::trace::events::{Event, Kind};
use iolab::trace::stages::{breakdown, split};

const DEV: u32 = 254 << 20;

fn ev(ts: u64, cpu: u16, pid: i32, kind: Kind, a: u64, b: i64) -> Event {
    let mut rwbs = [0u8; 8];
    rwbs[0] = b'R';
    Event {
        ts,
        cpu,
        pid,
        kind,
        dev: if kind.is_block() { DEV } else { 0 },
        a,
        b,
        rwbs,
        c: 0,
    }
}

fn blk(ts: u64, cpu: u16, pid: i32, kind: Kind, sector: u64, nr: i64) -> Event {
    ev(ts, cpu, pid, kind, sector, nr)
}

#[test]
fn simple_request_completed_on_another_cpu_by_another_task() {
    let events = vec![
        blk(100, 0, 42, Kind::Queue, 1000, 8),
        blk(110, 0, 42, Kind::GetRq, 1000, 8),
        blk(120, 0, 42, Kind::Insert, 1000, 8),
        blk(130, 0, 42, Kind::Issue, 1000, 8),
        // Completion in softirq on CPU 1, in whatever task was running there.
        blk(500, 1, 0, Kind::Complete, 1000, 8),
    ];
    let (bios, st) = block_timelines(&events);
    assert_eq!(bios.len(), 1);
    let b = &bios[0];
    assert_eq!(
        (b.q, b.g, b.i, b.d, b.c),
        (100, Some(110), Some(120), Some(130), Some(500))
    );
    assert_eq!(b.c_cpu, Some(1));
    assert_eq!(st.orphan_events, 0);
    assert_eq!(st.incomplete, 0);
}

#[test]
fn back_and_front_merges_inherit_the_requests_dispatch_and_completion() {
    let events = vec![
        blk(100, 0, 7, Kind::Queue, 1000, 8),
        blk(101, 0, 7, Kind::GetRq, 1000, 8),
        // Back merge: a bio starting where the request ends.
        blk(110, 0, 7, Kind::Queue, 1008, 8),
        blk(111, 0, 7, Kind::BackMerge, 1008, 8),
        // Front merge: a bio ending where the request starts.
        blk(120, 0, 7, Kind::Queue, 992, 8),
        blk(121, 0, 7, Kind::FrontMerge, 992, 8),
        blk(130, 0, 7, Kind::Insert, 992, 24),
        blk(140, 0, 7, Kind::Issue, 992, 24),
        blk(900, 1, 0, Kind::Complete, 992, 24),
    ];
    let (bios, st) = block_timelines(&events);
    assert_eq!(st.merged, 2);
    assert_eq!(st.orphan_events, 0, "{st:?}");
    assert_eq!(bios.len(), 3);
    for b in &bios {
        assert_eq!(b.d, Some(140), "{b:?}");
        assert_eq!(b.c, Some(900), "{b:?}");
    }
    assert_eq!(bios[0].g, Some(101));
    assert_eq!(bios[0].i, Some(130));
    assert_eq!(bios[1].m, Some(111));
    assert_eq!(bios[1].g, None);
    assert_eq!(bios[2].m, Some(121));
}

#[test]
fn requeue_counts_and_the_last_dispatch_wins() {
    let events = vec![
        blk(100, 0, 7, Kind::Queue, 5000, 8),
        blk(101, 0, 7, Kind::GetRq, 5000, 8),
        blk(102, 0, 7, Kind::Insert, 5000, 8),
        blk(103, 0, 7, Kind::Issue, 5000, 8),
        blk(150, 1, 0, Kind::Requeue, 5000, 8),
        blk(160, 1, 0, Kind::Issue, 5000, 8),
        blk(400, 1, 0, Kind::Complete, 5000, 8),
    ];
    let (bios, st) = block_timelines(&events);
    assert_eq!(st.requeued, 1);
    assert_eq!(bios[0].requeues, 1);
    assert_eq!(bios[0].d, Some(160));
    assert_eq!(bios[0].c, Some(400));
}

#[test]
fn split_bios_complete_separately_and_the_request_ends_with_the_last() {
    let events = vec![
        blk(100, 0, 7, Kind::Queue, 2000, 16),
        ev(101, 0, 7, Kind::Split, 2000, 2008),
        blk(102, 0, 7, Kind::GetRq, 2000, 8),
        blk(103, 0, 7, Kind::GetRq, 2008, 8),
        blk(104, 0, 7, Kind::Issue, 2000, 8),
        blk(105, 0, 7, Kind::Issue, 2008, 8),
        blk(300, 1, 0, Kind::Complete, 2008, 8),
        blk(350, 0, 0, Kind::Complete, 2000, 8),
    ];
    let mut events = events;
    events[1].dev = DEV;
    let (bios, st) = block_timelines(&events);
    assert_eq!(st.split, 1);
    assert_eq!(bios.len(), 2);
    assert_eq!((bios[0].sector, bios[0].nr_sector), (2000, 8));
    assert_eq!((bios[1].sector, bios[1].nr_sector), (2008, 8));
    assert!(bios.iter().all(|b| b.split && b.q == 100));
    let joiner = Joiner::new(&events, bios, DEV);
    let u = UserStamp {
        tid: 7,
        write: false,
        offset: 0,
        len: 8192,
        sector: Some(2000),
        prepare: 50,
        submitted: 60,
        done: 400,
    };
    let t = joiner.join(&u);
    assert_eq!(t.q, Some(100));
    assert_eq!(t.c, Some(350), "the request completes with its last bio");
    assert!(t.split);
}

#[test]
fn same_sector_reused_by_consecutive_requests() {
    let mut events = Vec::new();
    for k in 0..3u64 {
        let t = 1000 * k;
        events.extend([
            blk(t + 10, 0, 7, Kind::Queue, 64, 8),
            blk(t + 11, 0, 7, Kind::GetRq, 64, 8),
            blk(t + 12, 0, 7, Kind::Issue, 64, 8),
            blk(t + 500, (k % 2) as u16, 99, Kind::Complete, 64, 8),
        ]);
    }
    let (bios, st) = block_timelines(&events);
    assert_eq!(bios.len(), 3);
    assert_eq!(st.orphan_events, 0);
    for (k, b) in bios.iter().enumerate() {
        assert_eq!(b.c, Some(1000 * k as u64 + 500));
    }
    let joiner = Joiner::new(&events, bios, DEV);
    let u = UserStamp {
        tid: 7,
        write: false,
        offset: 0,
        len: 4096,
        sector: Some(64),
        prepare: 1005,
        submitted: 1005,
        done: 1600,
    };
    assert_eq!(joiner.join(&u).q, Some(1010));
}

#[test]
fn events_without_a_queued_bio_are_orphans_not_panics() {
    let events = vec![
        blk(5, 0, 1, Kind::Issue, 77, 8),
        blk(6, 1, 0, Kind::Complete, 77, 8),
        blk(7, 0, 1, Kind::BackMerge, 80, 8),
    ];
    let (bios, st) = block_timelines(&events);
    assert!(bios.is_empty());
    assert_eq!(st.orphan_events, 3);
}

/// A psync read: pread enters, Q..D on the worker, the irq and C on the other
/// CPU, pread exits, the user stamp. Every stage present, sum = total.
#[test]
fn psync_request_joins_syscalls_irq_and_stages_sum_to_total() {
    let tid = 4242;
    let pread = libc::SYS_pread64 as u64;
    let events = vec![
        ev(1_000, 0, tid, Kind::SysEnter, pread, 0),
        blk(1_500, 0, tid, Kind::Queue, 8000, 8),
        blk(1_800, 0, tid, Kind::GetRq, 8000, 8),
        blk(2_000, 0, tid, Kind::Insert, 8000, 8),
        blk(2_400, 0, tid, Kind::Issue, 8000, 8),
        ev(40_000, 1, 0, Kind::Irq, 36, 0),
        blk(41_000, 1, 0, Kind::Complete, 8000, 8),
        ev(45_000, 0, tid, Kind::SysExit, pread, 4096),
    ];
    let (bios, _) = block_timelines(&events);
    let joiner = Joiner::new(&events, bios, DEV);
    let u = UserStamp {
        tid,
        write: false,
        offset: 0,
        len: 4096,
        sector: Some(8000),
        prepare: 800,
        submitted: 800,
        done: 46_000,
    };
    let t = joiner.join(&u);
    assert_eq!(t.e, Some(1_000));
    assert_eq!(t.irq, Some(40_000));
    assert_eq!(t.x, Some(45_000));
    assert!(t.cross_cpu);
    let st = split(&t);
    let names: Vec<&str> = st.iter().map(|s| s.0).collect();
    assert_eq!(
        names,
        [
            "user prepare",
            "syscall+submit",
            "Q2G",
            "G2I",
            "I2D",
            "D2irq device",
            "irq2C driver",
            "completion path",
            "reaping",
            "residual"
        ]
    );
    let sum: u64 = st.iter().map(|s| s.1).sum();
    assert_eq!(sum, u.done - u.prepare);
    assert_eq!(st.last().unwrap().1, 0);
    let b = breakdown(&[t]);
    assert!((b.device_share - (37_600.0 / 45_200.0)).abs() < 1e-9);
    assert_eq!(b.q2c.as_ref().unwrap().mean_ns, 39_500.0);
}

/// io_uring at depth 2: submissions tagged with user_data, completions posted
/// out of order on another CPU; each request finds its own CQE.
#[test]
fn io_uring_completions_join_through_user_data() {
    let tid = 77;
    let enter = libc::SYS_io_uring_enter as u64;
    let mut s1 = ev(1_100, 0, tid, Kind::UringSubmit, 0xA, 0);
    s1.c = 0xfeed;
    let mut s2 = ev(1_300, 0, tid, Kind::UringSubmit, 0xB, 0);
    s2.c = 0xfeed;
    let mut c_b = ev(30_100, 1, 0, Kind::UringComplete, 0xB, 4096);
    c_b.c = 0xfeed;
    let mut c_a = ev(50_100, 1, 0, Kind::UringComplete, 0xA, 4096);
    c_a.c = 0xfeed;
    let events = vec![
        ev(1_000, 0, tid, Kind::SysEnter, enter, 0),
        s1,
        blk(1_150, 0, tid, Kind::Queue, 100, 8),
        blk(1_160, 0, tid, Kind::GetRq, 100, 8),
        s2,
        blk(1_350, 0, tid, Kind::Queue, 900, 8),
        blk(1_360, 0, tid, Kind::GetRq, 900, 8),
        blk(1_400, 0, tid, Kind::Issue, 100, 8),
        blk(1_410, 0, tid, Kind::Issue, 900, 8),
        blk(30_000, 1, 3, Kind::Complete, 900, 8),
        c_b,
        blk(50_000, 1, 3, Kind::Complete, 100, 8),
        c_a,
    ];
    let (bios, _) = block_timelines(&events);
    assert_eq!(bios[0].uring, Some((0xfeed, 0xA)));
    assert_eq!(bios[1].uring, Some((0xfeed, 0xB)));
    let joiner = Joiner::new(&events, bios, DEV);
    let ua = UserStamp {
        tid,
        write: false,
        offset: 0,
        len: 4096,
        sector: Some(100),
        prepare: 900,
        submitted: 1_500,
        done: 51_000,
    };
    let ub = UserStamp {
        tid,
        write: false,
        offset: 0,
        len: 4096,
        sector: Some(900),
        prepare: 950,
        submitted: 1_500,
        done: 31_000,
    };
    let ta = joiner.join(&ua);
    let tb = joiner.join(&ub);
    assert_eq!(
        (ta.e, ta.c, ta.x),
        (Some(1_000), Some(50_000), Some(50_100))
    );
    assert_eq!(
        (tb.e, tb.c, tb.x),
        (Some(1_000), Some(30_000), Some(30_100))
    );
    for (t, u) in [(ta, ua), (tb, ub)] {
        let sum: u64 = split(&t).iter().map(|s| s.1).sum();
        assert_eq!(sum, u.done - u.prepare);
    }
}

#[test]
fn a_request_without_block_io_has_no_block_stages() {
    let tid = 5;
    let pread = libc::SYS_pread64 as u64;
    let events = vec![
        ev(100, 0, tid, Kind::SysEnter, pread, 0),
        ev(300, 0, tid, Kind::SysExit, pread, 4096),
    ];
    let (bios, _) = block_timelines(&events);
    let joiner = Joiner::new(&events, bios, DEV);
    let u = UserStamp {
        tid,
        write: false,
        offset: 0,
        len: 4096,
        sector: Some(1),
        prepare: 50,
        submitted: 50,
        done: 400,
    };
    let t = joiner.join(&u);
    assert_eq!((t.q, t.e, t.x), (None, Some(100), Some(300)));
    let names: Vec<&str> = split(&t).iter().map(|s| s.0).collect();
    assert_eq!(
        names,
        [
            "user prepare",
            "syscall (no block I/O)",
            "reaping",
            "residual"
        ]
    );
}

/// Two requests to the same sector in flight at once (QD > 1): each joins the
/// bio that completed before it saw its completion, never a later one.
#[test]
fn concurrent_requests_to_one_sector_each_get_their_own_bio() {
    let tid = 9;
    let events = vec![
        blk(100, 0, tid, Kind::Queue, 640, 8),
        blk(101, 0, tid, Kind::GetRq, 640, 8),
        blk(102, 0, tid, Kind::Issue, 640, 8),
        blk(150, 0, tid, Kind::Queue, 640, 8),
        blk(400, 1, 0, Kind::Complete, 640, 8),
        blk(401, 0, tid, Kind::GetRq, 640, 8),
        blk(402, 0, tid, Kind::Issue, 640, 8),
        blk(900, 1, 0, Kind::Complete, 640, 8),
    ];
    let (bios, st) = block_timelines(&events);
    assert_eq!(bios.len(), 2);
    assert_eq!(st.orphan_events, 0);
    let joiner = Joiner::new(&events, bios, DEV);
    let a = UserStamp {
        tid,
        write: false,
        offset: 0,
        len: 4096,
        sector: Some(640),
        prepare: 90,
        submitted: 95,
        done: 450,
    };
    let b = UserStamp {
        tid,
        write: false,
        offset: 0,
        len: 4096,
        sector: Some(640),
        prepare: 140,
        submitted: 145,
        done: 950,
    };
    let ta = joiner.join(&a);
    let tb = joiner.join(&b);
    assert_eq!((ta.q, ta.c), (Some(100), Some(400)));
    assert_eq!((tb.q, tb.c), (Some(150), Some(900)));
    for (t, u) in [(ta, a), (tb, b)] {
        let sum: u64 = split(&t).iter().map(|s| s.1).sum();
        assert_eq!(sum, u.done - u.prepare);
    }
}

/// An edge earlier than the one before it counts as a zero stage and is reported.
#[test]
fn out_of_order_edges_never_push_the_sum_past_the_total() {
    use iolab::trace::correlate::RequestTimeline;
    use iolab::trace::stages::split_checked;
    let t = RequestTimeline {
        p: 0,
        e: Some(10),
        q: Some(8),
        g: Some(20),
        d: Some(30),
        c: Some(90),
        u: 100,
        ..Default::default()
    };
    let (parts, bad) = split_checked(&t);
    assert_eq!(bad.as_deref(), Some("E>Q"));
    assert_eq!(parts.iter().map(|p| p.1).sum::<u64>(), 100);
}

/// SQPOLL: the bio is queued by the kernel's SQ thread, not the worker, so
/// the worker's own io_uring_enter (a wait) is not the submission edge.
#[test]
fn sqpoll_submission_is_not_attributed_to_the_workers_syscall() {
    let (worker, sq) = (30, 31);
    let enter = libc::SYS_io_uring_enter as u64;
    let events = vec![
        ev(1_000, 0, worker, Kind::SysEnter, enter, 0),
        blk(2_000, 1, sq, Kind::Queue, 512, 8),
        blk(2_100, 1, sq, Kind::GetRq, 512, 8),
        blk(2_200, 1, sq, Kind::Issue, 512, 8),
        blk(9_000, 0, 0, Kind::Complete, 512, 8),
        ev(9_500, 0, worker, Kind::SysExit, enter, 1),
    ];
    let (bios, _) = block_timelines(&events);
    let joiner = Joiner::new(&events, bios, DEV);
    let u = UserStamp {
        tid: worker,
        write: false,
        offset: 0,
        len: 4096,
        sector: Some(512),
        prepare: 500,
        submitted: 600,
        done: 10_000,
    };
    let t = joiner.join(&u);
    assert_eq!(t.e, None);
    let names: Vec<&str> = split(&t).iter().map(|s| s.0).collect();
    assert_eq!(names[0], "prepare+submit");
}

/// A stage seen in few requests: its mean is per occurrence (btt's AVG),
/// its per-request contribution is what stacks to the mean total.
#[test]
fn per_request_contributions_stack_to_the_mean_total() {
    use iolab::trace::correlate::RequestTimeline;
    use iolab::trace::stages::breakdown;
    let plain = RequestTimeline {
        p: 0,
        q: Some(10),
        g: Some(20),
        i: Some(30),
        d: Some(40),
        c: Some(90),
        u: 100,
        ..Default::default()
    };
    let merged = RequestTimeline {
        p: 0,
        q: Some(10),
        m: Some(15),
        d: Some(60),
        c: Some(190),
        u: 200,
        merged: true,
        ..Default::default()
    };
    let b = breakdown(&[plain, plain, plain, merged]);
    let q2m = b.stages.iter().find(|s| s.stage == "Q2M").unwrap();
    assert_eq!(
        (q2m.n, q2m.mean_ns, q2m.per_request_ns),
        (1, 5.0, Some(1.25))
    );
    let stacked: f64 = b.stages.iter().map(|s| s.per_request_ns.unwrap()).sum();
    assert!(
        (stacked - b.total.mean_ns).abs() < 1e-9,
        "{stacked} vs {}",
        b.total.mean_ns
    );
}
