//! iolab's NVMe over RDMA initiator (`nvme-rdma://`, rdma-core's verbs
//! through dlopen) against Linux's nvmet-rdma, inside Debian's kernel
//! under qemu: a soft-RoCE device on the guest's interface, nvmet serving
//! a 64 MiB file on an RDMA port, then `iolab device` on the URL: a write
//! pass, and random reads and writes verified against it at depth 8 on two
//! associations with flushes. On this machine (no RDMA device) the engine
//! says so and exits. Functional only (emulated CPU): no timings.

mod common;

use std::time::Duration;

use common::vm::{self, field};

const NQN: &str = "nqn.2025-11.io.iolab:rdma";

const SCRIPT: &str = r#"
cd /tmp
export PATH=/usr/bin:$PATH
rdma link add rxe0 type rxe netdev eth0 || echo "IOLAB-FAIL rxe"
dd if=/dev/zero of=/tmp/disk bs=1M count=64 2>/dev/null
S=/sys/kernel/config/nvmet/subsystems/NQN
P=/sys/kernel/config/nvmet/ports/1
mkdir $S; echo 1 > $S/attr_allow_any_host; mkdir $S/namespaces/1
echo -n /tmp/disk > $S/namespaces/1/device_path; echo 1 > $S/namespaces/1/buffered_io
echo 1 > $S/namespaces/1/enable
mkdir $P; echo rdma > $P/addr_trtype; echo ipv4 > $P/addr_adrfam
echo 10.0.2.15 > $P/addr_traddr; echo 4420 > $P/addr_trsvcid
ln -s $S $P/subsystems/NQN || echo "IOLAB-FAIL port"
U=nvme-rdma://10.0.2.15:4420/NQN
C="--size 8m --qd 8 --fsync-every 50 --verify --overwrite --quiet"
/iolab device --target $U $C --rw write --bs 4k --io-count 2048 -o /tmp/w.json
echo "IOLAB-W-EXIT $?"
/iolab device --target $U $C --rw randrw --bs 4k --jobs 2 --io-count 1500 -o /tmp/rw.json
echo "IOLAB-RW-EXIT $?"
echo IOLAB-RW-BEGIN; cat /tmp/rw.json; echo IOLAB-RW-END
/iolab device --target $U --size 8m --rw randread --bs 64k --qd 4 --runtime 300ms --quiet -o /tmp/big.json
echo "IOLAB-BIG-EXIT $?"
/iolab device --target "$U?keep_alive_tmo=1" --size 8m --rw randread --qd 1 --io-count 3 --thinktime 2500ms --quiet -o /tmp/ka.json
echo "IOLAB-KA-EXIT $?"
echo "IOLAB-CTRLS [$(ls /sys/kernel/config/nvmet/subsystems/NQN/allowed_hosts) $(dmesg | grep -c 'creating nvm controller')]"
"#;

/// rdma-core's libraries and the soft-RoCE provider, which iolab opens
/// with dlopen (so `ldd` of the binary does not name them).
const RDMA_FILES: [&str; 4] = [
    "/usr/lib/x86_64-linux-gnu/libibverbs.so.1",
    "/usr/lib/x86_64-linux-gnu/librdmacm.so.1",
    "/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so",
    "/etc/libibverbs.d/rxe.driver",
];

#[test]
fn iolabs_initiator_reads_and_writes_linux_nvmet_rdma() {
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
    let script = SCRIPT.replace("NQN", NQN);
    let console = vm::run_script_carrying(
        &script,
        &["rdma"],
        &RDMA_FILES,
        Duration::from_secs(300),
        &[],
    );
    assert!(!console.contains("IOLAB-FAIL"), "{console}");
    assert_eq!(
        field(&console, "IOLAB-W-EXIT"),
        "IOLAB-W-EXIT 0",
        "{console}"
    );
    assert_eq!(
        field(&console, "IOLAB-RW-EXIT"),
        "IOLAB-RW-EXIT 0",
        "{console}"
    );
    let json = vm::between(&console, "IOLAB-RW-BEGIN", "IOLAB-RW-END")
        .unwrap_or_else(|| panic!("{console}"));
    let r: serde_json::Value = serde_json::from_str(json).unwrap();
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
        field(&console, "IOLAB-BIG-EXIT"),
        "IOLAB-BIG-EXIT 0",
        "{console}"
    );
    // A 1 s keep-alive timeout over idle gaps of 2.5 s: the admin queue's
    // thread keeps the association (without it nvmet's timer expires and
    // the next read waits out --io-timeout: seen, exit 1).
    assert_eq!(
        field(&console, "IOLAB-KA-EXIT"),
        "IOLAB-KA-EXIT 0",
        "{console}"
    );
}

/// Here, with no RDMA device (and no kernel RDMA at all): the engine says
/// what is missing and the run exits with an error before any I/O.
#[test]
fn without_an_rdma_device_the_engine_says_so() {
    let Some(why) = iolab::engine::nvmerdma::verbs::unavailable() else {
        eprintln!("SKIP: this machine has an RDMA device");
        return;
    };
    let o = common::iolab(&[
        "device",
        "--target",
        &format!("nvme-rdma://127.0.0.1:4420/{NQN}"),
        "--rw",
        "randread",
        "--runtime",
        "200ms",
        "--quiet",
    ]);
    assert!(!o.status.success(), "{}", common::text(&o));
    assert!(common::text(&o).contains(&why), "{}", common::text(&o));
}
