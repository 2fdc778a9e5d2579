//! Connecting to an NBD server: TCP connect with a timeout, the
//! fixed-newstyle handshake (structured replies asked for, NBD_OPT_GO with
//! the block size constraints, NBD_OPT_EXPORT_NAME for servers without GO),
//! and what the server said about the export. Blocking, once per
//! connection, before any timing.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::time::Instant;

use super::codec::{self, ExportInfo, NbdError};
use crate::engine::peer_wait::Bounded;
use crate::plan::endpoint::{RemoteEndpoint, RemoteResource};

/// How long connecting and each handshake read or write may take.
pub use crate::engine::peer_wait::HANDSHAKE_TIMEOUT;
/// Replies to NBD_OPT_GO accepted before its final one (a server that
/// never stops sending NBD_REP_INFO is refused, not waited on).
const MAX_GO_REPLIES: usize = 64;
/// The largest minimum block size the protocol allows.
const MAX_MIN_BLOCK: u32 = 64 * 1024;
/// Largest option reply payload accepted during the handshake.
const MAX_OPTION_REPLY: u32 = 64 * 1024;
/// The protocol's block sizes when the server sends none.
const DEFAULT_MIN_BLOCK: u32 = 1;
const DEFAULT_PREFERRED_BLOCK: u32 = 4096;
const DEFAULT_MAX_BLOCK: u32 = 32 << 20;

fn protocol(e: NbdError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

/// The export name of an `nbd://` endpoint.
pub fn export_name(ep: &RemoteEndpoint) -> &str {
    match &ep.resource {
        RemoteResource::NbdExport { export } => export,
        _ => "",
    }
}

/// Connect to `ep` and complete the handshake: a blocking stream with
/// TCP_NODELAY in transmission phase, and the export's description.
pub fn connect(ep: &RemoteEndpoint) -> io::Result<(TcpStream, ExportInfo)> {
    connect_asking(ep, true)
}

/// `connect`, asking for structured replies only if `structured` (the
/// kernel's NBD client, which takes over the socket, reads simple ones).
pub fn connect_asking(
    ep: &RemoteEndpoint,
    structured: bool,
) -> io::Result<(TcpStream, ExportInfo)> {
    let addrs: Vec<_> = (ep.host.as_str(), ep.port)
        .to_socket_addrs()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot resolve {}: {e}", ep.host)))?
        .collect();
    let mut last = None;
    let mut stream = None;
    for a in &addrs {
        match TcpStream::connect_timeout(a, HANDSHAKE_TIMEOUT) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = Some(e),
        }
    }
    let Some(s) = stream else {
        let e = last.unwrap_or_else(|| io::Error::other("no address"));
        return Err(io::Error::new(
            e.kind(),
            format!("cannot connect to {}:{}: {e}", ep.host, ep.port),
        ));
    };
    s.set_nodelay(true)?;
    let mut bounded = Bounded {
        sock: &s,
        deadline: Instant::now() + HANDSHAKE_TIMEOUT,
        honour_stop: true,
        what: "the NBD handshake",
    };
    let info = handshake_asking(&mut bounded, export_name(ep), structured).map_err(|e| {
        let _ = s.shutdown(Shutdown::Both);
        io::Error::new(e.kind(), format!("{ep}: {e}"))
    })?;
    s.set_read_timeout(None)?;
    s.set_write_timeout(None)?;
    Ok((s, info))
}

/// The handshake on any byte stream (a socket, or a test's scripted server).
pub fn handshake<S: Read + Write>(s: &mut S, export: &str) -> io::Result<ExportInfo> {
    handshake_asking(s, export, true)
}

/// The handshake, asking for structured replies only if `ask_structured`.
pub fn handshake_asking<S: Read + Write>(
    s: &mut S,
    export: &str,
    ask_structured: bool,
) -> io::Result<ExportInfo> {
    let mut g = [0u8; 18];
    s.read_exact(&mut g).map_err(|e| closed(e, "greeting"))?;
    let server_flags = codec::parse_greeting(&g).map_err(protocol)?;
    let no_zeroes = server_flags & codec::FLAG_NO_ZEROES != 0;
    let client_flags = codec::FLAG_FIXED_NEWSTYLE as u32
        | if no_zeroes {
            codec::FLAG_NO_ZEROES as u32
        } else {
            0
        };
    s.write_all(&client_flags.to_be_bytes())?;

    let structured = ask_structured && {
        s.write_all(&codec::option(codec::OPT_STRUCTURED_REPLY, &[]))?;
        let (h, _) = read_opt_reply(s)?;
        h.reply == codec::REP_ACK
    };

    s.write_all(&codec::opt_go(export))?;
    let mut info = ExportInfo {
        structured,
        ..ExportInfo::default()
    };
    for _ in 0..MAX_GO_REPLIES {
        let (h, payload) = read_opt_reply(s)?;
        match h.reply {
            codec::REP_INFO => codec::apply_info(&mut info, &payload).map_err(protocol)?,
            codec::REP_ACK => return checked(with_default_blocks(info)),
            codec::REP_ERR_UNSUP => return export_name_fallback(s, export, no_zeroes, structured),
            r if r & (1 << 31) != 0 => {
                return Err(protocol(codec::option_refused(export, r, &payload)))
            }
            _ => {} // other replies to GO carry nothing iolab uses
        }
    }
    Err(protocol(NbdError(format!(
        "the server sent more than {MAX_GO_REPLIES} replies to NBD_OPT_GO without ending them"
    ))))
}

/// What the server said, refused where no real export could say it: a
/// size past what a file offset can address (2^63 - 1, as Linux's and
/// libnbd's clients refuse), block sizes outside the protocol's rules.
fn checked(info: ExportInfo) -> io::Result<ExportInfo> {
    let bad = |field: &str, why: String| protocol(NbdError(format!("{field}: {why}")));
    if info.size > i64::MAX as u64 {
        return Err(bad(
            "export size",
            format!(
                "the server says {} bytes, more than 2^63 - 1 (no offset can address it)",
                info.size
            ),
        ));
    }
    let (min, pref, max) = (info.min_block, info.preferred_block, info.max_block);
    if !min.is_power_of_two() || min > MAX_MIN_BLOCK {
        return Err(bad(
            "minimum block size",
            format!("{min} from the server is not a power of two up to 64 KiB"),
        ));
    }
    if !pref.is_power_of_two() || pref < min {
        return Err(bad(
            "preferred block size",
            format!("{pref} from the server is not a power of two of at least the minimum {min}"),
        ));
    }
    if max < min {
        return Err(bad(
            "maximum block size",
            format!("{max} from the server is under its minimum {min}"),
        ));
    }
    Ok(info)
}

/// Servers without NBD_OPT_GO: NBD_OPT_EXPORT_NAME, which the server
/// answers with the size and flags (or by closing when the export is unknown).
fn export_name_fallback<S: Read + Write>(
    s: &mut S,
    export: &str,
    no_zeroes: bool,
    structured: bool,
) -> io::Result<ExportInfo> {
    s.write_all(&codec::option(codec::OPT_EXPORT_NAME, export.as_bytes()))?;
    let mut b = [0u8; 10];
    s.read_exact(&mut b).map_err(|e| {
        closed(
            e,
            &format!("export {export:?} (the server closed: no such export?)"),
        )
    })?;
    if !no_zeroes {
        let mut z = [0u8; 124];
        s.read_exact(&mut z)?;
    }
    let (size, flags) = codec::parse_export_name_reply(&b);
    checked(with_default_blocks(ExportInfo {
        size,
        flags,
        structured,
        ..ExportInfo::default()
    }))
}

fn with_default_blocks(mut info: ExportInfo) -> ExportInfo {
    if info.min_block == 0 {
        info.min_block = DEFAULT_MIN_BLOCK;
    }
    if info.preferred_block == 0 {
        info.preferred_block = DEFAULT_PREFERRED_BLOCK;
    }
    if info.max_block == 0 {
        info.max_block = DEFAULT_MAX_BLOCK;
    }
    info
}

fn read_opt_reply<S: Read>(s: &mut S) -> io::Result<(codec::OptReplyHeader, Vec<u8>)> {
    let mut b = [0u8; 20];
    s.read_exact(&mut b)
        .map_err(|e| closed(e, "option reply"))?;
    let h = codec::parse_opt_reply(&b).map_err(protocol)?;
    if h.len > MAX_OPTION_REPLY {
        return Err(protocol(NbdError(format!(
            "option reply of {} bytes from the server is too large",
            h.len
        ))));
    }
    let mut payload = vec![0u8; h.len as usize];
    s.read_exact(&mut payload)?;
    Ok((h, payload))
}

fn closed(e: io::Error, what: &str) -> io::Error {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        io::Error::new(
            e.kind(),
            format!("the server closed the connection during the handshake ({what})"),
        )
    } else {
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// A scripted server: what it sends is fixed in advance; what the
    /// client writes is kept for inspection.
    struct Script {
        from_server: Cursor<Vec<u8>>,
        from_client: Vec<u8>,
    }

    impl Read for Script {
        fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
            self.from_server.read(b)
        }
    }

    impl Write for Script {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.from_client.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn greeting(flags: u16) -> Vec<u8> {
        codec::encode_greeting(flags).to_vec()
    }

    use codec::{encode_info_export as info_export, encode_opt_reply as opt_reply};

    fn run(server: Vec<u8>, export: &str) -> (io::Result<ExportInfo>, Vec<u8>) {
        let mut s = Script {
            from_server: Cursor::new(server),
            from_client: Vec::new(),
        };
        let r = handshake(&mut s, export);
        (r, s.from_client)
    }

    #[test]
    fn go_with_structured_replies_and_block_sizes() {
        let mut srv = greeting(3);
        srv.extend(opt_reply(codec::OPT_STRUCTURED_REPLY, codec::REP_ACK, &[]));
        srv.extend(opt_reply(
            codec::OPT_GO,
            codec::REP_INFO,
            &info_export(1 << 30, 0x10d),
        ));
        let bs = codec::encode_info_block_size(512, 4096, 1 << 20);
        srv.extend(opt_reply(codec::OPT_GO, codec::REP_INFO, &bs));
        srv.extend(opt_reply(codec::OPT_GO, codec::REP_ACK, &[]));
        let (info, sent) = run(srv, "disk");
        let info = info.unwrap();
        assert_eq!(info.size, 1 << 30);
        assert!(info.structured && info.can_flush() && info.can_multi_conn());
        assert_eq!(info.max_block, 1 << 20);
        // Client flags: fixed newstyle and no zeroes.
        assert_eq!(&sent[..4], &3u32.to_be_bytes());
        assert_eq!(
            &sent[4..20],
            &codec::option(codec::OPT_STRUCTURED_REPLY, &[])[..]
        );
        assert_eq!(&sent[20..], &codec::opt_go("disk")[..]);
    }

    #[test]
    fn simple_replies_and_default_block_sizes() {
        let mut srv = greeting(1);
        srv.extend(opt_reply(
            codec::OPT_STRUCTURED_REPLY,
            codec::REP_ERR_UNSUP,
            &[],
        ));
        srv.extend(opt_reply(
            codec::OPT_GO,
            codec::REP_INFO,
            &info_export(4096, 1),
        ));
        srv.extend(opt_reply(codec::OPT_GO, codec::REP_ACK, &[]));
        let (info, sent) = run(srv, "");
        let info = info.unwrap();
        assert!(!info.structured);
        assert_eq!(
            (info.min_block, info.preferred_block, info.max_block),
            (1, 4096, 32 << 20)
        );
        assert_eq!(
            &sent[..4],
            &1u32.to_be_bytes(),
            "no NO_ZEROES when not offered"
        );
    }

    #[test]
    fn servers_without_go_get_export_name() {
        let mut srv = greeting(1);
        srv.extend(opt_reply(
            codec::OPT_STRUCTURED_REPLY,
            codec::REP_ERR_UNSUP,
            &[],
        ));
        srv.extend(opt_reply(codec::OPT_GO, codec::REP_ERR_UNSUP, &[]));
        srv.extend_from_slice(&(1u64 << 20).to_be_bytes());
        srv.extend_from_slice(&3u16.to_be_bytes());
        srv.extend_from_slice(&[0u8; 124]);
        let (info, _) = run(srv, "x");
        let info = info.unwrap();
        assert_eq!(info.size, 1 << 20);
        assert!(info.read_only());
    }

    #[test]
    fn refusals_and_early_close_are_clear() {
        let mut srv = greeting(3);
        srv.extend(opt_reply(codec::OPT_STRUCTURED_REPLY, codec::REP_ACK, &[]));
        srv.extend(opt_reply(
            codec::OPT_GO,
            codec::REP_ERR_UNKNOWN,
            b"no such export",
        ));
        let e = run(srv, "nope").0.unwrap_err().to_string();
        assert!(
            e.contains("no export named \"nope\"") && e.contains("no such export"),
            "{e}"
        );
        let e = run(greeting(3)[..10].to_vec(), "")
            .0
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("closed the connection during the handshake"),
            "{e}"
        );
        let mut bad = greeting(3);
        bad[0] = 0;
        let e = run(bad, "").0.unwrap_err().to_string();
        assert!(e.contains("not an NBD server"), "{e}");
    }
}
