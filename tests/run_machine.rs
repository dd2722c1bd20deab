//! The run machine without the engine: inputs (start, attempt results, wake-ups) in, exact
//! commands and observations out. Models are compiled from scenario text; the guard pipeline
//! has no guards yet, so every route admits.

mod common;
use common::*;

use faultline::engine::Model;
use faultline::metrics::Observation;
use faultline::runtime::degradation::RunMode;
use faultline::runtime::guard::Loads;
use faultline::runtime::guard::pipeline::Pipeline;
use faultline::runtime::hedging::Hedging;
use faultline::runtime::policy::PolicyModel;
use faultline::runtime::run::NORMAL_RUN;
use faultline::runtime::step::StepPhase;
use faultline::runtime::{AttemptResult, Command, Outbox, Purpose, RunBudget, RunContext, RunMachine};
use faultline::sim::{Micros, StreamKey};
use faultline::vocab::{BudgetKind, DegradationMode, DegradedReason, EvidenceLevel, FailureKind, Outcome};
use faultline::world::Station;
use std::collections::BTreeSet;

/// Every run starts at this time, so that absolute and relative times differ.
const T0: Micros = 1_000_000;
const LLM: u16 = 0;
const TOOLS: u16 = 1;
const BACKUP: u16 = 2;
const TICKETS: u16 = 3;

/// What one input produced.
type Out = (Vec<Command>, Vec<Observation>);

fn scenario(deadline_ms: u64, steps: &str, policy: &str) -> String {
    let dep = |name: &str, cost: f64, extra: &str| {
        format!(
            "[[dependency]]\nname = \"{name}\"\nservers = 4\ncost_units = {cost:?}\n\
             service_time = {{ dist = \"constant\", value_ms = 100 }}\n{extra}\n"
        )
    };
    let lookup = "status_lookup_time = { dist = \"constant\", value_ms = 10 }";
    format!(
        "[simulation]\nduration_s = 10\nseed = 1\n\n{}{}{}{}\n[[workflow]]\nname = \"w\"\n\
         arrivals = {{ rate_per_s = 1 }}\ndeadline_ms = {deadline_ms}\n{steps}\n\n[policy.p]\n{policy}\n",
        dep("llm", 2.0, ""),
        dep("tools", 1.0, ""),
        dep("backup", 0.5, ""),
        dep("tickets", 1.0, lookup),
    )
}

/// `[[workflow.step]]` blocks from (id, dependency, extra fields).
fn steps(list: &[(&str, &str, &str)]) -> String {
    list.iter()
        .map(|(id, dep, extra)| format!("[[workflow.step]]\nid = \"{id}\"\ndependency = \"{dep}\"\n{extra}\n"))
        .collect()
}

const BASE: &str = "timeout_ms = 2000\nretry = { max_attempts = 3, backoff = { kind = \"none\" } }";
const EXPONENTIAL: &str = "timeout_ms = 2000\nretry = { max_attempts = 3, backoff = { kind = \"exponential\", \
                           base_ms = 200, max_ms = 2000, jitter = \"none\" } }";

fn single() -> String {
    steps(&[("s", "llm", "")])
}

fn linear() -> String {
    steps(&[("plan", "llm", ""), ("search", "tools", "after = [\"plan\"]"), ("answer", "llm", "after = [\"search\"]")])
}

fn diamond() -> String {
    steps(&[
        ("a", "llm", ""),
        ("b", "tools", "after = [\"a\"]"),
        ("c", "llm", "after = [\"a\"]"),
        ("d", "llm", "after = [\"b\", \"c\"]"),
    ])
}

fn write_step() -> String {
    steps(&[("save", "tickets", "effect = \"write\"\nidempotency = \"key\"\nstatus_lookup = true")])
}

/// One run machine fed by hand, with the model it runs on.
struct Harness {
    model: Model,
    policy: PolicyModel,
    costs: Vec<f64>,
    wf: usize,
    machine: RunMachine,
    out: Outbox,
    now: Micros,
    /// How the run is treated by the degradation modes, and whether writes are paused now.
    mode: RunMode,
    writes_paused: bool,
}

impl Harness {
    fn new(text: &str) -> Self {
        Self::of_workflow(text, 0)
    }

    fn of_workflow(text: &str, wf: usize) -> Self {
        let model = model(text);
        let policy = model.policies[0].clone();
        let costs = model.world.dependencies.iter().map(|d| d.cost_units).collect();
        let (machine, out) = (RunMachine::vacant(), Outbox::default());
        let mut h = Harness { model, policy, costs, wf, machine, out, now: T0, mode: NORMAL_RUN, writes_paused: false };
        h.reset(1);
        h
    }

    fn hedged(mut self, delay_ms: u64, max_hedged_attempts: u32) -> Self {
        self.policy.hedging = Some(Hedging { delay_us: delay_ms * 1_000, max_hedged_attempts });
        for mode in &mut self.policy.modes {
            mode.hedging = true;
        }
        self
    }

    /// A fresh run at T0 under the current policy; `seed` keys its random draws.
    fn reset(&mut self, seed: u64) {
        self.now = T0;
        let deadline_at = T0 + self.model.world.workloads[self.wf].deadline_us;
        let budget = RunBudget::new(&self.policy.modes[self.mode.overrides.index()].budget, deadline_at);
        let (workflow, key) = (&self.model.workflows[self.wf], StreamKey::root(seed));
        self.machine.reset(self.wf as u16, workflow, key, T0, budget, self.mode);
    }

    /// Moves the clock to T0 + `us`.
    fn at(&mut self, us: Micros) -> &mut Self {
        self.now = T0 + us;
        self
    }

    fn input(&mut self, f: impl FnOnce(&mut RunMachine, &mut RunContext, &mut Outbox)) -> Out {
        let mut pipeline = Pipeline::new(&self.policy.pipeline);
        let stations: Vec<Station> = self.model.world.dependencies.iter().map(Station::new).collect();
        let mut cx = RunContext {
            now: self.now,
            workflow: &self.model.workflows[self.wf],
            policy: &self.policy,
            workflow_index: self.wf,
            costs: &self.costs,
            step_offset: self.model.step_offsets[self.wf] as u32,
            pipeline: &mut pipeline,
            loads: Loads { stations: &stations, dependencies: &self.model.world.dependencies },
            run_slot: 0,
            writes_paused: if self.writes_paused {
                faultline::runtime::degradation::WritePause::All
            } else {
                faultline::runtime::degradation::WritePause::None
            },
            approvals: &mut [],
        };
        f(&mut self.machine, &mut cx, &mut self.out);
        assert!(self.out.shared.is_empty(), "no guards, no shared observations");
        (std::mem::take(&mut self.out.commands), std::mem::take(&mut self.out.observations))
    }

    fn start(&mut self) -> Out {
        self.input(|m, cx, out| m.start(cx, out))
    }

    fn result(&mut self, s: u8, serial: u32, r: AttemptResult) -> Out {
        self.input(|m, cx, out| m.on_attempt_result(cx, out, s, serial, r))
    }

    fn ok(&mut self, s: u8, serial: u32) -> Out {
        self.result(s, serial, AttemptResult::Ok)
    }

    fn fail(&mut self, s: u8, serial: u32, kind: FailureKind) -> Out {
        self.result(s, serial, AttemptResult::Failed { kind, retry_after_us: None })
    }

    fn wake(&mut self, s: u8, wake: u32) -> Out {
        self.input(|m, cx, out| m.on_wake(cx, out, s, wake))
    }
}

fn send(step: u8, serial: u32, dependency: u16, purpose: Purpose, timeout_us: Micros) -> Command {
    Command::Send { step, serial, dependency, purpose, timeout_us: Some(timeout_us) }
}

fn call(step: u8, serial: u32, dependency: u16, timeout_us: Micros) -> Command {
    send(step, serial, dependency, Purpose::Call, timeout_us)
}

fn write(step: u8, serial: u32) -> Command {
    send(step, serial, TICKETS, Purpose::Write { deduplicated: true }, 1_000_000)
}

fn lookup(step: u8, serial: u32) -> Command {
    send(step, serial, TICKETS, Purpose::Lookup, 1_000_000)
}

/// A Sleep until T0 + `until_us`.
fn sleep(step: u8, wake: u32, until_us: Micros) -> Command {
    Command::Sleep { step, wake, until: T0 + until_us }
}

fn cancel(step: u8, serial: u32) -> Command {
    Command::Cancel { step, serial, handle: None }
}

fn end(outcome: Outcome) -> Command {
    Command::End { outcome, deadline_exceeded: false }
}

fn run_ended(outcome: Outcome, latency_us: Micros) -> Observation {
    ended_with(0, outcome, latency_us, 0)
}

/// A run of workflow `workflow` in normal mode that ended in time; `degraded`: the bits of
/// what its result lacks.
fn ended_with(workflow: u16, outcome: Outcome, latency_us: Micros, degraded: u8) -> Observation {
    Observation::RunEnded {
        workflow,
        outcome,
        latency_us,
        deadline_exceeded: false,
        past_deadline: false,
        mode: DegradationMode::Normal,
        degraded,
        evidence: EvidenceLevel::Live,
    }
}

fn none() -> Out {
    (vec![], vec![])
}

const CALL: Observation = Observation::LogicalCall;
const MAX: u32 = u32::MAX;

// ---------------------------------------------------------------------------------------------
// The graph

#[test]
fn a_linear_workflow_sends_one_step_at_a_time_and_succeeds() {
    let mut h = Harness::new(&scenario(10_000, &linear(), BASE));
    assert_eq!(h.start(), (vec![call(0, 0, LLM, 2_000_000)], vec![CALL]));
    assert_eq!(h.machine.attempts_in_flight(), 1);
    assert_eq!(h.at(100_000).ok(0, 0), (vec![call(1, 0, TOOLS, 2_000_000)], vec![CALL]));
    assert_eq!(h.at(250_000).ok(1, 0), (vec![call(2, 0, LLM, 2_000_000)], vec![CALL]));
    let last = h.at(400_000).ok(2, 0);
    assert_eq!(last, (vec![end(Outcome::Succeeded)], vec![run_ended(Outcome::Succeeded, 400_000)]));
    assert!(h.machine.ended);
    assert_eq!(h.machine.outcome, Outcome::Succeeded);
    assert_eq!(h.machine.attempts_in_flight(), 0);
    assert_eq!(h.machine.budget.cost_used, 5.0, "llm 2 + tools 1 + llm 2");
    assert_eq!(h.machine.budget.retry_tokens_left, MAX, "no retry was made");
}

#[test]
fn an_end_past_the_deadline_is_flagged() {
    let policy = "deadline_propagation = false\ntimeout_ms = 2000";
    let mut h = Harness::new(&scenario(1_000, &single(), policy));
    assert_eq!(h.start().0, vec![call(0, 0, LLM, 2_000_000)], "without propagation the cap ignores the deadline");
    let ended = Observation::RunEnded {
        workflow: 0,
        outcome: Outcome::Succeeded,
        latency_us: 1_500_000,
        deadline_exceeded: true,
        past_deadline: true,
        mode: DegradationMode::Normal,
        degraded: 0,
        evidence: EvidenceLevel::Live,
    };
    let end = Command::End { outcome: Outcome::Succeeded, deadline_exceeded: true };
    assert_eq!(h.at(1_500_000).ok(0, 0), (vec![end], vec![ended]));
}

#[test]
fn a_diamond_with_one_concurrency_token_runs_its_branches_one_after_the_other() {
    let policy = format!("{BASE}\nbudget = {{ concurrency_tokens = 1 }}");
    let mut h = Harness::new(&scenario(10_000, &diamond(), &policy));
    assert_eq!(h.start(), (vec![call(0, 0, LLM, 2_000_000)], vec![CALL]));
    let waits = Observation::BudgetExhausted(BudgetKind::Concurrency);
    assert_eq!(h.at(100_000).ok(0, 0), (vec![call(1, 0, TOOLS, 2_000_000)], vec![CALL, waits]));
    assert_eq!(h.machine.steps[2].phase, StepPhase::Waiting);
    assert_eq!(h.machine.budget.in_flight, 1);
    assert_eq!(h.at(200_000).ok(1, 0), (vec![call(2, 0, LLM, 2_000_000)], vec![CALL]), "c only after b");
    assert_eq!(h.machine.steps[3].phase, StepPhase::Blocked, "d still waits for c");
    assert_eq!(h.at(300_000).ok(2, 0), (vec![call(3, 0, LLM, 2_000_000)], vec![CALL]));
    let last = h.at(400_000).ok(3, 0);
    assert_eq!(last, (vec![end(Outcome::Succeeded)], vec![run_ended(Outcome::Succeeded, 400_000)]));
}

#[test]
fn a_diamond_join_waits_for_both_branches() {
    let mut h = Harness::new(&scenario(10_000, &diamond(), BASE));
    h.start();
    let both = vec![call(1, 0, TOOLS, 2_000_000), call(2, 0, LLM, 2_000_000)];
    assert_eq!(h.at(100_000).ok(0, 0), (both, vec![CALL, CALL]));
    assert_eq!(h.machine.budget.in_flight, 2);
    assert_eq!(h.at(200_000).ok(1, 0), none(), "d needs c as well");
    assert_eq!(h.machine.steps[3].phase, StepPhase::Blocked);
    assert_eq!(h.at(300_000).ok(2, 0), (vec![call(3, 0, LLM, 2_000_000)], vec![CALL]));
}

#[test]
fn a_step_that_becomes_ready_never_overtakes_a_waiting_one() {
    // a -> b, c; b -> d. With one token, c waits while b runs; d, ready after b, queues behind c.
    let graph = steps(&[
        ("a", "llm", ""),
        ("b", "llm", "after = [\"a\"]"),
        ("c", "llm", "after = [\"a\"]"),
        ("d", "tools", "after = [\"b\"]"),
    ]);
    let policy = format!("{BASE}\nbudget = {{ concurrency_tokens = 1 }}");
    let mut h = Harness::new(&scenario(10_000, &graph, &policy));
    h.start();
    let waits = Observation::BudgetExhausted(BudgetKind::Concurrency);
    assert_eq!(h.at(100_000).ok(0, 0), (vec![call(1, 0, LLM, 2_000_000)], vec![CALL, waits]));
    assert_eq!(h.at(200_000).ok(1, 0), (vec![call(2, 0, LLM, 2_000_000)], vec![waits, CALL]));
    assert_eq!(h.machine.steps[3].phase, StepPhase::Waiting);
    assert_eq!(h.at(300_000).ok(2, 0), (vec![call(3, 0, TOOLS, 2_000_000)], vec![CALL]));
    assert_eq!(h.at(400_000).ok(3, 0).0, vec![end(Outcome::Succeeded)]);
}

// ---------------------------------------------------------------------------------------------
// Retries

#[test]
fn a_failed_attempt_without_backoff_is_retried_at_once() {
    let mut h = Harness::new(&scenario(10_000, &single(), BASE));
    h.start();
    assert_eq!(h.at(100_000).fail(0, 0, FailureKind::Overloaded), (vec![call(0, 1, LLM, 2_000_000)], vec![]));
    assert_eq!(h.machine.steps[0].primary_attempts, 2);
    assert_eq!(h.machine.budget.retry_tokens_left, MAX - 1);
    assert_eq!(h.machine.budget.cost_used, 4.0);
    let last = h.at(200_000).ok(0, 1);
    assert_eq!(last, (vec![end(Outcome::Succeeded)], vec![run_ended(Outcome::Succeeded, 200_000)]));
}

#[test]
fn exponential_backoff_sleeps_and_stale_wakes_do_nothing() {
    let mut h = Harness::new(&scenario(10_000, &single(), EXPONENTIAL));
    h.start();
    assert_eq!(h.at(100_000).fail(0, 0, FailureKind::Overloaded), (vec![sleep(0, 1, 300_000)], vec![]));
    assert_eq!(h.machine.steps[0].phase, StepPhase::Sleeping);
    assert_eq!(h.at(150_000).wake(0, 0), none(), "a token never issued");
    assert_eq!(h.wake(0, 2), none(), "a token not issued yet");
    assert_eq!(h.at(300_000).wake(0, 1), (vec![call(0, 1, LLM, 2_000_000)], vec![]));
    assert_eq!(h.at(310_000).wake(0, 1), none(), "a timer delivered twice");
    assert_eq!(h.at(500_000).fail(0, 1, FailureKind::Overloaded), (vec![sleep(0, 2, 900_000)], vec![]), "doubles");
    assert_eq!(h.at(600_000).wake(0, 1), none(), "the previous timer is stale");
    assert_eq!(h.at(900_000).wake(0, 2), (vec![call(0, 2, LLM, 2_000_000)], vec![]));
    let failed = Observation::StepFailed { step: 0 };
    let last = h.at(1_000_000).fail(0, 2, FailureKind::Overloaded);
    assert_eq!(last, (vec![end(Outcome::Failed)], vec![failed, run_ended(Outcome::Failed, 1_000_000)]));
}

#[test]
fn a_retry_after_is_honoured_for_rate_limits() {
    let mut h = Harness::new(&scenario(10_000, &single(), EXPONENTIAL));
    h.start();
    let limited = AttemptResult::Failed { kind: FailureKind::RateLimited, retry_after_us: Some(700_000) };
    assert_eq!(h.at(100_000).result(0, 0, limited), (vec![sleep(0, 1, 800_000)], vec![]));
}

#[test]
fn the_retry_token_budget_stops_retries_and_a_hard_step_fails_the_run() {
    let policy = format!("{BASE}\nbudget = {{ retry_tokens = 1 }}");
    let mut h = Harness::new(&scenario(10_000, &single(), &policy));
    h.start();
    assert_eq!(h.at(100_000).fail(0, 0, FailureKind::Overloaded).0, vec![call(0, 1, LLM, 2_000_000)]);
    assert_eq!(h.machine.budget.retry_tokens_left, 0);
    let observed = vec![
        Observation::BudgetExhausted(BudgetKind::Retry),
        Observation::StepFailed { step: 0 },
        run_ended(Outcome::Failed, 200_000),
    ];
    assert_eq!(h.at(200_000).fail(0, 1, FailureKind::Overloaded), (vec![end(Outcome::Failed)], observed));
    assert_eq!(h.machine.outcome, Outcome::Failed);
}

#[test]
fn the_retry_token_budget_omits_a_soft_step_and_the_run_ends_degraded() {
    let graph = steps(&[("a", "llm", "criticality = \"soft\""), ("b", "tools", "after = [\"a\"]")]);
    let policy = format!("{BASE}\nbudget = {{ retry_tokens = 1 }}");
    let mut h = Harness::new(&scenario(10_000, &graph, &policy));
    h.start();
    h.at(100_000).fail(0, 0, FailureKind::Overloaded);
    let observed = vec![
        Observation::BudgetExhausted(BudgetKind::Retry),
        Observation::StepOmitted { step: 0, by_mode: false },
        CALL,
    ];
    let next = h.at(200_000).fail(0, 1, FailureKind::Overloaded);
    assert_eq!(next, (vec![call(1, 0, TOOLS, 2_000_000)], observed), "b's first attempt needs no token");
    assert_eq!(h.machine.steps[0].phase, StepPhase::Omitted);
    let last = h.at(300_000).ok(1, 0);
    assert_eq!(
        last,
        (
            vec![end(Outcome::Degraded)],
            vec![ended_with(0, Outcome::Degraded, 300_000, DegradedReason::StepOmitted.bit())]
        )
    );
}

#[test]
fn exhausted_attempts_fall_back_and_the_run_ends_degraded() {
    // The step under test lives in a second workflow, so its observed step index is offset by 2.
    let first = steps(&[("x", "llm", ""), ("y", "tools", "")]);
    let second = format!(
        "\n[[workflow]]\nname = \"v\"\narrivals = {{ rate_per_s = 1 }}\ndeadline_ms = 10000\n{}",
        steps(&[("s", "llm", "fallback = \"backup\"")])
    );
    let policy = "timeout_ms = 2000\nretry = { max_attempts = 2, backoff = { kind = \"none\" } }";
    let mut h = Harness::of_workflow(&scenario(10_000, &(first + &second), policy), 1);
    assert_eq!(h.start(), (vec![call(0, 0, LLM, 2_000_000)], vec![CALL]));
    assert_eq!(h.at(100_000).fail(0, 0, FailureKind::Overloaded).0, vec![call(0, 1, LLM, 2_000_000)]);
    let to_backup = h.at(200_000).fail(0, 1, FailureKind::Overloaded);
    assert_eq!(to_backup, (vec![call(0, 2, BACKUP, 2_000_000)], vec![]));
    assert!(h.machine.steps[0].on_fallback);
    assert_eq!(h.machine.budget.retry_tokens_left, MAX - 1, "the first fallback call is not a retry");
    let ended = ended_with(1, Outcome::Degraded, 300_000, DegradedReason::FallbackUsed.bit());
    let observed = vec![Observation::FallbackUsed { step: 2 }, ended];
    assert_eq!(h.at(300_000).ok(0, 2), (vec![end(Outcome::Degraded)], observed));
    assert_eq!(h.machine.budget.cost_used, 4.5, "llm 2 + llm 2 + backup 0.5");
}

// ---------------------------------------------------------------------------------------------
// Deadline propagation

/// One step with a fallback, a 500 ms downstream reserve and a 3 s deadline.
fn reserved(predicted_ms: Option<u32>) -> Harness {
    let predicted = predicted_ms.map_or(String::new(), |p| format!(", predicted_attempt_ms = {p}"));
    let policy = format!(
        "timeout_ms = 2000\nretry = {{ max_attempts = 5, backoff = {{ kind = \"none\" }} }}\n\
         steps = {{ s = {{ deadline_reserve_ms = 500{predicted} }} }}"
    );
    Harness::new(&scenario(3_000, &steps(&[("s", "llm", "fallback = \"backup\"")]), &policy))
}

/// The run failed because its deadline left no time: no result by the deadline, although it
/// ended before it.
fn out_of_time(latency_us: Micros) -> Out {
    let ended = Observation::RunEnded {
        workflow: 0,
        outcome: Outcome::Failed,
        latency_us,
        deadline_exceeded: true,
        past_deadline: false,
        mode: DegradationMode::Normal,
        degraded: 0,
        evidence: EvidenceLevel::Live,
    };
    let observed = vec![Observation::BudgetExhausted(BudgetKind::Time), Observation::StepFailed { step: 0 }, ended];
    (vec![Command::End { outcome: Outcome::Failed, deadline_exceeded: true }], observed)
}

#[test]
fn attempt_timeouts_are_the_step_cap_or_what_is_left_less_the_reserve() {
    let mut h = reserved(Some(0));
    assert_eq!(h.start().0, vec![call(0, 0, LLM, 2_000_000)], "min(2000, 3000 - 500)");
    assert_eq!(h.at(1_000_000).fail(0, 0, FailureKind::Overloaded).0, vec![call(0, 1, LLM, 1_500_000)]);
    assert_eq!(h.at(2_400_000).fail(0, 1, FailureKind::Overloaded).0, vec![call(0, 2, LLM, 100_000)]);
    // 500.5 ms left: the retry fits (0 + 0 + 500 < 500.5) but leaves a 0.5 ms attempt, below
    // the minimum: time is exhausted, and a step out of time does not fall back.
    assert_eq!(h.at(2_499_500).fail(0, 2, FailureKind::Overloaded), out_of_time(2_499_500));
    assert!(!h.machine.steps[0].on_fallback);
}

#[test]
fn a_retry_that_does_not_fit_the_deadline_gives_up_without_falling_back() {
    let mut h = reserved(None); // predicted attempt: the 100 ms median
    h.start();
    // 650 ms left: sleep 0 + attempt 100 + reserve 500 < 650, with a 150 ms timeout.
    assert_eq!(h.at(2_350_000).fail(0, 0, FailureKind::Overloaded).0, vec![call(0, 1, LLM, 150_000)]);
    // 550 ms left: 600 does not fit.
    assert_eq!(h.at(2_450_000).fail(0, 1, FailureKind::Overloaded), out_of_time(2_450_000));
}

#[test]
fn a_retry_that_does_not_fit_tries_the_fallback_that_does() {
    // Predicted primary attempt 300 ms, the backup's 100 ms (its median), reserve 500 ms.
    let mut h = reserved(Some(300));
    h.start();
    // 750 ms left: a retry needs 300 + 500 (does not fit), the fallback 100 + 500 (fits).
    let out = h.at(2_250_000).fail(0, 0, FailureKind::Overloaded);
    assert_eq!(out.0, vec![call(0, 1, BACKUP, 250_000)], "the fallback, with what is left less the reserve");
    assert!(h.machine.steps[0].on_fallback);
}

#[test]
fn a_retry_after_longer_than_the_time_left_goes_to_the_fallback() {
    let mut h = reserved(Some(300));
    h.start();
    // 2 s left; the dependency asks for 1.5 s: 1500 + 300 + 500 does not fit, 100 + 500 does
    // (docs/essay.md section 10: fall back to the cheaper model instead of failing).
    let busy = AttemptResult::Failed { kind: FailureKind::RateLimited, retry_after_us: Some(1_500_000) };
    let out = h.at(1_000_000).result(0, 0, busy);
    assert_eq!(out.0, vec![call(0, 1, BACKUP, 1_500_000)]);
}

#[test]
fn a_step_ready_too_late_gives_up_at_once() {
    let policy = "timeout_ms = 2000\nsteps = { s = { deadline_reserve_ms = 500 } }";
    let mut h = Harness::new(&scenario(400, &single(), policy));
    let (commands, mut observed) = out_of_time(0);
    observed.insert(0, CALL);
    assert_eq!(h.start(), (commands, observed));
    assert_eq!(h.machine.budget.cost_used, 0.0, "nothing was sent");
}

// ---------------------------------------------------------------------------------------------
// Writes

fn write_harness(on_effect_unknown: &str) -> Harness {
    let policy = format!(
        "timeout_ms = 1000\non_effect_unknown = \"{on_effect_unknown}\"\n\
         retry = {{ max_attempts = 3, backoff = {{ kind = \"none\" }} }}"
    );
    Harness::new(&scenario(10_000, &write_step(), &policy))
}

/// Starts a write and times it out: the machine looks its key up.
fn timed_out_write() -> Harness {
    let mut h = write_harness("reconcile_first");
    assert_eq!(h.start(), (vec![write(0, 0)], vec![CALL]));
    let looked_up = h.at(1_000_000).result(0, 0, AttemptResult::TimedOut);
    assert_eq!(looked_up, (vec![lookup(0, 1)], vec![Observation::EffectUnknown]));
    assert!(h.machine.steps[0].looking_up);
    h
}

#[test]
fn a_timed_out_write_found_by_its_lookup_is_reconciled() {
    let mut h = timed_out_write();
    let observed = vec![Observation::Reconciled, run_ended(Outcome::Succeeded, 1_010_000)];
    assert_eq!(h.at(1_010_000).ok(0, 1), (vec![end(Outcome::Succeeded)], observed));
    assert_eq!(h.machine.budget.retry_tokens_left, MAX, "a lookup spends no retry token");
    assert_eq!(h.machine.budget.cost_used, 1.0, "nor cost");
}

#[test]
fn a_write_the_lookup_does_not_find_is_resent_with_the_same_key() {
    let mut h = timed_out_write();
    assert_eq!(h.at(1_010_000).result(0, 1, AttemptResult::NotFound), (vec![write(0, 2)], vec![]));
    assert!(!h.machine.steps[0].looking_up);
    assert_eq!(h.machine.budget.retry_tokens_left, MAX - 1);
    let last = h.at(1_100_000).ok(0, 2);
    assert_eq!(last, (vec![end(Outcome::Succeeded)], vec![run_ended(Outcome::Succeeded, 1_100_000)]));
}

#[test]
fn lookups_beyond_max_attempts_hand_the_run_off() {
    let mut h = timed_out_write();
    assert_eq!(h.at(2_000_000).result(0, 1, AttemptResult::TimedOut), (vec![lookup(0, 2)], vec![]));
    assert_eq!(h.at(2_100_000).fail(0, 2, FailureKind::TransientTransport), (vec![lookup(0, 3)], vec![]));
    let last = h.at(3_100_000).result(0, 3, AttemptResult::TimedOut);
    assert_eq!(last, (vec![end(Outcome::Handoff)], vec![run_ended(Outcome::Handoff, 3_100_000)]));
}

#[test]
fn a_timed_out_write_under_a_handoff_policy_is_handed_off() {
    let mut h = write_harness("handoff");
    h.start();
    let observed = vec![Observation::EffectUnknown, run_ended(Outcome::Handoff, 1_000_000)];
    assert_eq!(h.at(1_000_000).result(0, 0, AttemptResult::TimedOut), (vec![end(Outcome::Handoff)], observed));
}

// ---------------------------------------------------------------------------------------------
// Results the run no longer waits for, and the end of a run

#[test]
fn results_of_unknown_attempts_and_of_an_ended_run_are_ignored() {
    let mut h = Harness::new(&scenario(10_000, &single(), EXPONENTIAL));
    h.start();
    assert_eq!(h.at(50_000).ok(0, 5), none(), "never sent");
    assert_eq!(h.machine.attempts_in_flight(), 1);
    assert_eq!(h.at(100_000).ok(0, 0).0, vec![end(Outcome::Succeeded)]);
    assert_eq!(h.at(150_000).ok(0, 0), none(), "a second result of the same attempt");
    assert_eq!(h.fail(0, 0, FailureKind::Overloaded), none());
    assert_eq!(h.wake(0, 1), none());
    assert_eq!(h.machine.outcome, Outcome::Succeeded);
}

#[test]
fn an_ending_run_cancels_its_attempts_in_step_order_before_end() {
    let graph = steps(&[("w", "llm", ""), ("x", "tools", ""), ("y", "llm", ""), ("z", "tools", "")]);
    let mut h = Harness::new(&scenario(10_000, &graph, EXPONENTIAL));
    let all = vec![
        call(0, 0, LLM, 2_000_000),
        call(1, 0, TOOLS, 2_000_000),
        call(2, 0, LLM, 2_000_000),
        call(3, 0, TOOLS, 2_000_000),
    ];
    assert_eq!(h.start(), (all, vec![CALL; 4]), "four roots start at once");
    h.at(50_000).fail(0, 0, FailureKind::Overloaded);
    assert_eq!(h.at(250_000).wake(0, 1).0, vec![call(0, 1, LLM, 2_000_000)], "w's retry is the newest attempt");
    assert_eq!(h.at(260_000).fail(2, 0, FailureKind::Overloaded).0, vec![sleep(2, 1, 460_000)], "y sleeps");
    let observed = vec![Observation::StepFailed { step: 3 }, run_ended(Outcome::Failed, 300_000)];
    let cancels = vec![cancel(0, 1), cancel(1, 0), end(Outcome::Failed)];
    assert_eq!(h.at(300_000).fail(3, 0, FailureKind::InvalidInput), (cancels, observed));
    assert_eq!(h.machine.attempts_in_flight(), 0);
    assert_eq!(h.machine.steps[2].phase, StepPhase::Abandoned);
    assert_eq!(h.at(350_000).ok(1, 0), none(), "a cancelled attempt's result");
    assert_eq!(h.at(460_000).wake(2, 1), none(), "the sleeping step's timer");
}

// ---------------------------------------------------------------------------------------------
// Hedging

#[test]
fn hedges_go_out_after_the_delay_and_a_winning_hedge_cancels_the_others() {
    let mut h = Harness::new(&scenario(10_000, &single(), BASE)).hedged(100, 2);
    assert_eq!(h.start(), (vec![call(0, 0, LLM, 2_000_000), sleep(0, 1, 100_000)], vec![CALL]));
    let hedge = Observation::HedgeSent { dependency: LLM };
    assert_eq!(h.at(100_000).wake(0, 1), (vec![call(0, 1, LLM, 2_000_000), sleep(0, 2, 200_000)], vec![hedge]));
    assert_eq!(h.at(200_000).wake(0, 2), (vec![call(0, 2, LLM, 2_000_000)], vec![hedge]), "at most 2 hedges");
    assert_eq!(h.machine.attempts_in_flight(), 3);
    assert_eq!(h.machine.budget.retry_tokens_left, MAX - 2, "hedges spend retry tokens");
    assert_eq!(h.machine.budget.cost_used, 6.0);
    let observed = vec![Observation::HedgeWon { dependency: LLM }, run_ended(Outcome::Succeeded, 250_000)];
    let commands = vec![cancel(0, 0), cancel(0, 2), end(Outcome::Succeeded)];
    assert_eq!(h.at(250_000).ok(0, 1), (commands, observed));
    assert_eq!(h.at(260_000).ok(0, 0), none(), "a loser's late result");
}

#[test]
fn the_first_attempt_winning_is_no_hedge_win_and_old_hedge_timers_are_stale() {
    let graph = steps(&[("a", "llm", ""), ("b", "tools", "after = [\"a\"]")]);
    let mut h = Harness::new(&scenario(10_000, &graph, BASE)).hedged(100, 2);
    h.start();
    h.at(100_000).wake(0, 1);
    let next = vec![cancel(0, 1), call(1, 0, TOOLS, 2_000_000), sleep(1, 1, 250_000)];
    assert_eq!(h.at(150_000).ok(0, 0), (next, vec![CALL]), "no HedgeWon");
    assert_eq!(h.at(200_000).wake(0, 2), none(), "the hedge timer of a finished step");
    assert_eq!(h.machine.attempts_in_flight(), 1);
}

#[test]
fn a_hedged_failure_waits_for_the_others_then_the_retry_decision_applies() {
    let mut h = Harness::new(&scenario(10_000, &single(), BASE)).hedged(100, 2);
    h.start();
    h.at(100_000).wake(0, 1);
    assert_eq!(h.at(150_000).fail(0, 0, FailureKind::Overloaded), none(), "the hedge may still succeed");
    assert_eq!(h.machine.attempts_in_flight(), 1);
    let retry = vec![call(0, 2, LLM, 2_000_000), sleep(0, 3, 280_000)];
    assert_eq!(h.at(180_000).fail(0, 1, FailureKind::Overloaded), (retry, vec![]));
    assert_eq!(h.machine.steps[0].primary_attempts, 2, "hedges are not counted as attempts");
    assert_eq!(h.at(200_000).wake(0, 2), none(), "the hedge timer armed before the retry");
    let hedge = vec![Observation::HedgeSent { dependency: LLM }];
    assert_eq!(h.at(280_000).wake(0, 3), (vec![call(0, 3, LLM, 2_000_000), sleep(0, 4, 380_000)], hedge));
}

#[test]
fn a_hedged_call_that_fails_everywhere_gives_up_once() {
    let policy = "timeout_ms = 2000\nretry = { max_attempts = 1 }";
    let mut h = Harness::new(&scenario(10_000, &single(), policy)).hedged(100, 1);
    h.start();
    assert_eq!(h.at(100_000).wake(0, 1).0, vec![call(0, 1, LLM, 2_000_000)], "max 1 hedge: no new timer");
    assert_eq!(h.at(150_000).fail(0, 1, FailureKind::Overloaded), none());
    let observed = vec![Observation::StepFailed { step: 0 }, run_ended(Outcome::Failed, 200_000)];
    assert_eq!(h.at(200_000).fail(0, 0, FailureKind::Overloaded), (vec![end(Outcome::Failed)], observed));
}

#[test]
fn a_hedge_needs_a_retry_token() {
    let policy = format!("{BASE}\nbudget = {{ retry_tokens = 0 }}");
    let mut h = Harness::new(&scenario(10_000, &single(), &policy)).hedged(100, 2);
    h.start();
    assert_eq!(h.at(100_000).wake(0, 1), (vec![], vec![Observation::BudgetExhausted(BudgetKind::Retry)]));
    assert_eq!(h.at(200_000).ok(0, 0).0, vec![end(Outcome::Succeeded)]);
}

#[test]
fn writes_are_never_hedged() {
    let mut h = write_harness("reconcile_first").hedged(100, 2);
    assert_eq!(h.start(), (vec![write(0, 0)], vec![CALL]));
    assert_eq!(h.at(100_000).wake(0, 1), none());
    assert_eq!(h.machine.attempts_in_flight(), 1);
}

// ---------------------------------------------------------------------------------------------
// Invariants under random inputs

/// A 64-bit linear congruential generator (Knuth's MMIX constants).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }

    fn pick<T>(&mut self, v: &mut Vec<T>) -> T {
        let i = self.below(v.len() as u64) as usize;
        v.swap_remove(i)
    }

    fn result(&mut self) -> AttemptResult {
        let failed = |kind| AttemptResult::Failed { kind, retry_after_us: None };
        match self.below(20) {
            0..8 => AttemptResult::Ok,
            8..11 => AttemptResult::TimedOut,
            11..14 => failed(FailureKind::Overloaded),
            14..16 => failed(FailureKind::TransientTransport),
            16..18 => AttemptResult::Failed { kind: FailureKind::RateLimited, retry_after_us: Some(300_000) },
            _ => failed(FailureKind::InvalidInput),
        }
    }
}

/// What the driver of one run has seen: attempts out, timers set, and the tallies.
#[derive(Default)]
struct Ledger {
    /// (step, serial, is a status lookup)
    outstanding: Vec<(u8, u32, bool)>,
    timers: Vec<(u8, u32, Micros)>,
    sent: BTreeSet<(u8, u32)>,
    sends: usize,
    results: usize,
    cancels: usize,
    ends: usize,
    degraded_evidence: usize,
}

impl Ledger {
    fn absorb(&mut self, h: &Harness, (commands, observations): Out) {
        for c in commands {
            assert_eq!(self.ends, 0, "nothing after End: {c:?}");
            match c {
                Command::Send { step, serial, purpose, .. } => {
                    assert!(self.sent.insert((step, serial)), "serial {serial} of step {step} sent twice");
                    self.outstanding.push((step, serial, purpose == Purpose::Lookup));
                    self.sends += 1;
                }
                Command::Cancel { step, serial, .. } => {
                    let i = self.outstanding.iter().position(|a| (a.0, a.1) == (step, serial)).expect("a sent one");
                    self.outstanding.remove(i);
                    self.cancels += 1;
                }
                Command::Sleep { step, wake, until } => {
                    assert!(until >= h.now, "a timer in the past");
                    self.timers.push((step, wake, until));
                }
                Command::End { outcome, .. } => {
                    assert_eq!(outcome, h.machine.outcome);
                    self.ends += 1;
                }
                other => panic!("no guards, yet {other:?}"),
            }
        }
        for o in observations {
            match o {
                Observation::RunEnded { outcome, .. } => assert_eq!((outcome, self.ends), (h.machine.outcome, 1)),
                Observation::StepOmitted { .. } | Observation::FallbackUsed { .. } => self.degraded_evidence += 1,
                _ => {}
            }
        }
        let in_flight = self.sends - self.results - self.cancels;
        assert_eq!((h.machine.attempts_in_flight(), self.outstanding.len()), (in_flight, in_flight));
    }

    /// Steps with attempts out.
    fn busy_steps(&self) -> usize {
        self.outstanding.iter().map(|a| a.0).collect::<BTreeSet<_>>().len()
    }
}

/// One random input: a result of an attempt out, a timer, or an input the run does not expect.
fn random_input(h: &mut Harness, l: &mut Ledger, rng: &mut Lcg) -> Out {
    let roll = rng.below(10);
    if roll == 0 {
        let (s, serial, wake) = (rng.below(4) as u8, rng.below(12) as u32, rng.below(12) as u32);
        if !l.outstanding.iter().any(|a| (a.0, a.1) == (s, serial)) {
            assert_eq!(h.result(s, serial, rng.result()), none(), "a result for no attempt out");
        }
        if !l.timers.iter().any(|t| (t.0, t.1) == (s, wake)) {
            assert_eq!(h.wake(s, wake), none(), "a wake of no timer set");
        }
        return none();
    }
    if !l.timers.is_empty() && (roll < 4 || l.outstanding.is_empty()) {
        let (s, wake, until) = rng.pick(&mut l.timers);
        h.now = h.now.max(until);
        return h.wake(s, wake);
    }
    let (s, serial, is_lookup) = rng.pick(&mut l.outstanding);
    l.results += 1;
    h.now += rng.below(400_000);
    // A lookup's Ok means the key committed; NotFound is a lookup's answer only.
    let r = if is_lookup && rng.below(2) == 0 { AttemptResult::NotFound } else { rng.result() };
    h.result(s, serial, r)
}

fn check_outcome(h: &Harness, l: &Ledger) {
    assert!(h.machine.ended, "a run with nothing pending has ended");
    assert_eq!(l.ends, 1);
    let phases: Vec<StepPhase> = h.machine.steps.iter().map(|s| s.phase).collect();
    match h.machine.outcome {
        Outcome::Succeeded | Outcome::Degraded => {
            assert!(phases.iter().all(|p| matches!(p, StepPhase::Done | StepPhase::Omitted)), "{phases:?}");
            assert_eq!(h.machine.outcome == Outcome::Degraded, l.degraded_evidence > 0);
        }
        Outcome::Failed | Outcome::Handoff | Outcome::Rejected => {
            assert!(!phases.iter().any(|p| p.is_open()), "{phases:?}")
        }
        // This harness has no approval dependency (tests/approval.rs drives those).
        Outcome::ApprovalRefused | Outcome::ApprovalExpired | Outcome::AwaitingApproval => {
            panic!("no approval step here: {:?}", h.machine.outcome)
        }
    }
}

#[test]
fn random_inputs_keep_the_run_invariants() {
    let graph = steps(&[
        ("a", "llm", ""),
        ("b", "tools", "after = [\"a\"]"),
        ("c", "llm", "after = [\"a\"]\ncriticality = \"soft\"\nfallback = \"backup\""),
        ("d", "tickets", "after = [\"b\", \"c\"]\neffect = \"write\"\nidempotency = \"key\"\nstatus_lookup = true"),
    ]);
    let policy = "timeout_ms = 1000\nbudget = { retry_tokens = 4 }\nretry = { max_attempts = 3, backoff = { \
                  kind = \"exponential\", base_ms = 100, max_ms = 1000, jitter = \"full\" } }";
    let mut h = Harness::new(&scenario(5_000, &graph, policy));
    let base = h.policy.clone();
    let mut rng = Lcg(7);
    let mut outcomes = [0usize; 5];
    for run in 0..600u64 {
        h.policy = base.clone();
        h.policy.budget.concurrency_tokens = (run % 2 == 0).then_some(1);
        h.policy.modes[0].budget = h.policy.budget;
        h.policy.hedging = (run % 3 == 0).then_some(Hedging { delay_us: 50_000, max_hedged_attempts: 2 });
        h.policy.modes[0].hedging = h.policy.hedging.is_some();
        h.reset(run);
        let mut l = Ledger::default();
        let started = h.start();
        l.absorb(&h, started);
        for _ in 0..2_000 {
            if l.outstanding.is_empty() && l.timers.is_empty() {
                break;
            }
            let out = random_input(&mut h, &mut l, &mut rng);
            l.absorb(&h, out);
            let limit = h.policy.budget.concurrency_tokens.unwrap_or(4) as usize;
            assert!(l.busy_steps() <= limit && h.machine.budget.in_flight as usize <= limit, "run {run}");
        }
        check_outcome(&h, &l);
        outcomes[h.machine.outcome.index()] += 1;
    }
    // The inputs reach every outcome but a rejection (which happens before a run starts).
    assert!(outcomes[..4].iter().all(|&n| n > 10), "{outcomes:?}");
}

#[test]
fn an_invalid_result_is_repaired_once_then_handed_off() {
    let policy = format!("{BASE}\nsteps = {{ s = {{ on_schema_failure = \"repair_once_then_handoff\" }} }}");
    let mut h = Harness::new(&scenario(10_000, &single(), &policy));
    h.start();
    let (commands, observed) = h.at(100_000).fail(0, 0, FailureKind::ResultInvalid);
    assert_eq!(commands, vec![call(0, 1, LLM, 2_000_000)], "one repair, at once");
    assert_eq!(observed, vec![Observation::SchemaRepair]);
    assert_eq!(h.machine.budget.retry_tokens_left, MAX - 1, "the repair is paid like a retry");
    let (commands, _) = h.at(200_000).fail(0, 1, FailureKind::ResultInvalid);
    assert_eq!(commands, vec![end(Outcome::Handoff)], "a second invalid result goes to a human");
    // Without the policy, RESULT_INVALID is never retried: the hard step fails the run.
    let mut h = Harness::new(&scenario(10_000, &single(), BASE));
    h.start();
    assert_eq!(h.at(100_000).fail(0, 0, FailureKind::ResultInvalid).0, vec![end(Outcome::Failed)]);
}

/// An answer at the model beside an advisory estimate at the tools with a 300 ms window.
fn with_advisory() -> Harness {
    let text =
        steps(&[("answer", "llm", ""), ("estimate", "tools", "criticality = \"advisory\"\nadvisory_wait_ms = 300")]);
    Harness::new(&scenario(10_000, &text, BASE))
}

#[test]
fn an_advisory_step_is_cancelled_when_its_window_closes_and_the_run_is_not_degraded() {
    let mut h = with_advisory();
    let (commands, _) = h.start();
    assert!(commands.contains(&sleep(1, 1, 300_000)), "the window opens as the step starts: {commands:?}");
    assert!(commands.contains(&call(1, 0, TOOLS, 2_000_000)));
    let (commands, observations) = h.at(300_000).wake(1, 1);
    assert_eq!(commands, vec![cancel(1, 0)]);
    assert_eq!(observations, vec![Observation::AdvisoryOmitted]);
    assert_eq!(h.machine.steps[1].phase, StepPhase::Omitted);
    // The late answer is ignored; the run ends when the hard step does, of full quality.
    assert_eq!(h.at(350_000).ok(1, 0), none());
    let (commands, observations) = h.at(400_000).ok(0, 0);
    assert_eq!(commands, vec![end(Outcome::Succeeded)]);
    assert!(observations.contains(&run_ended(Outcome::Succeeded, 400_000)), "{observations:?}");
}

#[test]
fn a_failed_advisory_step_is_omitted_at_once_without_a_retry_and_a_timely_one_is_used() {
    let mut h = with_advisory();
    h.start();
    let (commands, observations) = h.at(100_000).fail(1, 0, FailureKind::TransientTransport);
    assert!(commands.is_empty(), "no retry, though max_attempts = 3: {commands:?}");
    assert_eq!(observations, vec![Observation::AdvisoryOmitted]);
    assert_eq!(h.at(300_000).wake(1, 1), none(), "the window's timer finds nothing to do");

    let mut h = with_advisory();
    h.start();
    let (commands, observations) = h.at(200_000).ok(1, 0);
    assert!(commands.is_empty(), "{commands:?}");
    assert_eq!(observations, vec![Observation::AdvisoryUsed]);
    assert_eq!(h.at(300_000).wake(1, 1), none());
    let (commands, _) = h.at(400_000).ok(0, 0);
    assert_eq!(commands, vec![end(Outcome::Succeeded)]);
}
