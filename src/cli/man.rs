//! The man pages' SYNOPSIS with value placeholders (`[--runtime DURATION]`),
//! which clap_mangen's own synopsis leaves out, and a page rendered from
//! clap_mangen's sections around it (`iolab-gen`).

use std::io::Write;

use clap::{ArgAction, Command};

/// roff text: a dash that is a dash, not a hyphen.
fn dashes(s: &str) -> String {
    s.replace('-', "\\-")
}

/// One argument as the synopsis shows it: `[-t|--target PATH]`.
fn synopsis_arg(a: &clap::Arg) -> Option<String> {
    let names = match (a.get_short(), a.get_long()) {
        (Some(s), Some(l)) => format!("\\fB\\-{s}\\fR|\\fB{}\\fR", dashes(&format!("--{l}"))),
        (Some(s), None) => format!("\\fB\\-{s}\\fR"),
        (None, Some(l)) => format!("\\fB{}\\fR", dashes(&format!("--{l}"))),
        (None, None) => return None,
    };
    let takes_value = matches!(a.get_action(), ArgAction::Set | ArgAction::Append);
    let value = match (takes_value, a.get_value_names()) {
        (false, _) => String::new(),
        (true, Some(v)) => format!(" \\fI{}\\fR", v.join(" ")),
        (true, None) => format!(" \\fI{}\\fR", a.get_id().as_str().to_uppercase()),
    };
    let repeat = if matches!(a.get_action(), ArgAction::Append) {
        "..."
    } else {
        ""
    };
    Some(if a.is_required_set() {
        format!("{names}{value}{repeat}")
    } else {
        format!("[{names}{value}]{repeat}")
    })
}

/// The SYNOPSIS section of `cmd` (named `name`), in roff.
pub fn synopsis(cmd: &Command, name: &str) -> String {
    let mut words = vec![format!("\\fB{}\\fR", dashes(name))];
    words.extend(
        cmd.get_arguments()
            .filter(|a| !a.is_hide_set() && !a.is_positional())
            .filter_map(synopsis_arg),
    );
    for p in cmd.get_positionals().filter(|a| !a.is_hide_set()) {
        let v = p
            .get_value_names()
            .map(|v| v.join(" "))
            .unwrap_or_else(|| p.get_id().as_str().to_uppercase());
        words.push(match p.is_required_set() {
            true => format!("\\fI{v}\\fR"),
            false => format!("[\\fI{v}\\fR]"),
        });
    }
    if cmd.has_subcommands() {
        words.push("\\fICOMMAND\\fR".into());
    }
    format!(".SH SYNOPSIS\n{}\n", words.join(" "))
}

/// The man page of `cmd`: clap_mangen's sections with this synopsis.
pub fn render(cmd: Command, name: &str, w: &mut dyn Write) -> std::io::Result<()> {
    let syn = synopsis(&cmd, name);
    let has_args = cmd.get_arguments().any(|a| !a.is_hide_set());
    let has_subs = cmd.has_subcommands();
    let has_extra = cmd.get_after_long_help().is_some() || cmd.get_after_help().is_some();
    let man = clap_mangen::Man::new(cmd);
    man.render_title(w)?;
    man.render_name_section(w)?;
    w.write_all(syn.as_bytes())?;
    man.render_description_section(w)?;
    if has_args {
        man.render_options_section(w)?;
    }
    if has_subs {
        man.render_subcommands_section(w)?;
    }
    if has_extra {
        man.render_extra_section(w)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_synopsis_names_each_flags_value() {
        let mut cmd = crate::cli::Cli::with_exit_codes();
        cmd.build();
        let device = cmd.find_subcommand("device").unwrap();
        let s = synopsis(device, "iolab-device");
        assert!(
            s.contains("[\\fB\\-t\\fR|\\fB\\-\\-target\\fR \\fIPATH\\fR]..."),
            "{s}"
        );
        assert!(
            s.contains("[\\fB\\-\\-runtime\\fR \\fIDURATION\\fR]"),
            "{s}"
        );
        assert!(s.contains("[\\fB\\-\\-keep\\fR]"), "{s}");
        let mut page = Vec::new();
        render(device.clone(), "iolab-device", &mut page).unwrap();
        let page = String::from_utf8(page).unwrap();
        assert_eq!(page.matches(".SH SYNOPSIS").count(), 1);
        assert!(page.contains("EXAMPLES"), "the examples stay");
    }
}
