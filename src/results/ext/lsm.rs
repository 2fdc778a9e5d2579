//! The shape of an LSM tree at one moment (RocksDB's properties), taken at
//! the start and end of every phase, so a run's speed can be read against
//! what the engine was doing in the background: a read phase that starts
//! while a memtable flush or a compaction still runs is slower, and two
//! runs that differ in that differ in their numbers. Owned by results
//! (`extra.kv.lsm`), so the results model imports no workload; `kv::lsm`
//! re-exports it.

use serde::{Deserialize, Serialize};

/// RocksDB's background state at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LsmState {
    /// `rocksdb.num-files-at-level0`.
    pub l0_files: u64,
    /// `rocksdb.num-files-at-levelN` for N = 0..=6.
    pub files_per_level: Vec<u64>,
    /// `rocksdb.estimate-pending-compaction-bytes`.
    pub pending_compaction_bytes: u64,
    /// `rocksdb.num-running-flushes`.
    pub running_flushes: u64,
    /// `rocksdb.num-running-compactions`.
    pub running_compactions: u64,
    /// `rocksdb.mem-table-flush-pending` (0 or 1).
    pub flush_pending: u64,
    /// `rocksdb.compaction-pending` (0 or 1).
    pub compaction_pending: u64,
    /// `rocksdb.num-immutable-mem-table`: memtables waiting to be flushed.
    pub immutable_memtables: u64,
    /// `rocksdb.cur-size-active-mem-table` in bytes.
    pub memtable_bytes: u64,
}

impl LsmState {
    /// Nothing runs or waits in the background: what db_bench's
    /// `waitforcompaction` waits for (no flush pending or running, no
    /// compaction pending or running).
    pub fn is_quiet(&self) -> bool {
        self.flush_pending == 0
            && self.running_flushes == 0
            && self.compaction_pending == 0
            && self.running_compactions == 0
    }

    /// One line for the terminal: `L0 3 files, pending 12.0 MiB, ...`.
    pub fn summary(&self) -> String {
        format!(
            "L0 {} file(s), levels {:?}, pending compaction {}, flushes {} running{}, compactions {} running{}, {} immutable memtable(s){}",
            self.l0_files,
            self.files_per_level,
            crate::plan::parse::human_bytes(self.pending_compaction_bytes),
            self.running_flushes,
            if self.flush_pending > 0 { " (+ pending)" } else { "" },
            self.running_compactions,
            if self.compaction_pending > 0 { " (+ pending)" } else { "" },
            self.immutable_memtables,
            if self.is_quiet() { ": quiet" } else { ": busy" },
        )
    }
}

/// A db_bench chain step (`waitforcompaction`, `flush`, `compact`) run
/// before a phase, and how long it took.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChainStepRun {
    pub step: String,
    pub duration_ns: u64,
}

/// The LSM state around one phase (`extra.kv.lsm`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LsmPhase {
    /// When the phase's workers started.
    pub start: LsmState,
    /// When the last worker finished (before `--flush-between`'s flush).
    pub end: LsmState,
    /// The chain steps run between the previous phase and this one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub after_steps: Vec<ChainStepRun>,
}

impl LsmPhase {
    /// Whether the phase started on a quiet LSM.
    pub fn settled(&self) -> bool {
        self.start.is_quiet()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn busy() -> LsmState {
        LsmState {
            l0_files: 3,
            files_per_level: vec![3, 1, 0, 0, 0, 0, 0],
            pending_compaction_bytes: 12 << 20,
            running_flushes: 1,
            running_compactions: 1,
            flush_pending: 0,
            compaction_pending: 1,
            immutable_memtables: 1,
            memtable_bytes: 4096,
        }
    }

    #[test]
    fn quiet_means_nothing_runs_or_waits() {
        assert!(LsmState::default().is_quiet());
        assert!(!busy().is_quiet());
        let only_pending = LsmState {
            compaction_pending: 1,
            ..LsmState::default()
        };
        assert!(!only_pending.is_quiet());
        assert!(busy().summary().contains("L0 3 file(s)"));
        assert!(busy().summary().ends_with(": busy"));
    }

    /// The JSON shape is what the bench script and old readers expect:
    /// named fields, `after_steps` left out when empty, missing fields default.
    #[test]
    fn serializes_by_name_and_reads_back() {
        let phase = LsmPhase {
            start: busy(),
            end: LsmState::default(),
            after_steps: vec![ChainStepRun {
                step: "waitforcompaction".into(),
                duration_ns: 5,
            }],
        };
        let v = serde_json::to_value(&phase).unwrap();
        assert_eq!(v["start"]["l0_files"], 3);
        assert_eq!(v["start"]["pending_compaction_bytes"], 12 << 20);
        assert_eq!(v["start"]["running_flushes"], 1);
        assert_eq!(v["after_steps"][0]["step"], "waitforcompaction");
        let back: LsmPhase = serde_json::from_value(v).unwrap();
        assert_eq!(back, phase);
        let bare = LsmPhase::default();
        let v = serde_json::to_value(&bare).unwrap();
        assert!(v.get("after_steps").is_none());
        let partial: LsmState = serde_json::from_str(r#"{"l0_files":2}"#).unwrap();
        assert_eq!(partial.l0_files, 2);
        assert!(!phase.settled());
        assert!(bare.settled());
    }
}
