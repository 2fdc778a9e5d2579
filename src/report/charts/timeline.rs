//! The per-second timelines of database runs (what the NVMe vs SATA study
//! drew during each run): for every point with a `timeline` section, and
//! an oltp load with one, the machine's CPU (user, system, iowait, idle,
//! with the server's share dashed), the bandwidth and IOPS of the device
//! under the data, and the client's throughput, one chart per run phase
//! in each section. Read from the typed sections only.

use super::{Section, Table};
use crate::figures::fmt;
use crate::report::svg::{self, Axis, LineChart, Scale, Series};
use crate::results::{Results, TimelineSeries};

/// A phase with a timeline: its label, what its client counts, the series.
struct Phase<'a> {
    label: String,
    unit: &'static str,
    t: std::borrow::Cow<'a, TimelineSeries>,
}

fn phases(r: &Results) -> Vec<Phase<'_>> {
    let mut out = Vec::new();
    let load = r.extra.oltp_load().and_then(|l| l.timeline.clone());
    if let Some(t) = load.filter(|t| !t.is_empty()) {
        out.push(Phase {
            label: "load".into(),
            unit: "rows/s",
            t: std::borrow::Cow::Owned(t),
        });
    }
    for p in &r.points {
        if let Some(t) = p.extra.timeline.as_deref().filter(|t| !t.is_empty()) {
            out.push(Phase {
                label: p.name.clone(),
                // The catalogue's name of the point's throughput.
                unit: crate::figures::throughput(p.family()).def().name,
                t: std::borrow::Cow::Borrowed(t),
            });
        }
    }
    out
}

/// Every timeline section of the report.
pub fn timelines(r: &Results) -> Vec<Section> {
    let ph = phases(r);
    if ph.is_empty() {
        return Vec::new();
    }
    let mut out = vec![cpu(&ph)];
    let disk: Vec<&Phase> = ph
        .iter()
        .filter(|p| !p.t.disk_write_iops.is_empty())
        .collect();
    if !disk.is_empty() {
        out.push(disk_section(&disk, Disk::Bandwidth));
        out.push(disk_section(&disk, Disk::Iops));
    }
    out.push(client(&ph));
    out
}

/// One line of a column over time.
fn line(
    p: &Phase,
    label: &str,
    ys: &[f64],
    color: usize,
    dashed: bool,
    f: fn(f64) -> String,
) -> Series {
    Series {
        label: label.into(),
        points: p
            .t
            .t_s
            .iter()
            .zip(ys)
            .map(|(&t, &y)| {
                (
                    t,
                    y,
                    format!("{} at {}: {label} {}", p.label, fmt::secs(t), f(y)),
                )
            })
            .collect(),
        dashed,
        color,
        line: true,
    }
}

/// The fewest intervals a phase needs for a chart: with one or two, a
/// line is a dot or a segment that reads as nothing (16 single dots were
/// drawn for the main job's database phases); the table keeps them.
const MIN_POINTS: usize = 3;

fn drawable(p: &Phase) -> bool {
    p.t.len() >= MIN_POINTS
}

/// What the section's note adds about the phases it has no chart for.
fn undrawn(ph: &[&Phase]) -> String {
    let short: Vec<&str> = ph
        .iter()
        .filter(|p| !drawable(p))
        .map(|p| p.label.as_str())
        .collect();
    match short.is_empty() {
        true => String::new(),
        false => format!(
            " Phases with fewer than {MIN_POINTS} intervals ({}) are in the table only: too short for a line.",
            short.join(", ")
        ),
    }
}

/// How often the series were sampled, for the notes.
fn every(ph: &[&Phase]) -> &'static str {
    match ph.iter().any(|p| p.t.interval_s.is_some_and(|i| i < 1.0)) {
        true => "Each interval (100 ms for phases under 10 s, else 1 s)",
        false => "Each second",
    }
}

fn chart(title: String, y: Axis, series: Vec<Series>) -> String {
    svg::line_chart(&LineChart {
        title,
        x: Axis::new("time (s)", Scale::Linear, fmt::plain),
        y,
        series,
        shade: None,
        marks: vec![],
        hlines: vec![],
    })
}

fn cpu(ph: &[Phase]) -> Section {
    // irq and steal exist in files of newer versions only: their columns
    // appear only then, so older files render as they did.
    let split = ph.iter().any(|p| !p.t.cpu_steal_pct.is_empty());
    let mut head = vec!["phase", "t (s)", "usr %", "sys %", "iowait %", "idle %"];
    if split {
        head.extend(["irq %", "steal %"]);
    }
    head.extend(["server usr %", "server sys %"]);
    let mut table = Table::new(&head);
    let mut svgs = Vec::new();
    for p in ph {
        let t = &p.t;
        let mut series = vec![
            line(p, "user", &t.cpu_usr_pct, 0, false, fmt::pct),
            line(p, "system", &t.cpu_sys_pct, 1, false, fmt::pct),
            line(p, "iowait", &t.cpu_iowait_pct, 2, false, fmt::pct),
            line(p, "idle", &t.cpu_idle_pct, 8, false, fmt::pct),
        ];
        if !t.cpu_steal_pct.is_empty() {
            series.push(line(p, "irq", &t.cpu_irq_pct, 4, false, fmt::pct));
            series.push(line(p, "steal", &t.cpu_steal_pct, 5, false, fmt::pct));
        }
        let server: Vec<f64> = t
            .server_usr_pct
            .iter()
            .zip(&t.server_sys_pct)
            .map(|(u, s)| u + s)
            .collect();
        if !server.is_empty() {
            series.push(line(p, "server usr+sys", &server, 3, true, fmt::pct));
        }
        if drawable(p) {
            svgs.push(chart(
                format!("{}: CPU of the machine ({} CPUs)", p.label, t.cpus),
                // A share of all CPUs cannot pass 100%.
                Axis::new("% of all CPUs", Scale::Linear, fmt::pct).up_to(100.0),
                series,
            ));
        }
        for i in 0..t.len() {
            let col = |v: &[f64]| v.get(i).map_or(String::new(), |x| format!("{x:.2}"));
            let mut row = vec![
                p.label.clone(),
                format!("{:.2}", t.t_s[i]),
                col(&t.cpu_usr_pct),
                col(&t.cpu_sys_pct),
                col(&t.cpu_iowait_pct),
                col(&t.cpu_idle_pct),
            ];
            if split {
                row.extend([col(&t.cpu_irq_pct), col(&t.cpu_steal_pct)]);
            }
            row.extend([col(&t.server_usr_pct), col(&t.server_sys_pct)]);
            table.rows.push(row);
        }
    }
    let all: Vec<&Phase> = ph.iter().collect();
    let mut note = format!("{} of the measured time (and of the load): the machine's user, system, iowait and idle time from /proc/stat as a share of all CPUs, and the database server's processes' user + system time on the same scale (dashed).", every(&all));
    if split {
        note.push_str(" irq is hard and soft interrupt time, steal the time a hypervisor gave these CPUs to someone else; with them the machine's shares add up to 100%.");
    }
    note.push_str(&undrawn(&all));
    Section {
        id: "timeline-cpu".into(),
        title: "Machine CPU over time".into(),
        note,
        svgs,
        table,
    }
}

#[derive(Clone, Copy)]
enum Disk {
    Bandwidth,
    Iops,
}

fn disk_section(ph: &[&Phase], what: Disk) -> Section {
    let (id, title, ytitle, yfmt): (&str, &str, &str, fn(f64) -> String) = match what {
        Disk::Bandwidth => (
            "timeline-disk",
            "Disk bandwidth over time",
            "MiB/s",
            fmt::mib,
        ),
        Disk::Iops => (
            "timeline-iops",
            "Disk IOPS over time",
            "I/Os per second",
            fmt::count,
        ),
    };
    let mut table = Table::new(&["phase", "device", "t (s)", "read", "write"]);
    let mut svgs = Vec::new();
    for p in ph {
        let t = &p.t;
        let (r, w) = match what {
            Disk::Bandwidth => (&t.disk_read_mib_s, &t.disk_write_mib_s),
            Disk::Iops => (&t.disk_read_iops, &t.disk_write_iops),
        };
        let device = t.device.clone().unwrap_or_default();
        if drawable(p) {
            svgs.push(chart(
                format!("{}: {device} {}", p.label, ytitle),
                Axis::new(ytitle, Scale::Linear, yfmt),
                vec![
                    line(p, "read", r, 0, false, yfmt),
                    line(p, "write", w, 1, true, yfmt),
                ],
            ));
        }
        for i in 0..t.len() {
            table.rows.push(vec![
                p.label.clone(),
                device.clone(),
                format!("{:.2}", t.t_s[i]),
                format!("{:.2}", r.get(i).copied().unwrap_or(0.0)),
                format!("{:.2}", w.get(i).copied().unwrap_or(0.0)),
            ]);
        }
    }
    Section {
        id: id.into(),
        title: title.into(),
        note: format!("{}: the block device under the database's data (/proc/diskstats; a partition's own line when the data is on one), read and write. Everything using the device counts, not only the database.{}", every(ph), undrawn(ph)),
        svgs,
        table,
    }
}

fn client(ph: &[Phase]) -> Section {
    let mut table = Table::new(&["phase", "t (s)", "client per second", "unit"]);
    let mut svgs = Vec::new();
    for p in ph {
        if drawable(p) {
            svgs.push(chart(
                format!("{}: client {}", p.label, p.unit),
                Axis::new(p.unit, Scale::Linear, fmt::count),
                vec![line(p, p.unit, &p.t.client_ops_s, 0, false, fmt::count)],
            ));
        }
        for (t, v) in p.t.t_s.iter().zip(&p.t.client_ops_s) {
            table.rows.push(vec![
                p.label.clone(),
                format!("{t:.2}"),
                format!("{v:.2}"),
                p.unit.to_string(),
            ]);
        }
    }
    Section {
        id: "timeline-client".into(),
        title: "Client throughput over time".into(),
        note: {
            let all: Vec<&Phase> = ph.iter().collect();
            format!("{}: what the client finished per second (transactions for an oltp point, rows for the load), from the same clock as the machine's series above.{}", every(&all), undrawn(&all))
        },
        svgs,
        table,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::analysis::testutil::point;
    use crate::plan::job::JobSpec;
    use crate::results::Provenance;

    /// The y-axis tick labels of an SVG chart (text right-aligned at the axis).
    pub(crate) fn y_ticks(svg: &str) -> Vec<String> {
        svg.split(r#"text-anchor="end">"#)
            .skip(1)
            .filter_map(|s| s.split('<').next())
            .map(str::to_string)
            .collect()
    }

    fn run_with(usr: f64, idle: f64) -> Results {
        let mut r = Results::new("kv", Provenance::default());
        let t = TimelineSeries {
            cpus: 2,
            t_s: vec![0.0, 1.0, 2.0],
            len_s: vec![1.0, 1.0, 1.0],
            cpu_usr_pct: vec![usr, usr, usr],
            cpu_sys_pct: vec![1.0, 1.0, 1.0],
            cpu_iowait_pct: vec![0.0, 0.0, 0.0],
            cpu_idle_pct: vec![idle, idle, idle],
            client_ops_s: vec![10.0, 10.0, 10.0],
            ..TimelineSeries::default()
        };
        let mut p = point(&JobSpec::default(), 1e4, 1e5, 200_000);
        p.extra.timeline = Some(Box::new(t));
        r.points.push(p);
        r
    }

    /// Issue 31 item 17: the machine's CPU is a share of all CPUs, so its
    /// axis ends at 100%, not at the next "nice" 120% when a sample rounds
    /// a little past 100 (idle at 100.4% of an interval).
    #[test]
    fn the_machine_cpu_axis_ends_at_100_percent() {
        for (usr, idle) in [(95.0, 4.0), (0.2, 100.4)] {
            let s = cpu(&phases(&run_with(usr, idle)));
            let ticks = y_ticks(&s.svgs[0]);
            assert_eq!(
                ticks.last().map(String::as_str),
                Some("100%"),
                "{usr}/{idle}: {ticks:?}"
            );
        }
        // Other shares keep their nice axis: 40% ends at 40%.
        let s = cpu(&phases(&run_with(40.0, 10.0)));
        assert_eq!(y_ticks(&s.svgs[0]).last().map(String::as_str), Some("40%"));
    }

    /// A phase of one or two intervals gets no chart (it drew a single dot
    /// on a 0-1 s axis), only its table rows and a sentence saying why.
    #[test]
    fn a_phase_too_short_for_a_line_is_in_the_table_only() {
        let mut r = run_with(10.0, 80.0);
        let mut short = r.points[0].clone();
        short.name = "ycsb-a load".into();
        let t = short.extra.timeline.as_mut().unwrap();
        for col in [
            &mut t.t_s,
            &mut t.len_s,
            &mut t.cpu_usr_pct,
            &mut t.cpu_sys_pct,
            &mut t.cpu_iowait_pct,
            &mut t.cpu_idle_pct,
            &mut t.client_ops_s,
        ] {
            col.truncate(1);
        }
        r.points.push(short);
        for s in timelines(&r) {
            assert_eq!(s.svgs.len(), 1, "{}: one chart, for the long phase", s.id);
            assert!(
                s.note.contains("(ycsb-a load) are in the table only"),
                "{}",
                s.note
            );
            assert!(s.table.rows.iter().any(|row| row[0] == "ycsb-a load"));
        }
    }
}
