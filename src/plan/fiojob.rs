//! fio job files: parse the common options of `[global]` and job sections
//! into `JobSpec`s, so `iolab device --fio-job FILE.fio` runs what a fio
//! user already has. Anything else stops with one usage error that names
//! every unsupported option (and its line), instead of silently running a
//! different job.
//!
//! Supported: the options of `SUPPORTED` (and `HARMLESS`, accepted with no
//! effect), listed for users in docs/report.md and docs/device.md. The jobs
//! between two stonewalls run at once, as in fio (`FioGroup`).

use crate::error::usage;
use crate::plan::engines::EngineKind;
use crate::plan::job::{Arrival, JobSpec, OpenLoop, Pattern, StopCondition, ThinkTime};
use crate::plan::parse::{parse_duration_ns, parse_size};

/// A job of a fio file: the spec plus what `JobSpec` does not carry.
#[derive(Debug, Clone, PartialEq)]
pub struct FioJob {
    pub spec: JobSpec,
    /// `filename`, or `directory` (a scratch file inside), if given.
    pub filename: Option<String>,
    pub directory: Option<String>,
    /// Target rate in IOPS per job clone (`rate_iops`) and its process
    /// (`linear`/`poisson`); `spec.open_loop` holds the total over `numjobs`.
    pub rate_iops: Option<u64>,
    pub rate_process: Option<String>,
    /// Size of the region to address (`size`).
    pub size: Option<u64>,
    /// `norandommap` was given (fio then draws random offsets like iolab).
    pub norandommap: bool,
    /// `write_bw_log`/`write_lat_log`/`write_iops_log`: fio-format logs.
    pub logs: Option<super::log_request::LogRequest>,
    /// `log_avg_msec`, when given.
    pub log_avg_msec: Option<u64>,
    /// `thinktime`, `thinktime_spin` and `thinktime_blocks` as read (no
    /// pause while `ns` is 0).
    pub think: ThinkTime,
    /// `stonewall` or `wait_for_previous`: starts after the jobs before it end.
    pub stonewall: bool,
    /// `new_group`: starts a reporting group (still run with the others).
    pub new_group: bool,
    /// `group_reporting`: its reporting group is reported as one.
    pub group_reporting: bool,
}

/// Jobs fio runs at once: the jobs between two `stonewall`s (`jobs`, a
/// range of `FioPlan::jobs`), and how they are reported: each entry of
/// `reports` (indices into `jobs`' range, from 0) is one point, merged
/// when it holds several jobs (`group_reporting`).
#[derive(Debug, Clone, PartialEq)]
pub struct FioGroup {
    pub jobs: std::ops::Range<usize>,
    pub reports: Vec<Vec<usize>>,
}

const SUPPORTED: [&str; 54] = [
    "continue_on_error",
    "rw",
    "readwrite",
    "rwmixread",
    "rwmixwrite",
    "bs",
    "blocksize",
    "bssplit",
    "size",
    "iodepth",
    "iodepth_batch",
    "iodepth_batch_submit",
    "iodepth_batch_complete",
    "iodepth_batch_complete_min",
    "iodepth_batch_complete_max",
    "numjobs",
    "ioengine",
    "direct",
    "buffered",
    "runtime",
    "time_based",
    "ramp_time",
    "rate_iops",
    "rate_process",
    "filename",
    "directory",
    "fsync",
    "name",
    "description",
    "stonewall",
    "wait_for_previous",
    "new_group",
    "group_reporting",
    "write_bw_log",
    "write_lat_log",
    "write_iops_log",
    "log_avg_msec",
    "hipri",
    "fixedbufs",
    "registerfiles",
    "sqthread_poll",
    "cpus_allowed",
    "numa_cpu_nodes",
    "numa_mem_policy",
    "verify",
    "do_verify",
    "verify_fatal",
    "percentile_list",
    "offset",
    "thinktime",
    "thinktime_spin",
    "thinktime_blocks",
    "thinktime_blocks_type",
    "write_hist_log",
];

/// One option of a section: (line number, key, value).
type Opt = (usize, String, Option<String>);

/// What `iolab device --fio-job FILE` runs: the jobs, and the one target
/// they share (iolab runs a job list on one target).
#[derive(Debug, Clone, PartialEq)]
pub struct FioPlan {
    pub jobs: Vec<JobSpec>,
    /// `filename`, else `directory` (a scratch file inside); `None`: neither given.
    pub target: Option<std::path::PathBuf>,
    /// `size`, the largest of the jobs' (the scratch file or the addressed region).
    pub size: Option<u64>,
    /// Where iolab's run will differ from fio's on purpose.
    pub warnings: Vec<String>,
    /// fio-format logs asked for, per job name.
    pub logs: Vec<(String, super::log_request::LogRequest)>,
    /// How `jobs` run: groups one after another, the jobs of a group at once.
    pub groups: Vec<FioGroup>,
}

/// Parse a fio job file for `device`: every job must use the same
/// filename/directory; rate-limited jobs run open loop (`spec.open_loop`)
/// when `open_loop` is true and are refused otherwise.
pub fn fio_plan(text: &str, open_loop: bool) -> anyhow::Result<FioPlan> {
    let jobs = parse_fio_jobs(text)?;
    // fio puts `filename` inside `directory` when both are given.
    let targets: Vec<Option<String>> = jobs
        .iter()
        .map(|j| match (&j.directory, &j.filename) {
            (Some(d), Some(f)) if !f.starts_with('/') => Some(
                std::path::Path::new(d)
                    .join(f)
                    .to_string_lossy()
                    .into_owned(),
            ),
            (_, Some(f)) => Some(f.clone()),
            (d, None) => d.clone(),
        })
        .collect();
    if targets.iter().any(|t| t != &targets[0]) {
        return Err(usage(
            "filename",
            "all jobs must use the same filename or directory (iolab runs a job file on one target)",
        ));
    }
    if let Some(j) = jobs.iter().find(|j| j.rate_iops.is_some()) {
        if !open_loop {
            return Err(usage(
                "rate_iops",
                format!(
                    "job [{}]: rate-limited (open-loop) jobs are not supported by this build of iolab yet",
                    j.spec.name
                ),
            ));
        }
    }
    let warnings = jobs
        .iter()
        .filter(|j| j.spec.bs.len() > 1 && j.spec.pattern.is_random() && !j.norandommap)
        .map(|j| {
            format!(
                "job [{}]: fio's random map (norandommap not set) makes fewer large blocks than bssplit says (measured with fio 3.33: 13% instead of 30% 64k blocks for 4k/70:64k/30); iolab issues the split as written, as fio does with norandommap=1",
                j.spec.name
            )
        })
        .collect();
    let mut warnings: Vec<String> = warnings;
    for j in &jobs {
        if j.logs.is_some() && j.log_avg_msec.is_some_and(|m| m != 1000) {
            warnings.push(format!(
                "job [{}]: iolab logs one averaged line per second (log_avg_msec=1000), not every {} ms",
                j.spec.name,
                j.log_avg_msec.unwrap_or(0)
            ));
        }
    }
    let logs = jobs
        .iter()
        .filter_map(|j| {
            let mut req = j.logs.clone()?;
            if req.prefix.is_empty() {
                req.prefix = super::log_request::file_prefix(&j.spec.name);
            }
            Some((j.spec.name.clone(), req))
        })
        .collect();
    let size = jobs.iter().filter_map(|j| j.size).max();
    let (specs, groups) = run_groups(jobs)?;
    Ok(FioPlan {
        logs,
        warnings,
        size,
        target: targets[0].clone().map(std::path::PathBuf::from),
        jobs: specs,
        groups,
    })
}

/// The jobs in fio's order of execution: the jobs up to the next
/// `stonewall` run at once; a verified write job's read-back (fio's
/// verify phase) runs after its group, alone. Reporting groups (split at
/// `new_group`) are one point each with `group_reporting`, else one point
/// per job.
fn run_groups(jobs: Vec<FioJob>) -> anyhow::Result<(Vec<JobSpec>, Vec<FioGroup>)> {
    let mut sets: Vec<Vec<FioJob>> = Vec::new();
    for j in jobs {
        match sets.last_mut() {
            Some(set) if !j.stonewall => set.push(j),
            _ => sets.push(vec![j]),
        }
    }
    let mut specs = Vec::new();
    let mut groups = Vec::new();
    for set in sets {
        let start = specs.len();
        let mut reports: Vec<(bool, Vec<usize>)> = Vec::new();
        let mut phases = Vec::new();
        for (k, j) in set.iter().enumerate() {
            match reports.last_mut() {
                Some((merged, r)) if !j.new_group => {
                    r.push(k);
                    *merged |= j.group_reporting;
                }
                _ => reports.push((j.group_reporting, vec![k])),
            }
            phases.extend(verify_phase(j)?);
        }
        specs.extend(set.into_iter().map(|j| j.spec));
        let reports = reports
            .into_iter()
            .flat_map(|(merged, r)| match merged {
                true => vec![r],
                false => r.into_iter().map(|k| vec![k]).collect(),
            })
            .collect();
        groups.push(FioGroup {
            jobs: start..specs.len(),
            reports,
        });
        for p in phases {
            groups.push(FioGroup {
                jobs: specs.len()..specs.len() + 1,
                reports: vec![vec![0]],
            });
            specs.push(p);
        }
    }
    Ok((specs, groups))
}

/// fio's verify phase: a job that only writes, with `verify` (and
/// `do_verify=1`, fio's default), then reads back the region it wrote and
/// checks every block. iolab runs that read-back as the next job, named
/// "JOB (verify)", one sequential pass over the region with its largest
/// block size (a read checks the stamps of every write inside it).
fn verify_phase(job: &FioJob) -> anyhow::Result<Option<JobSpec>> {
    let w = &job.spec;
    if !w.verify || w.read_percent() > 0 {
        return Ok(None);
    }
    let Some(size) = job.size else {
        return Err(usage(
            "verify",
            format!(
                "job [{}]: fio reads back what a write job wrote (do_verify=1); give size= so iolab knows the region to read back, or set do_verify=0",
                w.name
            ),
        ));
    };
    Ok(Some(JobSpec {
        name: format!("{} (verify)", w.name),
        pattern: Pattern::Read,
        bs: vec![(w.max_bs(), 100)],
        jobs: 1,
        batch: None,
        fsync_every: 0,
        open_loop: None,
        think: None,
        ramp_ns: 0,
        stop: StopCondition {
            runtime_ns: None,
            io_count: None,
            io_bytes: Some(size),
        },
        ..w.clone()
    }))
}

/// Accepted and meaning nothing different in iolab: `thread` (iolab's jobs
/// are threads), `norandommap` (iolab keeps no random map: offsets are
/// drawn uniformly, with repeats, except for verified jobs with one block
/// size, which visit every block once per pass: `PatternSpec::cover`),
/// `randrepeat` (offsets are always seeded, by `--seed`).
const HARMLESS: [&str; 3] = ["thread", "norandommap", "randrepeat"];

/// Every option a job file may use, as the refusal lists them.
fn supported_list() -> String {
    let mut all: Vec<&str> = SUPPORTED.iter().chain(HARMLESS.iter()).copied().collect();
    all.sort_unstable();
    all.join(", ")
}

/// The iolab flag that does what an unsupported fio option does, where
/// there is one (the job file cannot say it, the command line can).
fn iolab_instead(option: &str) -> Option<&'static str> {
    Some(match option {
        "steadystate"
        | "ss"
        | "steadystate_duration"
        | "ss_dur"
        | "steadystate_ramp_time"
        | "ss_ramp" => "iolab: --steady-state",
        "latency_target" | "latency_window" | "latency_percentile" | "latency_run" => {
            "iolab: --latency-target and --percentile"
        }
        "rate" | "rate_min" | "ratemin" | "rate_iops_min" => {
            "iolab: --rate IOPS (or rate_iops here); no bandwidth limit"
        }
        // fio's counts are per job clone; iolab's --io-count and
        // --io-bytes are over all its jobs together.
        "number_ios" => "iolab: --io-count NUMBER_IOS x numjobs",
        "io_size" | "io_limit" => "iolab: --io-bytes IO_SIZE x numjobs",
        "loops" => "iolab: --io-bytes SIZE x LOOPS x numjobs",
        "random_distribution" => {
            "iolab device draws offsets uniformly (kv has YCSB's -p requestdistribution=zipfian)"
        }
        "zonemode" | "zonesize" | "zonerange" | "zoneskip" => "no iolab equivalent",
        "startdelay" => "no iolab equivalent: jobs start together",
        "rw_sequencer" => "no iolab equivalent",
        _ => return None,
    })
}

/// Parse a fio job file into job specs (one per job section, times numjobs
/// as `jobs`). Every unsupported option is named in one usage error.
pub fn parse_fio_job(text: &str) -> anyhow::Result<Vec<JobSpec>> {
    Ok(parse_fio_jobs(text)?.into_iter().map(|j| j.spec).collect())
}

/// Like `parse_fio_job`, keeping filename/directory/rate/size per job.
pub fn parse_fio_jobs(text: &str) -> anyhow::Result<Vec<FioJob>> {
    // (section name, [(line number, key, value)])
    let mut sections: Vec<(String, Vec<Opt>)> = Vec::new();
    let mut unsupported: Vec<String> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            sections.push((name.trim().to_string(), Vec::new()));
            continue;
        }
        let (k, v) = match line.split_once('=') {
            Some((k, v)) => (k.trim().to_ascii_lowercase(), Some(v.trim().to_string())),
            None => (line.to_ascii_lowercase(), None),
        };
        let Some(sec) = sections.last_mut() else {
            return Err(usage(
                "--fio-job",
                format!("line {}: option '{k}' before any [section]", i + 1),
            ));
        };
        if !SUPPORTED.contains(&k.as_str()) && !HARMLESS.contains(&k.as_str()) {
            unsupported.push(match iolab_instead(&k) {
                Some(hint) => format!("{k} (line {}) -> {hint}", i + 1),
                None => format!("{k} (line {})", i + 1),
            });
            continue;
        }
        sec.1.push((i + 1, k, v));
    }
    if !unsupported.is_empty() {
        return Err(usage(
            "--fio-job",
            format!(
                "unsupported fio option(s): {}. iolab runs only: {}",
                unsupported.join(", "),
                supported_list()
            ),
        ));
    }
    let mut global = Section::new();
    let mut global_opts = 0;
    for (_, opts) in sections.iter().filter(|(n, _)| n == "global") {
        global.apply(opts)?;
        global_opts += opts.len();
    }
    let mut out = Vec::new();
    for (name, opts) in sections.iter().filter(|(n, _)| n != "global") {
        if global_opts == 0 && opts.is_empty() {
            return Err(usage(
                "--fio-job",
                format!("job [{name}] sets no option, and there is no [global] section"),
            ));
        }
        let mut job = global.clone();
        job.apply(opts)?;
        out.push(job.finish(name)?);
    }
    if out.is_empty() {
        return Err(usage("--fio-job", "the file has no job section"));
    }
    Ok(out)
}

fn need<'a>(line: usize, k: &str, v: &'a Option<String>) -> anyhow::Result<&'a str> {
    v.as_deref()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| usage(k, format!("line {line}: '{k}' needs a value")))
}

fn num(line: usize, k: &str, v: &Option<String>) -> anyhow::Result<u64> {
    let s = need(line, k, v)?;
    s.parse()
        .map_err(|_| usage(k, format!("line {line}: '{s}' is not a whole number")))
}

/// Boolean option: bare key or 1/0/true/false.
fn flag(line: usize, k: &str, v: &Option<String>) -> anyhow::Result<bool> {
    match v.as_deref() {
        None | Some("1") | Some("true") | Some("yes") => Ok(true),
        Some("0") | Some("false") | Some("no") => Ok(false),
        Some(o) => Err(usage(k, format!("line {line}: '{o}' is not 0 or 1"))),
    }
}

/// thinktime's unit is microseconds when none is given.
fn usec(line: usize, k: &str, v: &Option<String>) -> anyhow::Result<u64> {
    let s = need(line, k, v)?;
    match s.parse::<u64>() {
        Ok(us) => Ok(us.saturating_mul(1000)),
        Err(_) => duration(line, k, v),
    }
}

/// fio durations default to seconds; accept fio's units too.
fn duration(line: usize, k: &str, v: &Option<String>) -> anyhow::Result<u64> {
    let s = need(line, k, v)?;
    parse_duration_ns(k, s).map_err(|e| usage(k, format!("line {line}: {e}")))
}

/// A size option's value as fio writes it (`4k`, `4096`), in bytes: for
/// readers of fio's own output (its JSON's job options).
pub fn option_bytes(s: &str) -> Option<u64> {
    parse_size("", s).ok()
}

/// A duration option's value as fio writes it (seconds by default), in ns.
pub fn option_ns(s: &str) -> Option<u64> {
    parse_duration_ns("", s).ok()
}

fn size(line: usize, k: &str, v: &Option<String>) -> anyhow::Result<u64> {
    let s = need(line, k, v)?;
    parse_size(k, s).map_err(|e| usage(k, format!("line {line}: {e}")))
}

/// The options that set io_uring features, the CPUs, verification, the
/// region's offset and fio-format logs; true when `k` was one of them.
fn engine_region_or_log_option(
    spec: &mut JobSpec,
    job: &mut FioJob,
    line: usize,
    k: &str,
    v: &Option<String>,
) -> anyhow::Result<bool> {
    match k {
        // io_uring's options: iolab's --uring-* flags.
        "hipri" => spec.uring.iopoll = flag(line, k, v)?,
        "fixedbufs" => spec.uring.fixed_buffers = flag(line, k, v)?,
        "registerfiles" => spec.uring.fixed_files = flag(line, k, v)?,
        "sqthread_poll" => spec.uring.sqpoll = flag(line, k, v)?,
        "cpus_allowed" => {
            spec.cpus = Some(
                crate::plan::parse::parse_cpu_list("cpus_allowed", need(line, k, v)?)
                    .map_err(|e| usage("cpus_allowed", format!("line {line}: {e}")))?,
            )
        }
        // One node only: iolab pins workers to one node's CPUs.
        "numa_cpu_nodes" => {
            let v = need(line, k, v)?;
            spec.numa_node = Some(v.trim().parse().map_err(|_| {
                usage(k, format!("line {line}: '{v}' is not one node number (iolab pins to one node)"))
            })?)
        }
        // bind:N only (iolab's --mem-node).
        "numa_mem_policy" => {
            let v = need(line, k, v)?;
            spec.mem_node = Some(
                v.trim()
                    .strip_prefix("bind:")
                    .and_then(|n| n.trim().parse().ok())
                    .ok_or_else(|| {
                        usage(k, format!("line {line}: '{v}' is not bind:N (iolab binds to one node)"))
                    })?,
            )
        }
        // Any of fio's checksums: iolab's own stamped blocks (--verify),
        // checked on every read; a mismatch fails the run (verify_fatal).
        "verify" => spec.verify = !matches!(need(line, k, v)?, "0" | "null"),
        // do_verify=0: no read-back phase (see `verify_phase`) and, as
        // iolab stamps only what it checks, no stamps either.
        "do_verify" if !flag(line, k, v)? => spec.verify = false,
        "do_verify" => {}
        // iolab keeps full HDR histograms: every percentile is there.
        "verify_fatal" | "percentile_list" => {}
        "offset" => {
            let at = size(line, k, v)?;
            if at % 4096 != 0 {
                return Err(usage(
                    k,
                    format!(
                        "line {line}: give an offset in whole 4 KiB blocks (O_DIRECT needs it)"
                    ),
                ));
            }
            spec.offset = at;
        }
        "norandommap" => job.norandommap = v.as_deref() != Some("0"),
        "write_bw_log" | "write_lat_log" | "write_iops_log" | "write_hist_log" => {
            let req = job
                .logs
                .get_or_insert_with(|| super::log_request::LogRequest::none(""));
            if let Some(prefix) = v.as_deref().filter(|p| !p.is_empty()) {
                req.prefix = prefix.to_string();
            }
            match k {
                "write_bw_log" => req.bw = true,
                "write_lat_log" => req.lat = true,
                "write_hist_log" => {
                    req.hist = true;
                    spec.hist_log = true;
                }
                _ => req.iops = true,
            }
        }
        "continue_on_error" => {
            spec.continue_on_error = match need(line, k, v)? {
                "none" | "0" => false,
                "io" | "all" | "1" => true,
                other => {
                    return Err(usage(
                        k,
                        format!("line {line}: '{other}': iolab counts every failed request or none (none, io, all)"),
                    ))
                }
            }
        }
        "log_avg_msec" => job.log_avg_msec = Some(num(line, k, v)?),
        "thinktime" => job.think.ns = usec(line, k, v)?,
        "thinktime_spin" => job.think.spin_ns = usec(line, k, v)?,
        "thinktime_blocks" => job.think.blocks = num(line, k, v)?.clamp(1, u32::MAX as u64) as u32,
        "thinktime_blocks_type" if need(line, k, v)? != "complete" => {
            return Err(usage(
                k,
                format!(
                    "line {line}: only 'complete' is supported (iolab counts completed blocks)"
                ),
            ))
        }
        "thinktime_blocks_type" => {}
        _ => return Ok(false),
    }
    Ok(true)
}

impl Section {
    /// Nothing set yet: fio's defaults as iolab maps them.
    fn new() -> Section {
        let spec = JobSpec {
            name: String::new(),
            pattern: Pattern::Read,
            engine: EngineKind::fio_default(),
            direct: false,
            stop: StopCondition::default(),
            ..JobSpec::default()
        };
        let job = FioJob {
            spec: spec.clone(),
            filename: None,
            directory: None,
            rate_iops: None,
            rate_process: None,
            size: None,
            norandommap: false,
            logs: None,
            log_avg_msec: None,
            think: ThinkTime {
                ns: 0,
                spin_ns: 0,
                blocks: 1,
            },
            stonewall: false,
            new_group: false,
            group_reporting: false,
        };
        Section {
            spec,
            job,
            read: Parsed {
                runtime: None,
                time_based: false,
                batch_submit: None,
                batch_complete: None,
            },
            named: false,
        }
    }

    /// Apply `opts` in order onto what is set.
    fn apply(&mut self, opts: &[Opt]) -> anyhow::Result<()> {
        let Section {
            spec,
            job,
            read,
            named,
        } = self;
        for (line, k, v) in opts {
            let line = *line;
            if engine_region_or_log_option(spec, job, line, k, v)? {
                continue;
            }
            match k.as_str() {
                "rw" | "readwrite" => {
                    let s = need(line, k, v)?;
                    let (base, modifier) = s.split_once(':').unwrap_or((s, ""));
                    if !modifier.is_empty() {
                        return Err(usage(
                        "rw",
                        format!("line {line}: '{s}': fio's offset modifier ':{modifier}' (sequential runs within a random pattern, or holes in a sequential one) has no iolab equivalent; remove it to run '{base}'"),
                    ));
                    }
                    spec.pattern = Pattern::parse(base).ok_or_else(|| {
                    usage(
                        "rw",
                        format!("line {line}: '{s}' is not supported (read, write, randread, randwrite, rw, randrw)"),
                    )
                })?;
                }
                "rwmixread" => spec.mix = num(line, k, v)?.min(101) as u8,
                "rwmixwrite" => spec.mix = 100u64.saturating_sub(num(line, k, v)?) as u8,
                "bs" | "blocksize" => {
                    let s = need(line, k, v)?;
                    if s.contains(',') || s.contains('-') {
                        return Err(usage(
                        "bs",
                        format!("line {line}: separate read/write sizes or ranges ('{s}') are not supported; use one size or bssplit"),
                    ));
                    }
                    let b = size(line, k, v)?;
                    if b == 0 {
                        return Err(usage(
                            k,
                            format!("line {line}: a block size of 0 bytes moves no data"),
                        ));
                    }
                    spec.bs = vec![(b, 100)];
                }
                "bssplit" => spec.bs = bssplit(line, need(line, k, v)?)?,
                "size" => {
                    let s = size(line, k, v)?;
                    if s == 0 {
                        return Err(usage(k, format!("line {line}: a size of 0 holds no I/O")));
                    }
                    job.size = Some(s);
                }
                "iodepth" => spec.qd = num(line, k, v)?.min(u32::MAX as u64) as u32,
                "iodepth_batch" | "iodepth_batch_submit" => {
                    read.batch_submit = Some(num(line, k, v)?)
                }
                "iodepth_batch_complete" | "iodepth_batch_complete_min" => {
                    read.batch_complete = Some(num(line, k, v)?)
                }
                "iodepth_batch_complete_max" => {}
                "numjobs" => spec.jobs = num(line, k, v)?.min(u32::MAX as u64) as u32,
                "ioengine" => spec.engine = ioengine(line, need(line, k, v)?)?,
                "direct" => spec.direct = flag(line, k, v)?,
                "buffered" => spec.direct = !flag(line, k, v)?,
                "runtime" => read.runtime = Some(duration(line, k, v)?),
                "time_based" => read.time_based = flag(line, k, v)?,
                "ramp_time" => spec.ramp_ns = duration(line, k, v)?,
                "rate_iops" => {
                    let s = need(line, k, v)?;
                    if s.contains(',') {
                        return Err(usage(
                            "rate_iops",
                            format!("line {line}: per-direction rates ('{s}') are not supported"),
                        ));
                    }
                    // fio: 0 means no limit.
                    job.rate_iops = Some(num(line, k, v)?).filter(|&r| r > 0);
                }
                "rate_process" => {
                    let s = need(line, k, v)?;
                    if s != "linear" && s != "poisson" {
                        return Err(usage(
                            "rate_process",
                            format!("line {line}: '{s}' is not linear or poisson"),
                        ));
                    }
                    job.rate_process = Some(s.to_string());
                }
                "filename" => job.filename = Some(need(line, k, v)?.to_string()),
                "directory" => job.directory = Some(need(line, k, v)?.to_string()),
                "fsync" => spec.fsync_every = num(line, k, v)?.min(u32::MAX as u64) as u32,
                "name" => {
                    spec.name = need(line, k, v)?.to_string();
                    *named = true;
                }
                "stonewall" | "wait_for_previous" => job.stonewall = flag(line, k, v)?,
                "new_group" => job.new_group = flag(line, k, v)?,
                "group_reporting" => job.group_reporting = flag(line, k, v)?,
                _ => {} // description, thread, ...
            }
        }
        Ok(())
    }

    /// The job of section `name` (fio's `name=` option wins over it).
    fn finish(self, name: &str) -> anyhow::Result<FioJob> {
        let Section {
            mut spec,
            mut job,
            read,
            named,
        } = self;
        if !named {
            spec.name = name.to_string();
        }
        job.spec = finish(name, spec, &job, read)?;
        Ok(job)
    }
}

/// What is set for a job while its options are read: [global]'s once,
/// then each job's own on a copy (re-reading every global option for
/// every job made large files quadratic: 199 KB took 46 s).
#[derive(Clone)]
struct Section {
    spec: JobSpec,
    job: FioJob,
    read: Parsed,
    /// A `name=` option was given.
    named: bool,
}

/// What `build` read that needs the whole section before it applies.
#[derive(Clone)]
struct Parsed {
    runtime: Option<u64>,
    time_based: bool,
    batch_submit: Option<u64>,
    batch_complete: Option<u64>,
}

/// `bssplit=4k/50:64k/50` (fio gives the remainder to entries without a
/// percentage).
fn bssplit(line: usize, s: &str) -> anyhow::Result<Vec<(u64, u32)>> {
    if s.contains(',') {
        return Err(usage(
            "bssplit",
            format!("line {line}: per-direction splits ('{s}') are not supported"),
        ));
    }
    let mut parts = Vec::new();
    for part in s.split(':') {
        let (b, w) = part.split_once('/').ok_or_else(|| {
            usage(
                "bssplit",
                format!("line {line}: '{part}' is not SIZE/PERCENT"),
            )
        })?;
        let b =
            parse_size("bssplit", b).map_err(|e| usage("bssplit", format!("line {line}: {e}")))?;
        if b == 0 {
            return Err(usage(
                "bssplit",
                format!("line {line}: '{part}': a block size of 0 bytes moves no data"),
            ));
        }
        let w: u32 = if w.is_empty() {
            0
        } else {
            w.parse()
                .map_err(|_| usage("bssplit", format!("line {line}: '{w}' is not a percentage")))?
        };
        parts.push((b, w));
    }
    let given: u32 = parts.iter().map(|p| p.1).sum();
    let empty = parts.iter().filter(|p| p.1 == 0).count() as u32;
    if let Some(share) = 100u32.saturating_sub(given).checked_div(empty) {
        for p in parts.iter_mut().filter(|p| p.1 == 0) {
            p.1 = share;
        }
    }
    parts.retain(|p| p.1 > 0);
    Ok(parts)
}

fn ioengine(line: usize, s: &str) -> anyhow::Result<EngineKind> {
    EngineKind::from_fio(s).ok_or_else(|| {
        usage(
            "ioengine",
            format!("line {line}: engine '{s}' is not supported (libaio, io_uring, psync, sync, pvsync, mmap, null)"),
        )
    })
}

/// Apply what depends on several options (batching, stop condition, rate,
/// engine quirks) and validate.
fn finish(name: &str, mut spec: JobSpec, job: &FioJob, read: Parsed) -> anyhow::Result<JobSpec> {
    let Parsed {
        runtime,
        time_based,
        batch_submit,
        batch_complete,
    } = read;
    // fio's batching: submit K at once, reap all K: iolab's batch mode.
    if let Some(k) = batch_submit.filter(|&k| k > 1) {
        if batch_complete.is_some_and(|c| c != k) {
            return Err(usage(
                "iodepth_batch_complete_min",
                "only iodepth_batch_complete_min equal to iodepth_batch_submit (submit K, wait for all K) is supported",
            ));
        }
        spec.batch = Some(k.min(u32::MAX as u64) as u32);
    }
    // Without time_based, fio stops after `size` bytes or at runtime.
    // `size` is per job clone; iolab's io_bytes counts all workers.
    spec.stop = StopCondition {
        runtime_ns: runtime,
        io_count: None,
        io_bytes: if time_based || runtime.is_some() && job.size.is_none() {
            None
        } else {
            job.size.map(|s| s.saturating_mul(spec.jobs.max(1) as u64))
        },
    };
    // rate_iops is per job clone too; iolab's open-loop rate is the total.
    if let Some(r) = job.rate_iops {
        spec.open_loop = Some(OpenLoop {
            rate_iops: r as f64 * spec.jobs.max(1) as f64,
            arrival: match job.rate_process.as_deref() {
                Some("poisson") => Arrival::Poisson,
                _ => Arrival::Uniform,
            },
        });
    }
    if spec.stop.runtime_ns.is_none() && spec.stop.io_bytes.is_none() {
        spec.stop.runtime_ns = Some(10_000_000_000);
    }
    let think = job.think;
    if think.ns > 0 {
        if spec.open_loop.is_some() {
            return Err(usage(
                "thinktime",
                format!("job [{name}]: thinktime with rate_iops is not supported (the open loop decides when requests start)"),
            ));
        }
        spec.think = Some(ThinkTime {
            spin_ns: think.spin_ns.min(think.ns),
            ..think
        });
    }
    if time_based && runtime.is_none() {
        return Err(usage(
            "time_based",
            format!("job [{name}]: time_based needs a runtime"),
        ));
    }
    if spec.engine.is_sync() && spec.qd > 1 {
        // fio ignores iodepth for synchronous engines too.
        spec.qd = 1;
    }
    if !spec.engine.caps().direct_io {
        spec.direct = false;
    }
    spec.size = job.size;
    spec.validate()
        .map_err(|e| usage("--fio-job", format!("job [{name}]: {e}")))?;
    Ok(spec)
}

#[cfg(test)]
mod tests {

    /// Issue 44 item 15: docs/report.md's list of the options a job file
    /// may use had gone stale (no logs, verify, thinktime, offset, ...).
    #[test]
    fn the_report_doc_lists_every_option_a_job_file_may_use() {
        let doc = include_str!("../../docs/report.md");
        let start = doc.find("- **fio job files**").expect("the bullet");
        let list = &doc[start..start + doc[start..].find("## Tests").unwrap()];
        let words: std::collections::BTreeSet<&str> = list
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .collect();
        for o in SUPPORTED.iter().chain(HARMLESS.iter()) {
            assert!(words.contains(o), "docs/report.md does not list {o}");
        }
    }

    /// Issue 44 item 15: the io_size hint said "--io-bytes (size x loops)":
    /// io_size is not size, and fio's figures are per job clone while
    /// iolab's --io-bytes and --io-count count all jobs together.
    #[test]
    fn the_hints_for_fio_s_per_job_limits_multiply_by_numjobs() {
        let hint = |o: &str| iolab_instead(o).unwrap();
        assert_eq!(hint("io_size"), "iolab: --io-bytes IO_SIZE x numjobs");
        assert_eq!(hint("io_limit"), hint("io_size"));
        assert_eq!(hint("loops"), "iolab: --io-bytes SIZE x LOOPS x numjobs");
        assert_eq!(hint("number_ios"), "iolab: --io-count NUMBER_IOS x numjobs");
        let e = parse_fio_job("[j]\nrw=read\nio_size=8m\n").unwrap_err();
        assert!(
            format!("{e:#}").contains("io_size (line 3) -> iolab: --io-bytes IO_SIZE x numjobs"),
            "{e:#}"
        );
    }

    use super::*;

    #[test]
    fn numa_cpu_nodes_and_a_bind_policy_are_the_numa_flags() {
        let plan =
            parse_fio_job("[j]\nrw=read\nnuma_cpu_nodes=0\nnuma_mem_policy=bind:0\n").unwrap();
        assert_eq!(plan[0].numa_node, Some(0));
        assert_eq!(plan[0].mem_node, Some(0));
        let e = parse_fio_job("[j]\nrw=read\nnuma_mem_policy=interleave:0-1\n").unwrap_err();
        assert!(format!("{e:#}").contains("numa_mem_policy"), "{e:#}");
    }

    fn refusal(text: &str) -> String {
        fio_plan(text, true).unwrap_err().to_string()
    }

    /// Issue 31 item 10: a write job with verify checked nothing; fio
    /// writes, then reads back and checks every block.
    #[test]
    fn a_verified_write_job_gets_fios_read_back_phase() {
        let plan = fio_plan("[w]\nrw=randwrite\nbs=4k\nverify=crc32c\nsize=1m\n", true).unwrap();
        assert_eq!(plan.jobs.len(), 2);
        let back = &plan.jobs[1];
        assert_eq!(back.name, "w (verify)");
        assert_eq!(back.pattern, Pattern::Read);
        assert!(back.verify);
        assert_eq!(back.stop.io_bytes, Some(1 << 20));
        assert_eq!(back.stop.runtime_ns, None);
        // do_verify=0, reads, or no verify: no read-back.
        for text in [
            "[w]\nrw=randwrite\nverify=crc32c\ndo_verify=0\nsize=1m\n",
            "[w]\nrw=randrw\nverify=crc32c\nsize=1m\n",
            "[w]\nrw=write\nsize=1m\n",
        ] {
            assert_eq!(fio_plan(text, true).unwrap().jobs.len(), 1, "{text}");
        }
        let err = refusal("[w]\nrw=write\nverify=md5\n");
        assert!(err.contains("verify") && err.contains("size="), "{err}");
    }

    #[test]
    fn jobs_run_in_stonewall_groups_and_verify_phases_follow_their_group() {
        let text = "[global]\nbs=4k\nsize=1m\n\
                    [w]\nrw=randwrite\nverify=crc32c\n[r]\nrw=randread\n\
                    [n]\nnew_group\nrw=read\n\
                    [s]\nwait_for_previous\ngroup_reporting\nrw=read\n[t]\nrw=write\n";
        let plan = fio_plan(text, true).unwrap();
        let names: Vec<&str> = plan.jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["w", "r", "n", "w (verify)", "s", "t"]);
        let g = &plan.groups;
        assert_eq!(g.len(), 3);
        // w, r and n at once, each reported alone (no group_reporting).
        assert_eq!(g[0].jobs, 0..3);
        assert_eq!(g[0].reports, vec![vec![0], vec![1], vec![2]]);
        // The read-back after them, alone; then s and t as one report.
        assert_eq!(g[1].jobs, 3..4);
        assert_eq!(g[2].jobs, 4..6);
        assert_eq!(g[2].reports, vec![vec![0, 1]]);
    }

    #[test]
    fn continue_on_error_maps_and_refuses_directions() {
        let on = |v: &str| fio_plan(&format!("[j]\nrw=read\ncontinue_on_error={v}\n"), true);
        assert!(on("io").unwrap().jobs[0].continue_on_error);
        assert!(!on("none").unwrap().jobs[0].continue_on_error);
        let err = on("read").unwrap_err().to_string();
        assert!(
            err.contains("continue_on_error") && err.contains("line 3"),
            "{err}"
        );
    }

    /// Issue 31 item 11: the offset modifier was dropped silently.
    #[test]
    fn rw_offset_modifiers_are_refused_not_dropped() {
        let err = refusal("[j]\nrw=randread:8\n");
        assert!(
            err.contains("randread:8") && err.contains("line 2"),
            "{err}"
        );
        assert!(fio_plan("[j]\nrw=randread\n", true).is_ok());
    }

    /// Issue 31 item 11: a refusal points to the iolab flag that does the
    /// same, and the list of what runs includes the harmless options.
    #[test]
    fn refusals_point_to_iolab_flags_and_list_everything_supported() {
        let err = refusal(
            "[j]\nrw=read\nsteadystate=iops:1%\nlatency_target=1ms\nrate=1m\nnumber_ios=5\nloops=2\nzonemode=zbd\n",
        );
        for want in [
            "steadystate (line 3) -> iolab: --steady-state,",
            "latency_target (line 4) -> iolab: --latency-target",
            "rate (line 5) -> iolab: --rate",
            "number_ios (line 6) -> iolab: --io-count NUMBER_IOS x numjobs,",
            "loops (line 7) -> iolab: --io-bytes",
            "zonemode (line 8) -> no iolab equivalent.",
            "norandommap",
            "randrepeat",
            "thread",
            "new_group",
            "wait_for_previous",
        ] {
            assert!(err.contains(want), "{want} missing: {err}");
        }
    }

    /// [global]'s options are read once, not again for every job: a file
    /// of 3,000 global options and 3,000 jobs was 9 million option reads
    /// (minutes; 199 KB took 46 s), and is 6,000 now. Every job still
    /// gets the global settings, and its own win.
    #[test]
    fn global_options_apply_to_every_job_of_a_large_file() {
        let mut text = String::from("[global]\n");
        for _ in 0..3000 {
            text.push_str("bs=8k\nioengine=psync\n");
        }
        for i in 0..3000 {
            text.push_str(&format!("[j{i}]\nrw=randread\n"));
        }
        text.push_str("[last]\nbs=16k\nname=custom\n");
        let jobs = parse_fio_jobs(&text).unwrap();
        assert_eq!(jobs.len(), 3001);
        assert!(jobs[..3000].iter().all(|j| j.spec.bs == vec![(8192, 100)]));
        assert_eq!(jobs[1234].spec.name, "j1234");
        assert_eq!(jobs[3000].spec.bs, vec![(16384, 100)]);
        assert_eq!(jobs[3000].spec.name, "custom");
    }
}
