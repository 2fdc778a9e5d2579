//! Settings values typed where the user typed them: a byte size, a
//! duration, a count, a block-size axis, an open-loop rate axis, a list of
//! durations. Clap's value parsers make them from a flag (so a bad value is
//! refused before anything runs, exit 2 naming the flag), plan files reach
//! them through the same clap definitions, and fio job files through the
//! same parsers (`plan::parse`, `plan::sweep`). Below commands/ code reads
//! the value (`bytes()`, `ns()`, ...) and never parses what the user wrote.
//! Each keeps the text as given, for messages and for the settings a fleet
//! sends its hosts (serialized as that text, parsed again on arrival).

use std::fmt;
use std::str::FromStr;

use crate::error::UsageError;
use crate::plan::parse::{parse_duration_ns, parse_size};
use crate::plan::sweep::{self, RateAxis};

/// Why a typed value was refused, without its field: clap (or the plan
/// file's reader) names the flag; `cli::typed_value_error` finds it among
/// clap's errors to print it as every other usage error is printed.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitError(pub String);

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UnitError {}

fn message_of(e: anyhow::Error) -> UnitError {
    UnitError(match e.downcast::<UsageError>() {
        Ok(u) => u.message,
        Err(other) => other.to_string(),
    })
}

/// The parts every typed value shares: the text as given, `FromStr` through
/// its parser, `Display` and serde as the text.
macro_rules! typed_value {
    ($name:ident, $ty:ty, $parse:expr) => {
        impl $name {
            /// The value as the user wrote it.
            pub fn text(&self) -> &str {
                &self.text
            }
        }

        impl FromStr for $name {
            type Err = UnitError;
            fn from_str(s: &str) -> Result<Self, UnitError> {
                let parse: fn(&str) -> anyhow::Result<$ty> = $parse;
                let value = parse(s).map_err(message_of)?;
                Ok(Self {
                    value,
                    text: s.trim().to_string(),
                })
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.text)
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.text)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

/// A byte size (`4k`, `1MiB`, `512`).
#[derive(Debug, Clone, PartialEq)]
pub struct Size {
    value: u64,
    text: String,
}
typed_value!(Size, u64, |s| parse_size("", s));

impl Size {
    pub fn bytes(&self) -> u64 {
        self.value
    }

    /// A size iolab found (a fio job file's), written in bytes.
    pub fn from_bytes(bytes: u64) -> Self {
        Self {
            value: bytes,
            text: bytes.to_string(),
        }
    }
}

/// A duration (`500us`, `10s`, `2m`), in nanoseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    value: u64,
    text: String,
}
typed_value!(Span, u64, |s| parse_duration_ns("", s));

impl Span {
    pub fn ns(&self) -> u64 {
        self.value
    }

    /// A duration iolab computed (a budget's share), written in ns.
    pub fn from_ns(ns: u64) -> Self {
        Self {
            value: ns,
            text: format!("{ns}ns"),
        }
    }
}

/// A count with an optional k/m/g suffix in powers of 1000 (`10k`, `2m`).
#[derive(Debug, Clone, PartialEq)]
pub struct Count {
    value: u64,
    text: String,
}
typed_value!(Count, u64, parse_count);

impl Count {
    pub fn get(&self) -> u64 {
        self.value
    }
}

fn parse_count(s: &str) -> anyhow::Result<u64> {
    let t = s.trim().to_ascii_lowercase();
    let (num, mult) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1_000),
        Some('m') => (&t[..t.len() - 1], 1_000_000),
        Some('g') => (&t[..t.len() - 1], 1_000_000_000),
        _ => (t.as_str(), 1),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| anyhow::anyhow!("'{s}' is not a count (examples: 1000, 10k, 2m)"))?;
    n.checked_mul(mult)
        .ok_or_else(|| anyhow::anyhow!("'{s}' is too large"))
}

/// Durations separated by commas (`--fake-latency 80us,120us`).
#[derive(Debug, Clone, PartialEq)]
pub struct Spans {
    value: Vec<u64>,
    text: String,
}
typed_value!(Spans, Vec<u64>, |s| s
    .split(',')
    .map(|x| parse_duration_ns("", x))
    .collect());

impl Spans {
    pub fn ns(&self) -> &[u64] {
        &self.value
    }
}

/// Sizes separated by commas (`--db 800,10k`); `none` (or nothing) is
/// none.
#[derive(Debug, Clone, PartialEq)]
pub struct Sizes {
    value: Vec<u64>,
    text: String,
}
typed_value!(Sizes, Vec<u64>, |s| list_or_none(s)
    .map(|x| parse_size("", x))
    .collect());

/// The items of a comma list, empty ones skipped; `none` has none.
fn list_or_none(s: &str) -> impl Iterator<Item = &str> {
    let none = s.trim() == "none";
    s.split(',')
        .map(str::trim)
        .filter(move |x| !none && !x.is_empty())
}

/// Percentages separated by commas (`--rates 10,50,90`); `none` is none.
#[derive(Debug, Clone, PartialEq)]
pub struct Percents {
    value: Vec<f64>,
    text: String,
}
typed_value!(Percents, Vec<f64>, |s| list_or_none(s)
    .map(|x| {
        x.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| anyhow::anyhow!("'{x}' is not a percentage"))
    })
    .collect());

impl Percents {
    pub fn values(&self) -> &[f64] {
        &self.value
    }
}

/// A link rate tc's tbf accepts (`100mbit`, `1gbit`, `125mbps`): a positive
/// number and one of tc's units (bits or bytes per second, SI or IEC),
/// checked here so a bad one is refused before anything is built. Handed
/// to tc as written.
#[derive(Debug, Clone, PartialEq)]
pub struct TcRate {
    value: (),
    text: String,
}
typed_value!(TcRate, (), |s| if tc_rate(s) {
    Ok(())
} else {
    anyhow::bail!(
        "'{s}' is not a rate (a number with a unit tc knows: 100mbit, 1gbit, 125mbps, ...)"
    )
});

fn tc_rate(s: &str) -> bool {
    const UNITS: [&str; 19] = [
        "", "bit", "kbit", "mbit", "gbit", "tbit", "kibit", "mibit", "gibit", "tibit", "bps",
        "kbps", "mbps", "gbps", "tbps", "kibps", "mibps", "gibps", "tibps",
    ];
    let lower = s.trim().to_ascii_lowercase();
    let split = lower
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(lower.len());
    let (number, unit) = lower.split_at(split);
    number
        .parse::<f64>()
        .is_ok_and(|n| n > 0.0 && n.is_finite())
        && UNITS.contains(&unit)
}

impl Sizes {
    pub fn bytes(&self) -> &[u64] {
        &self.value
    }
}

/// The block-size axis of a sweep: sizes, ranges or weighted splits
/// (`4k,64k`, `1k..64m`, `4k:70,64k:30;8k`), each point's split.
#[derive(Debug, Clone, PartialEq)]
pub struct BsAxis {
    value: Vec<Vec<(u64, u32)>>,
    text: String,
}
typed_value!(BsAxis, Vec<Vec<(u64, u32)>>, |s| sweep::parse_bs_axis(
    "", s
));

impl BsAxis {
    pub fn splits(&self) -> &[Vec<(u64, u32)>] {
        &self.value
    }
}

/// Open-loop rates: IOPS or percentages of the closed-loop maximum.
#[derive(Debug, Clone, PartialEq)]
pub struct Rates {
    value: RateAxis,
    text: String,
}
typed_value!(Rates, RateAxis, |s| sweep::parse_rate_axis("", s));

impl Rates {
    pub fn axis(&self) -> &RateAxis {
        &self.value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_keep_their_text_and_parse_once() {
        let s: Size = " 4k".parse().unwrap();
        assert_eq!((s.bytes(), s.text()), (4096, "4k"));
        let d: Span = "1.5s".parse().unwrap();
        assert_eq!(d.ns(), 1_500_000_000);
        assert_eq!(d.to_string(), "1.5s");
        assert_eq!("10k".parse::<Count>().unwrap().get(), 10_000);
        assert_eq!("2M".parse::<Count>().unwrap().get(), 2_000_000);
        assert_eq!(
            "80us,1ms".parse::<Spans>().unwrap().ns(),
            &[80_000, 1_000_000]
        );
        assert_eq!("4k,64k".parse::<BsAxis>().unwrap().splits().len(), 2);
        assert!(matches!(
            "10%,50%".parse::<Rates>().unwrap().axis(),
            RateAxis::PercentOfMax(_)
        ));
    }

    #[test]
    fn errors_are_the_parsers_messages_without_a_field() {
        let e = "4q".parse::<Size>().unwrap_err().to_string();
        assert!(e.contains("unknown size unit 'q'"), "{e}");
        assert!("5 parsecs".parse::<Span>().is_err());
        assert!("x".parse::<Count>().is_err());
        assert!("99999999999999999999g".parse::<Count>().is_err());
        assert!("10%,1000".parse::<Rates>().is_err());
    }

    #[test]
    fn rates_are_checked_as_tc_reads_them() {
        for ok in ["1gbit", "100mbit", "125MBps", "1.5gbit", "8000", "10kibit"] {
            assert!(tc_rate(ok), "{ok}");
        }
        for bad in [
            "abc", "", "0mbit", "1 gbit", "1g", "mbit", "-5mbit", "1e3bit",
        ] {
            assert!(!tc_rate(bad), "{bad}");
        }
    }

    #[test]
    fn serde_is_the_text() {
        let s: Size = "64k".parse().unwrap();
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(json, "\"64k\"");
        assert_eq!(serde_json::from_str::<Size>(&json).unwrap(), s);
        assert!(serde_json::from_str::<Size>("\"4q\"").is_err());
    }
}
