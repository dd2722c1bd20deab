//! Counters, histograms and time integrals for one replication. Everything is fixed-size or
//! grows with the number of windows, never with the number of events.

use super::bad_results::{BadResultObservation, BadResultStats};
use super::delegation::DelegationStats;
use super::incident::IncidentStats;
use super::modes::ModeStats;
use super::observation::Observation;
use super::recovery::{self, Span};
use super::tasks::{TaskObservation, TaskStats};
use super::timeseries::{self, BUDGET_SCALE, Layout, TimeSeries, USER_COLUMNS};
use super::tokens::TokenStats;
use super::users::UserStats;
use super::{Labels, MetricMap};
use crate::sim::{Micros, us_as_f64, us_to_ms};
use crate::vocab::{
    BreakerState, BudgetKind, BudgetState, DegradationMode, DegradedReason, EvidenceLevel, FailureKind, Outcome,
    Refusal,
};
use hdrhistogram::Histogram;

/// Largest latency the histograms resolve (27.7 hours in microseconds); larger values saturate.
const HISTOGRAM_MAX_US: u64 = 100_000_000_000;

/// With approvals (working hours, weekends, expiries of days), a run's latency and a decision's
/// wait reach days: their histograms then resolve the whole simulated span (10 years,
/// MAX_SIMULATED_S), so no percentile saturates. Values below 27.7 h fall in the same buckets
/// either way; other scenarios keep the smaller (cheaper) range.
const LONG_HISTOGRAM_MAX_US: u64 = 315_360_000_000_000;

fn histogram(significant_figures: u8) -> Histogram<u64> {
    histogram_up_to(significant_figures, HISTOGRAM_MAX_US)
}

fn histogram_up_to(significant_figures: u8, max_us: u64) -> Histogram<u64> {
    Histogram::new_with_bounds(1, max_us, significant_figures).expect("static histogram bounds are valid")
}

/// Root-run level counts, over runs that arrived after the warm-up.
pub struct RunStats {
    pub runs: u64,
    pub outcomes: [u64; Outcome::COUNT],
    pub deadline_exceeded: u64,
    pub past_deadline: u64,
    /// Degraded runs by what their result lacks (a run may lack several things).
    pub degraded: [u64; DegradedReason::COUNT],
    pub duplicate_effect_runs: u64,
    pub safe_runs: u64,
    pub latency_us: Histogram<u64>,
    pub latency_sum_us: f64,
    /// Exact, unlike the histogram's bucket edges.
    pub latency_max_us: u64,
    pub logical_calls: u64,
    pub attempts: u64,
    /// Attempts of them an SDK client made on its own (runtime::sdk_client).
    pub hidden_attempts: u64,
    pub budget_exhausted: [u64; BudgetKind::COUNT],
    pub effects: u64,
    pub duplicate_effects: u64,
    pub effect_unknown: u64,
    pub reconciled: u64,
    pub cost_units: f64,
    pub resubmitted: u64,
    pub fallback_used: u64,
    pub omitted_steps: u64,
    pub omitted_by_mode: u64,
    pub admission_rejected: u64,
    pub admission_async: u64,
    pub runs_paused: u64,
    pub writes_paused: u64,
    /// Runs by the worst evidence their retrieval steps used.
    pub evidence: [u64; EvidenceLevel::COUNT],
    pub fallback_refused: u64,
    pub evidence_stale: u64,
    pub schema_repairs: u64,
}

/// Station-level figures for one dependency.
pub struct DependencyStats {
    pub attempts: u64,
    pub hidden_attempts: u64,
    /// Requests that are no attempt of a logical call: task polls, subscriptions, lookups,
    /// cancels, and a task's work at its runner.
    pub control_requests: u64,
    pub timeouts: u64,
    pub rejected: u64,
    pub hedges_sent: u64,
    pub hedges_won: u64,
    /// Attempts a mechanism refused before they reached the station, by reason.
    pub refused: [u64; Refusal::COUNT],
    pub errors: [u64; FailureKind::COUNT],
    /// The waits of attempts that queued; see [`DependencyStats::queue_wait_us`].
    nonzero_waits_us: Histogram<u64>,
    pub queue_wait_sum_us: f64,
    pub started: u64,
    pub waited: u64,
    pub sojourn_sum_us: f64,
    pub sojourn_count: u64,
    pub service_us: f64,
    pub wasted_us: f64,
    /// Time integrals over [warm-up, duration] of busy servers, queue length and servers in force.
    pub busy_area: f64,
    pub queue_area: f64,
    pub capacity_area: f64,
    last_us: Micros,
}

impl DependencyStats {
    fn new() -> Self {
        DependencyStats {
            attempts: 0,
            hidden_attempts: 0,
            control_requests: 0,
            timeouts: 0,
            rejected: 0,
            hedges_sent: 0,
            hedges_won: 0,
            refused: [0; Refusal::COUNT],
            errors: [0; FailureKind::COUNT],
            nonzero_waits_us: histogram(2),
            queue_wait_sum_us: 0.0,
            started: 0,
            waited: 0,
            sojourn_sum_us: 0.0,
            sojourn_count: 0,
            service_us: 0.0,
            wasted_us: 0.0,
            busy_area: 0.0,
            queue_area: 0.0,
            capacity_area: 0.0,
            last_us: 0,
        }
    }

    /// Accumulates the time integrals up to `now` with the state that held since the last call.
    /// Call before every change of busy servers, queue length or capacity.
    #[inline]
    pub fn advance(&mut self, now: Micros, window: (Micros, Micros), busy: u32, queued: u32, servers: u32) {
        let start = self.last_us.max(window.0);
        let end = now.min(window.1);
        if end > start {
            let dt = us_as_f64(end - start);
            self.busy_area += dt * f64::from(busy);
            self.queue_area += dt * f64::from(queued);
            self.capacity_area += dt * f64::from(servers);
        }
        self.last_us = now;
    }

    fn record_wait(&mut self, wait_us: Micros) {
        self.started += 1;
        // Most attempts start at once. Their zero waits are counted (started less waited) and
        // join the histogram only when it is read: a histogram is its counts, whatever the
        // order they came in, and a zero adds nothing to the sum.
        if wait_us > 0 {
            self.waited += 1;
            self.queue_wait_sum_us += us_as_f64(wait_us);
            self.nonzero_waits_us.saturating_record(wait_us);
        }
    }

    /// The queue waits of the attempts that started service, zeros included.
    pub fn queue_wait_us(&self) -> Histogram<u64> {
        let mut waits = self.nonzero_waits_us.clone();
        waits.saturating_record_n(0, self.started - self.waited);
        waits
    }
}

/// One circuit breaker's history over the measured window.
pub struct BreakerStats {
    pub state: BreakerState,
    since_us: Micros,
    pub time_in_state_us: [Micros; BreakerState::COUNT],
    /// Transitions into each state.
    pub transitions: [u64; BreakerState::COUNT],
}

impl BreakerStats {
    fn new() -> Self {
        BreakerStats {
            state: BreakerState::Closed,
            since_us: 0,
            time_in_state_us: [0; BreakerState::COUNT],
            transitions: [0; BreakerState::COUNT],
        }
    }

    /// Credits the time since the last change, clipped to the measured window, to the state held.
    fn advance(&mut self, now: Micros, window: (Micros, Micros)) {
        let start = self.since_us.max(window.0);
        let end = now.min(window.1);
        if end > start {
            self.time_in_state_us[self.state.index()] += end - start;
        }
        self.since_us = now;
    }
}

/// Root-run counts of one class of traffic (a workflow, or a tenant's workflows together).
#[derive(Debug, Clone, Copy, Default)]
pub struct ClassStats {
    pub runs: u64,
    pub outcomes: [u64; Outcome::COUNT],
    pub deadline_exceeded: u64,
}

impl ClassStats {
    fn add(&mut self, other: &ClassStats) {
        self.runs += other.runs;
        for (a, b) in self.outcomes.iter_mut().zip(other.outcomes) {
            *a += b;
        }
        self.deadline_exceeded += other.deadline_exceeded;
    }

    /// `<prefix>.logical_run_total`, `.outcome_total.<o>`, `.auto_completion_ratio`,
    /// `.deadline_exceeded_ratio`: the run-level names, per class.
    fn put(&self, prefix: &str, m: &mut MetricMap) {
        let runs = self.runs as f64;
        let ratio = |a: f64| if runs > 0.0 { a / runs } else { f64::NAN };
        let successes: u64 = Outcome::ALL.iter().filter(|o| o.is_success()).map(|o| self.outcomes[o.index()]).sum();
        m.insert(format!("{prefix}.logical_run_total"), runs);
        for o in Outcome::ALL {
            m.insert(format!("{prefix}.outcome_total.{}", o.name()), self.outcomes[o.index()] as f64);
        }
        m.insert(format!("{prefix}.auto_completion_ratio"), ratio(successes as f64));
        m.insert(format!("{prefix}.deadline_exceeded_ratio"), ratio(self.deadline_exceeded as f64));
    }
}

pub struct Recorder {
    pub run: RunStats,
    /// Per workflow.
    pub workflows: Vec<ClassStats>,
    pub dependencies: Vec<DependencyStats>,
    /// Per (workflow, step), flattened: omitted soft steps and fallbacks used.
    pub step_omitted: Vec<u64>,
    pub step_fallback: Vec<u64>,
    /// Hard steps whose failure ended the run as failed.
    pub step_failed: Vec<u64>,
    pub breakers: Vec<BreakerStats>,
    pub timeseries: TimeSeries,
    /// Degradation modes, when the policy declares them.
    pub modes: Option<ModeStats>,
    /// Runs that started during the faults, when there are faults.
    pub incident: Option<IncidentStats>,
    /// Long-running tasks, when some dependency runs them.
    pub tasks: Option<TaskStats>,
    /// Token-shaped model calls, when some dependency has a token shape.
    pub tokens: Option<TokenStats>,
    /// Closed populations' users, when some workflow has one.
    pub users: Option<UserStats>,
    /// Answers that looked like success, when a fault makes them or a policy validates.
    pub bad_results: Option<BadResultStats>,
    /// Approvals, when some dependency is an approval desk.
    pub approvals: Option<super::approval::ApprovalStats>,
    /// Advisory results, when some step is advisory.
    pub advisory: Option<super::approval::AdvisoryStats>,
    pub delegation: Option<DelegationStats>,
    /// Present when some policy of the scenario uses a cache.
    pub cache: Option<super::cache::CacheStats>,
    /// Present when some step is a quorum.
    pub quorum: Option<super::quorum::QuorumStats>,
    /// Refusals since the start, warm-up included, by reason: a signal the modes read.
    pub refused_all: [u64; Refusal::COUNT],
    /// The measured window: runs arriving in it count; integrals cover it.
    pub window: (Micros, Micros),
    /// (earliest fault start, latest fault end) over the scenario's faults, for the recovery
    /// metrics; None without faults.
    pub fault_span_us: Option<(Micros, Micros)>,
    /// Each error-budget column's last reading, carried into the windows that open after it.
    budget_last: Vec<u64>,
    budget_width: usize,
}

impl Recorder {
    /// `window` is (warm-up, duration); `fault_span_us` is (earliest fault start, latest fault
    /// end), see [`recovery::fault_span`].
    pub fn new(
        labels: &Labels,
        window: (Micros, Micros),
        timeseries_window_us: Micros,
        fault_span_us: Option<(Micros, Micros)>,
    ) -> Self {
        let (dependencies, steps) = (labels.dependencies.len(), labels.steps.len());
        let latency_max_us = if labels.approvals { LONG_HISTOGRAM_MAX_US } else { HISTOGRAM_MAX_US };
        Recorder {
            run: RunStats {
                runs: 0,
                outcomes: [0; Outcome::COUNT],
                deadline_exceeded: 0,
                past_deadline: 0,
                degraded: [0; DegradedReason::COUNT],
                duplicate_effect_runs: 0,
                safe_runs: 0,
                latency_us: histogram_up_to(3, latency_max_us),
                latency_sum_us: 0.0,
                latency_max_us: 0,
                logical_calls: 0,
                attempts: 0,
                hidden_attempts: 0,
                budget_exhausted: [0; BudgetKind::COUNT],
                effects: 0,
                duplicate_effects: 0,
                effect_unknown: 0,
                reconciled: 0,
                cost_units: 0.0,
                resubmitted: 0,
                fallback_used: 0,
                omitted_steps: 0,
                omitted_by_mode: 0,
                admission_rejected: 0,
                admission_async: 0,
                runs_paused: 0,
                writes_paused: 0,
                evidence: [0; EvidenceLevel::COUNT],
                fallback_refused: 0,
                evidence_stale: 0,
                schema_repairs: 0,
            },
            dependencies: (0..dependencies).map(|_| DependencyStats::new()).collect(),
            step_omitted: vec![0; steps],
            step_fallback: vec![0; steps],
            step_failed: vec![0; steps],
            workflows: vec![ClassStats::default(); labels.workflows.len().max(1)],
            breakers: labels.breakers.iter().map(|_| BreakerStats::new()).collect(),
            timeseries: TimeSeries::new(
                timeseries_window_us,
                Layout {
                    dependencies,
                    breakers: labels.breakers.len(),
                    modes: mode_columns(labels),
                    levels: labels.levels.len(),
                    budgets: labels.budget_columns.len().checked_div(labels.budget_width).unwrap_or(0),
                    budget_width: labels.budget_width,
                    users: if labels.closed_population { USER_COLUMNS.len() } else { 0 },
                },
            ),
            budget_last: vec![0; labels.budget_columns.len()],
            budget_width: labels.budget_width,
            modes: labels.modes.then(|| ModeStats::new(labels.workflows.len())),
            incident: fault_span_us.map(IncidentStats::new),
            tasks: (!labels.task_dependencies.is_empty()).then(TaskStats::default),
            tokens: (!labels.token_dependencies.is_empty()).then(|| TokenStats::new(labels.dependencies.len())),
            users: labels.closed_population.then(UserStats::default),
            bad_results: labels.bad_results.then(BadResultStats::default),
            approvals: labels
                .approvals
                .then(|| super::approval::ApprovalStats::new(histogram_up_to(3, latency_max_us))),
            advisory: labels.advisory.then(super::approval::AdvisoryStats::default),
            delegation: labels.delegation.then(DelegationStats::default),
            cache: labels.caches.then(super::cache::CacheStats::default),
            quorum: labels.quorum.then(super::quorum::QuorumStats::default),
            refused_all: [0; Refusal::COUNT],
            window,
            fault_span_us,
        }
    }

    /// Folds one observation into the figures. `measured` says whether it belongs to a run
    /// that arrived after the warm-up; the time series counts everything, warm-up included,
    /// because it shows how the system got where it is, and time integrals belong to no run:
    /// they are clipped to the measured window instead. One flat match, because the engine
    /// reports several observations per attempt and this is its hottest call.
    #[inline(always)]
    pub fn observe(&mut self, now: Micros, measured: bool, o: Observation) {
        match o {
            Observation::StationState { dependency, busy, queued, servers } => {
                self.dependencies[dependency as usize].advance(now, self.window, busy, queued, servers)
            }
            Observation::AttemptSent { dependency, cost_units } => {
                self.timeseries.add_attempt(now, dependency as usize);
                if measured {
                    self.run.attempts += 1;
                    self.dependencies[dependency as usize].attempts += 1;
                    if let Some(incident) = self.add_cost(now, cost_units) {
                        incident.attempts += 1;
                    }
                }
            }
            Observation::ServiceStarted { dependency, wait_us } if measured => {
                self.dependencies[dependency as usize].record_wait(wait_us)
            }
            Observation::Departed { dependency, sojourn_us, error } if measured => {
                let d = &mut self.dependencies[dependency as usize];
                d.sojourn_sum_us += us_as_f64(sojourn_us);
                d.sojourn_count += 1;
                if let Some(kind) = error {
                    d.errors[kind.index()] += 1;
                }
            }
            Observation::ServiceUsed { dependency, busy_us, wasted } if measured => {
                let d = &mut self.dependencies[dependency as usize];
                d.service_us += us_as_f64(busy_us);
                if wasted {
                    d.wasted_us += us_as_f64(busy_us);
                }
            }
            Observation::RunStarted { workflow } => {
                self.timeseries.add(now, timeseries::ARRIVALS);
                if measured {
                    self.run.runs += 1;
                    self.workflows[workflow as usize].runs += 1;
                }
            }
            Observation::RunEnded { .. } => self.run_ended(now, measured, o),
            Observation::LogicalCall => {
                self.run.logical_calls += u64::from(measured);
                if let Some(incident) = &mut self.incident
                    && measured
                    && incident.covers(now)
                {
                    incident.logical_calls += 1;
                }
            }
            Observation::RunFinalized { outcome, duplicate_effect, start_us } if measured => {
                if let Some(incident) = &mut self.incident {
                    incident.run_finalized(start_us, outcome, duplicate_effect);
                }
                self.run.safe_runs += u64::from(outcome.is_safe() && !duplicate_effect);
                self.run.duplicate_effect_runs += u64::from(duplicate_effect);
            }
            Observation::RequestSent { dependency, cost_units } => {
                self.request_sent(now, measured, dependency, cost_units)
            }
            Observation::Tokens(t) => {
                if let (Some(tokens), true) = (&mut self.tokens, measured) {
                    tokens.observe(t);
                }
            }
            Observation::Task(t) => self.task_observed(now, measured, t),
            _ => self.observe_rare(now, measured, o),
        }
    }

    fn run_ended(&mut self, now: Micros, measured: bool, ended: Observation) {
        let Observation::RunEnded {
            workflow,
            outcome,
            latency_us,
            deadline_exceeded,
            past_deadline,
            mode,
            degraded,
            evidence,
        } = ended
        else {
            unreachable!("only RunEnded is passed here")
        };
        self.timeseries.add_run_end(now, outcome.is_success(), deadline_exceeded);
        if measured {
            if let Some(modes) = &mut self.modes {
                modes.run_ended(mode, outcome);
            }
            if let Some(incident) = &mut self.incident {
                incident.run_ended(now.saturating_sub(latency_us), outcome, deadline_exceeded);
            }
            let r = &mut self.run;
            r.past_deadline += u64::from(past_deadline);
            r.evidence[evidence.index()] += 1;
            if outcome == Outcome::Degraded {
                for reason in DegradedReason::ALL {
                    r.degraded[reason.index()] += u64::from(degraded & reason.bit() != 0);
                }
            }
            r.outcomes[outcome.index()] += 1;
            r.latency_us.saturating_record(latency_us.max(1));
            r.latency_sum_us += us_as_f64(latency_us);
            r.latency_max_us = r.latency_max_us.max(latency_us);
            r.deadline_exceeded += u64::from(deadline_exceeded);
            let w = &mut self.workflows[workflow as usize];
            w.outcomes[outcome.index()] += 1;
            w.deadline_exceeded += u64::from(deadline_exceeded);
        }
    }

    /// A control request (a task's status poll, a cancel): cost and load like an attempt's,
    /// counted apart from the attempts.
    fn request_sent(&mut self, now: Micros, measured: bool, dependency: u16, cost_units: f64) {
        self.timeseries.add_attempt(now, dependency as usize);
        if measured {
            self.dependencies[dependency as usize].control_requests += 1;
            self.add_cost(now, cost_units);
        }
    }

    /// Adds a measured run's cost to the run totals and, when the incident window covers `now`,
    /// to the incident's, which it returns so the caller can count the rest of the event there.
    #[inline(always)]
    fn add_cost(&mut self, now: Micros, units: f64) -> Option<&mut IncidentStats> {
        self.run.cost_units += units;
        let incident = self.incident.as_mut().filter(|incident| incident.covers(now))?;
        incident.cost_units += units;
        Some(incident)
    }

    fn task_observed(&mut self, now: Micros, measured: bool, t: TaskObservation) {
        if !measured {
            return;
        }
        // A task's running cost is cost like any other; its calls' costs were counted as they
        // were sent.
        if let TaskObservation::Cost { units, .. } = t {
            self.add_cost(now, units);
        }
        if let TaskObservation::WorkWasted { runner, busy_us } = t {
            self.dependencies[runner as usize].wasted_us += us_as_f64(busy_us);
        }
        if let Some(tasks) = &mut self.tasks {
            tasks.observe(t);
        }
    }

    /// Everything but the per-attempt and per-request observations: counted once per run or
    /// per event.
    fn observe_rare(&mut self, now: Micros, measured: bool, o: Observation) {
        let r = &mut self.run;
        match o {
            // Handled in `observe`; unmeasured per-attempt figures are simply not counted.
            Observation::StationState { .. }
            | Observation::AttemptSent { .. }
            | Observation::ServiceStarted { .. }
            | Observation::Departed { .. }
            | Observation::ServiceUsed { .. }
            | Observation::RunStarted { .. }
            | Observation::RunEnded { .. }
            | Observation::LogicalCall
            | Observation::RunFinalized { .. }
            | Observation::RequestSent { .. }
            | Observation::Tokens(_)
            | Observation::Task(_) => {}
            Observation::BadResult(b) => {
                if self.bad_results.is_some() && measured {
                    // A validator's cost is the run's cost like any attempt's.
                    if let BadResultObservation::Validated { cost_units } = b {
                        self.add_cost(now, cost_units);
                    }
                }
                if let (Some(stats), true) = (&mut self.bad_results, measured) {
                    stats.observe(b);
                }
            }
            Observation::Delegation(o) => {
                if let (Some(delegation), true) = (&mut self.delegation, measured) {
                    delegation.observe(o);
                }
            }
            Observation::Cache(c) => {
                if let (Some(cache), true) = (&mut self.cache, measured) {
                    cache.observe(c);
                }
            }
            Observation::Quorum(q) => {
                if let (Some(quorum), true) = (&mut self.quorum, measured) {
                    quorum.observe(q);
                }
            }
            Observation::EffectUnknown => {
                self.timeseries.add(now, timeseries::EFFECT_UNKNOWN);
                r.effect_unknown += u64::from(measured);
            }
            Observation::Refused { dependency, reason } => {
                self.refused_all[reason.index()] += 1;
                self.timeseries.add_refused(now, dependency as usize);
                if measured {
                    self.dependencies[dependency as usize].refused[reason.index()] += 1;
                }
            }
            Observation::QueueDepth { dependency, depth } => {
                self.timeseries.sample_queue(now, dependency as usize, depth)
            }
            Observation::BreakerHeld { breaker, state } => self.timeseries.carry_breaker(now, breaker as usize, state),
            Observation::ModeTransition { workflow, from, to, flap, failed_canary } => {
                self.timeseries.mark_mode(now, workflow as usize, to);
                if let Some(modes) = &mut self.modes {
                    debug_assert_eq!(modes.modes().nth(workflow as usize), Some(from), "a workflow's modes chain");
                    modes.transition(workflow as usize, now, self.window, to, flap);
                    modes.failed_canaries += u64::from(failed_canary && (self.window.0..self.window.1).contains(&now));
                }
            }
            Observation::RunCancelledByMode => {
                if let Some(modes) = &mut self.modes
                    && measured
                {
                    modes.cancelled_runs += 1;
                }
            }
            Observation::ModeRun { canary, probe } => {
                if let Some(modes) = &mut self.modes
                    && measured
                {
                    modes.canary_runs += u64::from(canary);
                    modes.probe_runs += u64::from(probe);
                }
            }
            Observation::BudgetRead { workflow, state, ticket, spent, long_burn, short_burn } => {
                if let Some(modes) = &mut self.modes {
                    let read = super::modes::BudgetRead { state, ticket, spent, long_burn, short_burn };
                    modes.budget_read(workflow as usize, now, self.window, read);
                }
            }
            Observation::BreakerTransition { breaker, from, to } => {
                self.timeseries.mark_breaker(now, breaker as usize, to);
                let b = &mut self.breakers[breaker as usize];
                debug_assert_eq!(b.state, from, "a breaker's transitions chain");
                b.advance(now, self.window);
                b.state = to;
                if (self.window.0..self.window.1).contains(&now) {
                    b.transitions[to.index()] += 1;
                }
            }
            Observation::AdmissionRefused { .. } if !measured => self.refused_all[Refusal::Admission.index()] += 1,
            Observation::RunPaused if !measured => self.refused_all[Refusal::Paused.index()] += 1,
            Observation::UsersActive { active } => {
                if let Some(users) = &mut self.users {
                    users.set_active(now, self.window, active);
                }
            }
            _ if !measured => {}
            Observation::Resubmitted => r.resubmitted += 1,
            Observation::UserThought { think_us } => {
                if let Some(users) = &mut self.users {
                    users.thought(think_us);
                }
            }
            Observation::RunAbandoned => {
                if let Some(users) = &mut self.users {
                    users.abandoned += 1;
                }
            }
            Observation::UserLeft => {
                if let Some(users) = &mut self.users {
                    users.left += 1;
                }
            }
            Observation::AdmissionRefused { async_path } => {
                self.refused_all[Refusal::Admission.index()] += 1;
                if async_path {
                    r.admission_async += 1;
                } else {
                    r.admission_rejected += 1;
                }
            }
            Observation::BudgetExhausted(budget) => r.budget_exhausted[budget.index()] += 1,
            Observation::Reconciled => r.reconciled += 1,
            Observation::FallbackUsed { step } => {
                r.fallback_used += 1;
                self.step_fallback[step as usize] += 1;
            }
            Observation::StepOmitted { step, by_mode } => {
                r.omitted_steps += 1;
                r.omitted_by_mode += u64::from(by_mode);
                self.step_omitted[step as usize] += 1;
            }
            Observation::FallbackRefused => r.fallback_refused += 1,
            Observation::EvidenceStale => r.evidence_stale += 1,
            Observation::SchemaRepair => r.schema_repairs += 1,
            Observation::ApprovalRequested => {
                if let Some(a) = &mut self.approvals {
                    a.requested += 1;
                }
            }
            Observation::ApprovalEnded { verdict, wait_us } => {
                if let Some(a) = &mut self.approvals {
                    a.ended(verdict, wait_us);
                }
            }
            Observation::AdvisoryUsed => {
                if let Some(a) = &mut self.advisory {
                    a.used += 1;
                }
            }
            Observation::AdvisoryOmitted => {
                if let Some(a) = &mut self.advisory {
                    a.omitted += 1;
                }
            }
            Observation::RunPaused => {
                self.refused_all[Refusal::Paused.index()] += 1;
                r.runs_paused += 1;
            }
            Observation::WritePaused => r.writes_paused += 1,
            Observation::StepFailed { step } => self.step_failed[step as usize] += 1,
            Observation::EffectCommitted { duplicate } => {
                r.effects += 1;
                r.duplicate_effects += u64::from(duplicate);
            }
            Observation::QueueRejected { dependency } => self.dependencies[dependency as usize].rejected += 1,
            Observation::TimedOut { dependency } => self.dependencies[dependency as usize].timeouts += 1,
            Observation::HiddenAttempt { dependency } => {
                if measured {
                    r.hidden_attempts += 1;
                    self.dependencies[dependency as usize].hidden_attempts += 1;
                    if let Some(incident) = &mut self.incident
                        && incident.covers(now)
                    {
                        incident.hidden_attempts += 1;
                    }
                }
            }
            Observation::HedgeSent { dependency } => self.dependencies[dependency as usize].hedges_sent += 1,
            Observation::HedgeWon { dependency } => self.dependencies[dependency as usize].hedges_won += 1,
        }
    }

    /// Per-workflow and per-tenant run figures.
    fn put_classes(&self, labels: &Labels, m: &mut MetricMap) {
        for (stats, name) in self.workflows.iter().zip(&labels.workflows) {
            stats.put(&format!("workflow.{name}"), m);
        }
        let mut tenants: Vec<&str> = labels.workflow_tenants.iter().flatten().map(String::as_str).collect();
        tenants.sort_unstable();
        tenants.dedup();
        for tenant in tenants {
            let mut total = ClassStats::default();
            for (stats, t) in self.workflows.iter().zip(&labels.workflow_tenants) {
                if t.as_deref() == Some(tenant) {
                    total.add(stats);
                }
            }
            total.put(&format!("tenant.{tenant}"), m);
        }
    }

    /// Closes the time integrals at the end of the replication.
    pub fn finish(&mut self, end_us: Micros) {
        let window = self.window;
        for b in &mut self.breakers {
            b.advance(end_us, window);
        }
        if let Some(modes) = &mut self.modes {
            modes.finish(end_us, window);
        }
        if let Some(users) = &mut self.users {
            users.finish(end_us, window);
        }
    }

    /// Marks the window that opens at `window_start` with every breaker's state and every
    /// workflow's mode as it opens: the window's worst covers what held at its start.
    pub fn open_window(&mut self, window_start: Micros) {
        for (b, stats) in self.breakers.iter().enumerate() {
            self.timeseries.mark_breaker(window_start, b, stats.state);
        }
        if let Some(modes) = &self.modes {
            for (w, mode) in modes.modes().enumerate() {
                self.timeseries.mark_mode(window_start, w, mode);
            }
        }
        // A budget's last reading holds until the next: a window with no evaluation (an
        // interval longer than the window) shows it, as a mode held through a window does.
        for (i, &value) in self.budget_last.iter().enumerate() {
            self.timeseries.mark_budget(window_start, i / self.budget_width, i % self.budget_width, value);
        }
    }

    /// The level of guard `index` (in the order of `Labels::levels`) at the end of the window
    /// that `window_end` closes.
    pub fn sample_level(&mut self, window_end: Micros, index: usize, level: u64) {
        self.timeseries.sample_level(window_end, index, level);
    }

    /// The users present and thinking at the end of the window that `window_end` closes.
    pub fn sample_users(&mut self, window_end: Micros, active: u32, thinking: u32) {
        self.timeseries.sample_users(window_end, active, thinking);
    }

    /// Budget `group`'s reading at an evaluation (`burns`: a long and a short rate per rule):
    /// the window keeps the worst state and the largest share and rates it saw, and the
    /// reading is held for the windows that open before the next one.
    pub fn budget_series(&mut self, now: Micros, group: usize, state: BudgetState, spent: f64, burns: &[f64]) {
        debug_assert_eq!(2 + burns.len(), self.budget_width, "one column per rule's window");
        let scaled = |v: f64| (v * BUDGET_SCALE).round() as u64;
        let base = group * self.budget_width;
        let values = [state.index() as u64, scaled(spent)].into_iter().chain(burns.iter().map(|&b| scaled(b)));
        for (offset, value) in values.enumerate() {
            self.budget_last[base + offset] = value;
            self.timeseries.mark_budget(now, group, offset, value);
        }
    }

    /// Marks the last window with the mode each workflow holds at its end (a mode held through
    /// a window marks it, not only the window it began in).
    pub fn carry_modes(&mut self, window_end: Micros) {
        let Some(modes) = &self.modes else { return };
        let held: Vec<DegradationMode> = modes.modes().collect();
        for (w, mode) in held.into_iter().enumerate() {
            self.timeseries.mark_mode(window_end.saturating_sub(1), w, mode);
        }
    }

    /// Turns the replication into flat metrics. `dependency_names` and `step_names` give the
    /// labels in index order (step names flattened over workflows).
    /// Every metric of the replication under its one name (docs/metrics.md).
    pub fn to_map(&self, labels: &Labels) -> MetricMap {
        let mut m = MetricMap::new();
        self.put_runs(labels, &mut m);
        if !labels.context_reduction {
            // Only a policy whose fallbacks reduce a context can have the reason (and other
            // outputs keep the metrics they always had).
            m.remove(&format!("degraded_total.{}", DegradedReason::ContextReduced.name()));
        }
        match &self.cache {
            Some(cache) => cache.put(&mut m),
            None => {
                m.remove(&format!("degraded_total.{}", DegradedReason::StaleCache.name()));
            }
        }
        self.put_recovery(&mut m);
        self.put_task_recovery(labels, &mut m);
        self.put_dependencies(labels, &mut m);
        self.put_breakers(&labels.breakers, &mut m);
        self.put_classes(labels, &mut m);
        self.put_steps(&labels.steps, &mut m);
        if let Some(modes) = &self.modes {
            modes.put(self.window, &mut m);
        }
        if let Some(incident) = &self.incident {
            incident.put(&mut m, labels.sdk_clients);
        }
        if let Some(tasks) = &self.tasks {
            tasks.put(&mut m);
        }
        if let Some(users) = &self.users {
            users.put(self.window, &mut m);
        }
        if let Some(bad) = &self.bad_results {
            let answered: f64 =
                Outcome::ALL.iter().filter(|o| o.is_success()).map(|o| self.run.outcomes[o.index()] as f64).sum();
            bad.put(answered, &mut m);
        }
        if let Some(approvals) = &self.approvals {
            approvals.put(&mut m);
        }
        if let Some(advisory) = &self.advisory {
            advisory.put(&mut m);
        }
        if !labels.approvals {
            // Outcomes only an approval step can have: other scenarios keep the metrics they
            // always had (run-level, per workflow and tenant, per mode, during the incident).
            let names: Vec<String> = Outcome::ALL
                .into_iter()
                .filter(|o| o.needs_approval())
                .map(|o| format!("outcome_total.{}", o.name()))
                .collect();
            m.retain(|k, _| !names.iter().any(|n| k.ends_with(n.as_str())));
        }
        if let Some(delegation) = &self.delegation {
            delegation.put(&mut m);
        }
        if let Some(quorum) = &self.quorum {
            quorum.put(&mut m);
        }
        if let Some(tokens) = &self.tokens {
            let successes: f64 =
                Outcome::ALL.iter().filter(|o| o.is_success()).map(|o| self.run.outcomes[o.index()] as f64).sum();
            tokens.put(&labels.dependencies, &labels.token_dependencies, successes, &mut m);
        }
        m
    }

    /// Root runs, logical calls, attempts, budgets, effects, cost and refusals in all.
    fn put_runs(&self, labels: &Labels, m: &mut MetricMap) {
        let r = &self.run;
        let mut put = |name: String, value: f64| {
            m.insert(name, value);
        };
        let runs = r.runs as f64;
        let successes: f64 = Outcome::ALL.iter().filter(|o| o.is_success()).map(|o| r.outcomes[o.index()] as f64).sum();
        put("logical_run_total".into(), runs);
        for o in Outcome::ALL {
            put(format!("outcome_total.{}", o.name()), r.outcomes[o.index()] as f64);
        }
        put("auto_completion_ratio".into(), ratio(successes, runs));
        put("safe_outcome_ratio".into(), ratio(r.safe_runs as f64, runs));
        put("deadline_exceeded_total".into(), r.deadline_exceeded as f64);
        put("deadline_exceeded_ratio".into(), ratio(r.deadline_exceeded as f64, runs));
        put("run_past_deadline_total".into(), r.past_deadline as f64);
        put("run_past_deadline_ratio".into(), ratio(r.past_deadline as f64, runs));
        let full_quality = r.outcomes[Outcome::Succeeded.index()] as f64;
        put("full_quality_completion_ratio".into(), ratio(full_quality, runs));
        for reason in DegradedReason::ALL {
            put(format!("degraded_total.{}", reason.name()), r.degraded[reason.index()] as f64);
        }
        let latency = |q: f64| if r.runs > 0 { us_to_ms(r.latency_us.value_at_quantile(q)) } else { f64::NAN };
        put("run_latency_ms.mean".into(), ratio(r.latency_sum_us / 1e3, runs));
        put("run_latency_ms.p50".into(), latency(0.50));
        put("run_latency_ms.p95".into(), latency(0.95));
        put("run_latency_ms.p99".into(), latency(0.99));
        put("run_latency_ms.max".into(), if r.runs > 0 { us_to_ms(r.latency_max_us) } else { f64::NAN });
        put("logical_call_total".into(), r.logical_calls as f64);
        put("dependency_attempt_total".into(), r.attempts as f64);
        put("retry_amplification_ratio".into(), ratio(r.attempts as f64, r.logical_calls as f64));
        if labels.sdk_clients {
            put("hidden_attempt_total".into(), r.hidden_attempts as f64);
            let seen = r.attempts.saturating_sub(r.hidden_attempts) as f64;
            put("runtime_retry_amplification_ratio".into(), ratio(seen, r.logical_calls as f64));
        }
        for budget in BudgetKind::ALL {
            put(format!("budget_exhausted_total.{}", budget.name()), r.budget_exhausted[budget.index()] as f64);
        }
        put("effect_total".into(), r.effects as f64);
        put("duplicate_effect_total".into(), r.duplicate_effects as f64);
        put("duplicate_effect_run_total".into(), r.duplicate_effect_runs as f64);
        put("effect_unknown_total".into(), r.effect_unknown as f64);
        put("reconciled_total".into(), r.reconciled as f64);
        put("cost_units_total".into(), r.cost_units);
        put("cost_per_success".into(), ratio(r.cost_units, successes));
        // The essay's "cost per success" compares like with like only at full quality: a run
        // that fell back to a cheaper model costs less and answers worse.
        put("cost_per_full_quality_success".into(), ratio(r.cost_units, r.outcomes[Outcome::Succeeded.index()] as f64));
        put("resubmitted_run_total".into(), r.resubmitted as f64);
        put("fallback_used_total".into(), r.fallback_used as f64);
        put("omitted_step_total".into(), r.omitted_steps as f64);
        put("omitted_by_mode_total".into(), r.omitted_by_mode as f64);
        put("write_paused_total".into(), r.writes_paused as f64);
        put("fallback_refused_total".into(), r.fallback_refused as f64);
        put("evidence_stale_total".into(), r.evidence_stale as f64);
        put("schema_repair_total".into(), r.schema_repairs as f64);
        for level in EvidenceLevel::ALL {
            put(format!("evidence_run_total.{}", level.name()), r.evidence[level.index()] as f64);
        }
        put("admission_rejected_total".into(), r.admission_rejected as f64);
        put("admission_async_total".into(), r.admission_async as f64);
        put("queue_rejected_total".into(), self.dependencies.iter().map(|d| d.rejected as f64).sum());
        put("hedge_sent_total".into(), self.dependencies.iter().map(|d| d.hedges_sent as f64).sum());
        put("hedge_won_total".into(), self.dependencies.iter().map(|d| d.hedges_won as f64).sum());
        for reason in Refusal::ALL {
            let mut total: u64 = self.dependencies.iter().map(|d| d.refused[reason.index()]).sum();
            // Admission and a paused mode refuse whole runs, before any dependency is chosen.
            match reason {
                Refusal::Admission => total += r.admission_rejected + r.admission_async,
                Refusal::Paused => total += r.runs_paused,
                Refusal::CircuitOpen
                | Refusal::Bulkhead
                | Refusal::RetryBudget
                | Refusal::Throttled
                | Refusal::Shed
                | Refusal::Expired
                | Refusal::FanOut => {}
            }
            put(format!("refused_total.{}", reason.name()), total as f64);
        }
    }

    /// Recovery after the fault windows, from the goodput and attempts per window.
    fn put_recovery(&self, m: &mut MetricMap) {
        let span = Span {
            window_us: self.timeseries.window_us,
            warmup_us: self.window.0,
            duration_us: self.window.1,
            fault_us: self.fault_span_us,
        };
        let goodput = self.timeseries.fixed_column(timeseries::GOODPUT);
        let rec = recovery::recovery(&goodput, &self.timeseries.attempts_per_window(), &span);
        m.insert("recovery_time_s".into(), rec.time_s);
        m.insert("recovery_never_total".into(), rec.never_total);
        m.insert("recovery_storm_ratio".into(), rec.storm_ratio);
        m.insert("recovery_goodput_floor_ratio".into(), rec.goodput_floor_ratio);
    }

    /// Per task dependency, the storm its clients make as it comes back from a fault: peak
    /// requests per window over the pre-fault mean, after the fault and inside it, and how long
    /// its queue took to drain.
    fn put_task_recovery(&self, labels: &Labels, m: &mut MetricMap) {
        let span = Span {
            window_us: self.timeseries.window_us,
            warmup_us: self.window.0,
            duration_us: self.window.1,
            fault_us: self.fault_span_us,
        };
        for &d in &labels.task_dependencies {
            let name = &labels.dependencies[d];
            let requests = self.timeseries.fixed_column(self.timeseries.attempts_column(d));
            let depth = self.timeseries.fixed_column(self.timeseries.queue_column(d));
            m.insert(format!("dependency.{name}.recovery_peak_ratio"), recovery::storm_ratio(&requests, &span));
            m.insert(format!("dependency.{name}.fault_peak_ratio"), recovery::fault_peak_ratio(&requests, &span));
            m.insert(format!("dependency.{name}.recovery_drain_s"), recovery::drain_time_s(&depth, &span));
        }
    }

    /// Per dependency: attempts, refusals, errors, queueing and utilization over the measured span.
    fn put_dependencies(&self, labels: &Labels, m: &mut MetricMap) {
        let dependency_names = &labels.dependencies;
        let mut put = |name: String, value: f64| {
            m.insert(name, value);
        };
        let measured_us = (self.window.1 - self.window.0) as f64;
        for (d, name) in self.dependencies.iter().zip(dependency_names) {
            let p = |metric: &str| format!("dependency.{name}.{metric}");
            put(p("attempt_total"), d.attempts as f64);
            if !labels.task_dependencies.is_empty() {
                put(p("control_request_total"), d.control_requests as f64);
            }
            if labels.sdk_clients {
                put(p("hidden_attempt_total"), d.hidden_attempts as f64);
            }
            put(p("attempt_rate_per_s"), ratio(d.attempts as f64, measured_us / 1e6));
            put(p("timeout_total"), d.timeouts as f64);
            put(p("rejected_total"), d.rejected as f64);
            put(p("rejection_ratio"), ratio(d.rejected as f64, d.attempts as f64));
            for reason in Refusal::ALL.into_iter().filter(|&r| r != Refusal::Admission && r != Refusal::Paused) {
                put(p(&format!("refused_total.{}", reason.name())), d.refused[reason.index()] as f64);
            }
            for &kind in FailureKind::DRAWN {
                put(p(&format!("error_total.{}", kind.metric_name())), d.errors[kind.index()] as f64);
            }
            put(p("queue_wait_ms.mean"), ratio(d.queue_wait_sum_us / 1e3, d.started as f64));
            put(
                p("queue_wait_ms.p95"),
                if d.started > 0 { us_to_ms(d.queue_wait_us().value_at_quantile(0.95)) } else { f64::NAN },
            );
            put(p("wait_probability"), ratio(d.waited as f64, d.started as f64));
            put(p("utilization"), ratio(d.busy_area, d.capacity_area));
            put(p("queue_length.mean"), d.queue_area / measured_us);
            put(p("in_system.mean"), (d.queue_area + d.busy_area) / measured_us);
            put(p("sojourn_ms.mean"), ratio(d.sojourn_sum_us / 1e3, d.sojourn_count as f64));
            put(p("wasted_service_ratio"), ratio(d.wasted_us, d.service_us));
        }
    }

    /// Per breaker label: transitions into and time in each state.
    fn put_breakers(&self, breaker_names: &[String], m: &mut MetricMap) {
        for (b, name) in self.breakers.iter().zip(breaker_names) {
            for state in BreakerState::ALL {
                let i = state.index();
                m.insert(format!("breaker.{name}.transition_total.{}", state.name()), b.transitions[i] as f64);
                m.insert(
                    format!("breaker.{name}.time_in_state_s.{}", state.name()),
                    b.time_in_state_us[i] as f64 / 1e6,
                );
            }
        }
    }

    /// Per step id: omitted, fell back, failed (steps of one id in several workflows summed).
    fn put_steps(&self, step_names: &[String], m: &mut MetricMap) {
        for (i, name) in step_names.iter().enumerate() {
            if name.is_empty() {
                continue;
            }
            // Steps of the same id in different workflows are summed under one name.
            for (metric, counts) in [
                ("omitted_total", &self.step_omitted),
                ("fallback_total", &self.step_fallback),
                ("failed_total", &self.step_failed),
            ] {
                *m.entry(format!("step.{name}.{metric}")).or_insert(0.0) += counts[i] as f64;
            }
        }
    }
}

/// Time-series columns for modes: one per workflow when the policy declares modes.
fn mode_columns(labels: &Labels) -> usize {
    if labels.modes { labels.workflows.len() } else { 0 }
}

/// a / b, undefined (NaN, an empty cell in the outputs) when there is nothing to divide by.
fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { f64::NAN }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_waits_count_as_zero_and_the_maximum_is_exact() {
        let labels = Labels { dependencies: vec!["d".into()], ..Labels::default() };
        let mut r = Recorder::new(&labels, (0, 1_000_000), 1_000_000, None);
        for _ in 0..99 {
            r.dependencies[0].record_wait(0);
        }
        r.dependencies[0].record_wait(5_000);
        r.run.runs = 1;
        r.run.latency_us.saturating_record(12_000_000);
        r.run.latency_sum_us = 12_000_000.0;
        r.run.latency_max_us = 12_000_000;
        let m = r.to_map(&labels);
        assert_eq!(m["dependency.d.queue_wait_ms.p95"], 0.0);
        assert_eq!(m["dependency.d.wait_probability"], 0.01);
        assert_eq!(m["dependency.d.queue_wait_ms.mean"], 0.05);
        assert_eq!(m["run_latency_ms.max"], 12_000.0, "not the histogram bucket's upper edge");
        assert!(m["cost_per_success"].is_nan(), "0/0 is undefined, not zero");
        assert!(m["recovery_time_s"].is_nan() && m["recovery_never_total"].is_nan(), "no fault");
    }

    #[test]
    fn recovery_metrics_come_from_the_time_series() {
        let labels = Labels { dependencies: vec!["d".into()], ..Labels::default() };
        let s = 1_000_000;
        // 10 s windows, warm-up 10 s, duration 60 s, a fault over [30 s, 35 s).
        let mut r = Recorder::new(&labels, (10 * s, 60 * s), 10 * s, Some((30 * s, 35 * s)));
        let per_window = [(10, 10), (10, 10), (10, 10), (2, 40), (5, 30), (10, 12)];
        for (k, &(good, attempts)) in per_window.iter().enumerate() {
            let at = k as Micros * 10 * s;
            for _ in 0..good {
                let ended = Observation::RunEnded {
                    workflow: 0,
                    outcome: Outcome::Succeeded,
                    latency_us: 1,
                    deadline_exceeded: false,
                    past_deadline: false,
                    mode: DegradationMode::Normal,
                    degraded: 0,
                    evidence: EvidenceLevel::Live,
                };
                r.observe(at, true, ended);
            }
            for _ in 0..attempts {
                r.observe(at, true, Observation::AttemptSent { dependency: 0, cost_units: 0.0 });
            }
        }
        let m = r.to_map(&labels);
        assert_eq!(m["recovery_time_s"], 15.0, "window 5 (50 s) is back in the band; the fault ended at 35 s");
        assert_eq!(m["recovery_never_total"], 0.0);
        assert_eq!(m["recovery_storm_ratio"], 3.0, "window 4: 30 attempts over a baseline of 10");
    }
}
