//! A kv plan in words, for `--dry-run` and the results' provenance: each
//! step as YCSB and db_bench users name it, and the engine options as
//! `name = value` lines (never Rust's debug form).

use super::engine::EngineOptions;
use super::plan::{KvPlan, Step};
use super::ycsb::YcsbConfig;

/// One step: "ycsb-a load: 1000 records of 10 x 100 B fields",
/// "db_bench readwhilewriting, 8 readers", ...
pub fn step(s: &Step) -> String {
    match s {
        Step::YcsbLoad(name, c) => format!(
            "{name} load: {} records of {} x {} B fields",
            c.insertcount.max(0),
            c.fieldcount,
            c.fieldlength
        ),
        Step::YcsbRun(name, c) => format!(
            "{name} run: {} operations ({}), {} requests over {} records{}",
            c.operationcount,
            mix(c),
            format!("{:?}", c.distribution).to_lowercase(),
            c.recordcount,
            c.max_execution_s
                .map(|s| format!(", at most {s} s"))
                .unwrap_or_default()
        ),
        Step::Bench(b, Some(readers)) => format!("db_bench {}, {readers} readers", b.name()),
        Step::Bench(b, None) => format!("db_bench {}", b.name()),
        Step::Chain(c) => format!("db_bench {} (between benchmarks)", c.name()),
    }
}

/// YCSB's operation mix, the proportions that are not zero.
fn mix(c: &YcsbConfig) -> String {
    let parts: Vec<String> = [
        ("read", c.readproportion),
        ("update", c.updateproportion),
        ("insert", c.insertproportion),
        ("scan", c.scanproportion),
        ("read-modify-write", c.rmwproportion),
    ]
    .iter()
    .filter(|(_, p)| *p > 0.0)
    .map(|(n, p)| format!("{n} {:.0}%", p * 100.0))
    .collect();
    parts.join(", ")
}

/// The options an engine is opened with, as `name = value`.
pub fn options(o: &EngineOptions) -> Vec<(&'static str, String)> {
    let on = |b: bool| if b { "on" } else { "off" }.to_string();
    let bytes = |b: u64| super::report::human(b);
    vec![
        ("sync", on(o.sync)),
        ("wal", on(o.wal)),
        ("cache_size", bytes(o.cache_size)),
        ("compression", o.compression.name().to_string()),
        ("direct_io", on(o.direct_io)),
        ("mmap", on(o.mmap)),
        (
            "page_size",
            o.page_size
                .map_or("engine default".into(), |p| p.to_string()),
        ),
        ("map_size", bytes(o.map_size)),
        ("write_buffer_size", bytes(o.write_buffer_size)),
        ("background_jobs", o.background_jobs.to_string()),
        ("readahead", on(o.readahead)),
        ("bytes_per_sync", bytes(o.bytes_per_sync)),
        ("pipelined_write", on(o.pipelined_write)),
    ]
}

/// The clients: "threads: 4" (and the open-loop rate when paced).
pub fn clients(plan: &KvPlan) -> String {
    match plan.target_ops {
        Some(r) => format!("{} (paced at {r} operations/s in all)", plan.threads),
        None => plan.threads.to_string(),
    }
}

/// Where the database goes: a scratch directory in the target, `--db`, a
/// raw device, a private server's data under the target, or the server
/// at `--server-url` (whose storage iolab does not see).
pub fn place(plan: &KvPlan) -> String {
    if let Some(url) = &plan.server.url {
        let shown = crate::servers::Endpoint::parse(url)
            .map(|e| e.display_url())
            .unwrap_or_else(|_| "--server-url".into());
        return format!("the server's, at {shown} (its own storage, not measured here)");
    }
    let p = &plan.place;
    if let Some(raw) = &p.raw {
        return format!(
            "{} (raw block device: LMDB's data file)",
            raw.device.display()
        );
    }
    if let Some(db) = &p.db {
        return format!("{} (--db, kept)", db.display());
    }
    let what = match plan.engine.server() {
        Some(kind) => format!("a private {} server's data in ", kind.name()),
        None => String::new(),
    };
    format!(
        "{what}{}/iolab-kv-{}-PID ({})",
        p.dir.display(),
        plan.engine.name(),
        if p.keep {
            "scratch, kept: --keep"
        } else {
            "scratch, removed at exit"
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv::dbbench::Bench;

    /// Issue 31 item 16: dry runs printed `YcsbLoad("ycsb-a", YcsbConfig
    /// { ... })`, `Bench(ReadWhileWriting, Some(8))`, `EngineOptions {..}`.
    #[test]
    fn steps_and_options_read_as_words() {
        let s = step(&Step::Bench(Bench::ReadWhileWriting, Some(8)));
        assert_eq!(s, "db_bench readwhilewriting, 8 readers");
        let text: Vec<String> = options(&EngineOptions::default())
            .into_iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect();
        assert!(text.iter().any(|l| l.starts_with("cache_size = ")));
        assert!(text
            .iter()
            .all(|l| !l.contains('{') && !l.contains("Some(")));
    }
}
