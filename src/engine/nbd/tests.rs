//! The nbd engine against a scripted server on loopback: one thread that
//! completes the handshake and then answers each request as a test says
//! (multi-chunk structured reads with holes, error chunks, simple errors, a
//! stream out of step, a server that closes mid-reply), so the engine's
//! handling of each is checked byte for byte.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

use super::codec;
use super::NbdEngine;
use crate::engine::peer_wait::WaitLimits;
use crate::engine::{Completion, Engine, EngineSetup, EngineTarget, IoRequest, OpKind};
use crate::plan::endpoint::{RemoteEndpoint, RemoteResource, WireProtocol};
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
        // Presenter now: what was written still arrives, then the end of
        // the stream (which a short answer turns into "closed mid-reply").
    });
    engine_on(port, WaitLimits::default()).unwrap()
}

/// The engine connected to the server at `port` with `limits`.
fn engine_on(port: u16, limits: WaitLimits) -> std::io::Result<(NbdEngine, BufferPool)> {
    let pool = BufferPool::new(2, 8192, 1).unwrap();
    let setup = EngineSetup {
        target: EngineTarget::Remote {
            endpoint: RemoteEndpoint {
                transport: WireProtocol::Nbd,
                host: "127.0.0.1".into(),
                port,
                resource: RemoteResource::NbdExport {
                    export: String::new(),
                },
            },
            size: 1 << 20,
            writable: true,
            limits,
        },
        depth: 2,
        pool_base: pool.base(),
        pool_len: pool.len(),
    };
    Ok((NbdEngine::new(&setup)?, pool))
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

/// A server that completes the handshake, reads requests and never
/// answers, keeping the connection open until `hold` is dropped.
fn stalled_server() -> (u16, std::sync::mpsc::Sender<()>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (hold, released) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        serve_handshake(&mut s);
        let _ = read_request(&mut s);
        // Bounded: the test ends within a minute either way.
        let _ = released.recv_timeout(std::time::Duration::from_secs(60));
    });
    (port, hold)
}

#[test]
fn a_stalled_server_fails_the_request_at_the_io_timeout_naming_it() {
    let (port, _hold) = stalled_server();
    let limits = WaitLimits {
        io_timeout_ns: 300_000_000,
        end_by_ns: u64::MAX,
    };
    let (mut e, pool) = engine_on(port, limits).unwrap();
    let err = one(&mut e, &pool, OpKind::Read, 0).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::TimedOut, "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("nbd://127.0.0.1:{port}/"))
            && msg.contains("--io-timeout")
            && msg.contains("1 requests in flight"),
        "{msg}"
    );
}

#[test]
fn a_stalled_server_fails_the_request_at_the_end_of_the_run() {
    let (port, _hold) = stalled_server();
    let limits = WaitLimits {
        io_timeout_ns: u64::MAX,
        end_by_ns: crate::measure::clock::mono_now_ns() + 300_000_000,
    };
    let (mut e, pool) = engine_on(port, limits).unwrap();
    let err = one(&mut e, &pool, OpKind::Write, 0)
        .unwrap_err()
        .to_string();
    assert!(err.contains("after the end of the run"), "{err}");
}

#[test]
fn a_data_chunk_at_the_end_of_the_offsets_is_refused_not_wrapped() {
    let (mut e, pool) = scripted(|r| {
        // Offset 2^64 - 8: offset + length wraps around u64.
        let mut data = (u64::MAX - 7).to_be_bytes().to_vec();
        data.extend_from_slice(&[0xab; 16]);
        chunk(
            r.cookie,
            codec::REPLY_FLAG_DONE,
            codec::REPLY_TYPE_OFFSET_DATA,
            &data,
        )
    });
    let err = one(&mut e, &pool, OpKind::Read, 0).unwrap_err().to_string();
    assert!(err.contains("lies outside its read"), "{err}");
}

/// A server whose GO reply says `size` bytes and block sizes `blocks`.
fn export_of(size: u64, blocks: Option<(u32, u32, u32)>) -> std::io::Result<NbdEngine> {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        s.write_all(&codec::encode_greeting(3)).unwrap();
        let mut flags = [0u8; 4];
        s.read_exact(&mut flags).unwrap();
        for _ in 0..2 {
            let mut h = [0u8; 16];
            if s.read_exact(&mut h).is_err() {
                return;
            }
            let opt = u32::from_be_bytes(h[8..12].try_into().unwrap());
            let len = u32::from_be_bytes(h[12..16].try_into().unwrap());
            let mut data = vec![0u8; len as usize];
            s.read_exact(&mut data).unwrap();
            if opt == codec::OPT_GO {
                let info = codec::encode_info_export(size, codec::TFLAG_HAS_FLAGS);
                opt_reply(&mut s, opt, codec::REP_INFO, &info);
                if let Some((min, pref, max)) = blocks {
                    let bs = codec::encode_info_block_size(min, pref, max);
                    opt_reply(&mut s, opt, codec::REP_INFO, &bs);
                }
            }
            opt_reply(&mut s, opt, codec::REP_ACK, &[]);
        }
    });
    engine_on(port, WaitLimits::default()).map(|(e, _)| e)
}

#[test]
fn exports_no_offset_can_address_and_bad_block_sizes_are_refused() {
    let err = export_of((1u64 << 63) + 12345, None)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("export size") && err.contains("9223372036854788153"),
        "{err}"
    );
    let err = export_of(1 << 20, Some((3, 4096, 1 << 20)))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("minimum block size"), "{err}");
    let err = export_of(1 << 20, Some((4096, 512, 1 << 20)))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("preferred block size"), "{err}");
    assert!(export_of(1 << 20, Some((512, 4096, 1 << 20))).is_ok());
}

/// What a server saw of a client that closed with requests in flight.
#[derive(Debug, PartialEq)]
struct Presenter {
    /// The disconnect came before the server had replied to anything.
    disc_before_replies: bool,
    /// Every reply was written without an error (the client still read).
    replies_written: bool,
    /// The last message was NBD_CMD_DISC.
    ended_with_disc: bool,
}

/// A server that reads `n` requests, waits a moment for anything more
/// (a disconnect sent at once arrives in it), then answers them all.
fn presenter_server(n: usize) -> (u16, std::thread::JoinHandle<Presenter>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let h = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        serve_handshake(&mut s);
        let reqs: Vec<Req> = (0..n).filter_map(|_| read_request(&mut s)).collect();
        s.set_read_timeout(Some(std::time::Duration::from_millis(200)))
            .unwrap();
        let mut peek = [0u8; 1];
        let disc_before_replies = matches!(s.peek(&mut peek), Ok(1));
        s.set_read_timeout(None).unwrap();
        let mut replies_written = true;
        for r in &reqs {
            let mut reply = simple(r.cookie, 0);
            reply.extend(std::iter::repeat_n(0u8, r.len as usize));
            replies_written &= s.write_all(&reply).is_ok();
        }
        let ended_with_disc = read_request(&mut s).is_some_and(|r| r.cmd == codec::CMD_DISC);
        Presenter {
            disc_before_replies,
            replies_written,
            ended_with_disc,
        }
    });
    (port, h)
}

#[test]
fn a_presenter_engine_takes_the_replies_in_flight_before_it_disconnects() {
    let (port, server) = presenter_server(2);
    let (mut engine, pool) = engine_on(port, WaitLimits::default()).unwrap();
    for slot in 0..2 {
        engine
            .queue(IoRequest {
                slot,
                op: OpKind::Read,
                offset: 8192 * slot as u64,
                len: 8192,
                buf: pool.slot_ptr(slot as usize),
            })
            .unwrap();
    }
    engine.submit().unwrap();
    // The buffers go first, as when a failed point unwinds its worker.
    drop(pool);
    drop(engine);
    let seen = server.join().unwrap();
    assert_eq!(
        seen,
        Presenter {
            disc_before_replies: false,
            replies_written: true,
            ended_with_disc: true,
        }
    );
}
