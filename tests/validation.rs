//! The engine against closed forms (docs/references.md section 1). Each check asserts that the formula
//! lies inside the 95 % confidence interval of independent replications (Student t), with
//! fixed seeds so the verdict never changes from run to run.

mod common;
use common::*;

#[test]
fn t_quantiles_agree_with_the_table_used_for_intervals() {
    for df in [1u32, 2, 5, 9, 19, 30] {
        let table = faultline::metrics::t_quantile_975(df as usize);
        assert!((t_quantile(0.975, df) - table).abs() < 2e-3, "df {df}: {} vs {table}", t_quantile(0.975, df));
    }
}

#[test]
fn closed_forms_reproduce_the_published_check_values() {
    assert!((erlang_c(5, 2.5) - 0.1304).abs() < 5e-5);
    assert!((erlang_c(10, 5.0) - 0.0361).abs() < 5e-5);
    let pi = mmck_pi(2, 5, 3.0, 2.0);
    assert!((pi[0] - 0.179334).abs() < 1e-6);
    let (loss, l, wq) = mmck(2, 5, 3.0, 2.0);
    assert!((loss - 0.085113).abs() < 1e-6);
    assert!((l - 2.00595).abs() < 1e-5);
    assert!((wq - 0.230857).abs() < 1e-6);
}

fn single_station(
    servers: u32,
    queue_capacity: u32,
    mean_service_ms: f64,
    rate_per_s: f64,
    duration_s: f64,
    replications: u32,
    seed: u64,
) -> String {
    format!(
        r#"
[simulation]
duration_s = {duration_s}
warmup_s = {warmup}
seed = {seed}
replications = {replications}

[[dependency]]
name = "station"
servers = {servers}
queue_capacity = {queue_capacity}
service_time = {{ dist = "exponential", mean_ms = {mean_service_ms} }}

[[workflow]]
name = "customers"
arrivals = {{ rate_per_s = {rate_per_s} }}
deadline_ms = 100000000

  [[workflow.step]]
  id = "serve"
  dependency = "station"

[policy.plain]
deadline_propagation = false
timeout_ms = 0
retry = {{ max_attempts = 1 }}
"#,
        warmup = duration_s / 20.0
    )
}

#[test]
fn mmc_wait_probability_and_mean_wait_match_erlang_c() {
    // (servers, mean service ms, arrival rate per s): rho 0.5, 0.5, 0.8, 0.9
    let cases = [(5, 100.0, 25.0), (10, 100.0, 50.0), (2, 100.0, 16.0), (10, 100.0, 90.0)];
    for (i, (c, mean_ms, lambda)) in cases.into_iter().enumerate() {
        let m = model(&single_station(c, 1_000_000, mean_ms, lambda, 4_000.0, 10, 100 + i as u64));
        let reps = replicate(&m, 0);
        let mu = 1_000.0 / mean_ms;
        let label = format!("M/M/{c} rho {:.2}", lambda / (mu * c as f64));
        assert_in_ci(
            &format!("{label} P(wait)"),
            &metric(&reps, "dependency.station.wait_probability"),
            erlang_c(c, lambda / mu),
            3 * cases.len(),
        );
        assert_in_ci(
            &format!("{label} Wq ms"),
            &metric(&reps, "dependency.station.queue_wait_ms.mean"),
            1_000.0 * mmc_wq(c, lambda, mu),
            3 * cases.len(),
        );
        assert_in_ci(
            &format!("{label} utilization"),
            &metric(&reps, "dependency.station.utilization"),
            lambda / (mu * c as f64),
            3 * cases.len(),
        );
    }
}

/// The queue wait's 95th percentile against the M/M/c tail, P(W > t) = C exp(-(c mu - lambda) t)
/// (C is Erlang C): 0 when C <= 0.05, else ln(C / 0.05) / (c mu - lambda). Most attempts start
/// at once, so the zeros must be in the histogram: without them the figure would be the
/// percentile of the waits of those that queued, ln(20) / (c mu - lambda).
#[test]
fn mmc_wait_p95_matches_the_erlang_c_tail() {
    // rho 0.8 at c = 4 (C = 0.60: p95 310 ms, 374 ms without the zeros); rho 0.5 at c = 10
    // (C = 0.036: p95 0, 300 ms without them).
    let cases = [(4, 100.0, 32.0), (10, 100.0, 50.0)];
    for (i, (c, mean_ms, lambda)) in cases.into_iter().enumerate() {
        let m = model(&single_station(c, 1_000_000, mean_ms, lambda, 4_000.0, 10, 300 + i as u64));
        let reps = replicate(&m, 0);
        let mu = 1_000.0 / mean_ms;
        let tail = erlang_c(c, lambda / mu);
        let p95 = metric(&reps, "dependency.station.queue_wait_ms.p95");
        let label = format!("M/M/{c} rho {:.2} queue wait p95 ms", lambda / (mu * c as f64));
        if tail <= 0.05 {
            eprintln!("{label}: simulated {} in every replication, theory 0", p95.mean);
            assert!(p95.low == 0.0 && p95.high == 0.0, "{label}: {p95:?}, theory 0");
            continue;
        }
        let theory_ms = 1_000.0 * (tail / 0.05).ln() / (c as f64 * mu - lambda);
        // The histogram keeps two significant digits and reads a bucket's highest value: up to
        // 1 % above the true percentile, on top of the replications' own spread.
        let df = (p95.n - 1) as u32;
        let half = (p95.high - p95.mean) * t_quantile(1.0 - 0.025 / cases.len() as f64, df) / t_quantile(0.975, df);
        eprintln!("{label}: simulated {:.2} +- {half:.2}, theory {theory_ms:.2}", p95.mean);
        assert!(
            (p95.mean - theory_ms).abs() <= half + 0.01 * theory_ms,
            "{label}: theory {theory_ms} outside {} +- ({half} + 1 %)",
            p95.mean
        );
    }
}

#[test]
fn mmck_loss_probability_and_wait_match_the_stationary_distribution() {
    // (servers, waiting places, mean service ms, arrival rate per s); the first is the check vector
    // of docs/references.md section 1.
    let cases = [(2, 3, 500.0, 3.0), (5, 5, 1_000.0, 8.0), (1, 2, 1_000.0, 1.0)];
    for (i, (c, waiting, mean_ms, lambda)) in cases.into_iter().enumerate() {
        let m = model(&single_station(c, waiting, mean_ms, lambda, 40_000.0, 10, 200 + i as u64));
        let reps = replicate(&m, 0);
        let mu = 1_000.0 / mean_ms;
        let (loss, l, wq) = mmck(c, c + waiting, lambda, mu);
        let label = format!("M/M/{c}/{}", c + waiting);
        let checks = 3 * cases.len();
        assert_in_ci(&format!("{label} loss"), &metric(&reps, "dependency.station.rejection_ratio"), loss, checks);
        assert_in_ci(&format!("{label} L"), &metric(&reps, "dependency.station.in_system.mean"), l, checks);
        let wait = metric(&reps, "dependency.station.queue_wait_ms.mean");
        assert_in_ci(&format!("{label} Wq ms"), &wait, 1_000.0 * wq, checks);
    }
}

#[test]
fn littles_law_holds_on_every_station_of_the_incident() {
    let text = std::fs::read_to_string("scenarios/meeting-analysis-incident.toml").unwrap();
    let m = model(&text);
    for policy in 0..m.policies.len() {
        let reps = replicate(&m, policy);
        for name in &m.dependency_names {
            for r in &reps {
                let l = r[&format!("dependency.{name}.in_system.mean")];
                // Every request arrives at the station: a task's polls and work (control
                // requests) as well as the attempts of logical calls.
                let control = r.get(&format!("dependency.{name}.control_request_total")).copied().unwrap_or(0.0);
                let attempts = r[&format!("dependency.{name}.attempt_total")];
                let per_attempt = r[&format!("dependency.{name}.attempt_rate_per_s")] / attempts.max(1.0);
                let lambda = if attempts > 0.0 {
                    (attempts + control) * per_attempt
                } else {
                    control / (m.world.duration_us - m.world.warmup_us) as f64 * 1e6
                };
                let w_s = r[&format!("dependency.{name}.sojourn_ms.mean")] / 1_000.0;
                if lambda == 0.0 {
                    assert_eq!(l, 0.0);
                    continue;
                }
                // L comes from time integrals of the station's state, lambda and W from the
                // attempts' own arrival and departure times: two independent bookkeepings that
                // must agree on a sample path, up to the work in flight at the window edges (a
                // few sojourns over a 2100 s window, below 1 % for every station here). A busy
                // or queue count that drifted would break it.
                let rel = (l - lambda * w_s).abs() / l.max(1e-9);
                assert!(rel < 0.01, "{} {name}: L = {l}, lambda W = {}", m.policies[policy].name, lambda * w_s);
            }
        }
    }
}

fn retrying_station(p: f64, attempts: u32, seed: u64) -> String {
    format!(
        r#"
[simulation]
duration_s = 2000
warmup_s = 100
seed = {seed}
replications = 10

[[dependency]]
name = "flaky"
servers = 1000
service_time = {{ dist = "constant", value_ms = 10 }}
errors = {{ transient_transport = {p} }}

[[workflow]]
name = "calls"
arrivals = {{ rate_per_s = 20 }}
deadline_ms = 1000000

  [[workflow.step]]
  id = "call"
  dependency = "flaky"

[policy.retry]
retry = {{ max_attempts = {attempts}, backoff = {{ kind = "none" }} }}
"#
    )
}

#[test]
fn retry_amplification_matches_the_geometric_series() {
    let cases = [(0.3, 3u32), (0.5, 4), (0.1, 2)];
    let checks = 2 * cases.len();
    for (i, (p, n)) in cases.into_iter().enumerate() {
        let m = model(&retrying_station(p, n, 300 + i as u64));
        let reps = replicate(&m, 0);
        let label = format!("p {p} n {n}");
        assert_in_ci(
            &format!("{label} attempts per call"),
            &metric(&reps, "retry_amplification_ratio"),
            (1.0 - p.powi(n as i32)) / (1.0 - p),
            checks,
        );
        let failed: Vec<_> = reps
            .iter()
            .map(|r| {
                let mut m = r.clone();
                m.insert("failed_ratio".into(), r["outcome_total.failed"] / r["logical_run_total"]);
                m
            })
            .collect();
        assert_in_ci(
            &format!("{label} end-to-end failure"),
            &metric(&failed, "failed_ratio"),
            p.powi(n as i32),
            checks,
        );
    }
}

#[test]
fn three_layers_of_three_attempts_reach_the_bottom_27_times() {
    let text = r#"
[simulation]
duration_s = 100
seed = 3

[[dependency]]
name = "bottom"
servers = 10000
service_time = { dist = "constant", value_ms = 1 }
errors = { transient_transport = 1.0 }

[[dependency]]
name = "middle-agent"
servers = 10000
service_time = { dist = "constant", value_ms = 1 }
calls = [{ dependency = "bottom", max_attempts = 3, timeout_ms = 1000 }]

[[dependency]]
name = "top-agent"
servers = 10000
service_time = { dist = "constant", value_ms = 1 }
calls = [{ dependency = "middle-agent", max_attempts = 3, timeout_ms = 100000 }]

[[workflow]]
name = "w"
arrivals = { rate_per_s = 5 }
deadline_ms = 10000000

  [[workflow.step]]
  id = "ask"
  dependency = "top-agent"

[policy.layered]
timeout_ms = 0
deadline_propagation = false
retry = { max_attempts = 3, backoff = { kind = "none" } }
"#;
    let m = model(text);
    let r = &replicate(&m, 0)[0];
    let runs = r["logical_run_total"];
    assert!(runs > 300.0);
    assert_eq!(r["dependency.top-agent.attempt_total"], 3.0 * runs);
    assert_eq!(r["dependency.middle-agent.attempt_total"], 9.0 * runs);
    assert_eq!(r["dependency.bottom.attempt_total"], 27.0 * runs);
    assert_eq!(r["outcome_total.failed"], runs);
    assert_eq!(r["retry_amplification_ratio"], 39.0, "3 + 9 + 27 attempts per logical call");
}
