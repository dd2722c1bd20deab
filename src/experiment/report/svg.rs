//! Hand-written SVG charts for report.html: line charts with confidence bands and shaded time
//! windows, grouped bar charts and heat maps. Plain text out, no JavaScript, no fonts or files
//! fetched: a report opens anywhere, offline. Every chart is one `<svg class="chart">` element
//! with a `<title>` (so a test can count them and a screen reader can name them).

use super::xml::escape;
use crate::metrics::range::Range;
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
    ticks_from(low, high, wanted, 0.0)
}

/// As [`ticks`] with a step of at least `least` (1 on a count axis: no tick at 0.5 runs).
fn ticks_from(low: f64, high: f64, wanted: usize, least: f64) -> Vec<f64> {
    if !(low.is_finite() && high.is_finite()) || high <= low {
        return vec![low];
    }
    let raw = ((high - low) / wanted.max(1) as f64).max(least);
    let power = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * power).find(|s| *s >= raw).unwrap_or(10.0 * power);
    let first = (low / step).ceil() as i64;
    let last = (high / step).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

/// Whether sorted x values are a geometric grid (1, 2, 4, 8, 16 or 10, 100, 1000): at least
/// three positive values, each the one before times the same factor (within 2 %), a factor of
/// 1.5 or more. Such values belong on a log axis, where they sit evenly.
pub fn geometric(xs: &[f64]) -> bool {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    if v.len() < 3 || v[0] <= 0.0 {
        return false;
    }
    let factor = v[1] / v[0];
    factor >= 1.5 && v.windows(2).all(|w| ((w[1] / w[0]) / factor - 1.0).abs() <= 0.02)
}

/// Estimated width in px of `text` at `font_px`: DejaVu Sans (what CI's Chromium renders with)
/// averages under 0.6 em per character over names and digits; 0.62 keeps estimates safe, so a
/// label placed clear of another by this estimate is clear on screen.
pub fn text_width(text: &str, font_px: f64) -> f64 {
    text.chars().count() as f64 * font_px * 0.62
}

/// A rectangle a label takes: left, top, right, bottom.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TextBox {
    pub left: f64,
    pub top: f64,
    pub right: f64,
    pub bottom: f64,
}

impl TextBox {
    /// The box of `text` drawn at (x, y) (y the baseline) with this anchor.
    pub fn of(x: f64, y: f64, anchor: &str, text: &str, font_px: f64) -> TextBox {
        let w = text_width(text, font_px);
        let left = match anchor {
            "end" => x - w,
            "middle" => x - w / 2.0,
            _ => x,
        };
        TextBox { left, top: y - 0.8 * font_px, right: left + w, bottom: y + 0.25 * font_px }
    }

    /// The box with `d` px more on every side (less for a negative `d`).
    pub fn grown(&self, d: f64) -> TextBox {
        TextBox { left: self.left - d, top: self.top - d, right: self.right + d, bottom: self.bottom + d }
    }

    pub fn overlaps(&self, o: &TextBox) -> bool {
        self.left < o.right && o.left < self.right && self.top < o.bottom && o.top < self.bottom
    }

    fn inside(&self, left: f64, top: f64, right: f64, bottom: f64) -> bool {
        self.left >= left && self.right <= right && self.top >= top && self.bottom <= bottom
    }
}

/// One line of a line chart, optionally with a band (low, high) at the same x values, and the x
/// values where the figure has no value because the worst happened (never recovered).
pub struct Line {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub band: Option<Vec<(f64, f64)>>,
    pub never: Vec<f64>,
}

impl Line {
    /// A line without band and without "never" points.
    pub fn plain(name: String, points: Vec<(f64, f64)>) -> Line {
        Line { name, points, band: None, never: Vec::new() }
    }
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
    /// The values are counts (or their means): y ticks are whole numbers.
    pub counts: bool,
    /// The values the figure can take: bands are clipped to it (a share never leaves [0, 1]).
    pub range: Range,
    /// x on a log scale, a tick at every x value (for a geometric grid of parameter values).
    pub log_x: bool,
    /// How a point's tooltip names its x, `{}` standing for the value ("window ending at {} s").
    pub x_tip: &'a str,
}

pub const X_LABEL: &str = "virtual time at the window's end (s)";

/// How a point of a chart over time names its window in its tooltip.
pub const X_TIP: &str = "window ending at {} s";

impl<'a> LineChart<'a> {
    /// A chart over time, of counts per window (or of their means), the faults shaded.
    pub fn over_time(title: &'a str, y_label: &'a str, lines: Vec<Line>, spans: Vec<Span>) -> LineChart<'a> {
        LineChart {
            title,
            x_label: X_LABEL,
            y_label,
            lines,
            spans,
            counts: true,
            range: Range::NON_NEGATIVE,
            log_x: false,
            x_tip: X_TIP,
        }
    }
}

struct Frame {
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
    /// The pixel row of the x axis (charts with slanted names below are taller).
    base: f64,
    log_x: bool,
}

impl Frame {
    fn new(x0: f64, x1: f64, y0: f64, y1: f64) -> Frame {
        Frame { x0, x1, y0, y1, base: HEIGHT - BOTTOM, log_x: false }
    }
    fn x(&self, v: f64) -> f64 {
        let (a, b, v) = if self.log_x { (self.x0.ln(), self.x1.ln(), v.ln()) } else { (self.x0, self.x1, v) };
        LEFT + (v - a) / (b - a).max(f64::MIN_POSITIVE) * (WIDTH - LEFT - RIGHT)
    }
    fn y(&self, v: f64) -> f64 {
        self.base - (v - self.y0) / (self.y1 - self.y0).max(f64::MIN_POSITIVE) * (self.base - TOP)
    }
}

pub(super) fn open(svg: &mut String, title: &str) {
    open_as(svg, title, title, HEIGHT);
}

/// An `<svg>` of `height` px whose `<title>` (its accessible name and tooltip) is `title` and
/// whose visible heading is `shown` (shorter when the page's heading already names the figure).
pub(super) fn open_as(svg: &mut String, title: &str, shown: &str, height: f64) {
    let _ = write!(
        svg,
        r#"<svg class="chart" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" role="img"><title>{}</title><text x="{LEFT}" y="17" class="title">{}</text>"#,
        escape(title),
        escape(shown)
    );
}

/// Round y ticks over the frame, labelled with their values; whole numbers only on a count axis.
fn value_ticks(f: &Frame, counts: bool) -> Vec<(f64, String)> {
    ticks_from(f.y0, f.y1, 5, if counts { 1.0 } else { 0.0 }).into_iter().map(|t| (t, label(t))).collect()
}

fn axes(svg: &mut String, f: &Frame, x_label: &str, y_label: &str, x_ticks: &[f64], counts: bool) {
    let x_ticks: Vec<(f64, String)> = x_ticks.iter().map(|&t| (t, label(t))).collect();
    axes_with(svg, f, x_label, y_label, &x_ticks, &value_ticks(f, counts));
}

/// The axes with ticks given as (value, label): numbers, or the names of a chart's levels. x
/// tick labels that would touch the one before are left out (their grid value still reads from
/// its neighbours); a y label longer than the plot is squeezed to fit.
fn axes_with(
    svg: &mut String,
    f: &Frame,
    x_label: &str,
    y_label: &str,
    x_ticks: &[(f64, String)],
    y_ticks: &[(f64, String)],
) {
    let (left, right, bottom, top) = (LEFT, WIDTH - RIGHT, f.base, TOP);
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
    let mut last: Option<TextBox> = None;
    for (t, text) in x_ticks {
        let x = f.x(*t);
        let b = TextBox::of(x, bottom + 14.0, "middle", text, 10.0);
        if last.is_some_and(|l| l.right + 4.0 > b.left) {
            continue;
        }
        last = Some(b);
        let _ = write!(
            svg,
            r#"<text x="{x:.1}" y="{:.1}" class="tick" text-anchor="middle">{}</text>"#,
            bottom + 14.0,
            escape(text)
        );
    }
    let _ = write!(
        svg,
        r#"<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" class="axis"/><line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" class="axis"/><text x="{:.1}" y="{:.1}" class="axis-label" text-anchor="middle">{}</text>"#,
        (left + right) / 2.0,
        bottom + 34.0,
        escape(x_label)
    );
    y_axis_label(svg, y_label, top, bottom);
}

/// The y axis's name, turned, centred on the plot; squeezed to the plot's height when longer.
fn y_axis_label(svg: &mut String, y_label: &str, top: f64, bottom: f64) {
    let mid = (top + bottom) / 2.0;
    let room = bottom - top + 20.0;
    let fit = if text_width(y_label, 11.0) > room {
        format!(r#" textLength="{room:.0}" lengthAdjust="spacingAndGlyphs""#)
    } else {
        String::new()
    };
    let _ = write!(
        svg,
        r#"<text x="14" y="{mid:.1}" class="axis-label" text-anchor="middle" transform="rotate(-90 14 {mid:.1})"{fit}>{}</text>"#,
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
    let notes: Vec<Option<String>> = vec![None; names.len()];
    legend_with_notes(svg, names, &notes, palette);
}

/// The legend, an entry's note (such as "same as naive") in grey under its name.
fn legend_with_notes(svg: &mut String, names: &[&str], notes: &[Option<String>], palette: &Palette) {
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
        if let Some(Some(note)) = notes.get(i) {
            let _ = write!(
                svg,
                r##"<text x="{:.1}" y="{:.1}" class="legend-note" font-size="10" fill="#666">{}</text>"##,
                x + 18.0,
                y - 5.0,
                escape(note)
            );
            y += 12.0;
        }
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

/// Whether two lines draw the same: the same x values and y values within a thousandth of the
/// chart's span (what a reader cannot tell apart).
fn same_line(a: &Line, b: &Line, span: f64) -> bool {
    a.points.len() == b.points.len()
        && a.never == b.never
        && a.points
            .iter()
            .zip(&b.points)
            .all(|(p, q)| p.0 == q.0 && ((p.1 - q.1).abs() <= 1e-3 * span || (p.1.is_nan() && q.1.is_nan())))
}

/// Whether two lines meet at some point (one can hide part of the other).
fn touching(a: &Line, b: &Line, span: f64) -> bool {
    a.points.iter().zip(&b.points).any(|(p, q)| p.0 == q.0 && (p.1 - q.1).abs() <= 1e-3 * span)
}

/// Points per line up to which each point is drawn as a dot; past it (a line over time) the
/// points are invisible targets that still carry their tooltip.
const DOTS: usize = 16;

fn draw_lines(chart: &LineChart, y_axis: YAxis, palette: &Palette) -> String {
    let mut svg = String::new();
    open(&mut svg, chart.title);
    let clip = |b: (f64, f64)| (chart.range.clip(b.0), chart.range.clip(b.1));
    let xs = chart.lines.iter().flat_map(|l| l.points.iter().map(|p| p.0).chain(l.never.iter().copied()));
    let ys = chart.lines.iter().flat_map(|l| {
        l.points.iter().map(|p| p.1).chain(l.band.iter().flatten().flat_map(move |b| {
            let (lo, hi) = clip(*b);
            [lo, hi]
        }))
    });
    let log_x = chart.log_x && bounds(xs.clone()).is_some_and(|(lo, _)| lo > 0.0);
    let (Some((x0, x1)), Some((y_min, y1))) = (bounds(xs), bounds(ys)) else {
        if chart.lines.iter().any(|l| !l.never.is_empty()) {
            // Every value is "never": the axis has nothing to scale, the marks still read.
            return never_only(chart, palette);
        }
        svg.push_str(r#"<text x="200" y="130" class="tick">no data</text></svg>"#);
        return svg;
    };
    let x1 = if x1 > x0 {
        x1
    } else if log_x {
        x0 * 2.0
    } else {
        x0 + 1.0
    };
    let (mut frame, y_ticks) = match y_axis {
        YAxis::Data => {
            let y_low = y_min.min(0.0);
            let top = if y1 > y_low { y1 * 1.05 } else { y_low + 1.0 };
            // Counts below 1 still span one whole count: an axis of 0 and 1, not of 0.05s.
            let top = if chart.counts { top.max(y_low + 1.0) } else { top };
            let frame = Frame::new(x0, x1, y_low, top);
            let y_ticks = value_ticks(&frame, chart.counts);
            (frame, y_ticks)
        }
        YAxis::Levels(levels) => {
            let top = levels.len().saturating_sub(1).max(1) as f64;
            let frame = Frame::new(x0, x1, -0.08 * top, 1.08 * top);
            (frame, levels.iter().enumerate().map(|(i, name)| (i as f64, name.to_string())).collect())
        }
    };
    frame.log_x = log_x;
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
    let x_ticks: Vec<(f64, String)> = if log_x {
        let mut grid: Vec<f64> = chart.lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)).collect();
        grid.sort_by(f64::total_cmp);
        grid.dedup();
        grid.into_iter().map(|x| (x, label(x))).collect()
    } else {
        ticks(frame.x0, frame.x1, 8).into_iter().map(|t| (t, label(t))).collect()
    };
    let x_name = if log_x { format!("{} (log scale)", chart.x_label) } else { chart.x_label.to_string() };
    axes_with(&mut svg, &frame, &x_name, chart.y_label, &x_ticks, &y_ticks);
    let span = (frame.y1 - frame.y0).abs().max(f64::MIN_POSITIVE);
    // A line the same as one drawn before it is dashed over it and named in the legend; lines
    // that only meet somewhere are drawn widest first, so the one under still shows at its edges.
    let twin_of: Vec<Option<usize>> =
        (0..chart.lines.len()).map(|i| (0..i).find(|&j| same_line(&chart.lines[i], &chart.lines[j], span))).collect();
    let n = chart.lines.len();
    let meet = (0..n).any(|i| (0..i).any(|j| touching(&chart.lines[i], &chart.lines[j], span)));
    let value_text = |v: f64| match y_axis {
        YAxis::Levels(levels) if v.fract() == 0.0 && (v as usize) < levels.len() && v >= 0.0 => {
            levels[v as usize].to_string()
        }
        _ => label(v),
    };
    for (i, line) in chart.lines.iter().enumerate() {
        if let Some(band) = &line.band {
            let kept: Vec<((f64, f64), (f64, f64))> = line
                .points
                .iter()
                .zip(band)
                .map(|(p, b)| (*p, clip(*b)))
                .filter(|(p, b)| p.1.is_finite() && b.0.is_finite() && b.1.is_finite())
                .collect();
            if !kept.is_empty() {
                let upper: Vec<String> =
                    kept.iter().map(|(p, b)| format!("{:.1},{:.1}", frame.x(p.0), frame.y(b.1))).collect();
                let lower: Vec<String> =
                    kept.iter().rev().map(|(p, b)| format!("{:.1},{:.1}", frame.x(p.0), frame.y(b.0))).collect();
                let _ = write!(
                    svg,
                    r#"<polygon points="{} {}" fill="{}" class="band"/>"#,
                    upper.join(" "),
                    lower.join(" "),
                    palette.of(i)
                );
            }
        }
        let points: Vec<String> = line
            .points
            .iter()
            .filter(|p| p.1.is_finite())
            .map(|p| format!("{:.1},{:.1}", frame.x(p.0), frame.y(p.1)))
            .collect();
        let width = if meet && n > 1 { 1.6 + 1.6 * (n - 1 - i) as f64 / (n - 1) as f64 } else { 1.6 };
        let dash = if twin_of[i].is_some() { r#" stroke-dasharray="6 4""# } else { "" };
        let _ = write!(
            svg,
            r#"<polyline points="{}" stroke="{}" class="line" stroke-width="{width:.1}"{dash}/>"#,
            points.join(" "),
            palette.of(i)
        );
        let dots = line.points.len() <= DOTS;
        for (k, p) in line.points.iter().enumerate() {
            if !p.1.is_finite() {
                continue;
            }
            let ci = line
                .band
                .as_ref()
                .and_then(|b| b.get(k))
                .map(|b| clip(*b))
                .filter(|b| b.0.is_finite() && b.1.is_finite() && b.1 > b.0)
                .map(|b| format!(" (95 % CI {} to {})", label(b.0), label(b.1)))
                .unwrap_or_default();
            let tip = format!("{}, {}: {}{ci}", line.name, chart.x_tip.replace("{}", &label(p.0)), value_text(p.1));
            let (r, look) = if dots {
                // Where lines meet, the dots of the lines drawn first are larger and show round
                // the ones drawn over them.
                let r = if meet && n > 1 { 3.0 + 2.0 * (n - 1 - i) as f64 / (n - 1) as f64 } else { 3.0 };
                (r, format!(r#"fill="{}""#, palette.of(i)))
            } else {
                (4.0, r##"fill="#fff" fill-opacity="0""##.to_string())
            };
            let _ = write!(
                svg,
                r#"<circle cx="{:.1}" cy="{:.1}" r="{r:.1}" {look} class="point"><title>{}</title></circle>"#,
                frame.x(p.0),
                frame.y(p.1),
                escape(&tip)
            );
        }
        for &x in &line.never {
            never_mark(
                &mut svg,
                frame.x(x),
                palette.of(i),
                &format!("{}, {}: never", line.name, chart.x_tip.replace("{}", &label(x))),
            );
        }
    }
    let names: Vec<&str> = chart.lines.iter().map(|l| l.name.as_str()).collect();
    let notes: Vec<Option<String>> =
        twin_of.iter().map(|t| t.map(|j| format!("same as {} (dashed)", chart.lines[j].name))).collect();
    legend_with_notes(&mut svg, &names, &notes, palette);
    if chart.lines.iter().any(|l| !l.never.is_empty()) {
        never_legend(&mut svg);
    }
    svg.push_str("</svg>");
    svg
}

/// The colour of "never" (never recovered: the worst case) wherever a chart marks it.
pub const NEVER: &str = "#a50f15";

/// A "never" at x: a downward triangle pinned to the top of the plot, beyond every value.
fn never_mark(svg: &mut String, x: f64, colour: &str, tip: &str) {
    let y = TOP + 2.0;
    let _ = write!(
        svg,
        r##"<path d="M{:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z" fill="{colour}" stroke="{NEVER}" stroke-width="1.5" class="never"><title>{}</title></path>"##,
        x - 6.0,
        y,
        x + 6.0,
        y,
        x,
        y + 10.0,
        escape(tip)
    );
}

/// The legend's line for "never" marks, under the series.
fn never_legend(svg: &mut String) {
    let (x, y) = (WIDTH - RIGHT + 12.0, HEIGHT - BOTTOM - 6.0);
    let _ = write!(
        svg,
        r##"<path d="M{x:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z" fill="#888" stroke="{NEVER}" stroke-width="1.5"/><text x="{:.1}" y="{y:.1}" class="legend">never (at the top)</text>"##,
        y - 10.0,
        x + 12.0,
        y - 10.0,
        x + 6.0,
        y,
        x + 18.0
    );
}

/// A chart all of whose values are "never": the marks on an empty frame.
fn never_only(chart: &LineChart, palette: &Palette) -> String {
    let mut svg = String::new();
    open(&mut svg, chart.title);
    let xs: Vec<f64> = chart.lines.iter().flat_map(|l| l.never.iter().copied()).collect();
    let (x0, x1) = bounds(xs.iter().copied()).unwrap_or((0.0, 1.0));
    let log_x = chart.log_x && x0 > 0.0;
    let x1 = if x1 > x0 { x1 } else { x0 + 1.0 };
    let frame = Frame { log_x, ..Frame::new(x0, x1, 0.0, 1.0) };
    let x_ticks: Vec<(f64, String)> = if log_x {
        let mut grid = xs.clone();
        grid.sort_by(f64::total_cmp);
        grid.dedup();
        grid.into_iter().map(|x| (x, label(x))).collect()
    } else {
        ticks(x0, x1, 8).into_iter().map(|t| (t, label(t))).collect()
    };
    axes_with(&mut svg, &frame, chart.x_label, chart.y_label, &x_ticks, &[]);
    for (i, line) in chart.lines.iter().enumerate() {
        for &x in &line.never {
            never_mark(
                &mut svg,
                frame.x(x),
                palette.of(i),
                &format!("{}, {}: never", line.name, chart.x_tip.replace("{}", &label(x))),
            );
        }
    }
    let names: Vec<&str> = chart.lines.iter().map(|l| l.name.as_str()).collect();
    legend_in(&mut svg, &names, palette);
    never_legend(&mut svg);
    svg.push_str("</svg>");
    svg
}

/// Bars per category, one bar per group (policy) side by side.
pub fn bar_chart(title: &str, y_label: &str, categories: &[String], groups: &[(String, Vec<f64>)]) -> String {
    bars(&Bars { title, y_label, categories, groups, intervals: None, counts: false, palette: Palette::ByPosition })
}

/// Bars whose groups take the palette's colours.
pub fn bar_chart_in(
    title: &str,
    y_label: &str,
    categories: &[String],
    groups: &[(String, Vec<f64>)],
    palette: &Palette,
) -> String {
    let palette = match palette {
        Palette::ByPosition => Palette::ByPosition,
        Palette::Slots(s) => Palette::Slots(s),
    };
    bars(&Bars { title, y_label, categories, groups, intervals: None, counts: false, palette })
}

/// A grouped bar chart: per category one bar per group, each with its 95 % interval when given.
pub struct Bars<'a> {
    pub title: &'a str,
    pub y_label: &'a str,
    pub categories: &'a [String],
    pub groups: &'a [(String, Vec<f64>)],
    /// Per group, per category: the 95 % interval (low, high), already within the figure's range.
    pub intervals: Option<&'a [Vec<(f64, f64)>]>,
    /// The values are counts (or their means): y ticks are whole numbers.
    pub counts: bool,
    pub palette: Palette<'a>,
}

/// The angle category names slant at when there are many, in degrees.
const SLANT: f64 = 30.0;

pub fn bars(b: &Bars) -> String {
    let mut svg = String::new();
    let categories = b.categories;
    let slanted = categories.len() > 4;
    // Slanted names take room below the axis by their length: the chart grows to hold them.
    let drop = if slanted {
        let longest = categories.iter().map(|c| text_width(c, 10.0)).fold(0.0, f64::max);
        (longest * SLANT.to_radians().sin() + 18.0 - BOTTOM).max(0.0)
    } else {
        0.0
    };
    open_as(&mut svg, b.title, b.title, HEIGHT + drop);
    let interval = |g: usize, c: usize| b.intervals.and_then(|iv| iv.get(g)).and_then(|v| v.get(c)).copied();
    let highs = b.groups.iter().enumerate().flat_map(|(g, (_, values))| {
        values.iter().enumerate().map(move |(c, v)| interval(g, c).map_or(*v, |iv| iv.1.max(*v)))
    });
    let high = bounds(highs).map_or(1.0, |b| b.1.max(0.0));
    let top = if high > 0.0 { high * 1.1 } else { 1.0 };
    let top = if b.counts { top.max(1.0) } else { top };
    let frame = Frame::new(0.0, categories.len().max(1) as f64, 0.0, top);
    axes(&mut svg, &frame, "", b.y_label, &[], b.counts);
    let slot = (WIDTH - LEFT - RIGHT) / categories.len().max(1) as f64;
    let bar = (slot * 0.8) / b.groups.len().max(1) as f64;
    for (c, category) in categories.iter().enumerate() {
        let x = LEFT + slot * c as f64;
        for (g, (name, values)) in b.groups.iter().enumerate() {
            let v = values.get(c).copied().unwrap_or(f64::NAN);
            if !v.is_finite() {
                continue;
            }
            let (top, base) = (frame.y(v.max(0.0)), frame.y(0.0));
            let left = x + slot * 0.1 + bar * g as f64;
            let iv = interval(g, c).filter(|iv| iv.0.is_finite() && iv.1.is_finite() && iv.1 > iv.0);
            let ci = iv.map(|iv| format!(" (95 % CI {} to {})", label(iv.0), label(iv.1))).unwrap_or_default();
            let _ = write!(
                svg,
                r#"<rect x="{left:.1}" y="{top:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{} {}: {}{ci}</title></rect>"#,
                bar.max(1.0) - 1.0,
                (base - top).max(0.0),
                b.palette.of(g),
                escape(name),
                escape(category),
                label(v)
            );
            if let Some((lo, hi)) = iv {
                let cx = left + (bar.max(1.0) - 1.0) / 2.0;
                let cap = (bar * 0.25).clamp(1.5, 5.0);
                let (y_lo, y_hi) = (frame.y(lo.max(0.0)), frame.y(hi));
                let _ = write!(
                    svg,
                    r##"<path d="M{cx:.1},{y_lo:.1} V{y_hi:.1} M{:.1},{y_lo:.1} H{:.1} M{:.1},{y_hi:.1} H{:.1}" stroke="#333" class="whisker" fill="none"/>"##,
                    cx - cap,
                    cx + cap,
                    cx - cap,
                    cx + cap
                );
            }
        }
        // Many categories: their names slant so neighbours do not overlap.
        let (cx, cy) = (x + slot / 2.0, frame.base + 14.0);
        let (anchor, turn) = if slanted {
            ("end", format!(r#" transform="rotate(-{SLANT} {cx:.1} {cy:.1})""#))
        } else {
            ("middle", String::new())
        };
        let _ = write!(
            svg,
            r#"<text x="{cx:.1}" y="{cy:.1}" class="tick" text-anchor="{anchor}"{turn}>{}</text>"#,
            escape(category)
        );
    }
    let names: Vec<&str> = b.groups.iter().map(|g| g.0.as_str()).collect();
    legend_in(&mut svg, &names, &b.palette);
    if b.intervals.is_some() {
        let _ = write!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" class="legend-note" font-size="10" fill="#666">whiskers: 95 % CI</text>"##,
            WIDTH - RIGHT + 12.0,
            TOP + 8.0 + 18.0 * names.len() as f64
        );
    }
    svg.push_str("</svg>");
    svg
}

/// A heat map's cell: a mean with its 95 % interval, "never" (the worst case: never
/// recovered), or undefined (not applicable: no fault, no baseline).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HeatCell {
    /// A mean with its interval; `never` is the share of replications that never recovered
    /// when the figure is a recovery time (the mean is then over those that did), else 0.
    Value {
        mean: f64,
        low: f64,
        high: f64,
        never: f64,
    },
    Never,
    Undefined,
}

impl HeatCell {
    fn mean(self) -> f64 {
        match self {
            HeatCell::Value { mean, .. } => mean,
            HeatCell::Never | HeatCell::Undefined => f64::NAN,
        }
    }
}

/// A heat map: a grid of cells over two parameters, coloured on a scale that the caller shares
/// between the maps of one metric, so the same colour means the same value on every panel.
pub struct HeatMap<'a> {
    /// The chart's name (its tooltip), and the shorter heading drawn on it.
    pub title: &'a str,
    pub shown: &'a str,
    pub row_label: &'a str,
    pub rows: &'a [String],
    pub column_label: &'a str,
    pub columns: &'a [String],
    pub cells: &'a [Vec<HeatCell>],
    /// The value drawn lightest and the one drawn darkest.
    pub scale: (f64, f64),
}

/// The range of every defined mean of the given grids, for a shared scale.
pub fn shared_scale<'a>(grids: impl Iterator<Item = &'a [Vec<HeatCell>]>) -> Option<(f64, f64)> {
    bounds(grids.flat_map(|g| g.iter().flatten().map(|c| c.mean())))
}

const NEUTRAL: &str = "#e8e8e8";
/// Not applicable: white struck through in grey, so it reads as neither end of the scale.
const MISSING: &str = "#ffffff";
const NEUTRAL_EDGE: &str = "#999999";

/// The fill of value v on the scale: light blue at the low end, dark navy at the high end; a
/// neutral grey when the scale is one value (nothing to compare).
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

/// Each cell is labelled with its value and, when there is room, its interval under it; a
/// "never" cell is dark red, past the scale's dark end; a cell not applicable is white and
/// struck through. The legend on the right shows the shared scale and the marks used.
pub fn heat_map(m: &HeatMap) -> String {
    let mut svg = String::new();
    open_as(&mut svg, m.title, m.shown, HEIGHT);
    let (w, h) =
        ((WIDTH - LEFT - RIGHT) / m.columns.len().max(1) as f64, (HEIGHT - TOP - BOTTOM) / m.rows.len().max(1) as f64);
    let (mut undefined, mut never, mut partly) = (false, false, false);
    let room = h >= 26.0 && w >= 44.0;
    for (r, row) in m.rows.iter().enumerate() {
        let y = TOP + h * r as f64;
        for (c, column) in m.columns.iter().enumerate() {
            let cell = m.cells.get(r).and_then(|row| row.get(c)).copied().unwrap_or(HeatCell::Undefined);
            let (x, cx) = (LEFT + w * c as f64, LEFT + w * (c as f64 + 0.5));
            let place = format!("{} {} / {} {}", m.row_label, row, m.column_label, column);
            let (fill, ink, text, tip) = match cell {
                HeatCell::Value { mean, low, high, never } => {
                    let (fill, dark) = heat_colour(mean, m.scale);
                    let ci = if low.is_finite() && high.is_finite() && high > low {
                        format!(" (95 % CI {} to {})", label(low), label(high))
                    } else {
                        String::new()
                    };
                    // A recovery time over the replications that recovered, beside some that
                    // never did: the number alone would read as the whole story.
                    let some_never = if never > 0.0 {
                        partly = true;
                        format!(
                            "; {} % of the replications never recovered, the time is over the others",
                            label(never * 100.0)
                        )
                    } else {
                        String::new()
                    };
                    (
                        fill,
                        if dark { "#ffffff" } else { "#000000" },
                        label(mean),
                        format!("{place}: {}{ci}{some_never}", label(mean)),
                    )
                }
                HeatCell::Never => {
                    never = true;
                    (
                        NEVER.to_string(),
                        "#ffffff",
                        "never".to_string(),
                        format!("{place}: never (no replication recovered)"),
                    )
                }
                HeatCell::Undefined => {
                    undefined = true;
                    (MISSING.to_string(), "#555555", "n/a".to_string(), format!("{place}: not applicable (undefined)"))
                }
            };
            let _ = write!(
                svg,
                r#"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{fill}" stroke="{NEUTRAL}" class="heat"><title>{}</title></rect>"#,
                w - 1.0,
                h - 1.0,
                escape(&tip)
            );
            if let HeatCell::Value { never, .. } = cell
                && never > 0.0
            {
                let _ = write!(
                    svg,
                    r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="{NEVER}" stroke-width="3" class="partly-never"/>"#,
                    x + 1.5,
                    y + 1.5,
                    w - 4.0,
                    h - 4.0
                );
            }
            if cell == HeatCell::Undefined {
                let _ = write!(
                    svg,
                    r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{NEUTRAL_EDGE}" class="struck"/>"#,
                    x + 2.0,
                    y + h - 3.0,
                    x + w - 3.0,
                    y + 2.0
                );
            }
            let half = match cell {
                HeatCell::Value { never, .. } if room && never > 0.0 => {
                    Some(format!("{} % never", label(never * 100.0)))
                }
                HeatCell::Value { low, high, .. } if room && low.is_finite() && high.is_finite() && high > low => {
                    Some(format!("[{}, {}]", label(low), label(high)))
                }
                _ => None,
            };
            let text_y = if half.is_some() { y + h / 2.0 } else { y + h / 2.0 + 4.0 };
            let _ = write!(
                svg,
                r#"<text x="{cx:.1}" y="{text_y:.1}" class="cell" fill="{ink}" text-anchor="middle">{}</text>"#,
                escape(&text)
            );
            if let Some(half) = half {
                let _ = write!(
                    svg,
                    r#"<text x="{cx:.1}" y="{:.1}" class="cell-ci" font-size="9" fill="{ink}" text-anchor="middle">{}</text>"#,
                    text_y + 11.0,
                    escape(&half)
                );
            }
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
    heat_legend(&mut svg, m, undefined, never, partly);
    let _ = write!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" class="axis-label" text-anchor="middle">{}</text>"#,
        (LEFT + WIDTH - RIGHT) / 2.0,
        HEIGHT - 6.0,
        escape(m.column_label),
    );
    y_axis_label(&mut svg, m.row_label, TOP, HEIGHT - BOTTOM);
    svg.push_str("</svg>");
    svg
}

/// Steps of the legend's colour bar.
const LEGEND_STEPS: usize = 8;

/// The scale on the right: a colour bar from the scale's high (top) to its low (bottom) with
/// both values, or one neutral swatch with the value every cell has; then the marks for
/// "never" and "not applicable" when a cell has them.
fn heat_legend(svg: &mut String, m: &HeatMap, undefined: bool, never: bool, partly: bool) {
    let x = WIDTH - RIGHT + 14.0;
    let _ = write!(
        svg,
        r#"<g class="heat-legend"><text x="{x}" y="{:.1}" class="legend">mean [95 % CI]</text>"#,
        TOP + 4.0
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
    if never {
        let _ = write!(
            svg,
            r#"<rect x="{x}" y="{:.1}" width="16" height="14" fill="{NEVER}"/><text x="{:.1}" y="{:.1}" class="legend">never (worst)</text>"#,
            bottom + 8.0,
            x + 22.0,
            bottom + 19.0
        );
        bottom += 22.0;
    }
    if partly {
        let _ = write!(
            svg,
            r#"<rect x="{:.1}" y="{:.1}" width="13" height="11" fill="none" stroke="{NEVER}" stroke-width="3"/><text x="{:.1}" y="{:.1}" class="legend"><tspan x="{:.1}">red edge: some</tspan><tspan x="{:.1}" dy="12">never recovered;</tspan><tspan x="{:.1}" dy="12">time of the rest</tspan></text>"#,
            x + 1.5,
            bottom + 9.5,
            x + 22.0,
            bottom + 19.0,
            x + 22.0,
            x + 22.0,
            x + 22.0
        );
        bottom += 46.0;
    }
    if undefined {
        let _ = write!(
            svg,
            r#"<rect x="{x}" y="{:.1}" width="16" height="14" fill="{MISSING}" stroke="{NEUTRAL_EDGE}"/><line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{NEUTRAL_EDGE}"/><text x="{:.1}" y="{:.1}" class="legend">n/a: undefined</text>"#,
            bottom + 8.0,
            x + 1.0,
            bottom + 21.0,
            x + 15.0,
            bottom + 9.0,
            x + 22.0,
            bottom + 19.0
        );
    }
    svg.push_str("</g>");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Thirty candidates a few pixels apart on a diagonal (and one far off, which sets the
    /// axes): each is a spot of its own, a few labels fit, the rest are counted in a note.
    #[test]
    fn crowded_labels_are_counted_as_left_out() {
        let point = |i: usize, x: f64, y: f64| ScatterPoint {
            label: format!("#{i}"),
            x: (x, x, x),
            y: (y, y, y),
            kind: PointKind::Front,
        };
        let mut points: Vec<ScatterPoint> =
            (0..29).map(|i| point(i, 1.0 + 0.05 * i as f64, 2.0 + 0.1 * i as f64)).collect();
        points.push(point(29, 10.0, 20.0));
        let svg = scatter_chart("front", "cost", "latency", &points);
        let placed = svg.matches(r#"class="tick point-label""#).count();
        assert!(placed > 0 && placed < 30, "{svg}");
        assert!(svg.contains(&format!(">{} label(s) left out<", 30 - placed)), "{svg}");
    }

    #[test]
    fn a_grown_box_gains_the_margin_on_every_side() {
        let b = TextBox { left: 10.0, top: 20.0, right: 30.0, bottom: 40.0 };
        let g = b.grown(2.0);
        assert_eq!((g.left, g.top, g.right, g.bottom), (8.0, 18.0, 32.0, 42.0));
    }

    /// Only a line that draws the same as an earlier one is dashed over it and named so.
    #[test]
    fn only_identical_lines_are_marked_as_twins() {
        let line =
            |name: &str, ys: [f64; 3]| Line::plain(name.into(), vec![(0.0, ys[0]), (60.0, ys[1]), (120.0, ys[2])]);
        let chart = |lines| line_chart(&LineChart::over_time("t", "runs", lines, Vec::new()));
        let apart = chart(vec![line("a", [1.0, 5.0, 9.0]), line("b", [9.0, 5.0, 1.0])]);
        assert!(!apart.contains("same as"), "{apart}");
        let twins = chart(vec![line("a", [1.0, 5.0, 9.0]), line("b", [1.0, 5.0, 9.0])]);
        assert!(twins.contains("same as a (dashed)"), "{twins}");
    }

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

/// The axis range of a scatter chart: the front's and the current values' means with a margin,
/// widened to every other value and whisker only when they lie close (within 60 % of that
/// span); farther ones would squash the front into a corner, so they are drawn at the edge.
fn scatter_range(core: Option<(f64, f64)>, all: Option<(f64, f64)>) -> Option<(f64, f64)> {
    let (lo, hi) = core.or(all)?;
    let d = if hi > lo { hi - lo } else { lo.abs().max(1.0) * 0.05 };
    let (wide_lo, wide_hi) = all.unwrap_or((lo, hi));
    let lo = if wide_lo >= lo - 0.6 * d { wide_lo.min(lo) } else { lo - 0.12 * d };
    let hi = if wide_hi <= hi + 0.6 * d { wide_hi.max(hi) } else { hi + 0.12 * d };
    let pad = 0.05 * if hi > lo { hi - lo } else { d };
    Some((lo - pad, hi + pad))
}

/// Points with interval whiskers; front points labelled where their labels fit (none
/// overlaps another or a point), the current one ringed, points off the axes' range pinned to
/// the edge as arrows. Every point has a tooltip.
pub fn scatter_chart(title: &str, x_label: &str, y_label: &str, points: &[ScatterPoint]) -> String {
    scatter_chart_as(title, title, x_label, y_label, points)
}

/// As [`scatter_chart`], with a shorter visible heading than its name.
pub fn scatter_chart_as(title: &str, shown: &str, x_label: &str, y_label: &str, points: &[ScatterPoint]) -> String {
    let mut svg = String::new();
    open_as(&mut svg, title, shown, HEIGHT);
    let kept = |p: &&ScatterPoint| p.kind != PointKind::Left;
    let means = |f: fn(&ScatterPoint) -> (f64, f64, f64), only_kept: bool| {
        bounds(points.iter().filter(move |p| !only_kept || kept(p)).map(move |p| f(p).0))
    };
    let spread = |f: fn(&ScatterPoint) -> (f64, f64, f64)| {
        bounds(points.iter().flat_map(move |p| {
            let (m, lo, hi) = f(p);
            [m, lo, hi]
        }))
    };
    let (Some((x0, x1)), Some((y0, y1))) =
        (scatter_range(means(|p| p.x, true), spread(|p| p.x)), scatter_range(means(|p| p.y, true), spread(|p| p.y)))
    else {
        svg.push_str(r#"<text x="200" y="130" class="tick">no data</text></svg>"#);
        return svg;
    };
    let frame = Frame::new(x0, x1, y0, y1);
    axes(&mut svg, &frame, x_label, y_label, &ticks(x0, x1, 6), false);
    let (left, right, top, bottom) = (LEFT, WIDTH - RIGHT, TOP, HEIGHT - BOTTOM);
    let inside = |x: f64, y: f64| (x0..=x1).contains(&x) && (y0..=y1).contains(&y);
    let at = |x: f64, y: f64| (frame.x(x.clamp(x0, x1)), frame.y(y.clamp(y0, y1)));
    let mut order: Vec<&ScatterPoint> = points.iter().filter(|p| p.x.0.is_finite() && p.y.0.is_finite()).collect();
    // Grey first, so the front is drawn over what left the race.
    order.sort_by_key(|p| match p.kind {
        PointKind::Left => 0,
        PointKind::Front => 1,
        PointKind::Current => 2,
    });
    let mut off = 0;
    // Where every drawn mark is, so that no label covers one.
    let mut taken: Vec<TextBox> = Vec::new();
    for p in &order {
        let (cx, cy) = at(p.x.0, p.y.0);
        let tip = format!("{}: {} {}, {} {}", p.label, x_label, label(p.x.0), y_label, label(p.y.0));
        let colour_of = if p.kind == PointKind::Current { colour(1) } else { colour(0) };
        if !inside(p.x.0, p.y.0) {
            // Off the range: an arrow just inside the edge, its tip on the edge, pointing the way
            // the point lies (inside, so that it covers no tick label).
            off += 1;
            let (dx, dy) = (
                if p.x.0 < x0 {
                    -1.0
                } else if p.x.0 > x1 {
                    1.0
                } else {
                    0.0
                },
                if p.y.0 < y0 {
                    1.0
                } else if p.y.0 > y1 {
                    -1.0
                } else {
                    0.0
                },
            );
            let fill = if p.kind == PointKind::Left { "#bbb" } else { colour_of };
            let (tx, ty) = (cx, cy);
            let (cx, cy) = (cx - 7.0 * dx, cy - 7.0 * dy);
            let (nx, ny) = (-dy * 4.0, dx * 4.0);
            let _ = write!(
                svg,
                r#"<path d="M{tx:.1},{ty:.1} L{:.1},{:.1} L{:.1},{:.1} Z" fill="{fill}" class="off"><title>{} (off the chart)</title></path>"#,
                cx + nx,
                cy + ny,
                cx - nx,
                cy - ny,
                escape(&tip)
            );
            taken.push(TextBox { left: cx - 7.0, top: cy - 7.0, right: cx + 7.0, bottom: cy + 7.0 });
            continue;
        }
        match p.kind {
            PointKind::Left => {
                let _ = write!(
                    svg,
                    r##"<circle cx="{cx:.1}" cy="{cy:.1}" r="2.5" fill="#bbb"><title>{}</title></circle>"##,
                    escape(&tip)
                );
                taken.push(TextBox { left: cx - 2.5, top: cy - 2.5, right: cx + 2.5, bottom: cy + 2.5 });
            }
            PointKind::Front | PointKind::Current => {
                let stroke = colour_of;
                for (a, b) in [((p.x.1, p.y.0), (p.x.2, p.y.0)), ((p.x.0, p.y.1), (p.x.0, p.y.2))] {
                    if [a.0, a.1, b.0, b.1].iter().all(|v| v.is_finite()) {
                        let (ax, ay) = at(a.0, a.1);
                        let (bx, by) = at(b.0, b.1);
                        let _ = write!(
                            svg,
                            r#"<line x1="{ax:.1}" y1="{ay:.1}" x2="{bx:.1}" y2="{by:.1}" stroke="{stroke}" class="whisker"/>"#
                        );
                    }
                }
                let shape = match p.kind {
                    PointKind::Front => format!(r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="4" fill="{stroke}">"#),
                    _ => format!(
                        r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="7" fill="none" stroke="{stroke}" stroke-width="2">"#
                    ),
                };
                let _ = write!(svg, r#"{shape}<title>{}</title></circle>"#, escape(&tip));
                let r = if p.kind == PointKind::Front { 4.0 } else { 7.0 };
                taken.push(TextBox { left: cx - r, top: cy - r, right: cx + r, bottom: cy + r });
            }
        }
    }
    // Labels: points at one spot (twins share their figures) share one label; the current
    // values first, then the front in order; a label goes to the first place around its point
    // that is inside the plot and clear of every mark and label, or is left out (the point's
    // tooltip still names it).
    let mut spots: Vec<((f64, f64), Vec<&str>, bool)> = Vec::new();
    for p in order.iter().rev().filter(|p| p.kind != PointKind::Left && inside(p.x.0, p.y.0)) {
        let c = at(p.x.0, p.y.0);
        match spots.iter_mut().find(|s| (s.0.0 - c.0).abs() < 1.5 && (s.0.1 - c.1).abs() < 1.5) {
            Some(s) => s.1.push(&p.label),
            None => spots.push((c, vec![&p.label], p.kind == PointKind::Current)),
        }
    }
    let mut thinned = 0;
    for ((cx, cy), names, _) in &spots {
        let text = match names.as_slice() {
            [one] => one.to_string(),
            [a, b] => format!("{a} {b}"),
            [a, rest @ ..] => format!("{a} +{}", rest.len()),
            [] => continue,
        };
        let places = [
            (7.0, -6.0, "start"),
            (7.0, 12.0, "start"),
            (-7.0, -6.0, "end"),
            (-7.0, 12.0, "end"),
            (0.0, -10.0, "middle"),
            (0.0, 19.0, "middle"),
            (12.0, -15.0, "start"),
            (-12.0, -15.0, "end"),
            (12.0, 22.0, "start"),
            (-12.0, 22.0, "end"),
        ];
        let found = places.iter().map(|(dx, dy, anchor)| (cx + dx, cy + dy, *anchor)).find(|(x, y, anchor)| {
            let b = TextBox::of(*x, *y, anchor, &text, 10.0);
            // A pixel of air round each label: touching labels read as one.
            b.inside(left, top, right, bottom) && !taken.iter().any(|t| t.overlaps(&b.grown(1.0)))
        });
        match found {
            Some((x, y, anchor)) => {
                taken.push(TextBox::of(x, y, anchor, &text, 10.0));
                let _ = write!(
                    svg,
                    r#"<text x="{x:.1}" y="{y:.1}" class="tick point-label" text-anchor="{anchor}">{}</text>"#,
                    escape(&text)
                );
            }
            None => thinned += 1,
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
    let mut y = TOP + 68.0;
    if off > 0 {
        let x = WIDTH - RIGHT + 16.0;
        let _ = write!(
            svg,
            r##"<path d="M{:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z" fill="#888"/><text x="{:.1}" y="{y:.1}" class="legend">{off} off the range,</text><text x="{:.1}" y="{:.1}" class="legend">at the edge</text>"##,
            x - 5.0,
            y - 8.0,
            x + 4.0,
            y - 4.0,
            x - 5.0,
            y,
            WIDTH - RIGHT + 28.0,
            WIDTH - RIGHT + 28.0,
            y + 13.0
        );
        y += 33.0;
    }
    if thinned > 0 {
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{y:.1}" class="legend">{thinned} label(s) left out</text><text x="{:.1}" y="{:.1}" class="legend">where crowded: hover</text>"#,
            WIDTH - RIGHT + 12.0,
            WIDTH - RIGHT + 12.0,
            y + 13.0
        );
    }
    svg.push_str("</svg>");
    svg
}
