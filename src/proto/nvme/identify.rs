//! The data an NVMe over Fabrics controller describes itself with, as pure
//! functions: the Identify Controller and Identify Namespace data structures
//! (the fields an initiator needs and a minimal target must fill), the
//! active namespace list, and the controller properties CAP, CC and CSTS.
//! Byte offsets are the NVMe base specification's; everything is
//! little-endian. The initiator parses what the target encodes.

use super::codec::{err, le16, le32, le64, Result};

/// Identify data is one 4 KiB page.
pub const IDENTIFY_LEN: usize = 4096;

/// A space-padded ASCII field (serial number, model, firmware revision).
fn put_ascii(b: &mut [u8], s: &str) {
    b.fill(b' ');
    let n = s.len().min(b.len());
    b[..n].copy_from_slice(&s.as_bytes()[..n]);
}

fn ascii(b: &[u8]) -> String {
    String::from_utf8_lossy(b)
        .trim_end_matches([' ', '\0'])
        .to_string()
}

/// The Identify Controller fields iolab writes and reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerId {
    pub vid: u16,
    pub serial: String,
    pub model: String,
    pub firmware: String,
    /// Maximum data transfer size, a power of two of the minimum page size (0: no limit).
    pub mdts: u8,
    pub cntlid: u16,
    /// Version: major << 16 | minor << 8 | tertiary.
    pub ver: u32,
    /// Controller type: 1 = I/O controller.
    pub cntrltype: u8,
    /// Keep-alive support, in units of 100 ms (0: none).
    pub kas: u16,
    /// Log page attributes (bit 2: Get Log Page takes an offset).
    pub lpa: u8,
    /// Queue entry sizes, required and maximum, as powers of two (0x66, 0x44).
    pub sqes: u8,
    pub cqes: u8,
    pub maxcmd: u16,
    /// Number of namespaces (highest NSID).
    pub nn: u32,
    /// Optional NVM commands (bit 2: Dataset Management, bit 3: Write Zeroes).
    pub oncs: u16,
    /// A volatile write cache is present (Flush does something).
    pub vwc: bool,
    /// SGL support (bit 0: SGLs, bit 20: offsets in the capsule).
    pub sgls: u32,
    pub subnqn: String,
    /// I/O command capsule size in 16-byte units (64-byte command + in-capsule data).
    pub ioccsz: u32,
    /// I/O response capsule size in 16-byte units.
    pub iorcsz: u32,
    /// In-capsule data offset in 16-byte units (0 for TCP).
    pub icdoff: u16,
    /// Maximum SGL data block descriptors (1).
    pub msdbd: u8,
}

impl ControllerId {
    /// In-capsule data an I/O command may carry, in bytes.
    pub fn in_capsule_data(&self) -> usize {
        (self.ioccsz as usize * 16).saturating_sub(64)
    }

    pub fn encode(&self) -> Result<Vec<u8>> {
        let mut b = vec![0u8; IDENTIFY_LEN];
        b[0..2].copy_from_slice(&self.vid.to_le_bytes());
        put_ascii(&mut b[4..24], &self.serial);
        put_ascii(&mut b[24..64], &self.model);
        put_ascii(&mut b[64..72], &self.firmware);
        b[77] = self.mdts;
        b[78..80].copy_from_slice(&self.cntlid.to_le_bytes());
        b[80..84].copy_from_slice(&self.ver.to_le_bytes());
        b[111] = self.cntrltype;
        b[261] = self.lpa;
        b[320..322].copy_from_slice(&self.kas.to_le_bytes());
        b[512] = self.sqes;
        b[513] = self.cqes;
        b[514..516].copy_from_slice(&self.maxcmd.to_le_bytes());
        b[516..520].copy_from_slice(&self.nn.to_le_bytes());
        b[520..522].copy_from_slice(&self.oncs.to_le_bytes());
        b[525] = self.vwc as u8;
        b[536..540].copy_from_slice(&self.sgls.to_le_bytes());
        if self.subnqn.len() > 255 {
            return err("subsystem NQN over 255 bytes");
        }
        b[768..768 + self.subnqn.len()].copy_from_slice(self.subnqn.as_bytes());
        b[1792..1796].copy_from_slice(&self.ioccsz.to_le_bytes());
        b[1796..1800].copy_from_slice(&self.iorcsz.to_le_bytes());
        b[1800..1802].copy_from_slice(&self.icdoff.to_le_bytes());
        b[1803] = self.msdbd;
        Ok(b)
    }

    pub fn parse(b: &[u8]) -> Result<ControllerId> {
        if b.len() < IDENTIFY_LEN {
            return err(format!("Identify Controller data of {} bytes", b.len()));
        }
        let nqn = &b[768..1024];
        let end = nqn.iter().position(|&c| c == 0).unwrap_or(256);
        Ok(ControllerId {
            vid: le16(b, 0),
            serial: ascii(&b[4..24]),
            model: ascii(&b[24..64]),
            firmware: ascii(&b[64..72]),
            mdts: b[77],
            cntlid: le16(b, 78),
            ver: le32(b, 80),
            cntrltype: b[111],
            kas: le16(b, 320),
            lpa: b[261],
            sqes: b[512],
            cqes: b[513],
            maxcmd: le16(b, 514),
            nn: le32(b, 516),
            oncs: le16(b, 520),
            vwc: b[525] & 1 == 1,
            sgls: le32(b, 536),
            subnqn: String::from_utf8_lossy(&nqn[..end]).into_owned(),
            ioccsz: le32(b, 1792),
            iorcsz: le32(b, 1796),
            icdoff: le16(b, 1800),
            msdbd: b[1803],
        })
    }
}

/// The Identify Namespace fields iolab writes and reads: sizes in logical
/// blocks and the one LBA format in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NamespaceId {
    pub nsze: u64,
    pub ncap: u64,
    pub nuse: u64,
    /// Logical block size in bytes (a power of two, 512 or more).
    pub block_size: u32,
}

impl NamespaceId {
    pub fn bytes(&self) -> u64 {
        self.nsze.saturating_mul(self.block_size as u64)
    }

    pub fn encode(&self) -> Result<Vec<u8>> {
        if !self.block_size.is_power_of_two() || self.block_size < 512 {
            return err(format!(
                "logical block size {} is not a power of two of 512 or more",
                self.block_size
            ));
        }
        let mut b = vec![0u8; IDENTIFY_LEN];
        b[0..8].copy_from_slice(&self.nsze.to_le_bytes());
        b[8..16].copy_from_slice(&self.ncap.to_le_bytes());
        b[16..24].copy_from_slice(&self.nuse.to_le_bytes());
        // One LBA format (NLBAF is 0's based), in use (FLBAS 0), no metadata.
        b[25] = 0;
        b[26] = 0;
        b[128 + 2] = self.block_size.trailing_zeros() as u8;
        Ok(b)
    }

    /// The namespace, with the block size of its formatted LBA format.
    pub fn parse(b: &[u8]) -> Result<NamespaceId> {
        if b.len() < IDENTIFY_LEN {
            return err(format!("Identify Namespace data of {} bytes", b.len()));
        }
        let nlbaf = b[25] as usize + 1;
        // FLBAS bits 3:0 and 6:5 (the upper bits of the index, for 64 formats).
        let index = (b[26] & 0x0F) as usize | ((b[26] as usize >> 5) & 0x3) << 4;
        if index >= nlbaf.min(64) {
            return err(format!("formatted LBA format {index} of {nlbaf}"));
        }
        let at = 128 + 4 * index;
        let (ms, lbads) = (le16(b, at), b[at + 2]);
        if ms != 0 {
            return err(format!("LBA format with {ms} bytes of metadata per block"));
        }
        if !(9..32).contains(&lbads) {
            return err(format!("LBA data size 2^{lbads} bytes"));
        }
        let nsze = le64(b, 0);
        if nsze
            .checked_mul(1 << lbads)
            .is_none_or(|n| n > i64::MAX as u64)
        {
            return err(format!(
                "namespace size (NSZE) of {nsze} blocks of 2^{lbads} bytes is past 2^63 - 1 bytes"
            ));
        }
        Ok(NamespaceId {
            nsze,
            ncap: le64(b, 8),
            nuse: le64(b, 16),
            block_size: 1 << lbads,
        })
    }
}

/// The active namespace list: NSIDs in increasing order, zero-terminated.
pub fn encode_active_namespaces(nsids: &[u32]) -> Vec<u8> {
    let mut b = vec![0u8; IDENTIFY_LEN];
    for (i, n) in nsids.iter().take(IDENTIFY_LEN / 4).enumerate() {
        b[4 * i..4 * i + 4].copy_from_slice(&n.to_le_bytes());
    }
    b
}

pub fn parse_active_namespaces(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
        .take_while(|&n| n != 0)
        .collect()
}

/// CAP, the controller capabilities property (8 bytes at offset 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cap {
    /// Maximum queue entries supported, 0's based.
    pub mqes: u16,
    /// Contiguous queues required.
    pub cqr: bool,
    /// Worst-case time to ready, in 500 ms units.
    pub timeout: u8,
    /// The NVM command set is supported (CSS bit 0).
    pub nvm: bool,
    /// Minimum memory page size, as 2^(12 + MPSMIN).
    pub mpsmin: u8,
}

impl Cap {
    pub fn encode(&self) -> u64 {
        self.mqes as u64
            | (self.cqr as u64) << 16
            | (self.timeout as u64) << 24
            | (self.nvm as u64) << 37
            | ((self.mpsmin & 0xF) as u64) << 48
    }

    pub fn parse(v: u64) -> Cap {
        Cap {
            mqes: v as u16,
            cqr: v >> 16 & 1 == 1,
            timeout: (v >> 24) as u8,
            nvm: v >> 37 & 1 == 1,
            mpsmin: (v >> 48 & 0xF) as u8,
        }
    }
}

/// CC with the controller enabled for the NVM command set: 4 KiB pages,
/// 64-byte submission and 16-byte completion queue entries.
pub const CC_ENABLE: u32 = 1 | 6 << 16 | 4 << 20;
/// CC.EN and CSTS.RDY, CSTS.CFS (controller fatal status).
pub const CC_EN: u32 = 1;
pub const CSTS_RDY: u32 = 1;
pub const CSTS_CFS: u32 = 2;
/// CC.SHN = 01b (normal shutdown) and CSTS.SHST = 10b (shutdown complete).
pub const CC_SHUTDOWN: u32 = 1 << 14;
pub const CSTS_SHUTDOWN_DONE: u32 = 2 << 2;

#[cfg(test)]
mod tests {
    use super::*;

    fn controller() -> ControllerId {
        ControllerId {
            vid: 0,
            serial: "iolab-1".into(),
            model: "iolab NVMe-oF target".into(),
            firmware: "0.1.0".into(),
            mdts: 5,
            cntlid: 1,
            ver: 0x0001_0400,
            cntrltype: 1,
            kas: 100,
            lpa: 4,
            sqes: 0x66,
            cqes: 0x44,
            maxcmd: 128,
            nn: 1,
            oncs: 0,
            vwc: true,
            sgls: 1 | 1 << 20,
            subnqn: "nqn.2025-11.io.iolab:remote".into(),
            ioccsz: (64 + 8192) / 16,
            iorcsz: 1,
            icdoff: 0,
            msdbd: 1,
        }
    }

    #[test]
    fn identify_controller_is_at_the_specified_offsets() {
        let c = controller();
        let b = c.encode().unwrap();
        assert_eq!(b.len(), 4096);
        assert_eq!(&b[4..11], b"iolab-1");
        assert_eq!(b[23], b' ', "space padded");
        assert_eq!(b[77], 5);
        assert_eq!(&b[78..80], &1u16.to_le_bytes());
        assert_eq!(&b[80..84], &0x0001_0400u32.to_le_bytes());
        assert_eq!((b[111], b[512], b[513], b[525]), (1, 0x66, 0x44, 1));
        assert_eq!(&b[320..322], &100u16.to_le_bytes());
        assert_eq!(&b[516..520], &1u32.to_le_bytes());
        assert_eq!(&b[768..772], b"nqn.");
        assert_eq!(&b[1792..1796], &((64 + 8192) / 16u32).to_le_bytes());
        assert_eq!(b[1803], 1);
        assert_eq!(ControllerId::parse(&b).unwrap(), c);
        assert_eq!(c.in_capsule_data(), 8192);
        assert!(ControllerId::parse(&b[..100]).is_err());
    }

    #[test]
    fn identify_namespace_carries_the_block_size() {
        let n = NamespaceId {
            nsze: 262_144,
            ncap: 262_144,
            nuse: 262_144,
            block_size: 4096,
        };
        let b = n.encode().unwrap();
        assert_eq!(&b[0..8], &262_144u64.to_le_bytes());
        assert_eq!((b[25], b[26], b[130]), (0, 0, 12));
        assert_eq!(NamespaceId::parse(&b).unwrap(), n);
        assert_eq!(n.bytes(), 1 << 30);
        assert!(NamespaceId {
            block_size: 1000,
            ..n
        }
        .encode()
        .is_err());
        // A second format in use (FLBAS 1) with 512-byte blocks.
        let mut b2 = b.clone();
        b2[25] = 1;
        b2[26] = 1;
        b2[134] = 9;
        assert_eq!(NamespaceId::parse(&b2).unwrap().block_size, 512);
        // Metadata per block is refused; an index past NLBAF too.
        let mut bad = b.clone();
        bad[128] = 8;
        assert!(NamespaceId::parse(&bad).is_err());
        let mut bad = b;
        bad[26] = 3;
        assert!(NamespaceId::parse(&bad).is_err());
    }

    #[test]
    fn namespace_lists_and_properties() {
        let b = encode_active_namespaces(&[1, 2, 7]);
        assert_eq!(&b[8..12], &7u32.to_le_bytes());
        assert_eq!(parse_active_namespaces(&b), vec![1, 2, 7]);
        let cap = Cap {
            mqes: 127,
            cqr: true,
            timeout: 20,
            nvm: true,
            mpsmin: 0,
        };
        let v = cap.encode();
        assert_eq!(v & 0xFFFF, 127);
        assert_eq!(v >> 24 & 0xFF, 20);
        assert_eq!(v >> 37 & 1, 1);
        assert_eq!(Cap::parse(v), cap);
        assert_eq!(CC_ENABLE, 0x0046_0001);
    }
}
