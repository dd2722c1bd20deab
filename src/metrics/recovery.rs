//! Recovery after a fault, from the per-window time series: how long goodput took to come back
//! to its pre-fault level (`recovery_time_s`), whether it ever did (`recovery_never_total`), and
//! how large the storm of attempts after the fault was (`recovery_storm_ratio`). A metastable
//! failure (docs/references.md section 7) shows as a replication that never recovers while its
//! attempts stay far above the baseline.
//!
//! Only whole windows count: a window [k w, (k + 1) w) belongs to a span [from, to) when it
//! lies entirely inside it. The pre-fault span is [warm-up, first fault start), the post-fault
//! span is [last fault end, duration).

use crate::sim::Micros;
use std::ops::Range;

/// Goodput is back when it stays within this fraction of its pre-fault level, either way.
pub const RECOVERY_BAND: f64 = 0.10;

/// Where the windows lie in virtual time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub window_us: Micros,
    pub warmup_us: Micros,
    /// End of the arrival window (`simulation.duration_s`).
    pub duration_us: Micros,
    /// (earliest fault start, latest fault end); None without faults.
    pub fault_us: Option<(Micros, Micros)>,
}

/// The three recovery metrics of one replication; NaN means undefined.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Recovery {
    /// Seconds from the last fault's end to the start of the window from which goodput stays
    /// in the band; 0 if it never left the band.
    pub time_s: f64,
    /// 1 if goodput never came back into the band for good, else 0.
    pub never_total: f64,
    /// Peak attempts per post-fault window over the mean attempts per pre-fault window.
    pub storm_ratio: f64,
    /// The lowest goodput of a window from the fault's first to the last, over the pre-fault
    /// mean: 1 (or more) when the fault never dented it, so a `time_s` of 0 that means "never
    /// dented" differs from one that means "back at once".
    pub goodput_floor_ratio: f64,
}

/// (earliest start, latest end) over fault windows given as (start, end); None when empty.
pub fn fault_span(faults: impl IntoIterator<Item = (Micros, Micros)>) -> Option<(Micros, Micros)> {
    faults.into_iter().fold(None, |span, (start, end)| match span {
        None => Some((start, end)),
        Some((s, e)) => Some((s.min(start), e.max(end))),
    })
}

/// Indices of the whole windows inside [from, to).
fn whole_windows(window_us: Micros, from: Micros, to: Micros) -> Range<usize> {
    let first = from.div_ceil(window_us) as usize;
    let end = (to / window_us) as usize;
    first..end.max(first)
}

/// A missing row is a window in which nothing was recorded.
fn at(series: &[u64], k: usize) -> f64 {
    series.get(k).copied().unwrap_or(0) as f64
}

/// The windows of `windows` the series holds: those past its end count 0, so a sum or a peak
/// (from 0) need not visit them (a model's metric names are read off an empty recorder whose
/// windows may number billions).
fn held(series: &[u64], windows: &Range<usize>) -> Range<usize> {
    windows.start.min(series.len())..windows.end.min(series.len())
}

fn mean(series: &[u64], windows: Range<usize>) -> f64 {
    let n = windows.len() as f64;
    held(series, &windows).map(|k| at(series, k)).sum::<f64>() / n
}

/// The pre-fault and post-fault windows and the fault span.
struct Windows {
    before: Range<usize>,
    after: Range<usize>,
    fault_start_us: Micros,
    fault_end_us: Micros,
}

/// The windows, when there is a fault and both spans hold a whole window.
fn windows(span: &Span) -> Option<Windows> {
    let (fault_start_us, fault_end_us) = span.fault_us?;
    let before = whole_windows(span.window_us, span.warmup_us, fault_start_us);
    let after = whole_windows(span.window_us, fault_end_us, span.duration_us);
    (!before.is_empty() && !after.is_empty()).then_some(Windows { before, after, fault_start_us, fault_end_us })
}

/// `recovery_time_s` and `recovery_never_total` from goodput per window (row k covers
/// [k w, (k + 1) w)). Undefined (NaN, NaN) without a fault, without a whole window between
/// the warm-up and the first fault, without a whole window between the last fault's end and
/// the duration, or with no goodput at all before the fault.
fn recovery_time(goodput: &[u64], span: &Span) -> (f64, f64) {
    let undefined = (f64::NAN, f64::NAN);
    let Some(Windows { before, after, fault_start_us, fault_end_us }) = windows(span) else { return undefined };
    let level = mean(goodput, before);
    if level <= 0.0 {
        return undefined;
    }
    let in_band = |k: usize| (at(goodput, k) - level).abs() <= RECOVERY_BAND * level;
    // Every whole window from the one the fault begins in up to the duration.
    let touched = (fault_start_us / span.window_us) as usize..after.end;
    if touched.clone().all(in_band) {
        return (0.0, 0.0);
    }
    // The longest run of in-band windows that reaches the last one.
    let mut first = after.end;
    while first > after.start && in_band(first - 1) {
        first -= 1;
    }
    if first == after.end {
        return (f64::NAN, 1.0);
    }
    let back_us = first as Micros * span.window_us;
    ((back_us - fault_end_us) as f64 / 1e6, 0.0)
}

/// `recovery_storm_ratio` from attempts per window (all dependencies). Undefined without a
/// fault, without pre-fault or post-fault windows, or with no attempt before the fault.
pub fn storm_ratio(attempts: &[u64], span: &Span) -> f64 {
    let Some(Windows { before, after, .. }) = windows(span) else { return f64::NAN };
    let baseline = mean(attempts, before);
    if baseline <= 0.0 {
        return f64::NAN;
    }
    let peak = held(attempts, &after).map(|k| at(attempts, k)).fold(0.0, f64::max);
    peak / baseline
}

/// `fault_peak_ratio` from requests per window: the peak of the whole windows inside the fault
/// span [first start, last end) over the mean per pre-fault window, the burst that the
/// post-fault figures cannot see (clients whose retries land while the dependency is still
/// down). Undefined without a fault, without a whole pre-fault window or a whole window inside
/// the fault span, or with no request before the fault.
pub fn fault_peak_ratio(attempts: &[u64], span: &Span) -> f64 {
    let Some((fault_start_us, fault_end_us)) = span.fault_us else { return f64::NAN };
    let before = whole_windows(span.window_us, span.warmup_us, fault_start_us);
    let during = whole_windows(span.window_us, fault_start_us, fault_end_us);
    if before.is_empty() || during.is_empty() {
        return f64::NAN;
    }
    let baseline = mean(attempts, before);
    if baseline <= 0.0 {
        return f64::NAN;
    }
    held(attempts, &during).map(|k| at(attempts, k)).fold(0.0, f64::max) / baseline
}

/// Seconds from the last fault's end to the first window-end sample from which a queue stays
/// at or below its deepest pre-fault sample: 0 when it never rose above it after the fault,
/// NaN when it never came back (or without pre-fault and post-fault windows).
pub fn drain_time_s(depth: &[u64], span: &Span) -> f64 {
    let Some(Windows { before, after, fault_end_us, .. }) = windows(span) else { return f64::NAN };
    let level = before.map(|k| at(depth, k)).fold(0.0, f64::max);
    let drained = |k: usize| at(depth, k) <= level;
    // The windows from the one the fault ends in, up to the duration.
    let from = (fault_end_us / span.window_us) as usize;
    if (from..after.end).all(drained) {
        return 0.0;
    }
    let mut first = after.end;
    while first > from && drained(first - 1) {
        first -= 1;
    }
    if first == after.end {
        return f64::NAN;
    }
    // Sample k is taken at the end of window k.
    let drained_at_us = (first as Micros + 1) * span.window_us;
    drained_at_us.saturating_sub(fault_end_us) as f64 / 1e6
}

/// `recovery_goodput_floor_ratio`; undefined when `recovery_time_s` is.
pub fn goodput_floor_ratio(goodput: &[u64], span: &Span) -> f64 {
    let Some(Windows { before, after, fault_start_us, .. }) = windows(span) else { return f64::NAN };
    let level = mean(goodput, before);
    if level <= 0.0 {
        return f64::NAN;
    }
    let touched = (fault_start_us / span.window_us) as usize..after.end;
    touched.map(|k| at(goodput, k) / level).fold(f64::INFINITY, f64::min)
}

/// All four metrics.
pub fn recovery(goodput: &[u64], attempts: &[u64], span: &Span) -> Recovery {
    let (time_s, never_total) = recovery_time(goodput, span);
    let goodput_floor_ratio = goodput_floor_ratio(goodput, span);
    Recovery { time_s, never_total, storm_ratio: storm_ratio(attempts, span), goodput_floor_ratio }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Micros = 1_000_000;

    /// 10 s windows, warm-up 20 s, duration 100 s (10 windows), a fault over [40 s, 50 s).
    fn span() -> Span {
        Span { window_us: 10 * S, warmup_us: 20 * S, duration_us: 100 * S, fault_us: Some((40 * S, 50 * S)) }
    }

    #[test]
    fn a_dip_then_recovery() {
        // Pre-fault windows 2 and 3 average 100; the fault at 4, still low at 5 and 6.
        let goodput = [0, 50, 100, 100, 20, 10, 60, 95, 105, 100, 0];
        let attempts = [0, 50, 100, 100, 300, 450, 200, 100, 100, 100];
        let r = recovery(&goodput, &attempts, &span());
        assert_eq!(r.time_s, 20.0, "back from window 7 (70 s), the fault ended at 50 s");
        assert_eq!(r.never_total, 0.0);
        assert_eq!(r.storm_ratio, 4.5);
        assert_eq!(r.goodput_floor_ratio, 0.1, "window 5: 10 over a baseline of 100");
    }

    #[test]
    fn a_queue_drains_when_it_stays_at_its_pre_fault_depth() {
        // Pre-fault samples (windows 2, 3) at most 4; above it from window 4 to 6.
        let depth = [0, 9, 3, 4, 50, 80, 20, 4, 1, 2];
        assert_eq!(drain_time_s(&depth, &span()), 30.0, "sample 7 (at 80 s) is the first back, 30 s after 50 s");
        assert_eq!(drain_time_s(&[0, 0, 3, 4, 50, 4, 0, 0, 0, 0], &span()), 0.0, "never above after the fault");
        assert!(drain_time_s(&[0, 0, 3, 4, 50, 4, 0, 0, 0, 9], &span()).is_nan(), "still above at the end");
    }

    #[test]
    fn a_dip_that_never_recovers() {
        let goodput = [0, 0, 100, 100, 20, 0, 0, 5, 2, 0];
        let attempts = [0, 0, 100, 100, 300, 500, 500, 500, 500, 500];
        let r = recovery(&goodput, &attempts, &span());
        assert!(r.time_s.is_nan());
        assert_eq!(r.never_total, 1.0);
        assert_eq!(r.storm_ratio, 5.0);
        // Back in the band, then out again in the last window: still never.
        let goodput = [0, 0, 100, 100, 20, 100, 100, 100, 100, 80];
        assert_eq!(recovery_time(&goodput, &span()).1, 1.0);
        // Missing rows at the end are windows with no goodput.
        assert_eq!(recovery_time(&[0, 0, 100, 100, 20, 100, 100], &span()).1, 1.0);
    }

    #[test]
    fn a_fault_that_never_dents_goodput() {
        let goodput = [0, 0, 100, 100, 91, 109, 100, 100, 100, 110];
        let attempts = [0, 0, 100, 100, 100, 100, 100, 100, 100, 100];
        let r = recovery(&goodput, &attempts, &span());
        assert_eq!((r.time_s, r.never_total, r.storm_ratio), (0.0, 0.0, 1.0));
        assert_eq!(r.goodput_floor_ratio, 0.91, "never out of the band: the floor says how close it came");
    }

    #[test]
    fn a_dip_only_during_the_fault_recovers_at_the_first_window_after_it() {
        let goodput = [0, 0, 100, 100, 50, 100, 100, 100, 100, 100];
        assert_eq!(recovery_time(&goodput, &span()), (0.0, 0.0), "window 5 starts at the fault's end");
        assert_eq!(
            goodput_floor_ratio(&goodput, &span()),
            0.5,
            "the same recovery time as never dented, half the floor"
        );
        // The fault ends inside window 4: the first window after it starts 5 s later.
        let s = Span { fault_us: Some((40 * S, 45 * S)), ..span() };
        assert_eq!(recovery_time(&goodput, &s), (5.0, 0.0));
    }

    #[test]
    fn partial_windows_are_left_out() {
        // Warm-up 15 s: window 1 ([10, 20)) is partial and ignored, even though it is low.
        // Fault [37 s, 52 s): window 3 ([30, 40)) is partial, so the baseline is window 2 only;
        // the post-fault windows start at 60 s. Duration 95 s: window 9 is partial and ignored.
        let s = Span { window_us: 10 * S, warmup_us: 15 * S, duration_us: 95 * S, fault_us: Some((37 * S, 52 * S)) };
        let goodput = [0, 10, 100, 60, 0, 0, 40, 100, 100, 0];
        let attempts = [0, 10, 100, 90, 400, 300, 250, 100, 100, 900];
        let r = recovery(&goodput, &attempts, &s);
        assert_eq!(r.time_s, 18.0, "window 7 starts at 70 s, 18 s after the fault's end");
        assert_eq!(r.never_total, 0.0);
        assert_eq!(r.storm_ratio, 2.5, "window 6 peaks; window 9 is partial");
        // Window 3 is touched by the fault: out of the band there means goodput left it.
        let dented = [0, 10, 100, 60, 100, 100, 100, 100, 100, 0];
        assert_eq!(recovery_time(&dented, &s), (8.0, 0.0));
    }

    #[test]
    fn undefined_without_a_fault_or_a_baseline() {
        let goodput = [100; 10];
        let none = Span { fault_us: None, ..span() };
        let r = recovery(&goodput, &goodput, &none);
        assert!(r.time_s.is_nan() && r.never_total.is_nan() && r.storm_ratio.is_nan());
        // The fault starts before the first whole window after the warm-up ends.
        let early = Span { fault_us: Some((25 * S, 50 * S)), ..span() };
        assert!(recovery(&goodput, &goodput, &early).never_total.is_nan());
        // The fault ends after the last whole window.
        let late = Span { fault_us: Some((40 * S, 95 * S)), ..span() };
        assert!(recovery(&goodput, &goodput, &late).storm_ratio.is_nan());
        // No goodput and no attempts before the fault.
        let zero = [0; 10];
        let r = recovery(&zero, &zero, &span());
        assert!(r.time_s.is_nan() && r.never_total.is_nan() && r.storm_ratio.is_nan());
    }

    #[test]
    fn the_fault_peak_sees_the_burst_that_the_recovery_peak_misses() {
        // Window 4 ([40, 50)) is the fault's: a burst of 600 against a baseline of 100 while
        // the post-fault peak is 200.
        let attempts = [0, 0, 100, 100, 600, 200, 100, 100, 100, 100];
        assert_eq!(storm_ratio(&attempts, &span()), 2.0);
        assert_eq!(fault_peak_ratio(&attempts, &span()), 6.0);
        // Only whole windows inside the fault: [37 s, 52 s) holds window 4 alone.
        let s = Span { fault_us: Some((37 * S, 52 * S)), ..span() };
        assert_eq!(fault_peak_ratio(&[0, 0, 100, 900, 600, 700], &s), 6.0);
        // A fault shorter than a window has none; nor has a run without a fault.
        assert!(fault_peak_ratio(&attempts, &Span { fault_us: Some((41 * S, 49 * S)), ..span() }).is_nan());
        assert!(fault_peak_ratio(&attempts, &Span { fault_us: None, ..span() }).is_nan());
        // A fault that outlasts the run still has its peak (the post-fault figures have none).
        let late = Span { fault_us: Some((40 * S, 200 * S)), ..span() };
        assert_eq!(fault_peak_ratio(&attempts, &late), 6.0);
        assert!(storm_ratio(&attempts, &late).is_nan());
    }

    #[test]
    fn the_span_covers_every_fault() {
        assert_eq!(fault_span([]), None);
        assert_eq!(fault_span([(5, 9), (2, 4), (6, 12)]), Some((2, 12)));
    }
}
