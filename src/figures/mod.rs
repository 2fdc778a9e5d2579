//! The catalogue of figures: every number iolab compares and prints about a
//! point, defined once: its key, name, unit, what it counts, which way is
//! better and which kinds of point have it. Latency figures also carry a
//! basis (where the clock started). Views (`compare` in every format, the
//! terminal, the report) take names, units and directions from here, and
//! read values through `Measure` (measure.rs), where "not measured" is
//! `None`, never 0. docs/results.md lists the catalogue (a test keeps it
//! equal to `markdown()`).

pub mod fmt;
pub mod measure;

pub use measure::{Basis, Measure};

use crate::results::Family;

/// Which way a change is an improvement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    HigherIsBetter,
    LowerIsBetter,
    /// A description of the load, not a score (block size, requests in
    /// flight): no change is better or worse.
    Neither,
}

impl Direction {
    /// "(higher is better)", or nothing for a figure that is no score.
    pub fn hint(self) -> &'static str {
        match self {
            Direction::HigherIsBetter => " (higher is better)",
            Direction::LowerIsBetter => " (lower is better)",
            Direction::Neither => "",
        }
    }
}

/// How a figure's value is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    PerSecond,
    PerMinute,
    MibPerSecond,
    Nanoseconds,
    Bytes,
    /// A plain count or ratio, two decimals.
    Number,
}

impl Unit {
    pub fn name(self) -> &'static str {
        match self {
            Unit::PerSecond => "1/s",
            Unit::PerMinute => "1/min",
            Unit::MibPerSecond => "MiB/s",
            Unit::Nanoseconds => "ns",
            Unit::Bytes => "bytes",
            Unit::Number => "",
        }
    }

    /// The value for people: latencies with three significant digits
    /// ("3.01us", not "3us"), rates and sizes as the tables write them.
    pub fn format(self, v: f64) -> String {
        match self {
            Unit::PerSecond | Unit::PerMinute => crate::figures::fmt::count(v),
            Unit::MibPerSecond => crate::figures::fmt::mib(v),
            Unit::Nanoseconds => crate::figures::fmt::ns3(v),
            Unit::Bytes => crate::figures::fmt::bytes(v),
            Unit::Number => format!("{v:.2}"),
        }
    }
}

/// Every figure the catalogue defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FigureId {
    Iops,
    MibS,
    AvgBlock,
    InFlight,
    OpsPerS,
    TxnPerS,
    Nopm,
    Tpm,
    LatMean,
    LatP50,
    LatP90,
    LatP99,
    LatP999,
    LatMax,
}

/// One figure's definition.
#[derive(Debug)]
pub struct Def {
    pub id: FigureId,
    /// Its name on the command line (`--metric`) and in JSON and CSV.
    pub key: &'static str,
    /// Other spellings `--metric` accepts.
    pub aliases: &'static [&'static str],
    /// Its label in tables and charts.
    pub name: &'static str,
    pub unit: Unit,
    /// What it counts, in a sentence.
    pub counts: &'static str,
    pub direction: Direction,
    /// The kinds of point that have it.
    pub families: &'static [Family],
}

const ALL: &[Family] = &[Family::Device, Family::Kv, Family::Oltp];
const DEVICE: &[Family] = &[Family::Device];

/// The catalogue, in the order views list figures.
pub const CATALOGUE: &[Def] = &[
    Def {
        id: FigureId::Iops,
        key: "iops",
        aliases: &[],
        name: "IOPS",
        unit: Unit::PerSecond,
        counts: "I/O requests of every kind (read, write, trim, fsync) completed per second of measured time",
        direction: Direction::HigherIsBetter,
        families: DEVICE,
    },
    Def {
        id: FigureId::MibS,
        key: "mib_s",
        aliases: &["bw", "mibs"],
        name: "MiB/s",
        unit: Unit::MibPerSecond,
        counts: "bytes read and written by the requests per second, in MiB (2^20 bytes)",
        direction: Direction::HigherIsBetter,
        families: DEVICE,
    },
    Def {
        id: FigureId::AvgBlock,
        key: "avg_block",
        aliases: &["avg-block"],
        name: "avg block",
        unit: Unit::Bytes,
        counts: "bytes per request (MiB/s over IOPS): what a block size split really issued; a description of the load, not a score",
        direction: Direction::Neither,
        families: DEVICE,
    },
    Def {
        id: FigureId::InFlight,
        key: "in_flight",
        aliases: &["in-flight", "inflight"],
        name: "in flight (IOPS x mean lat)",
        unit: Unit::Number,
        counts: "requests in flight by Little's law: the sum over operation kinds of their rate times their mean total latency; held against the slots (qd x jobs), not a score",
        direction: Direction::Neither,
        families: DEVICE,
    },
    Def {
        id: FigureId::OpsPerS,
        key: "ops_s",
        aliases: &["ops", "throughput"],
        name: "ops/s",
        unit: Unit::PerSecond,
        counts: "key-value operations of every type in the phase (reads, updates, inserts, scans ...) completed per second",
        direction: Direction::HigherIsBetter,
        families: &[Family::Kv],
    },
    Def {
        id: FigureId::TxnPerS,
        key: "txn_s",
        aliases: &["tps"],
        name: "txn/s",
        unit: Unit::PerSecond,
        counts: "transactions of every type finished (committed or rolled back as intended) per second",
        direction: Direction::HigherIsBetter,
        families: &[Family::Oltp],
    },
    Def {
        id: FigureId::Nopm,
        key: "nopm",
        aliases: &[],
        name: "NOPM",
        unit: Unit::PerMinute,
        counts: "New-Order transactions committed per minute of measured time (TPC-C's throughput)",
        direction: Direction::HigherIsBetter,
        families: &[Family::Oltp],
    },
    Def {
        id: FigureId::Tpm,
        key: "tpm",
        aliases: &[],
        name: "TPM",
        unit: Unit::PerMinute,
        counts: "transactions of every type finished per minute",
        direction: Direction::HigherIsBetter,
        families: &[Family::Oltp],
    },
    Def {
        id: FigureId::LatMean,
        key: "mean",
        aliases: &[],
        name: "mean lat",
        unit: Unit::Nanoseconds,
        counts: "mean latency of one operation type, on the row's basis",
        direction: Direction::LowerIsBetter,
        families: ALL,
    },
    Def {
        id: FigureId::LatP50,
        key: "p50",
        aliases: &["median"],
        name: "p50 lat",
        unit: Unit::Nanoseconds,
        counts: "median latency of one operation type, on the row's basis",
        direction: Direction::LowerIsBetter,
        families: ALL,
    },
    Def {
        id: FigureId::LatP90,
        key: "p90",
        aliases: &[],
        name: "p90 lat",
        unit: Unit::Nanoseconds,
        counts: "90th percentile latency of one operation type (TPC-C's response-time limit is on it)",
        direction: Direction::LowerIsBetter,
        families: ALL,
    },
    Def {
        id: FigureId::LatP99,
        key: "p99",
        aliases: &[],
        name: "p99 lat",
        unit: Unit::Nanoseconds,
        counts: "99th percentile latency of one operation type, on the row's basis",
        direction: Direction::LowerIsBetter,
        families: ALL,
    },
    Def {
        id: FigureId::LatP999,
        key: "p99.9",
        aliases: &["p999"],
        name: "p99.9 lat",
        unit: Unit::Nanoseconds,
        counts: "99.9th percentile latency of one operation type, on the row's basis",
        direction: Direction::LowerIsBetter,
        families: ALL,
    },
    Def {
        id: FigureId::LatMax,
        key: "max",
        aliases: &[],
        name: "max lat",
        unit: Unit::Nanoseconds,
        counts: "the longest latency of one operation type, on the row's basis",
        direction: Direction::LowerIsBetter,
        families: ALL,
    },
];

impl Def {
    /// A value with its unit named, as tables write a figure whose column
    /// does not name it: "45.2k IOPS", "1.20k ops/s", "12.5 MiB/s";
    /// latencies and sizes carry their unit already ("176us", "4k").
    pub fn with_unit(&self, v: f64) -> String {
        let s = self.unit.format(v);
        match self.unit {
            Unit::PerSecond | Unit::PerMinute | Unit::MibPerSecond => format!("{s} {}", self.name),
            Unit::Nanoseconds | Unit::Bytes | Unit::Number => s,
        }
    }
}

impl FigureId {
    pub fn def(self) -> &'static Def {
        CATALOGUE
            .iter()
            .find(|d| d.id == self)
            .expect("every figure is in the catalogue")
    }

    /// The figure `--metric` names by key or alias.
    pub fn parse(s: &str) -> Option<FigureId> {
        CATALOGUE
            .iter()
            .find(|d| d.key == s || d.aliases.contains(&s))
            .map(|d| d.id)
    }

    pub fn is_latency(self) -> bool {
        self.def().unit == Unit::Nanoseconds
    }

    pub fn applies_to(self, f: Family) -> bool {
        self.def().families.contains(&f)
    }
}

/// Every `--metric` key, comma-separated, for help and errors.
pub fn keys() -> String {
    CATALOGUE
        .iter()
        .map(|d| d.key)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The throughput figure of a kind of point.
pub fn throughput(f: Family) -> FigureId {
    match f {
        Family::Device => FigureId::Iops,
        Family::Kv => FigureId::OpsPerS,
        Family::Oltp => FigureId::TxnPerS,
    }
}

/// What `compare` shows when `--metric` is not given, per kind of point.
pub fn defaults(f: Family) -> &'static [FigureId] {
    use FigureId::*;
    match f {
        Family::Device => &[Iops, MibS, AvgBlock, LatMean, LatP99, InFlight],
        Family::Kv => &[OpsPerS, LatMean, LatP99],
        Family::Oltp => &[Nopm, Tpm, LatP90],
    }
}

/// The catalogue as the markdown table docs/results.md carries.
pub fn markdown() -> String {
    let mut o = String::from(
        "| key | name | unit | counts | better | points |\n|---|---|---|---|---|---|\n",
    );
    for d in CATALOGUE {
        let better = match d.direction {
            Direction::HigherIsBetter => "higher",
            Direction::LowerIsBetter => "lower",
            Direction::Neither => "neither",
        };
        let fams: Vec<&str> = d.families.iter().map(|f| f.name()).collect();
        o.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} |\n",
            d.key,
            d.name,
            d.unit.name(),
            d.counts,
            better,
            fams.join(", ")
        ));
    }
    o.push_str("\nLatency bases (each latency row names its own):\n\n");
    for b in Basis::ALL {
        o.push_str(&format!("- **{}**: {}\n", b.name(), b.meaning()));
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_aliases_are_unique_and_parse_back() {
        let mut seen = std::collections::BTreeSet::new();
        for d in CATALOGUE {
            assert_eq!(FigureId::parse(d.key), Some(d.id));
            for k in std::iter::once(&d.key).chain(d.aliases) {
                assert!(seen.insert(*k), "{k} twice");
            }
            assert_eq!(d.id.def().key, d.key);
        }
        assert_eq!(FigureId::parse("speed"), None);
    }

    #[test]
    fn a_value_with_its_unit() {
        assert_eq!(FigureId::Iops.def().with_unit(45_231.7), "45.2k IOPS");
        assert_eq!(FigureId::OpsPerS.def().with_unit(950.0), "950 ops/s");
        assert_eq!(FigureId::MibS.def().with_unit(12.5), "12.5 MiB/s");
        assert_eq!(FigureId::LatP99.def().with_unit(176_400.0), "176us");
    }

    /// docs/results.md lists the catalogue as `markdown()` writes it.
    #[test]
    fn the_results_doc_lists_the_catalogue() {
        let doc = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/results.md"),
        )
        .unwrap();
        assert!(
            doc.contains(&markdown()),
            "docs/results.md's figure catalogue differs from figures::markdown(); paste it:\n{}",
            markdown()
        );
    }
}
