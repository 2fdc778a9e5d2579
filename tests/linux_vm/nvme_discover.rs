//! nvme-cli's `nvme discover` and `nvme connect` against iolab's NVMe/TCP
//! target (issue 31, item 14): `iolab serve --protocol nvme-tcp` runs
//! inside Debian's Linux under qemu (`scripts/linux-vm.sh exec`, the
//! kernel has nvme-fabrics and nvme-tcp), nvme-cli on the same guest
//! reads the discovery log of its discovery controller through the
//! kernel, then connects to the subsystem it lists and reads its
//! namespace. Functional only (emulated CPU): no timings.

use crate::common;

use std::time::Duration;

use common::vm::{self, field};

const SCRIPT: &str = r#"
cd /tmp
HOST=nqn.2014-08.org.nvmexpress:uuid:00000000-0000-4000-8000-000000000031
/iolab serve -t /tmp --size 16m --protocol nvme-tcp --listen 127.0.0.1:4420 --time-limit 200s -q > /tmp/serve.out 2>&1 &
i=0; while ! grep -q serving /tmp/serve.out && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
cat /tmp/serve.out
echo IOLAB-DISCOVER-BEGIN
nvme discover -t tcp -a 127.0.0.1 -s 4420 -q $HOST 2>&1
echo "IOLAB-DISCOVER-EXIT $?"
echo IOLAB-DISCOVER-END
nvme connect -t tcp -a 127.0.0.1 -s 4420 -n nqn.2025-11.io.iolab:target -q $HOST 2>&1
echo "IOLAB-CONNECT-EXIT $?"
i=0; while [ ! -b /dev/nvme0n1 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
echo "IOLAB-SIZE $(cat /sys/block/nvme0n1/size 2>/dev/null)"
nvme disconnect -n nqn.2025-11.io.iolab:target 2>&1
echo "IOLAB-LEFT [$(ls /sys/class/nvme)]"
"#;

#[test]
fn nvme_discover_lists_iolabs_subsystem_and_nvme_connect_attaches_it() {
    if let Some(why) = vm::unavailable() {
        eprintln!("SKIP: {why}");
        return;
    }
    if !common::have("nvme") {
        eprintln!("SKIP: nvme-cli is not installed (scripts/install-deps.sh installs it)");
        return;
    }
    let console = vm::run_script(SCRIPT, &["nvme"], Duration::from_secs(300));
    let log = vm::between(&console, "IOLAB-DISCOVER-BEGIN", "IOLAB-DISCOVER-END")
        .unwrap_or_else(|| panic!("{console}"));
    eprintln!("nvme discover in the guest:{log}");
    assert_eq!(
        field(&console, "IOLAB-DISCOVER-EXIT"),
        "IOLAB-DISCOVER-EXIT 0",
        "{console}"
    );
    // nvme-cli's words for the one entry.
    for want in [
        "Discovery Log Number of Records 1",
        "trtype:  tcp",
        "adrfam:  ipv4",
        "subtype: nvme subsystem",
        "trsvcid: 4420",
        "subnqn:  nqn.2025-11.io.iolab:target",
        "traddr:  127.0.0.1",
    ] {
        assert!(log.contains(want), "{want:?} not in:\n{log}");
    }
    assert_eq!(
        field(&console, "IOLAB-CONNECT-EXIT"),
        "IOLAB-CONNECT-EXIT 0",
        "{console}"
    );
    // 16 MiB in 512-byte sectors.
    assert_eq!(
        field(&console, "IOLAB-SIZE"),
        "IOLAB-SIZE 32768",
        "{console}"
    );
    assert_eq!(field(&console, "IOLAB-LEFT"), "IOLAB-LEFT []", "{console}");
}
