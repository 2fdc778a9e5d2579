//! The NVMe over Fabrics RDMA transport's connection manager private data
//! as pure functions (NVMe-oF 1.1, "RDMA Transport Specific"): the host's
//! request (record format, queue ID, host receive and send queue sizes,
//! controller ID), the controller's accept (record format, controller
//! receive queue size) and its reject (record format, status). Byte
//! offsets are the specification's (Linux's `struct nvme_rdma_cm_req`,
//! `nvme_rdma_cm_rep`, `nvme_rdma_cm_rej`); little-endian.

/// Record format 1.0, the only one.
pub const FMT_1_0: u16 = 0;
/// The request's and the accept's length.
pub const REQ_LEN: usize = 32;
pub const REP_LEN: usize = 32;
pub const REJ_LEN: usize = 4;
/// Reject statuses: invalid record format, queue ID, host receive queue
/// size, host send queue size, controller ID.
pub const REJ_INVALID_RECFMT: u16 = 0x01;
pub const REJ_INVALID_QID: u16 = 0x02;
pub const REJ_INVALID_HSQSIZE: u16 = 0x03;
pub const REJ_INVALID_HRQSIZE: u16 = 0x04;

/// What a host asks for when it connects a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CmRequest {
    pub qid: u16,
    /// How many completions the host can receive at once.
    pub hrqsize: u16,
    /// The host's submission queue size, 0's based (as Connect's SQSIZE).
    pub hsqsize: u16,
    pub cntlid: u16,
}

impl CmRequest {
    pub fn encode(&self) -> [u8; REQ_LEN] {
        let mut b = [0u8; REQ_LEN];
        b[0..2].copy_from_slice(&FMT_1_0.to_le_bytes());
        b[2..4].copy_from_slice(&self.qid.to_le_bytes());
        b[4..6].copy_from_slice(&self.hrqsize.to_le_bytes());
        b[6..8].copy_from_slice(&self.hsqsize.to_le_bytes());
        b[8..10].copy_from_slice(&self.cntlid.to_le_bytes());
        b
    }

    /// The request in `b`; the reject status that refuses it otherwise.
    pub fn parse(b: &[u8]) -> Result<CmRequest, u16> {
        if b.len() < 10 || u16::from_le_bytes([b[0], b[1]]) != FMT_1_0 {
            return Err(REJ_INVALID_RECFMT);
        }
        let at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        Ok(CmRequest {
            qid: at(2),
            hrqsize: at(4),
            hsqsize: at(6),
            cntlid: at(8),
        })
    }
}

/// The controller's accept: how many commands it can receive at once.
pub fn encode_accept(crqsize: u16) -> [u8; REP_LEN] {
    let mut b = [0u8; REP_LEN];
    b[0..2].copy_from_slice(&FMT_1_0.to_le_bytes());
    b[2..4].copy_from_slice(&crqsize.to_le_bytes());
    b
}

/// The controller's reject with `status`.
pub fn encode_reject(status: u16) -> [u8; REJ_LEN] {
    let mut b = [0u8; REJ_LEN];
    b[0..2].copy_from_slice(&FMT_1_0.to_le_bytes());
    b[2..4].copy_from_slice(&status.to_le_bytes());
    b
}

/// The status of a reject's private data, if it is one.
pub fn parse_reject(b: &[u8]) -> Option<u16> {
    (b.len() >= REJ_LEN).then(|| u16::from_le_bytes([b[2], b[3]]))
}

/// What a reject status means.
pub fn reject_text(status: u16) -> String {
    let what = match status {
        REJ_INVALID_RECFMT => "invalid record format",
        REJ_INVALID_QID => "invalid queue ID",
        REJ_INVALID_HSQSIZE => "invalid host send queue size",
        REJ_INVALID_HRQSIZE => "invalid host receive queue size",
        0x05 => "no resources",
        0x06 => "invalid IRD",
        0x07 => "invalid ORD",
        _ => "unknown status",
    };
    format!("{what} (NVMe-oF RDMA CM status {status:#x})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_round_trips_at_the_specifications_offsets() {
        let r = CmRequest {
            qid: 3,
            hrqsize: 128,
            hsqsize: 127,
            cntlid: 7,
        };
        let b = r.encode();
        assert_eq!(&b[..10], &[0, 0, 3, 0, 128, 0, 127, 0, 7, 0]);
        assert_eq!(CmRequest::parse(&b), Ok(r));
        let mut bad = b;
        bad[0] = 1;
        assert_eq!(CmRequest::parse(&bad), Err(REJ_INVALID_RECFMT));
        assert_eq!(CmRequest::parse(&b[..6]), Err(REJ_INVALID_RECFMT));
    }

    #[test]
    fn accept_and_reject_carry_their_sizes_and_statuses() {
        assert_eq!(&encode_accept(128)[..4], &[0, 0, 128, 0]);
        let rej = encode_reject(REJ_INVALID_QID);
        assert_eq!(parse_reject(&rej), Some(REJ_INVALID_QID));
        assert!(reject_text(REJ_INVALID_QID).contains("invalid queue ID"));
        assert_eq!(parse_reject(&rej[..2]), None);
    }
}
