//! Line charts: series of points with hover titles, dashed writes, a
//! shaded x-range, marked points and horizontal reference lines.

use std::fmt::Write as _;

use super::*;

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
    let ym = map_axis(c.y.scale, &capped(ys, c.y.max), true);
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
        // In the right half the label goes left of the mark, off the legend.
        let (tx, anchor) = if px > (x0 + x1) / 2.0 {
            (px - 10.0, "end")
        } else {
            (px + 10.0, "start")
        };
        // On the chart only the label's head ("knee ~12,345 IOPS"), on a
        // white halo: the whole sentence crossed the curves (it is in the
        // circle's tooltip and the section's note).
        let head = label.split(" (").next().unwrap_or(label);
        let _ = write!(
            out,
            r##"<g class="mark"><circle cx="{}" cy="{}" r="8" fill="none" stroke="#c00" stroke-width="2"><title>{}</title></circle><text x="{}" y="{}" fill="#c00" font-size="11" text-anchor="{anchor}" stroke="#fff" stroke-width="3" paint-order="stroke">{}</text></g>"##,
            n(px),
            n(py),
            esc(label),
            n(tx),
            n(py - 10.0),
            esc(head)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(v: f64) -> String {
        format!("{v}")
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
}
