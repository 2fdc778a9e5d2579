//! NUMA placement on two nodes: Debian's Linux under qemu with two
//! emulated NUMA nodes (one CPU and 768 MiB each, `scripts/linux-vm.sh
//! exec` with `SMP` and `QEMU_EXTRA`), iolab inside: `--numa-node 1
//! --mem-node 0` runs its worker on node 1's CPU with its buffers on node
//! 0, `--sweep placement` runs each job on node 0 and on node 1 and
//! reports the off/on ratios, and both carry the warning that emulated
//! nodes cannot show a real penalty. One boot. Functional only (emulated
//! CPU): no timings.

use crate::common;

use std::time::Duration;

use common::vm::{self, field};

const SCRIPT: &str = r#"
cd /tmp
echo "IOLAB-NODES $(ls -d /sys/devices/system/node/node* | tr '\n' ' ')"
R="--target /tmp --size 16m --runtime 300ms --engine psync --buffered"
/iolab device $R --jobs 2 --numa-node 1 --mem-node 0 --quiet --json /tmp/a.json
echo "IOLAB-A-EXIT $?"
echo IOLAB-A-BEGIN; cat /tmp/a.json; echo IOLAB-A-END
/iolab device $R --sweep placement --json /tmp/b.json > /tmp/b.out 2>&1
echo "IOLAB-B-EXIT $?"
grep '^placement \[' /tmp/b.out
echo IOLAB-B-BEGIN; cat /tmp/b.json; echo IOLAB-B-END
"#;

const NUMA: &str = "-numa node,nodeid=0,cpus=0,memdev=m0 -numa node,nodeid=1,cpus=1,memdev=m1 \
     -object memory-backend-ram,id=m0,size=768M -object memory-backend-ram,id=m1,size=768M";

/// The warning and `extra.numa_emulated` of a run on emulated nodes.
fn says_emulated(r: &serde_json::Value) {
    let warned = r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap_or("").contains("not a real NUMA penalty"));
    assert!(warned, "{}", r["warnings"]);
    let extra = r["extra"]["numa_emulated"].as_str().unwrap_or_default();
    assert!(extra.contains("not a real NUMA penalty"), "{}", r["extra"]);
}

#[test]
fn workers_and_memory_go_to_the_nodes_asked_and_the_sweep_compares_them() {
    if let Some(why) = vm::unavailable() {
        eprintln!("SKIP: {why}");
        return;
    }
    let env = [("SMP", "2"), ("QEMU_EXTRA", NUMA)];
    let console = vm::run_script_with(SCRIPT, &[], Duration::from_secs(240), &env);
    assert!(
        field(&console, "IOLAB-NODES").contains("node1"),
        "the guest has two nodes: {console}"
    );

    let a = vm::tagged_results(&console, "A");
    let nodes = a["provenance"]["numa"]["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 2, "{}", a["provenance"]["numa"]);
    assert_eq!(nodes[1]["cpus"], "1");
    let workers = a["points"][0]["extra"]["placement"]["workers"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", a["points"][0]["extra"]));
    assert_eq!(workers.len(), 2);
    for w in workers {
        assert_eq!(w["cpu"], 1, "node 1's CPU: {w}");
        assert_eq!(w["cpu_node"], 1, "{w}");
        assert_eq!(w["mem_node"], 0, "--mem-node 0: {w}");
    }
    says_emulated(&a);

    let b = vm::tagged_results(&console, "B");
    let points = b["points"].as_array().unwrap();
    assert_eq!(points.len(), 2, "{}", b["warnings"]);
    for (p, side, node) in [(&points[0], "on-node", 0), (&points[1], "off-node", 1)] {
        assert_eq!(p["params"]["placement"], side, "{}", p["params"]);
        for w in p["extra"]["placement"]["workers"].as_array().unwrap() {
            assert_eq!(w["cpu_node"], node, "{side}: {w}");
            assert_eq!(w["mem_node"], node, "{side}: {w}");
        }
    }
    let penalty = &b["analysis"]["placement"][0];
    assert_eq!(
        (&penalty["on_node"], &penalty["off_node"]),
        (&0.into(), &1.into())
    );
    assert!(penalty["iops_off_over_on"].as_f64().is_some(), "{penalty}");
    assert!(
        field(&console, "placement [").contains("off-node (node 1) / on-node (node 0)"),
        "{console}"
    );
    says_emulated(&b);
}

/// The figures for docs/benchmarks.md (not a check): in the two-node
/// guest, buffered 4 KiB reads of a tmpfs file (its pages on node 0) with
/// the worker and its buffers on node 0, the worker on node 0 and its
/// buffers on node 1, and the placement sweep, three rounds interleaved.
/// `cargo test --test linux_vm -- --ignored --nocapture numa::`.
#[test]
#[ignore]
fn measure_placement_in_the_guest() {
    if let Some(why) = vm::unavailable() {
        eprintln!("SKIP: {why}");
        return;
    }
    let script = r#"
cd /tmp
R="--target /tmp --size 64m --runtime 2s --ramp 0 --engine psync --buffered --rw randread --quiet"
for round in 1 2 3; do
  for m in 0 1; do
    /iolab device $R --numa-node 0 --mem-node $m --json /tmp/m$m.json
    echo "IOLAB-ROUND $round mem-node $m $(grep -o '"iops": *[0-9.]*' /tmp/m$m.json | head -1)"
  done
  /iolab device ${R% --quiet} --sweep placement --json /tmp/s.json > /tmp/s.out 2>&1
  echo "IOLAB-ROUND $round $(grep '^placement \[' /tmp/s.out)"
done
"#;
    let env = [("SMP", "2"), ("QEMU_EXTRA", NUMA)];
    let console = vm::run_script_with(script, &[], Duration::from_secs(400), &env);
    for l in console.lines().filter(|l| l.contains("IOLAB-ROUND")) {
        println!("{l}");
    }
}
