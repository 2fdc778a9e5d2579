//! The unloaded latency breakdown over NBD: a client at queue depth 1 that
//! stamps each request (due, send, reply received, done), then joins its
//! stamps with those iolab's target wrote for the same connection
//! (`remote::stamps`). The initiator's side is a plain blocking loop on the
//! engine's codec, so what it adds is the least an NBD initiator can.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use super::stamps::{self, Breakdown, InitiatorStamp};
use crate::dut::remote::RemoteEndpoint;
use crate::engine::nbd::codec::{self, ReplyHeader};
use crate::engine::nbd::handshake;
use crate::measure::clock::mono_now_ns;

/// How to probe.
#[derive(Debug, Clone, Copy)]
pub struct BreakdownSpec {
    pub requests: usize,
    /// Leading requests not counted (connection and cache warm-up).
    pub warmup: usize,
    pub block: u32,
    /// Random reads over the first `span` bytes of the export.
    pub span: u64,
    pub seed: u64,
}

/// Read one whole reply to a request of `len` bytes into `data` (a read's
/// data; unused otherwise). The NBD errno of the reply, 0 on success.
pub fn read_reply(s: &mut impl Read, structured: bool, data: &mut [u8]) -> io::Result<(u64, u32)> {
    let mut head = [0u8; codec::STRUCTURED_HEADER_LEN];
    let bad = |e: codec::NbdError| io::Error::new(io::ErrorKind::InvalidData, e);
    let simple_len = codec::SIMPLE_REPLY_LEN;
    s.read_exact(&mut head[..simple_len])?;
    if !structured {
        let Some((ReplyHeader::Simple { cookie, error }, _)) =
            codec::parse_reply_header(&head[..simple_len]).map_err(bad)?
        else {
            return Err(bad(codec::NbdError("expected a simple reply".into())));
        };
        if error == 0 {
            s.read_exact(data)?;
        }
        return Ok((cookie, error));
    }
    let mut error = 0;
    loop {
        s.read_exact(&mut head[simple_len..])?;
        let Some((
            ReplyHeader::Chunk {
                cookie,
                flags,
                kind,
                len,
            },
            _,
        )) = codec::parse_reply_header(&head).map_err(bad)?
        else {
            return Err(bad(codec::NbdError("expected a structured reply".into())));
        };
        let mut payload = vec![0u8; len as usize];
        if kind == codec::REPLY_TYPE_OFFSET_DATA && len as usize == 8 + data.len() {
            s.read_exact(&mut payload[..8])?;
            s.read_exact(data)?;
        } else {
            s.read_exact(&mut payload)?;
        }
        if codec::is_error_chunk(kind) {
            error = codec::parse_error_chunk(&payload).map_err(bad)?.0;
        }
        if flags & codec::REPLY_FLAG_DONE != 0 {
            return Ok((cookie, error));
        }
        s.read_exact(&mut head[..simple_len])?;
    }
}

/// The initiator's stamps of `spec.requests` random reads on one connection,
/// and the connection's local address (which names it in the stamps file).
pub fn probe(
    ep: &RemoteEndpoint,
    spec: &BreakdownSpec,
) -> anyhow::Result<(Vec<InitiatorStamp>, SocketAddr)> {
    let (mut s, info) = handshake::connect(ep).with_context(|| format!("{ep}"))?;
    let local = s.local_addr()?;
    let blocks = (spec.span.min(info.size) / spec.block as u64).max(1);
    let mut rng = SmallRng::seed_from_u64(spec.seed);
    let mut data = vec![0u8; spec.block as usize];
    let mut req = [0u8; codec::REQUEST_LEN];
    let mut out = Vec::with_capacity(spec.requests);
    for i in 0..spec.requests {
        let offset = rng.random_range(0..blocks) * spec.block as u64;
        let issue = mono_now_ns();
        codec::encode_request(&mut req, codec::CMD_READ, i as u64, offset, spec.block);
        let send = mono_now_ns();
        s.write_all(&req)?;
        let (cookie, error) = read_reply(&mut s, info.structured, &mut data)?;
        let received = mono_now_ns();
        if cookie != i as u64 || error != 0 {
            anyhow::bail!("{ep}: read at {offset} failed (NBD error {error}, cookie {cookie})");
        }
        out.push(InitiatorStamp {
            issue,
            send,
            received,
            done: mono_now_ns(),
        });
    }
    disconnect(&mut s);
    Ok((out, local))
}

fn disconnect(s: &mut TcpStream) {
    let mut req = [0u8; codec::REQUEST_LEN];
    codec::encode_request(&mut req, codec::CMD_DISC, 0, 0, 0);
    let _ = s.write_all(&req);
    let _ = s.shutdown(std::net::Shutdown::Both);
}

/// Probe, wait for the target to write the connection's stamps into
/// `stamps_file`, and join them.
pub fn measure(
    ep: &RemoteEndpoint,
    spec: &BreakdownSpec,
    stamps_file: &Path,
) -> anyhow::Result<Breakdown> {
    let (ini, local) = probe(ep, spec)?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(stamps_file).unwrap_or_default();
        if let Some(tgt) = stamps::find(&text, local) {
            return stamps::join(&ini, &tgt, spec.warmup).ok_or_else(|| {
                anyhow::anyhow!(
                    "the target's stamps for {local} do not match the requests sent ({} stamps, {} requests)",
                    tgt.len(),
                    ini.len()
                )
            });
        }
        if Instant::now() > deadline {
            anyhow::bail!(
                "the target wrote no stamps for {local} into {} within 10 s (is it iolab's own target, started with --stamps?)",
                stamps_file.display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
