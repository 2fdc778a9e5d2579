//! One pass of a campaign: a workload (or one part of it) on one setup
//! in one round. A pass names its points (`SETUP rN: WORKLOAD`, for
//! readers), tags them with the typed `PassId` that analysis reads and
//! the `medium`, `round`, `baseline` (and `part`) params older readers
//! know, and prefixes what its observer says.

use crate::results::{PassId, Point, Results};

/// The order of round `r` (0-based): forward, then backward, ...
pub fn round_order(n: usize, r: u32) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    if r % 2 == 1 {
        v.reverse();
    }
    v
}

/// Where one pass (a setup in a round) puts its points.
#[derive(Debug, Clone)]
pub struct Pass {
    /// The setup's label.
    pub label: String,
    /// 1-based.
    pub round: u32,
    /// The baseline setup's label.
    pub baseline: String,
    /// The part of the workload, when it has several named ones.
    pub part: Option<String>,
}

impl Pass {
    /// `LABEL rN: WORKLOAD`.
    pub fn name(&self, workload: &str) -> String {
        self.prefixed(workload)
    }

    /// `LABEL rN: TEXT`: a line (progress, warning, status) of this pass.
    pub fn prefixed(&self, text: &str) -> String {
        crate::results::pass::prefixed(&self.label, self.round, text)
    }

    /// `LABEL rN[ PART]: ERROR`: a pass that failed.
    pub fn failure(&self, e: &anyhow::Error) -> String {
        let part = self.part.as_deref().map(|n| format!(" {n}"));
        format!(
            "{} r{}{}: {e:#}",
            self.label,
            self.round,
            part.unwrap_or_default()
        )
    }

    /// `=== LABEL round N[, part P]: DIR`, the line a pass on a
    /// directory starts with.
    pub fn banner(&self, dir: &std::path::Path) -> String {
        let part = self.part.as_deref().map(|n| format!(", part {n}"));
        format!(
            "\n=== {} round {}{}: {}",
            self.label,
            self.round,
            part.unwrap_or_default(),
            dir.display()
        )
    }

    /// The parameters every point of the pass carries.
    pub fn params(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![
            ("medium", self.label.clone()),
            ("round", self.round.to_string()),
            ("baseline", self.baseline.clone()),
        ];
        if let Some(p) = &self.part {
            v.push(("part", p.clone()));
        }
        v
    }

    /// The typed pass of a point measuring `workload` in this pass.
    pub fn id(&self, workload: &str) -> PassId {
        PassId {
            setup: self.label.clone(),
            round: self.round,
            baseline: self.label == self.baseline,
            part: self.part.clone(),
            workload: workload.to_string(),
        }
    }

    /// Name and tag a point measured in this pass (its name is the workload).
    pub fn apply(&self, p: &mut Point) {
        let id = self.id(&p.name);
        p.name = id.name();
        p.pass = Some(id);
        for (k, v) in self.params() {
            p.params.insert(k.to_string(), v);
        }
    }

    /// What a pass's own results add to the run's: the tools' versions,
    /// the first pass's target description, and its warnings not seen
    /// yet, labelled with the pass.
    pub fn merge_into(&self, r: &mut Results, pass: &Results) {
        for (k, v) in &pass.provenance.tools {
            r.provenance.tools.entry(k.clone()).or_insert(v.clone());
        }
        if r.provenance.target.is_none() {
            r.provenance.target = pass.provenance.target.clone();
        }
        for w in &pass.warnings {
            if !r.warnings.contains(w) && !r.warnings.iter().any(|x| x.ends_with(w.as_str())) {
                r.warnings.push(self.prefixed(w));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_names_and_tags_its_points() {
        let tag = Pass {
            label: "xfs".into(),
            round: 2,
            baseline: "ext4".into(),
            part: None,
        };
        let mut p =
            crate::analysis::testutil::point(&crate::plan::job::JobSpec::default(), 1.0, 1.0, 1);
        p.name = "ycsb-a.run".into();
        tag.apply(&mut p);
        assert_eq!(p.name, "xfs r2: ycsb-a.run");
        assert_eq!(crate::analysis::media::workload_of(&p), "ycsb-a.run");
        assert_eq!(p.params["baseline"], "ext4");
    }

    #[test]
    fn rounds_alternate_direction() {
        assert_eq!(round_order(3, 0), vec![0, 1, 2]);
        assert_eq!(round_order(3, 1), vec![2, 1, 0]);
        assert_eq!(round_order(3, 2), vec![0, 1, 2]);
    }

    #[test]
    fn a_part_is_in_the_id_the_params_and_a_failure() {
        let pass = Pass {
            label: "a".into(),
            round: 1,
            baseline: "a".into(),
            part: Some("rocks".into()),
        };
        let id = pass.id("rocks/ycsb-c.run");
        assert!(id.baseline);
        assert_eq!(id.part.as_deref(), Some("rocks"));
        assert_eq!(id.name(), "a r1: rocks/ycsb-c.run");
        assert!(pass.params().contains(&("part", "rocks".to_string())));
        assert_eq!(pass.failure(&anyhow::anyhow!("no")), "a r1 rocks: no");
    }
}
