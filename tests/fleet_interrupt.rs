//! Ctrl-C on the control side during a pass (a process of its own: the
//! stop flag is process-wide): every agent is sent `stop`, each returns
//! its partial point, and nothing is left on the hosts. Needs root, ip
//! netns and sshd (tests/fleet_common); skips saying why otherwise.

mod fleet_common;

use std::time::Duration;

use iolab::fleet::{Fleet, JobTarget};
use iolab::plan::engines::EngineKind;
use iolab::plan::job::{JobSpec, StopCondition};

#[test]
fn a_stop_during_a_pass_ends_every_agent_with_its_partial_point() {
    let Some(lab) = fleet_common::lab(2, &[]) else {
        return;
    };
    let mut fleet = Fleet::connect(&lab.specs(), &lab.options()).unwrap();
    let job = JobSpec {
        engine: EngineKind::Null,
        stop: StopCondition {
            runtime_ns: Some(300_000_000_000),
            io_count: None,
            io_bytes: None,
        },
        ..JobSpec::default()
    };
    let stopper = std::thread::spawn(|| {
        std::thread::sleep(Duration::from_secs(2));
        iolab::interrupt::request_stop();
    });
    let target = JobTarget {
        dir: None,
        size: None,
        overwrite: false,
        ..JobTarget::default()
    };
    let pass = fleet.run_pass(&job, &target).unwrap();
    stopper.join().unwrap();
    fleet.close();
    assert_eq!(pass.per_host.len(), 2);
    for h in &pass.per_host {
        assert!(
            h.warnings
                .iter()
                .any(|w| w.contains("stopped before its end")),
            "{h:?}"
        );
        assert!(h.ops > 0, "{h:?}");
    }
    let left = lab.wait_quiet(Duration::from_secs(15));
    assert!(left.is_empty(), "{left:?}");
}
