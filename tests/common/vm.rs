//! Debian's Linux under qemu for the interoperability tests
//! (`scripts/linux-vm.sh`): whether it can run here, booting it in a mode,
//! and an extra initramfs archive carrying the iolab binary and the shared
//! libraries it needs, so iolab itself can run inside the guest.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::have;

pub fn script() -> String {
    format!("{}/scripts/linux-vm.sh", env!("CARGO_MANIFEST_DIR"))
}

/// None when the VM can run here; else why not (said as SKIP by the caller).
pub fn unavailable() -> Option<String> {
    for tool in ["qemu-system-x86_64", "busybox", "cpio", "strip", "ldd"] {
        if !have(tool) {
            return Some(format!(
                "{tool} is not installed (scripts/install-deps.sh installs it)"
            ));
        }
    }
    let prep = Command::new("bash")
        .args([&script(), "prepare"])
        .output()
        .unwrap();
    if !prep.status.success() {
        return Some(format!(
            "the kernel image cannot be prepared: {}",
            String::from_utf8_lossy(&prep.stderr)
        ));
    }
    None
}

/// A running VM, powered off (killed) on drop.
pub struct Vm(pub Child);

impl Drop for Vm {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start the VM in `mode` with `args`, its console on a pipe.
pub fn spawn(mode: &str, args: &[&str], limit_s: u32) -> Vm {
    spawn_with(mode, args, limit_s, &[])
}

/// `spawn` with more environment for the script (`SMP`, `QEMU_EXTRA`).
pub fn spawn_with(mode: &str, args: &[&str], limit_s: u32, env: &[(&str, &str)]) -> Vm {
    let child = Command::new("bash")
        .arg(script())
        .arg(mode)
        .args(args)
        .envs(env.iter().copied())
        .env("LIMIT", limit_s.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Vm(child)
}

/// Run the VM in `mode` to its power-off (killed after `limit`); its console.
pub fn run_to_end(mode: &str, args: &[&str], limit: Duration) -> String {
    run_to_end_with(mode, args, limit, &[])
}

/// `run_to_end` with more environment for the script.
pub fn run_to_end_with(mode: &str, args: &[&str], limit: Duration, env: &[(&str, &str)]) -> String {
    let mut vm = spawn_with(mode, args, limit.as_secs() as u32, env);
    let mut out = vm.0.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = std::io::Read::read_to_end(&mut out, &mut s);
        s
    });
    let until = Instant::now() + limit;
    while vm.0.try_wait().unwrap().is_none() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(vm);
    let bytes = reader.join().unwrap();
    String::from_utf8_lossy(&bytes).replace('\r', "")
}

fn run(cmd: &mut Command) -> Output {
    let o = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// An uncompressed cpio archive in `dir` holding the iolab binary
/// (stripped) as /iolab, `programs` (found on PATH) in /usr/bin, `files`
/// (absolute paths: libraries iolab loads with dlopen, their
/// configuration) at their own paths, the shared libraries of all of them
/// at their paths, and `script` as /iolab-run.sh.
pub fn iolab_archive(dir: &Path, script: &str, programs: &[&str], files: &[&str]) -> PathBuf {
    let root = dir.join("root");
    std::fs::create_dir_all(root.join("usr/bin")).unwrap();
    let exe = env!("CARGO_BIN_EXE_iolab");
    run(Command::new("strip")
        .arg("-o")
        .arg(root.join("iolab"))
        .arg(exe));
    copy_libraries(&root, Path::new(exe));
    for p in programs {
        let which = run(Command::new("sh").args(["-c", &format!("command -v {p}")]));
        let path = String::from_utf8_lossy(&which.stdout).trim().to_string();
        std::fs::copy(&path, root.join("usr/bin").join(p)).unwrap();
        copy_libraries(&root, Path::new(&path));
    }
    for f in files {
        let dest = root.join(f.trim_start_matches('/'));
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(f, &dest).unwrap_or_else(|e| panic!("{f}: {e}"));
        if f.contains(".so") {
            copy_libraries(&root, Path::new(f));
        }
    }
    std::fs::write(root.join("iolab-run.sh"), script).unwrap();
    let archive = dir.join("extra.cpio");
    let out = std::fs::File::create(&archive).unwrap();
    let status = Command::new("sh")
        .args(["-c", "find . | cpio -o -H newc 2>/dev/null"])
        .current_dir(&root)
        .stdout(out)
        .status()
        .unwrap();
    assert!(status.success(), "cpio failed");
    archive
}

/// The shared libraries `exe` needs (ldd), copied under `root`.
fn copy_libraries(root: &Path, exe: &Path) {
    let ldd = run(Command::new("ldd").arg(exe));
    for line in String::from_utf8_lossy(&ldd.stdout).lines() {
        let lib = match line.split_once("=>") {
            Some((_, rest)) => rest.split_whitespace().next(),
            None => line
                .split_whitespace()
                .next()
                .filter(|p| p.starts_with('/')),
        };
        let Some(lib) = lib.filter(|l| l.starts_with('/')) else {
            continue;
        };
        let dest = root.join(lib.trim_start_matches('/'));
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(lib, &dest).unwrap();
    }
}

/// The text between the lines `BEGIN` and `END` of the console.
pub fn between<'a>(console: &'a str, begin: &str, end: &str) -> Option<&'a str> {
    let start = console.find(begin)? + begin.len();
    let len = console[start..].find(end)?;
    Some(&console[start..start + len])
}

/// The results a guest script printed between `IOLAB-{tag}-BEGIN` and
/// `IOLAB-{tag}-END`, after checking its `IOLAB-{tag}-EXIT` line says 0.
pub fn tagged_results(console: &str, tag: &str) -> serde_json::Value {
    let exit = format!("IOLAB-{tag}-EXIT");
    assert_eq!(field(console, &exit), format!("{exit} 0"), "{console}");
    let json = between(
        console,
        &format!("IOLAB-{tag}-BEGIN"),
        &format!("IOLAB-{tag}-END"),
    )
    .unwrap_or_else(|| panic!("no {tag} results in the console:\n{console}"));
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {console}"))
}

/// Run `script` as /iolab-run.sh in the guest (`exec` mode, with the iolab
/// binary and `programs`), killed after `limit`; its console. The archive
/// is built in a directory removed after.
pub fn run_script(script: &str, programs: &[&str], limit: Duration) -> String {
    run_script_with(script, programs, limit, &[])
}

/// `run_script` with more environment for linux-vm.sh (`SMP`, `QEMU_EXTRA`).
pub fn run_script_with(
    script: &str,
    programs: &[&str],
    limit: Duration,
    env: &[(&str, &str)],
) -> String {
    run_script_carrying(script, programs, &[], limit, env)
}

/// `run_script_with` with `files` in the archive too (see `iolab_archive`).
pub fn run_script_carrying(
    script: &str,
    programs: &[&str],
    files: &[&str],
    limit: Duration,
    env: &[(&str, &str)],
) -> String {
    let dir = super::workdir();
    let archive = iolab_archive(dir.path(), script, programs, files);
    run_to_end_with("exec", &[archive.to_str().unwrap()], limit, env)
}

/// The first console line holding `tag`, from the tag on.
pub fn field<'a>(console: &'a str, tag: &str) -> &'a str {
    console
        .lines()
        .find_map(|l| l.find(tag).map(|at| &l[at..]))
        .unwrap_or_else(|| panic!("no {tag} line in the console:\n{console}"))
}
