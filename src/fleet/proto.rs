//! The framed protocol between the control side and `iolab agent` over a
//! byte stream (the ssh channel's stdin/stdout). A frame is an 8-byte
//! header — `I` `L`, the protocol version, the message kind, the payload
//! length (u32, little endian) — and a JSON payload. Every kind has its own
//! size bound, checked before anything is allocated, so a corrupt or
//! hostile peer gives an error naming what was wrong, never a panic or an
//! unbounded allocation.

use std::io::{Read, Write};

use serde::{Deserialize, Serialize};

use crate::kv::settings::KvSettings;
use crate::oltp::settings::OltpSettings;
use crate::plan::job::JobSpec;
use crate::results::Point;

use super::build::BuildId;

/// Bumped whenever a message changes shape.
pub const PROTOCOL_VERSION: u8 = 6;
/// How often the control side tells every agent it is there.
pub const KEEPALIVE_EVERY: std::time::Duration = std::time::Duration::from_secs(5);
/// Silence from the control side after which an agent tears down and
/// exits (six keep-alives missed).
pub const CONTROL_SILENCE: std::time::Duration = std::time::Duration::from_secs(30);
const MAGIC: [u8; 2] = *b"IL";
pub const HEADER_LEN: usize = 8;
/// A result carries a point with its encoded HDR histograms.
pub const MAX_RESULT: usize = 16 << 20;
/// A job spec (with a fake engine's script) or an error's text.
pub const MAX_CONTROL: usize = 256 << 10;
/// Clock probes, start, progress, stop, bye.
pub const MAX_SMALL: usize = 4 << 10;

/// Where the agent runs the job.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JobTarget {
    /// A directory on the host for the scratch file (`None`: engines that
    /// open no file), or a remote export every host reaches
    /// (`nbd://`, `nvme-tcp://`, `iscsi://`: the hosts share one target).
    pub dir: Option<String>,
    /// The scratch file's size, bytes (of a remote export: how much of it).
    pub size: Option<u64>,
    /// Writes to a remote export were allowed (`--overwrite`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub overwrite: bool,
    /// The configuration of this label the host built (`Make`): the
    /// scratch file (or database) goes in its file system, not in `dir`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub made: Option<String>,
}

/// control -> agent: build a configuration (`--make`: a file system on a
/// loop device, a stripe, tmpfs) under `make_in` with room for `room`
/// bytes, known by `label` until the agent ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MakeRequest {
    pub label: String,
    /// As `--make` names it (`ext4`, `xfs`, `stripe:2`, `tmpfs`).
    pub kind: String,
    pub make_in: String,
    pub room: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hello {
    pub protocol: u8,
    pub build: BuildId,
    pub hostname: String,
    pub pid: u32,
    /// Which machine, kernel boot and network namespace the agent runs in
    /// (absent from an agent that cannot tell: it is not checked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<HostIdentity>,
}

/// What makes a host one host, whatever name reached it: the machine id
/// (/etc/machine-id, else /var/lib/dbus/machine-id), the kernel's boot id
/// (cloned machines share a machine id, never a boot) and the inode of the
/// agent's network namespace (namespaces of one kernel are distinct hosts).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostIdentity {
    pub machine_id: Option<String>,
    pub boot_id: String,
    pub net_ns: u64,
}

impl HostIdentity {
    /// This process's identity (None: no boot id or network namespace to tell).
    pub fn current() -> Option<HostIdentity> {
        use std::os::unix::fs::MetadataExt;
        let first_line = |p: &str| {
            std::fs::read_to_string(p)
                .ok()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty() && s.len() <= 128)
        };
        let machine_id =
            first_line("/etc/machine-id").or_else(|| first_line("/var/lib/dbus/machine-id"));
        Some(HostIdentity {
            machine_id,
            boot_id: first_line("/proc/sys/kernel/random/boot_id")?,
            net_ns: std::fs::metadata("/proc/self/ns/net").ok()?.ino(),
        })
    }
}

impl std::fmt::Display for HostIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "machine id {}, boot {}, network namespace {}",
            self.machine_id.as_deref().unwrap_or("unknown"),
            self.boot_id,
            self.net_ns
        )
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prepare {
    pub work: AgentWork,
    pub target: JobTarget,
}

/// What a prepare sets up on the host.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum AgentWork {
    /// A device job (its target: a scratch file in the directory, or the export).
    Device(Box<JobSpec>),
    /// One phase of a kv plan; the host keeps its databases from one phase
    /// to the next of the same plan.
    Kv(Box<KvWork>),
    /// One point of an oltp plan; the host loads its database before the
    /// first and keeps it from one point to the next of the same plan.
    Oltp(Box<OltpWork>),
}

/// Phase `phase` (counted from 0; db_bench chain steps are not phases) of
/// the kv plan `settings` describe, on `instances` databases at once in a
/// scratch directory of the target directory. The host builds and checks
/// the plan from the settings as `iolab kv` does from its flags.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KvWork {
    pub settings: KvSettings,
    pub instances: u32,
    pub phase: u32,
}

/// Point `point` (the index of its users count, from 0) of the oltp plan
/// `settings` describe, its database in a scratch directory of the target
/// directory. The host builds and checks the plan from the settings.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OltpWork {
    pub settings: OltpSettings,
    pub point: u32,
}

impl Prepare {
    /// A device job's prepare.
    pub fn device(job: JobSpec, target: JobTarget) -> Prepare {
        Prepare {
            work: AgentWork::Device(Box::new(job)),
            target,
        }
    }
}

/// The agent's answer to a clock probe: its CLOCK_MONOTONIC, ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockReply {
    pub seq: u32,
    pub agent_ns: u64,
}

/// What the agent measured, with the moment its measured interval began.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobResult {
    pub point: Point,
    /// The agent's CLOCK_MONOTONIC when its workers were released, ns.
    pub started_ns: u64,
}

/// A running job's last complete second (zeros before the first).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgressReport {
    /// Which second of the job it is, 1-based, on the common start (0:
    /// nothing measured yet); the control side sums the hosts' reports of
    /// one second.
    #[serde(default)]
    pub second: u64,
    pub elapsed_s: f64,
    pub iops: f64,
    pub mib_s: f64,
    pub mean_ns: f64,
    pub p99_ns: u64,
}

/// Errors the agent reports; `field` is set when the job was bad input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentError {
    pub message: String,
    pub field: Option<String>,
}

/// control -> target host's agent: serve iolab's own target over a scratch
/// file of `size` bytes in `dir`, on `address` only (`None`: the address
/// the control side's ssh reached this host at).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeRequest {
    /// The transport as `--transports` names it (`iolab`, `nvme-tcp`,
    /// `qemu-nbd`, `nbdkit-file`, `nbdkit-memory`).
    pub transport: String,
    pub dir: String,
    pub size: u64,
    pub address: Option<String>,
    /// Reactor threads of the target.
    pub threads: usize,
    /// Every reply held this long after its request arrived.
    pub delay_ns: Option<u64>,
    /// Only check that it could be served (nothing is started).
    #[serde(default)]
    pub check_only: bool,
}

/// target host's agent -> control: the export is up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Serving {
    /// What the initiators open (`nbd://ADDR:PORT/`, `nvme-tcp://...`).
    pub url: String,
    /// The scratch file on the target host.
    pub backing: String,
}

/// The target host's whole CPU between two instants of its clock, and
/// the disk under its served file second by second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuOver {
    pub cpu: crate::measure::procstat::SystemCpu,
    /// The samples the figures are between (agent clock, ns).
    pub from_ns: u64,
    pub to_ns: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<crate::results::ext::TargetDisk>,
    /// Why there is no disk series.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_disk: Option<String>,
}

impl CpuOver {
    /// Why `self` is not a cpu-over a peer may send (None: it is).
    fn invalid(&self) -> Option<&'static str> {
        let s = self.cpu;
        let shares = [s.usr_pct, s.sys_pct, s.iowait_pct, s.idle_pct, s.steal_pct];
        if shares.iter().any(|x| !x.is_finite() || *x < 0.0) {
            return Some("a CPU share that is not a finite, non-negative number");
        }
        if self.no_disk.as_ref().is_some_and(|w| w.len() > 512) {
            return Some("why there is no disk series is over 512 bytes");
        }
        self.disk.as_ref().and_then(|d| d.invalid())
    }
}

/// Every message, in either direction.
#[derive(Debug, Clone)]
pub enum Message {
    /// agent -> control, first: who and which build.
    Hello(Hello),
    /// control -> agent: set up the job's target (nothing is measured yet).
    Prepare(Box<Prepare>),
    /// agent -> control: prepared; the path it made (empty: none).
    Ready {
        target: String,
    },
    /// control -> agent: answer with your clock at once.
    ClockProbe {
        seq: u32,
    },
    ClockReply(ClockReply),
    /// control -> agent: release the workers at this CLOCK_MONOTONIC (agent's), ns.
    StartAt {
        agent_ns: u64,
    },
    /// agent -> control, about once a second.
    Progress(ProgressReport),
    Result(Box<JobResult>),
    Error(AgentError),
    /// control -> agent: end the job now (its result still comes).
    Stop,
    /// Either side: the conversation is over.
    Bye,
    /// control -> agent, every `KEEPALIVE_EVERY`: the control side is
    /// there (an agent that hears nothing for `CONTROL_SILENCE` tears
    /// down and exits: a partitioned host kept its scratch for minutes).
    KeepAlive,
    /// control -> agent: serve an export (replacing any served before).
    Serve(ServeRequest),
    Serving(Serving),
    /// control -> agent: the machine's CPU between these instants (agent's clock).
    CpuWindow {
        from_ns: u64,
        to_ns: u64,
    },
    CpuOver(CpuOver),
    /// control -> agent: build a configuration.
    Make(MakeRequest),
    /// agent -> control: built; where its file system is on the host.
    Made {
        label: String,
        target: String,
    },
}

/// Kinds on the wire; the numbers never change meaning within a version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Kind {
    Hello = 1,
    Prepare = 2,
    Ready = 3,
    ClockProbe = 4,
    ClockReply = 5,
    StartAt = 6,
    Progress = 7,
    Result = 8,
    Error = 9,
    Stop = 10,
    Bye = 11,
    KeepAlive = 12,
    // 20 onwards: the target host of `remote --hosts`.
    Serve = 20,
    Serving = 21,
    CpuWindow = 22,
    CpuOver = 23,
    // 30 onwards: configurations built on the hosts (`--make`).
    Make = 30,
    Made = 31,
}

impl Kind {
    fn from_u8(b: u8) -> Option<Kind> {
        use Kind::*;
        [
            Hello, Prepare, Ready, ClockProbe, ClockReply, StartAt, Progress, Result, Error, Stop,
            Bye, KeepAlive, Serve, Serving, CpuWindow, CpuOver, Make, Made,
        ]
        .into_iter()
        .find(|k| *k as u8 == b)
    }

    fn limit(self) -> usize {
        match self {
            Kind::Result => MAX_RESULT,
            Kind::Prepare
            | Kind::Error
            | Kind::Hello
            | Kind::Ready
            | Kind::Serve
            | Kind::Serving
            | Kind::Make
            | Kind::Made
            // With an hour of a disk's seconds at most.
            | Kind::CpuOver => MAX_CONTROL,
            _ => MAX_SMALL,
        }
    }
}

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    #[error("the peer closed the channel")]
    Closed,
    #[error("reading from the peer: {0}")]
    Io(#[from] std::io::Error),
    #[error("not an iolab agent frame (it starts with {0:?}: a shell profile printing text, or not iolab at the other end)")]
    BadMagic(String),
    #[error(
        "protocol version {0} (this iolab speaks {PROTOCOL_VERSION}): a different iolab build"
    )]
    Version(u8),
    #[error("unknown message kind {0}")]
    UnknownKind(u8),
    #[error("a {kind} message of {len} bytes is over its limit of {limit}")]
    TooLarge {
        kind: &'static str,
        len: usize,
        limit: usize,
    },
    #[error("a malformed {kind} message: {why}")]
    Malformed { kind: &'static str, why: String },
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Hello => "hello",
        Kind::Prepare => "prepare",
        Kind::Ready => "ready",
        Kind::ClockProbe => "clock-probe",
        Kind::ClockReply => "clock-reply",
        Kind::StartAt => "start-at",
        Kind::Progress => "progress",
        Kind::Result => "result",
        Kind::Error => "error",
        Kind::Stop => "stop",
        Kind::Bye => "bye",
        Kind::KeepAlive => "keep-alive",
        Kind::Serve => "serve",
        Kind::Serving => "serving",
        Kind::CpuWindow => "cpu-window",
        Kind::CpuOver => "cpu-over",
        Kind::Make => "make",
        Kind::Made => "made",
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadyBody {
    target: String,
}
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProbeBody {
    seq: u32,
}
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StartBody {
    agent_ns: u64,
}
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WindowBody {
    from_ns: u64,
    to_ns: u64,
}
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Empty {}
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MadeBody {
    label: String,
    target: String,
}

impl Message {
    fn kind(&self) -> Kind {
        match self {
            Message::Hello(_) => Kind::Hello,
            Message::Prepare(_) => Kind::Prepare,
            Message::Ready { .. } => Kind::Ready,
            Message::ClockProbe { .. } => Kind::ClockProbe,
            Message::ClockReply(_) => Kind::ClockReply,
            Message::StartAt { .. } => Kind::StartAt,
            Message::Progress(_) => Kind::Progress,
            Message::Result(_) => Kind::Result,
            Message::Error(_) => Kind::Error,
            Message::Stop => Kind::Stop,
            Message::Bye => Kind::Bye,
            Message::KeepAlive => Kind::KeepAlive,
            Message::Serve(_) => Kind::Serve,
            Message::Serving(_) => Kind::Serving,
            Message::CpuWindow { .. } => Kind::CpuWindow,
            Message::CpuOver(_) => Kind::CpuOver,
            Message::Make(_) => Kind::Make,
            Message::Made { .. } => Kind::Made,
        }
    }

    /// The message's name, for errors ("expected ready, got ...").
    pub fn name(&self) -> &'static str {
        kind_name(self.kind())
    }

    fn body(&self) -> serde_json::Result<Vec<u8>> {
        match self {
            Message::Hello(h) => serde_json::to_vec(h),
            Message::Prepare(p) => serde_json::to_vec(p),
            Message::Ready { target } => serde_json::to_vec(&ReadyBody {
                target: target.clone(),
            }),
            Message::ClockProbe { seq } => serde_json::to_vec(&ProbeBody { seq: *seq }),
            Message::ClockReply(r) => serde_json::to_vec(r),
            Message::StartAt { agent_ns } => serde_json::to_vec(&StartBody {
                agent_ns: *agent_ns,
            }),
            Message::Progress(p) => serde_json::to_vec(p),
            Message::Result(r) => serde_json::to_vec(r),
            Message::Error(e) => serde_json::to_vec(e),
            Message::Stop | Message::Bye | Message::KeepAlive => serde_json::to_vec(&Empty {}),
            Message::Serve(r) => serde_json::to_vec(r),
            Message::Serving(r) => serde_json::to_vec(r),
            Message::CpuWindow { from_ns, to_ns } => serde_json::to_vec(&WindowBody {
                from_ns: *from_ns,
                to_ns: *to_ns,
            }),
            Message::CpuOver(c) => serde_json::to_vec(c),
            Message::Make(r) => serde_json::to_vec(r),
            Message::Made { label, target } => serde_json::to_vec(&MadeBody {
                label: label.clone(),
                target: target.clone(),
            }),
        }
    }

    /// The whole frame, header included; a message over its bound is an
    /// error here already, so a peer never receives one.
    pub fn encode(&self) -> Result<Vec<u8>, ProtoError> {
        let kind = self.kind();
        let body = self.body().map_err(|e| ProtoError::Malformed {
            kind: kind_name(kind),
            why: e.to_string(),
        })?;
        if body.len() > kind.limit() {
            return Err(ProtoError::TooLarge {
                kind: kind_name(kind),
                len: body.len(),
                limit: kind.limit(),
            });
        }
        let mut out = Vec::with_capacity(HEADER_LEN + body.len());
        out.extend_from_slice(&MAGIC);
        out.push(PROTOCOL_VERSION);
        out.push(kind as u8);
        out.extend_from_slice(&(body.len() as u32).to_le_bytes());
        out.extend_from_slice(&body);
        Ok(out)
    }

    fn decode_body(kind: Kind, body: &[u8]) -> Result<Message, ProtoError> {
        let bad = |e: serde_json::Error| ProtoError::Malformed {
            kind: kind_name(kind),
            why: e.to_string(),
        };
        let m = match kind {
            Kind::Hello => Message::Hello(serde_json::from_slice(body).map_err(bad)?),
            Kind::Prepare => Message::Prepare(serde_json::from_slice(body).map_err(bad)?),
            Kind::Ready => {
                let b: ReadyBody = serde_json::from_slice(body).map_err(bad)?;
                Message::Ready { target: b.target }
            }
            Kind::ClockProbe => {
                let b: ProbeBody = serde_json::from_slice(body).map_err(bad)?;
                Message::ClockProbe { seq: b.seq }
            }
            Kind::ClockReply => Message::ClockReply(serde_json::from_slice(body).map_err(bad)?),
            Kind::StartAt => {
                let b: StartBody = serde_json::from_slice(body).map_err(bad)?;
                Message::StartAt {
                    agent_ns: b.agent_ns,
                }
            }
            Kind::Progress => Message::Progress(serde_json::from_slice(body).map_err(bad)?),
            Kind::Result => Message::Result(serde_json::from_slice(body).map_err(bad)?),
            Kind::Error => Message::Error(serde_json::from_slice(body).map_err(bad)?),
            Kind::Stop | Kind::Bye | Kind::KeepAlive => {
                let _: Empty = serde_json::from_slice(body).map_err(bad)?;
                match kind {
                    Kind::Stop => Message::Stop,
                    Kind::Bye => Message::Bye,
                    _ => Message::KeepAlive,
                }
            }
            Kind::Serve => Message::Serve(serde_json::from_slice(body).map_err(bad)?),
            Kind::Serving => Message::Serving(serde_json::from_slice(body).map_err(bad)?),
            Kind::CpuWindow => {
                let b: WindowBody = serde_json::from_slice(body).map_err(bad)?;
                Message::CpuWindow {
                    from_ns: b.from_ns,
                    to_ns: b.to_ns,
                }
            }
            Kind::CpuOver => {
                let c: CpuOver = serde_json::from_slice(body).map_err(bad)?;
                if let Some(why) = c.invalid() {
                    return Err(ProtoError::Malformed {
                        kind: "cpu-over",
                        why: why.into(),
                    });
                }
                Message::CpuOver(c)
            }
            Kind::Make => Message::Make(serde_json::from_slice(body).map_err(bad)?),
            Kind::Made => {
                let b: MadeBody = serde_json::from_slice(body).map_err(bad)?;
                Message::Made {
                    label: b.label,
                    target: b.target,
                }
            }
        };
        if let Message::Result(r) = &m {
            super::validate::point(&r.point).map_err(|why| ProtoError::Malformed {
                kind: "result",
                why,
            })?;
        }
        Ok(m)
    }
}

/// Read one frame. EOF before the first header byte is `Closed`; EOF
/// inside a frame is an I/O error (a truncated frame).
pub fn read_message(r: &mut impl Read) -> Result<Message, ProtoError> {
    let mut header = [0u8; HEADER_LEN];
    let mut got = 0;
    while got < HEADER_LEN {
        match r.read(&mut header[got..]) {
            Ok(0) if got == 0 => return Err(ProtoError::Closed),
            Ok(0) => {
                return Err(ProtoError::Io(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "the channel closed inside a frame header",
                )))
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    decode_header_and_body(&header, r)
}

fn decode_header_and_body(
    header: &[u8; HEADER_LEN],
    r: &mut impl Read,
) -> Result<Message, ProtoError> {
    if header[..2] != MAGIC {
        return Err(ProtoError::BadMagic(
            String::from_utf8_lossy(&header[..]).into_owned(),
        ));
    }
    if header[2] != PROTOCOL_VERSION {
        return Err(ProtoError::Version(header[2]));
    }
    let kind = Kind::from_u8(header[3]).ok_or(ProtoError::UnknownKind(header[3]))?;
    let len = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
    if len > kind.limit() {
        return Err(ProtoError::TooLarge {
            kind: kind_name(kind),
            len,
            limit: kind.limit(),
        });
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)?;
    Message::decode_body(kind, &body)
}

/// Write one frame and flush it.
pub fn write_message(w: &mut impl Write, m: &Message) -> anyhow::Result<()> {
    let frame = m.encode()?;
    w.write_all(&frame)?;
    w.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(m: &Message) -> Message {
        let bytes = m.encode().unwrap();
        read_message(&mut bytes.as_slice()).unwrap()
    }

    #[test]
    fn small_messages_round_trip() {
        assert!(matches!(
            round_trip(&Message::ClockProbe { seq: 7 }),
            Message::ClockProbe { seq: 7 }
        ));
        assert!(matches!(
            round_trip(&Message::StartAt { agent_ns: 42 }),
            Message::StartAt { agent_ns: 42 }
        ));
        assert!(matches!(round_trip(&Message::Bye), Message::Bye));
        let e = AgentError {
            message: "no".into(),
            field: Some("--bs".into()),
        };
        match round_trip(&Message::Error(e.clone())) {
            Message::Error(back) => assert_eq!(back, e),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_target_hosts_messages_round_trip() {
        let req = ServeRequest {
            transport: "nvme-tcp".into(),
            dir: "/var/tmp".into(),
            size: 1 << 30,
            address: Some("10.0.0.9".into()),
            threads: 2,
            delay_ns: None,
            check_only: false,
        };
        match round_trip(&Message::Serve(req.clone())) {
            Message::Serve(back) => assert_eq!(back, req),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            round_trip(&Message::CpuWindow {
                from_ns: 1,
                to_ns: 2
            }),
            Message::CpuWindow {
                from_ns: 1,
                to_ns: 2
            }
        ));
        let mut c = CpuOver {
            cpu: Default::default(),
            from_ns: 1,
            to_ns: 2,
            disk: None,
            no_disk: None,
        };
        assert!(matches!(
            round_trip(&Message::CpuOver(c.clone())),
            Message::CpuOver(_)
        ));
        c.cpu.usr_pct = -1.0;
        let frame = Message::CpuOver(c).encode().unwrap();
        let err = read_message(&mut frame.as_slice()).unwrap_err();
        assert!(err.to_string().contains("malformed cpu-over"), "{err}");
    }

    fn cpu_over_frame(body: &str) -> Vec<u8> {
        let mut f = vec![b'I', b'L', PROTOCOL_VERSION, 23];
        f.extend_from_slice(&(body.len() as u32).to_le_bytes());
        f.extend_from_slice(body.as_bytes());
        f
    }

    #[test]
    fn the_target_disk_series_round_trips_and_a_malformed_one_is_refused() {
        let c = CpuOver {
            cpu: Default::default(),
            from_ns: 1,
            to_ns: 2_500_000_001,
            disk: Some(crate::results::ext::TargetDisk {
                device: "nvme0n1p2".into(),
                read_bytes_s: vec![1 << 20, 3 << 20, 0],
                write_bytes_s: vec![0, 4096, 512],
            }),
            no_disk: None,
        };
        match round_trip(&Message::CpuOver(c.clone())) {
            Message::CpuOver(back) => assert_eq!(back, c),
            other => panic!("{other:?}"),
        }
        // An hour of seconds at most: the largest series fits its frame.
        let mut long = c.clone();
        let d = long.disk.as_mut().unwrap();
        d.read_bytes_s = vec![u32::MAX as u64; crate::results::ext::MAX_DISK_SECONDS];
        d.write_bytes_s = d.read_bytes_s.clone();
        assert!(matches!(
            round_trip(&Message::CpuOver(long)),
            Message::CpuOver(_)
        ));
        let cpu = r#""cpu":{"usr_pct":1.0,"sys_pct":1.0,"iowait_pct":0.0,"idle_pct":98.0,"steal_pct":0.0},"from_ns":1,"to_ns":2"#;
        let zeros = vec!["0"; 3601].join(",");
        for (disk, says) in [
            (
                r#"{"device":"sda","read_bytes_s":[-1],"write_bytes_s":[0]}"#.to_string(),
                "invalid value",
            ),
            (
                r#"{"device":"sda","read_bytes_s":[1,2],"write_bytes_s":[0]}"#.to_string(),
                "differ in length",
            ),
            (
                format!(r#"{{"device":"sda","read_bytes_s":[{zeros}],"write_bytes_s":[{zeros}]}}"#),
                "longer than an hour",
            ),
            (
                r#"{"device":"sda","read_bytes_s":[18446744073709551615],"write_bytes_s":[0]}"#
                    .to_string(),
                "over 1 PiB/s",
            ),
            (
                r#"{"device":"../etc","read_bytes_s":[],"write_bytes_s":[]}"#.to_string(),
                "not a kernel name",
            ),
        ] {
            let frame = cpu_over_frame(&format!(r#"{{{cpu},"disk":{disk}}}"#));
            let err = read_message(&mut frame.as_slice()).unwrap_err().to_string();
            assert!(
                err.contains("malformed cpu-over") && err.contains(says),
                "{err}"
            );
        }
    }

    #[test]
    fn an_oversized_length_is_refused_before_allocating() {
        let mut frame = Message::Stop.encode().unwrap();
        frame[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        let err = read_message(&mut frame.as_slice()).unwrap_err();
        assert!(
            matches!(err, ProtoError::TooLarge { kind: "stop", .. }),
            "{err}"
        );
    }

    #[test]
    fn text_instead_of_a_frame_is_named() {
        let err = read_message(&mut &b"Welcome to host\n"[..]).unwrap_err();
        assert!(
            err.to_string().contains("not an iolab agent frame"),
            "{err}"
        );
    }

    #[test]
    fn another_version_and_unknown_kinds_are_refused() {
        let mut frame = Message::Bye.encode().unwrap();
        frame[2] = PROTOCOL_VERSION + 1;
        assert!(matches!(
            read_message(&mut frame.as_slice()),
            Err(ProtoError::Version(_))
        ));
        frame[2] = PROTOCOL_VERSION;
        frame[3] = 200;
        assert!(matches!(
            read_message(&mut frame.as_slice()),
            Err(ProtoError::UnknownKind(200))
        ));
    }

    #[test]
    fn truncated_and_empty_streams() {
        assert!(matches!(
            read_message(&mut &b""[..]),
            Err(ProtoError::Closed)
        ));
        let frame = Message::ClockProbe { seq: 1 }.encode().unwrap();
        let err = read_message(&mut &frame[..frame.len() - 1]).unwrap_err();
        assert!(matches!(err, ProtoError::Io(_)), "{err}");
    }

    #[test]
    fn a_malformed_kv_prepare_is_a_clear_error() {
        let frame = |body: &str| {
            let mut f = vec![b'I', b'L', PROTOCOL_VERSION, 2];
            f.extend_from_slice(&(body.len() as u32).to_le_bytes());
            f.extend_from_slice(body.as_bytes());
            f
        };
        let target = r#""target":{"dir":"/tmp","size":null}"#;
        for (body, says) in [
            (
                format!(r#"{{"work":{{"kv":{{"instances":1,"phase":0}}}},{target}}}"#),
                "missing field `settings`",
            ),
            (
                format!(r#"{{"work":{{"sql":{{}}}},{target}}}"#),
                "unknown variant `sql`",
            ),
            (
                format!(
                    r#"{{"work":{{"kv":{{"settings":{{"engine":"nosuch"}},"instances":1,"phase":0}}}},{target}}}"#
                ),
                "unknown engine",
            ),
        ] {
            let err = read_message(&mut frame(&body).as_slice()).unwrap_err();
            let msg = err.to_string();
            assert!(
                msg.contains("malformed prepare") && msg.contains(says),
                "{msg}"
            );
        }
    }

    #[test]
    fn unknown_fields_are_malformed() {
        let body = br#"{"seq":1,"extra":2}"#;
        let mut frame = vec![b'I', b'L', PROTOCOL_VERSION, 4];
        frame.extend_from_slice(&(body.len() as u32).to_le_bytes());
        frame.extend_from_slice(body);
        let err = read_message(&mut frame.as_slice()).unwrap_err();
        assert!(err.to_string().contains("malformed clock-probe"), "{err}");
    }
}
