//! SNIA PTS preparation and rounds: purge (punch holes in a file, or
//! BLKDISCARD a block device given with --destroy-data), workload-independent
//! preconditioning (N x capacity of 128 KiB sequential writes), and which
//! point of a round is tracked for steady state. The round loop itself is
//! driven by `commands::device`; the detector is `analysis::steady`.

use std::os::fd::AsRawFd;

use crate::dut::Target;
use crate::error::usage;
use crate::plan::job::{JobSpec, Pattern, StopCondition};
pub use crate::plan::steady::SteadyOptions;
use crate::results::target::TargetKind;

/// BLKDISCARD = _IO(0x12, 119).
const BLKDISCARD: libc::c_ulong = 0x1277;

/// Return the target to a fresh state. Files: punch holes over the whole
/// addressed size (the file keeps its length). Block devices: BLKDISCARD,
/// which `prepare` only allows with --destroy-data naming the device.
pub fn purge(target: &Target, size: u64) -> anyhow::Result<String> {
    match target.kind {
        TargetKind::NoFile => Ok("nothing to purge (no file)".into()),
        TargetKind::Directory => Err(usage(
            "--purge",
            format!("{} is a directory, not a device or file", target.path.display()),
        )),
        TargetKind::Remote => Err(usage(
            "--purge",
            format!("purging the remote target {} is not supported", target.path.display()),
        )),
        _ if !target.writable => Err(usage(
            "--purge",
            format!(
                "purging {} destroys its data: it needs a scratch file, --overwrite, or --destroy-data naming the device",
                target.path.display()
            ),
        )),
        TargetKind::BlockDevice => {
            let f = std::fs::OpenOptions::new().write(true).open(&target.path)?;
            let range: [u64; 2] = [0, size];
            // SAFETY: BLKDISCARD reads a [u64; 2] (start, length) from the pointer.
            let rc = unsafe { libc::ioctl(f.as_raw_fd(), BLKDISCARD, range.as_ptr()) };
            if rc != 0 {
                let e = std::io::Error::last_os_error();
                return Err(anyhow::anyhow!("BLKDISCARD on {} failed: {e}", target.path.display()));
            }
            Ok(format!("discarded {} bytes of {}", size, target.path.display()))
        }
        TargetKind::ScratchFile | TargetKind::ExistingFile => {
            let f = std::fs::OpenOptions::new().write(true).open(&target.path)?;
            // SAFETY: fallocate on an open descriptor; no memory is passed.
            let rc = unsafe {
                libc::fallocate(
                    f.as_raw_fd(),
                    libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                    0,
                    size as libc::off_t,
                )
            };
            if rc != 0 {
                let e = std::io::Error::last_os_error();
                return Err(anyhow::anyhow!(
                    "punching holes in {} failed: {e} (the filesystem may not support it)",
                    target.path.display()
                ));
            }
            f.sync_all()?;
            Ok(format!("punched holes over {} bytes of {}", size, target.path.display()))
        }
    }
}

/// The preconditioning job: `times` x `size` bytes of sequential 128 KiB
/// writes, with the engine, direct mode and depth of `base`.
pub fn precondition_job(base: &JobSpec, size: u64, times: f64) -> JobSpec {
    let bytes = ((size as f64 * times) as u64).max(128 << 10);
    JobSpec {
        name: format!("precondition-{times}x-128k-seqwrite"),
        pattern: Pattern::Write,
        bs: vec![(128 << 10, 100)],
        qd: base.qd.clamp(1, 32),
        jobs: 1,
        batch: None,
        verify: false,
        fsync_every: 0,
        open_loop: None,
        ramp_ns: 0,
        stop: StopCondition {
            runtime_ns: None,
            io_count: None,
            io_bytes: Some(bytes),
        },
        ..base.clone()
    }
}

/// The point of each round whose metric decides steady state: SNIA tracks
/// 4 KiB 100% writes in the IOPS test; otherwise the first point.
pub fn tracked_index(jobs: &[JobSpec]) -> usize {
    jobs.iter()
        .position(|j| j.read_percent() == 0 && j.bs == vec![(4096, 100)])
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precondition_and_tracking() {
        let base = JobSpec {
            qd: 64,
            ..Default::default()
        };
        let p = precondition_job(&base, 1 << 30, 2.0);
        assert_eq!(p.stop.io_bytes, Some(2 << 30));
        assert_eq!(p.pattern, Pattern::Write);
        p.validate().unwrap();
        let jobs = crate::plan::profile::expand("snia-iops", &base, None).unwrap();
        let t = tracked_index(&jobs);
        assert_eq!(jobs[t].mix, 0);
        assert_eq!(jobs[t].max_bs(), 4096);
        assert_eq!(tracked_index(&[base]), 0);
    }

    #[test]
    fn purge_punches_holes_in_a_scratch_file() {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let opts = crate::dut::TargetOptions {
            path: Some(dir.path().to_path_buf()),
            size: Some(4 << 20),
            ..Default::default()
        };
        let t = crate::dut::prepare(&opts, true, None, 1).unwrap();
        let msg = purge(&t, t.size).unwrap();
        assert!(msg.contains("punched"), "{msg}");
        let md = std::fs::metadata(&t.path).unwrap();
        assert_eq!(md.len(), 4 << 20, "size kept");
        use std::os::unix::fs::MetadataExt;
        assert!(md.blocks() * 512 < 4 << 20, "blocks freed: {}", md.blocks());
    }
}
