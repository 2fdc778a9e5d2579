//! The NVMe/TCP target against a hostile host (issue 28, item 5): random
//! bytes, mutated admin and I/O queue sessions and PDUs with random common
//! headers (type, flags, HLEN, PDO, PLEN) over loopback, seeded and bounded
//! in count and time. The target must end every such connection, never
//! panic, hold bounded memory and go on serving a real host.

use std::time::{Duration, Instant};

use super::tests::{params, round_trip};
use super::*;
use crate::engine::nvmetcp::handshake::connect_admin;
use crate::proto::nvme::codec::{self, DataHeader, Digests, Ic, Sqe};
use crate::proto::nvme::identify::CC_ENABLE;
use crate::target::fuzz_peer::{self, exchange, mutate, Rng};

fn icreq(digests: Digests) -> Vec<u8> {
    let ic = Ic {
        pfv: 0,
        align: 0,
        digests,
        max: 0,
    };
    codec::encode_ic(codec::PDU_ICREQ, &ic).unwrap()
}

fn capsule(sqe: &Sqe, data: &[u8], d: Digests) -> Vec<u8> {
    sqe.capsule(data, d, 0).unwrap()
}

/// ICReq and the Connect of queue `qid` of controller `cntlid`.
fn connected(qid: u16, cntlid: u16, d: Digests) -> Vec<u8> {
    let p = params(d);
    let data = codec::connect_data(p.hostid, cntlid, &p.subnqn, &p.hostnqn).unwrap();
    let mut v = icreq(d);
    v.extend(capsule(&Sqe::connect(1, qid, 15, 0), &data, d));
    v
}

/// An admin queue's session: Connect, enable, identify, keep alive.
fn admin_session(d: Digests) -> Vec<u8> {
    let mut v = connected(0, 0xFFFF, d);
    let cc = Sqe::property_set(2, codec::PROP_CC, false, CC_ENABLE as u64);
    v.extend(capsule(&cc, &[], d));
    v.extend(capsule(&Sqe::identify(3, codec::CNS_CONTROLLER, 0), &[], d));
    v.extend(capsule(&Sqe::identify(4, codec::CNS_NAMESPACE, 1), &[], d));
    v.extend(capsule(&Sqe::keep_alive(5), &[], d));
    v
}

/// An I/O queue's session: writes in the capsule and through H2CData
/// (the first slot's tag), a read, a flush.
fn io_session(cntlid: u16, d: Digests) -> Vec<u8> {
    let mut v = connected(1, cntlid, d);
    v.extend(capsule(&Sqe::write(2, 1, 1, 1, 4096, true), &[9; 4096], d));
    v.extend(capsule(&Sqe::write(3, 1, 8, 2, 8192, false), &[], d));
    let h = DataHeader {
        cccid: 3,
        ttag: 0,
        offset: 0,
        length: 8192,
    };
    let specific = codec::encode_data_header(&h);
    let flags = codec::FLAG_LAST_PDU;
    v.extend(codec::frame(codec::PDU_H2C_DATA, flags, &specific, &[5; 8192], d, 0).unwrap());
    v.extend(capsule(&Sqe::read(4, 1, 1, 1, 4096), &[], d));
    v.extend(capsule(&Sqe::flush(5, 1), &[], d));
    v
}

/// After ICReq, PDUs whose common header fields are random.
fn random_pdus(rng: &mut Rng) -> Vec<u8> {
    let mut v = icreq(Digests::default());
    for _ in 0..1 + rng.below(6) {
        let body = rng.below(300);
        let mut pdu = vec![
            rng.below(12) as u8,
            rng.next_u64() as u8,
            rng.next_u64() as u8,
            rng.next_u64() as u8,
        ];
        let plen = match rng.below(2) {
            0 => (8 + body) as u32,
            _ => rng.edge_u32(),
        };
        pdu.extend(plen.to_le_bytes());
        pdu.extend(rng.bytes(body));
        v.extend(pdu);
    }
    v
}

#[test]
fn hostile_hosts_never_stop_the_target() {
    let seed = fuzz_peer::seed();
    eprintln!("seed {seed} (IOLAB_FUZZ_SEED replays it)");
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let file = dir.path().join("disk");
    std::fs::write(&file, vec![0u8; 8 << 20]).unwrap();
    let mut cfg = NvmeTargetConfig::new(&file, "127.0.0.1:0".parse().unwrap());
    cfg.threads = 2;
    cfg.negotiation_deadline = Duration::from_secs(2);
    let t = start(&cfg).unwrap();
    let addr = t.addr.to_string();
    // A live controller for the I/O queues' Connects to name.
    let (_admin, info) = connect_admin(&addr, &params(Digests::default())).unwrap();
    let both = Digests {
        header: true,
        data: true,
    };
    let valid = [
        admin_session(Digests::default()),
        admin_session(both),
        io_session(info.cntlid, Digests::default()),
        io_session(info.cntlid, both),
    ];
    let rss_before = fuzz_peer::rss_kib();
    let started = Instant::now();
    let mut sent = 0;
    while sent < 400 && started.elapsed() < Duration::from_secs(90) {
        let bytes = match rng.below(4) {
            0 => {
                let n = rng.below(2048);
                rng.bytes(n)
            }
            1 => random_pdus(&mut rng),
            _ => mutate(&valid[rng.below(valid.len())], &mut rng),
        };
        assert!(
            exchange(t.addr, &bytes, Duration::from_secs(30)),
            "seed {seed}, input {sent}: the target did not end the connection"
        );
        sent += 1;
    }
    let grown = fuzz_peer::rss_kib().saturating_sub(rss_before);
    assert!(
        grown < 512 << 10,
        "seed {seed}: {grown} KiB more after fuzzing"
    );
    round_trip(&addr, Digests::default());
    t.stop().expect("no reactor ended with an error or panic");
}
