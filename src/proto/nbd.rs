//! The NBD wire format as pure functions over byte slices (no I/O): the
//! fixed-newstyle handshake (server greeting, client flags, options and
//! option replies, NBD_OPT_GO's information replies), transmission requests,
//! and simple and structured replies. Layouts and constants follow the NBD
//! protocol document (NetworkBlockDevice/nbd, doc/proto.md); every integer
//! is big-endian.

use std::fmt;

/// "NBDMAGIC": the first 8 bytes a server sends.
pub const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
/// "IHAVEOPT": newstyle negotiation (and the magic of every option request).
pub const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
/// Oldstyle negotiation (the export size follows at once): not supported.
pub const OLDSTYLE_MAGIC: u64 = 0x0000_4202_8186_1253;
/// Magic of every option reply.
pub const OPT_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;
pub const STRUCTURED_REPLY_MAGIC: u32 = 0x668e_33ef;

/// Handshake flags (server) and client flags.
pub const FLAG_FIXED_NEWSTYLE: u16 = 1 << 0;
pub const FLAG_NO_ZEROES: u16 = 1 << 1;

/// Options.
pub const OPT_EXPORT_NAME: u32 = 1;
pub const OPT_ABORT: u32 = 2;
pub const OPT_LIST: u32 = 3;
pub const OPT_INFO: u32 = 6;
pub const OPT_GO: u32 = 7;
pub const OPT_STRUCTURED_REPLY: u32 = 8;

/// Option reply types; errors have bit 31 set.
pub const REP_ACK: u32 = 1;
pub const REP_SERVER: u32 = 2;
pub const REP_INFO: u32 = 3;
const REP_ERR: u32 = 1 << 31;
pub const REP_ERR_UNSUP: u32 = REP_ERR + 1;
pub const REP_ERR_POLICY: u32 = REP_ERR + 2;
pub const REP_ERR_INVALID: u32 = REP_ERR + 3;
pub const REP_ERR_PLATFORM: u32 = REP_ERR + 4;
pub const REP_ERR_TLS_REQD: u32 = REP_ERR + 5;
pub const REP_ERR_UNKNOWN: u32 = REP_ERR + 6;
pub const REP_ERR_SHUTDOWN: u32 = REP_ERR + 7;
pub const REP_ERR_BLOCK_SIZE_REQD: u32 = REP_ERR + 8;
pub const REP_ERR_TOO_BIG: u32 = REP_ERR + 9;

/// Information types of NBD_OPT_GO.
pub const INFO_EXPORT: u16 = 0;
pub const INFO_BLOCK_SIZE: u16 = 3;

/// Transmission flags.
pub const TFLAG_HAS_FLAGS: u16 = 1 << 0;
pub const TFLAG_READ_ONLY: u16 = 1 << 1;
pub const TFLAG_SEND_FLUSH: u16 = 1 << 2;
pub const TFLAG_SEND_TRIM: u16 = 1 << 5;
pub const TFLAG_CAN_MULTI_CONN: u16 = 1 << 8;

/// Commands.
pub const CMD_READ: u16 = 0;
pub const CMD_WRITE: u16 = 1;
pub const CMD_DISC: u16 = 2;
pub const CMD_FLUSH: u16 = 3;
pub const CMD_TRIM: u16 = 4;

/// Structured reply flags and chunk types.
pub const REPLY_FLAG_DONE: u16 = 1 << 0;
pub const REPLY_TYPE_NONE: u16 = 0;
pub const REPLY_TYPE_OFFSET_DATA: u16 = 1;
pub const REPLY_TYPE_OFFSET_HOLE: u16 = 2;
const REPLY_TYPE_ERROR_BIT: u16 = 1 << 15;

/// Bytes of a request header, a simple reply header and a structured reply
/// chunk header.
pub const REQUEST_LEN: usize = 28;
pub const SIMPLE_REPLY_LEN: usize = 16;
pub const STRUCTURED_HEADER_LEN: usize = 20;

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn be64(b: &[u8]) -> u64 {
    u64::from_be_bytes(b[..8].try_into().expect("8 bytes"))
}

/// A protocol violation or a refusal, in words a user can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NbdError(pub String);

impl fmt::Display for NbdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NbdError {}

fn err(msg: impl Into<String>) -> NbdError {
    NbdError(msg.into())
}

/// The server's greeting: NBDMAGIC, IHAVEOPT, handshake flags (18 bytes).
pub fn parse_greeting(b: &[u8; 18]) -> Result<u16, NbdError> {
    if be64(&b[0..8]) != NBDMAGIC {
        return Err(err("not an NBD server (no NBDMAGIC in its greeting)"));
    }
    match be64(&b[8..16]) {
        IHAVEOPT => {}
        OLDSTYLE_MAGIC => {
            return Err(err(
                "the server speaks the oldstyle handshake, which iolab does not (use a newstyle server: nbdkit, qemu-nbd, nbd-server)",
            ))
        }
        m => return Err(err(format!("unknown handshake magic {m:#x}"))),
    }
    let flags = be16(&b[16..18]);
    if flags & FLAG_FIXED_NEWSTYLE == 0 {
        return Err(err(
            "the server does not speak the fixed newstyle handshake",
        ));
    }
    Ok(flags)
}

/// An option request: IHAVEOPT, option, length, data.
pub fn option(opt: u32, data: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(16 + data.len());
    v.extend_from_slice(&IHAVEOPT.to_be_bytes());
    v.extend_from_slice(&opt.to_be_bytes());
    v.extend_from_slice(&(data.len() as u32).to_be_bytes());
    v.extend_from_slice(data);
    v
}

/// NBD_OPT_GO for `export`, asking for the block size constraints (which
/// also tells the server iolab will honour them).
pub fn opt_go(export: &str) -> Vec<u8> {
    let mut d = Vec::with_capacity(8 + export.len());
    d.extend_from_slice(&(export.len() as u32).to_be_bytes());
    d.extend_from_slice(export.as_bytes());
    d.extend_from_slice(&1u16.to_be_bytes());
    d.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
    option(OPT_GO, &d)
}

/// The fixed part of an option reply (20 bytes): option, reply type, length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptReplyHeader {
    pub option: u32,
    pub reply: u32,
    pub len: u32,
}

pub fn parse_opt_reply(b: &[u8; 20]) -> Result<OptReplyHeader, NbdError> {
    if be64(&b[0..8]) != OPT_REPLY_MAGIC {
        return Err(err("bad option reply magic from the server"));
    }
    Ok(OptReplyHeader {
        option: be32(&b[8..12]),
        reply: be32(&b[12..16]),
        len: be32(&b[16..20]),
    })
}

/// What an error reply to an option means, with the server's message.
pub fn option_refused(export: &str, reply: u32, message: &[u8]) -> NbdError {
    let why = match reply {
        REP_ERR_UNKNOWN => format!("the server has no export named {export:?}"),
        REP_ERR_TLS_REQD => "the server requires TLS, which iolab does not speak".into(),
        REP_ERR_POLICY => "the server's policy refuses this client".into(),
        REP_ERR_UNSUP => "the server does not support this option".into(),
        REP_ERR_INVALID => "the server found the request invalid".into(),
        REP_ERR_PLATFORM => "the server cannot do this on its platform".into(),
        REP_ERR_SHUTDOWN => "the server is shutting down".into(),
        REP_ERR_BLOCK_SIZE_REQD => "the server requires block size negotiation".into(),
        REP_ERR_TOO_BIG => "the request is too big for the server".into(),
        r => format!("the server answered with error {r:#x}"),
    };
    let msg = String::from_utf8_lossy(message);
    if msg.trim().is_empty() {
        err(why)
    } else {
        err(format!("{why} (server: {})", msg.trim()))
    }
}

/// What the server says about an export.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExportInfo {
    pub size: u64,
    pub flags: u16,
    /// Minimum, preferred and maximum block size (NBD_INFO_BLOCK_SIZE);
    /// the protocol's defaults (1, 4096, 32 MiB) when not sent.
    pub min_block: u32,
    pub preferred_block: u32,
    pub max_block: u32,
    /// Replies come as structured chunks (NBD_OPT_STRUCTURED_REPLY acked).
    pub structured: bool,
}

impl ExportInfo {
    pub fn read_only(&self) -> bool {
        self.flags & TFLAG_READ_ONLY != 0
    }
    pub fn can_flush(&self) -> bool {
        self.flags & TFLAG_SEND_FLUSH != 0
    }
    pub fn can_multi_conn(&self) -> bool {
        self.flags & TFLAG_CAN_MULTI_CONN != 0
    }
}

/// Apply one NBD_REP_INFO payload to `info`; unknown types are ignored.
pub fn apply_info(info: &mut ExportInfo, payload: &[u8]) -> Result<(), NbdError> {
    if payload.len() < 2 {
        return Err(err("short NBD_REP_INFO from the server"));
    }
    match be16(payload) {
        INFO_EXPORT if payload.len() >= 12 => {
            info.size = be64(&payload[2..10]);
            info.flags = be16(&payload[10..12]);
        }
        INFO_BLOCK_SIZE if payload.len() >= 14 => {
            info.min_block = be32(&payload[2..6]);
            info.preferred_block = be32(&payload[6..10]);
            info.max_block = be32(&payload[10..14]);
        }
        INFO_EXPORT | INFO_BLOCK_SIZE => return Err(err("short NBD_REP_INFO from the server")),
        _ => {}
    }
    Ok(())
}

/// The reply to NBD_OPT_EXPORT_NAME (servers without NBD_OPT_GO): size
/// and transmission flags (then 124 zero bytes unless NO_ZEROES was agreed).
pub fn parse_export_name_reply(b: &[u8; 10]) -> (u64, u16) {
    (be64(&b[0..8]), be16(&b[8..10]))
}

/// A transmission request header into `out` (28 bytes).
#[inline]
pub fn encode_request(out: &mut [u8], cmd: u16, cookie: u64, offset: u64, len: u32) {
    out[0..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
    out[4..6].copy_from_slice(&0u16.to_be_bytes());
    out[6..8].copy_from_slice(&cmd.to_be_bytes());
    out[8..16].copy_from_slice(&cookie.to_be_bytes());
    out[16..24].copy_from_slice(&offset.to_be_bytes());
    out[24..28].copy_from_slice(&len.to_be_bytes());
}

/// One reply header from the server, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyHeader {
    /// A simple reply: `error` is an NBD errno (0 = success); a successful
    /// read's data follows (the request's length).
    Simple { cookie: u64, error: u32 },
    /// One chunk of a structured reply; `len` payload bytes follow.
    Chunk {
        cookie: u64,
        flags: u16,
        kind: u16,
        len: u32,
    },
}

/// Decode the header at the start of `b`: `Ok(None)` when more bytes are
/// needed, with the header's size otherwise.
#[inline]
pub fn parse_reply_header(b: &[u8]) -> Result<Option<(ReplyHeader, usize)>, NbdError> {
    if b.len() < 4 {
        return Ok(None);
    }
    match be32(b) {
        SIMPLE_REPLY_MAGIC if b.len() >= SIMPLE_REPLY_LEN => Ok(Some((
            ReplyHeader::Simple {
                error: be32(&b[4..8]),
                cookie: be64(&b[8..16]),
            },
            SIMPLE_REPLY_LEN,
        ))),
        STRUCTURED_REPLY_MAGIC if b.len() >= STRUCTURED_HEADER_LEN => Ok(Some((
            ReplyHeader::Chunk {
                flags: be16(&b[4..6]),
                kind: be16(&b[6..8]),
                cookie: be64(&b[8..16]),
                len: be32(&b[16..20]),
            },
            STRUCTURED_HEADER_LEN,
        ))),
        SIMPLE_REPLY_MAGIC | STRUCTURED_REPLY_MAGIC => Ok(None),
        m => Err(err(format!(
            "bad reply magic {m:#010x} from the server (the stream is out of step)"
        ))),
    }
}

/// Whether a chunk type is an error chunk.
pub fn is_error_chunk(kind: u16) -> bool {
    kind & REPLY_TYPE_ERROR_BIT != 0
}

/// An error chunk's payload: the NBD errno and the server's message.
pub fn parse_error_chunk(payload: &[u8]) -> Result<(u32, String), NbdError> {
    if payload.len() < 6 {
        return Err(err("short error chunk from the server"));
    }
    let code = be32(payload);
    let n = be16(&payload[4..6]) as usize;
    let msg = payload.get(6..6 + n).unwrap_or(&[]);
    Ok((code, String::from_utf8_lossy(msg).into_owned()))
}

/// The offset an OFFSET_DATA or OFFSET_HOLE chunk starts at, and for a
/// hole its length.
pub fn chunk_offset(payload: &[u8]) -> Result<u64, NbdError> {
    payload
        .get(..8)
        .map(be64)
        .ok_or_else(|| err("short data chunk from the server"))
}

pub fn hole_len(payload: &[u8]) -> Result<u32, NbdError> {
    payload
        .get(8..12)
        .map(be32)
        .ok_or_else(|| err("short hole chunk from the server"))
}

/// The server side (iolab's own target): the greeting it sends.
pub fn encode_greeting(flags: u16) -> [u8; 18] {
    let mut g = [0u8; 18];
    g[0..8].copy_from_slice(&NBDMAGIC.to_be_bytes());
    g[8..16].copy_from_slice(&IHAVEOPT.to_be_bytes());
    g[16..18].copy_from_slice(&flags.to_be_bytes());
    g
}

/// An option request's header as the server reads it: option and length.
pub fn parse_option_header(b: &[u8; 16]) -> Result<(u32, u32), NbdError> {
    if be64(&b[0..8]) != IHAVEOPT {
        return Err(err("bad option magic from the client"));
    }
    Ok((be32(&b[8..12]), be32(&b[12..16])))
}

/// An option reply as the server sends it.
pub fn encode_opt_reply(opt: u32, reply: u32, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(20 + payload.len());
    v.extend_from_slice(&OPT_REPLY_MAGIC.to_be_bytes());
    v.extend_from_slice(&opt.to_be_bytes());
    v.extend_from_slice(&reply.to_be_bytes());
    v.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    v.extend_from_slice(payload);
    v
}

/// NBD_INFO_EXPORT's payload: size and transmission flags.
pub fn encode_info_export(size: u64, flags: u16) -> Vec<u8> {
    let mut v = INFO_EXPORT.to_be_bytes().to_vec();
    v.extend_from_slice(&size.to_be_bytes());
    v.extend_from_slice(&flags.to_be_bytes());
    v
}

/// NBD_INFO_BLOCK_SIZE's payload: minimum, preferred and maximum.
pub fn encode_info_block_size(min: u32, preferred: u32, max: u32) -> Vec<u8> {
    let mut v = INFO_BLOCK_SIZE.to_be_bytes().to_vec();
    for x in [min, preferred, max] {
        v.extend_from_slice(&x.to_be_bytes());
    }
    v
}

/// The export name of an NBD_OPT_GO or NBD_OPT_INFO request's data.
pub fn parse_go(data: &[u8]) -> Result<String, NbdError> {
    let n = data
        .get(..4)
        .map(be32)
        .ok_or_else(|| err("short NBD_OPT_GO from the client"))? as usize;
    let name = data
        .get(4..4 + n)
        .ok_or_else(|| err("NBD_OPT_GO's name runs past its data"))?;
    String::from_utf8(name.to_vec()).map_err(|_| err("the export name is not UTF-8"))
}

/// A transmission request as the server decodes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub flags: u16,
    pub cmd: u16,
    pub cookie: u64,
    pub offset: u64,
    pub len: u32,
}

pub fn decode_request(b: &[u8; REQUEST_LEN]) -> Result<Request, NbdError> {
    if be32(b) != REQUEST_MAGIC {
        return Err(err("bad request magic from the client"));
    }
    Ok(Request {
        flags: be16(&b[4..6]),
        cmd: be16(&b[6..8]),
        cookie: be64(&b[8..16]),
        offset: be64(&b[16..24]),
        len: be32(&b[24..28]),
    })
}

/// A simple reply header (16 bytes).
pub fn encode_simple_reply(cookie: u64, error: u32) -> [u8; SIMPLE_REPLY_LEN] {
    let mut v = [0u8; SIMPLE_REPLY_LEN];
    v[0..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    v[4..8].copy_from_slice(&error.to_be_bytes());
    v[8..16].copy_from_slice(&cookie.to_be_bytes());
    v
}

/// A structured reply chunk header (20 bytes); `len` payload bytes follow.
pub fn encode_chunk_header(
    cookie: u64,
    flags: u16,
    kind: u16,
    len: u32,
) -> [u8; STRUCTURED_HEADER_LEN] {
    let mut v = [0u8; STRUCTURED_HEADER_LEN];
    v[0..4].copy_from_slice(&STRUCTURED_REPLY_MAGIC.to_be_bytes());
    v[4..6].copy_from_slice(&flags.to_be_bytes());
    v[6..8].copy_from_slice(&kind.to_be_bytes());
    v[8..16].copy_from_slice(&cookie.to_be_bytes());
    v[16..20].copy_from_slice(&len.to_be_bytes());
    v
}

/// An NBD errno as a local errno (the protocol's values are Linux's).
pub fn errno_of(nbd_error: u32) -> i32 {
    match nbd_error {
        1 => libc::EPERM,
        5 => libc::EIO,
        12 => libc::ENOMEM,
        22 => libc::EINVAL,
        28 => libc::ENOSPC,
        75 => libc::EOVERFLOW,
        95 => libc::EOPNOTSUPP,
        108 => libc::ESHUTDOWN,
        _ => libc::EIO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn greeting(magic2: u64, flags: u16) -> [u8; 18] {
        let mut g = [0u8; 18];
        g[0..8].copy_from_slice(&NBDMAGIC.to_be_bytes());
        g[8..16].copy_from_slice(&magic2.to_be_bytes());
        g[16..18].copy_from_slice(&flags.to_be_bytes());
        g
    }

    #[test]
    fn the_server_side_encodes_what_the_client_side_decodes() {
        assert_eq!(parse_greeting(&encode_greeting(3)), Ok(3));
        let o = option(OPT_GO, b"x");
        let (opt, len) = parse_option_header(o[..16].try_into().unwrap()).unwrap();
        assert_eq!((opt, len), (OPT_GO, 1));
        let r = encode_opt_reply(OPT_GO, REP_ACK, &[1, 2]);
        let h = parse_opt_reply(r[..20].try_into().unwrap()).unwrap();
        assert_eq!((h.option, h.reply, h.len), (OPT_GO, REP_ACK, 2));
        let mut info = ExportInfo::default();
        apply_info(&mut info, &encode_info_export(1 << 20, 0x105)).unwrap();
        apply_info(&mut info, &encode_info_block_size(4096, 4096, 1 << 25)).unwrap();
        assert_eq!(
            (info.size, info.flags, info.min_block),
            (1 << 20, 0x105, 4096)
        );
        assert_eq!(parse_go(&opt_go("vol")[16..]), Ok("vol".to_string()));
        assert!(parse_go(&[0, 0, 0, 9, b'a']).is_err());
        let mut b = [0u8; REQUEST_LEN];
        encode_request(&mut b, CMD_READ, 42, 8192, 4096);
        let q = decode_request(&b).unwrap();
        assert_eq!(
            (q.cmd, q.cookie, q.offset, q.len),
            (CMD_READ, 42, 8192, 4096)
        );
        b[0] = 0;
        assert!(decode_request(&b).is_err());
        let c = encode_chunk_header(7, REPLY_FLAG_DONE, REPLY_TYPE_OFFSET_HOLE, 12);
        assert_eq!(
            parse_reply_header(&c),
            Ok(Some((
                ReplyHeader::Chunk {
                    cookie: 7,
                    flags: REPLY_FLAG_DONE,
                    kind: REPLY_TYPE_OFFSET_HOLE,
                    len: 12
                },
                20
            )))
        );
        let r = encode_simple_reply(42, 5);
        assert_eq!(
            parse_reply_header(&r),
            Ok(Some((
                ReplyHeader::Simple {
                    cookie: 42,
                    error: 5
                },
                16
            )))
        );
    }

    #[test]
    fn greeting_needs_fixed_newstyle() {
        assert_eq!(parse_greeting(&greeting(IHAVEOPT, 3)), Ok(3));
        let e = parse_greeting(&greeting(IHAVEOPT, 0)).unwrap_err();
        assert!(e.0.contains("fixed newstyle"), "{e}");
        let e = parse_greeting(&greeting(OLDSTYLE_MAGIC, 0)).unwrap_err();
        assert!(e.0.contains("oldstyle"), "{e}");
        let mut g = greeting(IHAVEOPT, 1);
        g[0] = b'X';
        assert!(parse_greeting(&g)
            .unwrap_err()
            .0
            .contains("not an NBD server"));
    }

    #[test]
    fn go_asks_for_the_export_and_block_sizes() {
        let v = opt_go("disk");
        assert_eq!(be64(&v[0..8]), IHAVEOPT);
        assert_eq!(be32(&v[8..12]), OPT_GO);
        assert_eq!(be32(&v[12..16]) as usize, v.len() - 16);
        assert_eq!(be32(&v[16..20]), 4);
        assert_eq!(&v[20..24], b"disk");
        assert_eq!(be16(&v[24..26]), 1);
        assert_eq!(be16(&v[26..28]), INFO_BLOCK_SIZE);
    }

    #[test]
    fn option_replies_and_information() {
        let mut b = [0u8; 20];
        b[0..8].copy_from_slice(&OPT_REPLY_MAGIC.to_be_bytes());
        b[8..12].copy_from_slice(&OPT_GO.to_be_bytes());
        b[12..16].copy_from_slice(&REP_INFO.to_be_bytes());
        b[16..20].copy_from_slice(&12u32.to_be_bytes());
        let h = parse_opt_reply(&b).unwrap();
        assert_eq!((h.option, h.reply, h.len), (OPT_GO, REP_INFO, 12));
        b[0] ^= 1;
        assert!(parse_opt_reply(&b).is_err());

        let mut info = ExportInfo::default();
        let mut p = vec![0, 0];
        p.extend_from_slice(&(1u64 << 30).to_be_bytes());
        p.extend_from_slice(
            &(TFLAG_HAS_FLAGS | TFLAG_SEND_FLUSH | TFLAG_CAN_MULTI_CONN).to_be_bytes(),
        );
        apply_info(&mut info, &p).unwrap();
        assert_eq!(info.size, 1 << 30);
        assert!(info.can_flush() && info.can_multi_conn() && !info.read_only());
        let mut p = vec![0, 3];
        for v in [512u32, 4096, 33_554_432] {
            p.extend_from_slice(&v.to_be_bytes());
        }
        apply_info(&mut info, &p).unwrap();
        assert_eq!(
            (info.min_block, info.preferred_block, info.max_block),
            (512, 4096, 1 << 25)
        );
        assert!(apply_info(&mut info, &[0, 0, 1]).is_err());
        // Types iolab did not ask for are skipped.
        apply_info(&mut info, &[0, 2, b'x']).unwrap();
    }

    #[test]
    fn refusals_say_what_went_wrong() {
        let e = option_refused("vol", REP_ERR_UNKNOWN, b"");
        assert!(e.0.contains("no export named \"vol\""), "{e}");
        let e = option_refused("", REP_ERR_TLS_REQD, b"use TLS");
        assert!(
            e.0.contains("TLS") && e.0.contains("(server: use TLS)"),
            "{e}"
        );
    }

    #[test]
    fn requests_have_the_documented_layout() {
        let mut b = [0u8; REQUEST_LEN];
        encode_request(&mut b, CMD_WRITE, 7, 4096, 512);
        assert_eq!(be32(&b[0..4]), REQUEST_MAGIC);
        assert_eq!(be16(&b[4..6]), 0);
        assert_eq!(be16(&b[6..8]), CMD_WRITE);
        assert_eq!(be64(&b[8..16]), 7);
        assert_eq!(be64(&b[16..24]), 4096);
        assert_eq!(be32(&b[24..28]), 512);
    }

    #[test]
    fn simple_and_structured_reply_headers() {
        let mut s = Vec::new();
        s.extend_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
        s.extend_from_slice(&5u32.to_be_bytes());
        s.extend_from_slice(&9u64.to_be_bytes());
        assert_eq!(parse_reply_header(&s[..10]), Ok(None));
        assert_eq!(
            parse_reply_header(&s),
            Ok(Some((
                ReplyHeader::Simple {
                    cookie: 9,
                    error: 5
                },
                16
            )))
        );
        let mut c = Vec::new();
        c.extend_from_slice(&STRUCTURED_REPLY_MAGIC.to_be_bytes());
        c.extend_from_slice(&REPLY_FLAG_DONE.to_be_bytes());
        c.extend_from_slice(&REPLY_TYPE_OFFSET_DATA.to_be_bytes());
        c.extend_from_slice(&3u64.to_be_bytes());
        c.extend_from_slice(&4104u32.to_be_bytes());
        assert_eq!(
            parse_reply_header(&c),
            Ok(Some((
                ReplyHeader::Chunk {
                    cookie: 3,
                    flags: REPLY_FLAG_DONE,
                    kind: REPLY_TYPE_OFFSET_DATA,
                    len: 4104
                },
                20
            )))
        );
        assert!(parse_reply_header(&[0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0]).is_err());
        assert_eq!(parse_reply_header(&[0x67]), Ok(None));
    }

    #[test]
    fn error_and_data_chunks() {
        let mut p = Vec::new();
        p.extend_from_slice(&28u32.to_be_bytes());
        p.extend_from_slice(&4u16.to_be_bytes());
        p.extend_from_slice(b"full");
        assert_eq!(parse_error_chunk(&p), Ok((28, "full".to_string())));
        assert!(parse_error_chunk(&p[..5]).is_err());
        assert!(is_error_chunk(REPLY_TYPE_ERROR_BIT + 1));
        assert!(!is_error_chunk(REPLY_TYPE_OFFSET_HOLE));
        let mut h = 8192u64.to_be_bytes().to_vec();
        h.extend_from_slice(&4096u32.to_be_bytes());
        assert_eq!(chunk_offset(&h), Ok(8192));
        assert_eq!(hole_len(&h), Ok(4096));
        assert!(hole_len(&h[..8]).is_err());
        assert_eq!(errno_of(28), libc::ENOSPC);
        assert_eq!(errno_of(999), libc::EIO);
    }
}
