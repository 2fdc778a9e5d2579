//! The kv side of `iolab agent`: a kv plan's phases, one prepare and one
//! start each. The plan runs on a thread of its own (`kv::instances`, one
//! or more databases in a scratch directory of the target directory,
//! registered in the testbed for the sweep) which stops before each phase
//! until the control side's common instant; the databases stay from one
//! phase to the next and are removed when the plan ends, the control side
//! says bye or goes away.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::agent_steps::{LiveCount, StepGate, StepSlot, StepThread, StepWork};
use super::proto::{JobTarget, KvWork};
use crate::error::usage;
use crate::kv::instances::{self, PhaseGate};
use crate::kv::plan::KvPlan;
use crate::results::Point;

/// The kv side of the plan thread's gate.
struct KvGate<'a> {
    gate: &'a StepGate,
    /// One instance: the point is the host's, without an instances section.
    single: bool,
}

impl PhaseGate for KvGate<'_> {
    fn ready(&self, index: usize, name: &str) -> anyhow::Result<()> {
        self.gate.ready(index, name.to_string())
    }

    fn owns_stop(&self) -> bool {
        true
    }

    fn done(&self, _index: usize, point: &Point) {
        let mut point = point.clone();
        if self.single {
            point.extra.instances = None;
        }
        self.gate.done(point);
    }
}

/// The phase's operations so far, for the progress messages.
struct LiveOps(Arc<LiveCount>);

impl crate::session::Observer for LiveOps {}

impl crate::kv::run::KvObserver for LiveOps {
    fn phase_progress(&self, done: u64) {
        self.0 .0.store(done, Ordering::SeqCst);
    }
}

/// The agent's kv plan, if one runs.
pub type KvSlot = StepSlot<KvWork>;

impl StepWork for KvWork {
    const WHAT: &'static str = "phase";

    fn step(&self) -> u32 {
        self.phase
    }

    fn same_plan(&self, running: &Self) -> bool {
        serde_json::to_value(&self.settings).ok() == serde_json::to_value(&running.settings).ok()
            && self.instances == running.instances
    }

    fn start(&self, target: &JobTarget) -> anyhow::Result<StepThread> {
        let plan = plan_of(self, target)?;
        let n = self.instances as usize;
        StepThread::spawn("agent-kv", Self::WHAT, move |gate, live| {
            let gate = KvGate {
                gate,
                single: n == 1,
            };
            instances::run(&plan, n, &LiveOps(live.clone()), &gate).map(|_| ())
        })
    }
}

/// The plan the settings describe, as this host runs it: in the target
/// directory, with nothing of the control machine's (its files, a
/// results file, a database of its own) and no database server.
fn plan_of(w: &KvWork, target: &JobTarget) -> anyhow::Result<KvPlan> {
    let mut s = w.settings.clone();
    let dir = target
        .dir
        .as_deref()
        .ok_or_else(|| usage("--dir", "a kv plan needs a directory on the host"))?;
    let refused = [
        ("-P", !s.property_files.is_empty()),
        ("--target", !s.place.target.is_empty()),
        ("--db", s.place.db.is_some()),
        ("--destroy-data", s.place.destroy_data.is_some()),
        ("--keep", s.place.keep),
        (
            "--engine",
            s.engine.server().is_some() && s.server.server_url.is_none(),
        ),
        ("--output", s.output.is_some()),
    ];
    if let Some((flag, _)) = refused.iter().find(|(_, r)| *r) {
        return Err(usage(*flag, "not on a host of --hosts"));
    }
    let path = std::path::PathBuf::from(dir);
    if !path.is_absolute() || !path.is_dir() {
        return Err(usage(
            "--dir",
            format!("{dir} is not a directory on this host"),
        ));
    }
    s.place.dir = path;
    s.status_interval = None;
    let plan = crate::kv::settings::plan(&s)?;
    instances::check(&plan, w.instances as usize)?;
    if w.phase as usize >= plan.phases() {
        return Err(usage(
            "phase",
            format!("phase {} of a plan of {}", w.phase, plan.phases()),
        ));
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::agent::Out;
    use crate::fleet::proto::Message;
    use crate::kv::engine::KvEngineKind;
    use crate::kv::settings::{BenchSettings, EngineSettings, KvSettings, PhaseSel, PlaceSettings};
    use crate::measure::clock::mono_now_ns;
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    fn work(dir: &std::path::Path) -> (KvWork, JobTarget) {
        let target = JobTarget {
            dir: Some(dir.display().to_string()),
            size: None,
            overwrite: false,
            ..JobTarget::default()
        };
        let w = KvWork {
            settings: settings(),
            instances: 1,
            phase: 0,
        };
        (w, target)
    }

    fn settings() -> KvSettings {
        KvSettings {
            workload: Some("a".into()),
            property_files: vec![],
            property_texts: vec![],
            props: vec!["recordcount=10".into(), "operationcount=10".into()],
            engine: KvEngineKind::parse("sqlite").unwrap(),
            phase: PhaseSel::Both,
            runtime: None,
            threads: 1,
            target_ops: None,
            bench: BenchSettings {
                num: 10,
                key_size: 16,
                key_format: crate::kv::keys::KeyFormat::Decimal,
                value_size: 100,
                reads: None,
                readers: "1".into(),
                writer_rate: None,
                readwritepercent: 90,
                check_values: crate::kv::value::CheckValues::ALL[0],
            },
            eng: EngineSettings {
                sync: false,
                disable_wal: false,
                cache_size: "8m".parse().unwrap(),
                compression: crate::kv::engine::Compression::ALL[0],
                direct_io: false,
                mmap: false,
                page_size: None,
                no_readahead: false,
                map_size: "64m".parse().unwrap(),
                write_buffer_size: "4m".parse().unwrap(),
                bytes_per_sync: "0".parse().unwrap(),
                pipelined_write: false,
                background_jobs: 2,
                wt_table: crate::kv::engine::WtTable::Btree,
                checkpoint_interval: "60s".parse().unwrap(),
                wt_eviction_threads: "4".into(),
                cassandra_compaction: None,
            },
            place: PlaceSettings {
                target: vec![],
                size: None,
                dir: ".".into(),
                db: None,
                destroy_data: None,
                keep: false,
                memory_limit: None,
                drop_caches: false,
                flush_between: false,
            },
            server: crate::servers::flags::ServerFlags {
                server_url: None,
                shared_buffers: None,
                max_wal_size: None,
                buffer_pool: None,
                flush_method: "O_DIRECT".into(),
                persistence: "none".into(),
                appendfsync: "everysec".into(),
                heap: None,
                commitlog_dir: None,
                server_set: vec![],
            },
            under: "1ms".parse().unwrap(),
            seed: 1,
            status_interval: None,
            output: None,
        }
    }

    /// The frames the agent wrote.
    struct Frames(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Frames {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn phases_start_at_the_instant_on_the_same_databases_with_progress() {
        let d = tempfile::tempdir().unwrap();
        let (mut w, t) = work(d.path());
        // A paced load of 2 s: its progress counts operations.
        w.settings.props = vec!["recordcount=600".into(), "operationcount=10".into()];
        w.settings.target_ops = Some(300.0);
        let buf = Arc::new(Mutex::new(Vec::new()));
        let out: Out = Arc::new(Mutex::new(Box::new(Frames(buf.clone()))));
        let mut slot = KvSlot::default();
        let ready = slot.prepare(w.clone(), &t);
        assert!(matches!(ready, Message::Ready { .. }), "{ready:?}");
        let at = mono_now_ns() + 20_000_000;
        let Message::Result(r) = slot.run(at, &out) else {
            panic!("no result")
        };
        assert_eq!(r.point.total.ops, 600);
        assert!(r.started_ns >= at, "released before the instant");
        let bytes = buf.lock().unwrap().clone();
        let mut frames = bytes.as_slice();
        let mut rates = Vec::new();
        while let Ok(Message::Progress(p)) = crate::fleet::proto::read_message(&mut frames) {
            rates.push(p.iops);
        }
        assert!(rates.iter().any(|r| *r > 0.0), "{rates:?}");
        // The run phase reads what the load wrote, in the same databases.
        w.phase = 1;
        let ready = slot.prepare(w, &t);
        assert!(matches!(ready, Message::Ready { .. }), "{ready:?}");
        let Message::Result(r) = slot.run(mono_now_ns(), &out) else {
            panic!("no result")
        };
        assert_eq!(r.point.total.ops, 10);
        assert_eq!(
            r.point.errors.get("not_found"),
            None,
            "{:?}",
            r.point.errors
        );
        // After the last phase the plan ends by itself and removes them.
        let h = slot.thread().unwrap();
        let end = Instant::now() + Duration::from_secs(60);
        while !h.is_finished() {
            assert!(Instant::now() < end, "the plan did not end");
            std::thread::sleep(Duration::from_millis(10));
        }
        slot.end();
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_kv_prepare_is_checked_before_anything_is_made() {
        let d = tempfile::tempdir().unwrap();
        let (w, t) = work(d.path());
        assert_eq!(plan_of(&w, &t).unwrap().phases(), 2);
        let field = |w: &KvWork, t: &JobTarget| {
            let e = plan_of(w, t).unwrap_err();
            e.downcast_ref::<crate::error::UsageError>()
                .map(|u| u.field.clone())
                .unwrap_or_else(|| format!("{e:#}"))
        };
        let mut bad = w.clone();
        bad.settings.place.db = Some("/x".into());
        assert_eq!(field(&bad, &t), "--db");
        let mut bad = w.clone();
        bad.settings.engine = KvEngineKind::parse("postgres").unwrap();
        assert_eq!(field(&bad, &t), "--engine");
        // One server every host shares: each host its own namespace on it.
        let mut shared = bad.clone();
        shared.settings.server.server_url = Some("postgres://10.0.0.9/db".into());
        assert!(plan_of(&shared, &t).is_ok());
        let mut bad = w.clone();
        bad.phase = 2;
        assert_eq!(field(&bad, &t), "phase");
        let mut bad = w.clone();
        bad.instances = 0;
        assert_eq!(field(&bad, &t), "--instances");
        let rel = JobTarget {
            dir: Some("relative".into()),
            ..t.clone()
        };
        assert_eq!(field(&w, &rel), "--dir");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }
}
