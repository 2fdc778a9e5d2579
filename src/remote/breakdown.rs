//! The unloaded latency breakdown over a remote transport: a
//! queue-depth-1 random-read job on the transport's engine (nbd,
//! nvme-tcp), run by the runner with its per-request log
//! (due, taken by the engine, reply received, reaped), joined with the
//! stamps iolab's target wrote for the same connection (`target::stamps`).
//! The requests broken down are the engine's own, so the stages sum to the
//! latency the job measures. Over the kernel's own NVMe-oF path the same
//! job runs traced (`trace::fabric_breakdown`). `read_reply` reads one
//! reply for tests that speak NBD by hand.

use std::io::{self, Read};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::dut::Target;
use crate::plan::engines::EngineKind;
use crate::plan::job::{JobSpec, Pattern, StopCondition};
use crate::proto::nbd::{self as codec, ReplyHeader};
use crate::runner::job::RunOptions;
use crate::runner::worker::RequestRecord;
use crate::target::stamps::{self, InitiatorStamp, StampBreakdown, TargetStamp};

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

/// The QD1 random-read job of the breakdown, on `engine`.
fn job(spec: &BreakdownSpec, engine: EngineKind) -> JobSpec {
    JobSpec {
        name: "breakdown".into(),
        pattern: Pattern::RandRead,
        mix: 100,
        bs: vec![(spec.block as u64, 100)],
        qd: 1,
        jobs: 1,
        engine,
        stop: StopCondition {
            runtime_ns: None,
            io_count: Some(spec.requests as u64),
            io_bytes: None,
        },
        ramp_ns: 0,
        seed: spec.seed,
        size: Some(spec.span),
        ..JobSpec::default()
    }
}

/// The breakdown's job run on `engine` with every request logged.
pub fn logged_run(
    target: &Target,
    spec: &BreakdownSpec,
    engine: EngineKind,
) -> anyhow::Result<crate::runner::job::JobOutcome> {
    let opts = RunOptions {
        record_requests: Some(spec.requests + 16),
        ..RunOptions::default()
    };
    crate::runner::job::run_job(&job(spec, engine), target, &opts)
}

/// The initiator's stamps of a logged request: due, taken by the engine
/// (encoded and sent at once), reply received, completion reaped.
fn initiator_stamp(r: &RequestRecord) -> Option<InitiatorStamp> {
    (r.t_engine_taken > 0 && r.t_engine_received > 0).then_some(InitiatorStamp {
        issue: r.t_prep,
        send: r.t_engine_taken,
        received: r.t_engine_received,
        done: r.t_reaped,
    })
}

/// Where the initiator's first request is among the target's stamps: the
/// one it wholly contains (at QD1 requests do not overlap, so one does).
fn align(ini: &[InitiatorStamp], tgt: &[TargetStamp]) -> Option<usize> {
    let first = ini.first()?;
    tgt.iter()
        .position(|t| first.send <= t.arrival && t.reply_send <= first.received)
}

/// Run `spec.requests` QD1 random reads on the nbd engine against
/// `target` (an export of iolab's own target started with `--stamps
/// stamps_file`), logging each request with the engine's own stamps; wait
/// for the target to write the connection's stamps and join the two. The
/// stages sum to the job's own latency request by request; the job's mean
/// as its point reports it is kept beside them (`point_mean_ns`).
pub fn measure(
    target: &Target,
    spec: &BreakdownSpec,
    stamps_file: &Path,
) -> anyhow::Result<StampBreakdown> {
    // Once more if the join fails: a rare failure under load seen once in
    // CI (cause not found yet); both errors are kept if it fails again.
    match measure_once(target, spec, stamps_file) {
        Ok(b) => Ok(b),
        Err(first) => measure_once(target, spec, stamps_file)
            .map_err(|again| again.context(format!("and before that: {first:#}"))),
    }
}

fn measure_once(
    target: &Target,
    spec: &BreakdownSpec,
    stamps_file: &Path,
) -> anyhow::Result<StampBreakdown> {
    let before = std::fs::metadata(stamps_file).map(|m| m.len()).unwrap_or(0) as usize;
    let engine = target
        .remote
        .as_ref()
        .and_then(|ep| crate::plan::engines::engine_for_transport(ep.transport))
        .context("the breakdown runs on a remote target")?;
    let out = logged_run(target, spec, engine)?;
    let ini: Vec<InitiatorStamp> = out
        .request_logs
        .iter()
        .flat_map(|l| l.records.iter().filter_map(initiator_stamp))
        .collect();
    anyhow::ensure!(
        !ini.is_empty(),
        "the {} engine kept no stamps of its requests",
        engine.name()
    );
    let point_mean = out.point.main_lat().map(|l| l.mean_ns);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read(stamps_file).unwrap_or_default();
        let new = String::from_utf8_lossy(text.get(before..).unwrap_or_default());
        // The job's one connection: the block that holds its requests (an
        // earlier job's connection may close, and be written, after it began).
        let joined = stamps::blocks(&new).iter().rev().find_map(|tgt| {
            let at = align(&ini, tgt)?;
            stamps::join(&ini, &tgt[at..], spec.warmup)
        });
        if let Some(mut b) = joined {
            b.point_mean_ns = point_mean;
            return Ok(b);
        }
        if Instant::now() > deadline {
            let sizes: Vec<String> = stamps::blocks(&new)
                .iter()
                .map(|b| format!("{} (first request at {:?})", b.len(), align(&ini, b)))
                .collect();
            anyhow::bail!(
                "the target wrote no stamps matching the job's {} requests into {} within 10 s (is it iolab's own target, started with --stamps?); blocks written since: [{}]",
                ini.len(),
                stamps_file.display(),
                sizes.join(", ")
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The breakdown from the initiator's stamps alone, over a transport
/// whose target keeps none (tgtd, qemu-nbd, the kernel's path) or on the
/// local disk (DAS, the reference): `spec.requests` QD1 random reads on
/// `engine`. With the engine's own stamps (taken, reply received) the
/// initiator's share is its user space and the rest one unstamped stage;
/// without them (local engines) the initiator's share is due to submitted
/// and the rest is the device's (`local`) or unstamped.
pub fn measure_from_initiator(
    target: &Target,
    spec: &BreakdownSpec,
    engine: EngineKind,
    local: bool,
) -> anyhow::Result<StampBreakdown> {
    let out = logged_run(target, spec, engine)?;
    let records: Vec<&RequestRecord> = out
        .request_logs
        .iter()
        .flat_map(|l| l.records.iter())
        .collect();
    let mut b = from_initiator(&records, spec.warmup, local).with_context(|| {
        format!(
            "the {} engine logged {} requests, {} wanted after {} of warm-up",
            engine.name(),
            records.len(),
            spec.requests.saturating_sub(spec.warmup),
            spec.warmup
        )
    })?;
    b.point_mean_ns = out.point.main_lat().map(|l| l.mean_ns);
    Ok(b)
}

/// Mean stages of `records` after `skip` of warm-up (see
/// `measure_from_initiator`); None when none is left or a stamp is out
/// of order.
fn from_initiator(records: &[&RequestRecord], skip: usize, local: bool) -> Option<StampBreakdown> {
    let mut sum = [0f64; 3];
    let mut n = 0u64;
    let mut engine_stamped = 0u64;
    for r in records.iter().skip(skip) {
        let (mine, rest) = if r.t_engine_taken > 0 && r.t_engine_received > 0 {
            let ordered = r.t_prep <= r.t_engine_taken
                && r.t_engine_taken <= r.t_engine_received
                && r.t_engine_received <= r.t_reaped;
            if !ordered {
                return None;
            }
            engine_stamped += 1;
            (
                (r.t_engine_taken - r.t_prep) + (r.t_reaped - r.t_engine_received),
                r.t_engine_received - r.t_engine_taken,
            )
        } else {
            if !(r.t_prep <= r.t_submitted && r.t_submitted <= r.t_reaped) {
                return None;
            }
            (r.t_submitted - r.t_prep, r.t_reaped - r.t_submitted)
        };
        sum[0] += mine as f64;
        sum[1] += rest as f64;
        sum[2] += (r.t_reaped - r.t_prep) as f64;
        n += 1;
    }
    if n == 0 {
        return None;
    }
    let mean = |v: f64| v / n as f64;
    let (device_ns, unstamped_ns) = if local {
        (mean(sum[1]), 0.0)
    } else {
        (0.0, mean(sum[1]))
    };
    Some(StampBreakdown {
        requests: n,
        initiator_ns: mean(sum[0]),
        device_ns,
        unstamped_ns,
        latency_ns: mean(sum[2]),
        // One boundary for all its requests, or none that can be named.
        engine_stamps: (engine_stamped == 0 || engine_stamped == n).then_some(engine_stamped == n),
        ..StampBreakdown::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(prep: u64, submitted: u64, engine: Option<(u64, u64)>, reaped: u64) -> RequestRecord {
        let (taken, received) = engine.unwrap_or((0, 0));
        RequestRecord {
            op: crate::engine::OpKind::Read,
            offset: 0,
            len: 4096,
            t_prep: prep,
            t_submitted: submitted,
            t_reaped: reaped,
            tid: 1,
            t_engine_taken: taken,
            t_engine_received: received,
        }
    }

    #[test]
    fn the_initiators_stamps_alone_split_a_request_in_two() {
        // A local engine: due 0, submitted 2, reaped 12 (and 10 more).
        let local = [record(0, 2, None, 12), record(20, 21, None, 30)];
        let refs: Vec<&RequestRecord> = local.iter().collect();
        let b = from_initiator(&refs, 0, true).unwrap();
        assert_eq!(
            (b.initiator_ns, b.device_ns, b.latency_ns),
            (1.5, 9.5, 11.0)
        );
        assert_eq!(b.stages(), vec![("initiator", 1.5), ("device", 9.5)]);
        // The nbd engine over a target without stamps; one warm-up request.
        let nbd = [
            record(0, 0, Some((1, 50)), 52),
            record(100, 100, Some((103, 140)), 141),
        ];
        let refs: Vec<&RequestRecord> = nbd.iter().collect();
        let b = from_initiator(&refs, 1, false).unwrap();
        assert_eq!(
            (b.initiator_ns, b.unstamped_ns, b.latency_ns),
            (4.0, 37.0, 41.0)
        );
        assert_eq!(b.stages().len(), 2);
        let total: f64 = b.stages().iter().map(|s| s.1).sum();
        assert_eq!(total, b.latency_ns);
        // Out of order, or nothing after the warm-up: no breakdown.
        let bad = [record(10, 5, None, 12)];
        assert!(from_initiator(&[&bad[0]], 0, true).is_none());
        assert!(from_initiator(&refs, 2, false).is_none());
    }

    /// Issue 44 item 11: DAS's initiator stage holds the kernel's
    /// submission path, NBD's stops before the send call; each says so.
    #[test]
    fn each_breakdown_says_where_its_initiator_stage_ends() {
        let local = [record(0, 2, None, 12)];
        let b = from_initiator(&[&local[0]], 0, true).unwrap();
        assert_eq!(b.engine_stamps, Some(false));
        assert!(b.initiator_scope().contains("kernel's submission path"));
        let nbd = [record(0, 0, Some((1, 50)), 52)];
        let b = from_initiator(&[&nbd[0]], 0, false).unwrap();
        assert_eq!(b.engine_stamps, Some(true));
        assert!(b
            .initiator_scope()
            .contains("the send and receive calls are in the next stage"));
        // Written and read back: the boundary travels with the figures.
        let back: StampBreakdown =
            serde_json::from_value(serde_json::to_value(b).unwrap()).unwrap();
        assert_eq!(back.engine_stamps, Some(true));
    }

    #[test]
    fn the_first_request_is_found_among_the_targets_stamps() {
        let t = |k: u64| TargetStamp {
            seq: k,
            arrival: k * 100 + 10,
            device_submit: k * 100 + 12,
            device_complete: k * 100 + 40,
            reply_send: k * 100 + 43,
        };
        let tgt: Vec<_> = (0..5).map(t).collect();
        let ini = |k: u64| InitiatorStamp {
            issue: k * 100,
            send: k * 100 + 1,
            received: k * 100 + 50,
            done: k * 100 + 52,
        };
        // Two ramp requests the log does not have.
        let logged: Vec<_> = (2..5).map(ini).collect();
        assert_eq!(align(&logged, &tgt), Some(2));
        let b = stamps::join(&logged, &tgt[2..], 0).unwrap();
        assert_eq!(b.requests, 3);
        assert_eq!(align(&[ini(9)], &tgt), None);
    }
}
