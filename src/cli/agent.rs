//! `iolab agent` (plumbing, hidden): started by the control side over ssh.

use clap::Args;

#[derive(Debug, Args)]
pub struct AgentArgs {}
