//! Apache Cassandra: a private single-node instance (the jars of
//! `org.apache.cassandra:cassandra-all` from Maven Central, fetched by
//! scripts/fetch-cassandra.sh, run by the machine's JDK 17) with its data,
//! commit log, hints and caches under the target (the commit log placeable
//! elsewhere), listening on 127.0.0.1 only; and the client side every
//! Cassandra user of iolab shares (`Cql`: a CQL session on a
//! current-thread tokio runtime).

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::Context;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;

use super::endpoint::Endpoint;
use super::private::Layout;
use super::settings::ServerSettings;
use crate::error::usage;

/// The JVM heap of a private server unless `--heap` says otherwise.
pub const DEFAULT_HEAP: u64 = 1 << 30;

/// How long a private server may take to open its native port (it takes
/// ~10 s on an idle 2-core VM, several times that on a loaded one).
pub const READY_WITHIN: Duration = Duration::from_secs(180);

/// What `iolab kv` says before starting one.
pub const STARTING: &str =
    "starting Cassandra (a JVM: this takes 10-30 s; waiting up to 180 s for its native port)";

/// The version scripts/fetch-cassandra.sh fetches.
pub const VERSION: &str = "5.0.2";

/// The JVM options Cassandra 5 needs on JDK 17 (its conf/jvm17-server.options).
const JVM17: &[&str] = &[
    "-Djdk.attach.allowAttachSelf=true",
    "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-exports=java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED",
    "--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED",
    "--add-exports=java.rmi/sun.rmi.server=ALL-UNNAMED",
    "--add-exports=java.sql/java.sql=ALL-UNNAMED",
    "--add-exports=java.base/java.lang.ref=ALL-UNNAMED",
    "--add-exports=jdk.unsupported/sun.misc=ALL-UNNAMED",
    "--add-exports=jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED",
    "--add-exports=jdk.attach/sun.tools.attach=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.module=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.loader=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.reflect=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.math=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.module=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.util.jar=ALL-UNNAMED",
    "--add-opens=jdk.management/com.sun.management.internal=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=jdk.compiler/com.sun.tools.javac=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Dio.netty.allocator.useCacheForAllThreads=true",
    "-Dio.netty.allocator.maxOrder=11",
    "-XX:+UseG1GC",
    "-XX:+ParallelRefProcEnabled",
    "-XX:MaxTenuringThreshold=1",
    "-XX:MaxGCPauseMillis=300",
    "-XX:+ExitOnOutOfMemoryError",
    "-Xss256k",
];

/// cassandra.yaml keys iolab sets for where the server keeps its files and
/// listens: `--server-set` may not move them off the target or loopback.
const OWN_KEYS: &[&str] = &[
    "data_file_directories",
    "commitlog_directory",
    "saved_caches_directory",
    "hints_directory",
    "cdc_raw_directory",
    "listen_address",
    "rpc_address",
    "broadcast_address",
    "broadcast_rpc_address",
    "native_transport_port",
    "storage_port",
    "seed_provider",
    "authenticator",
];

/// The settings reported in provenance (names of `system_views.settings`).
const REPORTED: &[&str] = &[
    "concurrent_reads",
    "concurrent_writes",
    "memtable_heap_space",
    "memtable_offheap_space",
    "memtable_allocation_type",
    "commitlog_sync",
    "commitlog_sync_period",
    "commitlog_segment_size",
    "disk_access_mode",
    "key_cache_size",
    "compaction_throughput",
    "concurrent_compactors",
    "data_file_directories",
    "commitlog_directory",
];

/// The directory of Cassandra's jars: `IOLAB_CASSANDRA_LIB`, else the
/// newest `~/.cache/iolab/cassandra/VERSION/lib` holding cassandra-all.
pub fn lib_dir() -> Option<PathBuf> {
    let has_jar = |d: &Path| {
        std::fs::read_dir(d).ok().is_some_and(|mut it| {
            it.any(|e| {
                e.ok()
                    .and_then(|e| e.file_name().into_string().ok())
                    .is_some_and(|n| n.starts_with("cassandra-all-") && n.ends_with(".jar"))
            })
        })
    };
    if let Some(d) = std::env::var_os("IOLAB_CASSANDRA_LIB") {
        let d = PathBuf::from(d);
        return has_jar(&d).then_some(d);
    }
    let base = PathBuf::from(std::env::var_os("HOME")?).join(".cache/iolab/cassandra");
    let mut libs: Vec<PathBuf> = std::fs::read_dir(base)
        .ok()?
        .flatten()
        .map(|e| e.path().join("lib"))
        .filter(|d| has_jar(d))
        .collect();
    libs.sort();
    libs.pop()
}

/// Why a private server cannot start here, naming the fix.
pub fn missing() -> Option<String> {
    if crate::testbed::command::which("java").is_none() {
        return Some("java (JDK 17) not found; install it with scripts/install-deps.sh".into());
    }
    if lib_dir().is_none() {
        return Some(
            "Cassandra's jars are not in ~/.cache/iolab/cassandra/VERSION/lib (or IOLAB_CASSANDRA_LIB); \
             fetch them with scripts/fetch-cassandra.sh"
                .into(),
        );
    }
    None
}

/// Refuse `--server-set` keys that would move files or sockets.
pub fn check_settings(s: &ServerSettings) -> anyhow::Result<()> {
    if let Some((k, _)) = s.set.iter().find(|(k, _)| OWN_KEYS.contains(&k.as_str())) {
        return Err(usage(
            "--server-set",
            format!(
                "{k} is iolab's to set for a private Cassandra (its files stay under the target, \
                 its ports on 127.0.0.1; the commit log moves with --commitlog-dir)"
            ),
        ));
    }
    Ok(())
}

/// The JVM's temporary directory (java.io.tmpdir): the native libraries
/// lz4-java, snappy-java and JNA unpack go there, not into /tmp, and go
/// with the server's directory.
fn tmp_dir(layout: &Layout) -> PathBuf {
    layout.dir.join("tmp")
}

/// The JVM options that keep a private server's files out of /tmp.
fn tmp_options(layout: &Layout) -> Vec<String> {
    let tmp = tmp_dir(layout).display().to_string();
    vec![
        format!("-Djava.io.tmpdir={tmp}"),
        format!("-Dorg.xerial.snappy.tempdir={tmp}"),
        format!("-Djna.tmpdir={tmp}"),
        // hsperfdata_USER is always under /tmp (not java.io.tmpdir): no
        // perf data file at all (only jps/jstat read it).
        "-XX:-UsePerfData".into(),
    ]
}

/// The directories the server writes, created; `commitlog` may be outside
/// `layout.dir` (`--commitlog-dir`).
fn make_dirs(layout: &Layout) -> anyhow::Result<()> {
    for d in [
        layout.data.join("data"),
        layout.data.join("hints"),
        layout.data.join("saved_caches"),
        layout.data.join("cdc_raw"),
        tmp_dir(layout),
        layout.commitlog.clone(),
    ] {
        std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
    }
    Ok(())
}

/// cassandra.yaml: a single node on 127.0.0.1, no authentication (it is
/// reachable from this machine only, for the run's length), its files
/// under the target, then the user's `--server-set` keys.
fn yaml(layout: &Layout, ep: &Endpoint, storage_port: u16, s: &ServerSettings) -> String {
    let d = |sub: &str| layout.data.join(sub).display().to_string();
    let mut keys: Vec<(String, String)> = vec![
        ("cluster_name".into(), "iolab".into()),
        ("num_tokens".into(), "1".into()),
        ("initial_token".into(), "0".into()),
        (
            "partitioner".into(),
            "org.apache.cassandra.dht.Murmur3Partitioner".into(),
        ),
        ("auto_bootstrap".into(), "false".into()),
        // TRUNCATE (before each load) would keep a snapshot of what it removes.
        ("auto_snapshot".into(), "false".into()),
        ("data_file_directories".into(), format!("[{}]", d("data"))),
        (
            "commitlog_directory".into(),
            layout.commitlog.display().to_string(),
        ),
        ("saved_caches_directory".into(), d("saved_caches")),
        ("hints_directory".into(), d("hints")),
        ("cdc_raw_directory".into(), d("cdc_raw")),
        ("commitlog_sync".into(), "periodic".into()),
        ("commitlog_sync_period".into(), "10000ms".into()),
        (
            "seed_provider".into(),
            format!(
                "\n  - class_name: org.apache.cassandra.locator.SimpleSeedProvider\n    parameters:\n      - seeds: \"127.0.0.1:{storage_port}\""
            ),
        ),
        ("listen_address".into(), "127.0.0.1".into()),
        ("rpc_address".into(), "127.0.0.1".into()),
        ("storage_port".into(), storage_port.to_string()),
        ("native_transport_port".into(), ep.port.to_string()),
        ("start_native_transport".into(), "true".into()),
        ("endpoint_snitch".into(), "SimpleSnitch".into()),
        ("authenticator".into(), "AllowAllAuthenticator".into()),
        ("authorizer".into(), "AllowAllAuthorizer".into()),
    ];
    let sync_set = s
        .set
        .iter()
        .any(|(k, v)| k == "commitlog_sync" && v != "periodic");
    let period_set = s.set.iter().any(|(k, _)| k == "commitlog_sync_period");
    if sync_set && !period_set {
        // Cassandra refuses a period with batch or group sync.
        keys.retain(|(k, _)| k != "commitlog_sync_period");
    }
    for (k, v) in &s.set {
        match keys.iter_mut().find(|(key, _)| key == k) {
            Some(slot) => slot.1 = v.clone(),
            None => keys.push((k.clone(), v.clone())),
        }
    }
    keys.iter().map(|(k, v)| format!("{k}: {v}\n")).collect()
}

const LOGBACK: &str = r#"<configuration>
  <appender name="STDOUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="STDOUT" /></root>
</configuration>
"#;

/// The server's command line, after writing its configuration into
/// `layout.dir` and choosing its storage (gossip) port.
pub(super) fn server_command(
    layout: &Layout,
    ep: &Endpoint,
    s: &ServerSettings,
) -> anyhow::Result<Command> {
    let java = crate::testbed::command::which("java").context("java not found")?;
    let lib = lib_dir().context("Cassandra's jars not found (scripts/fetch-cassandra.sh)")?;
    make_dirs(layout)?;
    let storage_port = super::private::free_port()?;
    let conf = layout.dir.join("cassandra.yaml");
    std::fs::write(&conf, yaml(layout, ep, storage_port, s))
        .with_context(|| format!("writing {}", conf.display()))?;
    let logback = layout.dir.join("logback.xml");
    std::fs::write(&logback, LOGBACK)?;
    let heap = s.heap.unwrap_or(DEFAULT_HEAP) >> 20;
    let mut cmd = Command::new(java);
    cmd.arg(format!("-Xms{heap}m"))
        .arg(format!("-Xmx{heap}m"))
        .args(JVM17)
        .args(tmp_options(layout))
        .arg(format!("-Dcassandra.config=file://{}", conf.display()))
        .arg(format!(
            "-Dlogback.configurationFile=file://{}",
            logback.display()
        ))
        .arg("-Dcassandra-foreground=yes")
        .arg("-Dcassandra.skip_wait_for_gossip_to_settle=0")
        .arg(format!("-Dcassandra.storagedir={}", layout.data.display()))
        .arg(format!("-Dcassandra.logdir={}", layout.dir.display()))
        .arg("-cp")
        .arg(format!("{}/*", lib.display()))
        .arg("org.apache.cassandra.service.CassandraDaemon")
        .current_dir(&layout.dir);
    Ok(cmd)
}

/// A CQL session and the runtime that drives it: every call blocks the
/// calling thread on its own current-thread runtime (no thread hand-off).
pub struct Cql {
    pub rt: tokio::runtime::Runtime,
    pub session: Session,
}

impl Cql {
    /// Connect to `ep` (in `keyspace`, if any).
    pub fn connect(ep: &Endpoint, keyspace: Option<&str>) -> anyhow::Result<Cql> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting a tokio runtime")?;
        let mut b = SessionBuilder::new()
            .known_node(format!("{}:{}", ep.host, ep.port))
            .connection_timeout(Duration::from_secs(5))
            .fetch_schema_metadata(false)
            // One request in flight per session: nothing to coalesce.
            .write_coalescing(false);
        if !ep.user.is_empty() {
            b = b.user(&ep.user, &ep.password);
        }
        if let Some(ks) = keyspace {
            b = b.use_keyspace(ks, false);
        }
        let session = rt
            .block_on(b.build())
            .with_context(|| format!("connecting to {}", ep.display_url()))?;
        Ok(Cql { rt, session })
    }

    /// Run one unprepared statement (schema changes, probes).
    pub fn run(&self, cql: &str) -> anyhow::Result<scylla::response::query_result::QueryResult> {
        self.rt
            .block_on(self.session.query_unpaged(cql, &[]))
            .with_context(|| cql.to_string())
    }

    /// The text columns of every row of `cql`.
    pub fn texts(&self, cql: &str) -> anyhow::Result<Vec<Vec<Option<String>>>> {
        let rows = self.run(cql)?.into_rows_result()?;
        let mut out = Vec::new();
        for row in rows.rows::<scylla::deserialize::row::ColumnIterator>()? {
            let mut cols = Vec::new();
            for c in row? {
                cols.push(
                    c?.slice
                        .map(|s| String::from_utf8_lossy(s.as_slice()).into_owned()),
                );
            }
            out.push(cols);
        }
        Ok(out)
    }
}

pub(super) fn ready(ep: &Endpoint) -> anyhow::Result<()> {
    // Refused at once while the JVM starts: no runtime or session until
    // the port answers.
    let addr: SocketAddr = format!("{}:{}", ep.host, ep.port).parse()?;
    TcpStream::connect_timeout(&addr, Duration::from_secs(1))?;
    let c = Cql::connect(ep, None)?;
    c.run("SELECT release_version FROM system.local")?;
    Ok(())
}

/// The version and the reported settings.
pub(super) fn describe(ep: &Endpoint) -> anyhow::Result<(String, Vec<(String, String)>)> {
    let c = Cql::connect(ep, None)?;
    let version = c
        .texts("SELECT release_version FROM system.local")?
        .into_iter()
        .next()
        .and_then(|r| r.into_iter().next().flatten())
        .unwrap_or_else(|| "?".into());
    // A server before 4.0 has no settings table: report none.
    let mut config = Vec::new();
    if let Ok(rows) = c.texts("SELECT name, value FROM system_views.settings") {
        for r in rows {
            if let [Some(k), v] = r.as_slice() {
                if REPORTED.contains(&k.as_str()) {
                    config.push((k.clone(), v.clone().unwrap_or_default()));
                }
            }
        }
    }
    Ok((format!("Cassandra {version}"), config))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::servers::ServerKind;

    fn layout() -> Layout {
        Layout {
            dir: "/t/iolab-cassandra-1-0".into(),
            data: "/t/iolab-cassandra-1-0/data".into(),
            log: "/t/iolab-cassandra-1-0/server.log".into(),
            socket: "/t/iolab-cassandra-1-0/sock".into(),
            commitlog: "/c/iolab-cassandra-commitlog-1-0".into(),
        }
    }

    fn ep() -> Endpoint {
        Endpoint {
            kind: ServerKind::parse("cassandra").unwrap(),
            host: "127.0.0.1".into(),
            port: 19042,
            user: String::new(),
            password: String::new(),
            database: "ycsb".into(),
            socket: None,
            options: String::new(),
        }
    }

    #[test]
    fn yaml_keeps_files_under_the_target_and_takes_overrides() {
        let mut s = ServerSettings::default();
        s.set.push(("concurrent_reads".into(), "8".into()));
        s.set.push(("commitlog_sync".into(), "batch".into()));
        let y = yaml(&layout(), &ep(), 17000, &s);
        assert!(y.contains("data_file_directories: [/t/iolab-cassandra-1-0/data/data]\n"));
        assert!(y.contains("commitlog_directory: /c/iolab-cassandra-commitlog-1-0\n"));
        assert!(y.contains("native_transport_port: 19042\n"));
        assert!(y.contains("seeds: \"127.0.0.1:17000\""));
        assert!(y.contains("concurrent_reads: 8\n"));
        assert!(y.contains("commitlog_sync: batch\n"));
        assert!(!y.contains("commitlog_sync_period"), "{y}");
        assert_eq!(y.matches("commitlog_sync:").count(), 1);
    }

    #[test]
    fn the_jvm_keeps_its_temporary_files_in_the_servers_directory() {
        let o = tmp_options(&layout());
        assert!(o.contains(&"-Djava.io.tmpdir=/t/iolab-cassandra-1-0/tmp".to_string()));
        assert!(o.contains(&"-Dorg.xerial.snappy.tempdir=/t/iolab-cassandra-1-0/tmp".to_string()));
        assert!(o.contains(&"-XX:-UsePerfData".to_string()), "{o:?}");
    }

    #[test]
    fn server_set_cannot_move_files_or_ports() {
        let mut s = ServerSettings::default();
        s.set
            .push(("commitlog_directory".into(), "/elsewhere".into()));
        let e = check_settings(&s).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert!(format!("{e:#}").contains("--server-set"));
        s.set[0] = ("concurrent_reads".into(), "64".into());
        check_settings(&s).unwrap();
    }
}
