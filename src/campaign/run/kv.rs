//! The database step of `iolab run`: YCSB workloads A (50/50 read/update)
//! and C (read only) on RocksDB in a scratch directory under DIR, run by
//! `kv::run` as a library, with a record count sized from the step's share
//! of the budget. Its points carry `extra.kv` like `iolab kv` output.

use std::path::Path;

use anyhow::Result;

use crate::kv::dbbench::DbBenchConfig;
use crate::kv::engine::{EngineOptions, KvEngineKind};
use crate::kv::plan::{BenchReads, KvPlace, KvPlan, Step};
use crate::kv::props::Props;
use crate::kv::ycsb::YcsbConfig;
pub use crate::plan::run_plan::{KvTiming, WORKLOADS};
use crate::results::Results;

/// The embedded engine of the step.
pub const ENGINE: KvEngineKind = KvEngineKind::reference();

/// The step's plan: each workload's load of `timing.records` records,
/// then its run for `timing.run_s` seconds (time-based, as YCSB's
/// maxexecutiontime) or, in a short step, of as many operations; one
/// client thread, in a scratch database.
pub fn plan(dir: &Path, timing: KvTiming, seed: u64) -> Result<KvPlan> {
    let mut steps = Vec::new();
    for w in WORKLOADS {
        let mut props = Props::builtin(w).expect("a built-in YCSB workload");
        props.set("recordcount", timing.records);
        props.set("operationcount", timing.records);
        let load = YcsbConfig::from_props(&props)?;
        if let Some(secs) = timing.run_s {
            props.set("operationcount", crate::kv::ycsb::TIME_BASED_OPS);
            props.set("maxexecutiontime", secs);
        }
        let run = YcsbConfig::from_props(&props)?;
        let name = format!("ycsb-{w}");
        steps.push(Step::YcsbLoad(name.clone(), load));
        steps.push(Step::YcsbRun(name, run));
    }
    Ok(KvPlan {
        engine: ENGINE,
        options: EngineOptions::default(),
        steps,
        threads: 1,
        target_ops: None,
        bench: DbBenchConfig {
            num: 100_000,
            key_size: 16,
            key_format: crate::kv::keys::KeyFormat::Decimal,
            value_size: 100,
            read_percent: 90,
            check_values: crate::kv::value::CheckValues::Auto,
        },
        reads: BenchReads::default(),
        place: KvPlace::scratch(dir.to_path_buf()),
        server: Default::default(),
        under_ns: 1_000_000,
        seed,
        output: None,
        status_interval_s: None,
        notices: Vec::new(),
    })
}

/// Run YCSB A and C with `timing` in a scratch database under `dir`; the
/// kv results (points, engine version, warnings).
pub fn run(dir: &Path, timing: KvTiming, seed: u64) -> Result<Results> {
    let plan = plan(dir, timing, seed)?;
    plan.validate()?;
    let done = crate::kv::run::run(&plan, &crate::session::Silent)?;
    done.verified()?;
    Ok(done.results)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_plan_names_this_engine() {
        assert_eq!(super::ENGINE.name(), crate::plan::run_plan::KV_ENGINE);
    }
}
