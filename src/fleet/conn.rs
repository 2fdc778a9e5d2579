//! One peer's channel: frames written to its input, frames read from its
//! output on a thread of their own, so the control side waits on any host
//! with a deadline (an ssh that hangs never blocks the others).

use std::io::{Read, Write};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, TryRecvError};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use super::proto::{self, Message, ProtoError};

/// The error of one host, named.
pub fn host_error(host: &str, what: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("host {host}: {what}")
}

/// A host's input, shared with its keep-alive thread (which holds it
/// weakly, so closing the connection still closes the agent's input).
type SharedWriter = Arc<Mutex<Box<dyn Write + Send>>>;

/// Send `keep-alive` to the host every `KEEPALIVE_EVERY` until its input
/// is closed or fails: its agent exits after `CONTROL_SILENCE` without
/// one. A thread per host, so a host whose pipe blocks holds up no other.
fn keep_alive(host: &str, input: Weak<Mutex<Box<dyn Write + Send>>>) {
    let _ = std::thread::Builder::new()
        .name(format!("fleet-ka-{host}"))
        .stack_size(64 << 10)
        .spawn(move || loop {
            std::thread::sleep(proto::KEEPALIVE_EVERY);
            let Some(w) = input.upgrade() else { return };
            let mut w = w.lock().unwrap_or_else(|e| e.into_inner());
            if proto::write_message(&mut *w, &Message::KeepAlive).is_err() {
                return;
            }
        });
}

pub struct Conn {
    /// The host as the user named it (every error names it).
    pub host: String,
    writer: SharedWriter,
    rx: Receiver<Result<Message, ProtoError>>,
    /// The reader stopped after this (closed channel or a bad frame).
    ended: Option<String>,
}

impl Conn {
    /// Start reading `reader` on a thread; frames go to `recv`.
    pub fn new(
        host: String,
        reader: impl Read + Send + 'static,
        writer: impl Write + Send + 'static,
    ) -> Conn {
        // A rendezvous: the reader holds at most the one message it waits
        // to hand over (with 64 queued, an agent sending 16 MiB results
        // nobody asked for took the control side past 1 GB).
        let (tx, rx) = mpsc::sync_channel(0);
        let name = format!("fleet-rx-{host}");
        let spawned = std::thread::Builder::new().name(name).spawn(move || {
            let mut r = std::io::BufReader::with_capacity(64 << 10, reader);
            loop {
                let m = proto::read_message(&mut r);
                let last = m.is_err();
                if tx.send(m).is_err() || last {
                    break;
                }
            }
        });
        let ended = spawned
            .err()
            .map(|e| format!("cannot start its reader thread: {e}"));
        let writer: SharedWriter = Arc::new(Mutex::new(Box::new(writer)));
        keep_alive(&host, Arc::downgrade(&writer));
        Conn {
            host,
            writer,
            rx,
            ended,
        }
    }

    pub fn send(&mut self, m: &Message) -> anyhow::Result<()> {
        let mut w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        proto::write_message(&mut *w, m)
            .map_err(|e| host_error(&self.host, format!("sending {}: {e:#}", m.name())))
    }

    /// The next message before `deadline`; errors name the host.
    pub fn recv_until(&mut self, deadline: Instant) -> anyhow::Result<Message> {
        if let Some(why) = &self.ended {
            return Err(host_error(&self.host, why));
        }
        let wait = deadline.saturating_duration_since(Instant::now());
        match self.rx.recv_timeout(wait) {
            Ok(got) => self.received(got),
            Err(RecvTimeoutError::Timeout) => Err(host_error(
                &self.host,
                format!("no answer within {:.1} s", wait.as_secs_f64()),
            )),
            Err(RecvTimeoutError::Disconnected) => {
                Err(host_error(&self.host, "the agent's channel closed"))
            }
        }
    }

    /// A message if one is waiting (`None`: nothing yet).
    pub fn try_recv(&mut self) -> Option<anyhow::Result<Message>> {
        if let Some(why) = &self.ended {
            return Some(Err(host_error(&self.host, why)));
        }
        match self.rx.try_recv() {
            Ok(got) => Some(self.received(got)),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => {
                Some(Err(host_error(&self.host, "the agent's channel closed")))
            }
        }
    }

    fn received(&mut self, got: Result<Message, ProtoError>) -> anyhow::Result<Message> {
        match got {
            Ok(m) => Ok(m),
            Err(e) => {
                let why = match e {
                    ProtoError::Closed => "the agent's channel closed".to_string(),
                    other => format!("a bad message from its agent: {other}"),
                };
                self.ended = Some(why.clone());
                Err(host_error(&self.host, why))
            }
        }
    }

    /// As `recv_until`, but a stop (Ctrl-C) ends the wait within 250 ms.
    /// A timeout names the whole wait, not its last slice (it said "no
    /// answer within 0.2 s" after 30 s).
    pub fn recv_until_stopped(&mut self, deadline: Instant) -> anyhow::Result<Message> {
        let whole = deadline.saturating_duration_since(Instant::now());
        loop {
            let slice = deadline.min(Instant::now() + Duration::from_millis(250));
            match self.recv_until(slice) {
                Ok(m) => return Ok(m),
                Err(e) if self.ended() => return Err(e),
                Err(_) if Instant::now() >= deadline => {
                    return Err(host_error(
                        &self.host,
                        format!("no answer within {:.1} s", whole.as_secs_f64()),
                    ))
                }
                Err(_) if crate::interrupt::stop_requested() => {
                    return Err(host_error(
                        &self.host,
                        "interrupted while waiting for its agent",
                    ))
                }
                Err(_) => {}
            }
        }
    }

    pub fn recv_within(&mut self, timeout: Duration) -> anyhow::Result<Message> {
        self.recv_until(Instant::now() + timeout)
    }

    /// The next message that is not progress (progress is only a sign of life).
    pub fn recv_skipping_progress(&mut self, deadline: Instant) -> anyhow::Result<Message> {
        loop {
            match self.recv_until_stopped(deadline)? {
                Message::Progress(_) => continue,
                m => return Ok(m),
            }
        }
    }

    /// The channel ended (closed, or a bad frame): nothing more will come.
    pub fn ended(&self) -> bool {
        self.ended.is_some()
    }

    /// Close the agent's input (it ends by itself when it sees the end).
    pub fn close(self) {
        drop(self.writer);
    }
}

/// An `Error` message as an error naming the host; anything else unexpected too.
pub fn unexpected(host: &str, got: Message, wanted: &str) -> anyhow::Error {
    match got {
        Message::Error(e) => match e.field {
            Some(f) => crate::error::usage(f, format!("host {host}: {}", e.message)),
            None => host_error(host, e.message),
        },
        other => host_error(
            host,
            format!("expected {wanted} from the agent, got {}", other.name()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// An agent that sends the same frame for ever; counts what was read.
    struct Flood {
        frame: Vec<u8>,
        at: usize,
        read: Arc<AtomicU64>,
    }

    impl Read for Flood {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(self.frame.len() - self.at);
            buf[..n].copy_from_slice(&self.frame[self.at..self.at + n]);
            self.at = (self.at + n) % self.frame.len();
            self.read.fetch_add(n as u64, Ordering::SeqCst);
            Ok(n)
        }
    }

    /// Messages nobody receives are not read ahead: at most the one the
    /// reader holds, the one it decodes and its 64 KiB buffer.
    #[test]
    fn messages_nobody_receives_are_not_read_ahead() {
        let mut frame = Vec::new();
        let pad = "x".repeat(100_000);
        proto::write_message(
            &mut frame,
            &Message::Error(proto::AgentError {
                message: pad,
                field: None,
            }),
        )
        .unwrap();
        let read = Arc::new(AtomicU64::new(0));
        let flood = Flood {
            frame: frame.clone(),
            at: 0,
            read: read.clone(),
        };
        let mut c = Conn::new("h".into(), flood, std::io::sink());
        std::thread::sleep(Duration::from_millis(500));
        let most = 3 * frame.len() as u64 + (64 << 10);
        let got = read.load(Ordering::SeqCst);
        assert!(got <= most, "read {got} bytes ahead (at most {most})");
        assert!(matches!(c.try_recv(), Some(Ok(Message::Error(_)))));
    }

    /// A wait in slices names its whole length when it times out.
    #[test]
    fn a_timeout_names_the_whole_wait() {
        let (_keep, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let mut c = Conn::new("h".into(), theirs, std::io::sink());
        let e = c
            .recv_until_stopped(Instant::now() + Duration::from_millis(1200))
            .unwrap_err();
        assert!(format!("{e:#}").contains("no answer within 1.2 s"), "{e:#}");
    }
}
