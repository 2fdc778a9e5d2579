//! The configurations an agent built for a campaign (`--make` on hosts):
//! each a `testbed::media::Medium` (a file system on loop devices, a
//! stripe, tmpfs) under the directory the control side named, known by
//! its label until the agent ends, when it is unmounted and removed (what
//! a SIGKILL leaves is in the testbed, swept by the host's next iolab
//! start). A job's target naming a configuration (`JobTarget::made`) is
//! resolved here to the configuration's file system.

use std::path::Path;

use super::agent::agent_error;
use super::proto::{JobTarget, MakeRequest, Message};
use crate::error::usage;
use crate::testbed::media::{MediaKind, Medium};

/// The configurations built on this host, in build order.
#[derive(Default)]
pub struct HostMedia {
    built: Vec<(String, Medium)>,
}

impl HostMedia {
    /// Build the configuration `req` names (or say it is built already):
    /// `Made` with its file system's path, or an error.
    pub fn make(&mut self, req: MakeRequest) -> Message {
        match self.build(&req) {
            Ok(target) => Message::Made {
                label: req.label,
                target,
            },
            Err(e) => Message::Error(agent_error(&e)),
        }
    }

    fn build(&mut self, req: &MakeRequest) -> anyhow::Result<String> {
        if let Some((_, m)) = self.built.iter().find(|(l, _)| *l == req.label) {
            return Ok(m.target.display().to_string());
        }
        let kind = MediaKind::parse(&req.kind)
            .ok_or_else(|| usage("--make", format!("'{}' is not a configuration", req.kind)))?;
        if kind == MediaKind::Raw {
            return Err(usage(
                "--make",
                "raw is not built on hosts (its jobs run on the bare loop device, not in a directory)",
            ));
        }
        let under = Path::new(&req.make_in);
        if !under.is_absolute() || !under.is_dir() {
            return Err(usage(
                "--make-in",
                format!("{} is not a directory on this host", req.make_in),
            ));
        }
        let m = Medium::build(kind, under, req.room)?;
        let target = m.target.display().to_string();
        self.built.push((req.label.clone(), m));
        Ok(target)
    }

    /// `target` with a configuration it names resolved to its file system.
    pub fn resolve(&self, target: &JobTarget) -> anyhow::Result<JobTarget> {
        let Some(label) = &target.made else {
            return Ok(target.clone());
        };
        let (_, m) = self
            .built
            .iter()
            .find(|(l, _)| l == label)
            .ok_or_else(|| usage("--make", format!("{label} was not built on this host")))?;
        Ok(JobTarget {
            dir: Some(m.target.display().to_string()),
            made: None,
            ..target.clone()
        })
    }
}

/// The newest built last goes first: a stripe's members are not shared,
/// but unmounting in reverse build order is what a local run does.
impl Drop for HostMedia {
    fn drop(&mut self) {
        while self.built.pop().is_some() {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_names_a_configuration_or_is_kept_as_it_is() {
        let media = HostMedia::default();
        let plain = JobTarget {
            dir: Some("/data".into()),
            ..JobTarget::default()
        };
        assert_eq!(media.resolve(&plain).unwrap(), plain);
        let made = JobTarget {
            made: Some("ext4".into()),
            ..JobTarget::default()
        };
        let e = media.resolve(&made).unwrap_err();
        assert!(format!("{e:#}").contains("ext4 was not built"), "{e:#}");
    }

    #[test]
    fn what_cannot_be_built_on_a_host_is_an_error_naming_the_flag() {
        let mut media = HostMedia::default();
        for (kind, make_in, flag) in [
            ("ntfs", "/tmp", "--make"),
            ("raw", "/tmp", "--make"),
            ("tmpfs", "relative", "--make-in"),
        ] {
            let m = media.make(MakeRequest {
                label: kind.into(),
                kind: kind.into(),
                make_in: make_in.into(),
                room: 64 << 20,
            });
            let Message::Error(e) = m else {
                panic!("{kind}: built")
            };
            assert_eq!(e.field.as_deref(), Some(flag), "{kind}: {e:?}");
        }
    }
}
