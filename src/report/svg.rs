//! Hand-written SVG charts: line/scatter charts with linear, log and
//! "nines" axes, stacked bars and heat maps. Output is deterministic (fixed
//! number formatting, no randomness, no clock) so it can be snapshot-tested,
//! and needs no JavaScript: every data point carries a `<title>` for hover.

use std::fmt::Write as _;

/// Chart size in SVG user units (scaled to the page width by CSS).
const W: f64 = 760.0;
const H: f64 = 380.0;
const ML: f64 = 78.0;
const MR: f64 = 170.0;
const MT: f64 = 34.0;
const MB: f64 = 52.0;

/// A colour-blind-friendly palette (Okabe-Ito plus two).
pub const PALETTE: [&str; 10] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#8C564B",
    "#7F7F7F", "#B8860B",
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
}

impl Axis {
    pub fn new(title: &str, scale: Scale, fmt: fn(f64) -> String) -> Axis {
        Axis {
            title: title.into(),
            scale,
            fmt,
        }
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
fn n(v: f64) -> String {
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

fn fwd(scale: Scale, v: f64) -> f64 {
    match scale {
        Scale::Linear => v,
        Scale::Log | Scale::Log2 => v.max(1e-300).log10(),
        Scale::Nines => -(1.0 - (v / 100.0).min(0.999_999_9)).log10(),
    }
}

/// Data range on one axis after the transform, with ticks (value, label).
struct Mapped {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
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

fn map_axis(scale: Scale, vals: &[f64], include_zero: bool) -> Mapped {
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

fn to_px(m: &Mapped, scale: Scale, v: f64, a: f64, b: f64) -> f64 {
    let t = fwd(scale, v);
    let f = if m.hi > m.lo {
        (t - m.lo) / (m.hi - m.lo)
    } else {
        0.5
    };
    a + f.clamp(-0.02, 1.02) * (b - a)
}

fn svg_open(out: &mut String, title: &str, npoints: usize, w: f64, h: f64) {
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {} {}" role="img" aria-label="{}" data-points="{}" font-family="sans-serif" font-size="12">"#,
        n(w),
        n(h),
        esc(title),
        npoints
    );
    let _ = write!(
        out,
        r##"<rect x="0" y="0" width="{}" height="{}" fill="#fff"/><text x="{}" y="20" font-size="15" font-weight="bold">{}</text>"##,
        n(w),
        n(h),
        n(ML),
        esc(title)
    );
}

fn legend(out: &mut String, items: &[(String, usize, bool, bool)]) {
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
                n(x0 + 22.0),
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
            r#"<text x="{}" y="{}" font-size="11">{}</text>"#,
            n(x0 + 28.0),
            n(y + 4.0),
            esc(&truncate(label, 22))
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

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let t: String = s.chars().take(max - 1).collect();
        format!("{t}…")
    }
}

fn axes(out: &mut String, x: &Axis, xm: &Mapped, y: &Axis, ym: &Mapped) {
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
            n(y0 + 16.0),
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

fn scale_note(s: Scale) -> &'static str {
    match s {
        Scale::Log | Scale::Log2 => " (log)",
        _ => "",
    }
}

/// Render a line chart.
pub fn line_chart(c: &LineChart) -> String {
    let xs: Vec<f64> = c
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .chain(c.shade.iter().flat_map(|s| [s.0, s.1]))
        .collect();
    let ys: Vec<f64> = c
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .chain(c.hlines.iter().map(|h| h.0))
        .collect();
    let xm = map_axis(c.x.scale, &xs, false);
    let ym = map_axis(c.y.scale, &ys, true);
    let npoints: usize = c.series.iter().map(|s| s.points.len()).sum();
    let mut out = String::new();
    svg_open(&mut out, &c.title, npoints, W, H);
    let (x0, x1, y0, y1) = (ML, W - MR, H - MB, MT);
    if let Some((a, b, label)) = &c.shade {
        let pa = to_px(&xm, c.x.scale, *a, x0, x1);
        let pb = to_px(&xm, c.x.scale, *b, x0, x1);
        let _ = write!(
            out,
            r##"<rect x="{}" y="{}" width="{}" height="{}" fill="#eee" class="shade"><title>{}</title></rect><text x="{}" y="{}" font-size="10" fill="#777">{}</text>"##,
            n(pa.min(pb)),
            n(y1),
            n((pb - pa).abs()),
            n(y0 - y1),
            esc(label),
            n(pa.min(pb) + 3.0),
            n(y1 + 12.0),
            esc(label)
        );
    }
    axes(&mut out, &c.x, &xm, &c.y, &ym);
    for (v, label) in &c.hlines {
        let py = to_px(&ym, c.y.scale, *v, y0, y1);
        let _ = write!(
            out,
            r##"<line x1="{}" y1="{py}" x2="{}" y2="{py}" stroke="#999" stroke-dasharray="2 3"/><text x="{}" y="{}" font-size="10" fill="#666" text-anchor="end">{}</text>"##,
            n(x0),
            n(x1),
            n(x1 - 3.0),
            n(py - 3.0),
            esc(label),
            py = n(py)
        );
    }
    for s in &c.series {
        let col = PALETTE[s.color % PALETTE.len()];
        let pts: Vec<(f64, f64, &str)> = s
            .points
            .iter()
            .map(|(x, y, t)| {
                (
                    to_px(&xm, c.x.scale, *x, x0, x1),
                    to_px(&ym, c.y.scale, *y, y0, y1),
                    t.as_str(),
                )
            })
            .collect();
        let _ = write!(out, r#"<g class="series" data-label="{}">"#, esc(&s.label));
        if s.line && pts.len() > 1 {
            let d: Vec<String> = pts
                .iter()
                .map(|(x, y, _)| format!("{},{}", n(*x), n(*y)))
                .collect();
            let _ = write!(
                out,
                r#"<polyline fill="none" stroke="{col}" stroke-width="2"{} points="{}"/>"#,
                if s.dashed {
                    r#" stroke-dasharray="6 4""#
                } else {
                    ""
                },
                d.join(" ")
            );
        }
        let r = if pts.len() > 120 { 1.5 } else { 3.5 };
        for (x, y, t) in &pts {
            let _ = write!(
                out,
                r#"<circle class="pt" cx="{}" cy="{}" r="{r}" fill="{col}"><title>{}</title></circle>"#,
                n(*x),
                n(*y),
                esc(t)
            );
        }
        out.push_str("</g>");
    }
    for (x, y, label) in &c.marks {
        let px = to_px(&xm, c.x.scale, *x, x0, x1);
        let py = to_px(&ym, c.y.scale, *y, y0, y1);
        let _ = write!(
            out,
            r##"<g class="mark"><circle cx="{}" cy="{}" r="8" fill="none" stroke="#c00" stroke-width="2"><title>{}</title></circle><text x="{}" y="{}" fill="#c00" font-size="11">{}</text></g>"##,
            n(px),
            n(py),
            esc(label),
            n(px + 10.0),
            n(py - 10.0),
            esc(label)
        );
    }
    let items: Vec<(String, usize, bool, bool)> = c
        .series
        .iter()
        .map(|s| (s.label.clone(), s.color, s.dashed, true))
        .collect();
    legend(&mut out, &items);
    out.push_str("</svg>");
    out
}

/// Stacked bars: one bar per category, one segment per stack.
#[derive(Debug, Clone)]
pub struct BarChart {
    pub title: String,
    pub y_title: String,
    pub y_fmt: fn(f64) -> String,
    pub categories: Vec<String>,
    /// (label, value per category)
    pub stacks: Vec<(String, Vec<f64>)>,
    /// Stack segments on top of each other (true) or side by side (false).
    pub stacked: bool,
}

pub fn bar_chart(c: &BarChart) -> String {
    let ncat = c.categories.len().max(1);
    let nst = c.stacks.len().max(1);
    let totals: Vec<f64> = (0..ncat)
        .map(|i| {
            if c.stacked {
                c.stacks
                    .iter()
                    .map(|s| s.1.get(i).copied().unwrap_or(0.0).max(0.0))
                    .sum()
            } else {
                c.stacks
                    .iter()
                    .map(|s| s.1.get(i).copied().unwrap_or(0.0))
                    .fold(0.0, f64::max)
            }
        })
        .collect();
    let ym = map_axis(Scale::Linear, &totals, true);
    let yaxis = Axis::new(&c.y_title, Scale::Linear, c.y_fmt);
    let nonzero = c
        .stacks
        .iter()
        .map(|s| s.1.iter().filter(|v| **v > 0.0).count())
        .sum::<usize>();
    let mut out = String::new();
    // Long category labels are rotated; leave room.
    let rot = c.categories.iter().any(|l| l.chars().count() > 8) || ncat > 10;
    let h = if rot { H + 90.0 } else { H };
    svg_open(&mut out, &c.title, nonzero, W, h);
    let (x0, x1, y0, y1) = (ML, W - MR, H - MB, MT);
    for &t in &ym.ticks {
        let py = to_px(&ym, Scale::Linear, t, y0, y1);
        let _ = write!(
            out,
            r##"<line x1="{}" y1="{py}" x2="{}" y2="{py}" stroke="#e3e3e3"/><text x="{}" y="{}" text-anchor="end">{}</text>"##,
            n(x0),
            n(x1),
            n(x0 - 6.0),
            n(py + 4.0),
            esc(&(yaxis.fmt)(t)),
            py = n(py)
        );
    }
    let slot = (x1 - x0) / ncat as f64;
    let bw = slot * 0.7;
    for (i, cat) in c.categories.iter().enumerate() {
        let cx = x0 + slot * (i as f64 + 0.5);
        let mut base = 0.0;
        for (si, (label, vals)) in c.stacks.iter().enumerate() {
            let v = vals.get(i).copied().unwrap_or(0.0).max(0.0);
            if v <= 0.0 {
                continue;
            }
            let (lo, hi, bx, w) = if c.stacked {
                (base, base + v, cx - bw / 2.0, bw)
            } else {
                let w = bw / nst as f64;
                (0.0, v, cx - bw / 2.0 + w * si as f64, w)
            };
            let pa = to_px(&ym, Scale::Linear, lo, y0, y1);
            let pb = to_px(&ym, Scale::Linear, hi, y0, y1);
            let _ = write!(
                out,
                r#"<rect class="pt" x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{}: {} {}</title></rect>"#,
                n(bx),
                n(pb),
                n(w.max(1.0)),
                n((pa - pb).max(0.5)),
                PALETTE[si % PALETTE.len()],
                esc(cat),
                esc(label),
                esc(&(c.y_fmt)(v))
            );
            if c.stacked {
                base += v;
            }
        }
        if rot {
            let _ = write!(
                out,
                r#"<text transform="translate({} {}) rotate(-40)" text-anchor="end" font-size="10">{}</text>"#,
                n(cx + 3.0),
                n(y0 + 12.0),
                esc(&truncate(cat, 28))
            );
        } else {
            let _ = write!(
                out,
                r#"<text x="{}" y="{}" text-anchor="middle" font-size="11">{}</text>"#,
                n(cx),
                n(y0 + 16.0),
                esc(cat)
            );
        }
    }
    let _ = write!(
        out,
        r##"<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#555"/><text transform="translate(16 {}) rotate(-90)" text-anchor="middle" font-size="13">{}</text>"##,
        n(x0),
        n(y1),
        n(x1 - x0),
        n(y0 - y1),
        n((y0 + y1) / 2.0),
        esc(&c.y_title)
    );
    let items: Vec<(String, usize, bool, bool)> = c
        .stacks
        .iter()
        .enumerate()
        .map(|(i, s)| (s.0.clone(), i, false, false))
        .collect();
    legend(&mut out, &items);
    out.push_str("</svg>");
    out
}

/// A heat map: rows x columns of optional values, colour by value (log if the
/// values span decades), the value printed in each cell.
#[derive(Debug, Clone)]
pub struct HeatMap {
    pub title: String,
    pub x_title: String,
    pub y_title: String,
    pub cols: Vec<String>,
    pub rows: Vec<String>,
    pub values: Vec<Vec<Option<f64>>>,
    pub fmt: fn(f64) -> String,
    pub unit: String,
}

fn heat_color(f: f64) -> String {
    // light yellow -> dark blue
    let (a, b) = ((255.0, 247.0, 188.0), (8.0, 64.0, 129.0));
    let f = f.clamp(0.0, 1.0);
    format!(
        "rgb({},{},{})",
        (a.0 + (b.0 - a.0) * f) as u8,
        (a.1 + (b.1 - a.1) * f) as u8,
        (a.2 + (b.2 - a.2) * f) as u8
    )
}

pub fn heat_map(c: &HeatMap) -> String {
    let all: Vec<f64> = c.values.iter().flatten().flatten().copied().collect();
    let scale = auto_scale(all.iter().copied());
    let (lo, hi) = all
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |a, &v| {
            (a.0.min(fwd(scale, v)), a.1.max(fwd(scale, v)))
        });
    let mut out = String::new();
    svg_open(&mut out, &c.title, all.len(), W, H);
    let (x0, x1, y0, y1) = (ML + 20.0, W - MR, H - MB, MT);
    let cw = (x1 - x0) / c.cols.len().max(1) as f64;
    let rh = (y0 - y1) / c.rows.len().max(1) as f64;
    for (ri, row) in c.rows.iter().enumerate() {
        let y = y1 + rh * ri as f64;
        let _ = write!(
            out,
            r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
            n(x0 - 6.0),
            n(y + rh / 2.0 + 4.0),
            esc(row)
        );
        for (ci, col) in c.cols.iter().enumerate() {
            let x = x0 + cw * ci as f64;
            if let Some(v) = c.values.get(ri).and_then(|r| r.get(ci)).copied().flatten() {
                let f = if hi > lo {
                    (fwd(scale, v) - lo) / (hi - lo)
                } else {
                    0.5
                };
                let _ = write!(
                    out,
                    r##"<rect class="pt" x="{}" y="{}" width="{}" height="{}" fill="{}" stroke="#fff"><title>{} {}, {} {}: {} {}</title></rect><text x="{}" y="{}" text-anchor="middle" font-size="11" fill="{}">{}</text>"##,
                    n(x),
                    n(y),
                    n(cw),
                    n(rh),
                    heat_color(f),
                    esc(&c.y_title),
                    esc(row),
                    esc(&c.x_title),
                    esc(col),
                    esc(&(c.fmt)(v)),
                    esc(&c.unit),
                    n(x + cw / 2.0),
                    n(y + rh / 2.0 + 4.0),
                    if f > 0.55 { "#fff" } else { "#000" },
                    esc(&(c.fmt)(v))
                );
            }
        }
    }
    for (ci, col) in c.cols.iter().enumerate() {
        let _ = write!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            n(x0 + cw * (ci as f64 + 0.5)),
            n(y0 + 16.0),
            esc(col)
        );
    }
    let _ = write!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle" font-size="13">{}</text><text transform="translate(16 {}) rotate(-90)" text-anchor="middle" font-size="13">{}</text>"#,
        n((x0 + x1) / 2.0),
        n(H - 12.0),
        esc(&c.x_title),
        n((y0 + y1) / 2.0),
        esc(&c.y_title)
    );
    let _ = write!(
        out,
        r#"<text x="{}" y="{}" font-size="11">colour: {}{}</text>"#,
        n(W - MR + 14.0),
        n(MT + 10.0),
        esc(&c.unit),
        scale_note(scale)
    );
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(v: f64) -> String {
        format!("{v}")
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

    #[test]
    fn line_chart_has_points_and_escapes() {
        let c = LineChart {
            title: "a<b".into(),
            x: Axis::new("x", Scale::Linear, fmt),
            y: Axis::new("y", Scale::Log, fmt),
            series: vec![Series {
                label: "s&1".into(),
                points: vec![(1.0, 10.0, "p1".into()), (2.0, 1000.0, "p2".into())],
                dashed: true,
                color: 0,
                line: true,
            }],
            shade: Some((0.0, 0.5, "ramp".into())),
            marks: vec![(2.0, 1000.0, "knee".into())],
            hlines: vec![],
        };
        let s = line_chart(&c);
        assert!(s.contains(r#"data-points="2""#));
        assert_eq!(s.matches(r#"class="pt""#).count(), 2);
        assert!(s.contains("a&lt;b") && s.contains("s&amp;1"));
        assert!(s.contains("stroke-dasharray"));
        assert_eq!(s, line_chart(&c), "deterministic");
    }

    #[test]
    fn bars_and_heat_map_render() {
        let b = bar_chart(&BarChart {
            title: "cpu".into(),
            y_title: "%".into(),
            y_fmt: fmt,
            categories: vec!["a".into(), "b".into()],
            stacks: vec![
                ("usr".into(), vec![1.0, 2.0]),
                ("sys".into(), vec![3.0, 0.0]),
            ],
            stacked: true,
        });
        assert_eq!(b.matches(r#"class="pt""#).count(), 3);
        let h = heat_map(&HeatMap {
            title: "h".into(),
            x_title: "mix".into(),
            y_title: "bs".into(),
            cols: vec!["100".into(), "0".into()],
            rows: vec!["4k".into()],
            values: vec![vec![Some(1.0), None]],
            fmt,
            unit: "IOPS".into(),
        });
        assert_eq!(h.matches(r#"class="pt""#).count(), 1);
    }
}
