//! The NVMe controller behind iolab's NVMe target, without I/O: one
//! subsystem with one namespace backed by a file of `size` bytes in blocks
//! of `block_size`. It answers the Fabrics and admin commands (Connect,
//! Property Get/Set with CC.EN -> CSTS.RDY and shutdown, Identify
//! controller / namespace / active namespace list, Set Features Number of
//! Queues, Keep Alive) and turns NVM commands into the file operation to
//! do, checked against the namespace (Read, Write, Flush). A discovery
//! controller (Connect to the well-known discovery NQN) has no namespace
//! and no I/O queues: it answers Identify Controller and the discovery log
//! page (`Role::Discovery`). It knows no fabric: capsules, data transfer
//! and I/O are the target core's and its fabric's (`nvme_target`).

use std::sync::Arc;

use crate::proto::nvme::codec::{self, Cqe, Sqe};
use crate::proto::nvme::discovery::{self, DISCOVERY_NQN};
use crate::proto::nvme::identify::{
    self, Cap, ControllerId, NamespaceId, CC_EN, CC_SHUTDOWN, CSTS_RDY, CSTS_SHUTDOWN_DONE,
};

/// Status codes the controller answers with (type 0 unless said).
const SC_INVALID_OPCODE: u8 = 0x01;
const SC_INVALID_FIELD: u8 = 0x02;
const SC_INVALID_NS: u8 = 0x0B;
const SC_LBA_RANGE: u8 = 0x80;
/// Command specific (type 1): Connect's invalid parameters.
const SC_CONNECT_INVALID_PARAM: u8 = 0x82;

/// The queue entries a queue may hold (MQES + 1) and the I/O queues offered.
pub const QUEUE_ENTRIES: u16 = 128;
pub const IO_QUEUES: u16 = 64;
/// In-capsule data an I/O command may carry.
pub const IN_CAPSULE: u32 = 8192;
/// Largest transfer: 2^MDTS pages of 4 KiB.
pub const MDTS: u8 = 8;
/// Most bytes one Get Log Page may ask for (a hostile NUMD asks for up to
/// 16 GiB): the discovery log of one subsystem is 2 KiB.
pub const MAX_LOG_READ: u64 = 64 << 10;

/// What a controller is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// The subsystem's controller: one namespace, I/O queues.
    Nvm,
    /// A discovery controller, holding its discovery log page.
    Discovery { log: Arc<Vec<u8>> },
}

/// What one command asks of the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send this completion; `data` first (the fabric pushes it to the
    /// host: C2HData on TCP) when there is any.
    Reply { cqe: Cqe, data: Vec<u8> },
    /// Read `len` bytes at `offset` of the file, send them, then succeed.
    Read { cid: u16, offset: u64, len: u32 },
    /// Write `len` bytes at `offset`: the in-capsule data, or the data the
    /// fabric fetches from the host when the capsule has none (R2T and
    /// H2CData on TCP).
    Write { cid: u16, offset: u64, len: u32 },
    /// Flush the file, then succeed.
    Flush { cid: u16 },
}

/// One controller (an admin queue and the I/O queues connected to it).
#[derive(Debug, Clone)]
pub struct Controller {
    pub subnqn: String,
    pub cntlid: u16,
    pub role: Role,
    size: u64,
    block_size: u32,
    /// Largest transfer: 2^mdts pages of 4 KiB (MDTS unless the fabric
    /// asks for less, `with_mdts`).
    mdts: u8,
    cc: u32,
    csts: u32,
}

fn reply(cid: u16, result: u64) -> Action {
    Action::Reply {
        cqe: Cqe::success(cid, result),
        data: Vec::new(),
    }
}

fn fail(cid: u16, sct: u8, sc: u8) -> Action {
    Action::Reply {
        cqe: Cqe {
            status: Cqe::status_of(sct, sc, true),
            ..Cqe::success(cid, 0)
        },
        data: Vec::new(),
    }
}

impl Controller {
    pub fn new(subnqn: &str, cntlid: u16, size: u64, block_size: u32) -> Controller {
        Controller {
            subnqn: subnqn.to_string(),
            cntlid,
            role: Role::Nvm,
            size: size / block_size as u64 * block_size as u64,
            block_size,
            mdts: MDTS,
            cc: 0,
            csts: 0,
        }
    }

    /// The same controller with transfers of at most 2^`mdts` pages.
    pub fn with_mdts(mut self, mdts: u8) -> Controller {
        self.mdts = mdts.min(MDTS);
        self
    }

    /// A discovery controller whose log page is `log`.
    pub fn discovery(cntlid: u16, log: Arc<Vec<u8>>) -> Controller {
        Controller {
            role: Role::Discovery { log },
            ..Controller::new(DISCOVERY_NQN, cntlid, 0, 512)
        }
    }

    fn is_discovery(&self) -> bool {
        matches!(self.role, Role::Discovery { .. })
    }

    pub fn ready(&self) -> bool {
        self.csts & CSTS_RDY != 0
    }

    fn cap(&self) -> u64 {
        Cap {
            mqes: QUEUE_ENTRIES - 1,
            cqr: true,
            timeout: 10,
            nvm: true,
            mpsmin: 0,
        }
        .encode()
    }

    /// The Identify Controller data of this controller.
    pub fn identify(&self) -> ControllerId {
        let discovery = self.is_discovery();
        ControllerId {
            vid: 0,
            serial: format!("iolab-{}", self.cntlid),
            // The same over TCP and RDMA: one controller, two fabrics.
            model: "iolab NVMe-oF target".into(),
            firmware: env!("CARGO_PKG_VERSION").chars().take(8).collect(),
            mdts: if discovery { 0 } else { self.mdts },
            cntlid: self.cntlid,
            ver: 0x0001_0400,
            cntrltype: if discovery {
                discovery::CNTRLTYPE_DISCOVERY
            } else {
                1
            },
            kas: 100,
            lpa: 1 << 2,
            sqes: 0x66,
            cqes: 0x44,
            maxcmd: QUEUE_ENTRIES,
            nn: u32::from(!discovery),
            oncs: 0,
            vwc: !discovery,
            // SGLs; keyed SGL data blocks (NVMe over RDMA; Linux's nvme-rdma
            // refuses a controller without); SGL offsets (in-capsule data).
            sgls: 1 | 1 << 2 | 1 << 20,
            subnqn: self.subnqn.clone(),
            // Linux hosts check these of discovery controllers too.
            ioccsz: (64 + IN_CAPSULE) / 16,
            iorcsz: 1,
            icdoff: 0,
            msdbd: 1,
        }
    }

    /// The namespace identification descriptor list: one UUID, derived
    /// from the subsystem NQN (hosts need one to tell namespaces apart).
    fn ns_descriptors(&self) -> Vec<u8> {
        let mut page = vec![0u8; identify::IDENTIFY_LEN];
        page[0] = 0x03; // NIDT: UUID
        page[1] = 16;
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in self.subnqn.bytes() {
            h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
        page[4..12].copy_from_slice(&h.to_le_bytes());
        page[12..20].copy_from_slice(&h.rotate_left(29).to_le_bytes());
        page
    }

    fn namespace(&self) -> NamespaceId {
        let blocks = self.size / self.block_size as u64;
        NamespaceId {
            nsze: blocks,
            ncap: blocks,
            nuse: blocks,
            block_size: self.block_size,
        }
    }

    /// Check a Connect on `qid` against this controller: its data names this
    /// subsystem, and (I/O queues) this controller, and the queue size fits.
    pub fn check_connect(&self, sqe: &Sqe, data: &[u8]) -> Result<(), Action> {
        let cid = sqe.cid();
        let bad = || fail(cid, 1, SC_CONNECT_INVALID_PARAM);
        let Ok((_, cntlid, subnqn, _)) = codec::parse_connect_data(data) else {
            return Err(bad());
        };
        let (qid, sqsize) = (sqe.connect_qid(), sqe.connect_sqsize());
        let wrong_ctrl = qid > 0 && cntlid != self.cntlid;
        if subnqn != self.subnqn
            || wrong_ctrl
            || (qid > 0 && self.is_discovery())
            || sqsize >= QUEUE_ENTRIES
            || sqsize == 0
            || qid > IO_QUEUES
        {
            return Err(bad());
        }
        if qid > 0 && !self.ready() {
            return Err(fail(cid, 0, SC_INVALID_FIELD));
        }
        Ok(())
    }

    /// The answer to an admin or Fabrics command on the admin queue (its
    /// in-capsule `data`, if any). Connect is answered with the controller ID.
    pub fn admin(&mut self, sqe: &Sqe, data: &[u8]) -> Action {
        let cid = sqe.cid();
        match sqe.opcode() {
            codec::OPC_FABRICS => self.fabrics(sqe, data),
            codec::OPC_IDENTIFY if self.is_discovery() => match (sqe.dword(10) & 0xFF) as u8 {
                codec::CNS_CONTROLLER => match self.identify().encode() {
                    Ok(data) => Action::Reply {
                        cqe: Cqe::success(cid, 0),
                        data,
                    },
                    Err(_) => fail(cid, 0, SC_INVALID_FIELD),
                },
                _ => fail(cid, 0, SC_INVALID_FIELD),
            },
            codec::OPC_GET_LOG_PAGE if self.is_discovery() => self.discovery_log(sqe),
            codec::OPC_SET_FEATURES if self.is_discovery() => fail(cid, 0, SC_INVALID_FIELD),
            codec::OPC_IDENTIFY => {
                let page = match (sqe.dword(10) & 0xFF) as u8 {
                    codec::CNS_CONTROLLER => self.identify().encode(),
                    codec::CNS_NAMESPACE if sqe.nsid() == 1 => self.namespace().encode(),
                    codec::CNS_NAMESPACE => return fail(cid, 0, SC_INVALID_NS),
                    codec::CNS_NS_DESCRIPTORS if sqe.nsid() == 1 => Ok(self.ns_descriptors()),
                    codec::CNS_NS_DESCRIPTORS => return fail(cid, 0, SC_INVALID_NS),
                    codec::CNS_ACTIVE_NAMESPACES => {
                        Ok(identify::encode_active_namespaces(if sqe.nsid() < 1 {
                            &[1]
                        } else {
                            &[]
                        }))
                    }
                    _ => return fail(cid, 0, SC_INVALID_FIELD),
                };
                match page {
                    Ok(data) => Action::Reply {
                        cqe: Cqe::success(cid, 0),
                        data,
                    },
                    Err(_) => fail(cid, 0, SC_INVALID_FIELD),
                }
            }
            codec::OPC_SET_FEATURES if (sqe.dword(10) & 0xFF) as u8 == codec::FID_NUM_QUEUES => {
                // Grant at most IO_QUEUES of each (0's based in both directions).
                let want = sqe.dword(11);
                let nsq = (want & 0xFFFF).min(IO_QUEUES as u32 - 1);
                let ncq = (want >> 16).min(IO_QUEUES as u32 - 1);
                reply(cid, (nsq | ncq << 16) as u64)
            }
            codec::OPC_SET_FEATURES => fail(cid, 0, SC_INVALID_FIELD),
            codec::OPC_KEEP_ALIVE => reply(cid, 0),
            codec::OPC_GET_LOG_PAGE => {
                // Every log page reads as zeros (no errors, no SMART data
                // worth reporting): what a host asks for while it attaches.
                let dwords = (sqe.dword(10) >> 16 | (sqe.dword(11) & 0xFFFF) << 16) as usize + 1;
                let len = (dwords * 4).min(identify::IDENTIFY_LEN);
                Action::Reply {
                    cqe: Cqe::success(cid, 0),
                    data: vec![0u8; len],
                }
            }
            _ => fail(cid, 0, SC_INVALID_OPCODE),
        }
    }

    /// Get Log Page on a discovery controller: the discovery log from the
    /// command's offset for its length (zeros past the log's end, as Linux
    /// answers), offsets in whole dwords, at most `MAX_LOG_READ` bytes.
    fn discovery_log(&self, sqe: &Sqe) -> Action {
        let cid = sqe.cid();
        let Role::Discovery { log } = &self.role else {
            return fail(cid, 0, SC_INVALID_FIELD);
        };
        let (lid, offset, len) = sqe.log_page();
        if lid != discovery::LID_DISCOVERY || offset % 4 != 0 || len > MAX_LOG_READ {
            return fail(cid, 0, SC_INVALID_FIELD);
        }
        let mut data = vec![0u8; len as usize];
        if let Some(rest) = log.get(offset.min(log.len() as u64) as usize..) {
            let n = rest.len().min(data.len());
            data[..n].copy_from_slice(&rest[..n]);
        }
        Action::Reply {
            cqe: Cqe::success(cid, 0),
            data,
        }
    }

    fn fabrics(&mut self, sqe: &Sqe, data: &[u8]) -> Action {
        let cid = sqe.cid();
        match sqe.fctype() {
            codec::FCTYPE_CONNECT => match self.check_connect(sqe, data) {
                Ok(()) => reply(cid, self.cntlid as u64),
                Err(a) => a,
            },
            codec::FCTYPE_PROPERTY_GET => {
                let (offset, eight, _) = sqe.property();
                let v = match (offset, eight) {
                    (codec::PROP_CAP, true) => self.cap(),
                    (codec::PROP_VS, false) => 0x0001_0400,
                    (codec::PROP_CC, false) => self.cc as u64,
                    (codec::PROP_CSTS, false) => self.csts as u64,
                    _ => return fail(cid, 0, SC_INVALID_FIELD),
                };
                reply(cid, v)
            }
            codec::FCTYPE_PROPERTY_SET => {
                let (offset, eight, value) = sqe.property();
                if offset != codec::PROP_CC || eight {
                    return fail(cid, 0, SC_INVALID_FIELD);
                }
                self.set_cc(value as u32);
                reply(cid, 0)
            }
            _ => fail(cid, 0, SC_INVALID_OPCODE),
        }
    }

    /// CC written: enabling makes the controller ready at once, disabling
    /// resets it, a shutdown request completes at once.
    fn set_cc(&mut self, cc: u32) {
        self.cc = cc;
        self.csts = if cc & CC_EN != 0 { CSTS_RDY } else { 0 };
        if cc & (3 << 14) == CC_SHUTDOWN {
            self.csts |= CSTS_SHUTDOWN_DONE;
        }
    }

    /// What an NVM command on an I/O queue asks for, checked against the namespace.
    pub fn io(&self, sqe: &Sqe) -> Action {
        let cid = sqe.cid();
        if !self.ready() {
            return fail(cid, 0, SC_INVALID_FIELD);
        }
        if sqe.nsid() != 1 {
            return fail(cid, 0, SC_INVALID_NS);
        }
        match sqe.opcode() {
            codec::OPC_FLUSH => Action::Flush { cid },
            op @ (codec::OPC_READ | codec::OPC_WRITE) => {
                let (slba, blocks) = sqe.lba_range();
                let bs = self.block_size as u64;
                let len = blocks as u64 * bs;
                let (_, sgl_len) = sqe.sgl_desc();
                // Checked: an SLBA near 2^64 must not wrap round to the start.
                let end = slba
                    .checked_add(blocks as u64)
                    .and_then(|e| e.checked_mul(bs));
                let Some(offset) = slba
                    .checked_mul(bs)
                    .filter(|_| end.is_some_and(|e| e <= self.size))
                else {
                    return fail(cid, 0, SC_LBA_RANGE);
                };
                if sgl_len as u64 != len || len > (4096u64 << self.mdts) {
                    return fail(cid, 0, SC_INVALID_FIELD);
                }
                let len = len as u32;
                if op == codec::OPC_READ {
                    Action::Read { cid, offset, len }
                } else {
                    Action::Write { cid, offset, len }
                }
            }
            _ => fail(cid, 0, SC_INVALID_OPCODE),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::nvme::identify::CC_ENABLE;

    const NQN: &str = "nqn.2025-11.io.iolab:remote";

    fn connect(c: &mut Controller, qid: u16, cntlid: u16, nqn: &str) -> Action {
        let data = codec::connect_data([1; 16], cntlid, nqn, "nqn.host").unwrap();
        c.admin(&Sqe::connect(1, qid, 31, 0), &data)
    }

    fn cqe(a: Action) -> Cqe {
        match a {
            Action::Reply { cqe, .. } => cqe,
            other => panic!("expected a reply, got {other:?}"),
        }
    }

    #[test]
    fn connect_enable_and_identify() {
        let mut c = Controller::new(NQN, 3, 1 << 30, 4096);
        assert_eq!(cqe(connect(&mut c, 0, 0xFFFF, NQN)).result, 3);
        assert!(!cqe(connect(&mut c, 0, 0xFFFF, "nqn.other")).ok());
        // An I/O queue before the controller is enabled, or naming another controller.
        assert!(!cqe(connect(&mut c, 1, 3, NQN)).ok());
        let cap =
            Cap::parse(cqe(c.admin(&Sqe::property_get(2, codec::PROP_CAP, true), &[])).result);
        assert_eq!((cap.mqes, cap.nvm), (127, true));
        assert!(cqe(c.admin(
            &Sqe::property_set(3, codec::PROP_CC, false, CC_ENABLE as u64),
            &[]
        ))
        .ok());
        assert_eq!(
            cqe(c.admin(&Sqe::property_get(4, codec::PROP_CSTS, false), &[])).result,
            1
        );
        assert!(cqe(connect(&mut c, 1, 3, NQN)).ok());
        assert!(!cqe(connect(&mut c, 1, 4, NQN)).ok());
        let Action::Reply { data, .. } = c.admin(&Sqe::identify(5, codec::CNS_CONTROLLER, 0), &[])
        else {
            panic!()
        };
        let id = ControllerId::parse(&data).unwrap();
        assert_eq!(
            (id.cntlid, id.subnqn.as_str(), id.in_capsule_data()),
            (3, NQN, 8192)
        );
        let Action::Reply { data, .. } = c.admin(&Sqe::identify(6, codec::CNS_NAMESPACE, 1), &[])
        else {
            panic!()
        };
        let ns = NamespaceId::parse(&data).unwrap();
        assert_eq!((ns.bytes(), ns.block_size), (1 << 30, 4096));
        let Action::Reply { data, .. } =
            c.admin(&Sqe::identify(7, codec::CNS_ACTIVE_NAMESPACES, 0), &[])
        else {
            panic!()
        };
        assert_eq!(identify::parse_active_namespaces(&data), vec![1]);
        assert_eq!(
            cqe(c.admin(&Sqe::identify(8, codec::CNS_NAMESPACE, 2), &[])).code(),
            (0, SC_INVALID_NS)
        );
        assert_eq!(
            cqe(c.admin(&Sqe::set_num_queues(9, 200), &[])).result,
            (63 | 63 << 16) as u64
        );
        assert!(cqe(c.admin(&Sqe::keep_alive(10), &[])).ok());
    }

    #[test]
    fn io_commands_become_file_operations_within_the_namespace() {
        let mut c = Controller::new(NQN, 1, 1 << 20, 512);
        assert!(!cqe(c.io(&Sqe::read(1, 1, 0, 8, 4096))).ok(), "not enabled");
        c.admin(
            &Sqe::property_set(2, codec::PROP_CC, false, CC_ENABLE as u64),
            &[],
        );
        assert_eq!(
            c.io(&Sqe::read(3, 1, 8, 8, 4096)),
            Action::Read {
                cid: 3,
                offset: 4096,
                len: 4096
            }
        );
        assert_eq!(
            c.io(&Sqe::write(4, 1, 2040, 8, 4096, true)),
            Action::Write {
                cid: 4,
                offset: 2040 * 512,
                len: 4096
            }
        );
        assert_eq!(
            cqe(c.io(&Sqe::read(5, 1, 2041, 8, 4096))).code(),
            (0, SC_LBA_RANGE)
        );
        assert_eq!(
            cqe(c.io(&Sqe::read(6, 1, 0, 8, 512))).code(),
            (0, SC_INVALID_FIELD),
            "SGL length"
        );
        assert_eq!(
            cqe(c.io(&Sqe::read(7, 2, 0, 1, 512))).code(),
            (0, SC_INVALID_NS)
        );
        // An SLBA whose byte offset overflows 64 bits is out of range (it
        // panicked in a debug build and wrapped round to LBA 0 in a release one).
        for slba in [u64::MAX, u64::MAX / 512 + 1, (1u64 << 55) - 1] {
            assert_eq!(
                cqe(c.io(&Sqe::read(11, 1, slba, 8, 4096))).code(),
                (0, SC_LBA_RANGE),
                "SLBA {slba}"
            );
        }
        assert_eq!(c.io(&Sqe::flush(8, 1)), Action::Flush { cid: 8 });
        // A normal shutdown completes at once and leaves the controller not ready.
        c.admin(
            &Sqe::property_set(9, codec::PROP_CC, false, CC_SHUTDOWN as u64),
            &[],
        );
        let csts = cqe(c.admin(&Sqe::property_get(10, codec::PROP_CSTS, false), &[])).result as u32;
        assert_eq!(csts, CSTS_SHUTDOWN_DONE);
    }
}
