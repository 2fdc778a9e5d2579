//! What every host of `oltp --hosts` builds its plan from: the run's
//! settings as typed values (durations as `plan::units::Span`, serialized
//! as the text given), without anything of the control machine's (its
//! results file, a kept database, a private server's settings). The host
//! makes the `OltpPlan` from them (`plan`) in its own directory.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::plan::OltpPlan;
use super::sql::connect::SqlEngine;
use crate::plan::units::Span;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OltpSettings {
    pub engine: SqlEngine,
    /// The server every host shares (`--server-url`); none for SQLite.
    pub server_url: Option<String>,
    pub warehouses: u32,
    /// Virtual users of each point, in order.
    pub users: Vec<usize>,
    pub runtime: Span,
    pub ramp: Span,
    pub wait: bool,
    /// Loader threads (`None`: the host's cores).
    pub loader_threads: Option<usize>,
    pub seed: u64,
    pub check: bool,
}

impl OltpSettings {
    /// The settings of a validated plan (`loader_threads` as given).
    pub fn of(plan: &OltpPlan, runtime: Span, ramp: Span, loader_threads: Option<usize>) -> Self {
        OltpSettings {
            engine: plan.engine,
            server_url: plan.server_url.clone(),
            warehouses: plan.warehouses,
            users: plan.users.clone(),
            runtime,
            ramp,
            wait: plan.wait,
            loader_threads,
            seed: plan.seed,
            check: plan.check,
        }
    }

    /// The plan these settings describe with its database under `target`
    /// (no results file, no `--db`, nothing kept), validated.
    pub fn plan(&self, target: PathBuf) -> anyhow::Result<OltpPlan> {
        let mut p = OltpPlan::new(target);
        p.engine = self.engine;
        p.server_url = self.server_url.clone();
        p.warehouses = self.warehouses;
        p.users = self.users.clone();
        p.time_s = self.runtime.ns() as f64 / 1e9;
        p.ramp_s = self.ramp.ns() as f64 / 1e9;
        p.wait = self.wait;
        if let Some(n) = self.loader_threads {
            p.loader_threads = n;
        }
        p.seed = self.seed;
        p.check = self.check;
        p.validate()?;
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oltp_settings_go_to_a_host_as_text_and_make_the_same_plan() {
        let mut plan = OltpPlan::new(".".into());
        plan.users = vec![1, 2];
        plan.warehouses = 2;
        plan.time_s = 2.0;
        plan.ramp_s = 0.5;
        let s = OltpSettings::of(&plan, "2s".parse().unwrap(), "500ms".parse().unwrap(), None);
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains(r#""runtime":"2s""#), "{json}");
        assert!(json.contains(r#""engine":"sqlite""#), "{json}");
        let back: OltpSettings = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
        let p = back.plan("/var/tmp".into()).unwrap();
        assert_eq!(
            (p.users, p.warehouses, p.time_s, p.ramp_s),
            (vec![1, 2], 2, 2.0, 0.5)
        );
        assert!(p.output.is_none() && p.db.is_none() && !p.keep);
    }
}
