//! nbdkit as `iolab remote` starts it: the file plugin on the scratch
//! file (buffered) or the memory plugin (RAM: the protocol's own cost),
//! in the foreground, 16 threads, gone with its parent; with
//! `--inject-errors`, its error filter failing a share of the requests
//! with EIO.

use std::net::IpAddr;
use std::path::Path;

/// What nbdkit serves.
pub(super) enum Plugin<'a> {
    File(&'a Path),
    Memory(u64),
}

pub(super) fn command_line(
    addr: IpAddr,
    port: u16,
    plugin: Plugin,
    error_rate: Option<f64>,
) -> (String, Vec<String>) {
    let mut v: Vec<String> = ["-f", "--exit-with-parent", "-i"]
        .map(String::from)
        .to_vec();
    v.extend([addr.to_string(), "-p".into(), port.to_string()]);
    v.extend(["--threads".into(), "16".into()]);
    if error_rate.is_some() {
        v.push("--filter=error".into());
    }
    match plugin {
        Plugin::File(f) => v.extend(["file".into(), f.display().to_string()]),
        Plugin::Memory(size) => v.extend(["memory".into(), size.to_string()]),
    }
    // Filter parameters follow the plugin's.
    if let Some(rate) = error_rate {
        v.extend(["error=EIO".into(), format!("error-rate={rate}")]);
    }
    ("nbdkit".into(), v)
}
