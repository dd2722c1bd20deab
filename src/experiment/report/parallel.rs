//! Parallel coordinates for a tune of three objectives or more: one vertical axis per
//! objective, turned so that better is up on every one, and one line per candidate through
//! its means. A front candidate's line stays high where it is strong and dips where it pays
//! for it; lines that cross are trade-offs, lines that never cross are dominated.

use super::svg::{BOTTOM, HEIGHT, LEFT, PointKind, RIGHT, TOP, WIDTH, bounds, colour, label, open};
use super::xml::escape;
use std::fmt::Write;

/// One objective: its name, whether larger is better, and every candidate's mean.
pub struct ParallelAxis<'a> {
    pub label: &'a str,
    pub larger_is_better: bool,
    pub means: Vec<f64>,
}

/// The chart: what left the race in grey, the front in colour with its labels at the right,
/// the file's own values dashed.
pub fn parallel_chart(title: &str, axes: &[ParallelAxis], labels: &[String], kinds: &[PointKind]) -> String {
    let mut svg = String::new();
    open(&mut svg, title);
    let n = axes.len().max(2);
    let x = |k: usize| LEFT + (WIDTH - LEFT - RIGHT) * k as f64 / (n - 1) as f64;
    let (top, bottom) = (TOP + 28.0, HEIGHT - BOTTOM);
    // Per axis: the value at the top (the best) and at the bottom (the worst).
    let ends: Vec<(f64, f64)> = axes
        .iter()
        .map(|a| {
            let (low, high) = bounds(a.means.iter().copied()).unwrap_or((0.0, 1.0));
            if a.larger_is_better { (high, low) } else { (low, high) }
        })
        .collect();
    let y = |k: usize, v: f64| {
        let (best, worst) = ends[k];
        if best == worst { (top + bottom) / 2.0 } else { top + (bottom - top) * (best - v) / (best - worst) }
    };
    for (k, a) in axes.iter().enumerate() {
        // Names alternate between two rows so that neighbours do not overlap; the outer ones
        // grow inwards so that they stay on the chart.
        let row = if k % 2 == 0 { TOP + 4.0 } else { TOP + 15.0 };
        let (anchor, name_x) = match k {
            0 => ("start", x(k) - 20.0),
            k if k + 1 == axes.len() => ("end", x(k) + 20.0),
            _ => ("middle", x(k)),
        };
        let _ = write!(
            svg,
            r#"<line x1="{0:.1}" y1="{top:.1}" x2="{0:.1}" y2="{bottom:.1}" class="axis"/><text x="{name_x:.1}" y="{row:.1}" class="tick" text-anchor="{anchor}">{1}</text><text x="{0:.1}" y="{2:.1}" class="tick" text-anchor="middle">{3}</text><text x="{0:.1}" y="{4:.1}" class="tick" text-anchor="middle">{5}</text>"#,
            x(k),
            escape(a.label),
            top - 3.0,
            label(ends[k].0),
            bottom + 11.0,
            label(ends[k].1)
        );
    }
    let mut order: Vec<usize> = (0..labels.len()).collect();
    order.sort_by_key(|&i| match kinds[i] {
        PointKind::Left => 0,
        PointKind::Front => 1,
        PointKind::Current => 2,
    });
    for i in order {
        let points: Vec<String> = axes
            .iter()
            .enumerate()
            .filter(|(_, a)| a.means[i].is_finite())
            .map(|(k, a)| format!("{:.1},{:.1}", x(k), y(k, a.means[i])))
            .collect();
        let style = match kinds[i] {
            PointKind::Left => r##"stroke="#cccccc" stroke-width="1""##.to_string(),
            PointKind::Front => format!(r#"stroke="{}" stroke-width="1.8""#, colour(0)),
            PointKind::Current => format!(r#"stroke="{}" stroke-width="2" stroke-dasharray="5 3""#, colour(1)),
        };
        let _ = write!(
            svg,
            r#"<polyline points="{}" fill="none" {style}><title>{}</title></polyline>"#,
            points.join(" "),
            escape(&labels[i])
        );
        let last = axes.len() - 1;
        if kinds[i] != PointKind::Left && axes[last].means[i].is_finite() {
            let _ = write!(
                svg,
                r#"<text x="{:.1}" y="{:.1}" class="tick">{}</text>"#,
                x(last) + 26.0,
                y(last, axes[last].means[i]) + 3.0,
                escape(&labels[i])
            );
        }
    }
    let _ = write!(
        svg,
        r##"<text x="{LEFT}" y="{:.1}" class="legend">better is up on every axis; blue: the front, dashed orange: the current values, grey: left the race</text></svg>"##,
        HEIGHT - 12.0
    );
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Better is up whatever the direction: the best candidate of a `min:` axis is at the top.
    #[test]
    fn each_axis_puts_the_better_end_up() {
        let axes = [
            ParallelAxis { label: "max:a", larger_is_better: true, means: vec![1.0, 0.0, 0.5] },
            ParallelAxis { label: "min:b", larger_is_better: false, means: vec![10.0, 0.0, 5.0] },
            ParallelAxis { label: "min:c", larger_is_better: false, means: vec![3.0, 3.0, 3.0] },
        ];
        let labels = vec!["#0".to_string(), "#1".to_string(), "#2".to_string()];
        let svg = parallel_chart("t", &axes, &labels, &[PointKind::Front, PointKind::Front, PointKind::Left]);
        let lines: Vec<&str> = svg.split("<polyline points=\"").skip(1).map(|s| s.split('"').next().unwrap()).collect();
        assert_eq!(lines.len(), 3);
        let ys = |line: &str| -> Vec<f64> {
            line.split(' ').map(|p| p.split(',').nth(1).unwrap().parse().unwrap()).collect()
        };
        // Grey first, then the front in order: #2, #0, #1.
        let (grey, zero, one) = (ys(lines[0]), ys(lines[1]), ys(lines[2]));
        let (top, bottom) = (TOP + 28.0, HEIGHT - BOTTOM);
        assert_eq!(zero[0], top, "the largest of a max: axis is at the top");
        assert_eq!(zero[1], bottom, "the largest of a min: axis is at the bottom");
        assert_eq!(one[0], bottom);
        assert_eq!(one[1], top);
        assert_eq!(grey[0], (top + bottom) / 2.0);
        assert_eq!(zero[2], (top + bottom) / 2.0, "a constant axis puts everyone in the middle");
        assert!(svg.contains(">#0</text>") && svg.contains(">#1</text>") && !svg.contains(">#2</text>"), "{svg}");
        assert_eq!(svg.matches("class=\"axis\"").count(), 3);
    }
}
