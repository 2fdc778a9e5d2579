//! The one observer of a pass: what the verb's terminal observer shows,
//! every line (progress, warnings, status) prefixed with the pass
//! (`LABEL rN: `), and each point the pass measures named, tagged and
//! saved into the campaign's results as it comes (`save`). Workload
//! observers (kv's phases, oltp's users) forward their own events to the
//! inner observer through `inner`.

use std::path::Path;

use super::driver::PassOutcome;
use super::pass::Pass;
use super::sink::PassSink;
use crate::results::Point;
use crate::session::{Observer, Progress};

/// A pass's view of the verb's observer `O`.
pub struct Tagged<'a, O: ?Sized> {
    pub inner: &'a O,
    pub sink: &'a PassSink,
    pub pass: &'a Pass,
}

impl<O: ?Sized> Tagged<'_, O> {
    /// `LABEL rN: WORKLOAD`, the name a point of `workload` gets.
    pub fn name(&self, workload: &str) -> String {
        self.pass.name(workload)
    }

    /// Name `point` after `workload`, tag it with the pass and save it.
    pub fn save(&self, point: &Point, workload: String) {
        let mut p = point.clone();
        p.name = workload;
        self.pass.apply(&mut p);
        self.sink.push(p);
    }
}

/// One pass on directory `dir`: its banner (unless `quiet`), `run` with
/// the tagging observer over `term`, and how it went (`outcome` of what
/// `run` returned; `PassSink::pass_outcome`).
pub fn pass_on_dir<O: ?Sized, T>(
    sink: &PassSink,
    term: &O,
    pass: &Pass,
    (dir, quiet): (&Path, bool),
    run: impl FnOnce(&Tagged<'_, O>) -> anyhow::Result<T>,
    outcome: impl FnOnce(T) -> PassOutcome,
) -> anyhow::Result<PassOutcome> {
    if !quiet {
        println!("{}", pass.banner(dir));
    }
    let observer = Tagged {
        inner: term,
        sink,
        pass,
    };
    let ran = run(&observer);
    sink.pass_outcome(ran, outcome)
}

impl<O: Observer + ?Sized> Observer for Tagged<'_, O> {
    fn progress(&self, p: &Progress<'_>) {
        let label = self.pass.prefixed(p.label);
        self.inner.progress(&Progress {
            label: &label,
            ..*p
        });
    }

    fn progress_done(&self) {
        self.inner.progress_done();
    }

    fn warning(&self, msg: &str) {
        self.inner.warning(&self.pass.prefixed(msg));
    }

    fn status(&self, line: &str) {
        self.inner.status(&self.pass.prefixed(line));
    }

    fn note(&self, msg: &str) {
        self.inner.note(&self.pass.prefixed(msg));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::analysis::AnalysisOptions;
    use crate::results::{Provenance, Results};
    use crate::session::ResultsSink;

    #[derive(Default)]
    struct Lines(Mutex<Vec<String>>);

    impl Observer for Lines {
        fn warning(&self, msg: &str) {
            self.0.lock().unwrap().push(msg.to_string());
        }
        fn status(&self, line: &str) {
            self.0.lock().unwrap().push(line.to_string());
        }
    }

    #[test]
    fn every_line_of_a_pass_is_prefixed_and_its_points_tagged() {
        let sink = PassSink::new(ResultsSink::new(
            Results::new("kv", Provenance::minimal()),
            None,
            AnalysisOptions::default(),
        ));
        let pass = Pass {
            label: "xfs".into(),
            round: 2,
            baseline: "ext4".into(),
            part: None,
        };
        let lines = Lines::default();
        let t = Tagged {
            inner: &lines,
            sink: &sink,
            pass: &pass,
        };
        t.status("10 s: 5000 ops/s");
        t.warning("slow");
        assert_eq!(
            *lines.0.lock().unwrap(),
            ["xfs r2: 10 s: 5000 ops/s", "xfs r2: slow"]
        );
        let p =
            crate::analysis::testutil::point(&crate::plan::job::JobSpec::default(), 1.0, 1.0, 1);
        t.save(&p, "ycsb-a.run".into());
        let saved = &sink.lock().results.points[0];
        assert_eq!(saved.name, "xfs r2: ycsb-a.run");
        let id = saved.pass.as_ref().unwrap();
        assert_eq!(
            (id.setup.as_str(), id.round, id.baseline),
            ("xfs", 2, false)
        );
        assert_eq!(saved.params["medium"], "xfs");
    }
}
