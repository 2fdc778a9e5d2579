//! Several hosts at once over OpenSSH (docs/fleet.md): `iolab agent` on
//! each host, reached through the system's ssh; a framed, versioned
//! protocol on the ssh channel (`proto`); clock offsets and one common
//! start (`clock`); the exact merge of the hosts' points (`merge`).
//!
//! The control side: [`Fleet::connect`] then [`Fleet::run_pass`] per job.
//! The host side: [`agent::serve`] on stdin/stdout.

pub mod agent;
mod agent_kv;
mod agent_media;
mod agent_oltp;
mod agent_steps;
pub mod build;
pub mod clock;
pub mod collect;
pub mod conn;
pub mod control;
pub mod deploy;
pub mod flags;
pub mod groups;
pub mod groups_file;
pub mod hosts;
pub mod kv_run;
pub mod merge;
pub mod oltp_run;
pub mod placement;
pub mod proto;
pub mod serving;
pub mod ssh;
pub mod target_host;
pub mod validate;

pub use clock::ClockOffset;
pub use control::{Fleet, FleetOptions};
pub use flags::HostsFlags;
pub use groups::HostGroups;
pub use groups_file::{parse_host_groups, parse_hosts};
pub use hosts::HostSpec;
pub use merge::{FleetPass, HostRow, LostHost};
pub use placement::{FleetPlacement, OnHostLoss};
pub use proto::JobTarget;
pub use ssh::SshOptions;
