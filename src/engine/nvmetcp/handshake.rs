//! The control path of an NVMe/TCP initiator over a blocking socket:
//! ICReq/ICResp, Fabrics Connect of the admin queue, CAP, enabling the
//! controller (CC.EN, then CSTS.RDY within CAP.TO), Identify controller,
//! active namespace list (the namespace asked for must be in it) and
//! namespace, Set Features Number of Queues, and Connect of an I/O queue.
//! `Queue::command` runs one command to its completion (C2HData in, R2T ->
//! H2CData out), enough for the admin queue and for checks; the engine
//! pipelines the I/O queues itself. Every wait has a deadline
//! (`peer_wait::HANDSHAKE_TIMEOUT` per step) and, on the engine's side, ends
//! at once on a stop signal; no PDU larger than `MAX_SETUP_PDU` and no
//! data outside a command's transfer is accepted.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use super::codec::{self, Cqe, DataHeader, Digests, Ic, Sqe};
use super::identify::{self, Cap, ControllerId, NamespaceId};
use crate::engine::peer_wait::{Bounded, HANDSHAKE_TIMEOUT};

/// The largest PDU the control path accepts: a 4 KiB Identify page in one
/// C2HData with its header, digests and the largest data alignment fit.
pub const MAX_SETUP_PDU: u32 = 8192;
/// A data PDU's header, digests and alignment padding, at most.
const PDU_OVERHEAD: u32 = 256;

/// Who connects to what.
#[derive(Debug, Clone)]
pub struct Params {
    pub subnqn: String,
    pub hostnqn: String,
    pub hostid: [u8; 16],
    pub nsid: u32,
    /// Digests to ask for (the controller may refuse them).
    pub digests: Digests,
    /// Entries of each I/O queue (the controller's MQES caps it).
    pub queue_size: u16,
    /// Keep-alive timeout asked for on the admin queue (0: none).
    pub kato_ms: u32,
}

/// One queue's connection.
pub struct Queue {
    pub sock: TcpStream,
    /// Digests both sides use.
    pub digests: Digests,
    /// The controller's data alignment for PDUs we send (CPDA).
    pub cpda: u8,
    /// Most data per H2CData PDU.
    pub maxh2cdata: u32,
    rx: Vec<u8>,
    next_cid: u16,
    /// How long each step (ICReq/ICResp, one command) may take.
    pub step_timeout: Duration,
    /// Whether a stop signal ends a wait at once (the engine's set-up);
    /// the keep-alive thread's shutdown must run after one.
    pub honour_stop: bool,
    /// When the current step must be done.
    until: Instant,
    /// The largest PDU the current step may receive.
    max_pdu: u32,
}

/// A received PDU, owned.
struct Pdu {
    header: codec::CommonHeader,
    specific: Vec<u8>,
    data: Vec<u8>,
}

impl Pdu {
    fn raw(&self) -> codec::RawPdu<'_> {
        codec::RawPdu {
            header: self.header,
            specific: &self.specific,
            data: &self.data,
        }
    }
}

/// What the admin queue learned.
#[derive(Debug, Clone)]
pub struct ControllerInfo {
    pub cntlid: u16,
    pub cap: Cap,
    pub id: ControllerId,
    pub ns: NamespaceId,
    /// I/O queues granted (Set Features Number of Queues).
    pub io_queues: u16,
}

impl Queue {
    /// Connect TCP and exchange ICReq/ICResp.
    pub fn open(addr: &str, digests: Digests) -> anyhow::Result<Queue> {
        let sock = connect(addr)?;
        sock.set_nodelay(true)?;
        let req = Ic {
            pfv: 0,
            align: 0,
            digests,
            max: 0,
        };
        let mut q = Queue {
            sock,
            digests: Digests::default(),
            cpda: 0,
            maxh2cdata: 0,
            rx: Vec::new(),
            next_cid: 0,
            step_timeout: HANDSHAKE_TIMEOUT,
            honour_stop: true,
            until: Instant::now() + HANDSHAKE_TIMEOUT,
            max_pdu: MAX_SETUP_PDU,
        };
        q.send(&codec::encode_ic(codec::PDU_ICREQ, &req)?)
            .context("sending ICReq")?;
        let pdu = q.recv().context("waiting for ICResp")?;
        let resp = codec::parse_ic(&pdu.raw())?;
        if pdu.header.pdu_type != codec::PDU_ICRESP {
            bail!("{addr}: expected ICResp, got an ICReq");
        }
        if (resp.digests.header && !digests.header) || (resp.digests.data && !digests.data) {
            bail!("{addr}: the controller enabled digests that were not asked for");
        }
        if resp.max < 4096 {
            bail!("{addr}: MAXH2CDATA {} is under the minimum 4096", resp.max);
        }
        q.digests = resp.digests;
        q.cpda = resp.align;
        q.maxh2cdata = resp.max;
        Ok(q)
    }

    /// The socket, its waits bounded by the current step's deadline.
    fn bounded(&self) -> Bounded<'_> {
        Bounded {
            sock: &self.sock,
            deadline: self.until,
            honour_stop: self.honour_stop,
            what: "an NVMe/TCP set-up step",
        }
    }

    fn send(&mut self, pdu: &[u8]) -> std::io::Result<()> {
        self.bounded().write_all(pdu)
    }

    /// The next PDU (a termination request is an error saying why).
    fn recv(&mut self) -> anyhow::Result<Pdu> {
        loop {
            if self.rx.len() >= codec::COMMON_HEADER_LEN {
                let plen = codec::CommonHeader::parse(&self.rx)?.plen;
                if plen > self.max_pdu {
                    bail!(
                        "PDU length (plen) {plen} from the controller is over the {} bytes this step can need",
                        self.max_pdu
                    );
                }
            }
            if let Some((p, n)) = codec::split_pdu(&self.rx, self.digests)? {
                if matches!(p.header.pdu_type, codec::PDU_C2H_TERM | codec::PDU_H2C_TERM) {
                    bail!(
                        "the controller ended the connection: {}",
                        codec::describe_term(&p)
                    );
                }
                let out = Pdu {
                    header: p.header,
                    specific: p.specific.to_vec(),
                    data: p.data.to_vec(),
                };
                self.rx.drain(..n);
                return Ok(out);
            }
            let mut buf = [0u8; 16 * 1024];
            let n = self.bounded().read(&mut buf)?;
            if n == 0 {
                bail!("the controller closed the connection");
            }
            self.rx.extend_from_slice(&buf[..n]);
        }
    }

    /// A command identifier for the control path (the engine uses slots).
    pub fn next_cid(&mut self) -> u16 {
        self.next_cid = self.next_cid.wrapping_add(1);
        self.next_cid
    }

    /// Run `sqe` to its completion: `out` is its in-capsule data, or the
    /// data the controller asks for with R2T when the SGL is a transport
    /// one; C2HData is collected into `into`. A failed status is an error
    /// naming it.
    pub fn command(&mut self, sqe: &Sqe, out: &[u8], into: &mut Vec<u8>) -> anyhow::Result<Cqe> {
        let in_capsule = sqe.sgl_desc().0 == codec::SGL_IN_CAPSULE;
        let capsule_data = if in_capsule { out } else { &[][..] };
        let pdu = sqe.capsule(capsule_data, self.digests, self.cpda)?;
        self.until = Instant::now() + self.step_timeout;
        self.send(&pdu)?;
        // The most data the command can bring back: what its SGL describes.
        let expected = if in_capsule { 0 } else { sqe.sgl_desc().1 };
        self.max_pdu = MAX_SETUP_PDU.max(expected.saturating_add(PDU_OVERHEAD));
        loop {
            let pdu = self.recv()?;
            match pdu.header.pdu_type {
                codec::PDU_CAPSULE_RESP => {
                    let cqe = codec::parse_response(&pdu.raw())?;
                    if cqe.cid != sqe.cid() {
                        bail!(
                            "a completion for command {} while {} runs",
                            cqe.cid,
                            sqe.cid()
                        );
                    }
                    if !cqe.ok() {
                        let (sct, sc) = cqe.code();
                        bail!("{}", codec::status_text(sct, sc));
                    }
                    return Ok(cqe);
                }
                codec::PDU_C2H_DATA => {
                    let h = codec::parse_data_header(&pdu.raw())?;
                    let end = h.offset as u64 + pdu.data.len() as u64;
                    if end > expected as u64 {
                        bail!(
                            "C2HData at data offset {} with {} bytes lies outside the command's {expected} byte transfer",
                            h.offset,
                            pdu.data.len()
                        );
                    }
                    let end = end as usize;
                    if into.len() < end {
                        into.resize(end, 0);
                    }
                    into[h.offset as usize..end].copy_from_slice(&pdu.data);
                    if pdu.header.flags & codec::FLAG_SUCCESS != 0 {
                        return Ok(Cqe::success(sqe.cid(), 0));
                    }
                }
                codec::PDU_R2T => {
                    let h = codec::parse_data_header(&pdu.raw())?;
                    self.send_h2c(sqe.cid(), &h, out)?;
                }
                t => bail!("unexpected PDU type 0x{t:02x} while a command runs"),
            }
        }
    }

    /// Send the part of `out` an R2T asks for, in H2CData PDUs of at most MAXH2CDATA.
    fn send_h2c(&mut self, cid: u16, r2t: &DataHeader, out: &[u8]) -> anyhow::Result<()> {
        let (start, end) = (r2t.offset as u64, r2t.offset as u64 + r2t.length as u64);
        if end > out.len() as u64 {
            bail!("R2T asks for bytes {start}..{end} of {}", out.len());
        }
        let (start, end) = (start as usize, end as usize);
        let mut at = start;
        while at < end {
            let n = (end - at).min(self.maxh2cdata as usize);
            let h = DataHeader {
                cccid: cid,
                ttag: r2t.ttag,
                offset: at as u32,
                length: n as u32,
            };
            let last = if at + n == end {
                codec::FLAG_LAST_PDU
            } else {
                0
            };
            let pdu = codec::frame(
                codec::PDU_H2C_DATA,
                last,
                &codec::encode_data_header(&h),
                &out[at..at + n],
                self.digests,
                self.cpda,
            )?;
            self.send(&pdu)?;
            at += n;
        }
        Ok(())
    }
}

/// Connect the admin queue, enable the controller and learn the namespace.
pub fn connect_admin(addr: &str, p: &Params) -> anyhow::Result<(Queue, ControllerInfo)> {
    let mut q = Queue::open(addr, p.digests)?;
    let info = bring_up(&mut q, addr, p)?;
    Ok((q, info))
}

/// A queue of any fabric the control path can run commands on.
pub trait HostQueue {
    /// A command identifier for the control path (the engines use slots).
    fn next_cid(&mut self) -> u16;
    /// Run `sqe` to its completion: `out` is the data it sends, `into`
    /// receives what it brings back; a failed status is an error naming it.
    fn command(&mut self, sqe: &Sqe, out: &[u8], into: &mut Vec<u8>) -> anyhow::Result<Cqe>;
    /// Whether a stop signal ends a wait at once.
    fn honour_stop(&self) -> bool;
    /// How long each command may take, and whether a stop signal ends a
    /// wait (the keep-alive thread's shutdown must run after one).
    fn set_control(&mut self, step: Duration, honour_stop: bool);
}

impl HostQueue for Queue {
    fn next_cid(&mut self) -> u16 {
        Queue::next_cid(self)
    }

    fn command(&mut self, sqe: &Sqe, out: &[u8], into: &mut Vec<u8>) -> anyhow::Result<Cqe> {
        Queue::command(self, sqe, out, into)
    }

    fn honour_stop(&self) -> bool {
        self.honour_stop
    }

    fn set_control(&mut self, step: Duration, honour_stop: bool) {
        self.step_timeout = step;
        self.honour_stop = honour_stop;
    }
}

/// Fabrics Connect of queue `qid` (`sqsize` entries, 0's based) to
/// controller `cntlid` (0xFFFF: a new one, on the admin queue); the
/// controller's ID.
pub fn fabrics_connect<Q: HostQueue>(
    q: &mut Q,
    p: &Params,
    qid: u16,
    sqsize: u16,
    cntlid: u16,
) -> anyhow::Result<u16> {
    let cid = q.next_cid();
    let kato = if qid == 0 { p.kato_ms } else { 0 };
    let data = codec::connect_data(p.hostid, cntlid, &p.subnqn, &p.hostnqn)?;
    let cqe = q
        .command(
            &Sqe::connect(cid, qid, sqsize, kato),
            &data,
            &mut Vec::new(),
        )
        .with_context(|| format!("Connect of queue {qid} to {}", p.subnqn))?;
    Ok(cqe.result as u16)
}

fn property<Q: HostQueue>(q: &mut Q, offset: u32, eight: bool) -> anyhow::Result<u64> {
    let cid = q.next_cid();
    Ok(
        q.command(&Sqe::property_get(cid, offset, eight), &[], &mut Vec::new())?
            .result,
    )
}

/// On a freshly opened admin queue of any fabric: Connect, CAP, enable
/// the controller, Identify it, check the namespace is active and
/// Identify it, ask for queues.
pub fn bring_up<Q: HostQueue>(q: &mut Q, addr: &str, p: &Params) -> anyhow::Result<ControllerInfo> {
    let cntlid = fabrics_connect(q, p, 0, 31, 0xFFFF)?;
    let cap = Cap::parse(property(q, codec::PROP_CAP, true)?);
    if !cap.nvm {
        bail!("{addr}: the controller does not support the NVM command set");
    }
    let cid = q.next_cid();
    q.command(
        &Sqe::property_set(cid, codec::PROP_CC, false, identify::CC_ENABLE as u64),
        &[],
        &mut Vec::new(),
    )
    .context("enabling the controller (CC.EN)")?;
    let until = Instant::now() + Duration::from_millis(500 * cap.timeout.max(1) as u64);
    loop {
        let csts = property(q, codec::PROP_CSTS, false)? as u32;
        if csts & identify::CSTS_CFS != 0 {
            bail!("{addr}: controller fatal status after enabling");
        }
        if csts & identify::CSTS_RDY != 0 {
            break;
        }
        if q.honour_stop() && crate::interrupt::stop_requested() {
            bail!("{addr}: stopped by a signal while waiting for the controller to be ready");
        }
        if Instant::now() > until {
            bail!(
                "{addr}: the controller was not ready within CAP.TO ({} x 500 ms)",
                cap.timeout
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut identify = |cns: u8, nsid: u32, what: &str| -> anyhow::Result<Vec<u8>> {
        let mut page = Vec::new();
        let cid = q.next_cid();
        q.command(&Sqe::identify(cid, cns, nsid), &[], &mut page)
            .with_context(|| what.to_string())?;
        Ok(page)
    };
    let id = ControllerId::parse(&identify(codec::CNS_CONTROLLER, 0, "Identify Controller")?)?;
    let page = identify(
        codec::CNS_ACTIVE_NAMESPACES,
        0,
        "Identify, active namespace list",
    )?;
    let active = identify::parse_active_namespaces(&page);
    if !active.contains(&p.nsid) {
        bail!(
            "{addr}: namespace {} is not active in {} (active: {:?}); use ?nsid= with one of them",
            p.nsid,
            p.subnqn,
            active
        );
    }
    let what = format!("Identify Namespace {}", p.nsid);
    let ns = NamespaceId::parse(&identify(codec::CNS_NAMESPACE, p.nsid, &what)?)?;
    let cid = q.next_cid();
    let granted = q
        .command(&Sqe::set_num_queues(cid, 64), &[], &mut Vec::new())
        .context("Set Features, Number of Queues")?
        .result;
    let io_queues = ((granted & 0xFFFF).min(granted >> 16 & 0xFFFF) + 1) as u16;
    Ok(ControllerInfo {
        cntlid,
        cap,
        id,
        ns,
        io_queues,
    })
}

/// Connect I/O queue `qid` of controller `info` (its size capped by MQES).
pub fn connect_io(
    addr: &str,
    p: &Params,
    info: &ControllerInfo,
    qid: u16,
) -> anyhow::Result<Queue> {
    if qid == 0 || qid > info.io_queues {
        bail!(
            "I/O queue {qid} of the {} the controller granted",
            info.io_queues
        );
    }
    let mut q = Queue::open(addr, p.digests)?;
    let entries = p.queue_size.min(info.cap.mqes.saturating_add(1)).max(2);
    fabrics_connect(&mut q, p, qid, entries - 1, info.cntlid)?;
    Ok(q)
}

/// TCP connect to `addr` (`host:port`), each address tried for at most
/// `HANDSHAKE_TIMEOUT`.
fn connect(addr: &str) -> anyhow::Result<TcpStream> {
    let addrs: Vec<_> = addr
        .to_socket_addrs()
        .with_context(|| format!("resolving {addr}"))?
        .collect();
    let mut last = None;
    for a in &addrs {
        match TcpStream::connect_timeout(a, HANDSHAKE_TIMEOUT) {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
    }
    let e = last.unwrap_or_else(|| std::io::Error::other("no address"));
    Err(anyhow::Error::new(e).context(format!("connecting to {addr}")))
}

#[cfg(test)]
mod tests;
