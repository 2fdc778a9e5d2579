//! `iolab-gen DIR`: the man pages (iolab.1 and one per verb, iolab-device.1
//! ...) and the bash, zsh and fish completions of iolab, generated from
//! its clap definitions into DIR/man1 and DIR/completions (what
//! `make install` installs).

use std::path::PathBuf;

use clap_complete::{generate_to, Shell};

fn main() -> anyhow::Result<()> {
    let usage = "usage: iolab-gen DIR   (writes DIR/man1/*.1 and DIR/completions/*)";
    let arg = std::env::args_os().nth(1);
    // An option is not a directory to create ("iolab-gen --help").
    let Some(dir) = arg
        .filter(|a| !a.to_string_lossy().starts_with('-'))
        .map(PathBuf::from)
    else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let mut cmd = iolab::cli::Cli::with_exit_codes();
    cmd.build();
    let man = dir.join("man1");
    std::fs::create_dir_all(&man)?;
    iolab::cli::man::render(
        cmd.clone(),
        "iolab",
        &mut std::fs::File::create(man.join("iolab.1"))?,
    )?;
    for sub in cmd
        .get_subcommands()
        .filter(|s| s.get_name() != "help" && !s.is_hide_set())
    {
        // A generator that runs once: the leaked name lives until it exits.
        let name: &'static str = Box::leak(format!("iolab-{}", sub.get_name()).into_boxed_str());
        let page = sub.clone().name(name);
        let mut f = std::fs::File::create(man.join(format!("{name}.1")))?;
        iolab::cli::man::render(page, &format!("iolab {}", sub.get_name()), &mut f)?;
    }
    let completions = dir.join("completions");
    std::fs::create_dir_all(&completions)?;
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        generate_to(shell, &mut cmd, "iolab", &completions)?;
    }
    println!(
        "man pages in {}, completions in {}",
        man.display(),
        completions.display()
    );
    Ok(())
}
