//! Remote targets on the command line: the three URL forms are understood,
//! a bad URL is refused naming `--target` (exit 2), and an NVMe/TCP
//! controller that is not there is refused the same way, before anything is
//! measured (tests/engines_nbd.rs, tests/engines_iscsi.rs and
//! tests/linux_vm/nvmet_tcp.rs run real servers).

mod common;
use common::{iolab, text};

fn device_on(target: &str) -> std::process::Output {
    iolab(&[
        "device",
        "--target",
        target,
        "--size",
        "1m",
        "--io-count",
        "10",
        "--quiet",
    ])
}

#[test]
fn an_absent_nvme_controller_is_refused_before_the_run() {
    let port = common::free_port();
    let url = format!("nvme-tcp://127.0.0.1:{port}/nqn.2025-01.lab:sub?nsid=1");
    let o = device_on(&url);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{url}: {t}");
    assert!(t.contains("--target"), "{url}: {t}");
    assert!(t.contains("Connection refused"), "{url}: {t}");
}

#[test]
fn bad_remote_urls_are_usage_errors() {
    for url in [
        "nbd://127.0.0.1:notaport/x",
        "iscsi://127.0.0.1:3260/iqn.only",
        "nvme-tcp://127.0.0.1:4420/nqn.x?nsid=zero",
        "smb://server/share",
    ] {
        let o = device_on(url);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{url}: {t}");
        assert!(t.contains("--target"), "{url}: {t}");
        assert!(!t.contains("panicked"), "{url}: {t}");
    }
}
