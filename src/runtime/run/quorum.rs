//! A k-of-n quorum step in the run machine (docs/scenario.md 6.2, docs/essay.md section 22):
//! the step sends its branches (first attempts, one each, never retried or hedged), counts
//! their answers in a [`QuorumTally`](crate::runtime::quorum::QuorumTally) and decides as
//! soon as k agree or k can no longer be reached, cancelling the branches still out (they
//! keep what they spent, as a hedge's losers do). Met, the step succeeds; agreed on a wrong
//! answer, it succeeds too and the run's answer rests on a bad result nobody caught; not met,
//! it gives up without a fallback. Only workflows with a quorum step come here
//! (`WorkflowModel::has_quorum`).

use super::{Attempt, MayFallBack, RunContext, RunMachine};
use crate::metrics::Observation;
use crate::metrics::bad_results::BadResultObservation;
use crate::metrics::quorum::QuorumObservation;
use crate::runtime::attempt::{AttemptResult, Purpose};
use crate::runtime::command::Effects;
use crate::runtime::guard::{AttemptEnd, Ending};
use crate::runtime::quorum::QuorumOutcome;
use crate::runtime::quorum_step::{QuorumRun, TAG_QUORUM};
use crate::runtime::trace::TraceEvent;
use crate::vocab::{AttemptKind, QuorumVerdict};
use crate::world::bad_result::BadResult;

impl RunMachine {
    /// Quorum step `s` starts: its shared cause is drawn (once per run and step, on a stream
    /// of its own), then its first branches go out.
    #[cold]
    #[inline(never)]
    pub(super) fn start_quorum(&mut self, cx: &mut RunContext, out: &mut impl Effects, s: u8) {
        let workflow = cx.workflow;
        let step = &workflow.steps[s as usize];
        let Some(q) = step.quorum.as_deref() else { return };
        let cause = self.key.with(TAG_QUORUM).with(step.stream_id).stream().unit() < q.shared;
        self.quorums.push(QuorumRun::new(s, q, cause));
        out.observe(Observation::Quorum(QuorumObservation::Started));
        self.send_branches(cx, out, s);
    }

    /// Sends branches while the quorum wants more out. A branch that cannot go (no time left,
    /// over the cost budget, refused by a guard or the fan-out limits) counts as failed at
    /// once, which may decide the quorum.
    fn send_branches(&mut self, cx: &mut RunContext, out: &mut impl Effects, s: u8) {
        let (workflow, policy) = (cx.workflow, cx.policy);
        let Some(q) = workflow.steps[s as usize].quorum.as_deref() else { return };
        let sp = &policy.steps[cx.workflow_index][s as usize];
        loop {
            let Some(i) = self.quorums.iter().position(|r| r.step == s) else { return };
            if !self.quorums[i].wants_more(q, self.steps[s as usize].in_flight) {
                return;
            }
            let branch = self.quorums[i].next;
            self.quorums[i].next += 1;
            let dependency = q.branches[branch as usize];
            let serial = self.steps[s as usize].serial;
            if self.send_branch(cx, out, s, (dependency, sp.quorum_routes[branch as usize])) {
                self.quorums[i].sent(branch, serial);
                out.observe(Observation::Quorum(QuorumObservation::BranchSent));
                continue;
            }
            if let Some(outcome) = self.quorums[i].tally.record(crate::runtime::quorum::BranchAnswer::Failed) {
                return self.decide_quorum(cx, out, s, i, outcome);
            }
        }
    }

    /// One branch's attempt at `dependency` through `route`, under the run's budgets; false
    /// when it did not go.
    fn send_branch(
        &mut self,
        cx: &mut RunContext,
        out: &mut impl Effects,
        s: u8,
        (dependency, route): (usize, crate::runtime::guard::pipeline::RouteId),
    ) -> bool {
        let sp = cx.step(s).1;
        let Some(timeout_us) = self.timeout_or_exhausted(cx, out, s, sp.timeout_us, sp.reserve_us) else {
            return false;
        };
        let cost = self.spend_of(cx, s, dependency);
        if let Err(exhausted) = self.budget.check_cost(cost) {
            out.observe(Observation::BudgetExhausted(exhausted));
            out.trace(TraceEvent::BudgetExhausted { step: s, kind: exhausted });
            return false;
        }
        let info = cx.info(AttemptKind::First, false, None);
        let attempt = Attempt { dependency, route, info, purpose: Purpose::Call, timeout_us, cost: cost.cost_units };
        self.steps[s as usize].tried_primary = true;
        if !self.send(cx, out, s, attempt) {
            return false;
        }
        self.spend_unless_cached(cx, dependency, Purpose::Call, cost);
        self.steps[s as usize].count_attempt();
        true
    }

    /// A branch of quorum step `s` answered (`failed`: an error, a timeout, a permit that never
    /// came; `bad`: a success whose answer is bad). Its answer is counted; the quorum decides,
    /// or sends what it now needs. Cold: kept out of the result path every attempt takes.
    #[cold]
    #[inline(never)]
    pub(super) fn on_branch_answer(
        &mut self,
        cx: &mut RunContext,
        out: &mut impl Effects,
        s: u8,
        serial: u32,
        failed: bool,
        bad: Option<BadResult>,
    ) {
        let workflow = cx.workflow;
        let Some(q) = workflow.steps[s as usize].quorum.as_deref() else { return };
        let Some(i) = self.quorums.iter().position(|r| r.step == s) else { return };
        let Some(branch) = self.quorums[i].branch_of(serial) else { return };
        if let (false, Some(kind)) = (failed, bad) {
            out.observe(Observation::BadResult(BadResultObservation::Received { kind }));
        }
        let answer = self.quorums[i].answer(q, branch, failed, bad.is_some());
        match self.quorums[i].tally.record(answer) {
            Some(outcome) => self.decide_quorum(cx, out, s, i, outcome),
            None => self.send_branches(cx, out, s),
        }
    }

    /// The tally of quorum `i` (step `s`) decided: the branches still out are cancelled and
    /// the step ends as the outcome says.
    fn decide_quorum(&mut self, cx: &mut RunContext, out: &mut impl Effects, s: u8, i: usize, outcome: QuorumOutcome) {
        self.quorums.swap_remove(i);
        let before = self.detached.len();
        if self.steps[s as usize].in_flight > 0 {
            self.detach_trials(cx, s);
        }
        let left_running = (self.detached.len() - before) as u8;
        let cancelled = self.steps[s as usize].in_flight;
        if cancelled > 0 {
            self.cancel_step_attempts(cx, out, s);
        }
        let verdict = match outcome {
            QuorumOutcome::AgreedRight => QuorumVerdict::Met,
            QuorumOutcome::AgreedWrong => QuorumVerdict::WrongAgreement,
            QuorumOutcome::NoQuorum => QuorumVerdict::NotMet,
        };
        out.observe(Observation::Quorum(QuorumObservation::Decided { verdict, cancelled: cancelled as u8 }));
        out.trace(TraceEvent::QuorumDecided { step: s, verdict, cancelled: cancelled as u8, left_running });
        match outcome {
            QuorumOutcome::AgreedRight => self.step_succeeded(cx, out, s, false),
            QuorumOutcome::AgreedWrong => {
                // Nothing in the runtime can tell: the run's answer rests on it.
                self.rests_on_bad_result = true;
                self.step_succeeded(cx, out, s, false);
            }
            QuorumOutcome::NoQuorum => self.step_gave_up(cx, out, s, MayFallBack::No),
        }
    }

    /// Before the decision cancels the branches still out, those that are a half-open
    /// breaker's trial calls leave the tally and are left to finish: cancelled, a trial call
    /// gives its permit back unjudged (resilience4j's releasePermission), and a quorum that is
    /// decided by the refusals of the other branches would cancel every trial call the breaker
    /// hands out, so it could never close again (review31 H3). Their answers no longer count;
    /// their ends go to the guards ([`RunMachine::on_detached_result`]). Only a branch sent
    /// straight to its dependency's station is kept (no SDK client, cache or task client
    /// between), so its result surely comes back while the run's slot is held.
    fn detach_trials(&mut self, cx: &RunContext, s: u8) {
        let mut j = 0;
        while j < self.in_flight.len() {
            let a = &self.in_flight[j];
            let d = a.dependency as usize;
            let straight = cx.policy.sdk_clients[d].is_none()
                && !(cx.policy.looks_in_caches && cx.policy.caches[d].is_some())
                && cx.loads.dependencies[d].task.is_none();
            if a.step == s && !a.waiting() && a.purpose == Purpose::Call && straight && cx.pipeline.on_trial(a.route) {
                let a = self.take_in_flight(j);
                self.detached.push(a);
            } else {
                j += 1;
            }
        }
    }

    /// A detached trial call ended: its guards hear how, as of any attempt; the run, decided
    /// or ended, takes nothing from it.
    #[cold]
    #[inline(never)]
    pub(super) fn on_detached_result(
        &mut self,
        cx: &mut RunContext,
        out: &mut impl Effects,
        s: u8,
        serial: u32,
        result: AttemptResult,
    ) {
        let Some(j) = self.detached.iter().position(|a| a.step == s && a.serial == serial) else { return };
        let a = self.detached.swap_remove(j);
        let kind = self.failure_kind(cx, s, result, a.purpose);
        out.trace(TraceEvent::AttemptEnded { step: s, serial, result, kind });
        let duration_us = cx.now - a.sent_us;
        let end = match kind {
            None => AttemptEnd::success(duration_us),
            Some(k) => AttemptEnd::failed(k, duration_us),
        };
        cx.pipeline.on_end(cx.now, a.route, a.info(cx), a.held, Ending::Outcome(end), None, out);
    }
}
