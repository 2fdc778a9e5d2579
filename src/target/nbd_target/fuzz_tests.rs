//! The NBD target against a hostile client (issue 28, item 5): random
//! bytes, mutated handshakes and transmissions, and requests with random
//! fields (lengths and offsets at the edges) over loopback, seeded and
//! bounded in count and time. The target must end every such connection,
//! never panic, hold bounded memory and go on serving a real client.

use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use super::*;
use crate::proto::nbd as codec;
use crate::target::fuzz_peer::{self, exchange, mutate, Rng};

/// A well-formed session: fixed newstyle, structured replies, GO, then a
/// write, a read, a flush and a disconnect.
fn valid_session() -> Vec<u8> {
    let mut v = ((codec::FLAG_FIXED_NEWSTYLE | codec::FLAG_NO_ZEROES) as u32)
        .to_be_bytes()
        .to_vec();
    v.extend(codec::option(codec::OPT_STRUCTURED_REPLY, &[]));
    v.extend(codec::option(codec::OPT_GO, &[0, 0, 0, 0, 0, 0]));
    let mut req = [0u8; codec::REQUEST_LEN];
    codec::encode_request(&mut req, codec::CMD_WRITE, 1, 4096, 4096);
    v.extend(req);
    v.extend(vec![7u8; 4096]);
    for (cmd, cookie, len) in [
        (codec::CMD_READ, 2, 4096),
        (codec::CMD_FLUSH, 3, 0),
        (codec::CMD_DISC, 4, 0),
    ] {
        codec::encode_request(&mut req, cmd, cookie, 0, len);
        v.extend(req);
    }
    v
}

/// A valid handshake followed by requests whose every field is random.
fn random_requests(rng: &mut Rng) -> Vec<u8> {
    let s = valid_session();
    let mut v = s[..s.len() - 4 * codec::REQUEST_LEN - 4096].to_vec();
    for _ in 0..1 + rng.below(8) {
        let mut req = [0u8; codec::REQUEST_LEN];
        let cmd = rng.below(12) as u16;
        let offset = match rng.below(3) {
            0 => rng.next_u64(),
            1 => u64::MAX - rng.below(8192) as u64,
            _ => (rng.below(2048) * 4096) as u64,
        };
        codec::encode_request(&mut req, cmd, rng.next_u64(), offset, rng.edge_u32());
        req[4..6].copy_from_slice(&(rng.next_u64() as u16).to_be_bytes());
        v.extend(req);
        if cmd == codec::CMD_WRITE {
            let n = rng.below(64 << 10);
            v.extend(rng.bytes(n));
        }
    }
    v
}

#[test]
fn hostile_clients_never_stop_the_target() {
    let seed = fuzz_peer::seed();
    eprintln!("seed {seed} (IOLAB_FUZZ_SEED replays it)");
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("disk.img");
    std::fs::File::create(&p)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    let mut cfg = TargetConfig::new(&p, "127.0.0.1:0".parse().unwrap());
    cfg.threads = 2;
    cfg.negotiation_deadline = Duration::from_secs(2);
    let t = start(&cfg).unwrap();
    let rss_before = fuzz_peer::rss_kib();
    let valid = valid_session();
    let started = Instant::now();
    let mut sent = 0;
    while sent < 400 && started.elapsed() < Duration::from_secs(90) {
        let bytes = match rng.below(3) {
            0 => {
                let n = rng.below(2048);
                rng.bytes(n)
            }
            1 => mutate(&valid, &mut rng),
            _ => random_requests(&mut rng),
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
    // A real client is still served.
    let url = format!("nbd://{}/", t.addr);
    let ep = crate::plan::endpoint::endpoint_of(Path::new(&url))
        .unwrap()
        .unwrap();
    let (mut s, _): (TcpStream, _) = crate::engine::nbd::handshake::connect(&ep).unwrap();
    let mut req = [0u8; codec::REQUEST_LEN];
    codec::encode_request(&mut req, codec::CMD_READ, 9, 0, 4096);
    std::io::Write::write_all(&mut s, &req).unwrap();
    let mut data = vec![0u8; 4096];
    let reply = crate::remote::breakdown::read_reply(&mut s, true, &mut data).unwrap();
    assert_eq!(reply, (9, 0));
    t.stop()
        .expect("no reactor or handshake ended with an error or panic");
}
