//! `iolab kv` on a terminal: the header (engine, database, settings, memory
//! limit), a title per phase, and each finished phase's throughput lines,
//! latency and load tables, engine statistics and verification failures.

use crate::kv::compat::{dbbench_line, ycsb_lines};
use crate::kv::dbbench::Bench;
use crate::kv::lsm::{ChainStepRun, LsmState};
use crate::kv::phase::PhaseOutcome;
use crate::kv::recorder::KvOp;
use crate::kv::report::{human, latency_table, load_notes, load_table};
use crate::kv::run::{KvObserver, Started};
use crate::report::observer::Terminal;
use crate::results::Param;
use crate::results::Point;
use crate::session::{Observer, Progress};

/// Prints to stdout (progress, warnings and verification failures to
/// stderr; progress only when stderr is a terminal).
pub struct KvTerminal {
    term: Terminal,
    show_progress: bool,
    /// `--quiet`: warnings only.
    quiet: bool,
}

impl KvTerminal {
    pub fn new(quiet: bool) -> KvTerminal {
        use std::io::IsTerminal;
        KvTerminal {
            term: Terminal::progress_only(false),
            show_progress: !quiet && std::io::stderr().is_terminal(),
            quiet,
        }
    }
}

/// Where the data is: the server's own storage for a server iolab did not
/// start (never a local directory, which holds none of it), else the
/// database directory or device.
fn database_line(s: &Started<'_>) -> String {
    if let Some(url) = &s.server_url {
        return format!(
            "the server's, at {url} (its own storage, not measured here; \
             iolab's objects dropped at exit)"
        );
    }
    let how = if s.raw {
        "raw block device: LMDB's data file, no file system"
    } else if s.kept {
        "kept"
    } else {
        "scratch, removed at exit"
    };
    format!("{} ({how})", s.db.display())
}

/// A phase's summary as its users' tool prints it: db_bench's line for a
/// db_bench-style benchmark, YCSB's lines otherwise.
fn summary_lines(o: &PhaseOutcome, p: &Point) -> String {
    match p.param(Param::Workload).and_then(Bench::parse) {
        Some(b) => {
            let threads = match b {
                Bench::ReadWhileWriting => p.param_num::<usize>(Param::Readers),
                _ => p.param_num::<usize>(Param::Threads),
            };
            dbbench_line(b, o, threads.unwrap_or(1))
        }
        None => ycsb_lines(o),
    }
}

impl Observer for KvTerminal {
    fn progress(&self, p: &Progress<'_>) {
        if self.show_progress {
            self.term.progress(p);
        }
    }

    fn progress_done(&self) {
        if self.show_progress {
            self.term.progress_done();
        }
    }

    fn warning(&self, msg: &str) {
        self.term.warning(msg);
    }

    fn note(&self, msg: &str) {
        if !self.quiet {
            self.term.note(msg);
        }
    }

    fn status(&self, line: &str) {
        if !self.quiet {
            println!("{line}");
        }
    }
}

impl KvObserver for KvTerminal {
    fn started(&self, s: &Started<'_>) {
        if self.quiet {
            return;
        }
        println!(
            "iolab kv: engine {} {}",
            s.engine.name(),
            s.engine.version()
        );
        println!("  database: {}", database_line(s));
        let settings: Vec<String> = s
            .engine
            .settings()
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        println!("  settings: {}", settings.join(" "));
        if let Some(cg) = s.cgroup {
            println!(
                "  memory limit: {} (cgroup v{} {})",
                human(cg.limit),
                cg.version,
                cg.path.display()
            );
        }
    }

    fn phase_started(&self, name: &str, threads: usize) {
        if self.quiet {
            return;
        }
        println!(
            "\n== {name} ({threads} thread{})",
            if threads == 1 { "" } else { "s" }
        );
    }

    fn chain_step_done(&self, step: &ChainStepRun, after: Option<&LsmState>) {
        if self.quiet {
            return;
        }
        println!("\n== {}: {:.3} s", step.step, step.duration_ns as f64 / 1e9);
        if let Some(lsm) = after {
            println!("  lsm after: {}", lsm.summary());
        }
    }

    fn merged_phase_done(&self, p: &Point) {
        if self.quiet {
            return;
        }
        println!("{}", latency_table(p));
        if let Some(h) = &p.extra.hosts {
            println!("{}", crate::report::hosts_table::terminal(p, h));
        }
        if let Some(i) = &p.extra.instances {
            println!("{}", crate::report::hosts_table::instances_terminal(p, i));
        }
        for w in &p.warnings {
            println!("  warning: {w}");
        }
    }

    fn phase_done(&self, name: &str, o: &PhaseOutcome, p: &Point) {
        if self.quiet {
            if o.rec.mismatches > 0 {
                eprintln!(
                    "iolab: {} verification failure(s) in {name}",
                    o.rec.mismatches
                );
            }
            return;
        }
        print!("{}", summary_lines(o, p));
        println!("{}", latency_table(p));
        println!("{}", load_table(o));
        for line in load_notes(&o.load) {
            println!("{line}");
        }
        if let Some(kv) = &p.extra.kv {
            for (k, v) in &kv.engine_stats {
                println!("  {}: {k} = {v}", kv.engine);
            }
            if let Some(lsm) = &kv.lsm {
                println!("  lsm at start: {}", lsm.start.summary());
                println!("  lsm at end:   {}", lsm.end.summary());
            }
        }
        if o.rec.mismatches > 0 {
            eprintln!(
                "iolab: {} verification failure(s) in {name}:",
                o.rec.mismatches
            );
            for m in o.rec.first_mismatches.iter().take(8) {
                eprintln!("  {m}");
            }
        }
        let reads = o.rec.ops[KvOp::Read.idx()];
        if o.rec.not_found > 0 {
            println!("  ({} of {reads} reads found)", reads - o.rec.not_found);
        }
        for w in &p.warnings {
            println!("  warning: {w}");
        }
    }
}
