//! Gathering the hosts' results after the common start. Every channel is
//! watched at once (a host lost while another is still measuring is seen
//! at once, not after the others finish): a host whose channel ends, that
//! sends something else than progress or its result, or that is silent
//! longer than the idle limit is lost; a loss or a Ctrl-C sends `stop` to
//! every host still measuring, and each returns its partial point.
//! The progress line hears each second once, when every host still
//! measuring has reported it (or a bounded wait later): `Seconds`.

use std::collections::BTreeMap;
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
    let mut seconds = Seconds::new(n, SECOND_WAIT);
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
                    seconds.report(i, p, Instant::now());
                    None
                }
                Some(Ok(Message::Result(r))) => Some(Ok(*r)),
                Some(Ok(other)) => Some(Err(unexpected(&c.host, other, "a result"))),
                Some(Err(e)) => Some(Err(e)),
            };
            if let Some(g) = got {
                seconds.gone(i, g.is_ok());
                out[i] = Some(g);
                pending -= 1;
                busy = true;
            }
        }
        for p in seconds.due(Instant::now()) {
            progress(p);
        }
        if !busy {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    out.into_iter()
        .map(|o| o.expect("every host answered or was lost"))
        .collect()
}

/// How long a second's line waits for the hosts that have not reported
/// it yet (their one-second ticks are not in phase: up to a second apart).
pub const SECOND_WAIT: Duration = Duration::from_millis(1500);

/// The hosts' reports, combined second by second: a second is told once,
/// in order, summing every host still measuring that reported it, as soon
/// as each of them has reported it (or a later second), or `wait` after
/// its first report. A host that ended or was lost is no longer waited
/// for; a report of a second already told, or of none yet (0), is dropped;
/// a host that skipped a second (a late tick) counts with its next one.
pub struct Seconds {
    wait: Duration,
    live: Vec<bool>,
    finished: Vec<bool>,
    /// The latest second each host reported.
    latest: Vec<u64>,
    /// Seconds not told yet: when first reported, and each host's report.
    open: BTreeMap<u64, (Instant, Vec<Option<ProgressReport>>)>,
    told: u64,
}

impl Seconds {
    pub fn new(hosts: usize, wait: Duration) -> Seconds {
        Seconds {
            wait,
            live: vec![true; hosts],
            finished: vec![false; hosts],
            latest: vec![0; hosts],
            open: BTreeMap::new(),
            told: 0,
        }
    }

    /// Host `i` reported `p` at `now`.
    pub fn report(&mut self, i: usize, p: ProgressReport, now: Instant) {
        if p.second == 0 || p.second <= self.told || i >= self.live.len() {
            return;
        }
        self.latest[i] = self.latest[i].max(p.second);
        let n = self.live.len();
        let slot = self
            .open
            .entry(p.second)
            .or_insert_with(|| (now, vec![None; n]));
        slot.1[i] = Some(p);
    }

    /// Host `i` ended (`finished`: its result came) or was lost: not
    /// waited for. The seconds a finished host did not report are past its
    /// end: not told (their sum would lack it); a lost host's are told
    /// without it.
    pub fn gone(&mut self, i: usize, finished: bool) {
        if let Some(l) = self.live.get_mut(i) {
            *l = false;
            self.finished[i] = finished;
        }
    }

    /// The seconds that are complete (or waited for long enough) at `now`,
    /// in order, each the sum of its hosts' reports.
    pub fn due(&mut self, now: Instant) -> Vec<ProgressReport> {
        let mut out = Vec::new();
        while let Some((&s, (first, _))) = self.open.iter().next() {
            let waited = now.saturating_duration_since(*first) >= self.wait;
            let all_in = self
                .live
                .iter()
                .zip(&self.latest)
                .all(|(live, latest)| !live || *latest >= s);
            if !(waited || all_in) {
                break;
            }
            let (_, (_, mut reports)) = self.open.pop_first().expect("a first second");
            self.told = s;
            let past_an_end = self
                .finished
                .iter()
                .zip(&self.latest)
                .any(|(f, latest)| *f && *latest < s);
            if past_an_end {
                continue;
            }
            // A host whose one-second tick came late skipped this second
            // (it reported the one before and the one after): its next
            // second's rates stand in.
            for (i, r) in reports.iter_mut().enumerate() {
                if r.is_none() && self.latest[i] > s {
                    *r = self.open.values().find_map(|(_, later)| later[i]);
                }
            }
            let got: Vec<ProgressReport> = reports.into_iter().flatten().collect();
            let mut c = combined(&got);
            c.second = s;
            out.push(c);
        }
        out
    }
}

/// The hosts' last seconds as one: the longest elapsed time, rates summed,
/// the mean weighted by each host's rate, and the largest p99 (an upper
/// bound of the combined one: the seconds' histograms are not sent).
pub fn combined(last: &[ProgressReport]) -> ProgressReport {
    let iops: f64 = last.iter().map(|l| l.iops).sum();
    let weighted: f64 = last.iter().map(|l| l.mean_ns * l.iops).sum();
    ProgressReport {
        second: last.iter().map(|l| l.second).max().unwrap_or(0),
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
            second: 2,
            elapsed_s: 2.0,
            iops: 100.0,
            mib_s: 1.0,
            mean_ns: 10.0,
            p99_ns: 50,
        };
        let b = ProgressReport {
            second: 3,
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

    fn at(second: u64, iops: f64) -> ProgressReport {
        ProgressReport {
            second,
            elapsed_s: second as f64,
            iops,
            mib_s: iops / 256.0,
            mean_ns: 1000.0,
            p99_ns: 2000,
        }
    }

    /// 16 hosts paced at 1,000 IOPS each: the line said "1s: 999 IOPS",
    /// "2s: 14.0k" (each second told at its first host's report, the
    /// others' last seconds stale or zero). Now every second sums all 16,
    /// whatever order the reports arrive in.
    #[test]
    fn every_second_sums_every_hosts_report_of_it_whatever_the_order() {
        let t0 = Instant::now();
        let mut s = Seconds::new(16, SECOND_WAIT);
        let mut told = Vec::new();
        // Second 1 from hosts 15..0, second 2 interleaved with it, second 3 last.
        for (k, h) in (0..16).rev().enumerate() {
            let now = t0 + Duration::from_millis(10 * k as u64);
            s.report(h, at(1, 1000.0), now);
            if h % 2 == 0 {
                s.report(h, at(2, 1000.0), now);
            }
            told.extend(s.due(now));
        }
        for h in (0..16).filter(|h| h % 2 == 1) {
            s.report(h, at(2, 1000.0), t0 + Duration::from_millis(300));
        }
        for h in 0..16 {
            s.report(h, at(3, 1000.0), t0 + Duration::from_millis(400));
        }
        told.extend(s.due(t0 + Duration::from_millis(400)));
        let secs: Vec<(u64, f64)> = told.iter().map(|p| (p.second, p.iops)).collect();
        assert_eq!(secs, [(1, 16000.0), (2, 16000.0), (3, 16000.0)]);
        assert_eq!(told[0].mean_ns, 1000.0);
    }

    /// A slow host holds a second back at most `wait`; a host that ended
    /// or was lost is not waited for; a late report of a told second is dropped.
    #[test]
    fn a_slow_host_is_waited_for_a_bounded_time_and_a_lost_one_not_at_all() {
        let t0 = Instant::now();
        let wait = Duration::from_millis(500);
        let mut s = Seconds::new(3, wait);
        s.report(0, at(1, 10.0), t0);
        s.report(1, at(1, 20.0), t0);
        assert!(s.due(t0 + Duration::from_millis(100)).is_empty());
        let late = s.due(t0 + wait);
        assert_eq!(late.len(), 1);
        assert_eq!(late[0].iops, 30.0);
        s.report(2, at(1, 40.0), t0 + wait);
        s.report(0, at(2, 10.0), t0 + wait);
        s.report(1, at(2, 20.0), t0 + wait);
        assert!(s.due(t0 + wait).is_empty());
        s.gone(2, false);
        let two = s.due(t0 + wait);
        assert_eq!((two[0].second, two[0].iops), (2, 30.0));
        s.report(0, at(0, 99.0), t0 + wait);
        assert!(s.due(t0 + wait * 4).is_empty());
        // Host 0 skipped second 3: its second 4 stands in.
        let mut k = Seconds::new(2, wait);
        k.report(0, at(2, 10.0), t0);
        k.report(1, at(2, 20.0), t0);
        k.report(1, at(3, 20.0), t0);
        k.report(0, at(4, 11.0), t0);
        k.report(1, at(4, 20.0), t0);
        let secs: Vec<(u64, f64)> = k.due(t0).iter().map(|p| (p.second, p.iops)).collect();
        assert_eq!(secs, [(2, 30.0), (3, 31.0), (4, 31.0)]);
        // A host that finished without reporting second 3: the second is
        // past its end, not told short of it.
        s.report(0, at(3, 10.0), t0 + wait);
        s.gone(1, true);
        assert!(s.due(t0 + wait * 4).is_empty());
    }
}
