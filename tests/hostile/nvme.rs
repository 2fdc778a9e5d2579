//! A hostile NVMe/TCP controller: iolab's controller model
//! (`target::nvme_controller`) over a RAM disk, answering ICReq and
//! capsules one at a time, with one twist per `Play`: no ICResp, an
//! ICResp whose PDU length is absurd, Identify data at an absurd offset,
//! I/O commands never answered, or one message mutated (then the
//! connection closes).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use iolab::engine::nvmetcp::codec::{self, Cqe, DataHeader, Digests, Ic};
use iolab::target::nvme_controller::{Action, Controller};

use super::mutate::{mutate, Fields, Rng};

/// A PDU's hlen, pdo and plen; a data PDU's offset and length.
const FIELDS: Fields = Fields {
    big_endian: false,
    at: &[(2, 1), (3, 1), (4, 4), (12, 4), (16, 4)],
};
use super::{release_pair, stall, Server};

pub const NQN: &str = "nqn.2025-11.io.iolab:hostile";
const DISK: usize = 1 << 20;

/// What the controller does.
#[derive(Debug, Clone, Copy)]
pub enum Play {
    /// Read the ICReq, never answer.
    NoIcResp,
    /// Answer ICReq with a common header saying this PDU length.
    IcRespPlen(u32),
    /// Send Identify's data at this offset of its transfer, then wait.
    IdentifyAt(u32),
    /// Set up normally, then never answer an I/O command.
    StallIo,
    /// Mutate one message (chosen by the seed), send it and close.
    Fuzz(u64),
}

/// Serve `play` to at most `conns` connections on a free loopback port.
pub fn serve(play: Play, conns: usize) -> Server {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (release, released) = release_pair();
    let released = Arc::new(Mutex::new(released));
    let ctrl = Arc::new(Mutex::new(Controller::new(NQN, 1, DISK as u64, 512)));
    std::thread::spawn(move || {
        for (i, s) in l.incoming().take(conns).enumerate() {
            let Ok(s) = s else { return };
            let (ctrl, released) = (ctrl.clone(), released.clone());
            std::thread::spawn(move || {
                let mut c = Conn::new(s, play, i as u64);
                if c.run(&ctrl) == Some(Hold) {
                    let guard = released.lock().unwrap();
                    stall(&guard);
                }
            });
        }
    });
    Server::new(port, release)
}

/// The connection is to stay open without a word.
#[derive(Debug, PartialEq, Eq)]
struct Hold;

struct Conn {
    s: TcpStream,
    play: Play,
    rng: Rng,
    rx: Vec<u8>,
    sent: u64,
    bad: Option<u64>,
}

impl Conn {
    fn new(s: TcpStream, play: Play, i: u64) -> Conn {
        let _ = s.set_read_timeout(Some(super::HOLD));
        let seed = match play {
            Play::Fuzz(seed) => seed ^ i.wrapping_mul(0x5851_F42D_4C95_7F2D),
            _ => 0,
        };
        let mut rng = Rng::new(seed);
        let bad = matches!(play, Play::Fuzz(_)).then(|| rng.below(14));
        Conn {
            s,
            play,
            rng,
            rx: Vec::new(),
            sent: 0,
            bad,
        }
    }

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

    fn read_pdu(&mut self) -> Option<(codec::CommonHeader, Vec<u8>, Vec<u8>)> {
        loop {
            match codec::split_pdu(&self.rx, Digests::default()) {
                Ok(Some((p, n))) => {
                    let out = (p.header, p.specific.to_vec(), p.data.to_vec());
                    self.rx.drain(..n);
                    return Some(out);
                }
                Ok(None) => {}
                Err(_) => return None,
            }
            let mut b = [0u8; 65536];
            let k = self.s.read(&mut b).ok().filter(|&k| k > 0)?;
            self.rx.extend_from_slice(&b[..k]);
        }
    }

    /// Serve until the script ends the connection; `Some(Hold)` to stall.
    fn run(&mut self, ctrl: &Mutex<Controller>) -> Option<Hold> {
        let mut disk = vec![0u8; DISK];
        let mut admin = true;
        loop {
            let (header, specific, data) = self.read_pdu()?;
            let raw = codec::RawPdu {
                header,
                specific: &specific,
                data: &data,
            };
            if header.pdu_type == codec::PDU_ICREQ {
                match self.play {
                    Play::NoIcResp => return Some(Hold),
                    Play::IcRespPlen(plen) => {
                        let mut b = codec::encode_ic(codec::PDU_ICRESP, &ic()).ok()?;
                        b[4..8].copy_from_slice(&plen.to_le_bytes());
                        self.s.write_all(&b).ok()?;
                        return Some(Hold);
                    }
                    _ => {}
                }
                let b = codec::encode_ic(codec::PDU_ICRESP, &ic()).ok()?;
                if !self.say(b) {
                    return None;
                }
                continue;
            }
            let sqe = codec::parse_capsule(&raw).ok()?;
            let connect =
                sqe.opcode() == codec::OPC_FABRICS && sqe.fctype() == codec::FCTYPE_CONNECT;
            if connect {
                admin = sqe.connect_qid() == 0;
            }
            if !admin && !connect && matches!(self.play, Play::StallIo) {
                return Some(Hold);
            }
            if admin && sqe.opcode() == codec::OPC_IDENTIFY {
                if let Play::IdentifyAt(offset) = self.play {
                    let b = c2h(sqe.cid(), offset, &[0x5a; 4096])?;
                    self.s.write_all(&b).ok()?;
                    return Some(Hold);
                }
            }
            let action = {
                let mut c = ctrl.lock().unwrap();
                if admin || connect {
                    c.admin(&sqe, &data)
                } else {
                    c.io(&sqe)
                }
            };
            let (cqe, out) = match action {
                Action::Reply { cqe, data } => (cqe, data),
                Action::Read { cid, offset, len } => {
                    let o = offset as usize;
                    (Cqe::success(cid, 0), disk[o..o + len as usize].to_vec())
                }
                Action::Write { cid, offset, .. } => {
                    let o = offset as usize;
                    disk[o..o + data.len()].copy_from_slice(&data);
                    (Cqe::success(cid, 0), Vec::new())
                }
                Action::Flush { cid } => (Cqe::success(cid, 0), Vec::new()),
            };
            if !out.is_empty() && !self.say(c2h(cqe.cid, 0, &out)?) {
                return None;
            }
            if !self.say(cqe.capsule(Digests::default()).ok()?) {
                return None;
            }
        }
    }
}

/// The ICResp: no digests, MAXH2CDATA 16 KiB.
fn ic() -> Ic {
    Ic {
        pfv: 0,
        align: 0,
        digests: Digests::default(),
        max: 16384,
    }
}

/// One C2HData PDU with `data` at `offset` of command `cid`'s transfer.
fn c2h(cid: u16, offset: u32, data: &[u8]) -> Option<Vec<u8>> {
    let h = DataHeader {
        cccid: cid,
        ttag: 0,
        offset,
        length: data.len() as u32,
    };
    codec::frame(
        codec::PDU_C2H_DATA,
        codec::FLAG_LAST_PDU,
        &codec::encode_data_header(&h),
        data,
        Digests::default(),
        0,
    )
    .ok()
}
