//! YCSB property files (`-P file`: `key=value` lines, `#` comments) and
//! `-p key=value` overrides, plus the built-in core workloads A-F (the same
//! text as examples/ycsb/workloada..f).

use crate::error::usage;
use std::collections::BTreeMap;
use std::path::Path;

/// Properties in the order they were set; later settings win.
#[derive(Debug, Clone, Default)]
pub struct Props {
    map: BTreeMap<String, String>,
}

const BUILTIN: [(&str, &str); 6] = [
    ("a", include_str!("../../examples/ycsb/workloada")),
    ("b", include_str!("../../examples/ycsb/workloadb")),
    ("c", include_str!("../../examples/ycsb/workloadc")),
    ("d", include_str!("../../examples/ycsb/workloadd")),
    ("e", include_str!("../../examples/ycsb/workloade")),
    ("f", include_str!("../../examples/ycsb/workloadf")),
];

/// The YCSB properties iolab reads (CoreWorkload's, the client's
/// threadcount and maxexecutiontime, status.interval).
pub const USED: &[&str] = &[
    "recordcount",
    "operationcount",
    "fieldcount",
    "fieldlength",
    "fieldlengthdistribution",
    "writeallfields",
    "readproportion",
    "updateproportion",
    "insertproportion",
    "scanproportion",
    "readmodifywriteproportion",
    "requestdistribution",
    "zipfianconstant",
    "minscanlength",
    "maxscanlength",
    "scanlengthdistribution",
    "insertstart",
    "insertcount",
    "insertorder",
    "zeropadding",
    "hotspotdatafraction",
    "hotspotopnfraction",
    "exponential.percentile",
    "exponential.frac",
    "threadcount",
    "maxexecutiontime",
    "status.interval",
];

/// A warning for every property iolab does not use, so nothing a YCSB user
/// relies on is ignored without a word.
pub fn unused_notices(p: &Props) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in p.entries() {
        if USED.contains(&k.as_str()) {
            continue;
        }
        let why = match (k.as_str(), v.trim()) {
            ("workload", w) if w.ends_with("CoreWorkload") => continue,
            ("readallfields", "true") => continue,
            ("readallfields", _) => "iolab reads whole records (one value per key)",
            ("measurementtype", _) | ("histogram.buckets", _) => {
                "iolab always keeps HDR histograms and a 1 s time series"
            }
            ("db", _) | ("table", _) => "the engine is chosen with --engine",
            ("target", _) => "use --target-ops (or --rate)",
            ("workload", _) => "only CoreWorkload's generators are implemented",
            _ => "iolab does not use it",
        };
        out.push(format!("YCSB property {k}={v} is ignored: {why}"));
    }
    out
}

impl Props {
    /// The built-in core workload for letter a..f (or "workloada".."workloadf").
    pub fn builtin(name: &str) -> Option<Props> {
        let n = name.trim().to_ascii_lowercase();
        let letter = n.strip_prefix("workload").unwrap_or(&n);
        BUILTIN.iter().find(|(l, _)| *l == letter).map(|(_, text)| {
            let mut p = Props::default();
            // Built-in text is ours and well formed.
            let _ = p.load_str(text, "builtin");
            p
        })
    }

    /// Parse Java-properties-style text: `key=value`, `key:value` or `key value`.
    pub fn load_str(&mut self, text: &str, origin: &str) -> anyhow::Result<()> {
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
                continue;
            }
            let Some(pos) = line.find(['=', ':', ' ', '\t']) else {
                return Err(usage(
                    format!("{origin}:{}", i + 1),
                    format!("expected key=value, got '{line}'"),
                ));
            };
            let key = line[..pos].trim();
            let value = line[pos + 1..].trim();
            if key.is_empty() {
                return Err(usage(format!("{origin}:{}", i + 1), "empty property name"));
            }
            self.map.insert(key.to_string(), value.to_string());
        }
        Ok(())
    }

    pub fn load_file(&mut self, path: &Path) -> anyhow::Result<()> {
        let text = crate::input::read_text(path, "-P", Some(crate::input::CONFIG_MAX))?;
        self.load_str(&text, &path.display().to_string())
    }

    /// A `-p key=value` override.
    pub fn set_arg(&mut self, kv: &str) -> anyhow::Result<()> {
        let Some((k, v)) = kv.split_once('=') else {
            return Err(usage("-p", format!("expected key=value, got '{kv}'")));
        };
        self.map.insert(k.trim().to_string(), v.trim().to_string());
        Ok(())
    }

    pub fn set(&mut self, k: &str, v: impl ToString) {
        self.map.insert(k.to_string(), v.to_string());
    }

    pub fn get(&self, k: &str) -> Option<&str> {
        self.map.get(k).map(|s| s.as_str())
    }

    pub fn str_or<'a>(&'a self, k: &str, default: &'a str) -> &'a str {
        self.get(k).unwrap_or(default)
    }

    pub fn f64_or(&self, k: &str, default: f64) -> anyhow::Result<f64> {
        match self.get(k) {
            None => Ok(default),
            Some(v) => v
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| usage(k, format!("'{v}' is not a number"))),
        }
    }

    pub fn i64_or(&self, k: &str, default: i64) -> anyhow::Result<i64> {
        match self.get(k) {
            None => Ok(default),
            Some(v) => v
                .parse::<i64>()
                .map_err(|_| usage(k, format!("'{v}' is not an integer"))),
        }
    }

    pub fn bool_or(&self, k: &str, default: bool) -> anyhow::Result<bool> {
        match self.get(k) {
            None => Ok(default),
            // Java's Boolean.parseBoolean: "true" (any case) is true, anything else false.
            Some(v) => Ok(v.eq_ignore_ascii_case("true")),
        }
    }

    /// Set every property of `other` here (its values win).
    pub fn overlay(&mut self, other: &Props) {
        for (k, v) in &other.map {
            self.map.insert(k.clone(), v.clone());
        }
    }

    pub fn entries(&self) -> &BTreeMap<String, String> {
        &self.map
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_override() {
        let mut p = Props::builtin("a").unwrap();
        assert_eq!(p.get("readproportion"), Some("0.5"));
        assert_eq!(p.get("requestdistribution"), Some("zipfian"));
        p.set_arg("recordcount=50").unwrap();
        assert_eq!(p.i64_or("recordcount", 0).unwrap(), 50);
        p.load_str("# c\nfieldcount: 3\nfieldlength 10\n", "t")
            .unwrap();
        assert_eq!(p.get("fieldcount"), Some("3"));
        assert_eq!(p.get("fieldlength"), Some("10"));
        assert!(p.set_arg("novalue").is_err());
        assert!(p.load_str("junk", "t").is_err());
        assert!(Props::builtin("workloadf").is_some());
        assert!(Props::builtin("g").is_none());
        p.set_arg("recordcount=x").unwrap();
        assert_eq!(
            crate::error::exit_code(&p.i64_or("recordcount", 0).unwrap_err()),
            2
        );
    }
}
