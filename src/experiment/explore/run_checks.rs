//! Invariants that only a run's own history can show (docs/essay.md section 26), checked while
//! `explore` simulates: a [`Tracer`] that keeps a few counters per live run instead of its
//! events. Retries and hedges stay within the run's retry tokens and every target's attempts
//! within max_attempts, a quorum step's branches (first attempts, not retries) within its n
//! ("did retries stay within every budget?"), and no status lookup is
//! refused for lack of capacity: by a guard, a full waiting room, a rate limit or an expiry
//! ("did the control path keep its capacity?"). A dependency that is down is a fault, not a
//! lack of capacity, and does not count. And soft branches are cut before hard ones: no hard
//! logical call is given up for lack of time or cost while a soft one of the same run still
//! runs ("were soft branches stopped before hard ones?").

use crate::engine::Model;
use crate::runtime::{Purpose, RunStart, SlotSink, StationExit, StepEnd, TraceEvent, Tracer};
use crate::scenario::Criticality;
use crate::sim::Micros;
use crate::vocab::AttemptKind;
use crate::vocab::{BudgetKind, DegradationMode, FailureKind, Outcome};

/// The first run that broke a per-run invariant.
#[derive(Debug, Clone, PartialEq)]
pub struct RunBreach {
    pub invariant: &'static str,
    pub run: u64,
    pub detail: String,
}

pub const RETRY_BUDGET: &str = "retries and hedges within the run's retry tokens and max_attempts";
pub const CONTROL_CAPACITY: &str = "the control path kept its capacity (no status lookup refused or dropped)";
pub const SOFT_FIRST: &str =
    "soft branches cut before hard ones (no hard call given up for time or cost while a soft one ran)";
pub const WRITES_PAUSED: &str = "no write attempt while the workflow's mode pauses writes";
pub const DEGRADED_SAYS_WHY: &str =
    "a degraded result carries its evidence (an omitted step, a fallback's answer or a stale cache entry)";

/// Attempts of one step per target.
#[derive(Debug, Clone, Copy, Default)]
struct StepCount {
    running: bool,
    /// A time or cost budget stopped this step.
    out_of_budget: bool,
    on_fallback: bool,
    primary: u32,
    fallback: u32,
    lookups: u32,
}

#[derive(Debug, Default)]
struct LiveRun {
    number: u64,
    workflow: usize,
    measured: bool,
    retries: u32,
    retry_token_limit: u32,
    /// A step was omitted, answered by its fallback or by a stale cache entry marked as such:
    /// what a degraded result must show.
    lacks_something: bool,
    steps: Vec<StepCount>,
}

pub struct RunChecks<'m> {
    model: &'m Model,
    policy: usize,
    /// The number of the latest run started.
    started: u64,
    runs: Vec<LiveRun>,
    /// Per workflow: the mode whose paused writes hold now (the mode it is in or, recovering,
    /// the mode it left), for every run, canary runs included.
    acting: Vec<DegradationMode>,
    pub breach: Option<RunBreach>,
}

impl<'m> RunChecks<'m> {
    pub fn new(model: &'m Model, policy: usize) -> RunChecks<'m> {
        let acting = vec![DegradationMode::Normal; model.workflows.len()];
        RunChecks { model, policy, started: 0, runs: Vec::new(), acting, breach: None }
    }

    /// The names of the invariants checked, for the report.
    pub fn names() -> [&'static str; 5] {
        [RETRY_BUDGET, CONTROL_CAPACITY, SOFT_FIRST, WRITES_PAUSED, DEGRADED_SAYS_WHY]
    }

    fn criticality(&self, slot: usize, step: u8) -> Criticality {
        self.model.workflows[self.runs[slot].workflow].steps[step as usize].criticality
    }

    /// A hard step gave up: if a time or cost budget stopped it, no soft step may still run.
    fn hard_step_ended(&mut self, slot: usize, step: u8) {
        let run = &self.runs[slot];
        if !run.steps[step as usize].out_of_budget {
            return;
        }
        let wf = &self.model.workflows[run.workflow];
        let soft = (0..run.steps.len()).find(|&s| run.steps[s].running && wf.steps[s].criticality == Criticality::Soft);
        if let Some(s) = soft {
            let number = run.number;
            let detail = format!(
                "run {number}: hard step {} gave up out of budget while soft step {} ran",
                wf.steps[step as usize].id, wf.steps[s].id
            );
            self.broken(number, SOFT_FIRST, detail);
        }
    }

    fn broken(&mut self, run: u64, invariant: &'static str, detail: String) {
        if self.breach.is_none() {
            self.breach = Some(RunBreach { invariant, run, detail });
        }
    }

    fn attempt_sent(&mut self, slot: usize, step: u8, dependency: u16, kind: AttemptKind, purpose: Purpose) {
        let (policy, model) = (self.policy, self.model);
        let run = &mut self.runs[slot];
        let step_policy = &model.policies[policy].steps[run.workflow][step as usize];
        let count = &mut run.steps[step as usize];
        // A token pays for a retry or hedge that goes out (docs/scenario.md 8.3): count those
        // sent, not those decided, since a refused one gives its token back.
        if purpose != Purpose::Lookup && kind.is_repeat() {
            run.retries += 1;
        }
        let modes = &model.policies[policy].modes;
        let paused = modes[self.acting[run.workflow].index()].write_pause().covers(dependency as usize);
        if matches!(purpose, Purpose::Write { .. }) && paused {
            let (number, id) = (run.number, &model.workflows[run.workflow].steps[step as usize].id);
            let detail = format!("run {number}: step {id} sent a write while its workflow's mode paused writes");
            return self.broken(number, WRITES_PAUSED, detail);
        }
        let quorum = model.workflows[run.workflow].steps[step as usize].quorum.as_deref();
        if let Some(q) = quorum
            && purpose != Purpose::Lookup
        {
            // A quorum's branches are first attempts, never retried or hedged (scenario.md
            // 6.2): the step keeps its promise with at most n of them, whatever max_attempts is.
            count.primary += 1;
            let (number, made, id) =
                (run.number, count.primary, &model.workflows[run.workflow].steps[step as usize].id);
            if kind.is_repeat() {
                let detail = format!("run {number}: quorum step {id} retried or hedged a branch");
                self.broken(number, RETRY_BUDGET, detail);
            } else if made > q.n() {
                let detail = format!("run {number}: quorum step {id} sent {made} branches, n = {}", q.n());
                self.broken(number, RETRY_BUDGET, detail);
            }
            return;
        }
        let (made, target) = match (purpose, kind, count.on_fallback) {
            (Purpose::Lookup, _, _) => {
                count.lookups += 1;
                (count.lookups, "status lookups")
            }
            (Purpose::Call | Purpose::Write { .. }, AttemptKind::Hedge, _) => (0, ""),
            (Purpose::Call | Purpose::Write { .. }, AttemptKind::First | AttemptKind::Retry, false) => {
                count.primary += 1;
                (count.primary, "attempts")
            }
            (Purpose::Call | Purpose::Write { .. }, AttemptKind::First | AttemptKind::Retry, true) => {
                count.fallback += 1;
                (count.fallback, "fallback attempts")
            }
        };
        let (number, retries, limit) = (run.number, run.retries, run.retry_token_limit);
        if made > step_policy.max_attempts {
            let id = &model.workflows[run.workflow].steps[step as usize].id;
            let detail =
                format!("run {number}: step {id} made {made} {target}, max_attempts = {}", step_policy.max_attempts);
            self.broken(number, RETRY_BUDGET, detail);
        }
        if retries > limit {
            let detail = format!("run {number}: {retries} retries and hedges, its retry tokens = {limit}");
            self.broken(number, RETRY_BUDGET, detail);
        }
    }

    fn lookup_lost(&mut self, slot: usize, what: String) {
        let number = self.runs[slot].number;
        self.broken(number, CONTROL_CAPACITY, format!("run {number}: a status lookup was {what}"));
    }
}

impl Tracer for RunChecks<'_> {
    const ON: bool = true;
    type Sink<'a>
        = SlotSink<'a, Self>
    where
        Self: 'a;

    fn sink(&mut self, slot: u32) -> SlotSink<'_, Self> {
        SlotSink { tracer: self, slot }
    }

    fn mode_changed(&mut self, _: Micros, workflow: u16, _mode: DegradationMode, acting: DegradationMode) {
        let w = workflow as usize;
        self.acting[w] = acting;
    }

    fn run_started(&mut self, slot: u32, _: Micros, start: RunStart) {
        self.started = start.number;
        let slot = slot as usize;
        if self.runs.len() <= slot {
            self.runs.resize_with(slot + 1, LiveRun::default);
        }
        let workflow = start.workflow as usize;
        let run = &mut self.runs[slot];
        run.number = start.number;
        run.workflow = workflow;
        run.measured = start.measured;
        run.retries = 0;
        run.retry_token_limit = start.retry_token_limit;
        run.lacks_something = false;
        run.steps.clear();
        run.steps.resize(self.model.workflows[workflow].steps.len(), StepCount::default());
    }

    fn record(&mut self, slot: u32, _now: Micros, event: TraceEvent) {
        let slot = slot as usize;
        if self.breach.is_some() || !self.runs.get(slot).is_some_and(|r| r.measured) {
            return;
        }
        match event {
            TraceEvent::TaskChanged { .. } | TraceEvent::TaskCallRefused { .. } => {}
            TraceEvent::AttemptSent { step, dependency, kind, purpose, .. } => {
                self.attempt_sent(slot, step, dependency, kind, purpose)
            }
            TraceEvent::FallbackStarted { step, .. } => {
                // Each candidate is a path of its own, with its own max_attempts.
                let count = &mut self.runs[slot].steps[step as usize];
                count.on_fallback = true;
                count.fallback = 0;
            }
            TraceEvent::StepStarted { step } => self.runs[slot].steps[step as usize].running = true,
            TraceEvent::BudgetExhausted { step, kind: BudgetKind::Time | BudgetKind::Cost } => {
                self.runs[slot].steps[step as usize].out_of_budget = true
            }
            TraceEvent::StepEnded { step, end } => {
                self.runs[slot].steps[step as usize].running = false;
                let lacks = matches!(end, StepEnd::Omitted | StepEnd::Succeeded { via_fallback: true });
                self.runs[slot].lacks_something |= lacks;
                let given_up = matches!(end, StepEnd::Failed | StepEnd::Handoff);
                if given_up && self.criticality(slot, step) == Criticality::Hard {
                    self.hard_step_ended(slot, step);
                }
            }
            // A stale entry served with its provenance is the run's evidence (scenario.md 4.8);
            // an unmarked one passes as fresh and degrades nothing.
            TraceEvent::CacheStaleAnswer { marked, .. } => self.runs[slot].lacks_something |= marked,
            TraceEvent::AttemptRefused { purpose: Purpose::Lookup, reason, .. } => {
                self.lookup_lost(slot, format!("refused ({})", reason.name()))
            }
            TraceEvent::RunEnded { outcome: Outcome::Degraded, .. } if !self.runs[slot].lacks_something => {
                let number = self.runs[slot].number;
                let detail = format!("run {number} ended degraded with every step answered by its own dependency");
                self.broken(number, DEGRADED_SAYS_WHY, detail);
            }
            TraceEvent::StationLeft { exit, purpose: Purpose::Lookup, .. } => match exit {
                StationExit::Rejected { kind: FailureKind::Overloaded } => {
                    self.lookup_lost(slot, "rejected by a full waiting room".into())
                }
                StationExit::Rejected { kind: FailureKind::RateLimited } => {
                    self.lookup_lost(slot, "rate limited".into())
                }
                StationExit::Expired => self.lookup_lost(slot, "dropped from the queue".into()),
                StationExit::Rejected { .. } | StationExit::Served { .. } | StationExit::Cancelled => {}
            },
            // What these checks do not read: other budgets, decisions (a decided retry may be
            // refused and give its token back), other refusals and departures, the station's
            // own steps and the run's end.
            TraceEvent::BudgetExhausted { .. }
            | TraceEvent::Decided { .. }
            | TraceEvent::AttemptRefused { .. }
            | TraceEvent::StationLeft { .. }
            | TraceEvent::RunStarted { .. }
            | TraceEvent::AttemptWaiting { .. }
            | TraceEvent::AttemptEnded { .. }
            | TraceEvent::AttemptCancelled { .. }
            | TraceEvent::RunEnded { .. }
            | TraceEvent::RunFinalized { .. }
            | TraceEvent::StationArrived { .. }
            | TraceEvent::ServiceStarted { .. }
            | TraceEvent::TokensDrawn { .. }
            | TraceEvent::CallerTimedOut { .. }
            | TraceEvent::EffectCommitted { .. }
            | TraceEvent::QuorumDecided { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::batch::load::compile_with;
    use crate::experiment::batch::workers::replication_seed;
    use crate::runtime::{Decision, TraceCaller};
    use crate::scenario::{load_file, parse_override};
    use std::path::Path;

    fn model(file: &str, sets: &[&str]) -> Model {
        let source = load_file(&Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap();
        let overrides: Vec<_> = sets.iter().map(|s| parse_override(s).unwrap()).collect();
        compile_with(&source, &overrides).unwrap()
    }

    fn started(checks: &mut RunChecks, model: &Model) {
        let start = RunStart {
            number: 1,
            measured: true,
            workflow: 0,
            arrival: 0,
            resubmission: 0,
            deadline_at_us: u64::MAX,
            retry_token_limit: model.policies[checks.policy].budget.retry_tokens.unwrap_or(u32::MAX),
            canary: false,
        };
        checks.run_started(0, model.world.warmup_us, start);
    }

    #[test]
    fn a_write_sent_while_the_mode_pauses_writes_is_a_breach() {
        let mut m = model("scenarios/meeting-analysis-incident.toml", &[]);
        let p = m.policy_index("resilient").unwrap();
        m.policies[p].modes[DegradationMode::Handoff.index()].pause_writes = true;
        let write = TraceEvent::AttemptSent {
            step: 5,
            serial: 0,
            dependency: 6,
            kind: AttemptKind::First,
            purpose: Purpose::Write { deduplicated: true },
        };
        let mut checks = RunChecks::new(&m, p);
        started(&mut checks, &m);
        checks.mode_changed(1, 0, DegradationMode::Constrained, DegradationMode::Constrained);
        checks.record(0, 1, write);
        assert_eq!(checks.breach, None, "constrained does not pause writes");
        checks.mode_changed(2, 0, DegradationMode::Handoff, DegradationMode::Handoff);
        checks.record(0, 3, write);
        assert_eq!(checks.breach.map(|b| b.invariant), Some(WRITES_PAUSED));
    }

    #[test]
    fn a_degraded_run_that_lacks_nothing_is_a_breach() {
        let m = model("scenarios/meeting-analysis-incident.toml", &[]);
        let p = m.policy_index("resilient").unwrap();
        let degraded = TraceEvent::RunEnded {
            outcome: Outcome::Degraded,
            deadline_exceeded: false,
            past_deadline: false,
            mode: DegradationMode::Normal,
        };
        let mut checks = RunChecks::new(&m, p);
        started(&mut checks, &m);
        checks.record(0, 1, TraceEvent::StepEnded { step: 2, end: StepEnd::Omitted });
        checks.record(0, 2, degraded);
        assert_eq!(checks.breach, None, "an omitted step is what it lacks");
        let mut checks = RunChecks::new(&m, p);
        started(&mut checks, &m);
        checks.record(0, 1, TraceEvent::StepEnded { step: 0, end: StepEnd::Succeeded { via_fallback: false } });
        checks.record(0, 2, degraded);
        assert_eq!(checks.breach.map(|b| b.invariant), Some(DEGRADED_SAYS_WHY));
    }

    #[test]
    fn a_retry_past_the_run_s_tokens_is_a_breach() {
        let m = model("scenarios/meeting-analysis-incident.toml", &[]);
        let p = m.policy_index("resilient").unwrap();
        let tokens = m.policies[p].budget.retry_tokens.expect("the resilient policy sets retry tokens");
        let mut checks = RunChecks::new(&m, p);
        started(&mut checks, &m);
        // Retries sent (one per step, so no step passes its max_attempts): a decided retry that is
        // refused gives its token back, so only the ones that go out count.
        let retry = |step: u8| TraceEvent::AttemptSent {
            step,
            serial: 1,
            dependency: 0,
            kind: AttemptKind::Retry,
            purpose: Purpose::Call,
        };
        let decided = TraceEvent::Decided { step: 0, decision: Decision::Retry { sleep_us: 0 }, retry_tokens_left: 0 };
        for step in 0..tokens as u8 {
            checks.record(0, 1, decided);
            checks.record(0, 1, retry(step));
        }
        checks.record(0, 1, decided);
        assert_eq!(checks.breach, None, "{tokens} retries sent are within {tokens} tokens");
        checks.record(0, 2, retry(tokens as u8));
        let breach = checks.breach.expect("one retry too many");
        assert_eq!((breach.invariant, breach.run), (RETRY_BUDGET, 1));
    }

    #[test]
    fn a_quorum_s_branches_count_against_its_n_not_max_attempts() {
        let m = model(
            "scenarios/mmc.toml",
            &["workflow.customers.step.serve.quorum.k=2", "workflow.customers.step.serve.quorum.n=3"],
        );
        let p = 0;
        assert_eq!(m.policies[p].steps[0][0].max_attempts, 1, "mmc.toml's plain policy makes one attempt");
        let branch = |kind| TraceEvent::AttemptSent { step: 0, serial: 0, dependency: 0, kind, purpose: Purpose::Call };
        let mut checks = RunChecks::new(&m, p);
        started(&mut checks, &m);
        for _ in 0..3 {
            checks.record(0, 1, branch(AttemptKind::First));
        }
        assert_eq!(checks.breach, None, "three branches of a 2-of-3 quorum, max_attempts = 1");
        checks.record(0, 1, branch(AttemptKind::First));
        let breach = checks.breach.expect("a fourth branch");
        assert!(breach.detail.contains("sent 4 branches, n = 3"), "{}", breach.detail);
        let mut checks = RunChecks::new(&m, p);
        started(&mut checks, &m);
        checks.record(0, 1, branch(AttemptKind::First));
        checks.record(0, 1, branch(AttemptKind::Retry));
        assert!(checks.breach.expect("a retried branch").detail.contains("retried or hedged a branch"));
    }

    #[test]
    fn a_lookup_refused_for_capacity_is_a_breach_and_one_at_a_dead_dependency_is_not() {
        let m = model("scenarios/meeting-analysis-incident.toml", &[]);
        let p = m.policy_index("resilient").unwrap();
        let lookup = |serial| TraceEvent::AttemptSent {
            step: 5,
            serial,
            dependency: 6,
            kind: AttemptKind::First,
            purpose: Purpose::Lookup,
        };
        let arrive = |job, serial| TraceEvent::StationArrived {
            job,
            caller: TraceCaller::Step { step: 5, serial },
            dependency: 6,
        };
        let mut checks = RunChecks::new(&m, p);
        started(&mut checks, &m);
        checks.record(0, 1, lookup(1));
        checks.record(0, 1, arrive(7, 1));
        let down = StationExit::Rejected { kind: FailureKind::TransientTransport };
        checks.record(0, 1, TraceEvent::StationLeft { job: 7, exit: down, purpose: Purpose::Lookup });
        assert_eq!(checks.breach, None, "a dependency that is down is a fault, not a lack of capacity");
        // The same job id, reused by an ordinary call, is not a lookup any more.
        checks.record(
            0,
            2,
            TraceEvent::StationArrived { job: 7, caller: TraceCaller::Step { step: 4, serial: 0 }, dependency: 0 },
        );
        let full = StationExit::Rejected { kind: FailureKind::Overloaded };
        checks.record(0, 2, TraceEvent::StationLeft { job: 7, exit: full, purpose: Purpose::Call });
        assert_eq!(checks.breach, None);
        checks.record(0, 3, lookup(2));
        checks.record(0, 3, arrive(9, 2));
        checks.record(0, 3, TraceEvent::StationLeft { job: 9, exit: full, purpose: Purpose::Lookup });
        assert_eq!(checks.breach.map(|b| b.invariant), Some(CONTROL_CAPACITY));
    }

    #[test]
    fn a_hard_call_given_up_for_time_while_a_soft_one_runs_is_a_breach() {
        let m = model("scenarios/meeting-analysis-incident.toml", &[]);
        let wf = &m.workflows[0];
        let step = |id: &str| wf.steps.iter().position(|s| s.id == id).unwrap() as u8;
        let (hard, soft) = (step("policy_rag"), step("specialist"));
        assert_eq!(
            (wf.steps[hard as usize].criticality, wf.steps[soft as usize].criticality),
            (Criticality::Hard, Criticality::Soft)
        );
        let p = m.policy_index("resilient").unwrap();
        let out_of_time = TraceEvent::BudgetExhausted { step: hard, kind: BudgetKind::Time };
        let hard_failed = TraceEvent::StepEnded { step: hard, end: StepEnd::Failed };

        // The soft branch had already been cut: fine.
        let mut checks = RunChecks::new(&m, p);
        started(&mut checks, &m);
        for e in [TraceEvent::StepStarted { step: hard }, TraceEvent::StepStarted { step: soft }] {
            checks.record(0, 1, e);
        }
        checks.record(0, 2, TraceEvent::StepEnded { step: soft, end: StepEnd::Omitted });
        checks.record(0, 3, out_of_time);
        checks.record(0, 3, hard_failed);
        assert_eq!(checks.breach, None);

        // A hard call that failed for another reason, with the soft one still running: fine.
        let mut checks = RunChecks::new(&m, p);
        started(&mut checks, &m);
        for e in [TraceEvent::StepStarted { step: hard }, TraceEvent::StepStarted { step: soft }, hard_failed] {
            checks.record(0, 1, e);
        }
        assert_eq!(checks.breach, None);

        // Out of time while the soft branch still runs: the soft one should have gone first.
        let mut checks = RunChecks::new(&m, p);
        started(&mut checks, &m);
        for e in
            [TraceEvent::StepStarted { step: hard }, TraceEvent::StepStarted { step: soft }, out_of_time, hard_failed]
        {
            checks.record(0, 1, e);
        }
        let breach = checks.breach.expect("a breach");
        assert_eq!(breach.invariant, SOFT_FIRST);
        assert!(breach.detail.contains("policy_rag") && breach.detail.contains("specialist"), "{}", breach.detail);
    }

    /// The runtime must keep its own promises on every shipped scenario and policy.
    #[test]
    fn no_shipped_scenario_breaks_the_runtime_s_own_promises() {
        let cases = [
            ("scenarios/meeting-analysis-incident.toml", "simulation.duration_s=900"),
            ("benches/mechanisms.toml", "simulation.duration_s=120"),
            ("scenarios/noisy-tenant.toml", "simulation.duration_s=120"),
            ("scenarios/metastability.toml", "simulation.duration_s=200"),
        ];
        for (file, duration) in cases {
            let m = model(file, &[duration, "simulation.warmup_s=0"]);
            for p in 0..m.policies.len() {
                let seed = replication_seed(m.world.seed, 0);
                let (_, checks) = crate::engine::simulate_following(&m, p, seed, RunChecks::new(&m, p)).unwrap();
                assert!(checks.started > 100, "{file}: {} runs", checks.started);
                if let Some(b) = checks.breach {
                    let own = [RETRY_BUDGET, WRITES_PAUSED, DEGRADED_SAYS_WHY];
                    assert!(!own.contains(&b.invariant), "{file}, policy {}: {}", m.policies[p].name, b.detail);
                }
            }
        }
    }
}
