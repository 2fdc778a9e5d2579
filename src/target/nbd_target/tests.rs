//! The target against the engine's codec and handshake: data written is
//! read back (pipelined), errors are answered by name, stamps are written
//! in order and a fabric delay holds every reply.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use super::*;
use crate::engine::nbd::handshake;
use crate::plan::endpoint::endpoint_of;
use crate::proto::nbd::{self as codec, ExportInfo};
use crate::remote::breakdown::{self, read_reply, BreakdownSpec};

fn backing(dir: &Path, size: u64) -> PathBuf {
    let p = dir.join("disk.img");
    let f = std::fs::File::create(&p).unwrap();
    f.set_len(size).unwrap();
    p
}

fn serve(cfg: TargetConfig) -> NbdTarget {
    start(&cfg).unwrap()
}

fn config(dir: &Path) -> TargetConfig {
    TargetConfig::new(&backing(dir, 4 << 20), "127.0.0.1:0".parse().unwrap())
}

fn connect(t: &NbdTarget) -> (TcpStream, ExportInfo) {
    let url = format!("nbd://{}/", t.addr);
    let ep = endpoint_of(Path::new(&url)).unwrap().unwrap();
    handshake::connect(&ep).unwrap()
}

fn send(s: &mut TcpStream, cmd: u16, cookie: u64, offset: u64, len: u32, data: &[u8]) {
    let mut r = [0u8; codec::REQUEST_LEN];
    codec::encode_request(&mut r, cmd, cookie, offset, len);
    s.write_all(&r).unwrap();
    s.write_all(data).unwrap();
}

fn pattern(k: u64) -> Vec<u8> {
    (0..4096u64).map(|i| (i * 7 + k * 13) as u8).collect()
}

#[test]
fn pipelined_writes_read_back_with_any_number_of_reactors() {
    for threads in [1, 2] {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(dir.path());
        cfg.threads = threads;
        let t = serve(cfg);
        assert_eq!(t.export.size, 4 << 20);
        let (mut s, info) = connect(&t);
        assert!(info.structured && info.can_multi_conn() && info.can_flush());
        assert_eq!(
            (info.min_block, info.max_block),
            (if t.direct { 4096 } else { 1 }, 1 << 20)
        );
        // 64 writes in flight at once, then a flush, then 64 reads in flight.
        for k in 0..64 {
            send(&mut s, codec::CMD_WRITE, k, k * 8192, 4096, &pattern(k));
        }
        let mut seen = [false; 64];
        for _ in 0..64 {
            let (cookie, error) = read_reply(&mut s, true, &mut []).unwrap();
            assert_eq!(error, 0);
            seen[cookie as usize] = true;
        }
        assert!(seen.iter().all(|x| *x));
        send(&mut s, codec::CMD_FLUSH, 99, 0, 0, &[]);
        assert_eq!(read_reply(&mut s, true, &mut []).unwrap(), (99, 0));
        // Replies may come in any order; reads are checked one at a time
        // after the pipelined batch proved the target keeps them apart.
        for k in 0..64 {
            send(&mut s, codec::CMD_READ, 1000 + k, k * 8192, 4096, &[]);
        }
        let mut got = 0;
        for _ in 0..64 {
            let mut data = vec![0u8; 4096];
            let (cookie, error) = read_reply(&mut s, true, &mut data).unwrap();
            assert_eq!(error, 0);
            assert_eq!(data, pattern(cookie - 1000), "read {cookie}");
            got += 1;
        }
        assert_eq!(got, 64);
        t.stop().unwrap();
    }
}

#[test]
fn bad_requests_get_errors_and_the_connection_stays() {
    let dir = tempfile::tempdir().unwrap();
    let t = serve(config(dir.path()));
    let (mut s, _) = connect(&t);
    let size = t.export.size;
    send(&mut s, codec::CMD_READ, 1, size, 4096, &[]);
    assert_eq!(
        read_reply(&mut s, true, &mut [0; 4096]).unwrap(),
        (1, 22),
        "past the end: EINVAL"
    );
    send(&mut s, codec::CMD_TRIM, 2, 0, 4096, &[]);
    assert_eq!(
        read_reply(&mut s, true, &mut []).unwrap(),
        (2, 22),
        "trim is not offered"
    );
    if t.direct {
        send(&mut s, codec::CMD_READ, 3, 512, 4096, &[]);
        assert_eq!(
            read_reply(&mut s, true, &mut [0; 4096]).unwrap(),
            (3, 22),
            "unaligned"
        );
    }
    send(&mut s, codec::CMD_READ, 4, 0, 4096, &[]);
    assert_eq!(read_reply(&mut s, true, &mut [0; 4096]).unwrap(), (4, 0));
    t.stop().unwrap();

    let mut cfg = config(dir.path());
    cfg.read_only = true;
    let t = serve(cfg);
    let (mut s, info) = connect(&t);
    assert!(info.read_only());
    send(&mut s, codec::CMD_WRITE, 5, 0, 4096, &pattern(0));
    assert_eq!(
        read_reply(&mut s, true, &mut []).unwrap(),
        (5, 1),
        "read-only: EPERM"
    );
}

#[test]
fn stamps_join_the_clients_and_hold_the_fabric_delay() {
    let dir = tempfile::tempdir().unwrap();
    let stamps_file = dir.path().join("stamps");
    let mut cfg = config(dir.path());
    cfg.stamps = Some(stamps_file.clone());
    cfg.delay = Some(Duration::from_micros(300));
    let t = serve(cfg);
    let url = format!("nbd://{}/", t.addr);
    let target = crate::dut::prepare(
        &crate::dut::TargetOptions {
            path: Some(url.into()),
            overwrite: true,
            ..Default::default()
        },
        true,
        None,
        1,
    )
    .unwrap();
    let spec = BreakdownSpec {
        requests: 50,
        warmup: 5,
        block: 4096,
        span: 4 << 20,
        seed: 7,
    };
    let b = breakdown::measure(&target, &spec, &stamps_file).unwrap();
    assert_eq!(b.requests, 45);
    let total: f64 = b.stages().iter().map(|s| s.1).sum();
    assert!((total - b.latency_ns).abs() < 1.0, "{b:?}");
    // The requests broken down are the job's own: its point's 50 requests
    // are these 45 and the warm-up, so their total is at least these'.
    let point = b.point_mean_ns.unwrap();
    assert!(point * 50.0 >= b.latency_ns * 45.0 - 1000.0, "{b:?}");
    // The reply waits in the target until arrival + 300 us.
    assert!(b.target_ns + b.device_ns >= 300_000.0, "{b:?}");
    // One block per connection: the export's probe (no requests) and the job's.
    let text = std::fs::read_to_string(&stamps_file).unwrap();
    let heads: Vec<&str> = text.lines().filter(|l| l.starts_with("conn ")).collect();
    assert!(
        heads.iter().all(|h| h.starts_with("conn 127.0.0.1:"))
            && heads.iter().any(|h| h.ends_with(" 50")),
        "{heads:?}"
    );
    let rows = text.lines().filter(|l| !l.starts_with("conn "));
    assert!(rows.map(|l| l.split(' ').count()).all(|n| n == 5));
}

#[test]
fn an_old_style_client_gets_simple_replies() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let t = serve(config(dir.path()));
    let mut s = TcpStream::connect(t.addr).unwrap();
    let mut greeting = [0u8; 18];
    s.read_exact(&mut greeting).unwrap();
    let flags = codec::parse_greeting(&greeting).unwrap();
    assert!(flags & codec::FLAG_NO_ZEROES != 0);
    let client = (codec::FLAG_FIXED_NEWSTYLE | codec::FLAG_NO_ZEROES) as u32;
    s.write_all(&client.to_be_bytes()).unwrap();
    s.write_all(&codec::option(codec::OPT_EXPORT_NAME, b""))
        .unwrap();
    let mut reply = [0u8; 10];
    s.read_exact(&mut reply).unwrap();
    assert_eq!(codec::parse_export_name_reply(&reply).0, t.export.size);
    send(&mut s, codec::CMD_WRITE, 8, 4096, 4096, &pattern(3));
    assert_eq!(read_reply(&mut s, false, &mut []).unwrap(), (8, 0));
    let mut data = vec![0u8; 4096];
    send(&mut s, codec::CMD_READ, 9, 4096, 4096, &[]);
    assert_eq!(read_reply(&mut s, false, &mut data).unwrap(), (9, 0));
    assert_eq!(data, pattern(3));
    send(&mut s, codec::CMD_READ, 10, t.export.size, 4096, &[]);
    assert_eq!(read_reply(&mut s, false, &mut data).unwrap(), (10, 22));
}

/// Whether the server still holds `s` open: its greeting arrived and no
/// end of stream follows (a closed connection reads 0 or fails).
fn still_open(s: &mut TcpStream) -> bool {
    use std::io::Read;
    s.set_nonblocking(true).unwrap();
    let mut b = [0u8; 64];
    let open = loop {
        match s.read(&mut b) {
            Ok(0) => break false,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break true,
            Err(_) => break false,
        }
    };
    s.set_nonblocking(false).unwrap();
    open
}

/// A write and a read back on an established connection.
fn write_and_read_back(s: &mut TcpStream, k: u64) {
    send(s, codec::CMD_WRITE, k, k * 4096, 4096, &pattern(k));
    assert_eq!(read_reply(s, true, &mut []).unwrap(), (k, 0));
    let mut data = vec![0u8; 4096];
    send(s, codec::CMD_READ, k + 1, k * 4096, 4096, &[]);
    assert_eq!(read_reply(s, true, &mut data).unwrap(), (k + 1, 0));
    assert_eq!(data, pattern(k));
}

/// Issue 28, item 4: 20 idle connections opened first do not hold a real
/// client back (handshakes used to run one at a time, 10 s each: the
/// client's own 10 s handshake timeout failed it). It is served while
/// they are all still open, so it never waited for their deadlines.
#[test]
fn idle_connections_do_not_delay_a_real_client() {
    let dir = tempfile::tempdir().unwrap();
    let t = serve(config(dir.path()));
    let mut idle: Vec<TcpStream> = (0..20)
        .map(|_| TcpStream::connect(t.addr).unwrap())
        .collect();
    let (mut s, _) = connect(&t);
    write_and_read_back(&mut s, 3);
    assert!(
        idle.iter_mut().all(still_open),
        "the client waited for the idle connections to time out"
    );
    drop(idle);
    t.stop().unwrap();
}

/// Beyond the bound of handshakes under way a new connection is closed at
/// once; established clients go on being served, and once the idle
/// connections go, new clients are served again.
#[test]
fn over_the_handshake_bound_established_clients_are_served() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.max_negotiating = 4;
    cfg.negotiation_deadline = Duration::from_secs(120);
    let t = serve(cfg);
    let (mut s, _) = connect(&t);
    // Each idle connection got its greeting: its handshake is under way.
    // The first client's handshake thread gives its place back just after
    // the client is through (on a loaded machine, after an idle connection
    // came): one closed meanwhile is tried again.
    let start = std::time::Instant::now();
    let mut idle = Vec::new();
    while idle.len() < 4 {
        let mut c = TcpStream::connect(t.addr).unwrap();
        let mut g = [0u8; 18];
        match c.read_exact(&mut g) {
            Ok(()) => idle.push(c),
            Err(e) => {
                assert!(start.elapsed() < Duration::from_secs(30), "{e}");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
    let mut over = TcpStream::connect(t.addr).unwrap();
    over.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut b = [0u8; 18];
    assert!(
        matches!(over.read(&mut b), Ok(0) | Err(_)),
        "a connection over the bound is closed, not greeted"
    );
    write_and_read_back(&mut s, 5);
    drop(idle);
    // Their handshakes end at the end of stream; the bound frees up.
    let start = std::time::Instant::now();
    let (mut s2, _) = loop {
        let url = format!("nbd://{}/", t.addr);
        let ep = endpoint_of(Path::new(&url)).unwrap().unwrap();
        match handshake::connect(&ep) {
            Ok(x) => break x,
            Err(e) => assert!(start.elapsed() < Duration::from_secs(60), "{e}"),
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    write_and_read_back(&mut s2, 7);
    write_and_read_back(&mut s, 9);
    t.stop().unwrap();
}

/// A client trickling its handshake a byte at a time is cut off by the
/// deadline of the whole handshake (a timeout per read never fired).
#[test]
fn a_trickling_handshake_ends_at_its_deadline() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.negotiation_deadline = Duration::from_secs(1);
    let t = serve(cfg);
    let mut c = TcpStream::connect(t.addr).unwrap();
    let mut g = [0u8; 18];
    c.read_exact(&mut g).unwrap();
    let client = (codec::FLAG_FIXED_NEWSTYLE | codec::FLAG_NO_ZEROES) as u32;
    c.write_all(&client.to_be_bytes()).unwrap();
    // An option header whose data never ends, a byte every 300 ms.
    c.write_all(&codec::option(codec::OPT_GO, &[0u8; 4000])[..16])
        .unwrap();
    let start = std::time::Instant::now();
    let ended = loop {
        if c.write_all(&[0]).is_err() || !still_open(&mut c) {
            break true;
        }
        if start.elapsed() > Duration::from_secs(31) {
            break false;
        }
        std::thread::sleep(Duration::from_millis(300));
    };
    assert!(ended, "the trickling handshake was never ended");
    t.stop().unwrap();
}

/// Issue 28, item 4: a client that pipelines more reads than its reactor
/// has slots and never reads its replies holds at most its share of them.
/// A well-behaved client on the same reactor is served while it is still
/// connected (its reads used to wait for slots the other never gave
/// back), and once the other reads, every one of its replies comes (a
/// connection held at its share is read again as its slots free up).
#[test]
fn a_client_that_never_reads_does_not_starve_the_others() {
    const LEN: u32 = 256 << 10;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.threads = 1;
    let n = 2 * cfg.slots as u64 + 100;
    let t = serve(cfg);
    let (mut hostile, _) = connect(&t);
    // 256 KiB replies: the socket buffers take a few dozen, the rest wait
    // in the target, each holding its slot.
    let mut reqs = Vec::new();
    for k in 0..n {
        let mut r = [0u8; codec::REQUEST_LEN];
        codec::encode_request(&mut r, codec::CMD_READ, k, k % 16 * LEN as u64, LEN);
        reqs.extend_from_slice(&r);
    }
    hostile.write_all(&reqs).unwrap();
    // Time for the reactor to take them (were it not, the test would pass
    // on the old code, not fail on the new).
    std::thread::sleep(Duration::from_millis(500));
    let (mut s, _) = connect(&t);
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    for k in 0..4 {
        let mut data = vec![0u8; 4096];
        send(&mut s, codec::CMD_READ, 7000 + k, k * 4096, 4096, &[]);
        let reply = read_reply(&mut s, true, &mut data)
            .expect("the well-behaved client got no reply within 30 s");
        assert_eq!(reply, (7000 + k, 0));
    }
    hostile
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut data = vec![0u8; LEN as usize];
    for _ in 0..n {
        let (_, error) = read_reply(&mut hostile, true, &mut data).unwrap();
        assert_eq!(error, 0);
    }
    t.stop().unwrap();
}

/// `n` reads of `len` bytes each, encoded back to back.
fn pipelined_reads(n: u64, len: u32) -> Vec<u8> {
    let mut reqs = Vec::new();
    for k in 0..n {
        let mut r = [0u8; codec::REQUEST_LEN];
        codec::encode_request(&mut r, codec::CMD_READ, k, k % 16 * len as u64, len);
        reqs.extend_from_slice(&r);
    }
    reqs
}

/// A one-reactor target with this stall timeout and two clients that each
/// pipelined more 256 KiB reads than the reactor has slots: the target,
/// the two sockets and the target's directory (kept while it serves).
fn full_reactor(stall: Duration) -> (NbdTarget, Vec<TcpStream>, tempfile::TempDir) {
    const LEN: u32 = 256 << 10;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.threads = 1;
    cfg.stall_timeout = stall;
    let n = 2 * cfg.slots as u64 + 100;
    let t = serve(cfg);
    let clients = (0..2)
        .map(|_| {
            let (mut h, _) = connect(&t);
            h.write_all(&pipelined_reads(n, LEN)).unwrap();
            h
        })
        .collect();
    (t, clients, dir)
}

/// After the reactor had time to take the hostile clients' requests (both
/// at their share: it is full), a well-behaved client is answered within
/// 30 s: its socket.
fn a_well_behaved_client_is_served(t: &NbdTarget) -> TcpStream {
    std::thread::sleep(Duration::from_millis(500));
    let (mut s, _) = connect(t);
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    for k in 0..4 {
        let mut data = vec![0u8; 4096];
        send(&mut s, codec::CMD_READ, 7000 + k, k * 4096, 4096, &[]);
        let reply = read_reply(&mut s, true, &mut data)
            .expect("the well-behaved client got no reply within 30 s");
        assert_eq!(reply, (7000 + k, 0));
    }
    s
}

/// Issue 28, item 4: two clients that pipeline more reads than the
/// reactor has slots and never read their replies filled it (each holds
/// its share, half) and kept it full for ever. Now a connection whose
/// replies have not had one byte taken by its socket for the stall
/// timeout (1 s here) is closed and its slots freed once its reads are
/// done: a well-behaved client on the same reactor is served (it got no
/// reply within 30 s before), and the two are found ended.
#[test]
fn clients_that_never_read_are_closed_at_the_stall_timeout() {
    let (t, mut hostile, _dir) = full_reactor(Duration::from_secs(1));
    let mut s = a_well_behaved_client_is_served(&t);
    for h in &mut hostile {
        assert!(
            crate::target::serving::ended_by_target(h, Duration::from_secs(30)),
            "a client that never reads its replies is still connected"
        );
    }
    write_and_read_back(&mut s, 11);
    t.stop().unwrap();
}

/// Issue 28: two clients that read their replies slowly (64 KiB every
/// 20 ms: each send completes within the stall timeout, 2 s here, but the
/// 128 replies of 256 KiB a client may hold take 10 s to leave) held the
/// reactor's slots for ever,
/// the stall timeout being counted from the send in flight. It is now
/// counted from the oldest reply still queued: both are ended, and a
/// well-behaved client on the same reactor is served.
#[test]
fn clients_that_read_a_trickle_at_a_time_are_closed_at_the_stall_timeout() {
    let (t, clients, _dir) = full_reactor(Duration::from_secs(2));
    let tricklers: Vec<_> = clients
        .into_iter()
        .map(|mut h| {
            h.set_read_timeout(Some(Duration::from_millis(200)))
                .unwrap();
            std::thread::spawn(move || {
                // Sip until the target ends the connection, for 30 s at most.
                let mut buf = vec![0u8; 64 << 10];
                for _ in 0..1500 {
                    match h.read(&mut buf) {
                        Ok(0) => return true,
                        Err(e)
                            if !matches!(
                                e.kind(),
                                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                            ) =>
                        {
                            return true
                        }
                        _ => std::thread::sleep(Duration::from_millis(20)),
                    }
                }
                false
            })
        })
        .collect();
    a_well_behaved_client_is_served(&t);
    for h in tricklers {
        assert!(
            h.join().unwrap(),
            "a client reading slowly kept its slots for 30 s"
        );
    }
    t.stop().unwrap();
}

/// Stopping the target (Ctrl-C) with a client that never reads its
/// replies: the stop waited for a send that never completed, for ever.
/// The stall timeout (1 s here) now ends that client, and the stop.
#[test]
fn a_stop_waits_for_a_client_that_never_reads_only_until_the_stall_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.stall_timeout = Duration::from_secs(1);
    let t = serve(cfg);
    let (mut hostile, _) = connect(&t);
    hostile.write_all(&pipelined_reads(400, 256 << 10)).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let (done, stopped) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(t.stop().is_ok()));
    let ended = stopped.recv_timeout(Duration::from_secs(30));
    assert_eq!(ended, Ok(true), "the stop did not end within 30 s");
}

/// `--poll`: two busy-polling reactors pinned to CPUs serve pipelined
/// writes read back, SO_BUSY_POLL's outcome is recorded, the reactors run
/// on the CPUs named, and the stop flag ends the target with a client
/// still connected and idle.
#[test]
fn a_polling_target_serves_and_stops_on_the_stop_flag() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.threads = 2;
    let plan = serving::PollPlan::new(2, None).unwrap();
    cfg.poll = Some(plan.clone());
    let t = serve(cfg);
    assert!(t.busy_poll.is_some(), "polling records SO_BUSY_POLL");
    let mut clients: Vec<TcpStream> = (0..2).map(|_| connect(&t).0).collect();
    for (i, s) in clients.iter_mut().enumerate() {
        for k in 0..8 {
            write_and_read_back(s, (i as u64 * 100) + k * 2);
        }
    }
    // Each reactor thread runs on its CPU.
    let mut pinned = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap() {
        let task = task.unwrap().path();
        let comm = std::fs::read_to_string(task.join("comm")).unwrap_or_default();
        if let Some(i) = comm.trim().strip_prefix("nbd-reactor-") {
            let status = std::fs::read_to_string(task.join("status")).unwrap();
            let allowed = status
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .unwrap()
                .trim()
                .to_string();
            pinned.push((i.parse::<usize>().unwrap(), allowed));
        }
    }
    // (Tests running at once may own reactors of the same name.)
    for i in 0..2 {
        let cpu = plan.cpu_of(i).to_string();
        assert!(
            pinned.iter().any(|(r, a)| *r == i && *a == cpu),
            "reactor {i} on CPU {cpu}: {pinned:?}"
        );
    }
    let t0 = std::time::Instant::now();
    t.stop().unwrap();
    assert!(
        t0.elapsed() < Duration::from_secs(30),
        "the stop took {:?}",
        t0.elapsed()
    );
    drop(clients);
}
