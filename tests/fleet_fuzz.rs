//! Bounded fuzzing of the fleet protocol's reader (tests/fuzz_parsers.rs's
//! style): random bytes, valid frames with bytes flipped, truncated or
//! with a forged length, and results carrying hostile histograms. Every
//! input either decodes or is a `ProtoError`; nothing panics and nothing
//! allocates beyond the per-kind bound. `IOLAB_FUZZ_CASES` cases per
//! strategy (default 3000) from a fixed seed; `IOLAB_FUZZ_RANDOM=1` draws
//! new ones.

use iolab::fleet::proto::{self, ClockReply, JobResult, JobTarget, Message, Prepare, HEADER_LEN};
use iolab::plan::job::JobSpec;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

fn runner() -> TestRunner {
    let cases = std::env::var("IOLAB_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    if std::env::var_os("IOLAB_FUZZ_RANDOM").is_some() {
        TestRunner::new(config)
    } else {
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha))
    }
}

/// Read every frame in `bytes` until an error; it must never panic.
fn read_all(bytes: &[u8]) {
    let mut r = bytes;
    for _ in 0..64 {
        if proto::read_message(&mut r).is_err() {
            return;
        }
    }
}

fn valid_frames() -> Vec<Vec<u8>> {
    let mut h = iolab::measure::histogram::LatencyHistogram::new();
    (1..200u64).for_each(|v| h.record(v * 997));
    let point: iolab::results::Point = serde_json::from_value(serde_json::json!({
        "name": "p", "params": {}, "started_at": "t", "duration_ns": 1, "ramp_ns": 0,
        "direct": true, "ops": {}, "total": {"ops": 1, "bytes": 1, "iops": 1.0, "mib_s": 1.0},
        "cpu": iolab::measure::rusage::CpuStats::default(), "series": [], "warnings": [],
        "histograms": {"read.lat": h.encode()},
    }))
    .unwrap();
    [
        Message::ClockProbe { seq: 3 },
        Message::ClockReply(ClockReply {
            seq: 3,
            agent_ns: 99,
        }),
        Message::StartAt { agent_ns: 1 << 40 },
        Message::Ready {
            target: "/tmp/x".into(),
        },
        Message::Prepare(Box::new(Prepare::device(
            JobSpec::default(),
            JobTarget {
                dir: Some("/tmp".into()),
                size: Some(1 << 20),
                overwrite: false,
                ..JobTarget::default()
            },
        ))),
        Message::Result(Box::new(JobResult {
            point,
            started_ns: 5,
        })),
        Message::Stop,
        Message::Bye,
    ]
    .iter()
    .map(|m| m.encode().unwrap())
    .collect()
}

#[test]
fn random_bytes_never_panic() {
    runner()
        .run(&proptest::collection::vec(any::<u8>(), 0..256), |b| {
            read_all(&b);
            Ok(())
        })
        .unwrap();
    // The header's magic and version right, the rest random.
    runner()
        .run(
            &(0u8..14, proptest::collection::vec(any::<u8>(), 0..512)),
            |(k, tail)| {
                let mut b = vec![b'I', b'L', proto::PROTOCOL_VERSION, k];
                b.extend_from_slice(&(tail.len() as u32).to_le_bytes());
                b.extend_from_slice(&tail);
                read_all(&b);
                Ok(())
            },
        )
        .unwrap();
}

#[test]
fn mutated_frames_never_panic() {
    let frames = valid_frames();
    for f in &frames {
        let mut r = f.as_slice();
        assert!(proto::read_message(&mut r).is_ok(), "a valid frame decodes");
    }
    let strategy = (
        0..frames.len(),
        proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        any::<prop::sample::Index>(),
        any::<u32>(),
        0u8..3,
    );
    runner()
        .run(&strategy, |(i, flips, cut, forged, how)| {
            let mut f = frames[i].clone();
            match how {
                0 => {
                    for (at, byte) in &flips {
                        let n = f.len();
                        f[at.index(n)] ^= byte | 1;
                    }
                }
                1 => f.truncate(cut.index(f.len())),
                _ => f[4..HEADER_LEN].copy_from_slice(&forged.to_le_bytes()),
            }
            read_all(&f);
            Ok(())
        })
        .unwrap();
}

#[test]
fn a_result_with_a_hostile_histogram_is_refused() {
    let frames = valid_frames();
    let result = &frames[5];
    let body = std::str::from_utf8(&result[HEADER_LEN..]).unwrap();
    // A histogram claiming an enormous range with 5 digits: the decoder
    // would allocate for it, so it is refused before.
    let h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, u64::MAX / 4, 5).unwrap();
    let mut buf = Vec::new();
    use hdrhistogram::serialization::Serializer;
    hdrhistogram::serialization::V2DeflateSerializer::new()
        .serialize(&h, &mut buf)
        .unwrap();
    use base64::Engine as _;
    let enc = base64::engine::general_purpose::STANDARD.encode(buf);
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    let mut v = v;
    v["point"]["histograms"]["read.lat"] = serde_json::Value::String(enc);
    let body = serde_json::to_vec(&v).unwrap();
    let mut f = result[..4].to_vec();
    f.extend_from_slice(&(body.len() as u32).to_le_bytes());
    f.extend_from_slice(&body);
    let err = proto::read_message(&mut f.as_slice()).unwrap_err();
    assert!(err.to_string().contains("histogram read.lat"), "{err}");
}
