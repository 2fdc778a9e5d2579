//! `iolab agent`: the host side of `--hosts`, started by the control side
//! over ssh; it speaks the fleet protocol on stdin/stdout (docs/fleet.md).

use crate::cli::agent::AgentArgs;

pub fn run(_args: AgentArgs) -> anyhow::Result<()> {
    crate::fleet::agent::serve(std::io::stdin(), std::io::stdout())
}
