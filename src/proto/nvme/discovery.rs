//! NVMe over Fabrics discovery as pure functions: the well-known discovery
//! NQN and the Discovery Log Page (log id 0x70) a discovery controller
//! returns: a 1024-byte header (generation counter, number of records,
//! record format) and one 1024-byte entry per subsystem (transport,
//! address family, subsystem type, port, controller ID, admin queue size,
//! service ID, subsystem NQN, transport address). Byte offsets are the
//! NVMe over Fabrics specification's (as Linux's `struct
//! nvmf_disc_rsp_page_entry` lays them out); little-endian.

use std::net::SocketAddr;

use super::codec::{err, le16, le64, Result};

/// The NQN a host connects to for discovery.
pub const DISCOVERY_NQN: &str = "nqn.2014-08.org.nvmexpress.discovery";
/// Get Log Page's log id of the discovery log.
pub const LID_DISCOVERY: u8 = 0x70;
pub const HEADER_LEN: usize = 1024;
pub const ENTRY_LEN: usize = 1024;
/// Controller type of a discovery controller (Identify Controller CNTRLTYPE).
pub const CNTRLTYPE_DISCOVERY: u8 = 2;
/// Transport type: TCP; address families: IPv4, IPv6; subsystem type: an
/// NVM subsystem (not a referral to another discovery service).
pub const TRTYPE_TCP: u8 = 3;
/// Transport type: RDMA, whose entries say in their transport specific
/// address subtype (TSAS) a reliable connected queue pair and the RDMA CM.
pub const TRTYPE_RDMA: u8 = 1;
pub const ADRFAM_IPV4: u8 = 1;
pub const ADRFAM_IPV6: u8 = 2;
pub const SUBTYPE_NVME: u8 = 2;
/// Controller ID of an entry whose controllers are made at Connect.
pub const CNTLID_DYNAMIC: u16 = 0xFFFF;

/// One discovery log entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub trtype: u8,
    pub adrfam: u8,
    pub subtype: u8,
    /// Transport requirements (0: not specified).
    pub treq: u8,
    pub portid: u16,
    pub cntlid: u16,
    /// Largest admin submission queue the host may create.
    pub asqsz: u16,
    /// Transport service ID: the TCP port, in ASCII.
    pub trsvcid: String,
    pub subnqn: String,
    /// Transport address: the IP address, in ASCII.
    pub traddr: String,
}

impl Entry {
    /// The entry of an NVMe/TCP subsystem `subnqn` reached at `addr`.
    pub fn tcp(subnqn: &str, addr: SocketAddr) -> Entry {
        Entry {
            trtype: TRTYPE_TCP,
            adrfam: if addr.is_ipv4() {
                ADRFAM_IPV4
            } else {
                ADRFAM_IPV6
            },
            subtype: SUBTYPE_NVME,
            treq: 0,
            portid: 1,
            cntlid: CNTLID_DYNAMIC,
            asqsz: 32,
            trsvcid: addr.port().to_string(),
            subnqn: subnqn.to_string(),
            traddr: addr.ip().to_string(),
        }
    }

    pub fn encode(&self) -> Result<[u8; ENTRY_LEN]> {
        let mut b = [0u8; ENTRY_LEN];
        b[0] = self.trtype;
        b[1] = self.adrfam;
        b[2] = self.subtype;
        b[3] = self.treq;
        b[4..6].copy_from_slice(&self.portid.to_le_bytes());
        b[6..8].copy_from_slice(&self.cntlid.to_le_bytes());
        b[8..10].copy_from_slice(&self.asqsz.to_le_bytes());
        // Strings are NUL-padded and must leave room for one NUL.
        for (field, at, len) in [
            (&self.trsvcid, 32, 32),
            (&self.subnqn, 256, 256),
            (&self.traddr, 512, 256),
        ] {
            if field.len() >= len {
                return err(format!("discovery entry field {field:?} over {len} bytes"));
            }
            b[at..at + field.len()].copy_from_slice(field.as_bytes());
        }
        if self.trtype == TRTYPE_RDMA {
            // RDMA_QPTYPE connected, RDMA_PRTYPE not specified, RDMA_CMS RDMA CM.
            b[768..771].copy_from_slice(&[1, 0, 1]);
        }
        Ok(b)
    }

    pub fn parse(b: &[u8]) -> Result<Entry> {
        if b.len() < ENTRY_LEN {
            return err(format!("a discovery log entry of {} bytes", b.len()));
        }
        Ok(Entry {
            trtype: b[0],
            adrfam: b[1],
            subtype: b[2],
            treq: b[3],
            portid: le16(b, 4),
            cntlid: le16(b, 6),
            asqsz: le16(b, 8),
            trsvcid: text(&b[32..64]),
            subnqn: text(&b[256..512]),
            traddr: text(&b[512..768]),
        })
    }
}

/// An ASCII field up to its first NUL, trailing spaces dropped.
fn text(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).trim_end().to_string()
}

/// The whole discovery log: the header, then every entry.
pub fn encode_log(genctr: u64, entries: &[Entry]) -> Result<Vec<u8>> {
    let mut b = vec![0u8; HEADER_LEN];
    b[0..8].copy_from_slice(&genctr.to_le_bytes());
    b[8..16].copy_from_slice(&(entries.len() as u64).to_le_bytes());
    // RECFMT (16..18) is 0.
    for e in entries {
        b.extend_from_slice(&e.encode()?);
    }
    Ok(b)
}

/// A header's (generation counter, number of records).
pub fn parse_header(b: &[u8]) -> Result<(u64, u64)> {
    if b.len() < 16 {
        return err(format!("a discovery log header of {} bytes", b.len()));
    }
    Ok((le64(b, 0), le64(b, 8)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_round_trips_at_the_specs_offsets() {
        let e = Entry::tcp(
            "nqn.2025-11.io.iolab:target",
            "127.0.0.1:4420".parse().unwrap(),
        );
        let b = e.encode().unwrap();
        assert_eq!(&b[..4], &[3, 1, 2, 0], "TCP, IPv4, NVM subsystem");
        assert_eq!(
            &b[6..10],
            &[0xFF, 0xFF, 32, 0],
            "dynamic controller, 32 entries"
        );
        assert_eq!(&b[32..37], b"4420\0");
        assert_eq!(&b[256..283], b"nqn.2025-11.io.iolab:target");
        assert_eq!(&b[512..522], b"127.0.0.1\0");
        assert_eq!(Entry::parse(&b).unwrap(), e);
        let v6 = Entry::tcp("nqn.x", "[::1]:4420".parse().unwrap());
        assert_eq!((v6.adrfam, v6.traddr.as_str()), (ADRFAM_IPV6, "::1"));
    }

    #[test]
    fn the_log_is_a_header_then_its_entries() {
        let e = Entry::tcp("nqn.x", "10.0.0.1:4420".parse().unwrap());
        let log = encode_log(7, std::slice::from_ref(&e)).unwrap();
        assert_eq!(log.len(), HEADER_LEN + ENTRY_LEN);
        assert_eq!(parse_header(&log).unwrap(), (7, 1));
        assert_eq!(Entry::parse(&log[HEADER_LEN..]).unwrap(), e);
        let long = Entry {
            subnqn: "n".repeat(256),
            ..e
        };
        assert!(encode_log(1, &[long]).is_err());
    }
}
