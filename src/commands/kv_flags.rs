//! `iolab kv`'s flags for the kv library: `KvArgs` copied into
//! `kv::settings::KvSettings`, from which `kv::settings::plan` builds the
//! validated `KvPlan`.

use crate::cli::kv::{BenchArgs, EngineArgs, KvArgs, PhaseArg, PlaceArgs};
use crate::kv::plan::KvPlan;
use crate::kv::settings::{self, BenchSettings, EngineSettings, KvSettings, PlaceSettings};

/// The plan the arguments describe, validated.
pub fn plan(a: &KvArgs) -> anyhow::Result<KvPlan> {
    settings::plan(&kv_settings(a))
}

/// Flags kv does not have, or has under another form: `--budget` is
/// refused naming what bounds a kv run, and `--workload W` becomes the
/// positional WORKLOAD (without a value: the workloads listed).
pub fn misplaced(mut a: KvArgs) -> anyhow::Result<KvArgs> {
    use crate::error::usage;
    if a.budget.is_some() {
        return Err(usage(
            "--budget",
            "kv has no --budget (that is `iolab run`'s and `iolab device`'s): bound a YCSB \
             phase's time with --runtime DURATION (YCSB's -p maxexecutiontime=SECS) and its \
             size with -p recordcount=N and -p operationcount=N; a db_bench benchmark's with \
             --num N and --reads N",
        ));
    }
    match a.workload_flag.take() {
        Some(w) if w.trim().is_empty() => Err(usage(
            "--workload",
            format!(
                "needs a value: {} (or give it without the flag: iolab kv a)",
                crate::kv::settings::WORKLOADS
            ),
        )),
        Some(w) => {
            a.workload = Some(w);
            a.given.push("workload".into());
            Ok(a)
        }
        None => Ok(a),
    }
}

/// The flags as given.
pub fn kv_settings(a: &KvArgs) -> KvSettings {
    let KvArgs {
        workload,
        property_files,
        props,
        engine,
        runtime,
        threads,
        target_ops,
        under,
        seed,
        status_interval,
        output,
        phase,
        bench,
        eng,
        place,
        server,
        force: _,
        quiet: _,
        dry_run: _,
        plan: _,
        media: _,
        given: _,
        instances: _,
        hosts: _,
        workload_flag: _,
        budget: _,
        export: _,
    } = a.clone();
    KvSettings {
        workload,
        property_files,
        property_texts: vec![],
        props,
        engine,
        runtime,
        threads,
        target_ops,
        under,
        seed,
        status_interval,
        output,
        phase: match phase {
            PhaseArg::Load => settings::PhaseSel::Load,
            PhaseArg::Run => settings::PhaseSel::Run,
            PhaseArg::Both => settings::PhaseSel::Both,
        },
        bench: bench_settings(*bench),
        eng: engine_settings(*eng),
        place: place_settings(*place),
        server: super::server_flags::flags(&server),
    }
}

fn bench_settings(a: BenchArgs) -> BenchSettings {
    let BenchArgs {
        num,
        key_size,
        key_format,
        value_size,
        reads,
        readers,
        writer_rate,
        readwritepercent,
        check_values,
    } = a;
    BenchSettings {
        num,
        key_size,
        key_format,
        value_size,
        reads,
        readers,
        writer_rate,
        readwritepercent,
        check_values,
    }
}

fn engine_settings(a: EngineArgs) -> EngineSettings {
    let EngineArgs {
        sync,
        disable_wal,
        cache_size,
        compression,
        direct_io,
        mmap,
        page_size,
        no_readahead,
        map_size,
        write_buffer_size,
        bytes_per_sync,
        pipelined_write,
        background_jobs,
        wt_table,
        checkpoint_interval,
        wt_eviction_threads,
        cassandra_compaction,
    } = a;
    EngineSettings {
        sync,
        disable_wal,
        cache_size,
        compression,
        direct_io,
        mmap,
        page_size,
        no_readahead,
        map_size,
        write_buffer_size,
        bytes_per_sync,
        pipelined_write,
        background_jobs,
        wt_table,
        checkpoint_interval,
        wt_eviction_threads,
        cassandra_compaction,
    }
}

fn place_settings(a: PlaceArgs) -> PlaceSettings {
    let PlaceArgs {
        target,
        size,
        dir,
        db,
        destroy_data,
        keep,
        memory_limit,
        drop_caches,
        flush_between,
    } = a;
    PlaceSettings {
        target,
        size,
        dir,
        db,
        destroy_data,
        keep,
        memory_limit,
        drop_caches,
        flush_between,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv::engine::EngineOptions;
    use crate::kv::plan::Step;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: KvArgs,
    }

    fn parse(argv: &[&str]) -> KvPlan {
        let cli = Cli::try_parse_from(std::iter::once("kv").chain(argv.iter().copied()))
            .expect("arguments parse");
        plan(&cli.args).expect("a valid plan")
    }

    #[test]
    fn flag_defaults_are_the_library_defaults() {
        let p = parse(&[]);
        assert_eq!(
            format!("{:?}", p.options),
            format!("{:?}", EngineOptions::default())
        );
    }

    /// `iolab run`'s database step builds its plan without the CLI: it must
    /// be the plan `iolab kv a,c -p recordcount=N -p operationcount=N` makes.
    #[test]
    fn run_step_plan_is_the_kv_command_plan() {
        let dir = std::env::temp_dir();
        let cli = parse(&[
            "a,c",
            "-p",
            "recordcount=1234",
            "-p",
            "operationcount=1234",
            "--seed",
            "9",
            "--dir",
            dir.to_str().unwrap(),
        ]);
        let timing = crate::campaign::run::kv::KvTiming {
            records: 1234,
            run_s: Some(5),
        };
        let lib = crate::campaign::run::kv::plan(&dir, timing, 9).unwrap();
        // Its run phases are time-based: `-p maxexecutiontime` on the command line.
        let ops = crate::kv::ycsb::TIME_BASED_OPS.to_string();
        let timed = parse(&[
            "a,c",
            "-p",
            "recordcount=1234",
            "-p",
            &format!("operationcount={ops}"),
            "-p",
            "maxexecutiontime=5",
            "--seed",
            "9",
            "--dir",
            dir.to_str().unwrap(),
        ]);
        for i in 0..4 {
            let want = if i % 2 == 0 {
                &cli.steps[i]
            } else {
                &timed.steps[i]
            };
            assert_eq!(
                format!("{:?}", lib.steps[i]),
                format!("{want:?}"),
                "step {i}"
            );
        }
        assert_eq!(lib.steps.len(), cli.steps.len());
        assert_eq!(format!("{:?}", lib.options), format!("{:?}", cli.options));
        assert_eq!(format!("{:?}", lib.bench), format!("{:?}", cli.bench));
        assert_eq!(
            (lib.engine, lib.threads, lib.seed, lib.target_ops),
            (cli.engine, cli.threads, cli.seed, cli.target_ops)
        );
        assert_eq!(format!("{:?}", lib.place), format!("{:?}", cli.place));
    }

    #[test]
    fn a_fieldlength_list_sweeps_the_record_size() {
        let swept = parse(&["a", "-p", "fieldlength=1024, 4096", "-p", "recordcount=10"]);
        let steps: Vec<(String, i64)> = swept
            .steps
            .iter()
            .map(|s| match s {
                Step::YcsbLoad(n, c) => (format!("{n}.load"), c.fieldlength),
                Step::YcsbRun(n, c) => (format!("{n}.run"), c.fieldlength),
                Step::Bench(..) | Step::Chain(_) => unreachable!(),
            })
            .collect();
        assert_eq!(
            steps,
            [
                ("ycsb-a@1024B.load".to_string(), 1024),
                ("ycsb-a@1024B.run".to_string(), 1024),
                ("ycsb-a@4096B.load".to_string(), 4096),
                ("ycsb-a@4096B.run".to_string(), 4096),
            ]
        );
        assert_eq!(
            parse(&["a"]).under_ns,
            1_000_000,
            "--under defaults to 1 ms"
        );
        for (args, field) in [
            (&["kv", "a", "-p", "fieldlength=1024,,2"][..], "fieldlength"),
            (&["kv", "a", "-p", "fieldlength=1k,2"][..], "fieldlength"),
            (&["kv", "a", "--under", "0"][..], "--under"),
            (
                &["kv", "a", "--checkpoint-interval", "1.5s"][..],
                "--checkpoint-interval",
            ),
            (
                &["kv", "a", "--checkpoint-interval", "2d"][..],
                "--checkpoint-interval",
            ),
            (
                &["kv", "a", "--checkpoint-interval", "x"][..],
                "--checkpoint-interval",
            ),
        ] {
            // A value that is no duration is refused by the flag's parser.
            let e = match Cli::try_parse_from(args) {
                Err(e) => e.to_string(),
                Ok(cli) => plan(&cli.args).unwrap_err().to_string(),
            };
            assert!(e.contains(field), "{args:?}: {e}");
        }
    }

    #[test]
    fn db_bench_chain_steps_are_steps_of_their_own() {
        let p = parse(&["fillrandom,waitforcompaction,flush,compact,readrandom"]);
        assert_eq!(
            format!("{:?}", p.steps),
            "[Bench(FillRandom, None), Chain(WaitForCompaction), Chain(Flush), Chain(Compact), Bench(ReadRandom, None)]"
        );
        let cli = Cli::try_parse_from(["kv", "a,flush", "--engine", "redis"]).unwrap();
        let e = plan(&cli.args).unwrap_err().to_string();
        assert!(e.contains("WORKLOAD") && e.contains("embedded"), "{e}");
        let cli = Cli::try_parse_from(["kv", "fillrandom,compactall"]).unwrap();
        let e = plan(&cli.args).unwrap_err().to_string();
        assert!(e.contains("waitforcompaction, flush, compact"), "{e}");
    }

    #[test]
    fn bad_values_name_their_flag() {
        let cli = Cli::try_parse_from(["kv", "--threads", "0"]).unwrap();
        let e = plan(&cli.args).unwrap_err().to_string();
        assert!(e.contains("--threads"), "{e}");
        let cli = Cli::try_parse_from(["kv", "readwhilewriting", "--readers", "1,x"]).unwrap();
        let e = plan(&cli.args).unwrap_err().to_string();
        assert!(e.contains("--readers"), "{e}");
    }
}
