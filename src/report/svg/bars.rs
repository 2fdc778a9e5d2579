//! Bar charts (stacked or side by side) and heat maps.

use std::fmt::Write as _;

use super::*;

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

/// What a grouped bar chart of ratios adds to its bars: the range of
/// each bar as a whisker, a mark on some bars (a ratio not told apart from
/// the reference), a hover text per bar, and a reference line (1.0 = as
/// fast as the baseline). Indexed [stack][category], like the values.
#[derive(Debug, Clone, Default)]
pub struct BarOverlay {
    pub ranges: Vec<Vec<Option<(f64, f64)>>>,
    pub marked: Vec<Vec<bool>>,
    /// The mark's hover text.
    pub mark_title: String,
    pub titles: Vec<Vec<Option<String>>>,
    pub reference: Option<(f64, String)>,
    /// The most a bar can reach (a share of all CPUs: 100): the axis ends
    /// there at most.
    pub y_max: Option<f64>,
}

impl BarOverlay {
    fn range(&self, stack: usize, cat: usize) -> Option<(f64, f64)> {
        *self.ranges.get(stack)?.get(cat)?
    }

    fn marked(&self, stack: usize, cat: usize) -> bool {
        self.marked
            .get(stack)
            .and_then(|m| m.get(cat))
            .copied()
            .unwrap_or(false)
    }

    fn title(&self, stack: usize, cat: usize) -> Option<&str> {
        self.titles.get(stack)?.get(cat)?.as_deref()
    }
}

pub fn bar_chart(c: &BarChart) -> String {
    bar_chart_with(c, &BarOverlay::default())
}

/// A whisker from `lo` to `hi` over the bar at `bx` of width `w`, and the
/// mark above it.
fn whisker(out: &mut String, ym: &Mapped, bx: f64, w: f64, range: (f64, f64), mark: Option<&str>) {
    let (y0, y1) = (H - MB, MT);
    let cx = bx + w / 2.0;
    let plo = to_px(ym, Scale::Linear, range.0, y0, y1);
    let phi = to_px(ym, Scale::Linear, range.1, y0, y1);
    let cap = (w * 0.3).clamp(2.0, 8.0);
    let _ = write!(
        out,
        r##"<path class="whisker" d="M{} {}V{}M{} {}H{}M{} {}H{}" stroke="#222" stroke-width="1.2" fill="none"/>"##,
        n(cx),
        n(plo),
        n(phi),
        n(cx - cap),
        n(plo),
        n(cx + cap),
        n(cx - cap),
        n(phi),
        n(cx + cap)
    );
    if let Some(title) = mark {
        let _ = write!(
            out,
            r##"<text class="noise-mark" x="{}" y="{}" text-anchor="middle" font-size="16" font-weight="bold" fill="#B00">~<title>{}</title></text>"##,
            n(cx),
            n(phi - 4.0),
            esc(title)
        );
    }
}

/// A bar chart with an overlay (whiskers, marks, a reference line).
pub fn bar_chart_with(c: &BarChart, o: &BarOverlay) -> String {
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
    let mut extent = totals;
    extent.extend(o.ranges.iter().flatten().flatten().map(|r| r.1));
    extent.extend(o.reference.iter().map(|r| r.0));
    let ym = map_axis(Scale::Linear, &capped(extent, o.y_max), true);
    let yaxis = Axis::new(&c.y_title, Scale::Linear, c.y_fmt);
    let nonzero = c
        .stacks
        .iter()
        .map(|s| s.1.iter().filter(|v| **v > 0.0).count())
        .sum::<usize>();
    let mut out = String::new();
    // Long category labels are rotated; leave room below for the longest
    // at its angle (10 px text, ~6 px a letter, at most 28 letters).
    let rot = c.categories.iter().any(|l| l.chars().count() > 8) || ncat > 10;
    let slot = (W - MR - ML) / ncat as f64;
    let (angle, every) = label_angle(slot);
    let longest = c
        .categories
        .iter()
        .map(|l| l.chars().count().min(28))
        .max()
        .unwrap_or(0);
    let reach = H - MB + 12.0 + longest as f64 * 6.0 * (angle as f64).to_radians().sin() + 10.0;
    let h = if rot { reach.max(H + 90.0) } else { H };
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
    let bw = (slot * 0.7).min(140.0);
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
            let title = o
                .title(si, i)
                .map(str::to_string)
                .unwrap_or_else(|| format!("{cat}: {label} {}", (c.y_fmt)(v)));
            let _ = write!(
                out,
                r#"<rect class="pt" x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{}</title></rect>"#,
                n(bx),
                n(pb),
                n(w.max(1.0)),
                n((pa - pb).max(0.5)),
                PALETTE[si % PALETTE.len()],
                esc(&title)
            );
            if let Some(range) = o.range(si, i) {
                let mark = o.marked(si, i).then_some(o.mark_title.as_str());
                whisker(&mut out, &ym, bx, w, range, mark);
            }
            if c.stacked {
                base += v;
            }
        }
        if rot && i % every == 0 {
            let _ = write!(
                out,
                r#"<text transform="translate({} {}) rotate(-{angle})" text-anchor="end" font-size="10">{}</text>"#,
                n(cx + 3.0),
                n(y0 + 12.0),
                esc(&truncate_middle(cat, 28))
            );
        } else if !rot {
            let _ = write!(
                out,
                r#"<text x="{}" y="{}" text-anchor="middle" font-size="11">{}</text>"#,
                n(cx),
                n(y0 + 16.0),
                esc(cat)
            );
        }
    }
    if let Some((v, label)) = &o.reference {
        let py = to_px(&ym, Scale::Linear, *v, y0, y1);
        let _ = write!(
            out,
            r##"<line class="reference" x1="{}" y1="{py}" x2="{}" y2="{py}" stroke="#555" stroke-dasharray="5 3"/><text x="{}" y="{}" font-size="10" fill="#555" text-anchor="end">{}</text>"##,
            n(x0),
            n(x1),
            n(x1 - 3.0),
            n(py - 3.0),
            esc(label),
            py = n(py)
        );
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

/// Rotated category labels (10 px text, about 13 px a line): the angle
/// at which neighbours `slot` px apart do not overlap (40 degrees, steeper
/// as the slots narrow; at -40 degrees 50 labels overlapped), and, past
/// vertical, every how many categories a label is drawn (each bar keeps
/// its name in its tooltip).
fn label_angle(slot: f64) -> (u32, usize) {
    const LINE: f64 = 13.0;
    if slot >= LINE {
        let deg = (LINE / slot).asin().to_degrees().ceil() as u32;
        (deg.clamp(40, 90), 1)
    } else {
        (90, (LINE / slot.max(0.1)).ceil() as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(v: f64) -> String {
        format!("{v}")
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

    #[test]
    fn an_overlay_adds_whiskers_marks_and_the_reference() {
        let c = BarChart {
            title: "ratios".into(),
            y_title: "x".into(),
            y_fmt: fmt,
            categories: vec!["w1".into(), "w2".into()],
            stacks: vec![
                ("base".into(), vec![1.0, 1.0]),
                ("other".into(), vec![1.1, 3.0]),
            ],
            stacked: false,
        };
        assert_eq!(bar_chart_with(&c, &BarOverlay::default()), bar_chart(&c));
        let o = BarOverlay {
            ranges: vec![vec![None, None], vec![Some((0.9, 1.2)), Some((2.5, 9.0))]],
            marked: vec![vec![], vec![true, false]],
            mark_title: "noise".into(),
            titles: vec![vec![], vec![Some("w1 other <1.1x>".into()), None]],
            reference: Some((1.0, "baseline".into())),
            y_max: None,
        };
        let s = bar_chart_with(&c, &o);
        assert_eq!(s.matches(r#"class="pt""#).count(), 4);
        assert_eq!(s.matches(r#"class="whisker""#).count(), 2);
        assert_eq!(s.matches(r#"class="noise-mark""#).count(), 1);
        assert!(s.contains(r#"class="reference""#) && s.contains("w1 other &lt;1.1x&gt;"));
        assert!(
            s.contains(">9<") || s.contains(">10<"),
            "the axis reaches the whisker"
        );
    }
}
