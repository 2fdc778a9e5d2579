//! Embeds the git revision (if building from a checkout) for provenance, and
//! builds the WiredTiger shim (`src/kv/engines/wt/shim.c`) against Debian's
//! libwiredtiger-dev.
use std::process::Command;

fn main() {
    let rev = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .map(|o| !o.stdout.is_empty())
        .unwrap_or(false);
    println!(
        "cargo:rustc-env=IOLAB_GIT_REV={rev}{}",
        if dirty { "-dirty" } else { "" }
    );
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/index");
    wiredtiger_shim();
}

/// The C shim through which `kv --engine wiredtiger` calls the library.
fn wiredtiger_shim() {
    println!("cargo:rerun-if-changed=src/kv/engines/wt/shim.c");
    println!("cargo:rerun-if-env-changed=WIREDTIGER_INCLUDE_DIR");
    let include =
        std::env::var("WIREDTIGER_INCLUDE_DIR").unwrap_or_else(|_| "/usr/include".to_string());
    if !std::path::Path::new(&include).join("wiredtiger.h").exists() {
        panic!(
            "wiredtiger.h not found in {include}: install libwiredtiger-dev \
             (scripts/install-deps.sh) or set WIREDTIGER_INCLUDE_DIR"
        );
    }
    cc::Build::new()
        .file("src/kv/engines/wt/shim.c")
        .include(&include)
        .opt_level(2)
        .warnings(true)
        .compile("iolab_wt_shim");
    println!("cargo:rustc-link-lib=dylib=wiredtiger");
}
