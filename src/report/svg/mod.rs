//! Hand-written SVG charts: line/scatter charts with linear, log and
//! "nines" axes, stacked bars and heat maps. Output is deterministic (fixed
//! number formatting, no randomness, no clock) so it can be snapshot-tested,
//! and needs no JavaScript: every data point carries a `<title>` for hover.

pub mod bars;
pub mod line;

pub use bars::{bar_chart, bar_chart_with, heat_map, BarChart, BarOverlay, HeatMap};
pub use line::line_chart;

use std::fmt::Write as _;

/// Chart size in SVG user units (scaled to the page width by CSS).
pub(crate) const W: f64 = 760.0;
pub(crate) const H: f64 = 380.0;
pub(crate) const ML: f64 = 78.0;
pub(crate) const MR: f64 = 170.0;
pub(crate) const MT: f64 = 34.0;
pub(crate) const MB: f64 = 52.0;

/// Okabe-Ito (colour-blind friendly) first, then more distinct colours.
pub const PALETTE: [&str; 16] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#8C564B",
    "#7F7F7F", "#B8860B", "#1B3A6B", "#E377C2", "#17BECF", "#BCBD22", "#9467BD", "#FF9896",
];

/// How values map onto an axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    Linear,
    Log,
    /// Log with ticks at powers of two (block sizes, batch sizes).
    Log2,
    /// Percentiles (0..100) spread by -log10(1 - p/100): 90, 99, 99.9 ... equally spaced.
    Nines,
}

#[derive(Debug, Clone)]
pub struct Axis {
    pub title: String,
    pub scale: Scale,
    /// Formats a tick value (e.g. "4k", "100 µs").
    pub fmt: fn(f64) -> String,
    /// The most a value can be (a share of all CPUs: 100): the axis ends
    /// there at most, not at the next round number past a value that
    /// passed it by rounding.
    pub max: Option<f64>,
}

impl Axis {
    pub fn new(title: &str, scale: Scale, fmt: fn(f64) -> String) -> Axis {
        Axis {
            title: title.into(),
            scale,
            fmt,
            max: None,
        }
    }

    /// The same axis ending at `max` at most.
    pub fn up_to(self, max: f64) -> Axis {
        Axis {
            max: Some(max),
            ..self
        }
    }
}

/// `vals` with none above `max` (an axis's ceiling), to map the axis on.
pub(crate) fn capped(vals: Vec<f64>, max: Option<f64>) -> Vec<f64> {
    match max {
        Some(m) => vals.into_iter().map(|v| v.min(m)).collect(),
        None => vals,
    }
}

/// One line (or set of markers) in a chart.
#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    /// (x, y, hover text)
    pub points: Vec<(f64, f64, String)>,
    pub dashed: bool,
    pub color: usize,
    /// Draw the connecting line (false: markers only).
    pub line: bool,
}

/// A line chart, with an optional shaded x-range and marked points.
#[derive(Debug, Clone)]
pub struct LineChart {
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
    /// Shaded x-range with a label (the ramp of a time series).
    pub shade: Option<(f64, f64, String)>,
    /// Annotated points (the knee of a load-latency curve).
    pub marks: Vec<(f64, f64, String)>,
    /// Horizontal reference lines (steady-state bounds).
    pub hlines: Vec<(f64, String)>,
}

/// Escape text for XML content and attributes.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            _ => o.push(c),
        }
    }
    o
}

/// Fixed-precision number for coordinates (deterministic text).
pub(crate) fn n(v: f64) -> String {
    format!("{v:.1}")
}

/// Decide linear or log for data spanning `min..max`: log when all positive
/// and the span is at least two decades.
pub fn auto_scale(values: impl Iterator<Item = f64>) -> Scale {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if lo > 0.0 && hi / lo >= 100.0 {
        Scale::Log
    } else {
        Scale::Linear
    }
}

pub(crate) fn fwd(scale: Scale, v: f64) -> f64 {
    match scale {
        Scale::Linear => v,
        Scale::Log | Scale::Log2 => v.max(1e-300).log10(),
        Scale::Nines => -(1.0 - (v / 100.0).min(0.999_999_9)).log10(),
    }
}

/// Data range on one axis after the transform, with ticks (value, label).
pub(crate) struct Mapped {
    pub(crate) lo: f64,
    pub(crate) hi: f64,
    pub(crate) ticks: Vec<f64>,
}

fn nice_step(span: f64, target: usize) -> f64 {
    let raw = span / target as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f < 1.5 {
        1.0
    } else if f < 3.0 {
        2.0
    } else if f < 7.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

pub(crate) fn map_axis(scale: Scale, vals: &[f64], include_zero: bool) -> Mapped {
    let vals: Vec<f64> = vals
        .iter()
        .copied()
        .filter(|v| v.is_finite() && (matches!(scale, Scale::Linear | Scale::Nines) || *v > 0.0))
        .collect();
    let (mut lo, mut hi) = vals
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    if !lo.is_finite() {
        lo = 0.0;
        hi = 1.0;
    }
    match scale {
        Scale::Linear => {
            if include_zero && lo > 0.0 {
                lo = 0.0;
            }
            if hi <= lo {
                hi = lo + if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
            }
            let step = nice_step(hi - lo, 5);
            let lo = (lo / step).floor() * step;
            let hi = (hi / step).ceil() * step;
            let mut ticks = Vec::new();
            let mut t = lo;
            while t <= hi + step * 1e-6 {
                ticks.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
                t += step;
            }
            Mapped { lo, hi, ticks }
        }
        Scale::Log => {
            let l = lo.log10().floor();
            let mut h = hi.log10().ceil();
            if h <= l {
                h = l + 1.0;
            }
            let decades = (h - l) as i32;
            let mut ticks = Vec::new();
            for d in 0..=decades {
                let base = 10f64.powf(l + d as f64);
                ticks.push(base);
                if decades <= 2 && d < decades {
                    ticks.push(base * 2.0);
                    ticks.push(base * 5.0);
                }
            }
            Mapped {
                lo: l,
                hi: h,
                ticks,
            }
        }
        Scale::Log2 => {
            let l = lo.log2().floor();
            let mut h = hi.log2().ceil();
            if h <= l {
                h = l + 1.0;
            }
            let octaves = (h - l) as i32;
            let step = if octaves <= 8 {
                1
            } else if octaves <= 16 {
                2
            } else {
                4
            };
            let ticks = (0..=octaves)
                .step_by(step)
                .map(|o| 2f64.powi(l as i32 + o))
                .collect();
            Mapped {
                lo: l * std::f64::consts::LOG10_2,
                hi: h * std::f64::consts::LOG10_2,
                ticks,
            }
        }
        Scale::Nines => {
            let top = fwd(Scale::Nines, hi).ceil().max(2.0);
            let mut ticks = vec![50.0, 90.0];
            let mut p = 90.0;
            for _ in 2..=(top as i32) {
                p = 100.0 - (100.0 - p) / 10.0;
                ticks.push(p);
            }
            Mapped {
                lo: 0.0,
                hi: top,
                ticks,
            }
        }
    }
}

pub(crate) fn to_px(m: &Mapped, scale: Scale, v: f64, a: f64, b: f64) -> f64 {
    let t = fwd(scale, v);
    let f = if m.hi > m.lo {
        (t - m.lo) / (m.hi - m.lo)
    } else {
        0.5
    };
    a + f.clamp(-0.02, 1.02) * (b - a)
}

pub(crate) fn svg_open(out: &mut String, title: &str, npoints: usize, w: f64, h: f64) {
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {} {}" role="img" aria-label="{}" data-points="{}" font-family="sans-serif" font-size="12">"#,
        n(w),
        n(h),
        esc(title),
        npoints
    );
    // A title past the chart's edge is cut in the middle (the whole of it
    // is the chart's aria-label and tooltip): 15 px bold is ~9 px a letter.
    let room = ((w - ML - 8.0) / 9.0) as usize;
    let _ = write!(
        out,
        r##"<rect x="0" y="0" width="{}" height="{}" fill="#fff"/><text x="{}" y="20" font-size="15" font-weight="bold"><title>{}</title>{}</text>"##,
        n(w),
        n(h),
        n(ML),
        esc(title),
        esc(&truncate_middle(title, room))
    );
}

pub(crate) fn legend(out: &mut String, items: &[(String, usize, bool, bool)]) {
    // (label, color, dashed, line)
    let x0 = W - MR + 14.0;
    for (i, (label, color, dashed, line)) in items.iter().enumerate().take(18) {
        let y = MT + 8.0 + i as f64 * 17.0;
        let c = PALETTE[color % PALETTE.len()];
        if *line {
            let _ = write!(
                out,
                r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{c}" stroke-width="2"{}/>"#,
                n(x0),
                n(y),
                n(x0 + 16.0),
                n(y),
                if *dashed {
                    r#" stroke-dasharray="6 4""#
                } else {
                    ""
                }
            );
        } else {
            let _ = write!(
                out,
                r#"<rect x="{}" y="{}" width="12" height="10" fill="{c}"/>"#,
                n(x0 + 5.0),
                n(y - 5.0)
            );
        }
        let _ = write!(
            out,
            // 22 characters at 10 px fit the 136 px left of the line: at
            // 11 px the end of a long label was cut off at the chart's edge.
            r#"<text x="{}" y="{}" font-size="10"><title>{}</title>{}</text>"#,
            n(x0 + 20.0),
            n(y + 4.0),
            esc(label),
            esc(&truncate_middle(label, 22))
        );
    }
    if items.len() > 18 {
        let _ = write!(
            out,
            r#"<text x="{}" y="{}" font-size="11">+{} more</text>"#,
            n(x0),
            n(MT + 8.0 + 18.0 * 17.0),
            items.len() - 18
        );
    }
}

/// `s` in at most `max` characters, its start and end kept: labels that
/// share a long prefix (file names with a date) stay told apart by their end.
pub(crate) fn truncate_middle(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max || max < 5 {
        return truncate(s, max);
    }
    let head = (max - 1) / 2;
    let tail = max - 1 - head;
    let start: String = s.chars().take(head).collect();
    let end: String = s.chars().skip(n - tail).collect();
    format!("{start}…{end}")
}

pub(crate) fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let t: String = s.chars().take(max - 1).collect();
        format!("{t}…")
    }
}

pub(crate) fn axes(out: &mut String, x: &Axis, xm: &Mapped, y: &Axis, ym: &Mapped) {
    let (x0, x1, y0, y1) = (ML, W - MR, H - MB, MT);
    for &t in &ym.ticks {
        let py = to_px(ym, y.scale, t, y0, y1);
        let _ = write!(
            out,
            r##"<line x1="{}" y1="{py}" x2="{}" y2="{py}" stroke="#e3e3e3"/><text x="{}" y="{}" text-anchor="end">{}</text>"##,
            n(x0),
            n(x1),
            n(x0 - 6.0),
            n(py + 4.0),
            esc(&(y.fmt)(t)),
            py = n(py)
        );
    }
    for &t in &xm.ticks {
        let px = to_px(xm, x.scale, t, x0, x1);
        let _ = write!(
            out,
            r##"<line x1="{px}" y1="{}" x2="{px}" y2="{}" stroke="#e3e3e3"/><text x="{px}" y="{}" text-anchor="middle">{}</text>"##,
            n(y0),
            n(y1),
            // Clear of the lowest y tick's label at the corner.
            n(y0 + 18.0),
            esc(&(x.fmt)(t)),
            px = n(px)
        );
    }
    let _ = write!(
        out,
        r##"<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#555"/>"##,
        n(x0),
        n(y1),
        n(x1 - x0),
        n(y0 - y1)
    );
    let _ = write!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle" font-size="13">{}{}</text>"#,
        n((x0 + x1) / 2.0),
        n(H - 12.0),
        esc(&x.title),
        scale_note(x.scale)
    );
    let _ = write!(
        out,
        r#"<text transform="translate(16 {}) rotate(-90)" text-anchor="middle" font-size="13">{}{}</text>"#,
        n((y0 + y1) / 2.0),
        esc(&y.title),
        scale_note(y.scale)
    );
}

pub(crate) fn scale_note(s: Scale) -> &'static str {
    match s {
        Scale::Log | Scale::Log2 => " (log)",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legends_keep_both_ends_of_a_long_label() {
        let t = truncate_middle("iolab-20261126T085823Z-a", 22);
        assert_eq!(t.chars().count(), 22);
        assert!(
            t.starts_with("iolab-2026") && t.ends_with("085823Z-a"),
            "{t}"
        );
        assert_eq!(truncate_middle("short", 22), "short");
        let mut out = String::new();
        legend(
            &mut out,
            &[("iolab-20261126T085823Z-a".into(), 0, false, false)],
        );
        assert!(
            out.contains("<title>iolab-20261126T085823Z-a</title>"),
            "{out}"
        );
    }

    #[test]
    fn log_axis_ticks_are_decades() {
        let m = map_axis(Scale::Log, &[3.0, 30_000.0], false);
        assert_eq!(m.lo, 0.0);
        assert_eq!(m.hi, 5.0);
        assert_eq!(m.ticks.len(), 6);
    }

    #[test]
    fn nines_axis_reaches_the_data() {
        let m = map_axis(Scale::Nines, &[50.0, 99.99], false);
        assert!(m.hi >= 4.0);
        assert!(m.ticks.iter().any(|t| (*t - 99.99).abs() < 1e-9));
    }

    #[test]
    fn auto_scale_picks_log_for_decades() {
        assert_eq!(auto_scale([1.0, 1000.0].into_iter()), Scale::Log);
        assert_eq!(auto_scale([10.0, 90.0].into_iter()), Scale::Linear);
        assert_eq!(auto_scale([0.0, 1000.0].into_iter()), Scale::Linear);
    }
}
