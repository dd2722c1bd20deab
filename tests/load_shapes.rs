//! Load shapes from outside (docs/scenario.md 5.1): k6-style rate stages against the integral
//! of their piecewise-linear rate, and a closed population of users against the closed
//! network's closed form (the machine-repairman model and the interactive response time law
//! R = N / X - Z), with fixed seeds and tolerances from confidence intervals; then what the
//! users do (give up, leave, ramp) and the scenario errors a bad load gives.

mod common;
use common::*;
use faultline::engine::simulate;
use faultline::experiment::batch::replication_seed;
use faultline::metrics::timeseries::ARRIVALS;
use std::process::Command;

/// One station with exponential service and a waiting room that never fills, fed by `load`
/// (the TOML of the workflow's `arrivals`).
fn station(load: &str, servers: u32, mean_service_ms: f64, duration_s: f64, warmup_s: f64, extra: &str) -> String {
    format!(
        r#"
[simulation]
duration_s = {duration_s}
warmup_s = {warmup_s}
seed = 35
replications = 10
timeseries_window_s = 50

[[dependency]]
name = "station"
servers = {servers}
queue_capacity = 1000000
service_time = {{ dist = "exponential", mean_ms = {mean_service_ms} }}
{extra}

[[workflow]]
name = "customers"
deadline_ms = 100000000
{load}

  [[workflow.step]]
  id = "serve"
  dependency = "station"

[policy.plain]
deadline_propagation = false
timeout_ms = 0
retry = {{ max_attempts = 1 }}
"#
    )
}

/// z for a two-sided family-wise 99 % over `checks` normal checks (Bonferroni), by bisection.
fn z_bonferroni(checks: usize) -> f64 {
    let tail = 0.01 / (2.0 * checks as f64);
    // Upper tail of the standard normal, Abramowitz and Stegun 26.2.17 (error < 7.5e-8).
    let upper = |z: f64| {
        let t = 1.0 / (1.0 + 0.231_641_9 * z);
        let poly =
            t * (0.319_381_53 + t * (-0.356_563_782 + t * (1.781_477_937 + t * (-1.821_255_978 + t * 1.330_274_429))));
        (-z * z / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt() * poly
    };
    let (mut lo, mut hi) = (0.0, 10.0);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if upper(mid) > tail { lo = mid } else { hi = mid }
    }
    lo
}

#[test]
fn rate_stages_ramp_linearly_window_by_window() {
    // 5/s ramping to 25/s over 100 s, 25/s for 100 s, down to 0 over 50 s, then a step to 10/s.
    // Per 50 s window the integral of the rate: 500, 1000, 1250, 1250, 625, 500. A step at each
    // stage's start (the target at once) would give 1250 in the first window, a ramp that ignored
    // start_rate 250.
    let load = "arrivals = { start_rate = 5, stages = [{ duration_s = 100, target = 25 }, { duration_s = 100, target = 25 }, { duration_s = 50, target = 0 }, { duration_s = 0, target = 10 }] }";
    let m = model(&station(load, 100, 10.0, 300.0, 0.0, ""));
    let expected = [500.0, 1000.0, 1250.0, 1250.0, 625.0, 500.0];
    let mut counts = [0u64; 6];
    for r in 0..m.world.replications {
        let rep = simulate(&m, 0, replication_seed(m.world.seed, r)).unwrap();
        for (w, count) in counts.iter_mut().enumerate() {
            *count += rep.timeseries.value(w, ARRIVALS);
        }
    }
    // The sum over replications of a window's arrivals is Poisson with R times its integral.
    let z = z_bonferroni(expected.len());
    let reps = f64::from(m.world.replications);
    for (w, (&n, &lambda)) in counts.iter().zip(&expected).enumerate() {
        let mean = reps * lambda;
        let half = z * mean.sqrt();
        eprintln!("window {w}: {n} arrivals over {reps} replications, expected {mean} +- {half:.1}");
        assert!((n as f64 - mean).abs() <= half, "window {w}: {n} arrivals, expected {mean} +- {half:.1}");
    }
}

#[test]
fn time_unit_scales_start_rate_and_targets() {
    // k6's timeUnit: 60 per minute ramping to 600 per minute over 300 s is 1/s to 10/s, so
    // 300 x (1 + 10) / 2 = 1650 runs in a replication; read per second it would be 99 000.
    let load = "arrivals = { start_rate = 60, time_unit_s = 60, stages = [{ duration_s = 300, target = 600 }] }";
    let m = model(&station(load, 100, 10.0, 300.0, 0.0, ""));
    let reps = replicate(&m, 0);
    let total: f64 = reps.iter().map(|r| r["logical_run_total"]).sum();
    let mean = 1650.0 * reps.len() as f64;
    let half = z_bonferroni(1) * mean.sqrt();
    eprintln!("{total} runs over {} replications, expected {mean} +- {half:.1}", reps.len());
    assert!((total - mean).abs() <= half, "{total} runs, expected {mean} +- {half:.1}");
}

/// The machine-repairman model: `users` users thinking for a mean `think_s` (any
/// distribution: the delay station is insensitive), `servers` exponential servers at rate `mu`.
/// Returns (throughput X per second, response time R = N / X - Z in seconds).
fn machine_repairman(users: u32, servers: u32, mu: f64, think_s: f64) -> (f64, f64) {
    let lambda = 1.0 / think_s;
    let mut p = vec![1.0f64];
    for n in 1..=users {
        let birth = f64::from(users - (n - 1)) * lambda;
        let death = f64::from(n.min(servers)) * mu;
        p.push(p[(n - 1) as usize] * birth / death);
    }
    let total: f64 = p.iter().sum();
    let x: f64 = p.iter().enumerate().map(|(n, pn)| pn / total * f64::from((n as u32).min(servers)) * mu).sum();
    (x, f64::from(users) / x - think_s)
}

#[test]
fn closed_population_matches_the_machine_repairman_closed_form() {
    // (users, servers, mean service ms, wait_time, its mean in s): a heavily loaded pair of
    // servers with exponential thinking, and one server with uniform thinking (Locust's between).
    let cases = [(20, 2, 100.0, "{ exponential_mean_s = 1 }", 1.0), (10, 1, 200.0, "{ between_s = [1, 3] }", 2.0)];
    let checks = 3 * cases.len();
    for (users, servers, mean_ms, wait, think_s) in cases {
        let load = format!("[workflow.arrivals.users]\ncount = {users}\nwait_time = {wait}\n");
        let (duration_s, warmup_s) = (4000.0, 200.0);
        let m = model(&station(&load, servers, mean_ms, duration_s, warmup_s, ""));
        let reps = replicate(&m, 0);
        let (x, r) = machine_repairman(users, servers, 1000.0 / mean_ms, think_s);
        let label = format!("N {users}, c {servers}, S {mean_ms} ms, Z {think_s} s");
        assert_in_ci(&format!("{label}: R ms"), &metric(&reps, "run_latency_ms.mean"), 1000.0 * r, checks);
        let throughput: Vec<f64> = reps.iter().map(|m| m["logical_run_total"] / (duration_s - warmup_s)).collect();
        assert_in_ci(
            &format!("{label}: X per s"),
            &faultline::metrics::stats::estimate(throughput.iter().copied()),
            x,
            checks,
        );
        // The interactive response time law on the simulated figures themselves.
        let law: Vec<f64> = reps
            .iter()
            .zip(&throughput)
            .map(|(m, x)| 1000.0 * (f64::from(users) / x - m["think_time_s.mean"]))
            .collect();
        assert_in_ci(
            &format!("{label}: N/X - Z ms"),
            &faultline::metrics::stats::estimate(law.into_iter()),
            1000.0 * r,
            checks,
        );
        for m in &reps {
            assert_eq!(m["users_active.mean"], f64::from(users), "every user stays");
            assert_eq!(m["abandoned_run_total"], 0.0);
        }
    }
}

#[test]
fn a_user_who_gives_up_starts_thinking_while_the_run_goes_on() {
    // Service takes 10 s on average (exponential); users give up after 1 s and think a
    // constant 4 s. A user's cycle is min(S, 1 s) + 4 s, so X = 50 / (4 + 10 (1 - e^-0.1)) =
    // 10.098 per second, and a share e^-0.1 = 0.905 of the runs is abandoned, each still served
    // for its whole service time (the run goes on). Were abandoned runs cancelled, or did the
    // users wait for the answer, the latency or the throughput (50 / 14 = 3.6) would differ.
    let load = "[workflow.arrivals.users]\ncount = 50\nwait_time = { constant_s = 4 }\nabandon_after_ms = 1000\n";
    let (duration_s, warmup_s) = (600.0, 100.0);
    let m = model(&station(load, 1000, 10_000.0, duration_s, warmup_s, ""));
    let expected_x = 50.0 / (4.0 + 10.0 * (1.0 - (-0.1f64).exp()));
    for rep in replicate(&m, 0) {
        let x = rep["logical_run_total"] / (duration_s - warmup_s);
        assert!((x - expected_x).abs() < 0.02 * expected_x, "X {x}, expected {expected_x}");
        let share = rep["abandoned_run_total"] / rep["logical_run_total"];
        assert!((share - (-0.1f64).exp()).abs() < 0.03, "abandoned share {share}");
        assert!(rep["run_latency_ms.mean"] > 8_000.0, "{}", rep["run_latency_ms.mean"]);
        assert!((rep["think_time_s.mean"] - 4.0).abs() < 1e-9);
    }
}

#[test]
fn users_who_leave_after_a_failure_are_not_replaced() {
    // Every attempt fails and every user leaves after a failure: each of the 30 users makes
    // exactly one run.
    let load = "[workflow.arrivals.users]\ncount = 30\nspawn_rate = 10\nwait_time = { constant_s = 1 }\nleave_after_failure = 1\n";
    let errors = "errors = { transient_transport = 1.0 }";
    let m = model(&station(load, 10, 100.0, 300.0, 0.0, errors));
    for rep in replicate(&m, 0) {
        assert_eq!(rep["logical_run_total"], 30.0);
        assert_eq!(rep["user_left_total"], 30.0);
        // Each is gone about 0.1 s after joining, so a few are ever present at once.
        assert!((1.0..10.0).contains(&rep["users_active.max"]), "{}", rep["users_active.max"]);
        // 10 per second from t = 0: all 30 joined by 2.9 s, and gone about 0.1 s after joining.
        assert!(rep["users_active.mean"] < 30.0 * 3.5 / 300.0, "{}", rep["users_active.mean"]);
    }
    // With leave_after_failure = 0 they stay: every user keeps cycling.
    let load = load.replace("leave_after_failure = 1", "leave_after_failure = 0");
    let m = model(&station(&load, 10, 100.0, 300.0, 0.0, errors));
    for rep in replicate(&m, 0) {
        assert!(rep["logical_run_total"] > 30.0 * 250.0, "{}", rep["logical_run_total"]);
        assert_eq!(rep["user_left_total"], 0.0);
    }
}

#[test]
fn user_stages_follow_the_linear_ramp_one_user_at_a_time() {
    // 0 to 50 users over 100 s (user k joins at 2k s), then 50 for 100 s: the integral of the
    // count over [0, 200) is 2 x (0 + 1 + ... + 49) + 50 x 100 = 7450 user-seconds.
    let load = "[workflow.arrivals.users]\nstages = [{ duration_s = 100, target = 50 }, { duration_s = 100, target = 50 }]\nwait_time = { exponential_mean_s = 5 }\n";
    let m = model(&station(load, 100, 10.0, 200.0, 0.0, ""));
    for rep in replicate(&m, 0) {
        assert!((rep["users_active.mean"] - 7450.0 / 200.0).abs() < 1e-9, "{}", rep["users_active.mean"]);
        assert_eq!(rep["users_active.max"], 50.0);
    }
    // A ramp down lets users go at their next decision: fewer users on average than the ramp
    // up and down would hold if nobody left, more than the ramp itself (they leave late).
    let load = "[workflow.arrivals.users]\nstart_users = 40\nstages = [{ duration_s = 100, target = 0 }]\nwait_time = { constant_s = 1 }\n";
    let m = model(&station(load, 100, 10.0, 200.0, 0.0, ""));
    for rep in replicate(&m, 0) {
        // The ramp holds 40 users for 2.5 s, then 39, ..., 1: 2.5 x 820 = 2050 user-seconds over
        // 200 s (10.25); a user leaves within one cycle (about 1.01 s) of being let go.
        let mean = rep["users_active.mean"];
        assert!((10.25..10.25 + 40.0 * 1.1 / 200.0).contains(&mean), "{mean}");
    }
}

#[test]
fn closed_load_self_limits_under_a_slow_dependency() {
    // From 300 s to 600 s the station's service takes 20 times longer. Open arrivals keep
    // coming at the rate the users made before; the users wait, so fewer runs start.
    let fault = "[[fault]]\nkind = \"latency\"\ntarget = \"station\"\nstart_s = 300\nduration_s = 300\nservice_time = { dist = \"exponential\", mean_ms = 2000 }\n";
    let closed = "[workflow.arrivals.users]\ncount = 100\nwait_time = { exponential_mean_s = 10 }\n";
    let m = model(&(station(closed, 20, 100.0, 900.0, 100.0, "") + fault));
    let reps = replicate(&m, 0);
    let before = reps.iter().map(|r| r["logical_run_total"]).sum::<f64>();
    let during = reps.iter().map(|r| r["incident.logical_run_total"]).sum::<f64>();
    let healthy_rate = (before - during) / (500.0 * reps.len() as f64);
    let incident_rate = during / (300.0 * reps.len() as f64);
    eprintln!("closed: {healthy_rate:.2} runs/s healthy, {incident_rate:.2} during the fault");
    // Healthy: X = 100 / (0.1 + 10) = 9.9/s. Slow: 20 servers at 0.5/s serve 10/s at most, so
    // users queue and X falls to about 100 / (R + 10) with R >= 2 s.
    assert!(incident_rate < 0.85 * healthy_rate, "{incident_rate} vs {healthy_rate}");
    let open = "arrivals = { rate_per_s = 9.9 }";
    let m = model(&(station(open, 20, 100.0, 900.0, 100.0, "") + fault));
    let reps = replicate(&m, 0);
    let incident_rate = reps.iter().map(|r| r["incident.logical_run_total"]).sum::<f64>() / (300.0 * reps.len() as f64);
    eprintln!("open: {incident_rate:.2} runs/s during the fault");
    assert!((incident_rate - 9.9).abs() < 0.3, "{incident_rate}");
}

/// The users in the time series (timeseries.csv's `users.active`, `users.thinking`, sampled at
/// each window's end), from outside: 0 to 40 users over 200 s (k6 stages), 40 held, then down
/// to 10 over 200 s; 4 exponential servers of mean 500 ms, exponential thinking of
/// mean 4 s, 4000 s held. During the ramp up the count is the ramp's: a user joins as the ramp crosses its
/// whole number, and a sample taken at a crossing comes before the join, so the ramp's value
/// r(t) at the window's end gives r - 1 <= active <= r. During the hold the share of users
/// thinking is, by Little's law on the think station, X Z / N = Z / (Z + R), with X from the
/// machine-repairman closed form. During the ramp down a user let go leaves at its next
/// decision (an answer or a wake), so the count lags the ramp by less than a cycle.
#[test]
fn users_per_window_follow_the_stages_and_think_as_littles_law_says() {
    let (users, servers, mean_ms, think_s) = (40u32, 4u32, 500.0, 4.0);
    // The hold ends at `down`; the run at `down` + 400 s.
    let (hold_s, down) = (4000.0, 4200.0);
    let load = format!(
        "[workflow.arrivals.users]\nstages = [{{ duration_s = 200, target = {users} }}, {{ duration_s = {hold_s}, target = {users} }}, {{ duration_s = 200, target = 10 }}]\nwait_time = {{ exponential_mean_s = {think_s} }}\n"
    );
    let text = station(&load, servers, mean_ms, down + 400.0, 0.0, "");
    let dir = std::env::temp_dir().join(format!("faultline-users-series-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("s.toml"), &text).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(["run", "s.toml", "-o", "out"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(dir.join("out/plain/timeseries.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("{name} in {header:?}"));
    let (end, active, thinking) = (at("window_end_s"), at("users.active"), at("users.thinking"));
    assert_eq!(&header[header.len() - 2..], ["users.active", "users.thinking"], "last, after every other column");
    let rows: Vec<Vec<f64>> =
        lines.map(|l| l.split(',').map(|v| v.parse::<f64>().unwrap_or(f64::NAN)).collect()).collect();
    // The k6 ramp's value at time t.
    let ramp = |t: f64| {
        if t <= 200.0 {
            f64::from(users) * t / 200.0
        } else if t <= down {
            f64::from(users)
        } else if t <= down + 200.0 {
            f64::from(users) - 30.0 * (t - down) / 200.0
        } else {
            10.0
        }
    };
    let mut checked = 0;
    for row in &rows {
        let (t, a, th) = (row[end], row[active], row[thinking]);
        if t > down + 400.0 {
            continue;
        }
        assert!((0.0..=a).contains(&th), "t {t}: {th} thinking of {a}");
        if t <= down {
            // The same in every replication, so the mean is the count itself.
            assert!(ramp(t) - 1.0 <= a && a <= ramp(t), "t {t}: {a} users, the ramp {}", ramp(t));
        } else {
            // Let go, a user still present is waiting for an answer or thinking: a cycle
            // (R about 1.5 s + Z 4 s, exponential) beyond 60 s has a chance below e^-10.
            assert!(
                ramp(t) <= a && a <= ramp(t - 60.0),
                "t {t}: {a} users, the ramp {} ({} 60 s before)",
                ramp(t),
                ramp(t - 60.0)
            );
        }
        checked += 1;
    }
    assert_eq!(checked, 92, "every window of the 4600 s");
    // Little's law during the hold, per replication over the windows ending in (300, 4200] s.
    let m = model(&text);
    let (x, r) = machine_repairman(users, servers, 1000.0 / mean_ms, think_s);
    let expected = think_s / (think_s + r);
    let shares: Vec<f64> = (0..m.world.replications)
        .map(|rep| {
            let series = simulate(&m, 0, replication_seed(m.world.seed, rep)).unwrap().timeseries;
            let user_columns = faultline::metrics::timeseries::USER_COLUMNS.len();
            let (a, t) = (series.stride() - user_columns, series.stride() - user_columns + 1);
            let rows = 6..84;
            let active: u64 = rows.clone().map(|row| series.value(row, a)).sum();
            let thinking: u64 = rows.map(|row| series.value(row, t)).sum();
            assert_eq!(active, 78 * u64::from(users), "the hold keeps every user");
            thinking as f64 / active as f64
        })
        .collect();
    eprintln!(
        "X {x:.3}/s, R {r:.3} s: thinking share Z / (Z + R) = {expected:.4} = X Z / N {:.4}",
        x * think_s / f64::from(users)
    );
    assert_in_ci("thinking share", &faultline::metrics::stats::estimate(shares.into_iter()), expected, 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn validate(text: &str, name: &str) -> (i32, String) {
    let dir = std::env::temp_dir().join(format!("faultline-load-shapes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_faultline")).arg("validate").arg(&path).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!err.contains("panicked"), "{err}");
    (o.status.code().unwrap_or(-1), err)
}

#[test]
fn a_bad_load_is_an_error_at_its_field() {
    let cases: [(&str, &[&str]); 10] = [
        (
            "arrivals = { stages = [{ duration_s = -5, target = 10 }] }",
            &["bad.toml:19:26: ", "workflow[0].arrivals.stages[0].duration_s", ">= 0"],
        ),
        ("arrivals = { stages = [] }", &["workflow[0].arrivals.stages", "at least one stage"]),
        ("arrivals = { rate_per_s = 5, start_rate = 2 }", &["workflow[0].arrivals.start_rate", "goes with `stages`"]),
        (
            "arrivals = { rate_per_s = 5, stages = [{ duration_s = 5, target = 1 }] }",
            &["workflow[0].arrivals", "exactly one of"],
        ),
        (
            "arrivals = { users = { count = 0, wait_time = { constant_s = 5 } } }",
            &["workflow[0].arrivals.users.count", "at least 1 user"],
        ),
        (
            "arrivals = { users = { count = 2.5, wait_time = { constant_s = 5 } } }",
            &["workflow[0].arrivals.users.count", "whole number"],
        ),
        (
            "arrivals = { users = { count = 5, wait_time = { constant_s = 0 } } }",
            &["workflow[0].arrivals.users.wait_time.constant_s", "think time > 0"],
        ),
        (
            "arrivals = { users = { count = 5, wait_time = { between_s = [3, 1] } } }",
            &["workflow[0].arrivals.users.wait_time.between_s", "min <= max"],
        ),
        (
            "arrivals = { users = { stages = [{ duration_s = 10, target = 0 }], wait_time = { constant_s = 1 } } }",
            &["workflow[0].arrivals.users.stages", "never have a user"],
        ),
        (
            "arrivals = { users = { count = 5, wait_time = { constant_s = 1 } } }\nresubmit = { probability = 0.3, delay_ms = 5000 }",
            &["workflow[0].resubmit", "drop `resubmit`"],
        ),
    ];
    for (load, fragments) in cases {
        let text = station(load, 1, 10.0, 100.0, 0.0, "");
        let (code, err) = validate(&text, "bad.toml");
        assert_eq!(code, 2, "{load}: {err}");
        assert!(err.starts_with("error: "), "{err}");
        for f in fragments {
            assert!(err.contains(f), "{load}: `{f}` not in {err}");
        }
    }
    let (code, err) = validate(
        &station(
            "arrivals = { users = { count = 5, wait_time = { constant_s = 1 }, abandon_after_ms = -1 } }",
            1,
            10.0,
            100.0,
            0.0,
            "",
        ),
        "bad.toml",
    );
    assert_eq!(code, 2);
    assert!(err.contains("workflow[0].arrivals.users.abandon_after_ms") && err.contains("bad.toml:"), "{err}");
}

/// The arrival bound counts a closed population's users starting a run every mean think time:
/// 10 000 users thinking between 1 and 3 ms (a mean of 2 ms) for 3 600 s is 1.8e10 runs, over
/// the 1e9 limit. A mean read as anything but (min + max) / 2 names another figure or none.
#[test]
fn a_closed_population_s_arrival_bound_uses_the_mean_think_time() {
    let load = "arrivals = { users = { count = 10000, wait_time = { between_s = [0.001, 0.003] } } }";
    let (code, err) = validate(&station(load, 1, 10.0, 3600.0, 0.0, ""), "busy.toml");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("about 1.800e10 arrivals per replication"), "{err}");
    // A tenth of the users for a tenth of the time is 1.8e8: within the bound.
    let load = "arrivals = { users = { count = 1000, wait_time = { between_s = [0.001, 0.003] } } }";
    let (code, err) = validate(&station(load, 1, 10.0, 360.0, 0.0, ""), "fine.toml");
    assert_eq!(code, 0, "{err}");
}

#[test]
fn the_closed_incident_validates_and_differs_from_the_open_one_only_in_its_load() {
    let root = env!("CARGO_MANIFEST_DIR");
    let open = std::fs::read_to_string(format!("{root}/scenarios/meeting-analysis-incident.toml")).unwrap();
    let closed = std::fs::read_to_string(format!("{root}/scenarios/meeting-analysis-incident-closed.toml")).unwrap();
    let strip = |t: &str| -> Vec<String> {
        let body = &t[t.find("[simulation]").unwrap()..];
        let workflow = body.find("[[workflow]]").unwrap();
        let steps = body.find("  [[workflow.step]]").unwrap();
        format!("{}{}", &body[..workflow], &body[steps..]).lines().map(str::to_string).collect()
    };
    assert_eq!(strip(&open), strip(&closed), "the closed variant keeps everything but the workflow's load");
    let o = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .arg("validate")
        .arg(format!("{root}/scenarios/meeting-analysis-incident-closed.toml"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// `--set` reaches the new load fields from the command line as it reaches the others: a
/// closed population's count, think time and stages, and an open load replaced by k6 stages
/// with a time unit. Each changes the figures as the closed forms say; a bad value is exit 2
/// naming the field, as in the file.
#[test]
fn set_on_the_command_line_shapes_the_load() {
    let dir = std::env::temp_dir().join(format!("faultline-load-set-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let users = "[workflow.arrivals.users]\ncount = 10\nwait_time = { constant_s = 1 }";
    let text = station(users, 4, 10.0, 200.0, 0.0, "").replace("replications = 10", "replications = 2");
    std::fs::write(dir.join("s.toml"), text).unwrap();
    let run = |sets: &[&str]| -> serde_json::Value {
        let mut args = vec!["run", "s.toml", "-o", "out", "--format", "json"];
        for s in sets {
            args.extend(["--set", s]);
        }
        let o = Command::new(env!("CARGO_BIN_EXE_faultline")).args(&args).current_dir(&dir).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{sets:?}: {}", String::from_utf8_lossy(&o.stderr));
        let summary = std::fs::read(dir.join("out/plain/summary.json")).unwrap();
        serde_json::from_slice::<serde_json::Value>(&summary).unwrap()["metrics"].clone()
    };
    let figure = |s: &serde_json::Value, m: &str| s[m].as_f64().unwrap_or_else(|| panic!("{m} in {s}"));
    // 10 users, 1 s think, ~10 ms service on 4 servers: X ~ N / (Z + S) = 9.9/s.
    let base = run(&[]);
    assert_eq!(figure(&base, "users_active.max"), 10.0);
    let x = figure(&base, "logical_run_total") / 200.0;
    assert!((x - 10.0 / 1.01).abs() < 0.3, "{x}/s");
    // Twice the users: twice the runs.
    let more = run(&["workflow.customers.arrivals.users.count=20"]);
    assert_eq!(figure(&more, "users_active.max"), 20.0);
    let ratio = figure(&more, "logical_run_total") / figure(&base, "logical_run_total");
    assert!((ratio - 2.0).abs() < 0.05, "{ratio}");
    // A think time of 4 s: N / (Z + S) = 2.49/s.
    let slow = run(&["workflow.customers.arrivals.users.wait_time={ constant_s = 4 }"]);
    assert_eq!(figure(&slow, "think_time_s.mean"), 4.0);
    let x = figure(&slow, "logical_run_total") / 200.0;
    assert!((x - 10.0 / 4.01).abs() < 0.1, "{x}/s");
    // Users as k6 stages: 0 to 10 over 100 s, then held. User k joins when the ramp crosses k,
    // at 10k s: (sum over k of 200 - 10k) / 200 = 7.25 users on average (a joiner stays).
    let ramp = run(&[
        "workflow.customers.arrivals.users={ stages = [{ duration_s = 100, target = 10 }], wait_time = { constant_s = 1 } }",
    ]);
    let mean_users = figure(&ramp, "users_active.mean");
    assert!((mean_users - 7.25).abs() < 0.01, "{mean_users}");
    // The closed load replaced by an open ramp in runs per minute: 300 to 900 per minute over
    // the 200 s is 200 x (5 + 15) / 2 = 2000 runs a replication, and no users.
    let open = run(&[
        "workflow.customers.arrivals={ start_rate = 300, time_unit_s = 60, stages = [{ duration_s = 200, target = 900 }] }",
    ]);
    let runs = figure(&open, "logical_run_total");
    // Poisson: the mean of 2 replications has a standard deviation of sqrt(2000 / 2).
    assert!((runs - 2000.0).abs() < 3.3 * (2000.0f64 / 2.0).sqrt(), "{runs}");
    assert!(open.get("users_active.mean").is_none(), "{open}");
    // A bad value is refused at its field, exit 2.
    for (set, says) in [
        ("workflow.customers.arrivals.users.count=0", "workflow[0].arrivals.users.count"),
        (
            "workflow.customers.arrivals.users.wait_time={ between_s = [3, 1] }",
            "workflow[0].arrivals.users.wait_time.between_s",
        ),
        ("workflow.customers.arrivals.users.spawn_rate=-1", "workflow[0].arrivals.users.spawn_rate"),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_faultline"))
            .args(["run", "s.toml", "-o", "bad", "--set", set])
            .current_dir(&dir)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{set}: {err}");
        assert!(err.contains(says) && !err.contains("panicked"), "{set}: {err}");
    }
    assert!(!dir.join("bad").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Locust's constant_pacing(s): the wait is s less the run's time, so each user starts a run
/// every s seconds while runs take less than s (X = N / s, whatever the response time), and back
/// to back once they take longer (X = N / R, no think time). constant_throughput(x) is
/// constant_pacing(1 / x). Against `constant_s`, whose throughput N / (s + R) falls with R.
#[test]
fn constant_pacing_starts_a_run_every_pace_whatever_the_run_takes() {
    let runs_per_s = |wait: &str, service_ms: f64| -> f64 {
        let load = format!("[workflow.arrivals.users]\ncount = 10\nwait_time = {wait}");
        let m = model(&station(&load, 10, service_ms, 400.0, 0.0, ""));
        let reps = replicate(&m, 0);
        reps.iter().map(|r| r["logical_run_total"]).sum::<f64>() / reps.len() as f64 / 400.0
    };
    // Pace 2 s, runs of ~0.5 s on 10 servers (no queue): 10 / 2 = 5 runs/s; constant 2 s gives
    // 10 / 2.5 = 4.
    let paced = runs_per_s("{ constant_pacing_s = 2 }", 500.0);
    assert!((paced - 5.0).abs() < 0.05, "paced {paced}/s");
    let throughput = runs_per_s("{ constant_throughput_per_s = 0.5 }", 500.0);
    assert_eq!(throughput, paced, "constant_throughput(0.5) is constant_pacing(2)");
    let constant = runs_per_s("{ constant_s = 2 }", 500.0);
    assert!((constant - 4.0).abs() < 0.1, "constant {constant}/s");
    // Runs of 4 s on average (exponential) against a 2 s pace: mostly back to back. Each cycle
    // lasts C = max(2, S): E C = 2 + 4 e^(-1/2) = 4.426 s, E C^2 = 4 (1 - e^(-1/2)) + 52 e^(-1/2).
    // A renewal process that starts with a run at 0 makes (t + (Var C + (E C)^2) / (2 E C)) / E C
    // runs by t: 2.2805 runs/s for each 10 users over 400 s (2.259 without the first run's edge).
    let slow = runs_per_s("{ constant_pacing_s = 2 }", 4000.0);
    let e = (-0.5f64).exp();
    let (mean, second) = (2.0 + 4.0 * e, 4.0 * (1.0 - e) + 52.0 * e);
    let expected = 10.0 * (400.0 / mean + second / (2.0 * mean * mean)) / 400.0;
    assert!((slow - expected).abs() < 0.05, "slow {slow}/s against {expected}");
    let (code, err) = validate(
        &station("[workflow.arrivals.users]\ncount = 10\nwait_time = { constant_pacing_s = 0 }", 1, 1.0, 10.0, 0.0, ""),
        "pacing.toml",
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("workflow[0].arrivals.users.wait_time.constant_pacing_s"), "{err}");
    let (code, err) = validate(
        &station(
            "[workflow.arrivals.users]\ncount = 10\nwait_time = { constant_s = 1, constant_pacing_s = 2 }",
            1,
            1.0,
            10.0,
            0.0,
            "",
        ),
        "two.toml",
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("give exactly one of"), "{err}");
}
