//! A hostile NBD server: a normal fixed-newstyle handshake (structured
//! replies, NBD_OPT_GO) and then, per `Play`, silence, a lying export, or
//! one reply mutated after which the connection closes.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};

use iolab::engine::nbd::codec;

use super::mutate::{mutate, Fields, Rng};

/// A structured chunk's length, and an OFFSET_DATA or OFFSET_HOLE chunk's
/// offset and hole length; an option reply's length.
const FIELDS: Fields = Fields {
    big_endian: true,
    at: &[(16, 4), (20, 8), (28, 4), (16, 4)],
};
use super::{release_pair, stall, Server};

/// What the server does.
#[derive(Debug, Clone, Copy)]
pub enum Play {
    /// Complete the handshake, read requests, never answer.
    Stall,
    /// Accept the connection and never greet (a SIGSTOPped nbdkit).
    Silent,
    /// Advertise an export of this many bytes, answer every request.
    Export(u64),
    /// Mutate one of the server's messages (handshake or reply, chosen
    /// by the seed), send it and close.
    Fuzz(u64),
}

/// Serve `play` to at most `conns` connections on a free loopback port.
pub fn serve(play: Play, conns: usize) -> Server {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (release, released) = release_pair();
    let released = Arc::new(Mutex::new(released));
    std::thread::spawn(move || {
        for (i, s) in l.incoming().take(conns).enumerate() {
            let Ok(s) = s else { return };
            let released = released.clone();
            std::thread::spawn(move || connection(s, play, i as u64, &released));
        }
    });
    Server::new(port, release)
}

/// Sends what the script says, mutating message number `bad` (if any).
struct Speaker {
    s: TcpStream,
    rng: Rng,
    sent: u64,
    bad: Option<u64>,
}

impl Speaker {
    /// Send `b` (or its mutation); false when the connection is to close.
    fn say(&mut self, b: Vec<u8>) -> bool {
        let n = self.sent;
        self.sent += 1;
        if Some(n) == self.bad {
            let m = mutate(&mut self.rng, b, FIELDS);
            let _ = self.s.write_all(&m);
            return false;
        }
        self.s.write_all(&b).is_ok()
    }
}

fn connection(s: TcpStream, play: Play, i: u64, released: &Mutex<Receiver<()>>) {
    if matches!(play, Play::Silent) {
        super::stall(&released.lock().unwrap());
        return;
    }
    let _ = s.set_read_timeout(Some(super::HOLD));
    let (size, seed) = match play {
        Play::Export(size) => (size, 0),
        Play::Fuzz(seed) => (1 << 20, seed ^ i.wrapping_mul(0x1234_5678_9abc)),
        Play::Stall | Play::Silent => (1 << 20, 0),
    };
    let mut rng = Rng::new(seed);
    // Which of the first dozen messages is mutated.
    let bad = matches!(play, Play::Fuzz(_)).then(|| rng.below(12));
    let mut sp = Speaker {
        s,
        rng,
        sent: 0,
        bad,
    };
    if handshake(&mut sp, size).is_none() {
        return;
    }
    loop {
        let Some(r) = read_request(&mut sp.s) else {
            return;
        };
        if matches!(play, Play::Stall) {
            let guard = released.lock().unwrap();
            return stall(&guard);
        }
        if r.cmd == codec::CMD_DISC {
            return;
        }
        let answer = reply(&mut sp.rng, &r);
        if !sp.say(answer) {
            return;
        }
    }
}

struct Req {
    cmd: u16,
    cookie: u64,
    offset: u64,
    len: u32,
}

fn read_request(s: &mut TcpStream) -> Option<Req> {
    let mut h = [0u8; codec::REQUEST_LEN];
    s.read_exact(&mut h).ok()?;
    let r = Req {
        cmd: u16::from_be_bytes([h[6], h[7]]),
        cookie: u64::from_be_bytes(h[8..16].try_into().unwrap()),
        offset: u64::from_be_bytes(h[16..24].try_into().unwrap()),
        len: u32::from_be_bytes(h[24..28].try_into().unwrap()),
    };
    if r.cmd == codec::CMD_WRITE {
        let mut d = vec![0u8; r.len as usize];
        s.read_exact(&mut d).ok()?;
    }
    Some(r)
}

/// A correct reply: structured for reads (one data chunk, or data and a
/// hole), simple for the rest.
fn reply(rng: &mut Rng, r: &Req) -> Vec<u8> {
    if r.cmd != codec::CMD_READ {
        return codec::encode_simple_reply(r.cookie, 0).to_vec();
    }
    let chunk = |flags: u16, kind: u16, payload: &[u8]| {
        let mut v =
            codec::encode_chunk_header(r.cookie, flags, kind, payload.len() as u32).to_vec();
        v.extend_from_slice(payload);
        v
    };
    let half = r.len / 2;
    let mut data = r.offset.to_be_bytes().to_vec();
    data.extend(rng.bytes(half as usize));
    let mut hole = (r.offset + half as u64).to_be_bytes().to_vec();
    hole.extend_from_slice(&(r.len - half).to_be_bytes());
    let mut v = chunk(0, codec::REPLY_TYPE_OFFSET_DATA, &data);
    v.extend(chunk(
        codec::REPLY_FLAG_DONE,
        codec::REPLY_TYPE_OFFSET_HOLE,
        &hole,
    ));
    v
}

/// Greeting, structured replies acked, GO answered with `size` bytes and
/// block sizes 512/4096/1 MiB. `None` when the connection is to close.
fn handshake(sp: &mut Speaker, size: u64) -> Option<()> {
    if !sp.say(codec::encode_greeting(3).to_vec()) {
        return None;
    }
    let mut flags = [0u8; 4];
    sp.s.read_exact(&mut flags).ok()?;
    for _ in 0..2 {
        let mut h = [0u8; 16];
        sp.s.read_exact(&mut h).ok()?;
        let opt = u32::from_be_bytes(h[8..12].try_into().unwrap());
        let len = u32::from_be_bytes(h[12..16].try_into().unwrap());
        let mut data = vec![0u8; len.min(1 << 16) as usize];
        sp.s.read_exact(&mut data).ok()?;
        if opt == codec::OPT_GO {
            let info =
                codec::encode_info_export(size, codec::TFLAG_HAS_FLAGS | codec::TFLAG_SEND_FLUSH);
            let bs = codec::encode_info_block_size(512, 4096, 1 << 20);
            for payload in [info, bs] {
                if !sp.say(codec::encode_opt_reply(opt, codec::REP_INFO, &payload)) {
                    return None;
                }
            }
        }
        if !sp.say(codec::encode_opt_reply(opt, codec::REP_ACK, &[])) {
            return None;
        }
    }
    Some(())
}
