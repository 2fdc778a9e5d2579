//! Bounded fuzzing of every parser of user input: sizes, durations, block
//! size splits, CPU lists, sweep axes (lists and ranges), server URLs, fio
//! job files, plan files, YCSB property files, iolab results files and fio
//! JSON. Each input either parses or fails as a usage error (exit code 2)
//! that names the field; nothing panics, and what parses also renders
//! (reports, fio export). Runs `IOLAB_FUZZ_CASES` cases per parser (default 3000, a few
//! seconds) from a fixed seed, so `make test` is repeatable;
//! `IOLAB_FUZZ_RANDOM=1` draws new inputs each run (to hunt). A failure
//! prints its input, shrunk.

use iolab::error::exit_code;
use iolab::plan::{fiojob, parse, planfile, sweep};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

fn cases() -> u32 {
    std::env::var("IOLAB_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000)
}

fn runner() -> TestRunner {
    runner_with(cases())
}

fn runner_with(cases: u32) -> TestRunner {
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    if std::env::var_os("IOLAB_FUZZ_RANDOM").is_some() {
        TestRunner::new(config)
    } else {
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha))
    }
}

/// An error from user input must be exit 2 and name `field`.
fn usage_naming(r: anyhow::Result<impl Sized>, field: &str, input: &str) {
    if let Err(e) = r {
        assert_eq!(exit_code(&e), 2, "{input:?}: {e:#} is not a usage error");
        assert!(
            format!("{e:#}").contains(field),
            "{input:?}: '{e:#}' does not name {field}"
        );
    }
}

/// Strings made of what sizes, durations, lists and ranges are made of,
/// with arbitrary text now and then.
fn value_text() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => "[0-9kKmMgGtTpPiIbBsSuUnN%.,:/ x-]{0,16}",
        2 => "([0-9]{1,20}[kmgtp]?(\\.\\.|,|:|/)){0,4}[0-9]{0,20}",
        1 => any::<String>(),
    ]
}

#[test]
fn sizes_durations_splits_and_cpu_lists() {
    runner()
        .run(&value_text(), |s| {
            usage_naming(parse::parse_size("--size", &s), "--size", &s);
            usage_naming(parse::parse_duration_ns("--runtime", &s), "--runtime", &s);
            usage_naming(parse::parse_bs_split("--bs", &s), "--bs", &s);
            usage_naming(parse::parse_cpu_list("--cpus", &s), "--cpus", &s);
            Ok(())
        })
        .unwrap();
}

#[test]
fn sweep_axes_stay_bounded() {
    runner()
        .run(&value_text(), |s| {
            if let Ok(v) = sweep::parse_u64_axis("--io-count", &s) {
                assert!(v.len() <= 1 << 16, "{s:?}: {} values", v.len());
            }
            usage_naming(sweep::parse_u64_axis("--io-count", &s), "--io-count", &s);
            usage_naming(sweep::parse_u32_axis("--qd", &s, 1, 65536), "--qd", &s);
            usage_naming(sweep::parse_bs_axis("--bs", &s), "--bs", &s);
            usage_naming(sweep::parse_rw_axis("--rw", &s), "--rw", &s);
            usage_naming(sweep::parse_rate_axis("--rate", &s), "--rate", &s);
            Ok(())
        })
        .unwrap();
}

/// fio job files from real option names with fuzzed values and structure.
/// Server URLs (`--server-url`): schemes, credentials with escapes, hosts,
/// ports, databases and socket options, mixed; MongoDB URLs with options;
/// and any text.
fn server_url_text() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => "(postgres|postgresql|mysql|mariadb|redis|mongodb|mongodb\\+srv|http)?(://)?([a-z%0-9]{0,4}(:[a-z%0-9@]{0,4})?@)?(\\[[0-9:]{0,6}\\]|[a-z0-9.]{0,6})(:[0-9]{0,6})?(/[a-z%0-9]{0,4})?(\\?(host|socket|x)=[/a-z%]{0,6}(&[a-z]=[a-z/]{0,3})?)?",
        // MongoDB's options go to the driver's own parser.
        2 => "mongodb://([a-z%0-9]{0,4}(:[a-z%0-9@]{0,4})?@)?[a-z0-9.]{0,6}(:[0-9]{0,6})?(/[a-z.%0-9]{0,4})?(\\?(w|journal|readPreference|wtimeoutMS|authSource|tls|replicaSet|x)=[a-zA-Z0-9%]{0,6}(&(w|journal|maxPoolSize)=[a-z0-9]{0,3})?)?",
        1 => any::<String>(),
    ]
}

#[test]
fn server_urls() {
    runner()
        .run(&server_url_text(), |url| {
            let r = iolab::servers::Endpoint::parse(&url);
            if let Ok(ep) = &r {
                // What parses prints without its password.
                let shown = ep.display_url();
                assert!(ep.password.is_empty() || !shown.contains(&format!(":{}@", ep.password)));
            }
            usage_naming(r, "--server-url", &url);
            Ok(())
        })
        .unwrap();
}

fn fio_job_text() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("rw"),
        Just("bs"),
        Just("bssplit"),
        Just("iodepth"),
        Just("numjobs"),
        Just("size"),
        Just("runtime"),
        Just("time_based"),
        Just("ioengine"),
        Just("direct"),
        Just("rwmixread"),
        Just("rate_iops"),
        Just("rate_process"),
        Just("filename"),
        Just("fsync"),
        Just("ramp_time"),
        Just("io_size"),
        Just("group_reporting"),
        Just("stonewall"),
        Just("nosuchoption"),
    ];
    let line = prop_oneof![
        4 => (key, value_text()).prop_map(|(k, v)| format!("{k}={v}")),
        1 => "\\[[a-z ]{0,8}\\]",
        1 => "[;#]?[ -~]{0,20}",
    ];
    prop::collection::vec(line, 0..12).prop_map(|lines| lines.join("\n"))
}

/// Every text `strategy` makes is parsed by `parse`; a refusal is a usage
/// error (exit 2), never a panic.
fn refuses_with_exit_2<T>(
    strategy: impl Strategy<Value = String>,
    parse: impl Fn(&str) -> anyhow::Result<T>,
) {
    runner()
        .run(&strategy, |text| {
            if let Err(e) = &parse(&text) {
                assert_eq!(exit_code(e), 2, "{text:?}: {e:#}");
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn fio_job_files() {
    refuses_with_exit_2(fio_job_text(), fiojob::parse_fio_job);
}

/// Plan files (TOML) from real keys with fuzzed values.
fn plan_text() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("rw"),
        Just("bs"),
        Just("qd"),
        Just("jobs"),
        Just("engine"),
        Just("runtime"),
        Just("rate"),
        Just("mix"),
        Just("batch"),
        Just("size"),
        Just("bogus"),
    ];
    let value = prop_oneof![
        value_text().prop_map(|v| format!("{v:?}")),
        (0i64..5000).prop_map(|n| n.to_string()),
        Just("-1".to_string()),
        Just("[1, 2, 4]".to_string()),
        Just("true".to_string()),
        Just("[]".to_string()),
    ];
    let line = prop_oneof![
        4 => (key, value).prop_map(|(k, v)| format!("{k} = {v}")),
        1 => "\\[\\[?[a-z]{0,6}\\]\\]?",
        1 => "[ -~]{0,16}",
    ];
    prop::collection::vec(line, 0..10).prop_map(|lines| lines.join("\n"))
}

#[test]
fn plan_files() {
    refuses_with_exit_2(plan_text(), |text| planfile::parse("plan.toml", text));
}

/// YCSB property files: real property names with fuzzed values.
fn props_text() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("recordcount"),
        Just("operationcount"),
        Just("insertcount"),
        Just("insertstart"),
        Just("fieldcount"),
        Just("fieldlength"),
        Just("readproportion"),
        Just("updateproportion"),
        Just("scanproportion"),
        Just("insertproportion"),
        Just("readmodifywriteproportion"),
        Just("requestdistribution"),
        Just("maxscanlength"),
        Just("scanlengthdistribution"),
        Just("zipfianconstant"),
        Just("threadcount"),
        Just("insertorder"),
        Just("fieldlengthdistribution"),
    ];
    let sep = prop_oneof![Just("="), Just(":"), Just(" ")];
    let value = prop_oneof![
        value_text(),
        Just("zipfian".to_string()),
        Just("latest".to_string()),
        Just("hashed".to_string()),
        Just("-3".to_string()),
        Just("1e308".to_string()),
        Just("NaN".to_string()),
    ];
    let line = prop_oneof![
        5 => (key, sep, value).prop_map(|(k, s, v)| format!("{k}{s}{v}")),
        1 => "[#!]?[ -~]{0,16}",
    ];
    prop::collection::vec(line, 0..10).prop_map(|lines| lines.join("\n"))
}

#[test]
fn ycsb_property_files() {
    use iolab::kv::props::Props;
    use iolab::kv::ycsb::YcsbConfig;
    refuses_with_exit_2(props_text(), |text| {
        let mut p = Props::builtin("a").unwrap();
        p.load_str(text, "w.properties")
            .and_then(|()| YcsbConfig::from_props(&p))
    });
}

fn fixture(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/report")
        .join(name);
    std::fs::read_to_string(p).unwrap()
}

/// A JSON document with one value somewhere replaced (a number made huge,
/// negative or fractional, a string, null, an empty object) or one byte
/// changed.
fn mutate(doc: &str, seed: (u64, u64, u8)) -> String {
    let (a, b, how) = seed;
    if how % 4 == 0 {
        let mut bytes = doc.as_bytes().to_vec();
        let i = (a % bytes.len() as u64) as usize;
        bytes[i] = (b % 95 + 32) as u8;
        return String::from_utf8_lossy(&bytes).into_owned();
    }
    let mut v: serde_json::Value = serde_json::from_str(doc).unwrap();
    let mut leaves = Vec::new();
    collect_paths(&v, String::new(), &mut leaves);
    let path = &leaves[(a % leaves.len() as u64) as usize];
    let replacement = match b % 8 {
        0 => serde_json::json!(u64::MAX),
        1 => serde_json::json!(-1),
        2 => serde_json::json!(1e300),
        3 => serde_json::json!(0),
        4 => serde_json::json!("x"),
        5 => serde_json::Value::Null,
        6 => serde_json::json!({}),
        _ => serde_json::json!([]),
    };
    if let Some(slot) = v.pointer_mut(path) {
        *slot = replacement;
    }
    v.to_string()
}

fn collect_paths(v: &serde_json::Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                let k = k.replace('~', "~0").replace('/', "~1");
                collect_paths(x, format!("{at}/{k}"), out);
            }
        }
        serde_json::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                collect_paths(x, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// Whatever loads must also render: Markdown, HTML, the terminal summary
/// and the fio-JSON export.
fn render_all(r: &iolab::results::Results) {
    let _ = iolab::report::markdown::render(r);
    let _ = iolab::report::html::render(r, "fuzz.json");
    let _ = iolab::report::fio_json::to_fio_json(r);
}

#[test]
fn results_files() {
    let docs: Vec<String> = [
        "device-batching.json",
        "device-loadlat.json",
        "device-steady.json",
        "kv-ycsb-rocksdb.json",
        "run-standard.json",
        "trace-sample.json",
    ]
    .iter()
    .map(|f| fixture(f))
    .collect();
    let strategy = (0..docs.len(), any::<u64>(), any::<u64>(), any::<u8>());
    let mut r = runner_with(cases() / 15);
    r.run(&strategy, |(d, a, b, how)| {
        let text = mutate(&docs[d], (a, b, how));
        match iolab::results::Results::parse(&text, "fuzz.json") {
            Ok(r) => render_all(&r.with_analysis()),
            Err(e) => assert_eq!(exit_code(&e), 2, "{e:#}"),
        }
        Ok(())
    })
    .unwrap();
}

#[test]
fn fio_json_files() {
    let docs: Vec<String> = [
        "fio-randread.json",
        "fio-jsonplus-2jobs.json",
        "fio-client.json",
    ]
    .iter()
    .map(|f| fixture(f))
    .collect();
    let strategy = (0..docs.len(), any::<u64>(), any::<u64>(), any::<u8>());
    let mut r = runner_with(cases() / 15);
    r.run(&strategy, |(d, a, b, how)| {
        let text = mutate(&docs[d], (a, b, how));
        if let Ok(r) = iolab::report::fio_json::from_fio_text(&text) {
            render_all(&r);
        }
        Ok(())
    })
    .unwrap();
}
