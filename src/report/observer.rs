//! The terminal as an `Observer`: what `iolab device` (and the verbs built
//! on the session driver) print while they run. Results tables go to
//! stdout; progress, skipped points, notes and warnings to stderr. With
//! `quiet`, nothing is printed.

use std::io::Write;

use crate::report::terminal;
use crate::results::Point;
use crate::runner::recorder::Live;
use crate::session::{Observer, Progress};
use crate::trace::config::ConfigResult;
use crate::trace::point_tracer;

/// The last second of a point: "52.1k IOPS 203.5 MiB/s mean 152us p99 310us".
fn live_text(l: &Live) -> String {
    format!(
        "{} IOPS {:.1} MiB/s mean {} p99 {}",
        crate::figures::fmt::format_count(l.iops),
        l.mib_s,
        crate::plan::parse::format_ns(l.mean_ns),
        crate::plan::parse::format_ns(l.p99_ns as f64)
    )
}

pub struct Terminal {
    pub quiet: bool,
    /// Print each point's table as it is done (`iolab run` prints a summary
    /// at the end instead).
    pub tables: bool,
}

impl Terminal {
    /// Progress, points, notes and warnings.
    pub fn new(quiet: bool) -> Terminal {
        Terminal {
            quiet,
            tables: true,
        }
    }

    /// Progress, notes and warnings, no point tables.
    pub fn progress_only(quiet: bool) -> Terminal {
        Terminal {
            quiet,
            tables: false,
        }
    }
}

impl Observer for Terminal {
    fn progress(&self, p: &Progress<'_>) {
        if self.quiet {
            return;
        }
        eprint!(
            "\r\x1b[2K{}: {:.0}s{}{}{}",
            p.label,
            p.elapsed_s,
            p.expected_s
                .map(|t| format!("/{t:.0}s"))
                .unwrap_or_default(),
            p.live
                .as_ref()
                .map(live_text)
                .map(|t| format!(" | {t}"))
                .unwrap_or_default(),
            p.eta_s
                .map(|eta| format!(" | ETA {eta:.0}s"))
                .unwrap_or_default()
        );
        let _ = std::io::stderr().flush();
    }

    fn point_status(&self, p: &Progress<'_>) {
        if let Some(l) = &p.live {
            self.status(&format!(
                "{} {}: {:.0}s: {}",
                crate::results::time::now_rfc3339(),
                p.label,
                p.elapsed_s,
                live_text(l)
            ));
        }
    }

    fn progress_done(&self) {
        if !self.quiet {
            eprint!("\r\x1b[2K");
        }
    }

    fn point_done(&self, point: &Point) {
        if !self.quiet && self.tables {
            println!("{}", terminal::point_block(point));
            if let Some(act) = &point.extra.act {
                println!("{}", super::act_terminal::table(act));
            }
            if let Some(h) = &point.extra.hosts {
                println!("{}", super::hosts_table::terminal(point, h));
            }
        }
    }

    fn point_skipped(&self, name: &str, reason: &str, failed: bool) {
        if !self.quiet {
            let what = if failed { "failed" } else { "skipped" };
            eprintln!("iolab: {what} {name}: {reason}");
        }
    }

    fn warning(&self, msg: &str) {
        if !self.quiet {
            eprintln!("warning: {msg}");
        }
    }

    fn status(&self, line: &str) {
        if !self.quiet {
            // Clear a progress line first: status lines are for logs.
            if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
                eprint!("\r\x1b[2K");
            }
            println!("{line}");
        }
    }

    fn note(&self, msg: &str) {
        if !self.quiet {
            eprintln!("iolab: {msg}");
        }
    }

    fn point_traced(&self, trace: &ConfigResult) {
        if !self.quiet && self.tables {
            println!("{}", point_tracer::table(trace));
        }
    }
}
