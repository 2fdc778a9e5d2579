//! Gathering the hosts' results after the common start. Every channel is
//! watched at once (a host lost while another is still measuring is seen
//! at once, not after the others finish): a host whose channel ends, that
//! sends something else than progress or its result, or that is silent
//! longer than the idle limit is lost; a loss or a Ctrl-C sends `stop` to
//! every host still measuring, and each returns its partial point.

use std::time::{Duration, Instant};

use super::conn::{host_error, unexpected, Conn};
use super::proto::{JobResult, Message};
use crate::interrupt;

/// Each host's result, or why it was lost, in the order of `conns`.
pub fn results(conns: &mut [&mut Conn], idle: Duration) -> Vec<anyhow::Result<JobResult>> {
    let n = conns.len();
    let mut out: Vec<Option<anyhow::Result<JobResult>>> = (0..n).map(|_| None).collect();
    let mut heard = vec![Instant::now(); n];
    let mut stop_sent = false;
    let mut pending = n;
    while pending > 0 {
        let lost_any = out.iter().any(|o| matches!(o, Some(Err(_))));
        if !stop_sent && (lost_any || interrupt::stop_requested()) {
            stop_sent = true;
            for (i, c) in conns.iter_mut().enumerate() {
                if out[i].is_none() {
                    let _ = c.send(&Message::Stop);
                }
            }
        }
        let mut busy = false;
        for (i, c) in conns.iter_mut().enumerate() {
            if out[i].is_some() {
                continue;
            }
            let got = match c.try_recv() {
                None if heard[i].elapsed() > idle => Some(Err(host_error(
                    &c.host,
                    format!("silent for {} s while measuring", idle.as_secs()),
                ))),
                None => None,
                Some(Ok(Message::Progress { .. })) => {
                    heard[i] = Instant::now();
                    busy = true;
                    None
                }
                Some(Ok(Message::Result(r))) => Some(Ok(*r)),
                Some(Ok(other)) => Some(Err(unexpected(&c.host, other, "a result"))),
                Some(Err(e)) => Some(Err(e)),
            };
            if let Some(g) = got {
                out[i] = Some(g);
                pending -= 1;
                busy = true;
            }
        }
        if !busy {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    out.into_iter()
        .map(|o| o.expect("every host answered or was lost"))
        .collect()
}
