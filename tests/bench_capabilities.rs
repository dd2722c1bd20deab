//! The throughput bench prices each capability family by switching it off in the incident
//! (benches/support/capabilities.rs). These tests check, from the simulations' own figures,
//! that each switch turns its own family off and leaves every other family as it was, so that
//! no two rows of the bench's table measure the same thing; and that the bare event loop the
//! engine is measured against is a correct M/M/c, so the ratio compares like with like.

#[path = "../benches/support/bare_mmc.rs"]
mod bare_mmc;
#[path = "../benches/support/capabilities.rs"]
mod capabilities;
mod common;

use capabilities::{Family, variants};
use common::*;
use faultline::engine::{simulate, simulate_following};
use faultline::runtime::trace::RunTracer;

/// Whether each family shows in one simulation of a variant under `policy`.
fn seen(v: &capabilities::Variant, policy: usize) -> Vec<(Family, bool)> {
    let m = model(&v.text);
    let (r, tracer) = if v.traced {
        let (r, t) = simulate_following(&m, policy, 7, RunTracer::for_runs(&[1])).unwrap();
        (r, Some(t))
    } else {
        (simulate(&m, policy, 7).unwrap(), None)
    };
    // A family's metrics may be absent where it is off (the token counts are); the baseline
    // row, where every family but traces is on, shows that each name is right.
    let f = |name: &str| r.metrics.get(name).copied().unwrap_or(0.0);
    Family::ALL
        .iter()
        .map(|&family| {
            let on = match family {
                Family::Tokens => f("dependency.model-primary.input_tokens_total") > 0.0,
                // The mode machine runs wherever a policy has rules: its time is accounted in
                // modes (NORMAL at least). Transitions are not the test: with the guards off the
                // incident's budget rule never fires (no bulkhead, no refusals at the model), so
                // the machine is priced while it stays NORMAL.
                Family::Modes => f("degradation_mode_time_s.normal") > 0.0,
                // The specialist's tasks run on its worker (control requests there); with tasks off
                // the worker is called synchronously (attempts), so the work stays and only the
                // tasks go.
                Family::Tasks => {
                    let work = f("dependency.specialist-worker.attempt_total")
                        + f("dependency.specialist-worker.control_request_total");
                    assert!(work > 0.0, "{}: the specialist's work is gone", v.label);
                    f("task_created_total") > 0.0
                }
                Family::Guards => f("refused_total.bulkhead") > 0.0,
                Family::TimeSeries => r.timeseries.rows() > 1,
                Family::Traces => tracer.as_ref().is_some_and(|t| !t.runs.is_empty() && !t.events.is_empty()),
            };
            (family, on)
        })
        .collect()
}

#[test]
fn each_capability_switch_turns_off_its_own_family_and_no_other() {
    let text = std::fs::read_to_string("scenarios/meeting-analysis-incident.toml").unwrap();
    let all = variants(&text);
    assert_eq!(all.len(), 1 + Family::ALL.len());
    let resilient = model(&text).policy_index("resilient").unwrap();
    for v in &all {
        for (family, on) in seen(v, resilient) {
            assert_eq!(
                on,
                v.on(family),
                "{}: {} should be {}",
                v.label,
                family.name(),
                if v.on(family) { "on" } else { "off" }
            );
        }
    }
}

#[test]
fn the_bare_loop_is_an_mmc_queue() {
    // M/M/4, rho 0.8: Erlang C gives P(wait) = 0.5964 and Wq = C / (c mu - lambda) = 74.55 ms.
    // Ten independent runs of 2 000 s; the mean wait must lie within the 95 % interval.
    let waits: Vec<f64> =
        (0..10).map(|seed| bare_mmc::mmc(4, 100_000.0, 32.0, 2_000_000_000, seed).mean_wait_us / 1e3).collect();
    let mean = waits.iter().sum::<f64>() / waits.len() as f64;
    let sd = (waits.iter().map(|w| (w - mean).powi(2)).sum::<f64>() / (waits.len() - 1) as f64).sqrt();
    let half = t_quantile(0.975, 9) * sd / (waits.len() as f64).sqrt();
    let wq = 1e3 * mmc_wq(4, 32.0, 10.0);
    assert!((mean - wq).abs() <= half, "bare loop Wq {mean:.2} ± {half:.2} ms, Erlang C {wq:.2} ms");
    let run = bare_mmc::mmc(4, 100_000.0, 32.0, 2_000_000_000, 1);
    // Every customer is an arrival and a departure.
    assert_eq!(run.events, 2 * run.served);
    assert!((run.served as f64 - 64_000.0).abs() < 4.0 * 64_000f64.sqrt(), "served {}", run.served);
}
