//! The targets of a media run (`iolab device -t A -t B ...`): each
//! `--target` value is `[LABEL=]PATH` (a directory, a file, a block device
//! or a remote URL). Labels default to a short unique form of the path
//! (its last components, as many as it takes). Every target is checked
//! with the rules of a single-target run before anything is created; an
//! error names `--target` and the value, with the rule that refused it.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::dut::TargetOptions;
use crate::error::{usage, UsageError};

/// One `--target` of a media run.
#[derive(Debug, Clone, PartialEq)]
pub struct GivenTarget {
    pub label: String,
    pub path: PathBuf,
    /// The value as given (for messages).
    pub value: String,
}

impl GivenTarget {
    /// The remote endpoint, for a URL.
    pub fn remote(&self) -> Option<crate::plan::endpoint::RemoteEndpoint> {
        crate::plan::endpoint::endpoint_of(&self.path)
            .ok()
            .flatten()
    }
}

/// Characters a label may hold: it names points ("LABEL r1: JOB"),
/// chart legends and `--baseline`.
fn label_ok(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 40
        && !s.starts_with('-')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._+:@-".contains(c))
}

/// Split `LABEL=PATH`; a value whose part before `=` could not be a label
/// (it holds a '/', say) is a path.
fn split_label(value: &str) -> (Option<&str>, &str) {
    match value.split_once('=') {
        Some((l, p)) if !l.contains('/') && !p.is_empty() && !l.is_empty() => (Some(l), p),
        _ => (None, value),
    }
}

/// Why `LABEL=PATH` with one side empty (`=DIR`, `a=`) is refused, unless
/// a file of that very name exists (then it is a path).
fn empty_side(value: &str) -> Option<String> {
    let (l, p) = value.split_once('=')?;
    if l.contains('/') || !(l.is_empty() || p.is_empty()) || Path::new(value).exists() {
        return None;
    }
    Some(if l.is_empty() {
        format!("{value}: the label before '=' is empty (give LABEL=PATH, or the path alone)")
    } else {
        format!("{value}: the path after '=' is empty (give LABEL=PATH)")
    })
}

/// The components a default label is made of, last first.
fn components(path: &Path) -> (Option<String>, Vec<String>) {
    if let Some(s) = path.to_str() {
        if let Some((scheme, rest)) = s.split_once("://") {
            let parts = rest
                .split('/')
                .filter(|c| !c.is_empty())
                .rev()
                .map(|c| c.to_string())
                .collect();
            return (Some(scheme.to_string()), parts);
        }
    }
    let full = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mut parts: Vec<String> = full
        .components()
        .filter_map(|c| match c {
            std::path::Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .rev()
        .collect();
    if parts.is_empty() {
        parts.push("root".into());
    }
    (None, parts)
}

fn label_from(scheme: &Option<String>, parts: &[String], k: usize) -> String {
    let mut used: Vec<&str> = parts.iter().take(k).map(String::as_str).collect();
    used.reverse();
    let body: String = used
        .join("-")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._+:@-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    match scheme {
        Some(s) => format!("{s}:{body}"),
        None => body,
    }
}

/// Parse every `--target` value and give each its label. `reserved` are
/// labels taken already (the `--make` configurations).
pub fn parse(values: &[PathBuf], reserved: &[String]) -> anyhow::Result<Vec<GivenTarget>> {
    let mut explicit: Vec<Option<String>> = Vec::new();
    let mut paths: Vec<(PathBuf, String)> = Vec::new();
    for v in values {
        let value = v.to_string_lossy().into_owned();
        if let Some(why) = empty_side(&value) {
            return Err(usage("--target", why));
        }
        let (label, path) = split_label(&value);
        if let Some(l) = label {
            if !label_ok(l) {
                return Err(usage(
                    "--target",
                    format!("{value}: '{l}' is not a label (letters, digits and . _ + : @ -)"),
                ));
            }
        }
        if paths.iter().any(|(p, _)| p.as_path() == Path::new(path)) {
            return Err(usage("--target", format!("{value}: {path} is named twice")));
        }
        explicit.push(label.map(str::to_string));
        paths.push((PathBuf::from(path), value.clone()));
    }
    let comps: Vec<(Option<String>, Vec<String>)> =
        paths.iter().map(|(p, _)| components(p)).collect();
    let mut depth = vec![1usize; values.len()];
    let labels = loop {
        let labels: Vec<String> = (0..values.len())
            .map(|i| match &explicit[i] {
                Some(l) => l.clone(),
                None => label_from(&comps[i].0, &comps[i].1, depth[i]),
            })
            .collect();
        let clash = |i: usize| {
            reserved.contains(&labels[i])
                || labels
                    .iter()
                    .enumerate()
                    .any(|(j, l)| j != i && *l == labels[i])
        };
        let clashing: Vec<usize> = (0..labels.len()).filter(|&i| clash(i)).collect();
        if clashing.is_empty() {
            break labels;
        }
        let mut grew = false;
        for &i in &clashing {
            if explicit[i].is_none() && depth[i] < comps[i].1.len() {
                depth[i] += 1;
                grew = true;
            }
        }
        if !grew {
            let i = clashing[0];
            return Err(usage(
                "--target",
                format!(
                    "{}: its label '{}' is taken (by another target or a --make configuration); name it: LABEL={}",
                    paths[i].1,
                    labels[i],
                    paths[i].0.display()
                ),
            ));
        }
    };
    Ok(labels
        .into_iter()
        .zip(paths)
        .map(|(label, (path, value))| GivenTarget { label, path, value })
        .collect())
}

fn is_block_device(p: &Path) -> Option<u64> {
    std::fs::metadata(p)
        .ok()
        .filter(|m| m.file_type().is_block_device())
        .map(|m| m.rdev())
}

/// The `--destroy-data` value naming `t`'s device, else the first (whose
/// mismatch the check then reports), else none. Every `--destroy-data`
/// must name one of the targets.
pub fn destroy_data_for(
    targets: &[GivenTarget],
    destroy: &[PathBuf],
) -> anyhow::Result<Vec<Option<PathBuf>>> {
    for d in destroy {
        let named = is_block_device(d);
        if named.is_none() || !targets.iter().any(|t| is_block_device(&t.path) == named) {
            return Err(usage(
                "--destroy-data",
                format!("{} is not one of the --target devices", d.display()),
            ));
        }
    }
    Ok(targets
        .iter()
        .map(|t| {
            let dev = is_block_device(&t.path)?;
            destroy
                .iter()
                .find(|d| is_block_device(d) == Some(dev))
                .or(destroy.first())
                .cloned()
        })
        .collect())
}

/// The options a target is prepared with.
pub fn options_for(
    t: &GivenTarget,
    size: Option<u64>,
    overwrite: bool,
    destroy_data: Option<PathBuf>,
    keep: bool,
) -> TargetOptions {
    TargetOptions {
        path: Some(t.path.clone()),
        size,
        overwrite,
        destroy_data,
        keep,
    }
}

/// A usage error naming `--target` and the value.
pub fn name_target_text(value: &str, message: &str) -> anyhow::Error {
    usage("--target", format!("{value}: {message}"))
}

/// A target's check or set-up error as a usage error naming `--target`
/// and the value (with the rule that refused it); other errors get the
/// value as context.
pub fn name_target(t: &GivenTarget, e: anyhow::Error) -> anyhow::Error {
    match e.downcast::<UsageError>() {
        Ok(u) if u.field == "--target" => usage("--target", format!("{}: {}", t.value, u.message)),
        Ok(u) => usage("--target", format!("{}: {u}", t.value)),
        Err(e) => e.context(format!("--target {}", t.value)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(values: &[&str], reserved: &[&str]) -> anyhow::Result<Vec<String>> {
        let v: Vec<PathBuf> = values.iter().map(PathBuf::from).collect();
        let r: Vec<String> = reserved.iter().map(|s| s.to_string()).collect();
        Ok(parse(&v, &r)?.into_iter().map(|t| t.label).collect())
    }

    #[test]
    fn labels_are_given_or_the_shortest_unique_tail() {
        assert_eq!(
            labels(
                &["/nonexistent/a/data", "/nonexistent/b/data", "/x/ssd"],
                &[]
            )
            .unwrap(),
            ["a-data", "b-data", "ssd"]
        );
        assert_eq!(
            labels(&["fast=/nonexistent/a", "/nonexistent/b"], &[]).unwrap(),
            ["fast", "b"]
        );
        assert_eq!(
            labels(&["nbd://127.0.0.1:10809/exp", "/srv/exp"], &[]).unwrap(),
            ["nbd:exp", "exp"]
        );
        assert_eq!(
            labels(&["/nonexistent/m/ext4"], &["ext4"]).unwrap(),
            ["m-ext4"],
            "a --make name is taken"
        );
        assert_eq!(labels(&["/a=b/c"], &[]).unwrap(), ["c"], "a path with '='");
    }

    #[test]
    fn bad_labels_and_clashes_are_refused_naming_target() {
        for (values, reserved) in [
            (vec!["a b=/x"], vec![]),
            (vec!["x=/a", "x=/b"], vec![]),
            (vec!["ext4=/a"], vec!["ext4"]),
            (vec!["/a", "/a"], vec![]),
        ] {
            let e = labels(&values, &reserved).unwrap_err();
            let u = e.downcast::<UsageError>().unwrap();
            assert_eq!(u.field, "--target", "{values:?}: {u}");
        }
    }

    #[test]
    fn destroy_data_must_name_a_target_device() {
        let t = parse(&[PathBuf::from("/nonexistent/d")], &[]).unwrap();
        assert_eq!(destroy_data_for(&t, &[]).unwrap(), vec![None]);
        let e = destroy_data_for(&t, &[PathBuf::from("/nonexistent/dev")]).unwrap_err();
        assert_eq!(e.downcast::<UsageError>().unwrap().field, "--destroy-data");
    }
}
