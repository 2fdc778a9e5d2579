//! The unloaded breakdown over the kernel's own NVMe over Fabrics
//! (`iolab remote --transports nvme-rdma-kernel,nvme-tcp-kernel`): the
//! breakdown's QD1 job (`remote::breakdown`) on the namespace's block
//! device with the host's block and nvme tracepoints and nvmet's on, each
//! request followed through them (`fabric`) and split into the stages of
//! a `StampBreakdown`, named by layer (`StagePath::KernelRdma`, `KernelTcp`).

use anyhow::Context;

use super::correlate::UserStamp;
use super::events::Kind;
use super::fabric::{FabricJoiner, FabricTimeline};
use super::session::traced_events;
use super::tracefs::{self, EventSpec};
use crate::dut::Target;
use crate::plan::engines::EngineKind;
use crate::remote::breakdown::{logged_run, BreakdownSpec};
use crate::results::sections::remote::StagePath;
use crate::results::sections::StampBreakdown;
use crate::testbed::nvme_kernel::NvmeTrtype;

/// Per-CPU trace buffer of the kernel path's breakdown: a few hundred
/// requests of six events each, and whatever else the disks do meanwhile.
const KERNEL_TRACE_KB: u32 = 2048;

/// Why the kernel's NVMe-oF path cannot be traced here, if it cannot: no
/// root or tracefs, or a tracepoint this kernel lacks (nvmet's exist only
/// once the nvmet module is loaded).
pub fn kernel_trace_unavailable() -> Option<String> {
    let mut caps = tracefs::probe();
    let _mount = caps.take_mount();
    if let Some(why) = caps.why_not {
        return Some(why);
    }
    let root = caps.tracefs?;
    let missing: Vec<String> = [Kind::Issue, Kind::Complete]
        .iter()
        .chain(Kind::NVME.iter())
        .map(|k| k.tracepoint())
        .filter(|(sys, name)| !root.join("events").join(sys).join(name).is_dir())
        .map(|(sys, name)| format!("{sys}:{name}"))
        .collect();
    (!missing.is_empty()).then(|| format!("no tracepoint {}", missing.join(", ")))
}

/// The block layer's major of disks numbered on demand (nvme's among them).
const BLOCK_EXT_MAJOR: u32 = 259;

/// The namespace's disks as the block layer names them: the device itself
/// and, under native multipath, its paths (`nvme0n1` is served by
/// `nvme0c0n1`, ...), each with its kernel dev_t where sysfs shows one (a
/// path's is hidden: an extended one, `BLOCK_EXT_MAJOR`).
fn namespace_disks(disk: &str) -> Vec<(String, Option<u32>)> {
    let path_of = |name: &str| {
        let (subsys, ns) = disk.strip_prefix("nvme")?.split_once('n')?;
        let (head, ctrl) = name.strip_prefix("nvme")?.split_once('c')?;
        let (ctrl, n) = ctrl.split_once('n')?;
        (head == subsys && n == ns && ctrl.chars().all(|c| c.is_ascii_digit())).then_some(())
    };
    let mut names = vec![disk.to_string()];
    if let Ok(dir) = std::fs::read_dir("/sys/block") {
        names.extend(
            dir.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| path_of(n).is_some()),
        );
    }
    names
        .into_iter()
        .map(|n| {
            let dev = std::fs::read_to_string(format!("/sys/block/{n}/dev"))
                .ok()
                .and_then(|t| crate::measure::sysfs::DevNum::parse(&t))
                .map(|d| super::events::kdev(d.major, d.minor));
            (n, dev)
        })
        .collect()
}

/// The tracepoints of the kernel path's breakdown, filtered to the
/// namespace's `disks` (any extended dev_t where one's is hidden) and to
/// I/O queues.
fn kernel_events(disks: &[(String, Option<u32>)]) -> Vec<EventSpec> {
    let or = |v: Vec<String>| v.join(" || ");
    let mut devs: Vec<String> = disks
        .iter()
        .filter_map(|(_, d)| Some(format!("dev == {}", (*d)?)))
        .collect();
    if disks.iter().any(|(_, d)| d.is_none()) {
        let ext = super::events::kdev(BLOCK_EXT_MAJOR, 0);
        let next = super::events::kdev(BLOCK_EXT_MAJOR + 1, 0);
        devs.push(format!("(dev >= {ext} && dev < {next})"));
    }
    let devs = or(devs);
    let names = or(disks
        .iter()
        .map(|(n, _)| format!("disk == \"{n}\""))
        .collect());
    let mut v = Vec::new();
    for k in [Kind::Issue, Kind::Complete]
        .iter()
        .chain(Kind::NVME.iter())
    {
        let (sys, name) = k.tracepoint();
        let filter = match k {
            Kind::Issue | Kind::Complete => devs.clone(),
            Kind::NvmeSetup | Kind::NvmeComplete => format!("qid != 0 && ({names})"),
            _ => "qid != 0".to_string(),
        };
        v.push(EventSpec::new(sys, name, Some(filter)));
    }
    v
}

/// The breakdown's job on the kernel initiator's block device (`target`,
/// a namespace connected over `trtype`) with the host's block and nvme
/// tracepoints and nvmet's on: each logged request is followed through
/// block_rq_issue, nvme_setup_cmd, nvmet_req_init, nvmet_req_complete,
/// nvme_complete_rq and block_rq_complete (`trace::fabric`). Requests
/// that cannot be followed are left out; fewer than half followed is an
/// error.
pub fn measure_traced_kernel(
    target: &Target,
    spec: &BreakdownSpec,
    engine: EngineKind,
    trtype: NvmeTrtype,
) -> anyhow::Result<StampBreakdown> {
    let disk = target
        .disk
        .as_ref()
        .map(|d| d.disk.clone())
        .with_context(|| format!("{} is not a block device", target.path.display()))?;
    let disks = namespace_disks(&disk);
    let lba_sectors =
        std::fs::read_to_string(format!("/sys/block/{disk}/queue/logical_block_size"))
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .map_or(1, |b| (b / 512).max(1));
    let mut caps = tracefs::probe();
    let _mount = caps.take_mount();
    if let Some(why) = &caps.why_not {
        anyhow::bail!("tracing unavailable: {why}");
    }
    let (out, cap) = traced_events(&caps, &kernel_events(&disks), KERNEL_TRACE_KB, || {
        logged_run(target, spec, engine)
    })?;
    let joiner = FabricJoiner::new(&cap.events, lba_sectors);
    let wanted: Vec<UserStamp> = out
        .request_logs
        .iter()
        .flat_map(|l| l.records.iter())
        .skip(spec.warmup)
        .map(|r| UserStamp {
            tid: r.tid,
            write: r.op == crate::engine::OpKind::Write,
            offset: r.offset,
            len: r.len,
            sector: Some(r.offset / 512),
            prepare: r.t_prep,
            submitted: r.t_submitted,
            done: r.t_reaped,
        })
        .collect();
    let joined: Vec<FabricTimeline> = wanted.iter().filter_map(|u| joiner.join(u)).collect();
    let count = |k: Kind| cap.events.iter().filter(|e| e.kind == k).count();
    anyhow::ensure!(
        !wanted.is_empty() && joined.len() * 2 >= wanted.len(),
        "{} of {} requests on {} followed through the six tracepoints (traced: {} issued, {} nvme_setup_cmd, {} nvmet_req_init, {} nvmet_req_complete, {} nvme_complete_rq, {} completed; {} lost)",
        joined.len(),
        wanted.len(),
        disks
            .iter()
            .map(|(n, d)| format!("{n} ({d:?})"))
            .collect::<Vec<_>>()
            .join(", "),
        count(Kind::Issue),
        count(Kind::NvmeSetup),
        count(Kind::NvmetInit),
        count(Kind::NvmetComplete),
        count(Kind::NvmeComplete),
        count(Kind::Complete),
        cap.lost.overrun + cap.lost.dropped + cap.missed_in_pages,
    );
    let mut b = from_fabric(&joined, trtype).context("no request followed")?;
    b.point_mean_ns = out.point.main_lat().map(|l| l.mean_ns);
    Ok(b)
}

/// Mean stages of requests followed over a kernel path: the initiator's
/// share is due to block_rq_issue and nvme_complete_rq to reaped, the
/// fabric out to nvmet_req_init, the target's to nvmet_req_complete
/// (nvmet's file I/O inside it), the fabric back to nvme_complete_rq.
fn from_fabric(timelines: &[FabricTimeline], trtype: NvmeTrtype) -> Option<StampBreakdown> {
    let n = timelines.len();
    if n == 0 {
        return None;
    }
    let mut sum = [0f64; 5];
    for t in timelines {
        let v = [
            (t.issue - t.prepare) + (t.done - t.host_complete),
            t.target_init - t.issue,
            t.target_complete - t.target_init,
            t.host_complete - t.target_complete,
            t.done - t.prepare,
        ];
        for (s, x) in sum.iter_mut().zip(v) {
            *s += x as f64;
        }
    }
    let mean = |i: usize| sum[i] / n as f64;
    Some(StampBreakdown {
        requests: n as u64,
        initiator_ns: mean(0),
        fabric_out_ns: mean(1),
        target_ns: mean(2),
        fabric_back_ns: mean(3),
        latency_ns: mean(4),
        // The initiator stage holds the kernel's submission path.
        engine_stamps: Some(false),
        path: Some(match trtype {
            NvmeTrtype::Rdma => StagePath::KernelRdma,
            NvmeTrtype::Tcp => StagePath::KernelTcp,
        }),
        ..StampBreakdown::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_paths_stages_sum_to_each_requests_latency() {
        let t = |at: u64, k: u64| FabricTimeline {
            prepare: at,
            issue: at + 10,
            setup: at + 9,
            target_init: at + 10 + 20 * k,
            target_complete: at + 10 + 50 * k,
            host_complete: at + 10 + 80 * k,
            complete: at + 12 + 80 * k,
            done: at + 15 + 80 * k,
        };
        let b = from_fabric(&[t(0, 1), t(1000, 3)], NvmeTrtype::Rdma).unwrap();
        assert_eq!(b.requests, 2);
        assert_eq!(
            (
                b.initiator_ns,
                b.fabric_out_ns,
                b.target_ns,
                b.fabric_back_ns
            ),
            (15.0, 40.0, 60.0, 60.0)
        );
        assert_eq!(b.device_ns, 0.0);
        assert_eq!(b.latency_ns, 175.0);
        let total: f64 = b.stages().iter().map(|s| s.1).sum();
        assert_eq!(total, b.latency_ns);
        assert_eq!(b.path, Some(StagePath::KernelRdma));
        let tcp = from_fabric(&[t(0, 1)], NvmeTrtype::Tcp).unwrap();
        assert_eq!(tcp.path, Some(StagePath::KernelTcp));
        assert!(from_fabric(&[], NvmeTrtype::Rdma).is_none());
    }

    #[test]
    fn a_namespaces_filters_name_its_paths() {
        let disks = [
            ("nvme0n1".to_string(), Some(5)),
            ("nvme0c0n1".to_string(), Some(7)),
        ];
        let ev = kernel_events(&disks);
        assert_eq!(ev.len(), 6);
        assert_eq!(ev[0].filter.as_deref(), Some("dev == 5 || dev == 7"));
        // A multipath path's dev_t is hidden: any extended one.
        let hidden = kernel_events(&[disks[0].clone(), ("nvme0c0n1".to_string(), None)]);
        assert_eq!(
            hidden[0].filter.as_deref(),
            Some("dev == 5 || (dev >= 271581184 && dev < 272629760)")
        );
        let setup = ev.iter().find(|e| e.name == "nvme_setup_cmd").unwrap();
        assert_eq!(
            setup.filter.as_deref(),
            Some("qid != 0 && (disk == \"nvme0n1\" || disk == \"nvme0c0n1\")")
        );
    }
}
