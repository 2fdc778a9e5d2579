//! The admin queue of an NVMe-oF engine's association (TCP or RDMA: any
//! `HostQueue`), owned by a thread
//! of its own off the hot path: Keep Alive every half keep-alive timeout
//! (KATO) so the controller keeps the association, and at the end the
//! clean shutdown (CC.SHN, then CSTS.SHST) before the socket closes, as
//! Linux's host does after tearing down its I/O queues.

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::bail;

use super::codec::{self, Sqe};
use super::handshake::HostQueue;
use super::identify::{CC_SHUTDOWN, CSTS_SHUTDOWN_DONE};

/// How long one admin command may take before the thread gives up on it.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(5);

/// The running keeper; `stop` (or drop) shuts the controller down and joins.
pub struct AdminKeeper {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl AdminKeeper {
    /// Take over `admin`; `kato_ms` is the timeout its Connect asked for
    /// (0: no Keep Alive is needed).
    pub fn start<Q: HostQueue + Send + 'static>(
        admin: Q,
        kato_ms: u32,
    ) -> std::io::Result<AdminKeeper> {
        let (tx, rx) = mpsc::channel::<()>();
        let every = (kato_ms > 0).then(|| Duration::from_millis(kato_ms as u64 / 2));
        let thread = std::thread::Builder::new()
            .name("nvme-admin".into())
            .spawn(move || keep(admin, every, rx))?;
        Ok(AdminKeeper {
            stop: Some(tx),
            thread: Some(thread),
        })
    }

    pub fn stop(&mut self) {
        self.stop.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for AdminKeeper {
    fn drop(&mut self) {
        self.stop();
    }
}

fn keep<Q: HostQueue>(mut admin: Q, every: Option<Duration>, stop: mpsc::Receiver<()>) {
    // The shutdown at the end must run after a Ctrl-C too.
    admin.set_control(COMMAND_TIMEOUT, false);
    loop {
        let waited = match every {
            Some(d) => stop.recv_timeout(d),
            None => stop.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match waited {
            Err(RecvTimeoutError::Timeout) => {
                let cid = admin.next_cid();
                if admin
                    .command(&Sqe::keep_alive(cid), &[], &mut Vec::new())
                    .is_err()
                {
                    return; // the association is gone: nothing to shut down
                }
            }
            _ => break,
        }
    }
    let _ = shutdown(&mut admin);
}

/// Normal shutdown: CC.SHN, then wait (at most a second) for CSTS.SHST.
pub fn shutdown<Q: HostQueue>(admin: &mut Q) -> anyhow::Result<()> {
    let cid = admin.next_cid();
    let shn = Sqe::property_set(cid, codec::PROP_CC, false, CC_SHUTDOWN as u64);
    admin.command(&shn, &[], &mut Vec::new())?;
    let until = Instant::now() + Duration::from_secs(1);
    loop {
        let cid = admin.next_cid();
        let csts = admin
            .command(
                &Sqe::property_get(cid, codec::PROP_CSTS, false),
                &[],
                &mut Vec::new(),
            )?
            .result as u32;
        if csts & CSTS_SHUTDOWN_DONE != 0 {
            return Ok(());
        }
        if Instant::now() > until {
            bail!("the controller did not finish its shutdown within a second");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
