//! NVMe over RDMA inside Debian's kernel under qemu, on a soft-RoCE device
//! on the guest's interface. First iolab's initiator (`nvme-rdma://`)
//! against Linux's nvmet-rdma: a write pass, verified random reads and
//! writes at depth 8 on two associations with flushes, 64 KiB reads, a 1 s
//! keep-alive timeout over 2.5 s idle gaps. Then iolab's NVMe target over
//! RDMA (`iolab serve --protocol nvme-rdma`): iolab's own initiator (`nvme-rdma://`) writes, then
//! reads and writes verified at depth 8 on two associations with flushes,
//! and 64 KiB reads, and a target holding its completions 10 s ends the
//! requests at the engine's 1 s I/O timeout; Linux's nvme-rdma initiator connects to it
//! (/dev/nvme-fabrics), and iolab runs verified random reads and writes
//! on the /dev/nvmeXnY it makes; the target stops on SIGINT (130) with
//! every association's stamps written; and `iolab remote --transports
//! das,nvme-rdma` runs the jobs and the breakdown over it on a soft-RoCE
//! link of its own. On this machine (no RDMA device)
//! `serve --protocol nvme-rdma` says so and exits 2. Functional only
//! (emulated CPU): no timings.

use crate::common;

use std::time::Duration;

use common::vm::{self, field};

const NQN: &str = "nqn.2025-11.io.iolab:rdma-target";
/// The subsystem Linux's nvmet-rdma serves to iolab's initiator.
const KERNEL_NQN: &str = "nqn.2025-11.io.iolab:rdma";

const SCRIPT: &str = r#"
cd /tmp
export PATH=/usr/bin:$PATH
rdma link add rxe0 type rxe netdev eth0 || echo "IOLAB-FAIL rxe"
dd if=/dev/zero of=/tmp/kdisk bs=1M count=64 2>/dev/null
S=/sys/kernel/config/nvmet/subsystems/KNQN
P=/sys/kernel/config/nvmet/ports/1
mkdir $S; echo 1 > $S/attr_allow_any_host; mkdir $S/namespaces/1
echo -n /tmp/kdisk > $S/namespaces/1/device_path; echo 1 > $S/namespaces/1/buffered_io
echo 1 > $S/namespaces/1/enable
mkdir $P; echo rdma > $P/addr_trtype; echo ipv4 > $P/addr_adrfam
echo 10.0.2.15 > $P/addr_traddr; echo 4420 > $P/addr_trsvcid
ln -s $S $P/subsystems/KNQN || echo "IOLAB-FAIL port"
U=nvme-rdma://10.0.2.15:4420/KNQN
C="--size 8m --qd 8 --fsync-every 50 --verify --overwrite --quiet"
/iolab device --target $U $C --rw write --bs 4k --io-count 2048 -o /tmp/kw.json
echo "IOLAB-NVMET-W-EXIT $?"
/iolab device --target $U $C --rw randrw --bs 4k --jobs 2 --io-count 1500 -o /tmp/krw.json
echo "IOLAB-NVMET-RW-EXIT $?"
echo IOLAB-NVMET-RW-BEGIN; cat /tmp/krw.json; echo IOLAB-NVMET-RW-END
/iolab device --target $U --size 8m --rw randread --bs 64k --qd 4 --runtime 300ms --quiet -o /tmp/kbig.json
echo "IOLAB-NVMET-BIG-EXIT $?"
/iolab device --target "$U?keep_alive_tmo=1" --size 8m --rw randread --qd 1 --io-count 3 --thinktime 2500ms --quiet -o /tmp/kka.json
echo "IOLAB-NVMET-KA-EXIT $?"
echo "IOLAB-NVMET-CTRLS [$(ls /sys/kernel/config/nvmet/subsystems/KNQN/allowed_hosts) $(dmesg | grep -c 'creating nvm controller')]"
A=10.0.2.15
/iolab serve -t /tmp --size 64m --protocol nvme-rdma --listen $A:4430 --allow-remote --nqn NQN --stamps /tmp/stamps.txt > /tmp/serve.out 2> /tmp/serve.err &
spid=$!
i=0; while ! grep -q serving /tmp/serve.out && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
echo "IOLAB-SERVING $(cat /tmp/serve.out)"
U=nvme-rdma://$A:4430/NQN
C="--size 8m --qd 8 --fsync-every 50 --verify --overwrite --quiet"
/iolab device --target $U $C --rw write --bs 4k --io-count 2048 -o /tmp/w.json
echo "IOLAB-W-EXIT $?"
/iolab device --target $U $C --rw randrw --bs 4k --jobs 2 --io-count 1500 -o /tmp/rw.json
echo "IOLAB-RW-EXIT $?"
echo IOLAB-RW-BEGIN; cat /tmp/rw.json; echo IOLAB-RW-END
/iolab device --target $U --size 8m --rw randread --bs 64k --qd 4 --runtime 300ms --quiet -o /tmp/big.json
echo "IOLAB-BIG-EXIT $?"
/iolab serve -t /tmp --size 16m --protocol nvme-rdma --listen $A:4431 --allow-remote --nqn NQN --fabric-delay 10s > /tmp/slow.out 2>&1 &
slow=$!
i=0; while ! grep -q serving /tmp/slow.out && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
/iolab device --target nvme-rdma://$A:4431/NQN --size 8m --rw randread --qd 2 --io-count 4 --io-timeout 1s --quiet -o /tmp/slow.json 2> /tmp/slow.err
echo "IOLAB-SLOW-EXIT $?"
echo "IOLAB-SLOW-ERR $(tr '\n' ' ' < /tmp/slow.err)"
kill -INT $slow
echo "transport=rdma,traddr=$A,trsvcid=4430,nqn=NQN" > /dev/nvme-fabrics || echo "IOLAB-FAIL connect"
i=0; while [ ! -b /dev/nvme0n1 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
/iolab device --target /dev/nvme0n1 --destroy-data /dev/nvme0n1 --size 8m --qd 8 --verify --rw randrw --bs 4k --jobs 2 --io-count 1500 --quiet -o /tmp/k.json
echo "IOLAB-K-EXIT $?"
echo IOLAB-K-BEGIN; cat /tmp/k.json; echo IOLAB-K-END
dd if=/dev/nvme0n1 of=/dev/null bs=128k count=16 iflag=direct 2>/dev/null
echo "IOLAB-DD-EXIT $?"
echo 1 > /sys/class/nvme/nvme0/delete_controller
kill -INT $spid; wait $spid
echo "IOLAB-SERVE-EXIT $?"
echo "IOLAB-STAMPS [$(cat /tmp/stamps.txt | wc -l)]"
cat /tmp/serve.err
R="--size 64m --mixes 100,0 --qd 1,4 --rates none --breakdown 200 --ramp 0 --runtime 300ms --quiet"
/iolab remote -t /tmp $R --transports das,nvme-rdma -o /tmp/rr 2> /tmp/rr.err
echo "IOLAB-REMOTE-EXIT $?"; cat /tmp/rr.err
echo IOLAB-REMOTE-BEGIN; cat /tmp/rr/results.json; echo IOLAB-REMOTE-END
i=0; while ls /sys/class/net | grep -q iorx && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
echo "IOLAB-REMOTE-LEFT [$(ls /sys/class/infiniband | grep iorx) $(ls /sys/class/net | grep iorx)]"
"#;

/// rdma-core's libraries and the soft-RoCE provider (opened with dlopen).
const RDMA_FILES: [&str; 4] = [
    "/usr/lib/x86_64-linux-gnu/libibverbs.so.1",
    "/usr/lib/x86_64-linux-gnu/librdmacm.so.1",
    "/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so",
    "/etc/libibverbs.d/rxe.driver",
];

fn verified(console: &str, begin: &str, end: &str, engine: &str) {
    let json = vm::between(console, begin, end).unwrap_or_else(|| panic!("{console}"));
    let r: serde_json::Value = serde_json::from_str(json).unwrap();
    let p = &r["points"][0];
    assert_eq!(p["job"]["engine"], engine);
    assert_eq!(p["verify"]["mismatches"], 0, "{}", p["verify"]);
    assert!(
        p["verify"]["blocks_checked"].as_u64().unwrap() > 100,
        "{}",
        p["verify"]
    );
}

#[test]
fn iolabs_rdma_target_serves_iolab_and_linux_nvme_rdma() {
    if let Some(why) = vm::unavailable() {
        eprintln!("SKIP: {why}");
        return;
    }
    if let Some(f) = RDMA_FILES
        .iter()
        .find(|f| !std::path::Path::new(f).exists())
    {
        eprintln!("SKIP: {f} is missing (scripts/install-deps.sh installs rdma-core)");
        return;
    }
    let script = SCRIPT.replace("KNQN", KERNEL_NQN).replace("NQN", NQN);
    let console = vm::run_script_carrying(
        &script,
        &["rdma", "ip"],
        &RDMA_FILES,
        Duration::from_secs(300),
        &[],
    );
    assert!(!console.contains("IOLAB-FAIL"), "{console}");
    initiator_against_nvmet(&console);
    assert!(
        field(&console, "IOLAB-SERVING").contains(&format!("nvme-rdma://10.0.2.15:4430/{NQN}")),
        "{console}"
    );
    for (key, want) in [
        ("IOLAB-W-EXIT", "0"),
        ("IOLAB-RW-EXIT", "0"),
        ("IOLAB-BIG-EXIT", "0"),
        ("IOLAB-K-EXIT", "0"),
        ("IOLAB-DD-EXIT", "0"),
        ("IOLAB-SERVE-EXIT", "130"),
    ] {
        assert_eq!(field(&console, key), format!("{key} {want}"), "{console}");
    }
    // A target that holds every completion 10 s: the requests fail at
    // the engine's 1 s I/O timeout, said.
    assert_eq!(
        field(&console, "IOLAB-SLOW-EXIT"),
        "IOLAB-SLOW-EXIT 1",
        "{console}"
    );
    assert!(
        field(&console, "IOLAB-SLOW-ERR").contains("--io-timeout"),
        "{console}"
    );
    verified(&console, "IOLAB-RW-BEGIN", "IOLAB-RW-END", "nvme-rdma");
    verified(&console, "IOLAB-K-BEGIN", "IOLAB-K-END", "io_uring");
    remote_over_rdma(&console);
    let stamps = field(&console, "IOLAB-STAMPS");
    let n: u64 = stamps
        .trim_start_matches("IOLAB-STAMPS [")
        .trim_end_matches(']')
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{console}"));
    assert!(n > 1000, "{console}");
}

/// iolab's initiator against Linux's nvmet-rdma (in the same guest, before
/// iolab's target): a write pass, verified random reads and writes at depth
/// 8 on two associations with flushes, 64 KiB reads, and a 1 s keep-alive
/// timeout over 2.5 s idle gaps.
fn initiator_against_nvmet(console: &str) {
    assert_eq!(
        field(console, "IOLAB-NVMET-W-EXIT"),
        "IOLAB-NVMET-W-EXIT 0",
        "{console}"
    );
    let r = vm::tagged_results(console, "NVMET-RW");
    let p = &r["points"][0];
    assert_eq!(p["job"]["engine"], "nvme-rdma");
    assert_eq!(p["verify"]["mismatches"], 0, "{}", p["verify"]);
    assert!(
        p["verify"]["blocks_checked"].as_u64().unwrap() > 100,
        "{}",
        p["verify"]
    );
    let export = r["provenance"]["target"].to_string();
    assert!(export.contains("over RDMA"), "{export}");
    assert_eq!(
        field(console, "IOLAB-NVMET-BIG-EXIT"),
        "IOLAB-NVMET-BIG-EXIT 0",
        "{console}"
    );
    // A 1 s keep-alive timeout over idle gaps of 2.5 s: the admin queue's
    // thread keeps the association (without it nvmet's timer expires and
    // the next read waits out --io-timeout: seen, exit 1).
    assert_eq!(
        field(console, "IOLAB-NVMET-KA-EXIT"),
        "IOLAB-NVMET-KA-EXIT 0",
        "{console}"
    );
}

/// `iolab remote --transports das,nvme-rdma` (iolab's target and engine
/// over a soft-RoCE link it makes, in the initial namespace beside the
/// topology's): the jobs ran, the breakdown names the RDMA stages with
/// every one measured and summing to the latency, the results say the
/// link is software, and the link is gone after.
fn remote_over_rdma(console: &str) {
    let r = vm::tagged_results(console, "REMOTE");
    let points = r["points"].as_array().unwrap();
    let over = |label: &str| {
        points
            .iter()
            .filter(|p| {
                p["params"]["transport"] == label && p["total"]["iops"].as_f64() > Some(0.0)
            })
            .count()
    };
    assert_eq!(over("nvme-rdma-iolab"), 4, "{}", r["warnings"]);
    assert!(over("das") >= 4, "{}", r["warnings"]);
    let b = &r["extra"]["remote"]["breakdown"]["nvme-rdma-iolab"];
    assert_eq!(
        b["path"], "iolab-rdma",
        "{} {}",
        r["warnings"], r["extra"]["remote"]
    );
    let stage = |k: &str| b[k].as_f64().unwrap_or(0.0);
    for k in common::STAMPED_STAGES {
        assert!(stage(k) > 0.0, "{k}: {b}");
    }
    let sum = common::stamped_sum(b);
    assert!(
        (sum - stage("latency_ns")).abs() <= 0.01 * stage("latency_ns"),
        "{b}"
    );
    let soft = r["extra"]["remote"]["soft_rdma"]
        .as_str()
        .unwrap_or_default();
    assert!(soft.contains("software RDMA"), "{}", r["extra"]["remote"]);
    assert_eq!(
        field(console, "IOLAB-REMOTE-LEFT"),
        "IOLAB-REMOTE-LEFT [ ]",
        "{console}"
    );
}

/// Here, with no RDMA device: `serve --protocol nvme-rdma` names the
/// flag and what is missing, exit 2, before anything is laid out.
#[test]
fn without_an_rdma_device_serve_says_so() {
    let Some(why) = iolab::native::verbs::unavailable() else {
        eprintln!("SKIP: this machine has an RDMA device");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let o = common::iolab(&[
        "serve",
        "-t",
        dir.path().to_str().unwrap(),
        "--protocol",
        "nvme-rdma",
        "--time-limit",
        "1s",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", common::text(&o));
    let t = common::text(&o);
    assert!(t.contains("--protocol") && t.contains(&why), "{t}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "{t}");
}
