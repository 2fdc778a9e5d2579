//! Remote targets: `--target nbd://HOST:PORT/EXPORT`,
//! `iscsi://HOST:PORT/IQN/LUN`, `nvme-tcp://HOST:PORT/NQN?nsid=N` and
//! `nvme-rdma://HOST:PORT/NQN?nsid=N`, parsed
//! into a typed `RemoteEndpoint`. A bad URL is a usage error naming
//! `--target` (exit 2). A description, here in plan/ beside the jobs, so
//! that engines (an initiator for each transport opens one) and dut (which
//! probes it before the run) both read it and neither imports the other.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{usage, UsageError};

/// The wire protocol a remote target speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireProtocol {
    Nbd,
    Iscsi,
    NvmeTcp,
    NvmeRdma,
}

impl WireProtocol {
    pub const ALL: [WireProtocol; 4] = [
        WireProtocol::Nbd,
        WireProtocol::Iscsi,
        WireProtocol::NvmeTcp,
        WireProtocol::NvmeRdma,
    ];

    /// The URL scheme, e.g. `nvme-tcp`.
    pub fn scheme(self) -> &'static str {
        match self {
            WireProtocol::Nbd => "nbd",
            WireProtocol::Iscsi => "iscsi",
            WireProtocol::NvmeTcp => "nvme-tcp",
            WireProtocol::NvmeRdma => "nvme-rdma",
        }
    }

    /// The port used when the URL names none (IANA / spec defaults).
    pub fn default_port(self) -> u16 {
        match self {
            WireProtocol::Nbd => 10809,
            WireProtocol::Iscsi => 3260,
            WireProtocol::NvmeTcp | WireProtocol::NvmeRdma => 4420,
        }
    }

    /// The URL form, for error messages.
    pub fn url_form(self) -> &'static str {
        match self {
            WireProtocol::Nbd => "nbd://HOST[:PORT]/[EXPORT]",
            WireProtocol::Iscsi => "iscsi://HOST[:PORT]/IQN/LUN",
            WireProtocol::NvmeTcp => {
                "nvme-tcp://HOST[:PORT]/NQN[?nsid=N&hdr_digest=1&data_digest=1&keep_alive_tmo=S]"
            }
            WireProtocol::NvmeRdma => "nvme-rdma://HOST[:PORT]/NQN[?nsid=N&keep_alive_tmo=S]",
        }
    }

    fn from_scheme(s: &str) -> Option<WireProtocol> {
        WireProtocol::ALL
            .into_iter()
            .find(|t| t.scheme().eq_ignore_ascii_case(s))
    }
}

/// What on the server is measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RemoteResource {
    /// An NBD export (empty = the server's default export).
    NbdExport { export: String },
    /// A SCSI logical unit of an iSCSI target.
    IscsiLun { iqn: String, lun: u32 },
    /// A namespace of an NVMe subsystem, and the digests to ask for.
    NvmeNamespace {
        nqn: String,
        nsid: u32,
        #[serde(default)]
        hdr_digest: bool,
        #[serde(default)]
        data_digest: bool,
        /// The keep-alive timeout asked for, in seconds (nvme-cli's
        /// `--keep-alive-tmo`; None: iolab's 30 s).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        keep_alive_tmo: Option<u32>,
    },
}

/// A parsed remote target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteEndpoint {
    pub transport: WireProtocol,
    /// Host name or address (IPv6 without brackets).
    pub host: String,
    pub port: u16,
    pub resource: RemoteResource,
}

impl fmt::Display for RemoteEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        write!(f, "{}://{host}:{}/", self.transport.scheme(), self.port)?;
        match &self.resource {
            RemoteResource::NbdExport { export } => write!(f, "{export}"),
            RemoteResource::IscsiLun { iqn, lun } => write!(f, "{iqn}/{lun}"),
            RemoteResource::NvmeNamespace {
                nqn,
                nsid,
                hdr_digest,
                data_digest,
                keep_alive_tmo,
            } => {
                write!(f, "{nqn}?nsid={nsid}")?;
                if let Some(s) = keep_alive_tmo {
                    write!(f, "&keep_alive_tmo={s}")?;
                }
                if *hdr_digest {
                    write!(f, "&hdr_digest=1")?;
                }
                if *data_digest {
                    write!(f, "&data_digest=1")?;
                }
                Ok(())
            }
        }
    }
}

/// True when `s` looks like a URL (`SCHEME://...`) rather than a path.
pub fn is_url(s: &str) -> bool {
    s.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '+')
    })
}

/// The remote endpoint a `--target` names, if it is a URL (`None`: a path);
/// a malformed URL is a usage error naming `--target`.
pub fn endpoint_of(target: &std::path::Path) -> anyhow::Result<Option<RemoteEndpoint>> {
    target.to_str().filter(|s| is_url(s)).map(parse).transpose()
}

fn bad(url: &str, why: impl fmt::Display) -> anyhow::Error {
    usage("--target", format!("{url}: {why}"))
}

/// Parse a remote target URL. Errors are usage errors naming `--target`.
pub fn parse(url: &str) -> anyhow::Result<RemoteEndpoint> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(bad(url, "not a URL (expected SCHEME://HOST:PORT/...)"));
    };
    let Some(transport) = WireProtocol::from_scheme(scheme) else {
        return Err(bad(
            url,
            format!(
                "unknown scheme {scheme:?}; remote targets are nbd://, iscsi://, nvme-tcp:// or nvme-rdma://"
            ),
        ));
    };
    let form = transport.url_form();
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let (host, port) = parse_authority(authority, transport).map_err(|why| bad(url, why))?;
    let (path, query) = match path.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (path, None),
    };
    let nvme = matches!(transport, WireProtocol::NvmeTcp | WireProtocol::NvmeRdma);
    if query.is_some() && !nvme {
        return Err(bad(
            url,
            format!("no query string is allowed; expected {form}"),
        ));
    }
    let resource = match transport {
        WireProtocol::Nbd => RemoteResource::NbdExport {
            export: path.to_string(),
        },
        WireProtocol::Iscsi => {
            let Some((iqn, lun)) = path.rsplit_once('/') else {
                return Err(bad(url, format!("needs an IQN and a LUN; expected {form}")));
            };
            if iqn.is_empty() {
                return Err(bad(url, format!("the IQN is empty; expected {form}")));
            }
            let lun = lun
                .parse::<u32>()
                .map_err(|_| bad(url, format!("LUN {lun:?} is not a number; expected {form}")))?;
            RemoteResource::IscsiLun {
                iqn: iqn.to_string(),
                lun,
            }
        }
        WireProtocol::NvmeTcp | WireProtocol::NvmeRdma => {
            if path.is_empty() || path.contains('/') {
                return Err(bad(
                    url,
                    format!("needs one subsystem NQN; expected {form}"),
                ));
            }
            let ns = nvme_namespace(path, query).map_err(|why| bad(url, why))?;
            let digest = matches!(
                ns,
                RemoteResource::NvmeNamespace {
                    hdr_digest: true,
                    ..
                } | RemoteResource::NvmeNamespace {
                    data_digest: true,
                    ..
                }
            );
            if digest && transport == WireProtocol::NvmeRdma {
                return Err(bad(
                    url,
                    format!("digests are NVMe/TCP's: NVMe over RDMA has none; expected {form}"),
                ));
            }
            ns
        }
    };
    Ok(RemoteEndpoint {
        transport,
        host,
        port,
        resource,
    })
}

fn parse_authority(a: &str, t: WireProtocol) -> Result<(String, u16), String> {
    let (host, port) = if let Some(rest) = a.strip_prefix('[') {
        let (h, after) = rest
            .split_once(']')
            .ok_or("an IPv6 address needs a closing ']'")?;
        match after {
            "" => (h, None),
            p => (
                h,
                Some(p.strip_prefix(':').ok_or("expected ':' after ']'")?),
            ),
        }
    } else {
        match a.rsplit_once(':') {
            Some((h, _)) if h.contains(':') => {
                return Err("write an IPv6 address in brackets, e.g. [::1]:PORT".into())
            }
            Some((h, p)) => (h, Some(p)),
            None => (a, None),
        }
    };
    if host.is_empty() {
        return Err(format!("no host; expected {}", t.url_form()));
    }
    let port = match port {
        None => t.default_port(),
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => return Err(format!("port {p:?} is not a number from 1 to 65535")),
        },
    };
    Ok((host.to_string(), port))
}

/// The namespace of an `nvme-tcp://` or `nvme-rdma://` URL: `nsid=N`
/// (default 1), `hdr_digest=0|1`, `data_digest=0|1`, `keep_alive_tmo=S`
/// (1 to 3600 seconds; the kernel's and nvme-cli's option names).
fn nvme_namespace(nqn: &str, query: Option<&str>) -> Result<RemoteResource, String> {
    let (mut nsid, mut hdr_digest, mut data_digest) = (1, false, false);
    let mut keep_alive_tmo = None;
    let flag = |k: &str, v: &str| match v {
        "1" | "on" | "true" => Ok(true),
        "0" | "off" | "false" => Ok(false),
        _ => Err(format!("{k}={v:?}: expected 0 or 1")),
    };
    for kv in query.unwrap_or("").split('&').filter(|s| !s.is_empty()) {
        match kv.split_once('=') {
            Some(("nsid", v)) => match v.parse::<u32>() {
                Ok(n) if n > 0 => nsid = n,
                _ => return Err(format!("nsid {v:?} is not a namespace id (1 or more)")),
            },
            Some(("hdr_digest", v)) => hdr_digest = flag("hdr_digest", v)?,
            Some(("data_digest", v)) => data_digest = flag("data_digest", v)?,
            Some(("keep_alive_tmo", v)) => match v.parse::<u32>() {
                Ok(s) if (1..=3600).contains(&s) => keep_alive_tmo = Some(s),
                _ => return Err(format!("keep_alive_tmo {v:?} is not 1 to 3600 seconds")),
            },
            _ => {
                return Err(format!(
                    "unknown option {kv:?}; allowed are nsid=N, hdr_digest=0|1, data_digest=0|1 and keep_alive_tmo=SECONDS"
                ))
            }
        }
    }
    Ok(RemoteResource::NvmeNamespace {
        nqn: nqn.to_string(),
        nsid,
        hdr_digest,
        data_digest,
        keep_alive_tmo,
    })
}

/// The error for running on a remote target whose transport has no
/// initiator in iolab (exit 2, naming `--target`).
pub fn no_initiator(ep: &RemoteEndpoint) -> UsageError {
    UsageError::new(
        "--target",
        format!(
            "{ep}: iolab has no {} initiator yet, so it cannot run on this target; \
run on a local file or block device (or attach the volume with the kernel's initiator \
and give its block device)",
            ep.transport.scheme()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::exit_code;

    fn field_of(e: &anyhow::Error) -> String {
        e.downcast_ref::<UsageError>().unwrap().field.clone()
    }

    #[test]
    fn parses_the_three_forms() {
        let e = parse("nbd://10.0.0.2:10810/disk0").unwrap();
        assert_eq!(e.transport, WireProtocol::Nbd);
        assert_eq!((e.host.as_str(), e.port), ("10.0.0.2", 10810));
        assert_eq!(
            e.resource,
            RemoteResource::NbdExport {
                export: "disk0".into()
            }
        );
        let e = parse("iscsi://tgt.lab:3261/iqn.2025-01.lab:disk/1").unwrap();
        assert_eq!((e.host.as_str(), e.port), ("tgt.lab", 3261));
        assert_eq!(
            e.resource,
            RemoteResource::IscsiLun {
                iqn: "iqn.2025-01.lab:disk".into(),
                lun: 1
            }
        );
        let e =
            parse("nvme-tcp://[fd00::2]:4421/nqn.2014-08.org.nvmexpress:uuid:x?nsid=3").unwrap();
        assert_eq!((e.host.as_str(), e.port), ("fd00::2", 4421));
        assert_eq!(
            e.resource,
            RemoteResource::NvmeNamespace {
                nqn: "nqn.2014-08.org.nvmexpress:uuid:x".into(),
                nsid: 3,
                hdr_digest: false,
                data_digest: false,
                keep_alive_tmo: None,
            }
        );
        assert_eq!(
            e.to_string(),
            "nvme-tcp://[fd00::2]:4421/nqn.2014-08.org.nvmexpress:uuid:x?nsid=3"
        );
    }

    #[test]
    fn defaults_ports_export_and_nsid() {
        let e = parse("nbd://h/").unwrap();
        assert_eq!(e.port, 10809);
        assert_eq!(e.resource, RemoteResource::NbdExport { export: "".into() });
        assert_eq!(parse("nbd://h").unwrap().port, 10809);
        assert_eq!(parse("iscsi://h/iqn.x:y/0").unwrap().port, 3260);
        let e = parse("nvme-tcp://h/nqn.x").unwrap();
        assert_eq!(e.port, 4420);
        assert_eq!(
            e.resource,
            RemoteResource::NvmeNamespace {
                nqn: "nqn.x".into(),
                nsid: 1,
                hdr_digest: false,
                data_digest: false,
                keep_alive_tmo: None,
            }
        );
        let e = parse("nvme-tcp://h/nqn.x?hdr_digest=1&data_digest=1&nsid=2").unwrap();
        assert_eq!(
            e.resource,
            RemoteResource::NvmeNamespace {
                nqn: "nqn.x".into(),
                nsid: 2,
                hdr_digest: true,
                data_digest: true,
                keep_alive_tmo: None,
            }
        );
        assert_eq!(
            e.to_string(),
            "nvme-tcp://h:4420/nqn.x?nsid=2&hdr_digest=1&data_digest=1"
        );
        let e = parse("nvme-rdma://h/nqn.x?keep_alive_tmo=5").unwrap();
        assert_eq!(e.transport, WireProtocol::NvmeRdma);
        assert_eq!(
            e.to_string(),
            "nvme-rdma://h:4420/nqn.x?nsid=1&keep_alive_tmo=5"
        );
        assert_eq!(parse(&e.to_string()).unwrap(), e, "read back as written");
    }

    #[test]
    fn bad_urls_are_usage_errors_naming_target() {
        for url in [
            "http://h/x",
            "nbd://:10809/x",
            "nbd://h:0/x",
            "nbd://h:99999/x",
            "nbd://h:port/x",
            "nbd://h/x?y=1",
            "nbd://fd00::2:10809/x",
            "nbd://[fd00::2/x",
            "iscsi://h:3260/iqn.x",
            "iscsi://h:3260//1",
            "iscsi://h:3260/iqn.x/lun",
            "nvme-rdma://h/nqn.x?hdr_digest=1",
            "nvme-tcp://h/nqn.x?keep_alive_tmo=0",
            "nvme-tcp://h/nqn.x?keep_alive_tmo=abc",
            "nvme-tcp://h:4420/",
            "nvme-tcp://h:4420/a/b",
            "nvme-tcp://h:4420/nqn.x?nsid=0",
            "nvme-tcp://h:4420/nqn.x?ns=1",
            "nvme-tcp://h:4420/nqn.x?hdr_digest=yes",
        ] {
            let e = parse(url).expect_err(url);
            assert_eq!(field_of(&e), "--target", "{url}");
            assert_eq!(exit_code(&e), 2, "{url}");
            assert!(format!("{e}").contains(url), "{url}: {e}");
        }
    }

    #[test]
    fn tells_urls_from_paths() {
        assert!(is_url("nbd://h/x"));
        assert!(is_url("nvme-tcp://h/x"));
        assert!(!is_url("/dev/sda"));
        assert!(!is_url("./a://b"));
        assert!(!is_url("dir/file"));
    }
}
