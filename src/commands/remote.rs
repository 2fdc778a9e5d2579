//! `iolab remote`: the NVMe-oF study's comparison in one command. A scratch
//! file on the storage under test; the same jobs on it locally (DAS) and
//! through each transport's server on the target host (namespaces joined
//! by a veth pair as root, loopback otherwise); the target's CPU and the
//! link's traffic sampled with every point; the unloaded latency
//! breakdown over iolab's own target; results.json and report.html.

use std::path::Path;

use crate::campaign::remote_plan::plan;
use crate::cli::remote::RemoteArgs;
use crate::error::usage;

/// Keys a plan file may set: every flag but where things are and go.
const COMMAND_LINE_ONLY: &[&str] = &[
    "target",
    "plan",
    "output",
    "json",
    "force",
    "quiet",
    "dry_run",
    "given",
    "hosts",
    "ssh_config",
    "deploy",
    "host_iolab",
    "on_host_loss",
    "connect_concurrency",
    "target_host",
    "target_address",
];

/// Apply a plan file's settings (TOML, flag names as keys, `description`
/// ignored) onto `a`, except flags given on the command line.
fn apply_plan_file(a: &mut RemoteArgs, path: &Path) -> anyhow::Result<()> {
    let field = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| usage("--plan", format!("cannot read {field}: {e}")))?;
    let doc: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| usage(&field, format!("not valid TOML: {e}")))?;
    let mut argv = Vec::new();
    for (k, v) in &doc {
        let id = k.replace('-', "_");
        if id == "description" {
            continue;
        }
        if COMMAND_LINE_ONLY.contains(&id.as_str()) {
            return Err(usage(&field, format!("{k} is command-line only")));
        }
        if a.given.contains(&id) {
            continue;
        }
        let value = crate::plan::planfile::value_text(&format!("{field}: {k}"), v)?;
        argv.push(format!("--{}={value}", k.replace('_', "-")));
    }
    super::device_flags::apply_flags(a, argv).map_err(|e| usage(&field, format!("{e:#}")))
}

pub fn run(mut a: RemoteArgs) -> anyhow::Result<()> {
    if let Some(p) = a.plan.clone() {
        apply_plan_file(&mut a, &p)?;
    }
    let mut s = super::remote_flags::remote_settings(&a);
    crate::campaign::remote_plan::defaults(&mut s);
    let plan = plan(&s)?;
    s.check_outputs()?;
    let exports = super::exports::parse(a.export.as_deref(), a.force, &[])?;
    let presenter =
        super::exports::presenter(exports, crate::report::remote_terminal::remote_summary);
    let hosts = crate::campaign::remote_plan::check_hosts(&s, &plan)?;
    crate::campaign::remote_run::run_or_print(&s, &plan, hosts, &presenter)
}
