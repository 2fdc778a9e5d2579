//! iolab's NVMe over RDMA initiator (`nvme-rdma://`, rdma-core's verbs
//! through dlopen) on this machine, which has no RDMA device: the engine
//! says so and exits. Against Linux's nvmet-rdma and iolab's own target,
//! inside Debian's kernel under qemu with soft-RoCE, it runs in
//! tests/linux_vm/nvme_rdma_target.rs (one guest for both).

mod common;

const NQN: &str = "nqn.2025-11.io.iolab:rdma";

/// Here, with no RDMA device (and no kernel RDMA at all): the engine says
/// what is missing and the run exits with an error before any I/O.
#[test]
fn without_an_rdma_device_the_engine_says_so() {
    let Some(why) = iolab::native::verbs::unavailable() else {
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
