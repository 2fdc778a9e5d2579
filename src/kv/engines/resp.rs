//! A lean RESP2 connection for the Redis engine's per-operation path:
//! each command is written into one reused buffer and sent in one write,
//! and replies are read in place from a buffer of the socket, straight into
//! the caller's record (no reply tree, no allocation per operation), as
//! YCSB's Jedis does. One blocking round trip per command, no pipelining.
//! Setup and cleanup (FLUSHDB, SCAN of iolab's keys) use the `redis` crate.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::servers::Endpoint;

/// How long a reply may take before the operation fails (a server that
/// stopped answering must not hang the run).
const REPLY_TIMEOUT: Duration = Duration::from_secs(60);

pub struct Resp {
    stream: TcpStream,
    /// The command being built.
    out: Vec<u8>,
    /// Bytes read from the socket; `inb[pos..end]` not yet parsed.
    inb: Vec<u8>,
    pos: usize,
    end: usize,
}

impl Resp {
    /// Connect to `ep` (TCP), authenticate and select its database.
    pub fn connect(ep: &Endpoint) -> Result<Resp> {
        let at = format!("{}:{}", ep.host, ep.port);
        let addr = at
            .to_socket_addrs()
            .with_context(|| format!("resolving {at}"))?
            .next()
            .with_context(|| format!("{at} has no address"))?;
        let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
            .with_context(|| format!("connecting to {}", ep.display_url()))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(REPLY_TIMEOUT))?;
        let mut c = Resp {
            stream,
            out: Vec::with_capacity(4096),
            inb: vec![0; 64 * 1024],
            pos: 0,
            end: 0,
        };
        if !ep.password.is_empty() {
            if ep.user.is_empty() {
                c.begin(2).arg(b"AUTH").arg(ep.password.as_bytes());
            } else {
                c.begin(3)
                    .arg(b"AUTH")
                    .arg(ep.user.as_bytes())
                    .arg(ep.password.as_bytes());
            }
            c.send()?;
            c.read_ok().context("AUTH")?;
        }
        if !ep.database.is_empty() && ep.database != "0" {
            c.begin(2).arg(b"SELECT").arg(ep.database.as_bytes());
            c.send()?;
            c.read_ok().context("SELECT")?;
        }
        Ok(c)
    }

    /// Start a command of `args` words (the command's name included).
    pub fn begin(&mut self, args: usize) -> &mut Self {
        self.out.clear();
        self.out.push(b'*');
        push_int(&mut self.out, args as i64);
        self.out.extend_from_slice(b"\r\n");
        self
    }

    pub fn arg(&mut self, a: &[u8]) -> &mut Self {
        self.out.push(b'$');
        push_int(&mut self.out, a.len() as i64);
        self.out.extend_from_slice(b"\r\n");
        self.out.extend_from_slice(a);
        self.out.extend_from_slice(b"\r\n");
        self
    }

    pub fn arg_int(&mut self, v: i64) -> &mut Self {
        let mut digits = [0u8; 24];
        let n = format_int(&mut digits, v);
        self.arg(&digits[..n])
    }

    pub fn send(&mut self) -> Result<()> {
        self.stream.write_all(&self.out).context("sending to Redis")
    }

    /// A `+OK`-like status reply.
    pub fn read_ok(&mut self) -> Result<()> {
        match self.header()? {
            (b'+', _) => Ok(()),
            (t, _) => bail!("Redis answered '{}' where a status was expected", t as char),
        }
    }

    pub fn read_int(&mut self) -> Result<i64> {
        match self.header()? {
            (b':', n) => Ok(n),
            (t, _) => bail!(
                "Redis answered '{}' where an integer was expected",
                t as char
            ),
        }
    }

    /// An array's length; `None` for a nil array.
    pub fn read_array_len(&mut self) -> Result<Option<usize>> {
        match self.header()? {
            (b'*', n) if n < 0 => Ok(None),
            (b'*', n) => Ok(Some(n as usize)),
            (t, _) => bail!("Redis answered '{}' where an array was expected", t as char),
        }
    }

    /// A bulk string's length; `None` for nil. Its bytes must then be
    /// taken with `bulk_into` or `bulk_append`.
    pub fn read_bulk_len(&mut self) -> Result<Option<usize>> {
        match self.header()? {
            (b'$', n) if n < 0 => Ok(None),
            (b'$', n) => Ok(Some(n as usize)),
            (t, _) => bail!("Redis answered '{}' where a string was expected", t as char),
        }
    }

    /// The `dst.len()` bytes of the bulk string whose length was just read.
    pub fn bulk_into(&mut self, dst: &mut [u8]) -> Result<()> {
        let mut done = 0;
        while done < dst.len() {
            if self.pos == self.end {
                self.fill()?;
            }
            let n = (dst.len() - done).min(self.end - self.pos);
            dst[done..done + n].copy_from_slice(&self.inb[self.pos..self.pos + n]);
            done += n;
            self.pos += n;
        }
        self.crlf()
    }

    /// Append the `len` bytes of the bulk string just announced to `dst`.
    pub fn bulk_append(&mut self, len: usize, dst: &mut Vec<u8>) -> Result<()> {
        let at = dst.len();
        dst.resize(at + len, 0);
        self.bulk_into(&mut dst[at..])
    }

    /// Skip `len` bytes of the bulk string just announced.
    pub fn bulk_skip(&mut self, mut len: usize) -> Result<()> {
        while len > 0 {
            if self.pos == self.end {
                self.fill()?;
            }
            let n = len.min(self.end - self.pos);
            self.pos += n;
            len -= n;
        }
        self.crlf()
    }

    fn crlf(&mut self) -> Result<()> {
        for want in [b'\r', b'\n'] {
            if self.pos == self.end {
                self.fill()?;
            }
            if self.inb[self.pos] != want {
                bail!("Redis reply out of step (a string without its CRLF)");
            }
            self.pos += 1;
        }
        Ok(())
    }

    /// The next reply's type byte and its number (length or integer); an
    /// error reply becomes an error with the server's message.
    fn header(&mut self) -> Result<(u8, i64)> {
        let line = self.line()?;
        let (kind, rest) = (line.0, line.1);
        let text = &self.inb[rest.0..rest.1];
        match kind {
            b'-' => bail!("Redis: {}", String::from_utf8_lossy(text)),
            b'+' => Ok((kind, 0)),
            b':' | b'$' | b'*' => {
                let n = parse_int(text).with_context(|| {
                    format!(
                        "Redis sent a bad number '{}'",
                        String::from_utf8_lossy(text)
                    )
                })?;
                Ok((kind, n))
            }
            other => bail!("Redis sent a reply of unknown type 0x{other:02x}"),
        }
    }

    /// One CRLF-terminated line: its first byte and the range of the rest
    /// in `inb` (valid until the next read).
    fn line(&mut self) -> Result<(u8, (usize, usize))> {
        loop {
            if let Some(nl) = self.inb[self.pos..self.end]
                .windows(2)
                .position(|w| w == b"\r\n")
            {
                let start = self.pos;
                self.pos += nl + 2;
                if nl == 0 {
                    bail!("Redis sent an empty line");
                }
                return Ok((self.inb[start], (start + 1, start + nl)));
            }
            // Keep the partial line and read more after it.
            if self.pos > 0 {
                self.inb.copy_within(self.pos..self.end, 0);
                self.end -= self.pos;
                self.pos = 0;
            }
            if self.end == self.inb.len() {
                bail!("Redis sent a line longer than {} bytes", self.inb.len());
            }
            self.read_more()?;
        }
    }

    /// Refill an empty buffer.
    fn fill(&mut self) -> Result<()> {
        self.pos = 0;
        self.end = 0;
        self.read_more()
    }

    fn read_more(&mut self) -> Result<()> {
        let n = self
            .stream
            .read(&mut self.inb[self.end..])
            .context("reading Redis's reply")?;
        if n == 0 {
            bail!("Redis closed the connection");
        }
        self.end += n;
        Ok(())
    }
}

fn push_int(out: &mut Vec<u8>, v: i64) {
    let mut digits = [0u8; 24];
    let n = format_int(&mut digits, v);
    out.extend_from_slice(&digits[..n]);
}

/// Decimal digits of `v` into `buf`; their count.
fn format_int(buf: &mut [u8; 24], v: i64) -> usize {
    let mut u = v.unsigned_abs();
    let mut tmp = [0u8; 24];
    let mut n = 0;
    loop {
        tmp[n] = b'0' + (u % 10) as u8;
        n += 1;
        u /= 10;
        if u == 0 {
            break;
        }
    }
    let mut at = 0;
    if v < 0 {
        buf[0] = b'-';
        at = 1;
    }
    for i in 0..n {
        buf[at + i] = tmp[n - 1 - i];
    }
    at + n
}

fn parse_int(text: &[u8]) -> Option<i64> {
    std::str::from_utf8(text).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::{format_int, parse_int, Resp};
    use crate::servers::{Endpoint, ServerKind};
    use std::io::{Read, Write};

    /// A connection to a one-shot server that answers the first command
    /// with `reply`, `chunk` bytes per write.
    fn answered(reply: &'static [u8], chunk: usize) -> Resp {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            s.set_nodelay(true).unwrap();
            let mut cmd = [0u8; 256];
            let _ = s.read(&mut cmd).unwrap();
            for part in reply.chunks(chunk) {
                s.write_all(part).unwrap();
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
        });
        let ep = Endpoint {
            kind: ServerKind::parse("redis").unwrap(),
            host: "127.0.0.1".into(),
            port,
            user: String::new(),
            password: String::new(),
            database: String::new(),
            socket: None,
            options: String::new(),
        };
        let mut c = Resp::connect(&ep).unwrap();
        c.begin(2).arg(b"HGETALL").arg(b"k");
        c.send().unwrap();
        c
    }

    #[test]
    fn a_reply_split_at_any_byte_reads_the_same() {
        const REPLY: &[u8] =
            b"*4\r\n$6\r\nfield0\r\n$3\r\nabc\r\n$6\r\nfield1\r\n$0\r\n\r\n:-17\r\n";
        for chunk in [1, 2, 3, 7, REPLY.len()] {
            let mut c = answered(REPLY, chunk);
            assert_eq!(c.read_array_len().unwrap(), Some(4));
            let mut got = Vec::new();
            for _ in 0..4 {
                let n = c.read_bulk_len().unwrap().unwrap();
                c.bulk_append(n, &mut got).unwrap();
                got.push(b'|');
            }
            assert_eq!(got, b"field0|abc|field1||", "chunk {chunk}");
            assert_eq!(c.read_int().unwrap(), -17, "chunk {chunk}");
        }
    }

    #[test]
    fn error_and_nil_replies_are_told_apart() {
        let mut c = answered(b"-WRONGTYPE not a hash\r\n$-1\r\n*-1\r\n+OK\r\n", 5);
        let e = c.read_array_len().unwrap_err().to_string();
        assert!(e.contains("WRONGTYPE not a hash"), "{e}");
        assert_eq!(c.read_bulk_len().unwrap(), None);
        assert_eq!(c.read_array_len().unwrap(), None);
        c.read_ok().unwrap();
        // A status where an integer belongs is an error, not a number.
        let mut c = answered(b"+OK\r\n", 64);
        assert!(c.read_int().is_err());
    }

    #[test]
    fn commands_are_encoded_as_resp2_arrays() {
        let mut c = answered(b"+OK\r\n", 64);
        c.begin(3).arg(b"ZADD").arg_int(-5).arg(b"");
        assert_eq!(c.out, b"*3\r\n$4\r\nZADD\r\n$2\r\n-5\r\n$0\r\n\r\n");
    }

    #[test]
    fn integers_round_trip_through_their_decimal_form() {
        for v in [0i64, 7, -1, 42, -2147483648, i64::MAX, i64::MIN] {
            let mut buf = [0u8; 24];
            let n = format_int(&mut buf, v);
            assert_eq!(std::str::from_utf8(&buf[..n]).unwrap(), v.to_string());
            assert_eq!(parse_int(&buf[..n]), Some(v));
        }
        assert_eq!(parse_int(b"12x"), None);
    }
}
