//! What `iolab oltp` runs, as a validated plan: the engine and where its
//! database is (a scratch SQLite file under the target directory, a kept
//! one to reuse with `--db`, a private server with its data under the
//! target and its settings, or a server URL), the warehouses and how to
//! load them, the virtual-user counts of the sweep, the ramp and measured
//! time, pacing, seed, output and checks. Built by `commands/oltp` from
//! the command line or directly by library callers; `oltp::run::run`
//! executes it.

use std::path::PathBuf;

use anyhow::Result;

use super::sql::connect::SqlEngine;
use crate::error::usage;
use crate::servers::ServerSettings;

/// Most virtual users or warehouses a plan may ask for.
pub const MAX_USERS: usize = 1024;
pub const MAX_WAREHOUSES: u32 = 10_000;

/// A whole `iolab oltp` run.
#[derive(Debug, Clone)]
pub struct OltpPlan {
    pub engine: SqlEngine,
    /// The filesystem under test: the scratch SQLite database, or the
    /// private server's data, goes in a directory made in it.
    pub target: PathBuf,
    /// A running server to use instead of a private one (`--server-url`).
    pub server_url: Option<String>,
    /// The private server's settings (ignored with `server_url`).
    pub settings: ServerSettings,
    /// Load into a namespace of iolab's own on `server_url` (a PostgreSQL
    /// schema, a MariaDB database) made for the run and dropped at its
    /// end, not the URL's database: a host of `oltp --hosts` sharing the
    /// server with the others.
    pub namespace: Option<String>,
    /// Reuse this loaded SQLite database (skip the load; kept).
    pub db: Option<PathBuf>,
    /// Keep the scratch directory and its database.
    pub keep: bool,
    pub warehouses: u32,
    /// Virtual users of each point, in order (one point per count).
    pub users: Vec<usize>,
    pub ramp_s: f64,
    pub time_s: f64,
    /// Keying and think times.
    pub wait: bool,
    pub loader_threads: usize,
    pub seed: u64,
    pub output: Option<PathBuf>,
    pub status_interval_s: Option<f64>,
    /// Run the consistency conditions after the run.
    pub check: bool,
}

impl OltpPlan {
    /// A plan with the verb's defaults: SQLite under `target`, one
    /// warehouse, one user, 5 s ramp, 60 s measured.
    pub fn new(target: PathBuf) -> OltpPlan {
        OltpPlan {
            engine: SqlEngine::Sqlite,
            target,
            server_url: None,
            settings: ServerSettings::default(),
            namespace: None,
            db: None,
            keep: false,
            warehouses: 1,
            users: vec![1],
            ramp_s: 5.0,
            time_s: 60.0,
            wait: false,
            loader_threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            seed: 4207,
            output: None,
            status_interval_s: None,
            check: true,
        }
    }

    /// Check what does not depend on the machine.
    pub fn validate(&self) -> Result<()> {
        crate::session::checked_status_interval(self.status_interval_s)?;
        if self.warehouses == 0 || self.warehouses > MAX_WAREHOUSES {
            return Err(usage(
                "--warehouses",
                format!("must be 1..{MAX_WAREHOUSES}"),
            ));
        }
        if self.users.is_empty() || self.users.iter().any(|&u| u == 0 || u > MAX_USERS) {
            return Err(usage(
                "--users",
                format!("each count must be 1..{MAX_USERS}"),
            ));
        }
        if !(self.time_s > 0.0 && self.time_s.is_finite()) {
            return Err(usage("--runtime", "must be a positive duration"));
        }
        if !(self.ramp_s >= 0.0 && self.ramp_s.is_finite()) {
            return Err(usage("--ramp", "must be a duration (0 for none)"));
        }
        if self.loader_threads == 0 || self.loader_threads > MAX_USERS {
            return Err(usage("--loader-threads", format!("must be 1..{MAX_USERS}")));
        }
        if self.engine == SqlEngine::Sqlite && self.server_url.is_some() {
            return Err(usage(
                "--server-url",
                "sqlite has no server: --server-url applies to postgres and mariadb",
            ));
        }
        if self.engine != SqlEngine::Sqlite && self.db.is_some() {
            return Err(usage(
                "--db",
                "--db reuses a kept SQLite database; a server's database is named in --server-url",
            ));
        }
        if self.engine != SqlEngine::Sqlite && self.keep {
            return Err(usage(
                "--keep",
                "--keep keeps SQLite's scratch database; a private server and its data are always removed",
            ));
        }
        let plain = |n: &str| {
            !n.is_empty()
                && n.len() <= 63
                && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        if let Some(n) = self.namespace.as_deref() {
            if self.server_url.is_none() || !plain(n) {
                return Err(usage(
                    "--server-url",
                    format!("namespace {n}: a plain name on a server named by --server-url"),
                ));
            }
        }
        if let (Some(url), Some(kind)) = (&self.server_url, self.engine.server_kind()) {
            crate::servers::Endpoint::parse(url)?.check_kind(kind)?;
        }
        self.settings.validate()
    }

    /// Comma-separated list of virtual-user counts (`--users 1,2,4`).
    pub fn parse_users(s: &str) -> Result<Vec<usize>> {
        s.split(',')
            .map(|t| match t.trim().parse::<usize>() {
                Ok(n) if (1..=MAX_USERS).contains(&n) => Ok(n),
                _ => Err(usage(
                    "--users",
                    format!("'{t}' is not a user count (1..{MAX_USERS}) in '{s}'"),
                )),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_plans_name_their_flag() {
        let ok = OltpPlan::new(PathBuf::from("."));
        ok.validate().unwrap();
        let field = |p: OltpPlan| {
            let e = p.validate().unwrap_err();
            assert_eq!(crate::error::exit_code(&e), 2);
            e.to_string()
        };
        assert!(field(OltpPlan {
            warehouses: 0,
            ..ok.clone()
        })
        .contains("--warehouses"));
        assert!(field(OltpPlan {
            users: vec![0],
            ..ok.clone()
        })
        .contains("--users"));
        assert!(field(OltpPlan {
            time_s: 0.0,
            ..ok.clone()
        })
        .contains("--runtime"));
        assert!(OltpPlan::parse_users("1,,2")
            .unwrap_err()
            .to_string()
            .contains("--users"));
        assert_eq!(OltpPlan::parse_users("1, 2,4").unwrap(), vec![1, 2, 4]);
    }
}
