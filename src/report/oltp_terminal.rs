//! `iolab oltp` on a terminal: the header (engine, the server or where the
//! database is), the load's rows, time and write amplification, then per
//! point NOPM, TPM and efficiency, a table per transaction type (count,
//! mean, p50, p90, p95, p99, max, rollbacks, retries, failures), the
//! consistency lines and the server's line.

use comfy_table::Table;

use crate::measure::write_amp::{ratio, whole_device, PER_ROW_BYTES, PER_SERVER_BYTES};
use crate::oltp::load::LoadInfo;
use crate::oltp::point::OltpInfo;
use crate::oltp::run::{OltpObserver, OltpStarted};
use crate::plan::parse::format_ns;
use crate::report::observer::Terminal;
use crate::results::Point;
use crate::session::{Observer, Progress};

/// Prints to stdout (progress and warnings to stderr; progress only when
/// stderr is a terminal).
pub struct OltpTerminal {
    term: Terminal,
    show_progress: bool,
    quiet: bool,
}

impl OltpTerminal {
    pub fn new(quiet: bool) -> OltpTerminal {
        use std::io::IsTerminal;
        OltpTerminal {
            term: Terminal::progress_only(false),
            show_progress: !quiet && std::io::stderr().is_terminal(),
            quiet,
        }
    }
}

impl Observer for OltpTerminal {
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

    fn status(&self, line: &str) {
        if !self.quiet {
            println!("{line}");
        }
    }
}

/// The per-transaction table of a point.
pub fn transaction_table(p: &Point, info: &OltpInfo) -> Table {
    let mut t = Table::new();
    t.load_preset(comfy_table::presets::UTF8_BORDERS_ONLY);
    t.set_header([
        "transaction",
        "count",
        "mean",
        "p50",
        "p90",
        "p95",
        "p99",
        "max",
        "rollbacks",
        "retries",
        "failures",
    ]);
    for (name, c) in &info.transactions {
        let lat = p.ops.get(name).and_then(|o| o.lat.as_ref());
        let pct = |q: f64| {
            lat.and_then(|l| l.percentile(q))
                .map_or("-".to_string(), |v| format_ns(v as f64))
        };
        t.add_row([
            name.clone(),
            (c.commits + c.rollbacks).to_string(),
            lat.map_or("-".into(), |l| format_ns(l.mean_ns)),
            pct(50.0),
            pct(90.0),
            pct(95.0),
            pct(99.0),
            lat.map_or("-".into(), |l| format_ns(l.max_ns as f64)),
            c.rollbacks.to_string(),
            c.retries.to_string(),
            c.failures.to_string(),
        ]);
    }
    t
}

/// The consistency lines of a point.
pub fn consistency_lines(info: &OltpInfo) -> String {
    let mut s = String::new();
    for c in &info.consistency {
        s += &format!(
            "  consistency {} ({}): {} over {} row(s){}\n",
            c.condition,
            c.description,
            if c.passed { "pass" } else { "FAIL" },
            c.checked,
            c.first_violation
                .as_deref()
                .map(|v| format!("; first violation: {v}"))
                .unwrap_or_default()
        );
    }
    s
}

/// A server's use over a point or the load, and what its storage took.
pub fn server_line(s: &crate::results::ServerPointStats) -> String {
    let human = crate::kv::report::human;
    let mut parts = Vec::new();
    if let Some(p) = &s.process {
        parts.push(format!(
            "CPU {:.0}% usr {:.0}% sys of one CPU ({} processes)",
            p.usr_pct, p.sys_pct, p.processes
        ));
    }
    if let Some(d) = &s.device {
        parts.push(format!(
            "{} wrote {}",
            whole_device(&d.device),
            human(d.write_bytes)
        ));
    }
    if let Some(b) = s.device_write_bytes_per_op {
        parts.push(format!("{} per transaction", human(b as u64)));
    }
    match (
        s.write_amplification,
        ratio(s.device.as_ref(), s.db_written_bytes),
    ) {
        (Some(w), _) => parts.push(format!("{PER_SERVER_BYTES} {w:.1}")),
        (None, Err(why)) if s.device.is_some() => {
            parts.push(format!("{PER_SERVER_BYTES} not measured: {}", why.words()))
        }
        _ => {}
    }
    if let Some(b) = s.db_size_bytes {
        parts.push(format!(
            "data directory {} allocated (incl. preallocation)",
            human(b)
        ));
    }
    format!("  server: {}", parts.join(", "))
}

/// What the load wrote to the device under the data, whose bytes those
/// are, and its write amplification over the rows' SQL bytes (or why it
/// was not measured); none without a device.
pub fn load_device_line(l: &LoadInfo) -> Option<String> {
    let human = crate::kv::report::human;
    let d = l.device.as_ref()?;
    let amp = match (l.write_amplification, ratio(Some(d), l.logical_bytes)) {
        (Some(w), _) => format!("{PER_ROW_BYTES} {w:.1}"),
        (None, Err(why)) => format!("{PER_ROW_BYTES} not measured: {}", why.words()),
        (None, Ok(_)) => format!("{PER_ROW_BYTES} not measured"),
    };
    Some(format!(
        "  load: {} wrote {} for {} of rows' SQL: {amp}",
        whole_device(&d.device),
        human(d.write_bytes),
        human(l.logical_bytes.unwrap_or(0))
    ))
}

/// NOPM, TPM and efficiency of a point. Efficiency (NOPM against TPC-C's
/// ceiling per warehouse) means something only with keying and think
/// times; without them it is left out.
pub fn headline(info: &OltpInfo) -> String {
    let efficiency = if info.wait {
        format!(
            "  efficiency {:.1}% of {:.2} x {} warehouse(s)",
            info.efficiency_pct,
            crate::oltp::point::MAX_NOPM_PER_WAREHOUSE,
            info.warehouses
        )
    } else {
        format!(
            "  {} warehouse(s), no keying or think times (no TPC-C efficiency)",
            info.warehouses
        )
    };
    format!(
        "NOPM {:.0}  TPM {:.0} (every transaction, rollbacks too){efficiency}",
        info.nopm, info.tpm
    )
}

/// A stored oltp point as text (`iolab report`): NOPM first, the
/// transactions (not IOPS and MiB/s), the client's CPU named as iolab's
/// and the server's beside it.
pub fn point_text(p: &Point, info: &OltpInfo) -> String {
    let mut out = format!("{}\n{}\n", headline(info), transaction_table(p, info));
    out += &consistency_lines(info);
    out += &format!(
        "  client (iolab's driver): CPU {:.0}% usr {:.0}% sys of one CPU\n",
        p.cpu.usr_pct, p.cpu.sys_pct
    );
    if let Some(s) = &p.extra.server {
        out += &server_line(s);
        out.push('\n');
    }
    for e in &info.errors {
        out += &format!("  error: {e}\n");
    }
    out
}

impl OltpObserver for OltpTerminal {
    fn server_starting(
        &self,
        engine: crate::oltp::sql::connect::SqlEngine,
        under: &std::path::Path,
    ) {
        if !self.quiet {
            println!(
                "starting a private {} server under {}",
                engine.name(),
                under.display()
            );
        }
    }

    fn started(&self, s: &OltpStarted<'_>) {
        if self.quiet {
            return;
        }
        println!(
            "iolab oltp: TPC-C-derived workload on {} {}",
            s.engine.name(),
            s.version
        );
        match s.server {
            Some(info) if info.private => println!(
                "  server: private, {} (data in {}, removed at exit)",
                info.url,
                info.data_dir.as_deref().unwrap_or("?")
            ),
            Some(info) => println!(
                "  server: {} (iolab's tables dropped and loaded anew)",
                info.url
            ),
            None => println!(
                "  database: {}{}",
                s.endpoint.describe(),
                match (s.reused, s.kept) {
                    (true, _) => " (reused: no load)",
                    (false, true) => " (kept)",
                    (false, false) => " (scratch, removed at exit)",
                }
            ),
        }
    }

    fn loaded(&self, l: &LoadInfo) {
        if self.quiet {
            return;
        }
        let rows: u64 = l.rows.values().sum();
        if l.loaded {
            println!(
                "  loaded {} warehouse(s): {rows} rows in {:.1} s with {} thread(s), {} MiB",
                l.warehouses,
                l.wall_ns as f64 / 1e9,
                l.loader_threads,
                l.db_size_bytes >> 20
            );
            if let Some(line) = load_device_line(l) {
                println!("{line}");
            }
        } else {
            println!(
                "  found {} warehouse(s): {rows} rows, {} MiB",
                l.warehouses,
                l.db_size_bytes >> 20
            );
        }
    }

    fn point_started(&self, users: usize) {
        if !self.quiet {
            println!(
                "\n== {users} virtual user{}",
                if users == 1 { "" } else { "s" }
            );
        }
    }

    fn oltp_point_done(&self, p: &Point, info: &OltpInfo) {
        if self.quiet {
            for c in info.consistency.iter().filter(|c| !c.passed) {
                eprintln!(
                    "iolab: consistency condition {} failed: {}",
                    c.condition,
                    c.first_violation.as_deref().unwrap_or("")
                );
            }
            return;
        }
        println!("{}", headline(info));
        println!("{}", transaction_table(p, info));
        if let Some(h) = &p.extra.hosts {
            println!("{}", crate::report::hosts_table::terminal(p, h));
        }
        print!("{}", consistency_lines(info));
        if let Some(s) = &p.extra.server {
            println!("{}", server_line(s));
        }
        for w in &p.warnings {
            println!("  warning: {w}");
        }
        for e in &info.errors {
            println!("  error: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::diskstats::DeviceStats;
    use crate::results::ServerPointStats;

    fn vda(write_bytes: u64) -> Option<DeviceStats> {
        Some(DeviceStats {
            device: "vda".into(),
            write_bytes,
            ..Default::default()
        })
    }

    /// Issue 44 item 8: `load wrote 2.24 GiB to vda ... write
    /// amplification 28.5` on a shared disk counted every process's writes
    /// without saying so, under a name shared with two other ratios.
    #[test]
    fn the_loads_device_bytes_say_whose_they_are() {
        let mut l = LoadInfo {
            device: vda(2_405_181_685),
            logical_bytes: Some(84_392_340),
            ..Default::default()
        };
        l.write_amplification = Some(28.5);
        let line = load_device_line(&l).unwrap();
        assert!(
            line.contains("vda (whole device, all processes) wrote 2.24 GiB"),
            "{line}"
        );
        assert!(
            line.contains("write amp (device bytes / row SQL bytes loaded) 28.5"),
            "{line}"
        );
        l.device = vda(0);
        l.write_amplification = None;
        let line = load_device_line(&l).unwrap();
        assert!(
            line.contains("not measured: nothing reached the device"),
            "{line}"
        );
        l.device = None;
        assert_eq!(load_device_line(&l), None);
    }

    #[test]
    fn the_servers_line_names_its_denominator_and_the_whole_device() {
        let mut s = ServerPointStats {
            device: vda(16 << 20),
            db_size_bytes: Some(300 << 20),
            ..Default::default()
        };
        s.set_db_written(Some(5 << 20));
        let line = server_line(&s);
        assert!(
            line.contains("vda (whole device, all processes) wrote 16.0 MiB"),
            "{line}"
        );
        assert!(
            line.contains("write amp (device bytes / server-reported bytes written) 3.2"),
            "{line}"
        );
        assert!(
            line.contains("data directory 300.0 MiB allocated (incl. preallocation)"),
            "{line}"
        );
    }
}
