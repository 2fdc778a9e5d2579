//! The nbd engine against a scripted server on loopback: one thread that
//! completes the handshake and then answers each request as a test says
//! (multi-chunk structured reads with holes, error chunks, simple errors, a
//! stream out of step, a server that closes mid-reply), so the engine's
//! handling of each is checked byte for byte.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

use super::codec;
use super::NbdEngine;
use crate::dut::remote::{RemoteEndpoint, RemoteResource, Transport};
use crate::engine::{Completion, Engine, EngineSetup, EngineTarget, IoRequest, OpKind};
use crate::runner::buffers::BufferPool;

/// One request as the server saw it.
struct Req {
    cmd: u16,
    cookie: u64,
    offset: u64,
    len: u32,
}

fn read_request(s: &mut TcpStream) -> Option<Req> {
    let mut h = [0u8; codec::REQUEST_LEN];
    s.read_exact(&mut h).ok()?;
    let r = Req {
        cmd: u16::from_be_bytes([h[6], h[7]]),
        cookie: u64::from_be_bytes(h[8..16].try_into().unwrap()),
        offset: u64::from_be_bytes(h[16..24].try_into().unwrap()),
        len: u32::from_be_bytes(h[24..28].try_into().unwrap()),
    };
    if r.cmd == codec::CMD_WRITE {
        let mut d = vec![0u8; r.len as usize];
        s.read_exact(&mut d).ok()?;
    }
    Some(r)
}

fn opt_reply(s: &mut TcpStream, opt: u32, reply: u32, payload: &[u8]) {
    s.write_all(&codec::encode_opt_reply(opt, reply, payload))
        .unwrap();
}

/// Greeting, structured replies acked, GO answered with a 1 MiB export.
fn serve_handshake(s: &mut TcpStream) {
    s.write_all(&codec::encode_greeting(3)).unwrap();
    let mut flags = [0u8; 4];
    s.read_exact(&mut flags).unwrap();
    for _ in 0..2 {
        let mut h = [0u8; 16];
        s.read_exact(&mut h).unwrap();
        let opt = u32::from_be_bytes(h[8..12].try_into().unwrap());
        let len = u32::from_be_bytes(h[12..16].try_into().unwrap());
        let mut data = vec![0u8; len as usize];
        s.read_exact(&mut data).unwrap();
        if opt == codec::OPT_GO {
            let mut info = codec::INFO_EXPORT.to_be_bytes().to_vec();
            info.extend_from_slice(&(1u64 << 20).to_be_bytes());
            info.extend_from_slice(
                &(codec::TFLAG_HAS_FLAGS | codec::TFLAG_SEND_FLUSH).to_be_bytes(),
            );
            opt_reply(s, opt, codec::REP_INFO, &info);
        }
        opt_reply(s, opt, codec::REP_ACK, &[]);
    }
}

fn chunk(cookie: u64, flags: u16, kind: u16, payload: &[u8]) -> Vec<u8> {
    let mut v = codec::encode_chunk_header(cookie, flags, kind, payload.len() as u32).to_vec();
    v.extend_from_slice(payload);
    v
}

fn simple(cookie: u64, error: u32) -> Vec<u8> {
    codec::encode_simple_reply(cookie, error).to_vec()
}

/// A server that answers the first request with `answer(request)` and
/// then closes; the engine connected to it, and the buffer pool.
fn scripted(answer: fn(&Req) -> Vec<u8>) -> (NbdEngine, BufferPool) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        serve_handshake(&mut s);
        if let Some(r) = read_request(&mut s) {
            let _ = s.write_all(&answer(&r));
        }
        // Closing now: what was written still arrives, then the end of
        // the stream (which a short answer turns into "closed mid-reply").
    });
    let pool = BufferPool::new(2, 8192, 1).unwrap();
    let setup = EngineSetup {
        target: EngineTarget::Remote {
            endpoint: RemoteEndpoint {
                transport: Transport::Nbd,
                host: "127.0.0.1".into(),
                port,
                resource: RemoteResource::NbdExport {
                    export: String::new(),
                },
            },
            size: 1 << 20,
            writable: true,
        },
        depth: 2,
        pool_base: pool.base(),
        pool_len: pool.len(),
    };
    (NbdEngine::new(&setup).unwrap(), pool)
}

fn one(
    engine: &mut NbdEngine,
    pool: &BufferPool,
    op: OpKind,
    offset: u64,
) -> std::io::Result<Completion> {
    engine.queue(IoRequest {
        slot: 0,
        op,
        offset,
        len: 8192,
        buf: pool.slot_ptr(0),
    })?;
    engine.submit()?;
    let mut out = Vec::with_capacity(2);
    engine.reap(1, &mut out)?;
    Ok(out[0])
}

#[test]
fn structured_read_in_data_and_hole_chunks() {
    let (mut e, pool) = scripted(|r| {
        assert_eq!((r.cmd, r.offset, r.len), (codec::CMD_READ, 4096, 8192));
        let mut data = (r.offset + 4096).to_be_bytes().to_vec();
        data.extend_from_slice(&[0xab; 4096]);
        let mut hole = r.offset.to_be_bytes().to_vec();
        hole.extend_from_slice(&4096u32.to_be_bytes());
        let mut v = chunk(r.cookie, 0, codec::REPLY_TYPE_OFFSET_DATA, &data);
        v.extend(chunk(r.cookie, 0, codec::REPLY_TYPE_OFFSET_HOLE, &hole));
        v.extend(chunk(
            r.cookie,
            codec::REPLY_FLAG_DONE,
            codec::REPLY_TYPE_NONE,
            &[],
        ));
        v
    });
    // SAFETY: slot 0 of the pool holds 8192 bytes.
    unsafe { std::ptr::write_bytes(pool.slot_ptr(0), 0x11, 8192) };
    let c = one(&mut e, &pool, OpKind::Read, 4096).unwrap();
    assert_eq!((c.slot, c.result), (0, 8192));
    // SAFETY: as above; the request has completed.
    let buf = unsafe { std::slice::from_raw_parts(pool.slot_ptr(0), 8192) };
    assert!(
        buf[..4096].iter().all(|&b| b == 0),
        "the hole reads as zeros"
    );
    assert!(
        buf[4096..].iter().all(|&b| b == 0xab),
        "the data lands at its offset"
    );
}

#[test]
fn error_chunks_and_simple_errors_fail_the_request() {
    let (mut e, pool) = scripted(|r| {
        let mut p = 28u32.to_be_bytes().to_vec();
        p.extend_from_slice(&4u16.to_be_bytes());
        p.extend_from_slice(b"full");
        chunk(r.cookie, codec::REPLY_FLAG_DONE, 0x8001, &p)
    });
    let c = one(&mut e, &pool, OpKind::Read, 0).unwrap();
    assert_eq!(c.result, -(libc::ENOSPC as i64));
    let (mut e, pool) = scripted(|r| simple(r.cookie, 5));
    let c = one(&mut e, &pool, OpKind::Write, 0).unwrap();
    assert_eq!(c.result, -(libc::EIO as i64));
}

#[test]
fn a_stream_out_of_step_or_closed_mid_reply_is_a_clear_error() {
    let (mut e, pool) = scripted(|_| vec![0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0]);
    let err = one(&mut e, &pool, OpKind::Read, 0).unwrap_err().to_string();
    assert!(err.contains("out of step"), "{err}");
    let (mut e, pool) = scripted(|r| simple(r.cookie, 0)[..10].to_vec());
    let err = one(&mut e, &pool, OpKind::Read, 0).unwrap_err().to_string();
    assert!(
        err.contains("closed the connection") && err.contains("1 requests in flight"),
        "{err}"
    );
    let (mut e, pool) = scripted(|r| simple(r.cookie + 7, 0));
    let err = one(&mut e, &pool, OpKind::Write, 0)
        .unwrap_err()
        .to_string();
    assert!(err.contains("not in flight"), "{err}");
}
