//! The kernel's initiators where the kernel has them: iolab itself runs
//! inside Debian's Linux under qemu (`scripts/linux-vm.sh exec`).
//! `iolab remote --transports nvme-tcp-kernel,nvme-rdma-kernel` sets up
//! nvmet through configfs (over RDMA on a soft-RoCE link iolab makes),
//! connects the kernel's initiator through /dev/nvme-fabrics, runs the
//! jobs on /dev/nvmeXnY next to DAS and a RocksDB on ext4 on it, and
//! takes everything down, its unloaded breakdown traced by layer (the
//! host's block and nvme tracepoints and nvmet's: every stage but the
//! device's taken, summing to the latency); then a run over RDMA killed with SIGKILL while
//! connected leaves its link, subsystem, port and controller, and the next
//! iolab start removes them. And `iolab remote --transports
//! iolab --db` puts the database of an NBD transport on /dev/nbdN through
//! the kernel's NBD client (iolab's handshake, then the socket handed to
//! the kernel), and `--transports nvme-tcp --db` the database of iolab's
//! NVMe/TCP target on the kernel initiator's /dev/nvmeXnY. Functional
//! only (emulated CPU): no timings.

use crate::common;

use std::time::Duration;

use common::vm::{self, field};

const SCRIPT: &str = r#"
cd /tmp
export PATH=/usr/bin:$PATH
[ -d /sys/kernel/tracing/instances ] || mount -t tracefs nodev /sys/kernel/tracing
R="--size 64m --loopback --mixes 100,0 --qd 1,4 --rates none --ramp 0 --quiet"
/iolab remote -t /tmp $R --breakdown 200 --transports das,nvme-tcp-kernel,nvme-rdma-kernel --runtime 500ms --db 4k --db-num 300 --db-ops 300 -o /tmp/out
echo "IOLAB-EXIT $?"
echo IOLAB-RESULTS-BEGIN; cat /tmp/out/results.json; echo IOLAB-RESULTS-END
left() { echo "$1 rdma=[$(ls /sys/class/infiniband) $(ls /sys/class/net | grep iorx)] subsystems=[$(ls /sys/kernel/config/nvmet/subsystems)] ports=[$(ls /sys/kernel/config/nvmet/ports)] controllers=[$(ls /sys/class/nvme)]"; }
left IOLAB-LEFT
/iolab remote -t /tmp $R --breakdown 0 --transports nvme-rdma-kernel --runtime 30s -o /tmp/killed &
pid=$!
i=0; while [ ! -e /sys/class/nvme/nvme0 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
sleep 1
kill -9 $pid; wait $pid
left IOLAB-KILLED
/iolab remote -t /tmp --transports das --dry-run > /dev/null 2>/tmp/sweep
cat /tmp/sweep
left IOLAB-SWEPT
/iolab remote -t /tmp $R --breakdown 0 --transports iolab --runtime 200ms --db 4k --db-num 300 --db-ops 300 -o /tmp/nbd
echo "IOLAB-NBD-EXIT $?"
echo IOLAB-NBD-BEGIN; cat /tmp/nbd/results.json; echo IOLAB-NBD-END
echo "IOLAB-NBD-LEFT [$(cat /sys/block/nbd*/pid 2>/dev/null)]"
/iolab remote -t /tmp $R --breakdown 0 --transports nvme-tcp --runtime 200ms --db 4k --db-num 300 --db-ops 300 -o /tmp/nvme
echo "IOLAB-NVME-EXIT $?"
echo IOLAB-NVME-BEGIN; cat /tmp/nvme/results.json; echo IOLAB-NVME-END
left IOLAB-NVME-LEFT
"#;

/// The jobs (4 points through the engine on /dev/nvmeXnY) and the
/// database (fillseq and readrandomwriterandom on ext4 on it) of kernel
/// path `label`, and its description in `extra.remote.KEY`.
fn kernel_path(r: &serde_json::Value, label: &str, key: &str) {
    let points = r["points"].as_array().unwrap();
    let of = |db: bool| -> Vec<&serde_json::Value> {
        points
            .iter()
            .filter(|p| p["params"]["transport"] == label && (p["params"]["role"] == "db") == db)
            .collect()
    };
    let jobs = of(false);
    assert_eq!(jobs.len(), 4, "{label}: {}", r["warnings"]);
    for p in &jobs {
        assert!(p["total"]["iops"].as_f64().unwrap() > 0.0, "{p}");
        assert_eq!(p["job"]["engine"], "io_uring");
    }
    assert_eq!(
        of(true).len(),
        2,
        "{label}: fillseq and readrandomwriterandom: {}",
        r["warnings"]
    );
    let volume = &r["extra"]["remote"]["db"]["volumes"][label];
    assert!(
        volume.as_str().is_some_and(|v| v.contains("/dev/nvme")),
        "{volume}"
    );
    let path = &r["extra"]["remote"][key];
    assert!(
        path.as_str().is_some_and(|s| s.contains("/dev/nvme")),
        "{path}"
    );
}

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
    let sum = common::stamped_sum(b);
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
fn the_kernel_path_runs_and_leaves_nothing() {
    if let Some(why) = vm::unavailable() {
        eprintln!("SKIP: {why}");
        return;
    }
    let console = vm::run_script(
        SCRIPT,
        &["mkfs.ext4", "ip", "rdma"],
        Duration::from_secs(400),
    );
    assert_eq!(field(&console, "IOLAB-EXIT"), "IOLAB-EXIT 0", "{console}");
    let json = vm::between(&console, "IOLAB-RESULTS-BEGIN", "IOLAB-RESULTS-END")
        .unwrap_or_else(|| panic!("{console}"));
    let r: serde_json::Value = serde_json::from_str(json).unwrap();
    kernel_path(&r, "nvme-tcp-kernel", "nvme_tcp_kernel");
    // The breakdown by layer, traced (block, nvme and nvmet tracepoints).
    assert!(
        !r["warnings"].to_string().contains("unstamped"),
        "{}",
        r["warnings"]
    );
    traced(&r, "nvme-rdma-kernel", "kernel-rdma");
    traced(&r, "nvme-tcp-kernel", "kernel-tcp");
    let das = &r["extra"]["remote"]["breakdown"]["das"];
    assert!(das["device_ns"].as_f64().unwrap_or(0.0) > 0.0, "{das}");
    assert!(das.get("path").is_none(), "{das}");
    // Over RDMA: soft-RoCE on iolab's own veth, said to be no NIC's numbers.
    kernel_path(&r, "nvme-rdma-kernel", "nvme_rdma_kernel");
    let rdma = r["extra"]["remote"]["nvme_rdma_kernel"].as_str().unwrap();
    assert!(rdma.contains("soft-RoCE iorxe"), "{rdma}");
    let soft = r["extra"]["remote"]["soft_rdma"]
        .as_str()
        .unwrap_or_default();
    assert!(soft.contains("software RDMA"), "{}", r["extra"]["remote"]);
    assert!(
        r["warnings"].to_string().contains("software RDMA"),
        "{}",
        r["warnings"]
    );
    let empty = "rdma=[ ] subsystems=[] ports=[] controllers=[]";
    assert!(field(&console, "IOLAB-LEFT").ends_with(empty), "{console}");
    assert!(
        !field(&console, "IOLAB-KILLED").ends_with(empty),
        "the killed run had nothing set up: {console}"
    );
    assert!(field(&console, "IOLAB-SWEPT").ends_with(empty), "{console}");
    assert!(
        console.contains("removed nvmet subsystem")
            && console.contains("removed NVMe-oF controller")
            && console.contains("removed soft-RoCE link"),
        "{console}"
    );
    database_on(
        &console,
        "NBD",
        "nbd-iolab",
        "/dev/nbd",
        "the kernel's NBD client",
    );
    assert_eq!(
        field(&console, "IOLAB-NBD-LEFT"),
        "IOLAB-NBD-LEFT []",
        "{console}"
    );
    database_on(
        &console,
        "NVME",
        "nvme-tcp-iolab",
        "/dev/nvme",
        "the kernel's NVMe/TCP initiator",
    );
    assert!(
        field(&console, "IOLAB-NVME-LEFT").ends_with("controllers=[]"),
        "{console}"
    );
}

/// The run tagged `tag` put transport `label`'s database (fillseq and
/// readrandomwriterandom) on a `device` through `client`.
fn database_on(console: &str, tag: &str, label: &str, device: &str, client: &str) {
    let r = vm::tagged_results(console, tag);
    let db = &r["extra"]["remote"]["db"];
    let volume = db["volumes"][label].as_str().unwrap_or_default();
    assert!(
        volume.contains(device) && volume.contains(client),
        "{label}: {db} {}",
        r["warnings"]
    );
    let n = r["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["params"]["transport"] == label && p["params"]["role"] == "db")
        .count();
    assert_eq!(n, 2, "{label}: {}", r["warnings"]);
}
