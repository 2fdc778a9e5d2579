mod common;
use common::vm;
use std::time::Duration;
const SCRIPT: &str = r#"
cd /tmp
export PATH=/usr/bin:$PATH
R="--loopback --size 64m --mixes 100 --qd 1,8 --rates none --breakdown 300 --ramp 0 --runtime 2s"
/iolab remote -t /tmp $R --transports das,nvme-tcp,nvme-tcp-kernel,nvme-rdma,nvme-rdma-kernel -o /tmp/rr > /tmp/log 2>&1
echo "IOLAB-EXIT $?"
cat /tmp/log
echo FIG-BEGIN
cat /tmp/rr/results.json
echo FIG-END
"#;
const RDMA_FILES: [&str; 4] = [
    "/usr/lib/x86_64-linux-gnu/libibverbs.so.1",
    "/usr/lib/x86_64-linux-gnu/librdmacm.so.1",
    "/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so",
    "/etc/libibverbs.d/rxe.driver",
];
#[test]
fn figures() {
    let console = vm::run_script_carrying(
        SCRIPT,
        &["rdma", "ip"],
        &RDMA_FILES,
        Duration::from_secs(400),
        &[],
    );
    let json = vm::between(&console, "FIG-BEGIN", "FIG-END").unwrap_or_else(|| panic!("{console}"));
    std::fs::write("/tmp/rdma-figures.json", json).unwrap();
    println!(
        "{}",
        vm::between(&console, "IOLAB-EXIT", "FIG-BEGIN").unwrap_or("")
    );
}
