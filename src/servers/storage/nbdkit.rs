//! nbdkit as `iolab remote` starts it: the file plugin on the scratch
//! file (buffered) or the memory plugin (RAM: the protocol's own cost),
//! in the foreground, 16 threads, gone with its parent.

use std::net::IpAddr;
use std::path::Path;

/// What nbdkit serves.
pub(super) enum Plugin<'a> {
    File(&'a Path),
    Memory(u64),
}

pub(super) fn command_line(addr: IpAddr, port: u16, plugin: Plugin) -> (String, Vec<String>) {
    let mut v: Vec<String> = ["-f", "--exit-with-parent", "-i"]
        .map(String::from)
        .to_vec();
    v.extend([addr.to_string(), "-p".into(), port.to_string()]);
    v.extend(["--threads".into(), "16".into()]);
    match plugin {
        Plugin::File(f) => v.extend(["file".into(), f.display().to_string()]),
        Plugin::Memory(size) => v.extend(["memory".into(), size.to_string()]),
    }
    ("nbdkit".into(), v)
}
