//! iolab's NVMe/TCP target on loopback, driven by the initiator's control
//! path (`engine::nvmetcp::handshake`, one command at a time): identify,
//! data both ways (in the capsule, through R2T and H2CData, C2HData back),
//! flush, errors as statuses, digests, several queues on several reactors,
//! refused Connects, a malformed PDU ended with a termination request
//! while other connections go on, and the stamps file. The pipelined engine
//! against this target is tested through the CLI (tests/engines_nvmetcp.rs).

use std::io::{Read, Write};
use std::net::TcpStream;

use super::*;
use crate::engine::nvmetcp::handshake::{connect_admin, connect_io, Params, Queue};
use crate::proto::nvme::codec::{self, Digests, Sqe};

fn serving(threads: usize, stamps: Option<PathBuf>) -> (tempfile::TempDir, NvmeTcpTarget) {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let file = dir.path().join("disk");
    std::fs::write(&file, vec![0u8; 8 << 20]).unwrap();
    let mut cfg = NvmeTargetConfig::new(&file, "127.0.0.1:0".parse().unwrap());
    cfg.threads = threads;
    cfg.stamps = stamps;
    let t = start(&cfg).unwrap();
    (dir, t)
}

pub(super) fn params(digests: Digests) -> Params {
    Params {
        subnqn: DEFAULT_NQN.into(),
        hostnqn: "nqn.2025-11.io.iolab:test-host".into(),
        hostid: [3; 16],
        nsid: 1,
        digests,
        queue_size: 32,
        kato_ms: 0,
    }
}

fn pattern(n: usize, k: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(13).wrapping_add(k))
        .collect()
}

fn write(q: &mut Queue, lba: u64, data: &[u8], in_capsule: bool) {
    let cid = q.next_cid();
    let n = data.len() as u32;
    q.command(
        &Sqe::write(cid, 1, lba, n / 4096, n, in_capsule),
        data,
        &mut Vec::new(),
    )
    .unwrap();
}

fn read(q: &mut Queue, lba: u64, n: u32) -> anyhow::Result<Vec<u8>> {
    let mut got = Vec::new();
    let cid = q.next_cid();
    q.command(&Sqe::read(cid, 1, lba, n.div_ceil(4096), n), &[], &mut got)?;
    Ok(got)
}

pub(super) fn round_trip(addr: &str, digests: Digests) {
    let p = params(digests);
    let (_admin, info) = connect_admin(addr, &p).unwrap();
    assert_eq!((info.ns.bytes(), info.ns.block_size), (8 << 20, 4096));
    assert_eq!(info.id.subnqn, DEFAULT_NQN);
    let mut q = connect_io(addr, &p, &info, 1).unwrap();
    assert_eq!(q.digests, digests);
    let small = pattern(4096, 1);
    write(&mut q, 2, &small, true);
    // 1 MiB: one R2T, answered in H2CData PDUs of at most MAXH2CDATA.
    let big = pattern(1 << 20, 2);
    write(&mut q, 256, &big, false);
    assert_eq!(read(&mut q, 2, 4096).unwrap(), small);
    assert_eq!(read(&mut q, 256, 1 << 20).unwrap(), big);
    let cid = q.next_cid();
    q.command(&Sqe::flush(cid, 1), &[], &mut Vec::new())
        .unwrap();
    let e = read(&mut q, info.ns.nsze, 4096).unwrap_err();
    assert!(format!("{e:#}").contains("LBA Out of Range"), "{e:#}");
}

#[test]
fn data_round_trips_with_and_without_digests() {
    let (_d, t) = serving(1, None);
    let addr = t.addr.to_string();
    round_trip(&addr, Digests::default());
    round_trip(
        &addr,
        Digests {
            header: true,
            data: true,
        },
    );
    t.stop().unwrap();
}

#[test]
fn queues_on_two_reactors_see_each_others_writes() {
    let (_d, t) = serving(2, None);
    let addr = t.addr.to_string();
    let p = params(Digests::default());
    let (_admin, info) = connect_admin(&addr, &p).unwrap();
    let mut a = connect_io(&addr, &p, &info, 1).unwrap();
    let mut b = connect_io(&addr, &p, &info, 2).unwrap();
    let data = pattern(8192, 7);
    write(&mut a, 10, &data, true);
    assert_eq!(read(&mut b, 10, 8192).unwrap(), data);
    t.stop().unwrap();
}

#[test]
fn connects_to_unknown_controllers_or_subsystems_are_refused() {
    let (_d, t) = serving(1, None);
    let addr = t.addr.to_string();
    let p = params(Digests::default());
    let (_admin, mut info) = connect_admin(&addr, &p).unwrap();
    info.cntlid = info.cntlid.wrapping_add(100);
    let e = connect_io(&addr, &p, &info, 1).err().unwrap();
    assert!(
        format!("{e:#}").contains("Connect: Invalid Parameters"),
        "{e:#}"
    );
    let mut other = params(Digests::default());
    other.subnqn = "nqn.2025-11.io.iolab:nosuch".into();
    let e = connect_admin(&addr, &other).err().unwrap();
    assert!(
        format!("{e:#}").contains("Connect: Invalid Parameters"),
        "{e:#}"
    );
    t.stop().unwrap();
}

/// An I/O queue ID is connected once per controller (a host connecting
/// queue 1 thousands of times grew the target without bound); closing it
/// frees the ID.
#[test]
fn an_io_queue_id_is_connected_once_per_controller() {
    let (_d, t) = serving(1, None);
    let addr = t.addr.to_string();
    let p = params(Digests::default());
    let (_admin, info) = connect_admin(&addr, &p).unwrap();
    let first = connect_io(&addr, &p, &info, 1).unwrap();
    let e = connect_io(&addr, &p, &info, 1).err().unwrap();
    assert!(
        format!("{e:#}").contains("Connect: Invalid Parameters"),
        "{e:#}"
    );
    drop(first);
    let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut again = connect_io(&addr, &p, &info, 1);
    while again.is_err() && std::time::Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_millis(50));
        again = connect_io(&addr, &p, &info, 1);
    }
    assert!(
        again.is_ok(),
        "queue 1 free again after its connection closed"
    );
    t.stop().unwrap();
}

#[test]
fn a_malformed_pdu_ends_only_its_connection() {
    let (_d, t) = serving(1, None);
    let addr = t.addr.to_string();
    let mut s = TcpStream::connect(&addr).unwrap();
    // A PDU of an unknown type instead of ICReq.
    s.write_all(&[0x7e, 0, 8, 0, 8, 0, 0, 0]).unwrap();
    let mut back = Vec::new();
    s.read_to_end(&mut back).unwrap();
    assert_eq!(back.first(), Some(&codec::PDU_C2H_TERM), "{back:?}");
    round_trip(&addr, Digests::default());
    t.stop().unwrap();
}

#[test]
fn io_commands_are_stamped_when_the_queue_closes() {
    let dir = tempfile::tempdir().unwrap();
    let stamps = dir.path().join("stamps.txt");
    let (_d, t) = serving(1, Some(stamps.clone()));
    let addr = t.addr.to_string();
    let p = params(Digests::default());
    let (_admin, info) = connect_admin(&addr, &p).unwrap();
    let mut q = connect_io(&addr, &p, &info, 1).unwrap();
    for k in 0..5 {
        read(&mut q, k, 4096).unwrap();
    }
    drop(q);
    t.stop().unwrap();
    let text = std::fs::read_to_string(&stamps).unwrap();
    let blocks = crate::target::stamps::blocks(&text);
    assert_eq!(blocks.len(), 1, "the I/O queue only: {text}");
    assert_eq!(blocks[0].len(), 5);
    for s in &blocks[0] {
        assert!(s.arrival <= s.device_submit && s.device_submit <= s.device_complete);
        assert!(s.device_complete <= s.reply_send, "{s:?}");
    }
}

/// Read what the target sends until it closes (60 s at most).
fn until_closed(s: &mut TcpStream) -> Vec<u8> {
    s.set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    let mut back = Vec::new();
    let _ = s.read_to_end(&mut back);
    back
}

/// An ICReq that says it carries a header digest and has no room for one
/// (the codec read past the PDU: the reactor thread panicked, and with it
/// every connection it served).
#[test]
fn a_header_digest_with_no_room_is_refused() {
    let (_d, t) = serving(1, None);
    let addr = t.addr.to_string();
    let mut s = TcpStream::connect(&addr).unwrap();
    let mut ic = codec::encode_ic(
        codec::PDU_ICREQ,
        &codec::Ic {
            pfv: 0,
            align: 0,
            digests: Digests::default(),
            max: 0,
        },
    )
    .unwrap();
    ic[1] |= codec::FLAG_HDGST;
    s.write_all(&ic).unwrap();
    assert_eq!(until_closed(&mut s).first(), Some(&codec::PDU_C2H_TERM));
    round_trip(&addr, Digests::default());
    t.stop().unwrap();
}

/// A capsule header claiming 1 MiB before Connect is refused at once, not
/// buffered while the rest arrives (the bound was the receive buffer's
/// half, over 1 MiB, for every connection).
#[test]
fn a_pdu_over_its_stage_is_refused_before_it_arrives() {
    let (_d, t) = serving(1, None);
    let addr = t.addr.to_string();
    let mut s = TcpStream::connect(&addr).unwrap();
    let ic = codec::Ic {
        pfv: 0,
        align: 0,
        digests: Digests::default(),
        max: 0,
    };
    s.write_all(&codec::encode_ic(codec::PDU_ICREQ, &ic).unwrap())
        .unwrap();
    let mut head = [0u8; codec::CAPSULE_CMD_HLEN];
    head[0] = codec::PDU_CAPSULE_CMD;
    head[2] = codec::CAPSULE_CMD_HLEN as u8;
    head[3] = codec::CAPSULE_CMD_HLEN as u8;
    head[4..8].copy_from_slice(&(1u32 << 20).to_le_bytes());
    s.write_all(&head).unwrap();
    let back = until_closed(&mut s);
    let term = back.get(codec::IC_LEN).copied();
    assert_eq!(term, Some(codec::PDU_C2H_TERM), "{back:?}");
    t.stop().unwrap();
}

/// A connection that never sends its ICReq (or its Connect) is ended at
/// the negotiation deadline; the others are served meanwhile.
#[test]
fn a_silent_connection_ends_at_the_negotiation_deadline() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let file = dir.path().join("disk");
    std::fs::write(&file, vec![0u8; 8 << 20]).unwrap();
    let mut cfg = NvmeTargetConfig::new(&file, "127.0.0.1:0".parse().unwrap());
    cfg.negotiation_deadline = std::time::Duration::from_secs(1);
    let t = start(&cfg).unwrap();
    let addr = t.addr.to_string();
    let mut silent = TcpStream::connect(&addr).unwrap();
    round_trip(&addr, Digests::default());
    let start = std::time::Instant::now();
    let back = until_closed(&mut silent);
    assert!(
        start.elapsed() < std::time::Duration::from_secs(31),
        "the silent connection was never ended"
    );
    assert_eq!(back.first(), Some(&codec::PDU_C2H_TERM), "{back:?}");
    t.stop().unwrap();
}

/// A host that gets an R2T and goes away without the data: its write was
/// waiting for ever, so the connection never closed (and the target could
/// not stop). Found by the fuzz test.
#[test]
fn a_host_gone_before_its_write_data_ends_its_connection() {
    let (_d, t) = serving(1, None);
    let addr = t.addr.to_string();
    let p = params(Digests::default());
    let (_admin, info) = connect_admin(&addr, &p).unwrap();
    let mut q = connect_io(&addr, &p, &info, 1).unwrap();
    let capsule = Sqe::write(7, 1, 0, 2, 8192, false)
        .capsule(&[], q.digests, q.cpda)
        .unwrap();
    q.sock.write_all(&capsule).unwrap();
    let mut r2t = [0u8; codec::DATA_HLEN];
    q.sock.read_exact(&mut r2t).unwrap();
    assert_eq!(r2t[0], codec::PDU_R2T);
    q.sock.shutdown(std::net::Shutdown::Write).unwrap();
    let start = std::time::Instant::now();
    until_closed(&mut q.sock);
    assert!(
        start.elapsed() < std::time::Duration::from_secs(59),
        "the connection stayed open"
    );
    t.stop().unwrap();
}

/// Issue 28, item 4: two hosts that pipeline more 1 MiB reads than their
/// queues hold and never read a byte kept their connections (slots, 2 MiB
/// of PDUs) for ever. Now a connection whose PDUs have not had one byte
/// taken by its socket for the stall timeout (1 s here) is closed once its
/// reads are done: a host on the same reactor is served meanwhile, the two
/// are found ended (they stayed open before), their idle admin queues are
/// not.
#[test]
fn hosts_that_never_read_are_closed_at_the_stall_timeout() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let file = dir.path().join("disk");
    std::fs::write(&file, vec![0u8; 8 << 20]).unwrap();
    let mut cfg = NvmeTargetConfig::new(&file, "127.0.0.1:0".parse().unwrap());
    cfg.stall_timeout = std::time::Duration::from_secs(1);
    let t = start(&cfg).unwrap();
    let addr = t.addr.to_string();
    let p = params(Digests::default());
    let mut admins = Vec::new();
    let mut hostile = Vec::new();
    for _ in 0..2 {
        let (admin, info) = connect_admin(&addr, &p).unwrap();
        let q = connect_io(&addr, &p, &info, 1).unwrap();
        admins.push(admin);
        hostile.push(q);
    }
    for q in &mut hostile {
        let mut reads = Vec::new();
        for k in 0..100u64 {
            let sqe = Sqe::read(k as u16 % 32, 1, k % 8 * 256, 256, 1 << 20);
            reads.extend(sqe.capsule(&[], q.digests, q.cpda).unwrap());
        }
        q.sock.write_all(&reads).unwrap();
    }
    round_trip(&addr, Digests::default());
    for q in &mut hostile {
        assert!(
            crate::target::serving::ended_by_target(
                &mut q.sock,
                std::time::Duration::from_secs(30)
            ),
            "a host that never reads is still connected"
        );
    }
    for a in &mut admins {
        let mut b = [0u8; 1];
        a.sock.set_nonblocking(true).unwrap();
        let r = a.sock.read(&mut b);
        assert!(
            matches!(&r, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "an idle admin queue was ended: {r:?}"
        );
    }
    t.stop().unwrap();
}

/// Issue 31, item 14: discovery as nvme-cli's `nvme discover` does it:
/// Connect to the well-known discovery NQN, enable, Identify Controller,
/// the log's header (with RAE), its entries from offset 1024, the header
/// again; the entry leads to the subsystem. Requests outside the log's
/// rules are refused; a discovery controller takes no I/O queue.
#[test]
fn discovery_lists_the_subsystem_as_nvme_cli_reads_it() {
    use crate::proto::nvme::discovery::{self, Entry, DISCOVERY_NQN, LID_DISCOVERY};
    use crate::proto::nvme::identify::{ControllerId, CC_ENABLE};
    let (_dir, t) = serving(1, None);
    let addr = t.addr.to_string();
    let p = Params {
        subnqn: DISCOVERY_NQN.into(),
        ..params(Digests::default())
    };
    let connect = |q: &mut Queue, qid: u16, cntlid: u16| {
        let data = codec::connect_data(p.hostid, cntlid, &p.subnqn, &p.hostnqn).unwrap();
        let cid = q.next_cid();
        q.command(&Sqe::connect(cid, qid, 31, 0), &data, &mut Vec::new())
    };
    let mut q = Queue::open(&addr, Digests::default()).unwrap();
    let cntlid = connect(&mut q, 0, 0xFFFF).unwrap().result as u16;
    let ask = |q: &mut Queue, sqe: &dyn Fn(u16) -> Sqe| {
        let mut got = Vec::new();
        let cid = q.next_cid();
        q.command(&sqe(cid), &[], &mut got).map(|_| got)
    };
    let cc = CC_ENABLE as u64;
    ask(&mut q, &|cid| {
        Sqe::property_set(cid, codec::PROP_CC, false, cc)
    })
    .unwrap();
    let id = ControllerId::parse(&ask(&mut q, &|cid| Sqe::identify(cid, 1, 0)).unwrap()).unwrap();
    assert_eq!(id.cntrltype, discovery::CNTRLTYPE_DISCOVERY);
    assert_eq!((id.subnqn.as_str(), id.lpa & 4), (DISCOVERY_NQN, 4));
    let log = |q: &mut Queue, offset: u64, len: u32, rae: bool| {
        let mut got = Vec::new();
        let cid = q.next_cid();
        let sqe = Sqe::get_log_page(cid, LID_DISCOVERY, offset, len, rae);
        q.command(&sqe, &[], &mut got).map(|_| got)
    };
    let (genctr, numrec) = discovery::parse_header(&log(&mut q, 0, 1024, true).unwrap()).unwrap();
    assert_eq!(numrec, 1);
    let e = Entry::parse(&log(&mut q, 1024, 1024, true).unwrap()).unwrap();
    assert_eq!(
        discovery::parse_header(&log(&mut q, 0, 1024, false).unwrap())
            .unwrap()
            .0,
        genctr
    );
    assert_eq!((e.trtype, e.adrfam, e.subtype), (3, 1, 2), "TCP, IPv4, NVM");
    assert_eq!(
        (e.traddr.as_str(), e.subnqn.as_str()),
        ("127.0.0.1", DEFAULT_NQN)
    );
    assert_eq!(e.trsvcid, t.addr.port().to_string());
    // Past the log's end: zeros, as Linux answers.
    assert!(log(&mut q, 2048, 512, false)
        .unwrap()
        .iter()
        .all(|&b| b == 0));
    // Another log, an offset inside a dword, more than the bound.
    let other = |cid| Sqe::get_log_page(cid, 0x02, 0, 512, false);
    assert!(ask(&mut q, &other).is_err());
    assert!(log(&mut q, 2, 512, false).is_err());
    assert!(log(&mut q, 0, 128 << 10, false).is_err());
    assert!(ask(&mut q, &|cid| Sqe::identify(cid, codec::CNS_NAMESPACE, 1)).is_err());
    let mut io = Queue::open(&addr, Digests::default()).unwrap();
    assert!(connect(&mut io, 1, cntlid).is_err(), "no I/O queue");
    // What the entry names is the subsystem, reachable as named.
    let named = Params {
        subnqn: e.subnqn.clone(),
        ..params(Digests::default())
    };
    let (_admin, info) = connect_admin(&format!("{}:{}", e.traddr, e.trsvcid), &named).unwrap();
    assert_eq!(info.id.cntrltype, 1);
}

/// `--poll`: data round-trips through a busy-polling reactor, and the
/// stop flag ends it.
#[test]
fn a_polling_target_round_trips_and_stops() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let file = dir.path().join("disk");
    std::fs::write(&file, vec![0u8; 8 << 20]).unwrap();
    let mut cfg = NvmeTargetConfig::new(&file, "127.0.0.1:0".parse().unwrap());
    cfg.poll = Some(serving::PollPlan::new(1, None).unwrap());
    let t = start(&cfg).unwrap();
    assert!(t.busy_poll.is_some());
    round_trip(&t.addr.to_string(), Digests::default());
    let t0 = std::time::Instant::now();
    t.stop().unwrap();
    assert!(t0.elapsed() < std::time::Duration::from_secs(30));
}
