//! Aligned text tables for the terminal.

use crate::metrics::range::Range;

/// Renders rows under a header; the first column is left-aligned, the rest right-aligned.
pub fn render(header: &[String], rows: &[Vec<String>]) -> String {
    render_aligned(header, rows, &[0])
}

/// As [`render`], with the columns whose indices `left` lists left-aligned (words read better
/// aligned on their first letter, numbers on their last digit).
pub fn render_aligned(header: &[String], rows: &[Vec<String>], left: &[usize]) -> String {
    let columns = header.len();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate().take(columns) {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let line = |cells: &[String], out: &mut String| {
        for (i, cell) in cells.iter().enumerate().take(columns) {
            let pad = widths[i] - cell.chars().count();
            if i > 0 {
                out.push_str("  ");
            }
            if left.contains(&i) {
                out.push_str(cell);
                out.push_str(&" ".repeat(pad));
            } else {
                out.push_str(&" ".repeat(pad));
                out.push_str(cell);
            }
        }
        let trimmed = out.trim_end().len();
        out.truncate(trimmed);
        out.push('\n');
    };
    line(header, &mut out);
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    line(&rule, &mut out);
    for row in rows {
        line(row, &mut out);
    }
    out
}

/// A compact human form of a number: integers without decimals, ratios with 3 decimals.
pub fn human(v: f64) -> String {
    if v.is_nan() {
        "n/a".into()
    } else if v == v.trunc() && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else if v.abs() < 0.001 {
        format!("{v:.2e}")
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// A confidence half-width to two significant figures (`337`, `0.028`, `0.00030`).
pub fn half_width(h: f64) -> String {
    if !h.is_finite() || h <= 0.0 {
        return String::new();
    }
    let decimals = (1 - h.log10().floor() as i32).max(0) as usize;
    format!("{h:.decimals$}")
}

/// A mean with its 95 % interval clipped to `range`, both to the decimals the interval's
/// half-width needs (two significant digits of it, at most 4 decimals): `0.9634 [0.9621,
/// 0.9647]`, `150 [0, 315]`. Without an interval (one replication, or no spread) the mean alone
/// as [`human`] writes it; an undefined mean is `n/a`.
pub fn with_interval(mean: f64, low: f64, high: f64, range: Range) -> String {
    if mean.is_nan() {
        return "n/a".into();
    }
    let half = (high - low) / 2.0;
    if low.is_nan() || high.is_nan() || half <= 0.0 || !half.is_finite() {
        return human(mean);
    }
    let decimals = (1 - half.log10().floor() as i32).clamp(0, 4) as usize;
    let (low, high) = (range.clip(low), range.clip(high));
    format!("{mean:.decimals$} [{low:.decimals$}, {high:.decimals$}]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up() {
        let t = render(
            &["metric".into(), "a".into(), "bb".into()],
            &[vec!["x".into(), "1".into(), "22".into()], vec!["longer".into(), "333".into(), "4".into()]],
        );
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "metric    a  bb");
        assert_eq!(lines[2], "x         1  22");
        assert_eq!(lines[3], "longer  333   4");
        let words = render_aligned(
            &["metric".into(), "a".into(), "verdict".into()],
            &[vec!["x".into(), "1".into(), "better".into()], vec!["longer".into(), "333".into(), "no clear".into()]],
            &[0, 2],
        );
        let lines: Vec<&str> = words.lines().collect();
        assert_eq!(lines[2], "x         1  better");
        assert_eq!(lines[3], "longer  333  no clear");
        assert_eq!(human(3.0), "3");
        assert_eq!(human(0.12345), "0.123");
        assert_eq!(human(0.0000352), "3.52e-5");
        assert_eq!(human(f64::NAN), "n/a");
        assert_eq!(half_width(337.2), "337");
        assert_eq!(half_width(0.028), "0.028");
        assert_eq!(half_width(0.0003), "0.00030");
        assert_eq!(half_width(0.0), "");
        // The sweep's recovery times of issue 35: 150 s, [-15, 315] clipped at 0.
        assert_eq!(with_interval(150.0, -15.0, 315.0, Range::NON_NEGATIVE), "150 [0, 315]");
        assert_eq!(with_interval(0.9634, 0.9621, 0.9647, Range::FRACTION), "0.9634 [0.9621, 0.9647]");
        assert_eq!(with_interval(0.998, 0.994, 1.002, Range::FRACTION), "0.9980 [0.9940, 1.0000]");
        assert_eq!(with_interval(12.0, 12.0, 12.0, Range::NON_NEGATIVE), "12");
        assert_eq!(with_interval(0.5, f64::NAN, f64::NAN, Range::FRACTION), "0.500");
        assert_eq!(with_interval(f64::NAN, f64::NAN, f64::NAN, Range::FRACTION), "n/a");
    }
}
