//! The unloaded breakdown over the kernel's NVMe-oF, traced: iolab runs
//! inside Debian's Linux under qemu (`scripts/linux-vm.sh exec`), `iolab
//! remote --transports das,nvme-rdma-kernel,nvme-tcp-kernel --breakdown
//! 200` sets up nvmet-rdma over soft-RoCE and the kernel's nvme-rdma (then
//! nvmet-tcp and nvme-tcp), and follows each request of the breakdown's
//! job through the host's block and nvme tracepoints and nvmet's: the
//! stages are named by layer (path kernel-rdma, kernel-tcp), the fabric
//! and the target each take a share, and they sum to the latency.
//! Functional only (emulated CPU): no timings.

mod common;

use std::time::Duration;

use common::vm::{self, field};

const SCRIPT: &str = r#"
cd /tmp
export PATH=/usr/bin:$PATH
[ -d /sys/kernel/tracing/instances ] || mount -t tracefs nodev /sys/kernel/tracing
/iolab remote -t /tmp --size 64m --loopback --transports das,nvme-rdma-kernel,nvme-tcp-kernel --mixes 100,0 --qd 1 --rates none --breakdown 200 --ramp 0 --runtime 300ms --quiet -o /tmp/out
echo "IOLAB-EXIT $?"
echo IOLAB-RESULTS-BEGIN; cat /tmp/out/results.json; echo IOLAB-RESULTS-END
"#;

/// The breakdown over kernel path `label`: traced, by layer (`path`),
/// every stage but the device's taken, the stages summing to the latency.
fn traced(r: &serde_json::Value, label: &str, path: &str) {
    let b = &r["extra"]["remote"]["breakdown"][label];
    eprintln!("{label} breakdown: {b}");
    assert_eq!(b["path"], path, "{b}\n{}", r["warnings"]);
    let ns = |k: &str| b[k].as_f64().unwrap_or(0.0);
    for stage in [
        "initiator_ns",
        "fabric_out_ns",
        "target_ns",
        "fabric_back_ns",
    ] {
        assert!(ns(stage) > 0.0, "{stage}: {b}");
    }
    assert_eq!(ns("device_ns"), 0.0, "{b}");
    assert!(b.get("unstamped_ns").is_none(), "{b}");
    let sum: f64 = [
        "initiator_ns",
        "fabric_out_ns",
        "target_ns",
        "device_ns",
        "fabric_back_ns",
    ]
    .iter()
    .map(|k| ns(k))
    .sum();
    let latency = ns("latency_ns");
    assert!(
        latency > 0.0 && (sum - latency).abs() <= latency * 0.01,
        "stages sum to {sum}, latency {latency}: {b}"
    );
    // 200 requests, 20 of warm-up; at least half of the rest followed.
    let joined = b["requests"].as_u64().unwrap();
    assert!((90..=180).contains(&joined), "{b}");
}

#[test]
fn the_kernel_paths_are_broken_down_by_layer() {
    if let Some(why) = vm::unavailable() {
        eprintln!("SKIP: {why}");
        return;
    }
    let console = vm::run_script(SCRIPT, &["ip", "rdma"], Duration::from_secs(240));
    assert_eq!(field(&console, "IOLAB-EXIT"), "IOLAB-EXIT 0", "{console}");
    let json = vm::between(&console, "IOLAB-RESULTS-BEGIN", "IOLAB-RESULTS-END")
        .unwrap_or_else(|| panic!("{console}"));
    let r: serde_json::Value = serde_json::from_str(json).unwrap();
    let warnings = r["warnings"].to_string();
    assert!(!warnings.contains("unstamped"), "{warnings}");
    traced(&r, "nvme-rdma-kernel", "kernel-rdma");
    traced(&r, "nvme-tcp-kernel", "kernel-tcp");
    // DAS, the reference, keeps its initiator-and-device breakdown.
    let das = &r["extra"]["remote"]["breakdown"]["das"];
    assert!(das["device_ns"].as_f64().unwrap_or(0.0) > 0.0, "{das}");
    assert!(das.get("path").is_none(), "{das}");
}
