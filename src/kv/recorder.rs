//! Per-worker measurement state: one HDR histogram per operation kind for
//! service time (and one for latency from the intended start under
//! `--target`), byte counters and verification counts. Histograms are
//! created before timing starts, so recording never allocates. Service
//! times are counted in a `LatencyTally` (the histogram's buckets without
//! its per-record bookkeeping) and moved into the histograms by `seal`.

use crate::measure::histogram::LatencyHistogram;
use crate::measure::tally::LatencyTally;

/// Operation kinds measured by `iolab kv`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum KvOp {
    Insert,
    Read,
    Update,
    Scan,
    /// YCSB read-modify-write, as a whole.
    Rmw,
    /// The read part of a read-modify-write.
    RmwRead,
    /// The update part of a read-modify-write.
    RmwUpdate,
    /// db_bench writes (fillseq, fillrandom, overwrite, the writer of readwhilewriting).
    Write,
    /// db_bench seekrandom: seek plus one next.
    Seek,
    /// db_bench readseq: one record of the worker's iterator.
    ReadSeq,
    Delete,
}

pub const N_KINDS: usize = 11;

impl KvOp {
    pub const ALL: [KvOp; N_KINDS] = [
        KvOp::Insert,
        KvOp::Read,
        KvOp::Update,
        KvOp::Scan,
        KvOp::Rmw,
        KvOp::RmwRead,
        KvOp::RmwUpdate,
        KvOp::Write,
        KvOp::Seek,
        KvOp::ReadSeq,
        KvOp::Delete,
    ];

    pub fn name(self) -> &'static str {
        match self {
            KvOp::Insert => "insert",
            KvOp::Read => "read",
            KvOp::Update => "update",
            KvOp::Scan => "scan",
            KvOp::Rmw => "read-modify-write",
            KvOp::RmwRead => "rmw-read",
            KvOp::RmwUpdate => "rmw-update",
            KvOp::Write => "write",
            KvOp::Seek => "seek",
            KvOp::ReadSeq => "readseq",
            KvOp::Delete => "delete",
        }
    }

    /// YCSB's label for its summary lines.
    pub fn ycsb_label(self) -> &'static str {
        match self {
            KvOp::Insert => "INSERT",
            KvOp::Read => "READ",
            KvOp::Update => "UPDATE",
            KvOp::Scan => "SCAN",
            KvOp::Rmw => "READ-MODIFY-WRITE",
            KvOp::RmwRead => "RMW-READ",
            KvOp::RmwUpdate => "RMW-UPDATE",
            KvOp::Write => "WRITE",
            KvOp::Seek => "SEEK",
            KvOp::ReadSeq => "READSEQ",
            KvOp::Delete => "DELETE",
        }
    }

    #[inline]
    pub fn idx(self) -> usize {
        self as usize
    }
}

/// Most mismatch descriptions kept per worker.
const KEEP_MISMATCHES: usize = 16;

/// A worker's measurements.
pub struct KvRecorder {
    /// Service time per kind; complete once the recorder is sealed.
    pub service: Vec<Option<LatencyHistogram>>,
    /// Service times counted since the last `seal`.
    tally: Vec<Option<LatencyTally>>,
    pub intended: Vec<Option<LatencyHistogram>>,
    /// Operations per kind.
    pub ops: [u64; N_KINDS],
    /// Key + value bytes moved per kind.
    pub bytes: [u64; N_KINDS],
    /// Key + value bytes the workload asked the engine to write.
    pub logical_written: u64,
    pub verified: u64,
    pub mismatches: u64,
    /// Reads of keys that must exist but were not found (counted in mismatches too).
    pub missing: u64,
    /// Reads that found nothing where that is allowed (db_bench after fillrandom).
    pub not_found: u64,
    pub first_mismatches: Vec<String>,
}

impl KvRecorder {
    /// Histograms for `kinds`; intended-start histograms too when `paced`.
    pub fn new(kinds: &[KvOp], paced: bool) -> KvRecorder {
        let mut service: Vec<Option<LatencyHistogram>> = (0..N_KINDS).map(|_| None).collect();
        let mut intended: Vec<Option<LatencyHistogram>> = (0..N_KINDS).map(|_| None).collect();
        let mut tally: Vec<Option<LatencyTally>> = (0..N_KINDS).map(|_| None).collect();
        for k in kinds {
            service[k.idx()] = Some(LatencyHistogram::new());
            tally[k.idx()] = Some(LatencyTally::new());
            if paced {
                intended[k.idx()] = Some(LatencyHistogram::new());
            }
        }
        KvRecorder {
            service,
            tally,
            intended,
            ops: [0; N_KINDS],
            bytes: [0; N_KINDS],
            logical_written: 0,
            verified: 0,
            mismatches: 0,
            missing: 0,
            not_found: 0,
            first_mismatches: Vec::new(),
        }
    }

    /// Record one operation: service time `end - start`, and `end - intended`
    /// when the run is paced.
    #[inline]
    pub fn record(
        &mut self,
        kind: KvOp,
        start: u64,
        end: u64,
        intended: Option<u64>,
        ops: u64,
        bytes: u64,
    ) {
        let i = kind.idx();
        if let Some(t) = self.tally[i].as_mut() {
            t.record(end.saturating_sub(start));
        }
        if let (Some(t), Some(h)) = (intended, self.intended[i].as_mut()) {
            h.record(end.saturating_sub(t));
        }
        self.record_untimed(kind, ops, bytes);
    }

    /// Count operations whose latency is recorded apart (`record_latency_n`).
    #[inline]
    pub fn record_untimed(&mut self, kind: KvOp, ops: u64, bytes: u64) {
        let i = kind.idx();
        self.ops[i] += ops;
        self.bytes[i] += bytes;
    }

    /// Record `n` operations of latency `lat` ns (a sampled walk).
    pub fn record_latency_n(&mut self, kind: KvOp, lat: u64, n: u64) {
        if let Some(t) = self.tally[kind.idx()].as_mut() {
            t.record_n(lat, n);
        }
    }

    /// Move the counted service times into the histograms; before `service`
    /// is read or the recorder merged into another.
    pub fn seal(&mut self) {
        for (t, h) in self.tally.iter_mut().zip(&mut self.service) {
            if let Some(t) = t.as_mut().filter(|t| !t.is_empty()) {
                t.drain_into(h.get_or_insert_with(LatencyHistogram::new));
            }
        }
    }

    /// Note a verification failure (allocates only on failure).
    pub fn mismatch(&mut self, what: impl FnOnce() -> String) {
        self.mismatches += 1;
        if self.first_mismatches.len() < KEEP_MISMATCHES {
            self.first_mismatches.push(what());
        }
    }

    /// Fold another worker's recorder into this one.
    pub fn merge(&mut self, o: &KvRecorder) {
        debug_assert!(
            o.tally.iter().flatten().all(LatencyTally::is_empty),
            "a recorder merged before it was sealed"
        );
        for i in 0..N_KINDS {
            merge_hist(&mut self.service[i], &o.service[i]);
            merge_hist(&mut self.intended[i], &o.intended[i]);
            self.ops[i] += o.ops[i];
            self.bytes[i] += o.bytes[i];
        }
        self.logical_written += o.logical_written;
        self.verified += o.verified;
        self.mismatches += o.mismatches;
        self.missing += o.missing;
        self.not_found += o.not_found;
        for m in &o.first_mismatches {
            if self.first_mismatches.len() < KEEP_MISMATCHES * 4 {
                self.first_mismatches.push(m.clone());
            }
        }
    }
}

fn merge_hist(a: &mut Option<LatencyHistogram>, b: &Option<LatencyHistogram>) {
    match (a.as_mut(), b) {
        (Some(x), Some(y)) => x.merge(y),
        (None, Some(y)) => *a = Some(y.clone()),
        _ => {}
    }
}

/// Verification tally of the entries one scan visits; `settle` moves it into
/// the worker's recorder.
#[derive(Default)]
pub struct ScanTally {
    /// Records of fields kept apart (`kv::fields`); `None`: whole values.
    pub fields: Option<crate::kv::fields::FieldLayout>,
    pub bytes: u64,
    /// Leave values unchecked (`--check-values` sample or none).
    pub skip_check: bool,
    pub verified: u64,
    pub bad: u64,
    pub first_bad: Option<String>,
}

impl ScanTally {
    pub fn for_fields(layout: crate::kv::fields::FieldLayout) -> ScanTally {
        ScanTally {
            fields: Some(layout),
            ..ScanTally::default()
        }
    }

    #[inline]
    pub fn visit(&mut self, k: &[u8], v: &[u8]) {
        self.bytes += (k.len() + v.len()) as u64;
        if self.skip_check {
            return;
        }
        self.verified += 1;
        let ok = match self.fields {
            None => super::value::verify(k, v).is_ok(),
            Some(l) => super::fields::verify_record(k, l, v).is_ok(),
        };
        if !ok {
            self.bad += 1;
            if self.first_bad.is_none() {
                self.first_bad = Some(super::keys::KeyFormat::show(k));
            }
        }
    }

    pub fn settle(&mut self, rec: &mut KvRecorder) {
        rec.verified += self.verified;
        if self.bad > 0 {
            rec.mismatches += self.bad - 1;
            let k = self.first_bad.take().unwrap_or_default();
            rec.mismatch(|| format!("{k}: checksum mismatch in scan"));
        }
    }
}
