//! Redis: a private instance on 127.0.0.1 with a random password, its data
//! directory on the storage under test, persistence as asked (AOF with
//! `appendfsync always|everysec|no`, RDB snapshots, or none); and the
//! client side every Redis user of iolab shares.

use std::process::Command;
use std::time::Duration;

use anyhow::Context;

use super::endpoint::Endpoint;
use super::private::{program_on_path, Layout};
use super::settings::{Persistence, ServerSettings};

/// The settings reported in provenance.
const REPORTED: &[&str] = &[
    "appendonly",
    "appendfsync",
    "save",
    "maxmemory",
    "io-threads",
];

/// One blocking connection.
pub fn connect(ep: &Endpoint) -> anyhow::Result<redis::Connection> {
    let client = redis::Client::open(ep.redis_url())
        .with_context(|| format!("--server-url {}", ep.display_url()))?;
    let con = client
        .get_connection_with_timeout(Duration::from_secs(5))
        .with_context(|| format!("connecting to {}", ep.display_url()))?;
    Ok(con)
}

pub(super) fn server_command(
    layout: &Layout,
    ep: &Endpoint,
    s: &ServerSettings,
) -> anyhow::Result<Command> {
    let prog = program_on_path("redis-server").context("redis-server not found")?;
    let mut cmd = Command::new(prog);
    let mut set = |k: &str, v: &str| {
        cmd.arg(format!("--{k}")).arg(v);
    };
    set("port", &ep.port.to_string());
    set("bind", "127.0.0.1");
    set("protected-mode", "yes");
    set("daemonize", "no");
    set("logfile", "");
    set("dir", &layout.data.display().to_string());
    set("requirepass", &ep.password);
    match s.persistence {
        Persistence::Aof => {
            set("appendonly", "yes");
            set("appendfsync", &s.appendfsync);
            set("save", "");
        }
        Persistence::Rdb => {
            set("appendonly", "no");
            set("save", "3600 1 300 100 60 10000");
        }
        Persistence::None => {
            set("appendonly", "no");
            set("save", "");
        }
    }
    for (k, v) in &s.set {
        set(k, v);
    }
    Ok(cmd)
}

pub(super) fn ready(ep: &Endpoint) -> anyhow::Result<()> {
    let mut c = connect(ep)?;
    let pong: String = redis::cmd("PING").query(&mut c)?;
    anyhow::ensure!(pong == "PONG", "PING answered {pong}");
    Ok(())
}

/// The version and the reported settings.
pub(super) fn describe(ep: &Endpoint) -> anyhow::Result<(String, Vec<(String, String)>)> {
    let mut c = connect(ep)?;
    let info: String = redis::cmd("INFO").arg("server").query(&mut c)?;
    let version = info
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .unwrap_or("?")
        .trim()
        .to_string();
    let mut config = Vec::new();
    for key in REPORTED {
        // Refused on a server that restricts CONFIG: leave the key out.
        if let Ok(pairs) = redis::cmd("CONFIG")
            .arg("GET")
            .arg(*key)
            .query::<Vec<String>>(&mut c)
        {
            for kv in pairs.chunks(2) {
                if let [k, v] = kv {
                    config.push((k.clone(), v.clone()));
                }
            }
        }
    }
    Ok((format!("Redis {version}"), config))
}
