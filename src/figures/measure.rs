//! A measure: one catalogue figure of one operation type on one latency
//! basis, read from a point. `Measure::of` is the only place a view gets a
//! figure's value; `None` is "not measured" (a figure the point's kind does
//! not have, an operation it did not run, a percentile it did not record).

use super::FigureId;
use crate::measure::histogram::LatStats;
use crate::results::op_order;
use crate::results::Point;

/// Where a latency's clock started and stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Basis {
    /// iolab: from preparing the request to reaping its completion
    /// (submission + completion); fio: its `lat`. A database operation:
    /// the client's call to its return.
    Total,
    /// From submission to completion: fio's `clat`, and iolab's for
    /// asynchronous engines. fio reports percentiles of this one by default.
    Completion,
    /// Open loop: from the moment the request was actually issued (the
    /// service time; it hides the queueing behind a late schedule).
    FromIssue,
    /// Open loop: from the moment the schedule meant to issue it (the
    /// latency a user of the rate sees, queueing included).
    FromIntended,
}

impl Basis {
    pub const ALL: [Basis; 4] = [
        Basis::Total,
        Basis::Completion,
        Basis::FromIssue,
        Basis::FromIntended,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Basis::Total => "total",
            Basis::Completion => "clat",
            Basis::FromIssue => "from issue",
            Basis::FromIntended => "from intended start",
        }
    }

    pub fn meaning(self) -> &'static str {
        match self {
            Basis::Total => "from preparing a request to reaping its completion (submission and completion; fio's `lat`); for a database operation, the client's call to its return",
            Basis::Completion => "from submission to completion (fio's `clat`: fio reports percentiles of this one unless run with `--lat_percentiles=1`)",
            Basis::FromIssue => "open loop: from the moment the request was actually issued; the service time, which hides queueing behind a late schedule",
            Basis::FromIntended => "open loop: from the moment the schedule meant to issue the request; what a user of that rate waits, queueing included",
        }
    }
}

/// One figure of one operation type on one basis.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Measure {
    pub figure: FigureId,
    /// The operation type a latency or rate is of ("read", "update",
    /// "new_order"); `None` for figures over all operations. A rate of one
    /// operation type (its IOPS, ops/s, MiB/s) is for tables of a row per
    /// type; `of_point` gives rates over all operations only.
    pub op: Option<String>,
    /// Latency figures only.
    pub basis: Option<Basis>,
}

/// fio's JSON reports percentiles of clat only unless `lat_percentiles`
/// was set; the import then carries clat's percentiles in `lat` (for its
/// charts) and says so in a warning. Such a point's total-latency
/// percentiles are not measured. (fio JSON that has both, as iolab's own
/// export writes, keeps its total-latency percentiles.)
fn percentiles_are_clats(p: &Point, op: &str) -> bool {
    let imported_clats = p.extra.fio.is_some()
        && p.warnings
            .iter()
            .any(|w| w.starts_with(crate::results::ext::FIO_CLAT_ONLY));
    imported_clats
        && p.ops
            .get(op)
            .and_then(|o| o.clat.as_ref())
            .is_some_and(|c| !c.percentiles_ns.is_empty())
}

impl Measure {
    pub fn whole(figure: FigureId) -> Measure {
        Measure {
            figure,
            op: None,
            basis: None,
        }
    }

    pub fn latency(figure: FigureId, op: &str, basis: Basis) -> Measure {
        Measure {
            figure,
            op: Some(op.to_string()),
            basis: Some(basis),
        }
    }

    /// The measures of `figure` a point has: one for a figure over all
    /// operations, one per operation type (and, open loop, per basis) for
    /// a latency. Empty where the point's kind has no such figure.
    pub fn of_point(figure: FigureId, p: &Point) -> Vec<Measure> {
        if !figure.applies_to(p.family()) {
            return Vec::new();
        }
        if !figure.is_latency() {
            return vec![Measure::whole(figure)];
        }
        let open = paced(p);
        let mut ops: Vec<&String> = p.ops.keys().collect();
        ops.sort_by_key(|o| op_order(o));
        let mut out = Vec::new();
        for op in ops {
            let basis = if open {
                Basis::FromIssue
            } else if figure != FigureId::LatMean
                && figure != FigureId::LatMax
                && percentiles_are_clats(p, op)
            {
                Basis::Completion
            } else {
                Basis::Total
            };
            let m = Measure::latency(figure, op, basis);
            if m.of(p).is_some() {
                out.push(m);
            }
            let intended = Measure::latency(figure, op, Basis::FromIntended);
            if intended.of(p).is_some() {
                out.push(intended);
            }
        }
        out
    }

    /// The point's value, `None` when it was not measured.
    pub fn of(&self, p: &Point) -> Option<f64> {
        if !self.figure.applies_to(p.family()) {
            return None;
        }
        let oltp = p.extra.oltp.as_deref();
        match self.figure {
            FigureId::Iops | FigureId::OpsPerS | FigureId::TxnPerS => self.rate(p).map(|r| r.0),
            FigureId::MibS => self.rate(p).map(|r| r.1),
            FigureId::AvgBlock => {
                (p.total.iops > 0.0).then(|| p.total.mib_s * (1u64 << 20) as f64 / p.total.iops)
            }
            FigureId::InFlight => in_flight(p),
            FigureId::Nopm => oltp.map(|o| o.nopm),
            FigureId::Tpm => oltp.map(|o| o.tpm),
            FigureId::LatP90 => {
                let op = self.op.as_deref()?;
                let txn = oltp
                    .filter(|_| self.basis == Some(Basis::Total))
                    .and_then(|o| o.transactions.get(op)?.p90_ns);
                txn.map(|v| v as f64)
                    .or_else(|| self.stats(p)?.percentile(90.0).map(|v| v as f64))
            }
            FigureId::LatMean => self.stats(p).map(|l| l.mean_ns),
            FigureId::LatMax => self.stats(p).map(|l| l.max_ns as f64),
            FigureId::LatP50 => self.percentile(p, 50.0),
            FigureId::LatP99 => self.percentile(p, 99.0),
            FigureId::LatP999 => self.percentile(p, 99.9),
        }
        .filter(|v| v.is_finite())
    }

    /// (operations/s, MiB/s) over all operations or of `op`'s.
    fn rate(&self, p: &Point) -> Option<(f64, f64)> {
        match self.op.as_deref() {
            None => Some((p.total.iops, p.total.mib_s)),
            Some(op) => p.ops.get(op).map(|o| (o.iops, o.mib_s)),
        }
    }

    fn percentile(&self, p: &Point, q: f64) -> Option<f64> {
        self.stats(p)?.percentile(q).map(|v| v as f64)
    }

    /// The latency statistics this measure reads.
    pub fn stats<'a>(&self, p: &'a Point) -> Option<&'a LatStats> {
        let op = self.op.as_deref()?;
        let o = p.ops.get(op);
        let l = match self.basis? {
            Basis::Total | Basis::FromIssue => o?.lat.as_ref(),
            Basis::Completion => o?.clat.as_ref(),
            Basis::FromIntended => from_intended(p, op),
        }?;
        (l.n > 0 || l.mean_ns > 0.0).then_some(l)
    }

    /// "IOPS", "read p99 lat (clat)", "update mean lat".
    pub fn label(&self) -> String {
        let name = self.figure.def().name;
        let mut s = match &self.op {
            Some(op) => format!("{op} {name}"),
            None => name.to_string(),
        };
        match self.basis {
            None | Some(Basis::Total) => {}
            Some(b) => s.push_str(&format!(" ({})", b.name())),
        }
        s
    }

    pub fn format(&self, v: f64) -> String {
        self.figure.def().unit.format(v)
    }
}

/// Whether the point's requests were issued on a schedule: an open-loop
/// device point, or a kv phase run at a rate (its kv section keeps the
/// latency from the intended start).
fn paced(p: &Point) -> bool {
    p.extra.open_loop.is_some()
        || p.extra
            .kv
            .as_ref()
            .is_some_and(|k| !k.intended_lat.is_empty())
}

/// An operation type's latency from the intended start: open loop's, or
/// a paced kv phase's.
fn from_intended<'a>(p: &'a Point, op: &str) -> Option<&'a LatStats> {
    match &p.extra.open_loop {
        Some(ol) => ol.lat_from_intended.get(op),
        None => p.extra.kv.as_ref()?.intended_lat.get(op),
    }
}

/// Little's law over every operation type: the sum of rate x mean total
/// latency. `None` without a latency for every type that ran.
fn in_flight(p: &Point) -> Option<f64> {
    let mut sum = 0.0;
    for o in p.ops.values().filter(|o| o.ops > 0 || o.iops > 0.0) {
        sum += o.iops * o.lat.as_ref()?.mean_ns / 1e9;
    }
    (!p.ops.is_empty()).then_some(sum)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testutil::point;

    /// A rate of one operation type, for tables of a row per type; over
    /// all operations without one; not measured for a type that did not run.
    #[test]
    fn a_rate_of_one_operation_type() {
        let mut p = point(&Default::default(), 1000.0, 50_000.0, 90_000);
        p.total.iops = 1500.0;
        let read = Measure {
            figure: FigureId::Iops,
            op: Some("read".into()),
            basis: None,
        };
        assert_eq!(read.of(&p), Some(1000.0));
        assert_eq!(Measure::whole(FigureId::Iops).of(&p), Some(1500.0));
        let trim = Measure {
            op: Some("trim".into()),
            ..read
        };
        assert_eq!(trim.of(&p), None);
        p.params.insert("workload".into(), "ycsb-a".into());
        assert_eq!(Measure::whole(FigureId::MibS).of(&p), None, "kv: no MiB/s");
    }

    /// fio JSON with total-latency percentiles (iolab's own export, read
    /// back) keeps them total; the import's clat-only mark makes them clat.
    #[test]
    fn fio_percentiles_are_clat_only_where_the_import_says_so() {
        let mut p = point(&Default::default(), 1000.0, 50_000.0, 90_000);
        p.extra.fio = Some(crate::results::ext::FioJobId {
            hostname: None,
            job_options: None,
            jobname: Some("j".into()),
        });
        let basis = |p: &Point| Measure::of_point(FigureId::LatP99, p)[0].basis;
        assert_eq!(basis(&p), Some(Basis::Total));
        p.warnings.push(format!(
            "{}: the total-latency percentiles shown are clat's",
            crate::results::ext::FIO_CLAT_ONLY
        ));
        assert_eq!(basis(&p), Some(Basis::Completion));
    }

    /// A kv phase run at a rate keeps its latency from the intended start
    /// in its kv section: the catalogue has it, beside the service time
    /// (from issue), so no view drops it.
    #[test]
    fn a_paced_kv_phase_has_its_latency_from_the_intended_start() {
        let mut p = point(&Default::default(), 1000.0, 50_000.0, 90_000);
        let mut kv = crate::results::ext::kv::KvPhaseInfo::default();
        kv.intended_lat.insert(
            "read".into(),
            crate::analysis::testutil::lat(80_000.0, 400_000),
        );
        p.extra.kv = Some(Box::new(kv));
        let bases: Vec<Option<Basis>> = Measure::of_point(FigureId::LatP99, &p)
            .into_iter()
            .map(|m| m.basis)
            .collect();
        assert_eq!(bases, [Some(Basis::FromIssue), Some(Basis::FromIntended)]);
        let m = Measure::latency(FigureId::LatP99, "read", Basis::FromIntended);
        assert_eq!(m.of(&p), Some(400_000.0));
    }
}
