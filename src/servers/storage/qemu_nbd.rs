//! qemu-nbd as `iolab remote` starts it: the scratch file, raw, shared
//! by up to 8 clients, O_DIRECT (--cache=none) through io_uring.

use std::net::IpAddr;
use std::path::Path;

pub(super) fn command_line(addr: IpAddr, port: u16, backing: &Path) -> (String, Vec<String>) {
    let mut v: Vec<String> = ["-f", "raw", "-t", "-e", "8", "-b"]
        .map(String::from)
        .to_vec();
    v.extend([addr.to_string(), "-p".into(), port.to_string()]);
    v.extend(["--cache=none", "--aio=io_uring"].map(String::from));
    v.push(backing.display().to_string());
    ("qemu-nbd".into(), v)
}
