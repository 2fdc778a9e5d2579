//! iolab's initiators (the nbd and nvme-tcp engines) against hostile
//! peers (tests/hostile): a stalled server or controller ends the point at
//! the run's end or the I/O timeout, naming the peer and what was in
//! flight; the first SIGTERM stops a stalled run; sizes, lengths and
//! offsets no real peer sends are refused without allocating them; and
//! random and mutated replies and PDUs fed to the real engines end in
//! errors, never a panic, a hang or unbounded memory.

mod common;
mod hostile;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use iolab::engine::nbd::NbdEngine;
use iolab::engine::nvmetcp::engine::NvmeTcpEngine;
use iolab::engine::peer_wait::WaitLimits;
use iolab::engine::{Completion, Engine, EngineSetup, EngineTarget, IoRequest, OpKind};
use iolab::plan::endpoint::{RemoteEndpoint, RemoteResource, WireProtocol};
use iolab::plan::engines::NetOptions;
use iolab::runner::buffers::BufferPool;

use common::{text, workdir};
use hostile::{nbd, nvme, rss_kib, secs};

const DEPTH: usize = 2;
const BS: usize = 4096;

fn endpoint(transport: WireProtocol, port: u16) -> RemoteEndpoint {
    let resource = match transport {
        WireProtocol::Nbd => RemoteResource::NbdExport {
            export: String::new(),
        },
        _ => RemoteResource::NvmeNamespace {
            nqn: nvme::NQN.into(),
            nsid: 1,
            hdr_digest: false,
            data_digest: false,
            keep_alive_tmo: None,
        },
    };
    RemoteEndpoint {
        transport,
        host: "127.0.0.1".into(),
        port,
        resource,
    }
}

fn setup(transport: WireProtocol, port: u16, pool: &BufferPool, limits: WaitLimits) -> EngineSetup {
    EngineSetup {
        target: EngineTarget::Remote {
            endpoint: endpoint(transport, port),
            size: 1 << 20,
            writable: true,
            limits,
        },
        depth: DEPTH as u32,
        pool_base: pool.base(),
        pool_len: pool.len(),
    }
}

fn short_limits() -> WaitLimits {
    WaitLimits {
        io_timeout_ns: 200_000_000,
        end_by_ns: u64::MAX,
    }
}

/// Up to `n` requests (reads and writes alternating) at depth 2; the
/// first error ends it.
fn drive(e: &mut dyn Engine, pool: &BufferPool, n: u64) -> std::io::Result<()> {
    let mut out: Vec<Completion> = Vec::with_capacity(DEPTH);
    let mut free: Vec<u32> = (0..DEPTH as u32).collect();
    for i in 0..n {
        while free.is_empty() {
            out.clear();
            e.reap(1, &mut out)?;
            free.extend(out.iter().map(|c| c.slot));
        }
        let slot = free.pop().unwrap();
        e.queue(IoRequest {
            slot,
            op: if i % 2 == 0 {
                OpKind::Read
            } else {
                OpKind::Write
            },
            offset: (i % 64) * BS as u64,
            len: BS as u32,
            buf: pool.slot_ptr(slot as usize),
        })?;
        e.submit()?;
    }
    while free.len() < DEPTH {
        out.clear();
        e.reap(1, &mut out)?;
        free.extend(out.iter().map(|c| c.slot));
    }
    Ok(())
}

#[test]
fn nvme_a_controller_that_never_sends_icresp_is_given_up_on() {
    let srv = nvme::serve(nvme::Play::NoIcResp, 2);
    let pool = BufferPool::new(DEPTH, BS, 1).unwrap();
    let t = Instant::now();
    let err = NvmeTcpEngine::new(&setup(
        WireProtocol::NvmeTcp,
        srv.port,
        &pool,
        short_limits(),
    ))
    .err()
    .expect("no ICResp, no engine")
    .to_string();
    assert!(
        err.contains("ICResp") && err.contains(&srv.port.to_string()),
        "{err}"
    );
    assert!(
        t.elapsed() < Duration::from_secs(60),
        "ended after {} s",
        secs(t)
    );
}

#[test]
fn nvme_an_icresp_of_absurd_length_is_refused_not_waited_for() {
    let srv = nvme::serve(nvme::Play::IcRespPlen(0xFFFF_FFF0), 2);
    let pool = BufferPool::new(DEPTH, BS, 1).unwrap();
    let err = NvmeTcpEngine::new(&setup(
        WireProtocol::NvmeTcp,
        srv.port,
        &pool,
        short_limits(),
    ))
    .err()
    .expect("refused")
    .to_string();
    assert!(err.contains("plen") && err.contains("4294967280"), "{err}");
}

#[test]
fn nvme_identify_data_far_outside_its_transfer_is_refused_without_allocating() {
    let srv = nvme::serve(nvme::Play::IdentifyAt(256 << 20), 2);
    let pool = BufferPool::new(DEPTH, BS, 1).unwrap();
    let before = rss_kib();
    let err = NvmeTcpEngine::new(&setup(
        WireProtocol::NvmeTcp,
        srv.port,
        &pool,
        short_limits(),
    ))
    .err()
    .expect("refused")
    .to_string();
    let grown_mib = rss_kib().saturating_sub(before) / 1024;
    assert!(
        err.contains("data offset 268435456") && err.contains("4096 byte transfer"),
        "{err}"
    );
    assert!(grown_mib < 64, "the client grew by {grown_mib} MiB");
}

#[test]
fn nvme_a_controller_that_stalls_on_io_fails_the_requests_at_the_io_timeout() {
    let srv = nvme::serve(nvme::Play::StallIo, 4);
    let pool = BufferPool::new(DEPTH, BS, 1).unwrap();
    let mut e = NvmeTcpEngine::new(&setup(
        WireProtocol::NvmeTcp,
        srv.port,
        &pool,
        short_limits(),
    ))
    .unwrap();
    let err = drive(&mut e, &pool, 4).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::TimedOut, "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("nvme-tcp://127.0.0.1:{}/", srv.port))
            && msg.contains("2 commands in flight"),
        "{msg}"
    );
}

/// `--poll`: the initiators spin instead of sleeping, and a stalled peer
/// still ends the requests at the I/O timeout, naming it.
#[test]
fn polling_initiators_fail_a_stalled_peers_requests_at_the_io_timeout() {
    let poll = NetOptions { poll: true };
    let srv = nbd::serve(nbd::Play::Stall, 4);
    let pool = BufferPool::new(DEPTH, BS, 1).unwrap();
    let t = Instant::now();
    let mut e = NbdEngine::with_options(
        &setup(WireProtocol::Nbd, srv.port, &pool, short_limits()),
        poll,
    )
    .unwrap();
    let err = drive(&mut e, &pool, 4).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::TimedOut, "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("nbd://127.0.0.1:{}/", srv.port)) && msg.contains("--io-timeout"),
        "{msg}"
    );
    // The run's end bounds a polling wait too.
    let srv = nbd::serve(nbd::Play::Stall, 4);
    let ending = WaitLimits {
        io_timeout_ns: u64::MAX,
        end_by_ns: iolab::measure::clock::mono_now_ns() + 300_000_000,
    };
    let mut e =
        NbdEngine::with_options(&setup(WireProtocol::Nbd, srv.port, &pool, ending), poll).unwrap();
    let err = drive(&mut e, &pool, 4).unwrap_err().to_string();
    assert!(err.contains("after the end of the run"), "{err}");
    let srv = nvme::serve(nvme::Play::StallIo, 4);
    let mut e = NvmeTcpEngine::with_options(
        &setup(WireProtocol::NvmeTcp, srv.port, &pool, short_limits()),
        poll,
    )
    .unwrap();
    let err = drive(&mut e, &pool, 4).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::TimedOut, "{err}");
    assert!(
        err.to_string()
            .contains(&format!("nvme-tcp://127.0.0.1:{}/", srv.port)),
        "{err}"
    );
    assert!(
        t.elapsed() < Duration::from_secs(60),
        "ended after {} s",
        secs(t)
    );
}

#[test]
fn nbd_a_stalled_server_ends_a_polling_point_at_the_io_timeout() {
    let srv = nbd::serve(nbd::Play::Stall, 4);
    let url = format!("nbd://127.0.0.1:{}/", srv.port);
    let dir = workdir();
    let json = dir.path().join("r.json");
    let child = device(
        &[
            "--target",
            &url,
            "--rw",
            "randread",
            "--qd",
            "4",
            "--runtime",
            "5m",
            "--io-timeout",
            "1s",
            "--poll",
        ],
        &json,
    );
    // The I/O timeout, with room for a busy machine.
    let o = ended_within(child, Duration::from_secs(1 + 30));
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let reason = failure_reason(&json);
    assert!(
        reason.contains(&url) && reason.contains("--io-timeout"),
        "{reason}"
    );
}

#[test]
fn nbd_an_export_no_offset_can_address_is_refused() {
    let srv = nbd::serve(nbd::Play::Export((1 << 63) + 12345), 2);
    let pool = BufferPool::new(DEPTH, BS, 1).unwrap();
    let err = NbdEngine::new(&setup(WireProtocol::Nbd, srv.port, &pool, short_limits()))
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("export size"), "{err}");
}

/// `cases` connections of a fuzzing peer, each driven through the real
/// engine; every case ends (the peer closes after its mutation, the I/O
/// timeout covers a stall), no panic, memory bounded.
fn fuzz(transport: WireProtocol, cases: u64) {
    let seed = std::env::var("IOLAB_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
            t.map_or(0, |d| d.as_nanos() as u64) ^ std::process::id() as u64
        });
    eprintln!("fuzz seed {seed} (IOLAB_FUZZ_SEED replays it)");
    let pool = BufferPool::new(DEPTH, BS, 1).unwrap();
    let before = rss_kib();
    let t = Instant::now();
    let (mut failed, mut ran) = (0, 0);
    for case in 0..cases {
        let s = seed.wrapping_add(case);
        let r = match transport {
            WireProtocol::Nbd => {
                let srv = nbd::serve(nbd::Play::Fuzz(s), 4);
                NbdEngine::new(&setup(transport, srv.port, &pool, short_limits()))
                    .and_then(|mut e| drive(&mut e, &pool, 8))
            }
            _ => {
                let srv = nvme::serve(nvme::Play::Fuzz(s), 4);
                NvmeTcpEngine::new(&setup(transport, srv.port, &pool, short_limits()))
                    .and_then(|mut e| drive(&mut e, &pool, 8))
            }
        };
        match r {
            Ok(()) => ran += 1,
            Err(e) => {
                failed += 1;
                assert!(!e.to_string().is_empty());
            }
        }
        assert!(
            t.elapsed() < Duration::from_secs(300),
            "case {case} of seed {seed}: still running after {} s",
            secs(t)
        );
    }
    let grown_mib = rss_kib().saturating_sub(before) / 1024;
    eprintln!("{transport:?}: {failed} cases refused, {ran} ran, {grown_mib} MiB grown");
    assert!(grown_mib < 128, "seed {seed}: grew by {grown_mib} MiB");
    assert!(failed > 0, "seed {seed}: no mutation was noticed");
}

#[test]
fn nbd_random_and_mutated_replies_end_in_errors() {
    fuzz(WireProtocol::Nbd, 300);
}

#[test]
fn nvme_random_and_mutated_pdus_end_in_errors() {
    fuzz(WireProtocol::NvmeTcp, 300);
}

/// `iolab device --quiet ARGS -o JSON` started, with its output piped.
fn device(args: &[&str], json: &std::path::Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
        .arg("device")
        .arg("--quiet")
        .args(args)
        .arg("-o")
        .arg(json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Wait for `child` at most `ceiling` (killing it then, and failing).
fn ended_within(mut child: Child, ceiling: Duration) -> std::process::Output {
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > ceiling {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!("still running after {} s: {}", secs(t), text(&o));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// The reason the results give for the failed point.
fn failure_reason(json: &std::path::Path) -> String {
    let r = common::results(json);
    let skipped = &r["extra"]["skipped_points"][0];
    assert_eq!(skipped["failed"], true, "{r}");
    skipped["reason"].as_str().unwrap_or_default().to_string()
}

#[test]
fn nbd_a_stalled_server_ends_the_point_after_the_runtime() {
    let srv = nbd::serve(nbd::Play::Stall, 4);
    let url = format!("nbd://127.0.0.1:{}/", srv.port);
    let dir = workdir();
    let json = dir.path().join("r.json");
    let child = device(
        &[
            "--target",
            &url,
            "--rw",
            "randread",
            "--qd",
            "4",
            "--runtime",
            "2s",
        ],
        &json,
    );
    // The run's end plus the grace (10 s), with room for a busy machine.
    let o = ended_within(child, Duration::from_secs(2 + 10 + 30));
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let reason = failure_reason(&json);
    assert!(
        reason.contains(&url) && reason.contains("4 requests in flight"),
        "{reason}"
    );
}

#[test]
fn nbd_the_first_sigterm_stops_a_stalled_run() {
    first_sigterm_stops_a_stalled_run(&[]);
}

/// The same with `--poll`: the spinning wait still reads the stop.
#[test]
fn nbd_the_first_sigterm_stops_a_stalled_polling_run() {
    first_sigterm_stops_a_stalled_run(&["--poll"]);
}

fn first_sigterm_stops_a_stalled_run(extra: &[&str]) {
    let srv = nbd::serve(nbd::Play::Stall, 4);
    let url = format!("nbd://127.0.0.1:{}/", srv.port);
    let dir = workdir();
    let json = dir.path().join("r.json");
    let mut args = vec![
        "--target",
        &url,
        "--rw",
        "randread",
        "--runtime",
        "5m",
        "--io-timeout",
        "5m",
    ];
    args.extend_from_slice(extra);
    let child = device(&args, &json);
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let o = ended_within(child, Duration::from_secs(30));
    assert_eq!(o.status.code(), Some(130), "{extra:?}: {}", text(&o));
    assert!(!text(&o).contains("panicked"), "{}", text(&o));
}

/// A peer silent during the handshake (an NBD server that never greets, an
/// NVMe/TCP controller that never answers ICReq), then SIGINT: exit 130
/// long before the handshake's own 10 s timeout. It spun at 100% CPU
/// forever: the stop came back as `Interrupted`, which read_exact retries.
#[test]
fn the_first_sigint_ends_a_handshake_with_a_silent_peer() {
    let nbd_srv = nbd::serve(nbd::Play::Silent, 4);
    let nvme_srv = nvme::serve(nvme::Play::NoIcResp, 4);
    let nvme_url = format!("nvme-tcp://127.0.0.1:{}/{}", nvme_srv.port, nvme::NQN);
    for url in [format!("nbd://127.0.0.1:{}/", nbd_srv.port), nvme_url] {
        let dir = workdir();
        let json = dir.path().join("r.json");
        let child = device(
            &["--target", &url, "--rw", "randread", "--runtime", "5m"],
            &json,
        );
        std::thread::sleep(Duration::from_millis(1500));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let o = ended_within(child, Duration::from_secs(60));
        assert_eq!(o.status.code(), Some(130), "{url}: {}", text(&o));
    }
}

/// `iolab serve --protocol nvme-tcp` on loopback; its child and URL.
fn nvme_target(dir: &std::path::Path) -> (Child, String) {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["serve", "--protocol", "nvme-tcp", "--size", "32m", "-t"])
        .arg(dir)
        .args(["--listen", "127.0.0.1:0", "--time-limit", "120s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("nvme-tcp://"))
        .unwrap_or_else(|| panic!("iolab serve said {line:?}"))
        .to_string();
    (child, url)
}

#[test]
fn nvme_a_stopped_target_ends_the_point_naming_it_and_the_commands_in_flight() {
    let dir = workdir();
    let (mut target, url) = nvme_target(dir.path());
    let json = dir.path().join("r.json");
    let child = device(
        &[
            "--target",
            &url,
            "--size",
            "16m",
            "--rw",
            "randread",
            "--qd",
            "32",
            "--runtime",
            "4s",
        ],
        &json,
    );
    std::thread::sleep(Duration::from_millis(1500));
    let pid = target.id() as i32;
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    let o = ended_within(child, Duration::from_secs(4 + 10 + 30));
    // SAFETY: as above; the target then stops on SIGINT.
    unsafe {
        libc::kill(pid, libc::SIGCONT);
        libc::kill(pid, libc::SIGINT);
    }
    let _ = target.wait();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let reason = failure_reason(&json);
    let base = url.trim_end_matches("?nsid=1");
    assert!(
        reason.contains(base) && reason.contains("commands in flight"),
        "{reason}"
    );
}

#[test]
fn iscsi_a_portal_with_nothing_listening_is_refused_naming_it() {
    // A port that was free a moment ago.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("iscsi://127.0.0.1:{port}/iqn.2025-11.io.iolab:none/0");
    let o = common::iolab(&[
        "device",
        "--quiet",
        "--target",
        &url,
        "--rw",
        "randread",
        "--runtime",
        "1s",
    ]);
    let out = text(&o);
    if out.contains("libiscsi") && !out.contains("cannot connect") {
        eprintln!("skipped: no libiscsi here: {out}");
        return;
    }
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(
        out.contains(&url) && out.contains(&format!("cannot connect to 127.0.0.1:{port}")),
        "{out}"
    );
    assert!(!out.contains("iscsi_service"), "{out}");
}

#[test]
fn a_bad_io_timeout_is_refused_naming_the_flag() {
    let dir = workdir();
    let t = dir.path().to_str().unwrap();
    for args in [
        &[
            "device",
            "--engine",
            "null",
            "--runtime",
            "100ms",
            "--io-timeout",
            "0",
        ][..],
        &[
            "device",
            "--engine",
            "null",
            "--runtime",
            "100ms",
            "--io-timeout",
            "soon",
        ],
        &["remote", "-t", t, "--dry-run", "--io-timeout", "0"],
    ] {
        let o = common::iolab(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains("--io-timeout"), "{args:?}: {}", text(&o));
    }
    let o = common::iolab(&["remote", "-t", t, "--dry-run", "--io-timeout", "5s"]);
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn nvme_the_first_sigterm_stops_a_handshake_the_controller_never_answers() {
    let srv = nvme::serve(nvme::Play::NoIcResp, 4);
    let url = format!("nvme-tcp://127.0.0.1:{}/{}", srv.port, nvme::NQN);
    let dir = workdir();
    let json = dir.path().join("r.json");
    let child = device(
        &["--target", &url, "--rw", "randread", "--runtime", "2s"],
        &json,
    );
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let o = ended_within(child, Duration::from_secs(30));
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    assert!(text(&o).contains("ICResp"), "{}", text(&o));
}
