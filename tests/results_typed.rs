//! The typed results model: every v1 fixture loads, its `analysis` section
//! and its points serialise back to the same JSON, and keys this version
//! does not know (older or newer files) survive a load and save.

use std::path::{Path, PathBuf};

use iolab::results::Results;
use serde_json::{json, Value};

/// The iolab results files among the report fixtures (not the fio ones).
fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report");
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with("fio-"))
        .collect();
    out.sort();
    out
}

/// The first path where `a` and `b` differ, if any.
fn first_difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                let sub = format!("{path}.{k}");
                match (x.get(k), y.get(k)) {
                    (Some(u), Some(v)) => {
                        if let Some(d) = first_difference(u, v, &sub) {
                            return Some(d);
                        }
                    }
                    (u, v) => return Some(format!("{sub}: {u:?} vs {v:?}")),
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (u, v))| first_difference(u, v, &format!("{path}[{i}]"))),
        // Hand-written fixtures write 30000 where the model writes 30000.0.
        (Value::Number(x), Value::Number(y)) => {
            (x.as_f64() != y.as_f64()).then(|| format!("{path}: {a} vs {b}"))
        }
        _ => (a != b).then(|| format!("{path}: {a} vs {b}")),
    }
}

/// The points without their `job` (JobSpec gains defaulted fields newer
/// than the fixtures, e.g. `submit_batch`; that is not this model's concern)
/// and without an empty `extra`.
fn points_without_job(v: &Value) -> Value {
    let mut pts = v["points"].clone();
    for p in pts.as_array_mut().into_iter().flatten() {
        let p = p.as_object_mut().unwrap();
        p.remove("job");
        // An empty `extra` is left out when written.
        if p.get("extra") == Some(&json!({})) {
            p.remove("extra");
        }
    }
    pts
}

fn load(p: &Path) -> (Value, Results) {
    let text = std::fs::read_to_string(p).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let r: Results = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} does not load: {e}", p.display()));
    (v, r)
}

#[test]
fn fixtures_round_trip_analysis_and_points() {
    let all = fixtures();
    assert!(all.len() >= 8, "{all:?}");
    for p in all {
        let (orig, r) = load(&p);
        let back = serde_json::to_value(&r).unwrap();
        assert_eq!(
            back.get("analysis"),
            orig.get("analysis"),
            "analysis of {}",
            p.display()
        );
        if let Some(a) = orig.get("analysis") {
            // Byte for byte, not only equal as JSON.
            assert_eq!(
                serde_json::to_string(&r.analysis).unwrap(),
                a.to_string(),
                "analysis text of {}",
                p.display()
            );
        }
        assert_eq!(
            first_difference(
                &points_without_job(&back),
                &points_without_job(&orig),
                "points"
            ),
            None,
            "{}",
            p.display()
        );
    }
}

#[test]
fn typed_analysis_sections_deserialize_from_fixtures() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report");
    let (_, r) = load(&dir.join("device-loadlat.json"));
    let g = &r.analysis.load_latency[0];
    assert_eq!(g.curve.len(), 5);
    assert_eq!(g.knee_factor, 2.0);
    assert!(g.knee.is_some());
    assert!(r.analysis.peaks.as_ref().unwrap().max_iops.is_some());
    assert!(r.analysis.other.is_empty());
    let (_, r) = load(&dir.join("device-batching.json"));
    assert!(!r.analysis.batching.is_empty());
    assert!(r.analysis.batching[0].parallelism.is_some());
    let (_, r) = load(&dir.join("device-steady.json"));
    assert!(!r.analysis.steady_state.is_empty());
}

#[test]
fn unknown_analysis_and_point_keys_survive() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report");
    let text = std::fs::read_to_string(dir.join("device-loadlat.json")).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    v["analysis"]["future_analysis"] = json!({"a": [1, 2, 3]});
    v["analysis"]["a_first"] = json!(1);
    v["points"][0]["extra"]["future_extension"] = json!({"x": "y"});
    let r: Results = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(r.analysis.other["future_analysis"], json!({"a": [1, 2, 3]}));
    let back = serde_json::to_value(&r).unwrap();
    assert_eq!(back["analysis"], v["analysis"]);
    // Written in sorted order, unknown keys in their place.
    let text = serde_json::to_string(&r.analysis).unwrap();
    assert!(
        text.starts_with(r#"{"a_first":1,"future_analysis":"#),
        "{text}"
    );
    assert!(text.find("\"future_analysis\"") < text.find("\"load_latency\""));
    assert_eq!(
        first_difference(
            &points_without_job(&back),
            &points_without_job(&v),
            "points"
        ),
        None
    );
}

#[test]
fn a_file_without_analysis_writes_none() {
    let r = Results::new("device", iolab::results::Provenance::minimal());
    let v = serde_json::to_value(&r).unwrap();
    assert!(v.get("analysis").is_none());
}

#[test]
fn typed_point_extensions_deserialize_from_fixtures() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report");
    let (_, r) = load(&dir.join("device-loadlat.json"));
    assert!(r.points[0].extra.is_closed_loop_max());
    let open: Vec<_> = r
        .points
        .iter()
        .filter_map(|p| p.extra.open_loop.as_ref())
        .collect();
    assert_eq!(open.len(), 5);
    assert!(open
        .iter()
        .all(|o| o.target_iops > 0.0 && o.intended_main().is_some()));
    assert!(r
        .points
        .iter()
        .all(|p| !p.extra.other.contains_key("open_loop")));
    let (_, r) = load(&dir.join("device-steady.json"));
    let rounds: Vec<_> = r
        .points
        .iter()
        .filter_map(|p| p.extra.steady.as_ref())
        .collect();
    assert!(!rounds.is_empty());
    assert!(rounds.iter().any(|s| s.tracked));
    let text = std::fs::read_to_string(dir.join("fio-randread.json")).unwrap();
    let r = iolab::report::fio_json::from_fio_text(&text).unwrap();
    assert!(r.points[0].extra.fio.is_some());
    assert!(r.analysis.peaks.is_some(), "analysis computed on import");
}

#[test]
fn point_extension_insert_types_known_keys() {
    let mut e = iolab::results::PointExt::default();
    e.insert("phase".into(), json!("precondition"));
    e.insert("rate_pct_of_max".into(), json!(50.0));
    e.insert("kv".into(), json!({"engine": "lmdb"}));
    assert!(e.is_precondition());
    assert_eq!(e.rate_pct_of_max, Some(50.0));
    assert_eq!(e.other["kv"], json!({"engine": "lmdb"}));
    assert!(e.contains_key("phase") && e.contains_key("kv"));
    assert_eq!(
        serde_json::to_string(&e).unwrap(),
        r#"{"kv":{"engine":"lmdb"},"phase":"precondition","rate_pct_of_max":50.0}"#
    );
}

/// Files iolab wrote (not the made-up synthetic one) have no section left
/// untyped: kv and trace sections parse into their types, exactly (cpu:
/// tests/device_cli.rs, on a fresh run; these files predate it).
#[test]
fn sections_of_real_files_are_all_typed() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report");
    let mut seen = std::collections::BTreeSet::new();
    for name in [
        "kv-ycsb-rocksdb.json",
        "kv-dbbench-lmdb.json",
        "trace-sample.json",
        "run-standard.json",
        "run-all-steps.json",
        "device-batching.json",
        "device-loadlat.json",
        "device-steady.json",
        "oltp-postgres.json",
        "kv-postgres.json",
    ] {
        let (_, r) = load(&dir.join(name));
        for p in &r.points {
            let left: Vec<&String> = p.extra.other.keys().collect();
            assert!(left.is_empty(), "{name}: {}: untyped {left:?}", p.name);
            for (key, set) in [
                ("kv", p.extra.kv.is_some()),
                ("trace", p.extra.trace.is_some()),
                ("oltp", p.extra.oltp.is_some()),
                ("server", p.extra.server.is_some()),
                ("timeline", p.extra.timeline.is_some()),
            ] {
                if set {
                    seen.insert(key);
                }
            }
        }
    }
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        ["kv", "oltp", "server", "timeline", "trace"],
        "the fixtures cover every typed section"
    );
}

/// The server and timeline sections of a real oltp run on a private
/// PostgreSQL are typed, hold equal-length columns, and are written back
/// as read (also after a change: the typed values are what is written).
#[test]
fn server_and_timeline_sections_read_back() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report");
    let (_, r) = load(&dir.join("oltp-postgres.json"));
    assert_eq!(r.points.len(), 2);
    for p in &r.points {
        let s = p.extra.server.as_deref().expect("server");
        let proc_ = s.process.as_ref().expect("the server's processes");
        assert!(proc_.usr_pct + proc_.sys_pct > 0.0 && proc_.processes > 1);
        assert!(s.db_size_bytes.unwrap() > 0 && s.device_write_bytes_per_op.is_some());
        assert_eq!(s.ops, p.total.ops);
        let t = p.extra.timeline.as_deref().expect("timeline");
        let n = t.len();
        assert!(n >= 4, "{n} seconds");
        for col in [
            &t.len_s,
            &t.cpu_usr_pct,
            &t.cpu_sys_pct,
            &t.cpu_iowait_pct,
            &t.cpu_idle_pct,
            &t.disk_read_mib_s,
            &t.disk_write_mib_s,
            &t.disk_read_iops,
            &t.disk_write_iops,
            &t.server_usr_pct,
            &t.server_sys_pct,
            &t.client_ops_s,
        ] {
            assert_eq!(col.len(), n);
        }
        let mut changed = p.clone();
        changed.extra.timeline.as_mut().unwrap().client_ops_s[0] = 12.5;
        let text = serde_json::to_string(&changed).unwrap();
        let back: iolab::results::Point = serde_json::from_str(&text).unwrap();
        assert_eq!(back.extra, changed.extra);
        assert_eq!(back.extra.timeline.unwrap().client_ops_s[0], 12.5);
    }
    let load_t = &r.extra.json("oltp_load").unwrap()["timeline"];
    let t: iolab::results::TimelineSeries = serde_json::from_value(load_t.clone()).unwrap();
    assert_eq!(&serde_json::to_value(&t).unwrap(), load_t);
}

/// A section that does not parse exactly (a field missing or unknown)
/// stays as read, and is written back unchanged.
#[test]
fn inexact_sections_are_kept_as_read() {
    let mut e = iolab::results::PointExt::default();
    let odd_trace = json!({"breakdown": {"stages": [{"stage": "user", "mean_ns": 5}]}});
    let odd_cpu = json!({"iowait_pct": 3.0, "guest_pct": 1.0});
    e.insert("trace".into(), odd_trace.clone());
    e.insert("cpu".into(), odd_cpu.clone());
    assert!(e.trace.is_none() && e.cpu.is_none());
    assert!(e.contains_key("trace") && e.contains_key("cpu"));
    let v = serde_json::to_value(&e).unwrap();
    assert_eq!(v, json!({"cpu": odd_cpu, "trace": odd_trace}));
}

/// The machine CPU section of a timeline: older files (no irq or steal
/// column) render the table they always had; newer ones add the irq and
/// steal columns and lines, with which the shares add up to 100.
#[test]
fn the_cpu_timeline_shows_irq_and_steal_only_when_recorded() {
    use iolab::report::charts::timeline::timelines;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report");
    let (_, mut r) = load(&dir.join("oltp-postgres.json"));
    let cpu = |r: &iolab::results::Results| {
        timelines(r)
            .into_iter()
            .find(|s| s.id == "timeline-cpu")
            .expect("a CPU section")
    };
    let old = cpu(&r);
    assert!(
        !old.table.headers.iter().any(|h| h == "steal %"),
        "{:?}",
        old.table.headers
    );
    assert!(!old.svgs.iter().any(|s| s.contains("steal")));
    for p in &mut r.points {
        let t = p.extra.timeline.as_mut().unwrap();
        t.cpu_irq_pct = vec![1.5; t.len()];
        t.cpu_steal_pct = vec![7.25; t.len()];
    }
    let new = cpu(&r);
    let steal = new
        .table
        .headers
        .iter()
        .position(|h| h == "steal %")
        .expect("steal");
    assert_eq!(new.table.headers[steal - 1], "irq %");
    assert_eq!(new.table.headers.len(), old.table.headers.len() + 2);
    // The load's timeline (no such columns set here) leaves its cells blank.
    let seconds: usize = r
        .points
        .iter()
        .map(|p| p.extra.timeline.as_ref().unwrap().len())
        .sum();
    let filled = new.table.rows.iter().filter(|row| row[steal] == "7.25");
    assert_eq!(filled.count(), seconds);
    assert!(new
        .table
        .rows
        .iter()
        .all(|row| row.len() == new.table.headers.len()));
    let drawn = new.svgs.iter().filter(|s| s.contains("steal")).count();
    assert_eq!(drawn, r.points.len(), "one chart per point draws steal");
}

/// A kv point's LSM state (`extra.kv.lsm`) is typed: it reads back into
/// `LsmPhase` and writes back the same JSON; a kv point of an older file,
/// without it, gains no `lsm` key.
#[test]
fn kv_lsm_state_round_trips() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report");
    let (_, mut r) = load(&dir.join("kv-ycsb-rocksdb.json"));
    let before = serde_json::to_value(&r.points[0]).unwrap();
    assert!(
        before["extra"]["kv"].get("lsm").is_none(),
        "old files have none"
    );
    let lsm = json!({
        "start": {"l0_files": 3, "files_per_level": [3, 1, 0, 0, 0, 0, 0],
                  "pending_compaction_bytes": 12_582_912_u64, "running_flushes": 1,
                  "running_compactions": 1, "flush_pending": 0, "compaction_pending": 1,
                  "immutable_memtables": 1, "memtable_bytes": 4096},
        "end": {"l0_files": 0, "files_per_level": [0, 2, 0, 0, 0, 0, 0],
                "pending_compaction_bytes": 0, "running_flushes": 0,
                "running_compactions": 0, "flush_pending": 0, "compaction_pending": 0,
                "immutable_memtables": 0, "memtable_bytes": 2048},
        "after_steps": [{"step": "waitforcompaction", "duration_ns": 1500}]
    });
    let kv = r.points[0].extra.kv.as_mut().unwrap();
    kv.lsm = Some(serde_json::from_value(lsm.clone()).unwrap());
    assert!(!kv.lsm.as_ref().unwrap().settled());
    let written = serde_json::to_value(&r.points[0]).unwrap();
    assert_eq!(written["extra"]["kv"]["lsm"], lsm);
    let back: iolab::results::Point = serde_json::from_value(written.clone()).unwrap();
    assert_eq!(serde_json::to_value(&back).unwrap(), written);
}
