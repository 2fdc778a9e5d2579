//! The polling data path (`iolab serve --poll`, SPDK's model): each
//! reactor is pinned to a CPU of its own and busy-polls its ring (submit
//! without waiting, completions peeked) instead of sleeping in it; the
//! sockets ask the kernel to busy-poll their device queue too
//! (SO_BUSY_POLL), where the kernel lets them. What a polling target
//! records: its reactors' CPUs and whether SO_BUSY_POLL took.

use std::io;
use std::os::fd::RawFd;

/// How long a socket busy-polls its device queue (SO_BUSY_POLL, in us):
/// the order of a round trip on a fast link.
pub const BUSY_POLL_US: i32 = 50;

/// A polling target's plan: the CPU of each reactor, in order (reactor i
/// runs on `cpus[i % len]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PollPlan {
    pub cpus: Vec<usize>,
}

impl PollPlan {
    /// `threads` reactors on `given` CPUs, or on CPU i of the allowed set
    /// (`sched_getaffinity`) for reactor i. Err: a CPU this process may not
    /// run on (the message names it).
    pub fn new(threads: usize, given: Option<Vec<usize>>) -> Result<PollPlan, String> {
        let allowed = allowed_cpus();
        let cpus = match given {
            Some(c) if c.is_empty() => return Err("names no CPU".into()),
            Some(c) => c,
            None => (0..threads.max(1))
                .map(|i| allowed[i % allowed.len()])
                .collect(),
        };
        if let Some(bad) = cpus.iter().find(|c| !allowed.contains(c)) {
            return Err(format!(
                "CPU {bad} is not one this process may run on ({})",
                cpu_list(&allowed)
            ));
        }
        Ok(PollPlan { cpus })
    }

    /// Reactor `i`'s CPU.
    pub fn cpu_of(&self, i: usize) -> usize {
        self.cpus[i % self.cpus.len()]
    }

    /// The CPUs of `threads` reactors, as a list ("0,1").
    pub fn describe(&self, threads: usize) -> String {
        let used: Vec<usize> = (0..threads.max(1)).map(|i| self.cpu_of(i)).collect();
        cpu_list(&used)
    }
}

/// `cpus` written as a comma list.
pub fn cpu_list(cpus: &[usize]) -> String {
    cpus.iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// The CPUs this process may run on (CPU 0 if the kernel does not say).
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data, filled by the kernel for this thread.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return vec![0];
    }
    let v: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `set` is a live cpu_set_t and `c` is below CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect();
    if v.is_empty() {
        vec![0]
    } else {
        v
    }
}

/// Pin the calling thread to `cpu`.
pub fn pin_to(cpu: usize) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; sched_setaffinity on the calling thread.
    let r = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Ask the kernel to busy-poll `fd`'s device queue for `BUSY_POLL_US` on
/// a blocking receive (SO_BUSY_POLL). Values above net.core.busy_read
/// need CAP_NET_ADMIN: without it this fails with EPERM. Accepted sockets
/// inherit a listener's value.
pub fn set_busy_poll(fd: RawFd) -> io::Result<()> {
    let v: libc::c_int = BUSY_POLL_US;
    // SAFETY: a live socket and an int of the size given.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_BUSY_POLL,
            std::ptr::addr_of!(v).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// SO_BUSY_POLL on a polling target's listening socket (accepted sockets
/// inherit it): its outcome for the record, `None` when not polling.
pub fn busy_poll_on_listener(l: &std::net::TcpListener, polling: bool) -> Option<String> {
    use std::os::fd::AsRawFd;
    polling.then(|| busy_poll_outcome(&set_busy_poll(l.as_raw_fd())))
}

/// `fd`'s SO_BUSY_POLL value (us), if it can be read.
pub fn busy_poll_of(fd: RawFd) -> Option<i32> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: a live socket, an int and its length.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_BUSY_POLL,
            std::ptr::addr_of_mut!(v).cast(),
            &mut len,
        )
    };
    (r == 0).then_some(v)
}

/// What SO_BUSY_POLL's setting on a socket says, for the record: "50 us"
/// or why not.
pub fn busy_poll_outcome(r: &io::Result<()>) -> String {
    match r {
        Ok(()) => format!("{BUSY_POLL_US} us"),
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
            "refused (EPERM: above net.core.busy_read needs CAP_NET_ADMIN)".into()
        }
        Err(e) => format!("refused ({e})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reactors_take_the_allowed_cpus_in_turn_or_those_given() {
        let allowed = allowed_cpus();
        let p = PollPlan::new(3, None).unwrap();
        assert_eq!(p.cpus.len(), 3);
        for (i, c) in p.cpus.iter().enumerate() {
            assert_eq!(*c, allowed[i % allowed.len()]);
        }
        let p = PollPlan::new(2, Some(vec![allowed[0]])).unwrap();
        assert_eq!(p.describe(2), format!("{0},{0}", allowed[0]));
        let e = PollPlan::new(1, Some(vec![100_000])).unwrap_err();
        assert!(e.contains("CPU 100000"), "{e}");
        assert!(PollPlan::new(1, Some(vec![])).is_err());
    }

    /// Sockets accepted from a listener that took SO_BUSY_POLL have it too.
    #[test]
    fn accepted_sockets_inherit_the_listeners_busy_poll() {
        use std::os::fd::AsRawFd;
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let said = busy_poll_on_listener(&l, true).unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (a, _) = l.accept().unwrap();
        if said == format!("{BUSY_POLL_US} us") {
            assert_eq!(busy_poll_of(a.as_raw_fd()), Some(BUSY_POLL_US));
        } else {
            assert!(said.starts_with("refused"), "{said}");
        }
        assert_eq!(busy_poll_on_listener(&l, false), None);
        drop(c);
    }
}
