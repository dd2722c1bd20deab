//! Lint rules on time, answered from the file alone: an attempt timeout longer than the root
//! deadline, a breaker's sampling window shorter than twice the attempt timeout, retry delays
//! that cannot fit the deadline. Without deadline propagation the runtime acts on such a
//! configuration (an error); with it the deadline cuts what does not fit (a warning: the
//! setting is dead, not dangerous).

use super::row::{Answer, Ask, Row, RowKind, Severity};
use super::rule_rows::RuleRows;
use super::view::{PolicyView, StepView, ms};
use crate::scenario::RawTable;
use crate::sim::Micros;

pub const ATTEMPT_OVER_DEADLINE: Ask = Ask {
    kind: RowKind::Rule,
    id: "rule.attempt_timeout_over_deadline",
    source: ".NET HttpStandardResilienceOptionsCustomValidator (attempt <= total timeout); essay 6",
    question: "Attempt timeout within the root deadline?",
};

pub const BREAKER_WINDOW: Ask = Ask {
    kind: RowKind::Rule,
    id: "rule.breaker_window_under_twice_attempt_timeout",
    source: ".NET HttpStandardResilienceOptionsCustomValidator (SamplingDuration >= 2 x AttemptTimeout); resilience4j slidingWindowType TIME_BASED",
    question: "Breaker sampling window at least twice the attempt timeout?",
};

pub const RETRY_DELAYS: Ask = Ask {
    kind: RowKind::Rule,
    id: "rule.retry_delays_exceed_deadline",
    source: "essay 10 (backoff within the remaining budget); scenario.md 8.2, 8.5",
    question: "Retry delays and attempts fit the root deadline?",
};

/// The severity of a timing rule that fires: the runtime acts on it only without propagation.
fn timing_severity(view: &PolicyView) -> Severity {
    if view.policy.rules.deadline_propagation { Severity::Warning } else { Severity::Error }
}

fn propagation_note(view: &PolicyView) -> &'static str {
    if view.policy.rules.deadline_propagation {
        "deadline propagation clips it to the time left"
    } else {
        "deadline_propagation = false: nothing cuts it at the deadline"
    }
}

/// An attempt's timeout as it can last: its cap, or (without one) unbounded.
fn timeout_text(t: Option<Micros>) -> String {
    match t {
        Some(t) => format!("{} ms", ms(t)),
        None => "none (timeout_ms = 0)".into(),
    }
}

pub fn attempt_timeout_over_deadline(view: &PolicyView) -> Vec<Row> {
    let mut rows = RuleRows::new(&ATTEMPT_OVER_DEADLINE, view.name);
    for step in view.steps() {
        let t = step.policy.timeout_us;
        // An approval waits for the verdict, its business expiry or the root deadline, whatever
        // the propagation (scenario.md 4.7): no attempt timeout runs past the deadline.
        if step.model.approval || t.is_some_and(|t| t <= step.deadline_us) {
            continue;
        }
        let evidence = format!(
            "step `{}` of workflow `{}`: attempt timeout {} > deadline_ms {}; {}",
            step.spec.id,
            view.scenario.workflows[step.workflow].name,
            timeout_text(t),
            ms(step.deadline_us),
            propagation_note(view)
        );
        rows.fire(timing_severity(view), evidence, view.timeout_location(step.spec));
    }
    rows.or_else(|| {
        let machine: Vec<StepView> = view.steps().filter(|s| !s.model.approval).collect();
        if machine.is_empty() {
            let evidence = "every step is an approval: it waits for a verdict, its expiry or the deadline".to_string();
            return (Answer::NotApplicable, evidence, view.at(&view.path));
        }
        let longest = machine.iter().filter_map(|s| s.policy.timeout_us).max().unwrap_or(0);
        let evidence = format!("every step's attempt timeout is within its deadline (longest {} ms)", ms(longest));
        (Answer::Yes, evidence, view.at(&view.path))
    })
}

/// A breaker entry's sampling window in microseconds, with the field that sets it; None for
/// a count-based window (a number of calls, not a duration: the .NET rule does not apply).
fn sampling_window(table: &RawTable) -> Option<(Micros, &'static str)> {
    let text = |k: &str| table.0.get(k).and_then(|v| v.as_str());
    let number = |k: &str| table.0.get(k).and_then(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)));
    match text("kind").unwrap_or("resilience4j") {
        "polly" => {
            let duration_ms = number("sampling_duration_ms").unwrap_or(30_000.0);
            Some((crate::sim::ms_to_us(duration_ms), "sampling_duration_ms"))
        }
        "opossum" => {
            let duration_ms = number("rolling_count_timeout_ms").unwrap_or(10_000.0);
            Some((crate::sim::ms_to_us(duration_ms), "rolling_count_timeout_ms"))
        }
        "cockatiel" => match text("breaker") {
            Some("sampling") => number("duration_ms").map(|ms| (crate::sim::ms_to_us(ms), "duration_ms")),
            _ => None,
        },
        _ => match text("sliding_window_type").unwrap_or("count_based") {
            "time_based" => {
                let seconds = number("sliding_window_size").unwrap_or(100.0);
                Some((crate::sim::ms_to_us(seconds * 1e3), "sliding_window_size"))
            }
            _ => None,
        },
    }
}

pub fn breaker_window(view: &PolicyView) -> Vec<Row> {
    let mut rows = RuleRows::new(&BREAKER_WINDOW, view.name);
    // Time windows, and those that judge some step's attempts (a breaker on a dependency no
    // step reaches judges nothing: no evidence either way).
    let (mut windows, mut judging) = (0, 0);
    for (i, table) in view.spec.circuit_breaker.iter().enumerate() {
        let Some((window_us, field)) = sampling_window(table) else { continue };
        windows += 1;
        let guarded =
            table.0.get("dependency").and_then(|v| v.as_str()).and_then(|d| view.model.world.dependency_index(d));
        // The longest attempt the breaker judges: every step whose primary, fallback or quorum
        // branch goes there. An approval is a person's wait, no attempt a breaker times.
        let covers = |s: &StepView| !s.model.approval && guarded.is_none_or(|d| s.dependencies_called().contains(&d));
        let longest = view
            .steps()
            .filter(|s| covers(s))
            .map(|s| (view.attempt_bound(&s), s.spec.id.clone()))
            .max_by_key(|(b, _)| b.unwrap_or(Micros::MAX));
        let Some((bound, step)) = longest else { continue };
        judging += 1;
        let too_short = bound.is_none_or(|b| window_us < b.saturating_mul(2));
        if !too_short {
            continue;
        }
        // The field as written (resilience4j's window is in seconds), then in milliseconds.
        let written = match field {
            "sliding_window_size" => {
                format!("{} (s) = {} ms", super::figures::show(window_us as f64 / 1e6), ms(window_us))
            }
            _ => format!("{} ms", ms(window_us)),
        };
        let evidence = format!(
            "circuit_breaker[{i}].{field} = {written} of sampling < 2 x attempt timeout {} of step `{step}`: the window closes before the slow calls it should count end",
            timeout_text(bound)
        );
        let entry = view.field(&["circuit_breaker"]).index(i);
        let location = if table.0.contains_key(field) { view.at(&entry.key(field)) } else { view.at(&entry) };
        rows.fire(Severity::Error, evidence, location);
    }
    rows.or_else(|| {
        let (answer, evidence) = if windows == 0 {
            (
                Answer::NotApplicable,
                "no circuit breaker with a time window (count-based windows count calls)".to_string(),
            )
        } else if judging == 0 {
            (Answer::NotApplicable, format!("{windows} time window(s), none at a dependency a step's attempt reaches"))
        } else {
            (Answer::Yes, format!("{judging} time window(s), each at least twice the attempt timeouts it judges"))
        };
        (answer, evidence, view.at(&view.field(&["circuit_breaker"])))
    })
}

/// The sum of a step's backoff sleeps over its retries, each at the draw `u` (0: the shortest
/// the jitter can make it; just below 1: the longest, the cap or, randomized, above it).
fn delay_sum(view: &PolicyView, retries: u32, u: f64) -> Micros {
    let backoff = &view.policy.rules.backoff;
    let mut previous = 0;
    let mut sum: Micros = 0;
    for n in 0..retries {
        previous = backoff.sleep_us(n, previous, u);
        sum = sum.saturating_add(previous);
    }
    sum
}

pub fn retry_delays(view: &PolicyView) -> Vec<Row> {
    let mut rows = RuleRows::new(&RETRY_DELAYS, view.name);
    for step in view.steps() {
        let attempts = step.policy.max_attempts;
        // An approval waits for a person until its business expiry: its length is no attempt's.
        // A quorum's branches are never retried (scenario.md 6.2).
        if attempts < 2 || step.model.approval || step.model.quorum.is_some() {
            continue;
        }
        let shortest = delay_sum(view, attempts - 1, 0.0);
        let capped = delay_sum(view, attempts - 1, 1.0 - f64::EPSILON);
        let work = step.policy.predicted_attempt_us.saturating_mul(u64::from(attempts));
        let need_capped = capped.saturating_add(work);
        if need_capped < step.deadline_us {
            continue;
        }
        let need_shortest = shortest.saturating_add(work);
        // Even the shortest draws cannot fit: the retries are dead (propagation) or late.
        let severity = if need_shortest >= step.deadline_us { timing_severity(view) } else { Severity::Warning };
        let evidence = format!(
            "step `{}`: {attempts} attempts x predicted {} ms + backoff sleeps {}..{} ms = {}..{} ms >= deadline_ms {}; {}",
            step.spec.id,
            ms(step.policy.predicted_attempt_us),
            ms(shortest),
            ms(capped),
            ms(need_shortest),
            ms(need_capped),
            ms(step.deadline_us),
            propagation_note(view)
        );
        rows.fire(severity, evidence, view.attempts_location(step.spec));
    }
    rows.or_else(|| {
        let evidence = "every step's attempts and backoff caps fit its deadline".to_string();
        (Answer::Yes, evidence, view.at(&view.field(&["retry"])))
    })
}
