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

/// The font size of axis names and labels (the `tick` class).
const FONT: f64 = 10.0;
/// Rows between two labels at the right.
const ROW: f64 = 11.0;

/// A name broken into lines of at most `chars` characters, after a `:`, `.` or `_` where it
/// can (each line keeps its separator), else anywhere.
fn wrap(name: &str, chars: usize) -> Vec<String> {
    let chars = chars.max(4);
    let mut lines = Vec::new();
    let mut rest: Vec<char> = name.chars().collect();
    while rest.len() > chars {
        let cut = (1..=chars).rev().find(|&k| matches!(rest[k - 1], ':' | '.' | '_')).unwrap_or(chars);
        lines.push(rest[..cut].iter().collect());
        rest = rest[cut..].to_vec();
    }
    lines.push(rest.into_iter().collect());
    lines
}

/// The chart: what left the race in grey, the front in colour with its labels at the right
/// (spread so that none overlaps another, a leader to its line's end when moved), the file's
/// own values dashed. Axis names wrap to the room between two axes.
pub fn parallel_chart(title: &str, axes: &[ParallelAxis], labels: &[String], kinds: &[PointKind]) -> String {
    let mut svg = String::new();
    open(&mut svg, title);
    let n = axes.len().max(2);
    let x = |k: usize| LEFT + (WIDTH - LEFT - RIGHT) * k as f64 / (n - 1) as f64;
    let spacing = (WIDTH - LEFT - RIGHT) / (n - 1) as f64;
    // A middle name is centred on its axis, an outer one starts 14 px outside it: lines of at
    // most w px keep neighbours apart when w - 14 + w / 2 + 4 <= spacing.
    let per_line = (((spacing + 10.0) / 1.5 - 2.0) / (FONT * 0.62)).floor() as usize;
    let names: Vec<Vec<String>> = axes.iter().map(|a| wrap(a.label, per_line)).collect();
    let name_lines = names.iter().map(Vec::len).max().unwrap_or(1) as f64;
    let (top, bottom) = (TOP + 8.0 + ROW * name_lines + 12.0, HEIGHT - BOTTOM);
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
    for (k, lines) in names.iter().enumerate() {
        // The outer names grow inwards so that they stay on the chart.
        let (anchor, name_x) = match k {
            0 => ("start", x(k) - 14.0),
            k if k + 1 == axes.len() => ("end", x(k) + 14.0),
            _ => ("middle", x(k)),
        };
        let _ = write!(
            svg,
            r#"<line x1="{0:.1}" y1="{top:.1}" x2="{0:.1}" y2="{bottom:.1}" class="axis"/><text x="{0:.1}" y="{1:.1}" class="tick" text-anchor="middle">{2}</text><text x="{0:.1}" y="{3:.1}" class="tick" text-anchor="middle">{4}</text>"#,
            x(k),
            top - 4.0,
            label(ends[k].0),
            bottom + 11.0,
            label(ends[k].1)
        );
        for (row, line) in lines.iter().enumerate() {
            let _ = write!(
                svg,
                r#"<text x="{name_x:.1}" y="{:.1}" class="tick axis-name" text-anchor="{anchor}">{}</text>"#,
                TOP + 6.0 + ROW * row as f64,
                escape(line)
            );
        }
    }
    let mut order: Vec<usize> = (0..labels.len()).collect();
    order.sort_by_key(|&i| match kinds[i] {
        PointKind::Left => 0,
        PointKind::Front => 1,
        PointKind::Current => 2,
    });
    let last = axes.len().saturating_sub(1);
    // Labels at the right: one per height (candidates that end at one value share it).
    let mut ends_at: Vec<(f64, Vec<&str>)> = Vec::new();
    for &i in &order {
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
        let values: Vec<String> = axes.iter().map(|a| format!("{} {}", a.label, label(a.means[i]))).collect();
        let _ = write!(
            svg,
            r#"<polyline points="{}" fill="none" {style}><title>{}: {}</title></polyline>"#,
            points.join(" "),
            escape(&labels[i]),
            escape(&values.join(", "))
        );
        if kinds[i] != PointKind::Left && axes.get(last).is_some_and(|a| a.means[i].is_finite()) {
            let at = y(last, axes[last].means[i]);
            match ends_at.iter_mut().find(|(y, _)| (y - at).abs() < 1.0) {
                Some((_, names)) => names.push(&labels[i]),
                None => ends_at.push((at, vec![&labels[i]])),
            }
        }
    }
    right_labels(&mut svg, x(last), top, bottom, ends_at);
    let _ = write!(
        svg,
        r##"<text x="{LEFT}" y="{:.1}" class="legend">better is up on every axis; blue: the front, dashed orange: the current values, grey: left the race</text></svg>"##,
        HEIGHT - 12.0
    );
    svg
}

/// The labels at the right of the last axis, from top to bottom at least a row apart: each as
/// near its line's end as the others let it, with a leader when moved. When more labels than
/// rows, the names a row holds beyond the first two are counted ("#3 #4 +2").
fn right_labels(svg: &mut String, axis_x: f64, top: f64, bottom: f64, mut ends: Vec<(f64, Vec<&str>)>) {
    ends.sort_by(|a, b| a.0.total_cmp(&b.0));
    let rows = (((bottom - top + 6.0) / ROW).floor() as usize).max(1);
    // Too many heights: neighbours merge, nearest first, until they fit.
    while ends.len() > rows {
        let k = (1..ends.len())
            .min_by(|&a, &b| (ends[a].0 - ends[a - 1].0).total_cmp(&(ends[b].0 - ends[b - 1].0)))
            .expect("two labels at least");
        let (_, names) = ends.remove(k);
        ends[k - 1].1.extend(names);
    }
    let wanted: Vec<f64> = ends.iter().map(|e| e.0 + 3.0).collect();
    let mut placed = wanted.clone();
    // Down from the top, each at least a row below the one before; then up from the bottom.
    for k in 0..placed.len() {
        let floor = if k == 0 { top } else { placed[k - 1] + ROW };
        placed[k] = placed[k].max(floor);
    }
    for k in (0..placed.len()).rev() {
        let ceiling = if k + 1 == placed.len() { bottom + 3.0 } else { placed[k + 1] - ROW };
        placed[k] = placed[k].min(ceiling);
    }
    let x = axis_x + 26.0;
    for (k, (at, names)) in ends.iter().enumerate() {
        let text = match names.as_slice() {
            [one] => one.to_string(),
            [a, b] => format!("{a} {b}"),
            [a, b, rest @ ..] => format!("{a} {b} +{}", rest.len()),
            [] => continue,
        };
        if (placed[k] - wanted[k]).abs() > 1.0 {
            let _ = write!(
                svg,
                r##"<line x1="{:.1}" y1="{at:.1}" x2="{:.1}" y2="{:.1}" stroke="#999" stroke-width="0.6"/>"##,
                axis_x + 3.0,
                x - 2.0,
                placed[k] - 3.0
            );
        }
        let _ = write!(
            svg,
            r#"<text x="{x:.1}" y="{:.1}" class="tick point-label">{}<title>{}</title></text>"#,
            placed[k],
            escape(&text),
            escape(&names.join(", "))
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three rows fit between `top` and `bottom` (a label may sit up to 6 px past the frame):
    /// four labels at distinct heights merge their two nearest into one row, the others stay.
    #[test]
    fn labels_beyond_the_rows_that_fit_merge_nearest_first() {
        let (top, bottom) = (0.0, 3.0 * ROW - 6.0);
        let ends = vec![(0.0, vec!["#0"]), (10.0, vec!["#1"]), (11.0, vec!["#2"]), (30.0, vec!["#3"])];
        let mut svg = String::new();
        right_labels(&mut svg, 100.0, top, bottom, ends);
        // Each label's visible text: from its tag's end to its tooltip.
        let texts: Vec<&str> = svg
            .split("<text")
            .skip(1)
            .map(|t| {
                let shown = &t[t.find('>').unwrap() + 1..];
                &shown[..shown.find('<').unwrap()]
            })
            .collect();
        assert_eq!(texts, vec!["#0", "#1 #2", "#3"], "{svg}");
    }

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
        let (top, bottom) = (TOP + 31.0, HEIGHT - BOTTOM);
        assert_eq!(zero[0], top, "the largest of a max: axis is at the top");
        assert_eq!(zero[1], bottom, "the largest of a min: axis is at the bottom");
        assert_eq!(one[0], bottom);
        assert_eq!(one[1], top);
        assert_eq!(grey[0], (top + bottom) / 2.0);
        assert_eq!(zero[2], (top + bottom) / 2.0, "a constant axis puts everyone in the middle");
        // #0 and #1 end at one height (min:c is constant): one label names both; #2 left the race.
        assert!(svg.contains(">#0 #1<title>#0, #1</title></text>") && !svg.contains(">#2<"), "{svg}");
        assert_eq!(svg.matches("class=\"axis\"").count(), 3);
    }
}
