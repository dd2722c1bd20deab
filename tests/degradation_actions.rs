//! Issue 29's remaining mode actions and the error budget's time series, each shown from
//! outside: a run of the binary (or the library) whose figures would differ if the behaviour
//! docs/scenario.md 8.16 and docs/metrics.md 6.2 state were false. The scenario is the one of
//! tests/degradation_fidelity.rs: a soft search, a model with a cheaper fallback, a write.

mod common;

use common::degradation::*;
use common::*;
use faultline::engine::simulate;
use faultline::metrics::MetricMap;
use std::path::Path;

fn run(text: &str) -> MetricMap {
    simulate(&model(text), 0, 5).unwrap_or_else(|e| panic!("{e}")).metrics
}

/// Runs the binary with `args` on the scenario; its output folder's files stay in `dir`.
fn faultline(dir: &Path, text: &str, args: &[&str]) -> std::process::Output {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("s.toml");
    std::fs::write(&path, text).unwrap();
    std::process::Command::new(env!("CARGO_BIN_EXE_faultline")).args(args).arg(&path).output().unwrap()
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("faultline-actions-{}-{name}", std::process::id()))
}

/// timeseries.csv of one run of policy `p`: its header and rows.
fn timeseries(name: &str, text: &str) -> (Vec<String>, Vec<Vec<f64>>) {
    let dir = temp_dir(name);
    let out = dir.join("out");
    let o = faultline(&dir, text, &["run", "--jobs", "1", "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(out.join("p").join("timeseries.csv")).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let mut lines = csv.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(str::to_string).collect();
    let rows = lines.map(|l| l.split(',').map(|c| c.parse::<f64>().unwrap_or(f64::NAN)).collect()).collect();
    (header, rows)
}

fn column(header: &[String], name: &str) -> usize {
    header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name} in {header:?}"))
}

/// Policy p's modes: a budget rule on the workflow's own budget (DEGRADED) and one on search's
/// (CONSTRAINED); the budget judges from 20 runs, one page rule at 10 over 30 s and 5 s.
const BUDGET_RULES: &str = "[policy.p.degradation]\nevaluation_interval_ms = 1000\nerror_budget = { objective = 0.99, sli = \"full_quality\", period_s = 3600, min_runs = 20, burn_rate = [{ long_window_s = 30, short_window_s = 5, burn_rate = 10 }] }\n[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = { completion_budget = \"at_risk\", dependency = \"search\" }\nactions = { omit_steps = [\"enrich\"] }\n[[policy.p.runtime_policy]]\nmode = \"degraded\"\nwhen = { completion_budget = \"at_risk\" }\nmin_dwell_ms = 5000\n";

/// Item 1: each budget's state, spent share and both windows' burn rates per window, so the
/// reader sees why a rule fired. Before, timeseries.csv had only `worst_mode`: nothing showed
/// which budget moved the workflow. With the model failing, the workflow's own budget burns
/// at 100 (every run bad, 1 % allowed) and goes at risk as the workflow goes DEGRADED, while
/// search's budget stays healthy (its rule does not fire); with search failing, search's
/// budget goes at risk too.
#[test]
fn the_budgets_states_and_burn_rates_are_time_series_columns() {
    let (header, rows) = timeseries("model", &scenario(FAILING_MODEL, BUDGET_RULES));
    let own = |field: &str| column(&header, &format!("workflow.w.error_budget.{field}"));
    let search = |field: &str| column(&header, &format!("workflow.w.dependency.search.error_budget.{field}"));
    let mode = column(&header, "workflow.w.worst_mode");
    assert_eq!(header.len() - 1 - mode, 2 * 4, "two budgets: state, spent, one rule's long and short burn");
    assert_eq!(own("state"), mode + 1);
    // The window [110 s, 120 s): the fault began at 100 s.
    let fault = &rows[11];
    assert_eq!(fault[0], 110.0);
    assert!(fault[own("state")] >= 1.0, "at risk or worse: {fault:?}");
    assert_eq!(fault[own("burn_rate.0.short")], 100.0, "every run bad over 5 s: 1 / (1 - 0.99)");
    assert!(fault[own("burn_rate.0.long")] >= 10.0, "{fault:?}");
    assert_eq!(fault[mode], 3.0, "DEGRADED");
    let before = &rows[5];
    assert_eq!((before[own("state")], before[own("burn_rate.0.short")], before[own("spent")]), (0.0, 0.0, 0.0));
    for row in &rows {
        assert_eq!(row[search("state")], 0.0, "search answered every run: {row:?}");
        assert_eq!(row[search("burn_rate.0.short")], 0.0);
    }
    // The spent share only grows while every run is bad (the period is an hour).
    let spent: Vec<f64> = rows[10..20].iter().map(|r| r[own("spent")]).collect();
    assert!(spent.windows(2).all(|p| p[1] > p[0]) && spent[0] > 0.0, "{spent:?}");

    let (header, rows) = timeseries("search", &scenario(FAILING_SEARCH, BUDGET_RULES));
    let search = |field: &str| column(&header, &format!("workflow.w.dependency.search.error_budget.{field}"));
    let mode = column(&header, "workflow.w.worst_mode");
    let first = rows.iter().position(|r| r[search("state")] >= 1.0).expect("search's budget at risk");
    let fired = &rows[first];
    assert!((100.0..120.0).contains(&fired[0]), "{fired:?}");
    assert!(fired[search("burn_rate.0.short")] >= 10.0 && fired[search("burn_rate.0.long")] >= 10.0, "{fired:?}");
    // The search's failures are the workflow's too (its runs lack the soft step): DEGRADED, the
    // more severe of the two latched rules, shows.
    assert!(rows[first..first + 3].iter().any(|r| r[mode] >= 2.0), "a degraded mode with search's budget at risk");
    assert!(rows[..first].iter().all(|r| r[mode] == 0.0), "nothing moved the workflow before");
}

/// Without an error budget the time series has no budget column: a policy with modes keeps the
/// columns it had, and one without modes has neither.
#[test]
fn a_policy_without_an_error_budget_has_no_budget_column() {
    let breaker_rule = "[policy.p.degradation]\nevaluation_interval_ms = 1000\n[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = { dependency = \"model\", breaker = \"open\" }\n";
    let (header, _) = timeseries("modes", &scenario(SLOW_MODEL, breaker_rule));
    assert_eq!(header.last().map(String::as_str), Some("workflow.w.worst_mode"));
    let (header, _) = timeseries("plain", &scenario(SLOW_MODEL, ""));
    assert_eq!(header.last().map(String::as_str), Some("breaker.model.worst_state"));
}

/// The scenario with a second write: `log` writes to `crm` after the answer, before `save`
/// writes to `tickets`.
fn two_writes(fault: &str, policy: &str) -> String {
    scenario(fault, policy)
        .replace(
            "[[dependency]]\nname = \"tickets\"",
            "[[dependency]]\nname = \"crm\"\nservers = 40\nservice_time = { dist = \"constant\", value_ms = 50 }\n\n[[dependency]]\nname = \"tickets\"",
        )
        .replace(
            "  [[workflow.step]]\n  id = \"save\"\n  after = [\"answer\", \"enrich\"]",
            "  [[workflow.step]]\n  id = \"log\"\n  after = [\"answer\"]\n  dependency = \"crm\"\n  effect = \"write\"\n  idempotency = \"key\"\n\n  [[workflow.step]]\n  id = \"save\"\n  after = [\"answer\", \"enrich\", \"log\"]",
        )
}

/// HANDOFF while the model's breaker is open, pausing `pause`.
fn handoff(pause: &str) -> String {
    format!(
        "[policy.p.degradation]\nevaluation_interval_ms = 1000\nrecovery = {{ probe_evaluations = 2, canary_stages = [0.2, 1.0], stage_ms = 10000, min_canary_runs = 10 }}\n[[policy.p.runtime_policy]]\nmode = \"handoff\"\nwhen = {{ dependency = \"model\", breaker = \"not_closed\" }}\nactions = {{ {pause} }}\n"
    )
}

/// Item 2: a mode pauses the writes of one capability and the others go on (the essay's
/// section 24, "the affected write capability paused"). Before, `pause_writes` stopped every
/// write of the workflow: with it, the CRM log gets no write while the mode holds; with
/// `pause_writes_to = ["tickets"]` the log's writes go on as without a pause, and the tickets'
/// stop as with `pause_writes`.
#[test]
fn a_mode_pauses_the_writes_of_the_dependencies_it_names_only() {
    let all = run(&two_writes(SLOW_MODEL, &handoff("pause_writes = true")));
    let tickets_only = run(&two_writes(SLOW_MODEL, &handoff("pause_writes_to = [\"tickets\"]")));
    let none = run(&two_writes(SLOW_MODEL, &handoff("disable_hedging = true")));
    let crm = |m: &MetricMap| get(m, "dependency.crm.attempt_total");
    let tickets = |m: &MetricMap| get(m, "dependency.tickets.attempt_total");
    let handoff_s = get(&all, "degradation_mode_time_s.handoff");
    assert!(handoff_s > 30.0, "{}", modes(&all));
    assert_eq!(get(&tickets_only, "degradation_mode_time_s.handoff"), handoff_s, "the same signal, the same mode");
    // 20 runs a second: every run of the mode writes neither (all) or only its log.
    assert!(crm(&none) - crm(&all) > 10.0 * handoff_s, "{} against {}", crm(&all), crm(&none));
    assert_eq!(crm(&tickets_only), crm(&none), "the log's writes are not paused");
    assert!(tickets(&none) - tickets(&tickets_only) > 10.0 * handoff_s, "{}", modes(&tickets_only));
    assert!((tickets(&tickets_only) - tickets(&all)).abs() <= 0.01 * tickets(&all), "the tickets' writes stop in both");
    let paused = |m: &MetricMap| get(m, "write_paused_total");
    assert!(paused(&tickets_only) > 10.0 * handoff_s && paused(&none) == 0.0, "{}", modes(&tickets_only));
    assert_eq!(
        get(&tickets_only, "mode.handoff.outcome_total.handoff"),
        get(&all, "mode.handoff.outcome_total.handoff")
    );
}

/// The dependencies named must take a write: a pause of a read-only one stops nothing.
#[test]
fn pause_writes_to_names_a_dependency_that_takes_writes() {
    let err = faultline_error(&two_writes(SLOW_MODEL, &handoff("pause_writes_to = [\"tickets\", \"search\"]")));
    assert!(
        err.contains("runtime_policy[0].actions.pause_writes_to[1]") && err.contains("no write step calls `search`"),
        "{err}"
    );
    let err = faultline_error(&two_writes(SLOW_MODEL, &handoff("pause_writes_to = [\"ticket\"]")));
    assert!(err.contains("actions.pause_writes_to[0]") && err.contains("ticket"), "{err}");
}

/// `validate`'s error text for a scenario it refuses (exit 2).
fn faultline_error(text: &str) -> String {
    let dir = temp_dir(&format!("invalid-{}", text.len()));
    let o = faultline(&dir, text, &["validate"]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stdout));
    String::from_utf8(o.stderr).unwrap()
}

/// PAUSED while the model's breaker is open, refusing new runs; `more` adds actions.
fn paused(more: &str) -> String {
    format!(
        "[policy.p.degradation]\nevaluation_interval_ms = 1000\nrecovery = {{ probe_evaluations = 2, canary_stages = [0.2, 1.0], stage_ms = 10000, min_canary_runs = 10 }}\n[[policy.p.runtime_policy]]\nmode = \"paused\"\nwhen = {{ dependency = \"model\", breaker = \"open\" }}\nactions = {{ refuse_new_runs = true{more} }}\n"
    )
}

/// Item 3: with `cancel_in_flight`, the runs in flight as the workflow enters PAUSED are
/// cancelled: they end `failed` at that moment, counted in `degradation_cancelled_run_total`.
/// Before (and by default), they went on: with the model slow (2 s a call), the ~40 runs in
/// flight at each entry waited for it and most ended with an answer.
#[test]
fn paused_cancels_the_runs_in_flight_when_asked_to() {
    let goes_on = run(&scenario(SLOW_MODEL, &paused("")));
    let cancels = run(&scenario(SLOW_MODEL, &paused(", cancel_in_flight = true")));
    let entries = get(&cancels, "degradation_transition_total.normal.paused");
    assert!(entries >= 1.0, "{}", modes(&cancels));
    assert_eq!(
        get(&goes_on, "degradation_transition_total.normal.paused"),
        entries,
        "the same breaker, the same entries"
    );
    assert_eq!(get(&goes_on, "degradation_cancelled_run_total"), 0.0, "off by default");
    let cancelled = get(&cancels, "degradation_cancelled_run_total");
    // 20 runs a second, each waiting 2 s or more on the slow model.
    assert!(cancelled >= 20.0 * entries, "{cancelled} runs cancelled at {entries} entries: {}", modes(&cancels));
    let failed = |m: &MetricMap| get(m, "outcome_total.failed");
    assert!(
        failed(&cancels) - failed(&goes_on) >= 0.8 * cancelled,
        "{} against {}",
        failed(&cancels),
        failed(&goes_on)
    );
    let answered = |m: &MetricMap| get(m, "outcome_total.succeeded") + get(m, "outcome_total.degraded");
    assert!(answered(&goes_on) - answered(&cancels) >= 0.8 * cancelled, "the cancelled runs would have answered");
}

/// `cancel_in_flight` belongs to a `paused` rule.
#[test]
fn cancel_in_flight_is_an_action_of_paused() {
    let text =
        scenario(SLOW_MODEL, &paused(", cancel_in_flight = true")).replace("mode = \"paused\"", "mode = \"handoff\"");
    let err = faultline_error(&text);
    assert!(err.contains("runtime_policy[0].actions.cancel_in_flight") && err.contains("handoff"), "{err}");
}

/// A run PAUSED cancels in flight counts in the error budget as refused runs do
/// (`refused_runs`, the SLO owner's choice). Before, it counted bad whatever `refused_runs`
/// said, so a PAUSED rule on that budget saw a burst of its own cancellations at entry: with the
/// same cancellations, the budget spent the same share excluded and counted bad. Now excluded
/// (the default) spends less than bad by the cancelled runs, and good less still.
#[test]
fn runs_cancelled_in_flight_count_in_the_budget_as_refused_runs_do() {
    let policy = |refused: &str| {
        format!(
            "[policy.p.degradation]\nevaluation_interval_ms = 1000\nerror_budget = {{ objective = 0.99, sli = \"auto_completion\", period_s = 3600, min_runs = 20, refused_runs = \"{refused}\", burn_rate = [{{ long_window_s = 30, short_window_s = 5, burn_rate = 10 }}] }}\nrecovery = {{ probe_evaluations = 2, canary_stages = [0.2, 1.0], stage_ms = 10000, min_canary_runs = 10 }}\n[[policy.p.runtime_policy]]\nmode = \"paused\"\nwhen = {{ dependency = \"model\", breaker = \"open\" }}\nactions = {{ cancel_in_flight = true }}\n"
        )
    };
    let [excluded, bad, good] = ["excluded", "bad", "good"].map(|r| run(&scenario(SLOW_MODEL, &policy(r))));
    let cancelled = get(&bad, "degradation_cancelled_run_total");
    assert!(cancelled >= 20.0, "{}", modes(&bad));
    for m in [&excluded, &good] {
        assert_eq!(get(m, "degradation_cancelled_run_total"), cancelled, "the same entries, the same cancellations");
    }
    let spent = |m: &MetricMap| get(m, "error_budget_spent_max");
    eprintln!(
        "spent: excluded {}, bad {}, good {}; {cancelled} cancelled",
        spent(&excluded),
        spent(&bad),
        spent(&good)
    );
    // 400 s at 20 runs a second, extrapolated to the hour: 72 000 runs, a budget of 720 bad
    // runs; the cancelled ones are a share cancelled / 720 of it.
    let share = cancelled / 720.0;
    assert!(
        spent(&bad) - spent(&excluded) >= 0.5 * share,
        "{} against {}: {}",
        spent(&bad),
        spent(&excluded),
        modes(&bad)
    );
    assert!(spent(&good) <= spent(&excluded), "{} against {}", spent(&good), spent(&excluded));
}
