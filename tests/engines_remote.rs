//! Remote targets on the command line: the three URL forms are understood,
//! a bad URL is refused naming `--target` (exit 2); iolab has no NVMe/TCP
//! initiator yet, so running on such a target is refused with exit 2 saying
//! so, and an NBD server that is not there is refused the same way, before
//! anything is measured (tests/engines_nbd.rs and tests/engines_iscsi.rs
//! run real servers).

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
fn remote_targets_have_no_initiator_yet() {
    // iscsi:// has the iscsi engine now (tests/engines_iscsi.rs).
    let url = "nvme-tcp://127.0.0.1:4420/nqn.2025-01.lab:sub?nsid=1";
    let o = device_on(url);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{url}: {t}");
    assert!(t.contains("--target"), "{url}: {t}");
    assert!(t.contains("no nvme-tcp initiator yet"), "{url}: {t}");
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
