//! The server side of NBD's fixed-newstyle handshake, for iolab's own NBD
//! target: the greeting, the client's flags, then options until
//! transmission starts: structured replies, NBD_OPT_INFO and NBD_OPT_GO
//! (the export's size, flags and block sizes), NBD_OPT_LIST (the one
//! export's name), NBD_OPT_EXPORT_NAME, NBD_OPT_ABORT; anything else is refused with NBD_REP_ERR_UNSUP, as the
//! protocol asks. Blocking, once per connection, before any timing.

use std::io::{self, Read, Write};

use crate::proto::nbd::{self as codec, NbdError};

/// What the target serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Export {
    /// Its name; the empty name (the default export) also reaches it.
    pub name: String,
    pub size: u64,
    pub read_only: bool,
    /// Requests must be multiples of this (4096 for O_DIRECT on most devices).
    pub min_block: u32,
    pub max_block: u32,
}

impl Export {
    /// The transmission flags the target advertises: flush, and several
    /// connections seeing each other's writes (one backing file, O_DIRECT).
    pub fn flags(&self) -> u16 {
        let mut f = codec::TFLAG_HAS_FLAGS | codec::TFLAG_SEND_FLUSH | codec::TFLAG_CAN_MULTI_CONN;
        if self.read_only {
            f |= codec::TFLAG_READ_ONLY;
        }
        f
    }
}

/// How the handshake ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Negotiation {
    /// Transmission starts; replies are structured when the client asked.
    Transmission { structured: bool },
    /// The client gave up (NBD_OPT_ABORT, or it closed).
    Aborted,
}

/// Largest option data accepted (an export name is at most 4096 bytes).
const MAX_OPTION_DATA: u32 = 8192;
/// Options one handshake may send at most (a client needs a handful).
const MAX_OPTIONS: usize = 128;

fn protocol(e: NbdError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

/// Run the handshake on `s` for `export`.
pub fn negotiate<S: Read + Write>(s: &mut S, export: &Export) -> io::Result<Negotiation> {
    let server_flags = codec::FLAG_FIXED_NEWSTYLE | codec::FLAG_NO_ZEROES;
    s.write_all(&codec::encode_greeting(server_flags))?;
    let mut cf = [0u8; 4];
    s.read_exact(&mut cf)?;
    let client_flags = u32::from_be_bytes(cf);
    if client_flags & codec::FLAG_FIXED_NEWSTYLE as u32 == 0 {
        return Err(protocol(NbdError(
            "the client does not speak the fixed newstyle handshake".into(),
        )));
    }
    let no_zeroes = client_flags & codec::FLAG_NO_ZEROES as u32 != 0;
    let mut structured = false;
    for _ in 0..MAX_OPTIONS {
        let mut h = [0u8; 16];
        if let Err(e) = s.read_exact(&mut h) {
            return match e.kind() {
                io::ErrorKind::UnexpectedEof => Ok(Negotiation::Aborted),
                _ => Err(e),
            };
        }
        let (opt, len) = codec::parse_option_header(&h).map_err(protocol)?;
        if len > MAX_OPTION_DATA {
            return Err(protocol(NbdError(format!(
                "option {opt} carries {len} bytes, more than any option needs"
            ))));
        }
        let mut data = vec![0u8; len as usize];
        s.read_exact(&mut data)?;
        match opt {
            codec::OPT_STRUCTURED_REPLY => {
                structured = true;
                s.write_all(&codec::encode_opt_reply(opt, codec::REP_ACK, &[]))?;
            }
            codec::OPT_GO | codec::OPT_INFO => {
                if answer_info(s, opt, &data, export)? && opt == codec::OPT_GO {
                    return Ok(Negotiation::Transmission { structured });
                }
            }
            codec::OPT_EXPORT_NAME => {
                let name = String::from_utf8_lossy(&data);
                if !serves(export, &name) {
                    // The protocol's only answer here: close.
                    return Ok(Negotiation::Aborted);
                }
                s.write_all(&export.size.to_be_bytes())?;
                s.write_all(&export.flags().to_be_bytes())?;
                if !no_zeroes {
                    s.write_all(&[0u8; 124])?;
                }
                return Ok(Negotiation::Transmission { structured });
            }
            codec::OPT_LIST => list(s, &data, export)?,
            codec::OPT_ABORT => {
                let _ = s.write_all(&codec::encode_opt_reply(opt, codec::REP_ACK, &[]));
                return Ok(Negotiation::Aborted);
            }
            _ => s.write_all(&codec::encode_opt_reply(opt, codec::REP_ERR_UNSUP, &[]))?,
        }
    }
    Err(protocol(NbdError(format!(
        "more than {MAX_OPTIONS} options in one handshake"
    ))))
}

fn serves(export: &Export, name: &str) -> bool {
    name.is_empty() || name == export.name
}

/// Answer NBD_OPT_LIST: one NBD_REP_SERVER naming the export, then
/// NBD_REP_ACK; the option carries no data (else NBD_REP_ERR_INVALID).
fn list<S: Write>(s: &mut S, data: &[u8], export: &Export) -> io::Result<()> {
    if !data.is_empty() {
        let msg = b"NBD_OPT_LIST carries no data";
        return s.write_all(&codec::encode_opt_reply(
            codec::OPT_LIST,
            codec::REP_ERR_INVALID,
            msg,
        ));
    }
    let mut server = (export.name.len() as u32).to_be_bytes().to_vec();
    server.extend_from_slice(export.name.as_bytes());
    s.write_all(&codec::encode_opt_reply(
        codec::OPT_LIST,
        codec::REP_SERVER,
        &server,
    ))?;
    s.write_all(&codec::encode_opt_reply(
        codec::OPT_LIST,
        codec::REP_ACK,
        &[],
    ))
}

/// Answer NBD_OPT_INFO or NBD_OPT_GO; true when the export was described.
fn answer_info<S: Write>(s: &mut S, opt: u32, data: &[u8], export: &Export) -> io::Result<bool> {
    let name = match codec::parse_go(data) {
        Ok(n) => n,
        Err(e) => {
            s.write_all(&codec::encode_opt_reply(
                opt,
                codec::REP_ERR_INVALID,
                e.0.as_bytes(),
            ))?;
            return Ok(false);
        }
    };
    if !serves(export, &name) {
        let msg = format!("this target serves {:?}", export.name);
        s.write_all(&codec::encode_opt_reply(
            opt,
            codec::REP_ERR_UNKNOWN,
            msg.as_bytes(),
        ))?;
        return Ok(false);
    }
    let info = codec::encode_info_export(export.size, export.flags());
    s.write_all(&codec::encode_opt_reply(opt, codec::REP_INFO, &info))?;
    // Block sizes are always sent: the client must honour them (O_DIRECT).
    let bs = codec::encode_info_block_size(
        export.min_block,
        export.min_block.max(4096),
        export.max_block,
    );
    s.write_all(&codec::encode_opt_reply(opt, codec::REP_INFO, &bs))?;
    s.write_all(&codec::encode_opt_reply(opt, codec::REP_ACK, &[]))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::nbd::handshake;
    use crate::plan::endpoint::{RemoteEndpoint, RemoteResource, WireProtocol};
    use std::net::TcpListener;

    fn export() -> Export {
        Export {
            name: "vol".into(),
            size: 64 << 20,
            read_only: false,
            min_block: 4096,
            max_block: 1 << 25,
        }
    }

    /// iolab's own client against the server side, over loopback.
    fn client_meets_server(
        export_name: &str,
        served: Export,
    ) -> (io::Result<codec::ExportInfo>, Negotiation) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            negotiate(&mut s, &served).unwrap()
        });
        let ep = RemoteEndpoint {
            transport: WireProtocol::Nbd,
            host: "127.0.0.1".into(),
            port,
            resource: RemoteResource::NbdExport {
                export: export_name.into(),
            },
        };
        let client = handshake::connect(&ep).map(|(sock, info)| {
            drop(sock);
            info
        });
        (client, server.join().unwrap())
    }

    #[test]
    fn iolabs_client_and_server_agree() {
        for name in ["vol", ""] {
            let (info, outcome) = client_meets_server(name, export());
            let info = info.unwrap();
            assert_eq!(outcome, Negotiation::Transmission { structured: true });
            assert_eq!(
                (info.size, info.min_block, info.max_block),
                (64 << 20, 4096, 1 << 25)
            );
            assert!(
                info.structured && info.can_flush() && info.can_multi_conn() && !info.read_only()
            );
        }
        let ro = Export {
            read_only: true,
            ..export()
        };
        assert!(client_meets_server("vol", ro).0.unwrap().read_only());
    }

    #[test]
    fn an_unknown_export_is_refused_by_name() {
        let (info, outcome) = client_meets_server("other", export());
        let e = info.unwrap_err().to_string();
        assert!(
            e.contains("no export named \"other\"") && e.contains("serves \"vol\""),
            "{e}"
        );
        assert_eq!(
            outcome,
            Negotiation::Aborted,
            "the client closes after the refusal"
        );
    }

    /// libnbd's nbdinfo (another implementation of the client side) reads
    /// the export as iolab's server describes it.
    #[test]
    fn nbdinfo_reads_the_export() {
        let has_nbdinfo = std::process::Command::new("nbdinfo")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !has_nbdinfo {
            eprintln!("skipped: nbdinfo (libnbd-bin) is not installed");
            return;
        }
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let outcome = negotiate(&mut s, &export()).unwrap();
            // nbdinfo reads the start of the export (answered as a hole,
            // what an unwritten export is), then sends NBD_CMD_DISC.
            let mut h = [0u8; codec::REQUEST_LEN];
            while s.read_exact(&mut h).is_ok() {
                let r = codec::decode_request(&h).unwrap();
                if r.cmd != codec::CMD_READ {
                    break;
                }
                let mut hole = r.offset.to_be_bytes().to_vec();
                hole.extend_from_slice(&r.len.to_be_bytes());
                let kind = codec::REPLY_TYPE_OFFSET_HOLE;
                let head = codec::encode_chunk_header(r.cookie, codec::REPLY_FLAG_DONE, kind, 12);
                s.write_all(&head).unwrap();
                s.write_all(&hole).unwrap();
            }
            outcome
        });
        // Bounded: a client waiting for something the server never sends
        // fails the test instead of hanging it.
        let url = format!("nbd://127.0.0.1:{port}/vol");
        let o = std::process::Command::new("timeout")
            .args(["20", "nbdinfo", "--json", &url])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let e = &v["exports"][0];
        assert_eq!(e["export-size"], 64 << 20, "{v}");
        assert_eq!(e["block_size_minimum"], 4096, "{v}");
        assert_eq!(e["can_multi_conn"], true, "{v}");
        assert!(matches!(
            server.join().unwrap(),
            Negotiation::Transmission { .. }
        ));
    }

    /// Bytes in, bytes out: a scripted client.
    struct Script {
        input: io::Cursor<Vec<u8>>,
        output: Vec<u8>,
    }

    impl Read for Script {
        fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
            self.input.read(b)
        }
    }

    impl Write for Script {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.output.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// The option replies after the greeting: (option, type, data).
    fn replies(out: &[u8]) -> Vec<(u32, u32, Vec<u8>)> {
        let mut r = Vec::new();
        let mut at = 18; // NBDMAGIC, IHAVEOPT, the handshake flags
        while at + 20 <= out.len() {
            let len = u32::from_be_bytes(out[at + 16..at + 20].try_into().unwrap()) as usize;
            let opt = u32::from_be_bytes(out[at + 8..at + 12].try_into().unwrap());
            let kind = u32::from_be_bytes(out[at + 12..at + 16].try_into().unwrap());
            r.push((opt, kind, out[at + 20..at + 20 + len].to_vec()));
            at += 20 + len;
        }
        r
    }

    #[test]
    fn opt_list_names_the_one_export_and_refuses_data() {
        let option = codec::option;
        let mut input = (codec::FLAG_FIXED_NEWSTYLE as u32).to_be_bytes().to_vec();
        input.extend(option(codec::OPT_LIST, &[]));
        input.extend(option(codec::OPT_LIST, b"x"));
        input.extend(option(codec::OPT_ABORT, &[]));
        let mut s = Script {
            input: io::Cursor::new(input),
            output: Vec::new(),
        };
        assert_eq!(negotiate(&mut s, &export()).unwrap(), Negotiation::Aborted);
        let r = replies(&s.output);
        let mut named = 3u32.to_be_bytes().to_vec();
        named.extend_from_slice(b"vol");
        assert_eq!(r[0], (codec::OPT_LIST, codec::REP_SERVER, named));
        assert_eq!(r[1], (codec::OPT_LIST, codec::REP_ACK, vec![]));
        assert_eq!((r[2].0, r[2].1), (codec::OPT_LIST, codec::REP_ERR_INVALID));
        assert_eq!((r[3].0, r[3].1), (codec::OPT_ABORT, codec::REP_ACK));
    }
}
