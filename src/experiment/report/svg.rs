//! Hand-written SVG charts for report.html: line charts with confidence bands and shaded time
//! windows, grouped bar charts and heat maps. Plain text out, no JavaScript, no fonts or files
//! fetched: a report opens anywhere, offline. Every chart is one `<svg class="chart">` element
//! with a `<title>` (so a test can count them and a screen reader can name them).

use super::xml::escape;
use std::fmt::Write;

pub(super) const WIDTH: f64 = 680.0;
pub(super) const HEIGHT: f64 = 260.0;
pub(super) const LEFT: f64 = 64.0;
pub(super) const RIGHT: f64 = 150.0;
pub(super) const TOP: f64 = 28.0;
pub(super) const BOTTOM: f64 = 40.0;

/// Colour-blind-safe (Okabe-Ito) colours, one per series.
const PALETTE: [&str; 8] = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"];

pub(super) fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// A number as an axis or cell label: short, no trailing zeros.
pub fn label(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    let a = v.abs();
    if a != 0.0 && !(0.001..1e6).contains(&a) {
        return format!("{v:.2e}");
    }
    let text = if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    };
    let text = if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.').to_string() } else { text };
    if text == "-0" { "0".into() } else { text }
}

/// Round tick positions covering [low, high]: steps of 1, 2 or 5 times a power of ten.
fn ticks(low: f64, high: f64, wanted: usize) -> Vec<f64> {
    if !(low.is_finite() && high.is_finite()) || high <= low {
        return vec![low];
    }
    let raw = (high - low) / wanted.max(1) as f64;
    let power = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * power).find(|s| *s >= raw).unwrap_or(10.0 * power);
    let first = (low / step).ceil() as i64;
    let last = (high / step).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

/// One line of a line chart, optionally with a band (low, high) at the same x values.
pub struct Line {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub band: Option<Vec<(f64, f64)>>,
}

/// A span of the x axis to shade, such as a fault window, with its label.
pub struct Span {
    pub from: f64,
    pub to: f64,
    pub name: String,
}

pub struct LineChart<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub lines: Vec<Line>,
    pub spans: Vec<Span>,
}

struct Frame {
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
}

impl Frame {
    fn x(&self, v: f64) -> f64 {
        LEFT + (v - self.x0) / (self.x1 - self.x0).max(f64::MIN_POSITIVE) * (WIDTH - LEFT - RIGHT)
    }
    fn y(&self, v: f64) -> f64 {
        HEIGHT - BOTTOM - (v - self.y0) / (self.y1 - self.y0).max(f64::MIN_POSITIVE) * (HEIGHT - TOP - BOTTOM)
    }
}

pub(super) fn open(svg: &mut String, title: &str) {
    let _ = write!(
        svg,
        r#"<svg class="chart" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img"><title>{}</title><text x="{LEFT}" y="17" class="title">{}</text>"#,
        escape(title),
        escape(title)
    );
}

/// Round y ticks over the frame, labelled with their values.
fn value_ticks(f: &Frame) -> Vec<(f64, String)> {
    ticks(f.y0, f.y1, 5).into_iter().map(|t| (t, label(t))).collect()
}

fn axes(svg: &mut String, f: &Frame, x_label: &str, y_label: &str, x_ticks: &[f64]) {
    axes_with(svg, f, x_label, y_label, x_ticks, &value_ticks(f));
}

/// The axes with y ticks given as (value, label): numbers, or the names of a chart's levels.
fn axes_with(svg: &mut String, f: &Frame, x_label: &str, y_label: &str, x_ticks: &[f64], y_ticks: &[(f64, String)]) {
    let (left, right, bottom, top) = (LEFT, WIDTH - RIGHT, HEIGHT - BOTTOM, TOP);
    for (t, text) in y_ticks {
        let y = f.y(*t);
        let _ = write!(
            svg,
            r#"<line x1="{left}" y1="{y:.1}" x2="{right}" y2="{y:.1}" class="grid"/><text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{}</text>"#,
            left - 4.0,
            y + 4.0,
            escape(text)
        );
    }
    for &t in x_ticks {
        let x = f.x(t);
        let _ = write!(
            svg,
            r#"<text x="{x:.1}" y="{:.1}" class="tick" text-anchor="middle">{}</text>"#,
            bottom + 14.0,
            label(t)
        );
    }
    let _ = write!(
        svg,
        r#"<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" class="axis"/><line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" class="axis"/><text x="{:.1}" y="{:.1}" class="axis-label" text-anchor="middle">{}</text><text x="14" y="{:.1}" class="axis-label" text-anchor="middle" transform="rotate(-90 14 {:.1})">{}</text>"#,
        (left + right) / 2.0,
        HEIGHT - 6.0,
        escape(x_label),
        (top + bottom) / 2.0,
        (top + bottom) / 2.0,
        escape(y_label)
    );
}

/// Characters of a legend line that fit right of the plot at the legend's font size.
const LEGEND_CHARS: usize = 19;

/// A legend entry's lines: the name, or a long "a / b" on two lines; a line still too long ends
/// in an ellipsis (the whole name is then the entry's tooltip).
fn legend_lines(name: &str) -> Vec<String> {
    let parts: Vec<String> = match name.split_once(" / ") {
        Some((a, b)) if name.chars().count() > LEGEND_CHARS => vec![format!("{a} /"), b.to_string()],
        _ => vec![name.to_string()],
    };
    let cut = |line: String| {
        if line.chars().count() <= LEGEND_CHARS {
            line
        } else {
            format!("{}\u{2026}", line.chars().take(LEGEND_CHARS - 1).collect::<String>())
        }
    };
    parts.into_iter().map(cut).collect()
}

/// Which colour each series takes: by its position, or a given palette slot per series (so a
/// chart of some policies can give each the colour it has in the charts of all of them).
pub enum Palette<'a> {
    ByPosition,
    Slots(&'a [usize]),
}

impl Palette<'_> {
    fn of(&self, i: usize) -> &'static str {
        match self {
            Palette::ByPosition => colour(i),
            Palette::Slots(slots) => colour(slots.get(i).copied().unwrap_or(i)),
        }
    }
}

fn legend_in(svg: &mut String, names: &[&str], palette: &Palette) {
    let x = WIDTH - RIGHT + 12.0;
    let mut y = TOP + 8.0;
    for (i, name) in names.iter().enumerate() {
        let lines = legend_lines(name);
        let _ = write!(svg, r#"<rect x="{x}" y="{:.1}" width="12" height="12" fill="{}"/>"#, y - 10.0, palette.of(i));
        if let [only] = lines.as_slice()
            && only == name
        {
            let _ = write!(svg, r#"<text x="{:.1}" y="{y:.1}" class="legend">{}</text>"#, x + 18.0, escape(name));
        } else {
            let _ =
                write!(svg, r#"<text x="{:.1}" y="{y:.1}" class="legend"><title>{}</title>"#, x + 18.0, escape(name));
            for (k, line) in lines.iter().enumerate() {
                let dy = if k == 0 { 0.0 } else { 13.0 };
                let _ = write!(svg, r#"<tspan x="{:.1}" dy="{dy}">{}</tspan>"#, x + 18.0, escape(line));
            }
            svg.push_str("</text>");
        }
        y += 18.0 + 13.0 * (lines.len() - 1) as f64;
    }
}

pub(super) fn bounds(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values.filter(|v| v.is_finite()).fold(None, |acc, v| match acc {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    })
}

/// The y axis of a line chart: from the data (from 0, or below when a value is), or fixed at
/// named levels 0, 1, 2, ... (a state or a mode), so a series that never moves still reads.
enum YAxis<'a> {
    Data,
    Levels(&'a [&'a str]),
}

pub fn line_chart(chart: &LineChart) -> String {
    draw_lines(chart, YAxis::Data, &Palette::ByPosition)
}

/// A line chart whose lines take the palette's colours.
pub fn line_chart_in(chart: &LineChart, palette: &Palette) -> String {
    draw_lines(chart, YAxis::Data, palette)
}

/// A line chart whose values are levels named by `levels` (value i is `levels[i]`): the y axis
/// always spans every level, labelled by name, with a margin so a line at the lowest or the
/// highest level stays clear of the frame.
pub fn level_chart(chart: &LineChart, levels: &[&str], palette: &Palette) -> String {
    draw_lines(chart, YAxis::Levels(levels), palette)
}

fn draw_lines(chart: &LineChart, y_axis: YAxis, palette: &Palette) -> String {
    let mut svg = String::new();
    open(&mut svg, chart.title);
    let xs = chart.lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    let ys = chart
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1).chain(l.band.iter().flatten().flat_map(|b| [b.0, b.1])));
    let (Some((x0, x1)), Some((_, y1))) = (bounds(xs), bounds(ys)) else {
        svg.push_str(r#"<text x="200" y="130" class="tick">no data</text></svg>"#);
        return svg;
    };
    let x1 = if x1 > x0 { x1 } else { x0 + 1.0 };
    let (frame, y_ticks) = match y_axis {
        YAxis::Data => {
            let y_low =
                bounds(chart.lines.iter().flat_map(|l| l.points.iter().map(|p| p.1))).map_or(0.0, |b| b.0.min(0.0));
            let frame = Frame { x0, x1, y0: y_low, y1: if y1 > y_low { y1 * 1.05 } else { y_low + 1.0 } };
            let y_ticks = value_ticks(&frame);
            (frame, y_ticks)
        }
        YAxis::Levels(levels) => {
            let top = levels.len().saturating_sub(1).max(1) as f64;
            let frame = Frame { x0, x1, y0: -0.08 * top, y1: 1.08 * top };
            (frame, levels.iter().enumerate().map(|(i, name)| (i as f64, name.to_string())).collect())
        }
    };
    for span in &chart.spans {
        let (a, b) = (frame.x(span.from.max(frame.x0)), frame.x(span.to.min(frame.x1)));
        if b > a {
            let _ = write!(
                svg,
                r#"<rect x="{a:.1}" y="{TOP}" width="{:.1}" height="{:.1}" class="span"><title>{}</title></rect>"#,
                b - a,
                HEIGHT - TOP - BOTTOM,
                escape(&span.name)
            );
        }
    }
    axes_with(&mut svg, &frame, chart.x_label, chart.y_label, &ticks(frame.x0, frame.x1, 8), &y_ticks);
    for (i, line) in chart.lines.iter().enumerate() {
        if let Some(band) = &line.band {
            let upper: Vec<String> =
                line.points.iter().zip(band).map(|(p, b)| format!("{:.1},{:.1}", frame.x(p.0), frame.y(b.1))).collect();
            let lower: Vec<String> = line
                .points
                .iter()
                .zip(band)
                .rev()
                .map(|(p, b)| format!("{:.1},{:.1}", frame.x(p.0), frame.y(b.0)))
                .collect();
            let _ = write!(
                svg,
                r#"<polygon points="{} {}" fill="{}" class="band"/>"#,
                upper.join(" "),
                lower.join(" "),
                palette.of(i)
            );
        }
        let points: Vec<String> = line
            .points
            .iter()
            .filter(|p| p.1.is_finite())
            .map(|p| format!("{:.1},{:.1}", frame.x(p.0), frame.y(p.1)))
            .collect();
        let _ = write!(svg, r#"<polyline points="{}" stroke="{}" class="line"/>"#, points.join(" "), palette.of(i));
    }
    let names: Vec<&str> = chart.lines.iter().map(|l| l.name.as_str()).collect();
    legend_in(&mut svg, &names, palette);
    svg.push_str("</svg>");
    svg
}

/// Bars per category, one bar per group (policy) side by side.
pub fn bar_chart(title: &str, y_label: &str, categories: &[String], groups: &[(String, Vec<f64>)]) -> String {
    bar_chart_in(title, y_label, categories, groups, &Palette::ByPosition)
}

/// Bars whose groups take the palette's colours.
pub fn bar_chart_in(
    title: &str,
    y_label: &str,
    categories: &[String],
    groups: &[(String, Vec<f64>)],
    palette: &Palette,
) -> String {
    let mut svg = String::new();
    open(&mut svg, title);
    let high = bounds(groups.iter().flat_map(|g| g.1.iter().copied())).map_or(1.0, |b| b.1.max(0.0));
    let frame =
        Frame { x0: 0.0, x1: categories.len().max(1) as f64, y0: 0.0, y1: if high > 0.0 { high * 1.1 } else { 1.0 } };
    axes(&mut svg, &frame, "", y_label, &[]);
    let slot = (WIDTH - LEFT - RIGHT) / categories.len().max(1) as f64;
    let bar = (slot * 0.8) / groups.len().max(1) as f64;
    for (c, category) in categories.iter().enumerate() {
        let x = LEFT + slot * c as f64;
        for (g, (name, values)) in groups.iter().enumerate() {
            let v = values.get(c).copied().unwrap_or(f64::NAN);
            if !v.is_finite() {
                continue;
            }
            let (top, base) = (frame.y(v.max(0.0)), frame.y(0.0));
            let _ = write!(
                svg,
                r#"<rect x="{:.1}" y="{top:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{} {}: {}</title></rect>"#,
                x + slot * 0.1 + bar * g as f64,
                bar.max(1.0) - 1.0,
                (base - top).max(0.0),
                palette.of(g),
                escape(name),
                escape(category),
                label(v)
            );
        }
        // Many categories: their names slant so neighbours do not overlap.
        let (cx, cy) = (x + slot / 2.0, HEIGHT - BOTTOM + 14.0);
        let (anchor, turn) = if categories.len() > 4 {
            ("end", format!(r#" transform="rotate(-20 {cx:.1} {cy:.1})""#))
        } else {
            ("middle", String::new())
        };
        let _ = write!(
            svg,
            r#"<text x="{cx:.1}" y="{cy:.1}" class="tick" text-anchor="{anchor}"{turn}>{}</text>"#,
            escape(category)
        );
    }
    let names: Vec<&str> = groups.iter().map(|g| g.0.as_str()).collect();
    legend_in(&mut svg, &names, palette);
    svg.push_str("</svg>");
    svg
}

/// A heat map: a grid of cells over two parameters, coloured on a scale that the caller shares
/// between the maps of one metric, so the same colour means the same value on every panel.
pub struct HeatMap<'a> {
    pub title: &'a str,
    pub row_label: &'a str,
    pub rows: &'a [String],
    pub column_label: &'a str,
    pub columns: &'a [String],
    pub values: &'a [Vec<f64>],
    /// The value drawn lightest and the one drawn darkest.
    pub scale: (f64, f64),
    /// What the legend calls the values.
    pub metric: &'a str,
}

/// The range of every finite value of the given grids, for a shared scale.
pub fn shared_scale<'a>(grids: impl Iterator<Item = &'a [Vec<f64>]>) -> Option<(f64, f64)> {
    bounds(grids.flat_map(|g| g.iter().flatten().copied()))
}

const NEUTRAL: &str = "#e8e8e8";
const MISSING: &str = "#ffffff";
const NEUTRAL_EDGE: &str = "#999999";

/// The fill of value v on the scale: light blue at the low end, dark navy at the high end; a
/// neutral grey when the scale is one value (nothing to compare); white when undefined.
fn heat_colour(v: f64, (low, high): (f64, f64)) -> (String, bool) {
    if !v.is_finite() {
        return (MISSING.into(), false);
    }
    if high <= low {
        return (NEUTRAL.into(), false);
    }
    let share = ((v - low) / (high - low)).clamp(0.0, 1.0);
    let mix = |light: f64, dark: f64| (light + (dark - light) * share).round() as u8;
    (format!("#{:02x}{:02x}{:02x}", mix(239.0, 8.0), mix(243.0, 48.0), mix(255.0, 107.0)), share > 0.55)
}

/// Each cell is labelled with its value; the legend on the right shows the shared scale (or
/// says the value is the same everywhere, or that a cell is undefined).
pub fn heat_map(m: &HeatMap) -> String {
    let mut svg = String::new();
    open(&mut svg, m.title);
    let (w, h) =
        ((WIDTH - LEFT - RIGHT) / m.columns.len().max(1) as f64, (HEIGHT - TOP - BOTTOM) / m.rows.len().max(1) as f64);
    let mut undefined = false;
    for (r, row) in m.rows.iter().enumerate() {
        let y = TOP + h * r as f64;
        for (c, column) in m.columns.iter().enumerate() {
            let v = m.values.get(r).and_then(|row| row.get(c)).copied().unwrap_or(f64::NAN);
            undefined |= !v.is_finite();
            let (fill, dark) = heat_colour(v, m.scale);
            let ink = if dark { "#ffffff" } else { "#000000" };
            let _ = write!(
                svg,
                r#"<rect x="{:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{fill}" stroke="{NEUTRAL}" class="heat"><title>{} {} / {} {}: {}</title></rect><text x="{:.1}" y="{:.1}" class="cell" fill="{ink}" text-anchor="middle">{}</text>"#,
                LEFT + w * c as f64,
                w - 1.0,
                h - 1.0,
                escape(m.row_label),
                escape(row),
                escape(m.column_label),
                escape(column),
                label(v),
                LEFT + w * (c as f64 + 0.5),
                y + h / 2.0 + 4.0,
                label(v)
            );
        }
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{}</text>"#,
            LEFT - 4.0,
            y + h / 2.0 + 4.0,
            escape(row)
        );
    }
    for (c, column) in m.columns.iter().enumerate() {
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="middle">{}</text>"#,
            LEFT + w * (c as f64 + 0.5),
            HEIGHT - BOTTOM + 14.0,
            escape(column)
        );
    }
    heat_legend(&mut svg, m, undefined);
    let _ = write!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" class="axis-label" text-anchor="middle">{}</text><text x="14" y="{:.1}" class="axis-label" text-anchor="middle" transform="rotate(-90 14 {:.1})">{}</text></svg>"#,
        (LEFT + WIDTH - RIGHT) / 2.0,
        HEIGHT - 6.0,
        escape(m.column_label),
        (TOP + HEIGHT - BOTTOM) / 2.0,
        (TOP + HEIGHT - BOTTOM) / 2.0,
        escape(m.row_label)
    );
    svg
}

/// Steps of the legend's colour bar.
const LEGEND_STEPS: usize = 8;

/// The scale on the right: the metric's name, a colour bar from the scale's high (top) to its
/// low (bottom) with both values, or one neutral swatch with the value every cell has.
fn heat_legend(svg: &mut String, m: &HeatMap, undefined: bool) {
    let x = WIDTH - RIGHT + 14.0;
    let _ = write!(
        svg,
        r#"<g class="heat-legend"><text x="{x}" y="{:.1}" class="legend">{}</text>"#,
        TOP + 4.0,
        escape(m.metric)
    );
    let (low, high) = m.scale;
    let bar_top = TOP + 14.0;
    let mut bottom = bar_top;
    if high > low {
        let step_h = 14.0;
        for k in 0..LEGEND_STEPS {
            let v = high - (high - low) * k as f64 / (LEGEND_STEPS - 1) as f64;
            let (fill, _) = heat_colour(v, m.scale);
            let _ = write!(
                svg,
                r#"<rect x="{x}" y="{:.1}" width="16" height="{step_h}" fill="{fill}"/>"#,
                bar_top + step_h * k as f64
            );
        }
        bottom = bar_top + step_h * LEGEND_STEPS as f64;
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" class="legend">{} (high)</text><text x="{:.1}" y="{:.1}" class="legend">{} (low)</text>"#,
            x + 22.0,
            bar_top + 10.0,
            label(high),
            x + 22.0,
            bottom - 3.0,
            label(low)
        );
    } else if low.is_finite() {
        let _ = write!(
            svg,
            r#"<rect x="{x}" y="{bar_top}" width="16" height="14" fill="{NEUTRAL}"/><text x="{:.1}" y="{:.1}" class="legend">{} everywhere</text>"#,
            x + 22.0,
            bar_top + 11.0,
            label(low)
        );
        bottom = bar_top + 14.0;
    }
    if undefined {
        let _ = write!(
            svg,
            r#"<rect x="{x}" y="{:.1}" width="16" height="14" fill="{MISSING}" stroke="{NEUTRAL_EDGE}"/><text x="{:.1}" y="{:.1}" class="legend">n/a: undefined</text>"#,
            bottom + 8.0,
            x + 22.0,
            bottom + 19.0
        );
    }
    svg.push_str("</g>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(ticks(0.0, 10.0, 5), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(ticks(0.0, 2400.0, 8), vec![0.0, 500.0, 1000.0, 1500.0, 2000.0]);
        assert_eq!(ticks(3.0, 3.0, 5), vec![3.0]);
    }

    #[test]
    fn labels_are_short() {
        assert_eq!(label(0.5), "0.5");
        assert_eq!(label(1234.0), "1234");
        assert_eq!(label(2.25), "2.25");
        assert_eq!(label(1.5e7), "1.50e7");
        assert_eq!(label(f64::NAN), "n/a");
    }

    #[test]
    fn long_legend_names_wrap_at_the_slash_and_end_in_an_ellipsis() {
        assert_eq!(legend_lines("resilient"), vec!["resilient"]);
        assert_eq!(legend_lines("resilient / model-primary"), vec!["resilient /", "model-primary"]);
        assert_eq!(legend_lines("a-very-long-policy-name-indeed"), vec!["a-very-long-policy\u{2026}"]);
        let mut svg = String::new();
        legend_in(&mut svg, &["p", "resilient / model-primary", "q"], &Palette::ByPosition);
        assert!(svg.contains("<title>resilient / model-primary</title>"), "{svg}");
        assert!(
            svg.contains(r#"y="36.0" class="legend">p</text>"#) && svg.contains(r#"y="85.0" class="legend">q</text>"#),
            "{svg}"
        );
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
        let chart = bar_chart("<x>", "y", &["a&b".into()], &[("p".into(), vec![1.0])]);
        assert!(chart.contains("<title>&lt;x&gt;</title>") && chart.contains("a&amp;b"), "{chart}");
    }
}

/// What a point of a scatter chart stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointKind {
    /// On the front: drawn in colour with its intervals.
    Front,
    /// Left the race: a small grey dot at its last means.
    Left,
    /// The scenario's own values: a ring, whatever its status.
    Current,
}

/// One point with its 95 % intervals on both axes.
pub struct ScatterPoint {
    pub label: String,
    pub x: (f64, f64, f64),
    pub y: (f64, f64, f64),
    pub kind: PointKind,
}

/// Points with interval whiskers; front points labelled, the current one ringed.
pub fn scatter_chart(title: &str, x_label: &str, y_label: &str, points: &[ScatterPoint]) -> String {
    let mut svg = String::new();
    open(&mut svg, title);
    let spread = |f: fn(&ScatterPoint) -> (f64, f64, f64)| {
        bounds(points.iter().flat_map(move |p| {
            let (m, lo, hi) = f(p);
            [m, lo, hi]
        }))
    };
    let (Some((x0, x1)), Some((y0, y1))) = (spread(|p| p.x), spread(|p| p.y)) else {
        svg.push_str(r#"<text x="200" y="130" class="tick">no data</text></svg>"#);
        return svg;
    };
    let pad = |lo: f64, hi: f64| {
        let d = if hi > lo { 0.05 * (hi - lo) } else { lo.abs().max(1.0) * 0.05 };
        (lo - d, hi + d)
    };
    let ((x0, x1), (y0, y1)) = (pad(x0, x1), pad(y0, y1));
    let frame = Frame { x0, x1, y0, y1 };
    axes(&mut svg, &frame, x_label, y_label, &ticks(x0, x1, 6));
    let mut order: Vec<&ScatterPoint> = points.iter().collect();
    // Grey first, so the front is drawn over what left the race.
    order.sort_by_key(|p| match p.kind {
        PointKind::Left => 0,
        PointKind::Front => 1,
        PointKind::Current => 2,
    });
    for p in order {
        let (cx, cy) = (frame.x(p.x.0), frame.y(p.y.0));
        if !(cx.is_finite() && cy.is_finite()) {
            continue;
        }
        let tip = format!("{}: {} {}, {} {}", p.label, x_label, label(p.x.0), y_label, label(p.y.0));
        match p.kind {
            PointKind::Left => {
                let _ = write!(
                    svg,
                    r##"<circle cx="{cx:.1}" cy="{cy:.1}" r="2.5" fill="#bbb"><title>{}</title></circle>"##,
                    escape(&tip)
                );
            }
            PointKind::Front | PointKind::Current => {
                let stroke = if p.kind == PointKind::Front { colour(0) } else { colour(1) };
                for (a, b) in [((p.x.1, p.y.0), (p.x.2, p.y.0)), ((p.x.0, p.y.1), (p.x.0, p.y.2))] {
                    if [a.0, a.1, b.0, b.1].iter().all(|v| v.is_finite()) {
                        let _ = write!(
                            svg,
                            r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{stroke}" class="whisker"/>"#,
                            frame.x(a.0),
                            frame.y(a.1),
                            frame.x(b.0),
                            frame.y(b.1)
                        );
                    }
                }
                let shape = match p.kind {
                    PointKind::Front => format!(r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="4" fill="{stroke}">"#),
                    _ => format!(
                        r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="7" fill="none" stroke="{stroke}" stroke-width="2">"#
                    ),
                };
                let _ = write!(
                    svg,
                    r#"{shape}<title>{}</title></circle><text x="{:.1}" y="{:.1}" class="tick">{}</text>"#,
                    escape(&tip),
                    cx + 6.0,
                    cy - 6.0,
                    escape(&p.label)
                );
            }
        }
    }
    let _ = write!(
        svg,
        r##"<circle cx="{x:.1}" cy="{:.1}" r="4" fill="{}"/><text x="{:.1}" y="{:.1}" class="legend">front (95 % CI)</text><circle cx="{x:.1}" cy="{:.1}" r="7" fill="none" stroke="{}" stroke-width="2"/><text x="{:.1}" y="{:.1}" class="legend">current values</text><circle cx="{x:.1}" cy="{:.1}" r="2.5" fill="#bbb"/><text x="{:.1}" y="{:.1}" class="legend">left the race</text>"##,
        TOP + 4.0,
        colour(0),
        WIDTH - RIGHT + 28.0,
        TOP + 8.0,
        TOP + 24.0,
        colour(1),
        WIDTH - RIGHT + 28.0,
        TOP + 28.0,
        TOP + 44.0,
        WIDTH - RIGHT + 28.0,
        TOP + 48.0,
        x = WIDTH - RIGHT + 16.0,
    );
    svg.push_str("</svg>");
    svg
}
