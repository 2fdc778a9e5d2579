//! Flags that take a comma-separated list of known names (`--engine
//! io_uring,aio`): the text is accepted as is here (the verb checks each
//! name and says which one is unknown, exit 2), and the names are offered
//! to shell completion instead of file names.

use std::ffi::OsStr;

use clap::builder::{PossibleValue, StringValueParser, TypedValueParser};

/// A list of names, completed from `names`.
#[derive(Clone, Copy)]
pub struct NameList(pub &'static [&'static str]);

impl TypedValueParser for NameList {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<String, clap::Error> {
        StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.0.iter().map(|n| PossibleValue::new(*n))))
    }
}

/// `device --engine` and `run --engine`: every engine of the runner, from
/// the engines' facts table.
pub const DEVICE_ENGINES: NameList = NameList(&crate::plan::engines::CLI_NAMES);

/// `trace --engine`: the traced engines, from the engines' facts table.
pub const TRACE_ENGINES: NameList = NameList(&crate::plan::engines::TRACE_NAMES);

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Issue 31 item 16: bash completion after `--engine` offered file
    /// names; it offers the engines, and a list still parses.
    #[test]
    fn engine_flags_complete_engine_names_and_accept_lists() {
        let mut cmd = crate::cli::Cli::command();
        let mut out = Vec::new();
        clap_complete::generate(clap_complete::Shell::Bash, &mut cmd, "iolab", &mut out);
        let script = String::from_utf8(out).unwrap();
        assert!(
            script.contains(
                "compgen -W \"psync aio io_uring mmap null nbd iscsi nvme-tcp nvme-rdma\""
            ),
            "device --engine"
        );
        assert!(script.contains("compgen -W \"psync aio io_uring io_uring+sqpoll\""));
        let cli = <crate::cli::Cli as clap::Parser>::try_parse_from([
            "iolab",
            "device",
            "--engine",
            "io_uring,aio",
        ]);
        assert!(cli.is_ok());
    }
}
