//! Parsing of sizes (`4k`, `1MiB`), durations (`500us`, `10s`, `2m`), block
//! size splits (`4k:70,64k:30`) and CPU lists (`0,2-3`). Errors name the field.

use crate::error::usage;

/// Parse a byte size: a plain number is bytes; suffixes k/m/g/t (and KiB,
/// KB, ...) are powers of 1024 like fio's defaults.
pub fn parse_size(field: &str, s: &str) -> anyhow::Result<u64> {
    let t = s.trim();
    if t.is_empty() {
        return Err(usage(field, "empty size"));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        "p" | "pb" | "pib" => 1 << 50,
        other => {
            return Err(usage(
                field,
                format!("unknown size unit '{other}' in '{s}' (use k, m, g, t)"),
            ))
        }
    };
    let value: f64 = num.parse().map_err(|_| {
        usage(
            field,
            format!("'{s}' is not a size (examples: 4k, 1m, 512, 1GiB)"),
        )
    })?;
    let bytes = value * mult as f64;
    if !bytes.is_finite() || bytes > u64::MAX as f64 / 2.0 {
        return Err(usage(field, format!("'{s}' is too large")));
    }
    if bytes.fract() != 0.0 {
        return Err(usage(
            field,
            format!("'{s}' is not a whole number of bytes"),
        ));
    }
    Ok(bytes as u64)
}

/// Parse a duration into nanoseconds: `ns`, `us`, `ms`, `s` (default), `m`, `h`.
pub fn parse_duration_ns(field: &str, s: &str) -> anyhow::Result<u64> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let mult: f64 = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "" | "s" | "sec" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        other => {
            return Err(usage(
                field,
                format!("unknown duration unit '{other}' in '{s}' (use us, ms, s, m, h)"),
            ))
        }
    };
    let value: f64 = num.parse().map_err(|_| {
        usage(
            field,
            format!("'{s}' is not a duration (examples: 500us, 10s, 2m)"),
        )
    })?;
    let ns = value * mult;
    if !ns.is_finite() || ns > 1e18 {
        return Err(usage(field, format!("'{s}' is too long")));
    }
    Ok(ns.round() as u64)
}

/// Parse a block size or a weighted split: `4k` or `4k:70,64k:30`.
/// Returns (size, weight) pairs; a single size gets weight 100.
pub fn parse_bs_split(field: &str, s: &str) -> anyhow::Result<Vec<(u64, u32)>> {
    let mut out = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        let (size, weight) = match part.split_once(':') {
            Some((b, w)) => {
                let w: u32 = w.trim().parse().ok().filter(|&w| w > 0).ok_or_else(|| {
                    usage(
                        field,
                        format!("weight '{w}' in '{part}' is not a positive whole number"),
                    )
                })?;
                (parse_size(field, b)?, w)
            }
            None => (parse_size(field, part)?, 0),
        };
        if size == 0 {
            return Err(usage(field, "block size must be greater than 0"));
        }
        out.push((size, weight));
    }
    if out.len() == 1 {
        out[0].1 = 100;
    } else if out.iter().any(|&(_, w)| w == 0) {
        return Err(usage(
            field,
            format!("'{s}': every size in a split needs a weight (4k:70,64k:30)"),
        ));
    }
    let total: u64 = out.iter().map(|&(_, w)| w as u64).sum();
    if total == 0 || total > 1_000_000 {
        return Err(usage(
            field,
            format!("'{s}': weights must add up to a positive number"),
        ));
    }
    Ok(out)
}

/// Parse a CPU list: `0,2-3` -> [0, 2, 3].
pub fn parse_cpu_list(field: &str, s: &str) -> anyhow::Result<Vec<usize>> {
    let mut out = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        let parse = |x: &str| -> anyhow::Result<usize> {
            x.trim()
                .parse()
                .map_err(|_| usage(field, format!("'{x}' is not a CPU number")))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (parse(a)?, parse(b)?);
                if a > b {
                    return Err(usage(field, format!("range '{part}' is backwards")));
                }
                out.extend(a..=b);
            }
            None => out.push(parse(part)?),
        }
    }
    let ncpu = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let max = num_cpus_configured().max(ncpu);
    if let Some(&bad) = out.iter().find(|&&c| c >= max) {
        return Err(usage(
            field,
            format!("CPU {bad} does not exist (this machine has {max})"),
        ));
    }
    Ok(out)
}

fn num_cpus_configured() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    if n > 0 {
        n as usize
    } else {
        1
    }
}

/// Format bytes as the shortest exact binary unit: 4096 -> "4k", 1048576 -> "1m".
pub fn format_size(bytes: u64) -> String {
    const UNITS: [(&str, u64); 5] = [
        ("p", 1 << 50),
        ("t", 1 << 40),
        ("g", 1 << 30),
        ("m", 1 << 20),
        ("k", 1 << 10),
    ];
    for (u, m) in UNITS {
        if bytes >= m && bytes.is_multiple_of(m) {
            return format!("{}{u}", bytes / m);
        }
    }
    bytes.to_string()
}

/// Format nanoseconds for people: 950ns, 12.3us, 4.56ms, 1.20s.
pub fn format_ns(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0}ns")
    } else if ns < 1e6 {
        format!("{:.1}us", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2}ms", ns / 1e6)
    } else {
        format!("{:.2}s", ns / 1e9)
    }
}

/// Bytes for people: 512 B, 11.8 MiB, 2.00 GiB.
pub fn human_bytes(b: u64) -> String {
    let f = b as f64;
    if b < 1024 {
        format!("{b} B")
    } else if f < (1u64 << 20) as f64 {
        format!("{:.1} KiB", f / 1024.0)
    } else if f < (1u64 << 30) as f64 {
        format!("{:.1} MiB", f / (1u64 << 20) as f64)
    } else {
        format!("{:.2} GiB", f / (1u64 << 30) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::UsageError;

    fn field_of(e: anyhow::Error) -> String {
        e.downcast::<UsageError>().expect("usage error").field
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("--bs", "4k").unwrap(), 4096);
        assert_eq!(parse_size("--bs", "4K").unwrap(), 4096);
        assert_eq!(parse_size("--bs", "1MiB").unwrap(), 1 << 20);
        assert_eq!(parse_size("--bs", "512").unwrap(), 512);
        assert_eq!(parse_size("--size", "1.5g").unwrap(), 3 << 29);
        assert_eq!(field_of(parse_size("--bs", "4q").unwrap_err()), "--bs");
        assert!(parse_size("--bs", "").is_err());
        assert!(parse_size("--bs", "-4k").is_err());
        assert!(parse_size("--bs", "0.3").is_err());
        assert!(parse_size("--bs", "99999999999999999999999t").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(
            parse_duration_ns("--runtime", "10").unwrap(),
            10_000_000_000
        );
        assert_eq!(parse_duration_ns("--runtime", "500us").unwrap(), 500_000);
        assert_eq!(
            parse_duration_ns("--runtime", "2m").unwrap(),
            120_000_000_000
        );
        assert_eq!(parse_duration_ns("--ramp", "1.5s").unwrap(), 1_500_000_000);
        assert_eq!(
            field_of(parse_duration_ns("--ramp", "5 parsecs").unwrap_err()),
            "--ramp"
        );
    }

    #[test]
    fn bs_split() {
        assert_eq!(parse_bs_split("--bs", "4k").unwrap(), vec![(4096, 100)]);
        assert_eq!(
            parse_bs_split("--bs", "4k:70,64k:30").unwrap(),
            vec![(4096, 70), (65536, 30)]
        );
        assert!(parse_bs_split("--bs", "4k,64k").is_err());
        assert!(parse_bs_split("--bs", "0").is_err());
        assert!(parse_bs_split("--bs", "4k:x").is_err());
        assert!(parse_bs_split("--bs", "4k:0,8k:0").is_err());
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("--cpus", "0").unwrap(), vec![0]);
        assert!(parse_cpu_list("--cpus", "3-1").is_err());
        assert!(parse_cpu_list("--cpus", "99999").is_err());
        assert!(parse_cpu_list("--cpus", "a").is_err());
    }

    #[test]
    fn formatting() {
        assert_eq!(format_size(4096), "4k");
        assert_eq!(format_size(1 << 30), "1g");
        assert_eq!(format_size(1536), "1536");
        assert_eq!(format_ns(950.0), "950ns");
        assert_eq!(format_ns(12_345.0), "12.3us");
    }

    proptest::proptest! {
        #[test]
        fn size_roundtrip(n in 1u64..1_000_000, shift in 0u32..4) {
            let bytes = n << (10 * shift);
            proptest::prop_assert_eq!(parse_size("--bs", &format_size(bytes)).unwrap(), bytes);
        }

        #[test]
        fn size_never_panics(s in ".{0,12}") {
            let _ = parse_size("--bs", &s);
            let _ = parse_duration_ns("--runtime", &s);
            let _ = parse_bs_split("--bs", &s);
        }
    }
}
