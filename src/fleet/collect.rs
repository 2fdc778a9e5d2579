//! Gathering the hosts' results after the common start. Every channel is
//! watched at once (a host lost while another is still measuring is seen
//! at once, not after the others finish): a host whose channel ends, that
//! sends something else than progress or its result, or that is silent
//! longer than the idle limit is lost; a loss or a Ctrl-C sends `stop` to
//! every host still measuring, and each returns its partial point.

use std::time::{Duration, Instant};

use super::conn::{host_error, unexpected, Conn};
use super::proto::{JobResult, Message, ProgressReport};
use crate::interrupt;

/// Each host's result, or why it was lost, in the order of `conns`.
/// `progress` hears the hosts' last seconds combined (`combined`).
pub fn results(
    conns: &mut [&mut Conn],
    idle: Duration,
    progress: &dyn Fn(ProgressReport),
) -> Vec<anyhow::Result<JobResult>> {
    let n = conns.len();
    let mut last = vec![ProgressReport::default(); n];
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
                Some(Ok(Message::Progress(p))) => {
                    heard[i] = Instant::now();
                    busy = true;
                    last[i] = p;
                    progress(combined(&last));
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

/// The hosts' last seconds as one: the longest elapsed time, rates summed,
/// the mean weighted by each host's rate, and the largest p99 (an upper
/// bound of the combined one: the seconds' histograms are not sent).
pub fn combined(last: &[ProgressReport]) -> ProgressReport {
    let iops: f64 = last.iter().map(|l| l.iops).sum();
    let weighted: f64 = last.iter().map(|l| l.mean_ns * l.iops).sum();
    ProgressReport {
        elapsed_s: last.iter().map(|l| l.elapsed_s).fold(0.0, f64::max),
        iops,
        mib_s: last.iter().map(|l| l.mib_s).sum(),
        mean_ns: if iops > 0.0 { weighted / iops } else { 0.0 },
        p99_ns: last.iter().map(|l| l.p99_ns).max().unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_seconds_combine_into_sums_a_weighted_mean_and_the_largest_p99() {
        let a = ProgressReport {
            elapsed_s: 2.0,
            iops: 100.0,
            mib_s: 1.0,
            mean_ns: 10.0,
            p99_ns: 50,
        };
        let b = ProgressReport {
            elapsed_s: 3.0,
            iops: 300.0,
            mib_s: 2.0,
            mean_ns: 30.0,
            p99_ns: 40,
        };
        let c = combined(&[a, b]);
        assert_eq!(c.elapsed_s, 3.0);
        assert_eq!(c.iops, 400.0);
        assert_eq!(c.mib_s, 3.0);
        assert_eq!(c.mean_ns, 25.0);
        assert_eq!(c.p99_ns, 50);
        assert_eq!(combined(&[]).mean_ns, 0.0);
    }
}
