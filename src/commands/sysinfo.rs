//! `iolab sysinfo`: the provenance block alone.

use std::path::PathBuf;

use crate::cli::sysinfo::SysinfoArgs;
use crate::measure::sysfs;
use crate::results::target::{TargetInfo, TargetKind};
use crate::results::Provenance;

pub fn run(a: SysinfoArgs) -> anyhow::Result<()> {
    let out = a
        .output
        .as_deref()
        .filter(|o| *o != std::path::Path::new("-"));
    if let Some(out) = out {
        crate::results::output::check(out, "--output", false, &[])?;
    }
    let path = a.target.clone().unwrap_or_else(|| PathBuf::from("."));
    if !path.exists() {
        return Err(crate::error::usage(
            "--target",
            format!("{} does not exist", path.display()),
        ));
    }
    let mut p = Provenance::collect(0);
    let devnum = sysfs::devnum_of_path(&path);
    p.target = Some(TargetInfo {
        path: path
            .canonicalize()
            .unwrap_or(path.clone())
            .display()
            .to_string(),
        kind: match std::fs::metadata(&path) {
            Ok(m) if m.is_dir() => TargetKind::Directory,
            Ok(m) if !m.is_file() && devnum.is_some() => TargetKind::BlockDevice,
            _ => TargetKind::ExistingFile,
        },
        size_bytes: std::fs::metadata(&path)
            .ok()
            .filter(|m| m.is_file())
            .map_or(0, |m| m.len()),
        filesystem: sysfs::fs_of_path(&path),
        disk: devnum.and_then(sysfs::disk_info),
        export: None,
    });
    let disk = p
        .target
        .as_ref()
        .and_then(|t| t.disk.as_ref())
        .map(|d| d.disk.clone());
    if let (Some(n), Some(d)) = (&mut p.numa, disk) {
        n.device = crate::measure::numa::device(std::path::Path::new("/"), &d);
    }
    if let Some(out) = out {
        crate::results::write_atomic(out, serde_json::to_string_pretty(&p)?.as_bytes())?;
    } else if a.output.is_some() {
        println!("{}", serde_json::to_string_pretty(&p)?);
    } else {
        let width = p.rows().iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        for (k, v) in p.rows() {
            println!("{k:<width$}  {v}");
        }
    }
    Ok(())
}
