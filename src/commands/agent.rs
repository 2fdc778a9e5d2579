//! `iolab agent`: the host side of `--hosts`, started by the control side
//! over ssh; it speaks the fleet protocol on stdin/stdout (docs/fleet.md).

use std::io::IsTerminal;

use crate::cli::agent::AgentArgs;

pub fn run(_args: AgentArgs) -> anyhow::Result<()> {
    if std::io::stdout().is_terminal() {
        return Err(crate::error::usage(
            "agent",
            "iolab agent speaks a binary protocol on stdin/stdout for the control side \
             (started over ssh by --hosts), not to a terminal",
        ));
    }
    // Hosts sharing one --server-url each keep their records apart.
    crate::kv::engines::server_ns::name_namespaces_after_host(&crate::fleet::agent::this_hostname());
    crate::fleet::agent::serve(std::io::stdin(), std::io::stdout())
}
