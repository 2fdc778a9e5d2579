//! The options of `iolab device` in one table: for each, where it may come
//! from (a command-line flag, a plan-file key) and whether a fio job file
//! sets it (then the flag conflicts with `--fio-job`). The plan file's known
//! keys and the `--fio-job` conflicts derive from this table; a test checks
//! that it lists every clap flag and that every plan-file key applies.

/// Where an option may be given: a set of the bits below.
pub type Sources = u8;

/// A command-line flag (`--rw`).
pub const FLAG: Sources = 1;
/// A key of a plan file's `[defaults]` or `[[experiment]]` (`rw = "read"`).
pub const PLAN: Sources = 2;
/// Set by a fio job file: the flag conflicts with `--fio-job`.
pub const FIO: Sources = 4;
/// Set by a fio job file, and overridden by the flag when it is given with
/// `--fio-job` (as fio's command line overrides a job file).
pub const OVER: Sources = 8;

/// One option: its key (the flag's long name with `_` for `-`).
#[derive(Debug, Clone, Copy)]
pub struct DeviceOption {
    pub key: &'static str,
    pub sources: Sources,
}

const fn opt(key: &'static str, sources: Sources) -> DeviceOption {
    DeviceOption { key, sources }
}

pub const DEVICE_OPTIONS: &[DeviceOption] = &[
    opt("target", FLAG),
    opt("size", FLAG),
    opt("overwrite", FLAG),
    opt("destroy_data", FLAG),
    opt("keep", FLAG),
    opt("make", FLAG),
    opt("make_in", FLAG),
    opt("rounds", FLAG),
    opt("baseline", FLAG),
    // Several hosts (`--hosts`, docs/fleet.md): the command line's only.
    opt("hosts", FLAG),
    opt("ssh_config", FLAG),
    opt("deploy", FLAG),
    opt("host_iolab", FLAG),
    opt("on_host_loss", FLAG),
    opt("connect_concurrency", FLAG),
    opt("rw", FLAG | PLAN | FIO),
    opt("mix", FLAG | PLAN | FIO),
    opt("bs", FLAG | PLAN | FIO),
    opt("qd", FLAG | PLAN | OVER),
    opt("jobs", FLAG | PLAN | OVER),
    opt("region", FLAG | PLAN | FIO),
    opt("batch", FLAG | PLAN | FIO),
    opt("fsync_every", FLAG | PLAN | FIO),
    opt("submit_batch", FLAG),
    opt("thinktime", FLAG | PLAN | FIO),
    opt("thinktime_blocks", FLAG | PLAN | FIO),
    opt("seed", FLAG | PLAN),
    opt("profile", FLAG | PLAN | FIO),
    opt("act_scale", FLAG | PLAN | FIO),
    opt("name", FLAG | PLAN | FIO),
    opt("engine", FLAG | PLAN | OVER),
    opt("direct", FLAG | PLAN | OVER),
    opt("buffered", FLAG | PLAN | OVER),
    opt("uring_fixed_buffers", FLAG | PLAN | FIO),
    opt("uring_fixed_files", FLAG | PLAN | FIO),
    opt("uring_sqpoll", FLAG | PLAN | FIO),
    opt("uring_iopoll", FLAG | PLAN | FIO),
    opt("poll", FLAG | PLAN),
    opt("cpus", FLAG | PLAN),
    opt("numa_node", FLAG | PLAN),
    opt("mem_node", FLAG | PLAN),
    opt("sweep", FLAG | PLAN),
    opt("io_timeout", FLAG | PLAN),
    opt("runtime", FLAG | PLAN | OVER),
    opt("io_count", FLAG | PLAN | OVER),
    opt("io_bytes", FLAG | PLAN | OVER),
    opt("budget", FLAG | PLAN | FIO),
    opt("ramp", FLAG | PLAN | OVER),
    opt("plan", FLAG | FIO),
    opt("fio_job", FLAG),
    opt("rate", FLAG | PLAN | FIO),
    opt("arrival", FLAG | PLAN | FIO),
    opt("knee_factor", FLAG | PLAN),
    opt("latency_target", FLAG | PLAN | FIO),
    opt("percentile", FLAG | PLAN),
    opt("steady_state", FLAG | PLAN | FIO),
    opt("steady_criterion", FLAG | PLAN),
    opt("steady_limit", FLAG | PLAN),
    opt("steady_window", FLAG | PLAN),
    opt("max_rounds", FLAG | PLAN),
    opt("precondition", FLAG | PLAN | FIO),
    opt("purge", FLAG | PLAN | FIO),
    opt("verify", FLAG | PLAN | OVER),
    opt("continue_on_error", FLAG | OVER),
    opt("clock", FLAG),
    opt("json", FLAG),
    opt("force", FLAG),
    opt("quiet", FLAG),
    opt("status_interval", FLAG),
    opt("dry_run", FLAG),
    opt("export", FLAG),
    opt("log_dir", FLAG),
    opt("breakdown", FLAG),
    opt("breakdown_buffer_kb", FLAG),
    opt("fake_latency", FLAG | PLAN),
    opt("fake_servers", FLAG | PLAN),
    opt("description", PLAN),
];

fn keys_with(s: Sources) -> impl Iterator<Item = &'static str> {
    DEVICE_OPTIONS
        .iter()
        .filter(move |o| o.sources & s != 0)
        .map(|o| o.key)
}

/// Keys a plan file may set.
pub fn plan_file_keys() -> Vec<&'static str> {
    keys_with(PLAN).collect()
}

/// Flags a fio job file replaces (they conflict with `--fio-job`).
pub fn fio_job_conflicts() -> Vec<&'static str> {
    keys_with(FIO).collect()
}

/// Flags that override the jobs of a fio job file when given with it.
pub fn fio_job_overrides() -> Vec<&'static str> {
    keys_with(OVER).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique_and_every_fio_key_is_a_flag() {
        let mut keys: Vec<_> = DEVICE_OPTIONS.iter().map(|o| o.key).collect();
        keys.sort();
        let n = keys.len();
        keys.dedup();
        assert_eq!(keys.len(), n, "a key listed twice");
        for o in DEVICE_OPTIONS {
            assert!(
                o.sources & FIO == 0 || o.sources & FLAG != 0,
                "{} conflicts with --fio-job but is no flag",
                o.key
            );
        }
    }
}
