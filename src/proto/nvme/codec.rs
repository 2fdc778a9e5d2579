//! NVMe over TCP as pure functions: the PDUs of the NVMe/TCP transport
//! (common header, ICReq/ICResp, CapsuleCmd/CapsuleResp, H2CData, C2HData,
//! R2T, termination requests) with their header and data digests and data
//! alignment; the submission queue entries iolab sends (Fabrics Connect,
//! Property Get/Set, Identify, Set Features Number of Queues, Keep Alive,
//! Read, Write, Flush) and the completion queue entry with its status.
//! Layouts follow the NVMe/TCP transport specification 1.0 and the NVMe
//! base specification (little-endian throughout). No I/O here.

use std::fmt;

use super::crc32c;

pub const PDU_ICREQ: u8 = 0x00;
pub const PDU_ICRESP: u8 = 0x01;
pub const PDU_H2C_TERM: u8 = 0x02;
pub const PDU_C2H_TERM: u8 = 0x03;
pub const PDU_CAPSULE_CMD: u8 = 0x04;
pub const PDU_CAPSULE_RESP: u8 = 0x05;
pub const PDU_H2C_DATA: u8 = 0x06;
pub const PDU_C2H_DATA: u8 = 0x07;
pub const PDU_R2T: u8 = 0x09;

/// PDU flags: a header digest follows the header; a data digest follows the data.
pub const FLAG_HDGST: u8 = 0x01;
pub const FLAG_DDGST: u8 = 0x02;
/// H2CData/C2HData: the last data PDU of the command's transfer.
pub const FLAG_LAST_PDU: u8 = 0x04;
/// C2HData: the command succeeded and no CapsuleResp follows.
pub const FLAG_SUCCESS: u8 = 0x08;

pub const COMMON_HEADER_LEN: usize = 8;
pub const DIGEST_LEN: usize = 4;
/// ICReq and ICResp are 128 bytes, header only.
pub const IC_LEN: usize = 128;
/// Header lengths (common header included) of the other PDUs.
pub const CAPSULE_CMD_HLEN: usize = 8 + SQE_LEN;
pub const CAPSULE_RESP_HLEN: usize = 8 + CQE_LEN;
pub const DATA_HLEN: usize = 24;
pub const TERM_HLEN: usize = 24;
pub const SQE_LEN: usize = 64;
pub const CQE_LEN: usize = 16;
/// Fabrics Connect's data: host identifier, controller ID, the two NQNs.
pub const CONNECT_DATA_LEN: usize = 1024;
/// An NQN field is 256 bytes, NUL-padded (at most 223 bytes of name).
pub const NQN_MAX: usize = 223;

/// Opcodes: Fabrics commands, admin commands, NVM I/O commands.
pub const OPC_FABRICS: u8 = 0x7F;
pub const OPC_IDENTIFY: u8 = 0x06;
pub const OPC_SET_FEATURES: u8 = 0x09;
pub const OPC_KEEP_ALIVE: u8 = 0x18;
pub const OPC_FLUSH: u8 = 0x00;
pub const OPC_WRITE: u8 = 0x01;
pub const OPC_READ: u8 = 0x02;
/// Fabrics command types.
pub const FCTYPE_PROPERTY_SET: u8 = 0x00;
pub const FCTYPE_CONNECT: u8 = 0x01;
pub const FCTYPE_PROPERTY_GET: u8 = 0x04;
/// Identify's CNS values.
pub const CNS_NAMESPACE: u8 = 0x00;
pub const CNS_CONTROLLER: u8 = 0x01;
pub const CNS_ACTIVE_NAMESPACES: u8 = 0x02;
pub const CNS_NS_DESCRIPTORS: u8 = 0x03;
/// Get Log Page (admin).
pub const OPC_GET_LOG_PAGE: u8 = 0x02;
/// Set Features' feature identifier for the number of I/O queues.
pub const FID_NUM_QUEUES: u8 = 0x07;
/// Controller properties (offsets) and their sizes.
pub const PROP_CAP: u32 = 0x00;
pub const PROP_VS: u32 = 0x08;
pub const PROP_CC: u32 = 0x14;
pub const PROP_CSTS: u32 = 0x1C;
/// SQE flags: PSDT = 01b, the data pointer is an SGL (required over fabrics).
const SQE_FLAGS_SGL: u8 = 0x40;
/// SGL descriptor types (type << 4 | subtype): data in the capsule at an
/// offset, or transport data (sent in H2CData after R2T, or C2HData).
pub const SGL_IN_CAPSULE: u8 = 0x01;
pub const SGL_TRANSPORT: u8 = 0x5A;
/// A keyed data block (NVMe over RDMA): the host's address and the memory
/// key the controller reads or writes it with (RDMA READ/WRITE).
pub const SGL_KEYED: u8 = 0x40;
/// The descriptor type (high nibble) of a keyed SGL data block, whatever
/// its subtype (Linux hosts ask for invalidation: 0x4F).
pub const SGL_KEYED_KIND: u8 = 0x4;
/// The most a keyed data block describes (its length has 24 bits).
pub const KEYED_MAX: u32 = (1 << 24) - 1;

/// A malformed or unexpected PDU, or a value that cannot be encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvmeTcpError(pub String);

impl fmt::Display for NvmeTcpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NvmeTcpError {}

pub(super) type Result<T> = std::result::Result<T, NvmeTcpError>;

pub(super) fn err<T>(msg: impl Into<String>) -> Result<T> {
    Err(NvmeTcpError(msg.into()))
}

pub(super) fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

pub(super) fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

pub(super) fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Which digests a connection carries (negotiated by ICReq/ICResp).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Digests {
    pub header: bool,
    pub data: bool,
}

impl Digests {
    fn bits(self) -> u8 {
        self.header as u8 | (self.data as u8) << 1
    }

    fn from_bits(b: u8) -> Digests {
        Digests {
            header: b & 1 != 0,
            data: b & 2 != 0,
        }
    }
}

/// The 8-byte header every PDU starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommonHeader {
    pub pdu_type: u8,
    pub flags: u8,
    /// Header length (common header and the type's own fields, no digest).
    pub hlen: u8,
    /// Data offset from the PDU's start (0: no data).
    pub pdo: u8,
    /// The whole PDU's length on the wire.
    pub plen: u32,
}

impl CommonHeader {
    pub fn parse(b: &[u8]) -> Result<CommonHeader> {
        if b.len() < COMMON_HEADER_LEN {
            return err("short PDU header");
        }
        Ok(CommonHeader {
            pdu_type: b[0],
            flags: b[1],
            hlen: b[2],
            pdo: b[3],
            plen: le32(b, 4),
        })
    }

    fn write(&self, out: &mut [u8]) {
        out[0] = self.pdu_type;
        out[1] = self.flags;
        out[2] = self.hlen;
        out[3] = self.pdo;
        out[4..8].copy_from_slice(&self.plen.to_le_bytes());
    }
}

/// The header length each PDU type must have.
fn expected_hlen(pdu_type: u8) -> Result<usize> {
    Ok(match pdu_type {
        PDU_ICREQ | PDU_ICRESP => IC_LEN,
        PDU_CAPSULE_CMD => CAPSULE_CMD_HLEN,
        PDU_CAPSULE_RESP => CAPSULE_RESP_HLEN,
        PDU_H2C_DATA | PDU_C2H_DATA | PDU_R2T => DATA_HLEN,
        PDU_H2C_TERM | PDU_C2H_TERM => TERM_HLEN,
        t => return err(format!("unknown PDU type 0x{t:02x}")),
    })
}

/// Where a PDU's data starts and how long the whole PDU is, for a header
/// of `hlen` bytes and `data_len` bytes of data; `align` is the receiver's
/// data alignment in dwords, 0's based (CPDA or HPDA).
pub fn layout(hlen: usize, digests: Digests, align: u8, data_len: usize) -> (usize, usize) {
    let head = hlen + if digests.header { DIGEST_LEN } else { 0 };
    if data_len == 0 {
        return (0, head);
    }
    let unit = (align as usize + 1) * 4;
    let pdo = head.div_ceil(unit) * unit;
    let tail = if digests.data { DIGEST_LEN } else { 0 };
    (pdo, pdo + data_len + tail)
}

/// A whole PDU: `specific` is the type's header after the common header;
/// the header digest, padding up to the data offset, the data and its
/// digest follow as `digests` and `align` say (ICReq/ICResp never carry
/// digests). `flags` are the type's own flags; the digest flags are set here.
pub fn frame(
    pdu_type: u8,
    flags: u8,
    specific: &[u8],
    data: &[u8],
    digests: Digests,
    align: u8,
) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    frame_into(&mut out, pdu_type, flags, specific, data, digests, align)?;
    Ok(out)
}

/// `frame`, appended to `out` (no allocation when `out` has room).
pub fn frame_into(
    out: &mut Vec<u8>,
    pdu_type: u8,
    flags: u8,
    specific: &[u8],
    data: &[u8],
    digests: Digests,
    align: u8,
) -> Result<()> {
    let hlen = COMMON_HEADER_LEN + specific.len();
    if hlen != expected_hlen(pdu_type)? {
        return err(format!(
            "PDU type 0x{pdu_type:02x} has a {} byte header, not {hlen}",
            expected_hlen(pdu_type)?
        ));
    }
    let digests = if matches!(pdu_type, PDU_ICREQ | PDU_ICRESP) {
        Digests::default()
    } else {
        Digests {
            header: digests.header,
            data: digests.data && !data.is_empty(),
        }
    };
    let (pdo, plen) = layout(hlen, digests, align, data.len());
    if pdo > 255 {
        return err(format!("data offset {pdo} does not fit the PDU header"));
    }
    let at = out.len();
    out.resize(at + plen, 0);
    let pdu = &mut out[at..];
    CommonHeader {
        pdu_type,
        flags: flags
            | if digests.header { FLAG_HDGST } else { 0 }
            | if digests.data { FLAG_DDGST } else { 0 },
        hlen: hlen as u8,
        pdo: pdo as u8,
        plen: plen as u32,
    }
    .write(pdu);
    pdu[COMMON_HEADER_LEN..hlen].copy_from_slice(specific);
    if digests.header {
        let d = crc32c::checksum(&pdu[..hlen]);
        pdu[hlen..hlen + DIGEST_LEN].copy_from_slice(&d.to_le_bytes());
    }
    if !data.is_empty() {
        pdu[pdo..pdo + data.len()].copy_from_slice(data);
        if digests.data {
            let d = crc32c::checksum(data);
            pdu[pdo + data.len()..].copy_from_slice(&d.to_le_bytes());
        }
    }
    Ok(())
}

/// One PDU found at the start of a receive buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawPdu<'a> {
    pub header: CommonHeader,
    /// The type's header after the common header.
    pub specific: &'a [u8],
    /// The data (empty when there is none).
    pub data: &'a [u8],
}

/// The PDU at the start of `buf` and its length, `None` while it is
/// incomplete. Checks the header length of its type, that the digests it
/// carries are the ones the connection negotiated (`digests`), and both
/// digests' values.
pub fn split_pdu(buf: &[u8], digests: Digests) -> Result<Option<(RawPdu<'_>, usize)>> {
    if buf.len() < COMMON_HEADER_LEN {
        return Ok(None);
    }
    let h = CommonHeader::parse(buf)?;
    let hlen = h.hlen as usize;
    if hlen != expected_hlen(h.pdu_type)? {
        return err(format!(
            "PDU type 0x{:02x} with a {hlen} byte header",
            h.pdu_type
        ));
    }
    let plen = h.plen as usize;
    if plen < hlen {
        return err(format!(
            "PDU length {plen} shorter than its header ({hlen})"
        ));
    }
    if buf.len() < plen {
        return Ok(None);
    }
    // ICReq/ICResp and termination requests never carry digests.
    let ic = matches!(
        h.pdu_type,
        PDU_ICREQ | PDU_ICRESP | PDU_H2C_TERM | PDU_C2H_TERM
    );
    let has_hd = h.flags & FLAG_HDGST != 0;
    let has_dd = h.flags & FLAG_DDGST != 0;
    if !ic && has_hd != digests.header {
        return err("a PDU's header digest flag differs from what the connection negotiated");
    }
    if !ic && has_dd && !digests.data {
        return err("a data digest on a connection that did not negotiate one");
    }
    let head_end = hlen + if has_hd { DIGEST_LEN } else { 0 };
    if plen < head_end {
        return err(format!(
            "PDU length {plen} leaves no room for its header digest"
        ));
    }
    let pdu = &buf[..plen];
    if has_hd {
        let want = le32(pdu, hlen);
        if crc32c::checksum(&pdu[..hlen]) != want {
            return err("header digest mismatch");
        }
    }
    let data = if h.pdo == 0 {
        if plen != head_end {
            return err(format!("PDU length {plen} with no data offset"));
        }
        &pdu[plen..]
    } else {
        let pdo = h.pdo as usize;
        let tail = if has_dd { DIGEST_LEN } else { 0 };
        if pdo < head_end || pdo + tail > plen {
            return err(format!("data offset {pdo} outside the PDU ({plen} bytes)"));
        }
        let data = &pdu[pdo..plen - tail];
        if has_dd && crc32c::checksum(data) != le32(pdu, plen - tail) {
            return err("data digest mismatch");
        }
        data
    };
    Ok(Some((
        RawPdu {
            header: h,
            specific: &pdu[COMMON_HEADER_LEN..hlen],
            data,
        },
        plen,
    )))
}

/// Refuse a PDU whose type is not one of `types` (`what` names them).
fn expect_type(p: &RawPdu<'_>, types: &[u8], what: &str) -> Result<()> {
    if types.contains(&p.header.pdu_type) {
        return Ok(());
    }
    err(format!(
        "expected {what}, got PDU type 0x{:02x}",
        p.header.pdu_type
    ))
}

/// ICReq (host) and ICResp (controller): format version 0, the sender's
/// wanted data alignment (HPDA / CPDA, dwords, 0's based), the digests,
/// and MAXR2T (ICReq, 0's based) or MAXH2CDATA (ICResp, bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ic {
    pub pfv: u16,
    pub align: u8,
    pub digests: Digests,
    pub max: u32,
}

pub fn encode_ic(pdu_type: u8, ic: &Ic) -> Result<Vec<u8>> {
    let mut s = [0u8; IC_LEN - COMMON_HEADER_LEN];
    s[0..2].copy_from_slice(&ic.pfv.to_le_bytes());
    s[2] = ic.align;
    s[3] = ic.digests.bits();
    s[4..8].copy_from_slice(&ic.max.to_le_bytes());
    frame(pdu_type, 0, &s, &[], Digests::default(), 0)
}

pub fn parse_ic(p: &RawPdu<'_>) -> Result<Ic> {
    expect_type(p, &[PDU_ICREQ, PDU_ICRESP], "ICReq or ICResp")?;
    let s = p.specific;
    let ic = Ic {
        pfv: le16(s, 0),
        align: s[2],
        digests: Digests::from_bits(s[3]),
        max: le32(s, 4),
    };
    if ic.pfv != 0 {
        return err(format!("PDU format version {} (only 0 is known)", ic.pfv));
    }
    if ic.align > 31 {
        return err(format!(
            "data alignment {} dwords is over the maximum 31",
            ic.align
        ));
    }
    Ok(ic)
}

/// H2CData, C2HData and R2T: the command, the transfer tag, and where the
/// data (or the requested part) lies within the command's data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataHeader {
    pub cccid: u16,
    pub ttag: u16,
    pub offset: u32,
    pub length: u32,
}

pub fn encode_data_header(h: &DataHeader) -> [u8; DATA_HLEN - COMMON_HEADER_LEN] {
    let mut s = [0u8; DATA_HLEN - COMMON_HEADER_LEN];
    s[0..2].copy_from_slice(&h.cccid.to_le_bytes());
    s[2..4].copy_from_slice(&h.ttag.to_le_bytes());
    s[4..8].copy_from_slice(&h.offset.to_le_bytes());
    s[8..12].copy_from_slice(&h.length.to_le_bytes());
    s
}

/// The data header of an H2CData, C2HData or R2T PDU; a data PDU's length
/// field must match the data it carries.
pub fn parse_data_header(p: &RawPdu<'_>) -> Result<DataHeader> {
    expect_type(
        p,
        &[PDU_H2C_DATA, PDU_C2H_DATA, PDU_R2T],
        "a data PDU or R2T",
    )?;
    let s = p.specific;
    let h = DataHeader {
        cccid: le16(s, 0),
        ttag: le16(s, 2),
        offset: le32(s, 4),
        length: le32(s, 8),
    };
    if p.header.pdu_type != PDU_R2T && h.length as usize != p.data.len() {
        return err(format!(
            "data PDU says {} bytes and carries {}",
            h.length,
            p.data.len()
        ));
    }
    Ok(h)
}

/// A termination request: fatal error status, information, and the
/// offending PDU header (up to 128 bytes).
pub fn encode_term(pdu_type: u8, fes: u16, fei: u32, offending: &[u8]) -> Result<Vec<u8>> {
    let mut s = [0u8; TERM_HLEN - COMMON_HEADER_LEN];
    s[0..2].copy_from_slice(&fes.to_le_bytes());
    s[2..6].copy_from_slice(&fei.to_le_bytes());
    let data = &offending[..offending.len().min(128)];
    frame(pdu_type, 0, &s, data, Digests::default(), 0)
}

/// What a termination request says, in words.
pub fn describe_term(p: &RawPdu<'_>) -> String {
    let fes = le16(p.specific, 0);
    let fei = le32(p.specific, 2);
    let what = match fes {
        0x01 => "invalid PDU header field",
        0x02 => "PDU sequence error",
        0x03 => "header digest error",
        0x04 => "data transfer out of range",
        0x05 => "data transfer limit exceeded",
        0x06 => "unsupported parameter",
        _ => "unknown fatal error",
    };
    format!("{what} (status 0x{fes:02x}, information {fei})")
}

/// A submission queue entry.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Sqe(pub [u8; SQE_LEN]);

impl fmt::Debug for Sqe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Sqe(opcode 0x{:02x}, cid {}, nsid {})",
            self.opcode(),
            self.cid(),
            self.nsid()
        )
    }
}

impl Sqe {
    fn new(opcode: u8, cid: u16, nsid: u32) -> Sqe {
        let mut b = [0u8; SQE_LEN];
        b[0] = opcode;
        b[1] = SQE_FLAGS_SGL;
        b[2..4].copy_from_slice(&cid.to_le_bytes());
        b[4..8].copy_from_slice(&nsid.to_le_bytes());
        Sqe(b)
    }

    fn fabrics(fctype: u8, cid: u16) -> Sqe {
        let mut s = Sqe::new(OPC_FABRICS, cid, 0);
        // Bytes 4..8 are FCTYPE and reserved in a Fabrics command, not an NSID.
        s.0[4] = fctype;
        s
    }

    /// The data pointer: one SGL data block descriptor.
    fn sgl(mut self, kind: u8, len: u32) -> Sqe {
        self.0[24..32].fill(0);
        self.0[32..36].copy_from_slice(&len.to_le_bytes());
        self.0[39] = kind;
        self
    }

    fn cdw(mut self, n: usize, v: u32) -> Sqe {
        let at = 4 * n;
        self.0[at..at + 4].copy_from_slice(&v.to_le_bytes());
        self
    }

    pub fn opcode(&self) -> u8 {
        self.0[0]
    }

    pub fn cid(&self) -> u16 {
        le16(&self.0, 2)
    }

    pub fn nsid(&self) -> u32 {
        le32(&self.0, 4)
    }

    pub fn fctype(&self) -> u8 {
        self.0[4]
    }

    /// Command dword `n` (10..=15 carry the command's parameters).
    pub fn dword(&self, n: usize) -> u32 {
        le32(&self.0, 4 * n)
    }

    /// The SGL descriptor: (type, length; a keyed data block's length is
    /// its three bytes, the fourth being its key's first).
    pub fn sgl_desc(&self) -> (u8, u32) {
        match self.0[39] >> 4 {
            SGL_KEYED_KIND => (self.0[39], self.keyed_desc().1),
            _ => (self.0[39], le32(&self.0, 32)),
        }
    }

    /// The bytes the command moves, as its unkeyed SGL descriptor says.
    pub fn transfer_len(&self) -> u32 {
        self.sgl_desc().1
    }

    /// The same command with its data at `addr` in the host's memory,
    /// reached with `key` (NVMe over RDMA's keyed SGL data block; a
    /// command without data gets the null descriptor: length 0, key 0).
    pub fn keyed(mut self, addr: u64, len: u32, key: u32) -> Sqe {
        let len = len.min(KEYED_MAX);
        let (addr, key) = if len == 0 { (0, 0) } else { (addr, key) };
        self.0[24..32].copy_from_slice(&addr.to_le_bytes());
        self.0[32..35].copy_from_slice(&len.to_le_bytes()[..3]);
        self.0[35..39].copy_from_slice(&key.to_le_bytes());
        self.0[39] = SGL_KEYED;
        self
    }

    /// A keyed SGL data block's (address, length, key).
    pub fn keyed_desc(&self) -> (u64, u32, u32) {
        let len = u32::from_le_bytes([self.0[32], self.0[33], self.0[34], 0]);
        (le64(&self.0, 24), len, le32(&self.0, 35))
    }

    /// Fabrics Connect for queue `qid` (0: admin) of `sqsize` entries
    /// (0's based), keep-alive timeout `kato_ms` (admin queue only); its
    /// 1024 bytes of data (`connect_data`) go in the capsule.
    pub fn connect(cid: u16, qid: u16, sqsize: u16, kato_ms: u32) -> Sqe {
        let mut s = Sqe::fabrics(FCTYPE_CONNECT, cid).sgl(SGL_IN_CAPSULE, CONNECT_DATA_LEN as u32);
        // RECFMT 0, QID, SQSIZE, CATTR 0, KATO.
        s.0[42..44].copy_from_slice(&qid.to_le_bytes());
        s.0[44..46].copy_from_slice(&sqsize.to_le_bytes());
        s.0[48..52].copy_from_slice(&kato_ms.to_le_bytes());
        s
    }

    /// Connect's queue ID (0: the admin queue).
    pub fn connect_qid(&self) -> u16 {
        le16(&self.0, 42)
    }

    /// Connect's submission queue size (0's based).
    pub fn connect_sqsize(&self) -> u16 {
        le16(&self.0, 44)
    }

    /// Connect's keep-alive timeout in milliseconds.
    pub fn connect_kato(&self) -> u32 {
        le32(&self.0, 48)
    }

    /// Property Get of the 4- or 8-byte property at `offset`.
    pub fn property_get(cid: u16, offset: u32, eight: bool) -> Sqe {
        let mut s = Sqe::fabrics(FCTYPE_PROPERTY_GET, cid);
        s.0[40] = eight as u8;
        s.0[44..48].copy_from_slice(&offset.to_le_bytes());
        s
    }

    /// Property Set of the 4- or 8-byte property at `offset` to `value`.
    pub fn property_set(cid: u16, offset: u32, eight: bool, value: u64) -> Sqe {
        let mut s = Sqe::fabrics(FCTYPE_PROPERTY_SET, cid);
        s.0[40] = eight as u8;
        s.0[44..48].copy_from_slice(&offset.to_le_bytes());
        s.0[48..56].copy_from_slice(&value.to_le_bytes());
        s
    }

    /// The Fabrics command's property offset, size and value (Set).
    pub fn property(&self) -> (u32, bool, u64) {
        (le32(&self.0, 44), self.0[40] & 1 == 1, le64(&self.0, 48))
    }

    /// Identify (`cns`) with its 4096 bytes of data sent back in C2HData.
    pub fn identify(cid: u16, cns: u8, nsid: u32) -> Sqe {
        Sqe::new(OPC_IDENTIFY, cid, nsid)
            .sgl(SGL_TRANSPORT, 4096)
            .cdw(10, cns as u32)
    }

    /// Get Log Page `lid`: `len` bytes (a multiple of 4) from byte `offset`
    /// (a multiple of 4) of the log, sent back in C2HData; `rae` keeps an
    /// asynchronous event pending (nvme-cli sets it on all but the last
    /// read of the discovery log).
    pub fn get_log_page(cid: u16, lid: u8, offset: u64, len: u32, rae: bool) -> Sqe {
        let numd = len / 4 - 1;
        Sqe::new(OPC_GET_LOG_PAGE, cid, 0)
            .sgl(SGL_TRANSPORT, len)
            .cdw(10, lid as u32 | (rae as u32) << 15 | (numd & 0xFFFF) << 16)
            .cdw(11, numd >> 16)
            .cdw(12, offset as u32)
            .cdw(13, (offset >> 32) as u32)
    }

    /// Get Log Page's (log id, byte offset, byte length).
    pub fn log_page(&self) -> (u8, u64, u64) {
        let numd = (self.dword(10) >> 16) as u64 | ((self.dword(11) & 0xFFFF) as u64) << 16;
        let offset = self.dword(12) as u64 | (self.dword(13) as u64) << 32;
        ((self.dword(10) & 0xFF) as u8, offset, (numd + 1) * 4)
    }

    /// Set Features, Number of Queues: `n` I/O submission and completion
    /// queues (the fields are 0's based).
    pub fn set_num_queues(cid: u16, n: u16) -> Sqe {
        let v = n.saturating_sub(1) as u32;
        Sqe::new(OPC_SET_FEATURES, cid, 0)
            .cdw(10, FID_NUM_QUEUES as u32)
            .cdw(11, v | v << 16)
    }

    pub fn keep_alive(cid: u16) -> Sqe {
        Sqe::new(OPC_KEEP_ALIVE, cid, 0)
    }

    /// Read `blocks` logical blocks (1..=65536) at `slba`, `len` bytes
    /// coming back in C2HData.
    pub fn read(cid: u16, nsid: u32, slba: u64, blocks: u32, len: u32) -> Sqe {
        Sqe::new(OPC_READ, cid, nsid)
            .sgl(SGL_TRANSPORT, len)
            .cdw(10, slba as u32)
            .cdw(11, (slba >> 32) as u32)
            .cdw(12, blocks - 1)
    }

    /// Write `blocks` logical blocks at `slba`; `in_capsule`: the `len`
    /// bytes follow in this command's capsule, else they go in H2CData
    /// PDUs when the controller asks with R2T.
    pub fn write(cid: u16, nsid: u32, slba: u64, blocks: u32, len: u32, in_capsule: bool) -> Sqe {
        let kind = if in_capsule {
            SGL_IN_CAPSULE
        } else {
            SGL_TRANSPORT
        };
        Sqe::new(OPC_WRITE, cid, nsid)
            .sgl(kind, len)
            .cdw(10, slba as u32)
            .cdw(11, (slba >> 32) as u32)
            .cdw(12, blocks - 1)
    }

    pub fn flush(cid: u16, nsid: u32) -> Sqe {
        Sqe::new(OPC_FLUSH, cid, nsid)
    }

    /// A Read or Write's starting block and block count.
    pub fn lba_range(&self) -> (u64, u32) {
        let slba = self.dword(10) as u64 | (self.dword(11) as u64) << 32;
        (slba, (self.dword(12) & 0xFFFF) + 1)
    }

    /// The CapsuleCmd PDU carrying this command and its in-capsule `data`.
    pub fn capsule(&self, data: &[u8], digests: Digests, cpda: u8) -> Result<Vec<u8>> {
        frame(PDU_CAPSULE_CMD, 0, &self.0, data, digests, cpda)
    }
}

/// The command in a CapsuleCmd PDU.
pub fn parse_capsule(p: &RawPdu<'_>) -> Result<Sqe> {
    expect_type(p, &[PDU_CAPSULE_CMD], "a command capsule")?;
    Ok(Sqe(p.specific.try_into().expect("checked header length")))
}

/// Fabrics Connect's data: host identifier, controller ID (0xFFFF: any, on
/// the admin queue; the admin queue's answer on I/O queues), subsystem and
/// host NQNs.
pub fn connect_data(hostid: [u8; 16], cntlid: u16, subnqn: &str, hostnqn: &str) -> Result<Vec<u8>> {
    let mut d = vec![0u8; CONNECT_DATA_LEN];
    d[0..16].copy_from_slice(&hostid);
    d[16..18].copy_from_slice(&cntlid.to_le_bytes());
    for (at, nqn, what) in [(256, subnqn, "subsystem"), (512, hostnqn, "host")] {
        if nqn.is_empty() || nqn.len() > NQN_MAX || nqn.contains('\0') {
            return err(format!(
                "{what} NQN '{nqn}' must be 1..={NQN_MAX} bytes without NUL"
            ));
        }
        d[at..at + nqn.len()].copy_from_slice(nqn.as_bytes());
    }
    Ok(d)
}

/// (host identifier, controller ID, subsystem NQN, host NQN) of Connect's data.
pub fn parse_connect_data(d: &[u8]) -> Result<([u8; 16], u16, String, String)> {
    if d.len() != CONNECT_DATA_LEN {
        return err(format!("Connect data of {} bytes, not 1024", d.len()));
    }
    let nqn = |at: usize| {
        let f = &d[at..at + 256];
        let end = f.iter().position(|&b| b == 0).unwrap_or(256);
        String::from_utf8_lossy(&f[..end]).into_owned()
    };
    Ok((
        d[0..16].try_into().expect("16 bytes"),
        le16(d, 16),
        nqn(256),
        nqn(512),
    ))
}

/// A completion queue entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cqe {
    /// Command specific result: DW0 and DW1.
    pub result: u64,
    pub sq_head: u16,
    pub sq_id: u16,
    pub cid: u16,
    /// Status field: phase tag (bit 0), status code (1..=8), status code
    /// type (9..=11), retry delay (12..=13), more (14), do not retry (15).
    pub status: u16,
}

impl Cqe {
    pub fn success(cid: u16, result: u64) -> Cqe {
        Cqe {
            result,
            sq_head: 0,
            sq_id: 0,
            cid,
            status: 0,
        }
    }

    pub fn encode(&self) -> [u8; CQE_LEN] {
        let mut b = [0u8; CQE_LEN];
        b[0..8].copy_from_slice(&self.result.to_le_bytes());
        b[8..10].copy_from_slice(&self.sq_head.to_le_bytes());
        b[10..12].copy_from_slice(&self.sq_id.to_le_bytes());
        b[12..14].copy_from_slice(&self.cid.to_le_bytes());
        b[14..16].copy_from_slice(&self.status.to_le_bytes());
        b
    }

    pub fn parse(b: &[u8]) -> Result<Cqe> {
        if b.len() < CQE_LEN {
            return err("short completion queue entry");
        }
        Ok(Cqe {
            result: le64(b, 0),
            sq_head: le16(b, 8),
            sq_id: le16(b, 10),
            cid: le16(b, 12),
            status: le16(b, 14),
        })
    }

    /// (status code type, status code).
    pub fn code(&self) -> (u8, u8) {
        (
            ((self.status >> 9) & 0x7) as u8,
            ((self.status >> 1) & 0xFF) as u8,
        )
    }

    pub fn ok(&self) -> bool {
        self.code() == (0, 0)
    }

    /// Do Not Retry: the same command would fail again.
    pub fn dnr(&self) -> bool {
        self.status & 0x8000 != 0
    }

    /// The status with code type `sct` and code `sc` (phase 0, DNR as given).
    pub fn status_of(sct: u8, sc: u8, dnr: bool) -> u16 {
        ((sct as u16 & 0x7) << 9) | ((sc as u16) << 1) | if dnr { 0x8000 } else { 0 }
    }

    /// The CapsuleResp PDU carrying this completion.
    pub fn capsule(&self, digests: Digests) -> Result<Vec<u8>> {
        frame(PDU_CAPSULE_RESP, 0, &self.encode(), &[], digests, 0)
    }
}

/// The completion in a CapsuleResp PDU.
pub fn parse_response(p: &RawPdu<'_>) -> Result<Cqe> {
    expect_type(p, &[PDU_CAPSULE_RESP], "a response capsule")?;
    Cqe::parse(p.specific)
}

/// A status in words, for errors ("Invalid Field in Command (type 0 code 0x02)").
pub fn status_text(sct: u8, sc: u8) -> String {
    let name = match (sct, sc) {
        (0, 0x00) => "Successful Completion",
        (0, 0x01) => "Invalid Command Opcode",
        (0, 0x02) => "Invalid Field in Command",
        (0, 0x03) => "Command ID Conflict",
        (0, 0x04) => "Data Transfer Error",
        (0, 0x06) => "Internal Error",
        (0, 0x07) => "Command Abort Requested",
        (0, 0x0B) => "Invalid Namespace or Format",
        (0, 0x0D) => "Invalid SGL Segment Descriptor",
        (0, 0x0F) => "Data SGL Length Invalid",
        (0, 0x11) => "SGL Descriptor Type Invalid",
        (0, 0x80) => "LBA Out of Range",
        (0, 0x81) => "Capacity Exceeded",
        (0, 0x82) => "Namespace Not Ready",
        (1, 0x01) => "Invalid Queue Identifier",
        (1, 0x02) => "Invalid Queue Size",
        (1, 0x80) => "Connect: Incompatible Format",
        (1, 0x81) => "Connect: Controller Busy",
        (1, 0x82) => "Connect: Invalid Parameters",
        (1, 0x83) => "Connect: Restart Discovery",
        (1, 0x84) => "Connect: Invalid Host",
        (2, 0x80) => "Write Fault",
        (2, 0x81) => "Unrecovered Read Error",
        (2, 0x86) => "Access Denied",
        _ => "status",
    };
    format!("{name} (type {sct} code 0x{sc:02x})")
}

/// The errno a failed completion reads as, the way Linux's NVMe host
/// maps statuses to block-layer errors.
pub fn errno_of(cqe: &Cqe) -> i32 {
    match cqe.code() {
        (0, 0x01) | (0, 0x02) | (0, 0x0B) => libc::EOPNOTSUPP,
        (0, 0x80) => libc::EREMOTEIO,
        (0, 0x81) => libc::ENOSPC,
        (2, 0x86) => libc::EACCES,
        (2, 0x81) => libc::ENODATA,
        _ => libc::EIO,
    }
}

#[cfg(test)]
mod tests;
