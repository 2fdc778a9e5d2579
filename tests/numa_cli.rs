//! NUMA placement through the real binary: `--numa-node` and `--mem-node`
//! refuse nodes that do not exist, `--sweep placement` refuses a machine
//! with one node, and a run records the nodes in provenance and each
//! worker's CPU and memory node in its point.

mod common;
use common::{iolab, results, text, workdir};

/// The NUMA nodes this machine shows.
fn node_count() -> usize {
    std::fs::read_dir("/sys/devices/system/node")
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    let n = e.file_name();
                    let n = n.to_string_lossy();
                    n.strip_prefix("node")
                        .is_some_and(|r| r.parse::<u32>().is_ok())
                })
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn a_node_that_does_not_exist_exits_2_naming_the_flag_and_the_nodes() {
    for flag in ["--numa-node", "--mem-node"] {
        let o = iolab(&["device", "--dry-run", flag, "4000"]);
        assert_eq!(o.status.code(), Some(2), "{flag}: {}", text(&o));
        let t = text(&o);
        assert!(t.contains(flag), "{flag}: {t}");
        assert!(t.contains("node 4000 does not exist"), "{flag}: {t}");
        assert!(t.contains("NUMA node"), "says which nodes exist: {t}");
        assert!(!t.contains("panicked"), "{t}");
    }
    for (args, flag) in [
        (&["--numa-node", "x"][..], "--numa-node"),
        (&["--mem-node", "-1"][..], "--mem-node"),
        (&["--numa-node", "0", "--cpus", "0"][..], "--numa-node"),
        (&["--sweep", "sideways"][..], "--sweep"),
    ] {
        let mut all = vec!["device", "--dry-run"];
        all.extend_from_slice(args);
        let o = iolab(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(flag), "{args:?}: {}", text(&o));
    }
}

#[test]
fn the_placement_sweep_on_one_node_exits_2_saying_so() {
    if node_count() != 1 {
        eprintln!(
            "SKIP: this machine has {} NUMA nodes, not one",
            node_count()
        );
        return;
    }
    let dir = workdir();
    let d = dir.path().to_str().unwrap();
    let o = iolab(&[
        "device",
        "--target",
        d,
        "--size",
        "1m",
        "--sweep",
        "placement",
        "--dry-run",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("--sweep"), "{t}");
    assert!(t.contains("this machine has one NUMA node"), "{t}");
}

#[test]
fn a_run_records_the_nodes_and_where_each_worker_ran() {
    if node_count() == 0 {
        eprintln!("SKIP: the kernel shows no NUMA nodes");
        return;
    }
    let dir = workdir();
    let d = dir.path().to_str().unwrap();
    let json = dir.path().join("r.json");
    let o = iolab(&[
        "device",
        "--target",
        d,
        "--size",
        "4m",
        "--jobs",
        "2",
        "--io-count",
        "200",
        "--numa-node",
        "0",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let r = results(&json);
    let numa = &r["provenance"]["numa"];
    let nodes = numa["nodes"].as_array().expect("nodes");
    assert_eq!(nodes[0]["node"], 0, "{numa}");
    assert!(
        nodes[0]["cpus"].as_str().is_some_and(|c| !c.is_empty()),
        "{numa}"
    );
    assert!(nodes[0]["memory_bytes"].as_u64().unwrap() > 0, "{numa}");
    let workers = r["points"][0]["extra"]["placement"]["workers"]
        .as_array()
        .expect("the per-worker placement")
        .clone();
    assert_eq!(workers.len(), 2, "{workers:?}");
    for w in &workers {
        assert_eq!(w["cpu_node"], 0, "{w}");
        assert_eq!(w["mem_node"], 0, "{w}");
    }
    assert_eq!(r["points"][0]["job"]["numa_node"], 0);
}
