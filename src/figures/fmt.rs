//! How the catalogue writes a value for people: small deterministic number
//! formatters (counts, MiB/s, latencies with three significant digits,
//! sizes) shared by every view: the terminal, compare, charts, tables, CSV.

use crate::plan::parse::{format_ns, format_size};

/// Trim a fixed-precision decimal: "12.500" -> "12.5", "3.000" -> "3".
pub fn trim(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Plain number with up to 3 decimals.
pub fn plain(v: f64) -> String {
    if v.abs() >= 1000.0 {
        format!("{v:.0}")
    } else {
        trim(format!("{v:.3}"))
    }
}

/// Byte counts as block sizes: 4096 -> "4k"; non-integers rounded.
pub fn bytes(v: f64) -> String {
    if v >= 1.0 {
        format_size(v.round() as u64)
    } else {
        plain(v)
    }
}

/// Nanoseconds for people, without trailing zeros: "10ms", "182.1us".
pub fn ns(v: f64) -> String {
    let s = format_ns(v);
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    format!("{}{unit}", trim(num.to_string()))
}

/// Nanoseconds with three significant digits, so a ratio beside them can
/// be checked: "3.01us", "48.2us", "182us", "1.25ms".
pub fn ns3(v: f64) -> String {
    let (scaled, unit) = if v < 1e3 {
        (v, "ns")
    } else if v < 1e6 {
        (v / 1e3, "us")
    } else if v < 1e9 {
        (v / 1e6, "ms")
    } else {
        (v / 1e9, "s")
    };
    let digits = if scaled >= 99.95 || unit == "ns" {
        0
    } else if scaled >= 9.995 {
        1
    } else {
        2
    };
    format!("{scaled:.digits$}{unit}")
}

pub fn count(v: f64) -> String {
    format_count(v)
}

/// Percentile tick: 99.99000000001 -> "99.99".
pub fn pctile(v: f64) -> String {
    trim(format!("{v:.5}"))
}

pub fn pct(v: f64) -> String {
    format!("{}%", trim(format!("{v:.1}")))
}

pub fn mib(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        trim(format!("{v:.2}"))
    }
}

/// Speedup factor: "3.2x".
pub fn times(v: f64) -> String {
    format!("{}x", trim(format!("{v:.2}")))
}

pub fn secs(v: f64) -> String {
    format!("{}s", trim(format!("{v:.1}")))
}

/// 45231.7 -> "45.2k"
pub fn format_count(v: f64) -> String {
    if v >= 1e9 {
        format!("{:.2}G", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(plain(12.5), "12.5");
        assert_eq!(plain(3.0), "3");
        assert_eq!(bytes(4096.0), "4k");
        assert_eq!(pctile(99.99000000001), "99.99");
        assert_eq!(times(3.0), "3x");
        assert_eq!(mib(1234.56), "1235");
        assert_eq!(ns(10_000_000.0), "10ms");
        assert_eq!(ns(182_100.0), "182.1us");
        assert_eq!(ns(500.0), "500ns");
    }
}
