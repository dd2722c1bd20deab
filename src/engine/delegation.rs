//! Delegation hops between A2A agents in the engine: each hop's chain (the delegation context
//! it carries), the delegation loop fault, the root run's attempts and cost across hops, and a
//! run's delegation figures. The rule itself is `runtime::delegation::check_hop`; this file only
//! keeps the state it reads and carries out what it says. Nothing here runs unless the world
//! delegates (`World::delegates`): other scenarios keep their figures to the byte.

use super::delegation_slot::{LoopPhase, RunHops};
use super::simulation::{Caller, Simulation};
use super::stations::NewAttempt;
use crate::metrics::Observation;
use crate::metrics::delegation::DelegationObservation;
use crate::runtime::delegation::{Chain, Hop, HopAllowed, RootLedger, check_hop};
use crate::runtime::{AttemptResult, Purpose, Tracer};
use crate::sim::Micros;
use crate::vocab::{DelegationRefusal, FailureKind};
use crate::world::FaultEffect;

/// The draw that decides whether a served agent loops (a fault's toxicity), under its job key.
const TAG_LOOP_DRAW: u64 = 0xDE1E_0001;
/// The key path of the hop back's attempts (apart from every call index, which is a u16).
const TAG_LOOP_HOP: u64 = 0xDE1E_0002;

/// The kind a refused hop fails its sender's call with: the receiving side would reject the
/// task (A2A TASK_STATE_REJECTED), and the same request would be rejected again, so no caller
/// retries it.
pub(super) const REFUSED_HOP_KIND: FailureKind = FailureKind::PermanentProvider;

/// What an agent does about a hop it may not send.
enum Refused {
    /// A revisit: the agent it would go to is already at work on this chain, so the sender
    /// goes on without it.
    Skip,
    /// Any other limit: the sender's call fails.
    Fail,
}

impl<T: Tracer> Simulation<'_, T> {
    /// Whether the agent served as job `id` starts with a hop back (a delegation loop fault
    /// active at its station, drawn against the fault's toxicity).
    pub(super) fn starts_delegation_loop(&mut self, now: Micros, id: u32) -> bool {
        let job = &self.jobs[id];
        let dep = &self.model.world.dependencies[job.station as usize];
        let fault = dep.faults.iter().map(|&f| &self.model.world.faults[f]).find_map(|f| {
            let FaultEffect::DelegationLoop { timeout_us, max_attempts } = f.effect else { return None };
            f.active_at(now).then_some((f.toxicity, timeout_us, max_attempts))
        });
        let Some((toxicity, timeout_us, max_attempts)) = fault else { return false };
        if job.key.with(TAG_LOOP_DRAW).stream().unit() >= toxicity {
            return false;
        }
        let generation = job.generation;
        let slot = self.delegation.slot_mut(id, generation);
        slot.looping = LoopPhase::Pending;
        slot.loop_timeout_us = timeout_us;
        slot.loop_max_attempts = max_attempts;
        true
    }

    /// Sends or refuses the hop back of a looping agent. True when the job's next step is
    /// taken care of; false when its own calls go on (no loop, or the loop was refused as a
    /// revisit).
    pub(super) fn delegation_loop_next(&mut self, now: Micros, id: u32) -> bool {
        let job = self.jobs[id];
        let Some(slot) = self.delegation.slot(id, job.generation).copied() else { return false };
        if slot.looping != LoopPhase::Pending {
            return false;
        }
        let to = slot.chain.first_or(job.station);
        let key = job.key.with(TAG_LOOP_HOP).with(u64::from(job.sub_attempt));
        match self.send_hop(now, id, to as usize, key, slot.loop_timeout_us) {
            Ok(()) => {
                self.delegation.slot_mut(id, job.generation).looping = LoopPhase::Sent;
                true
            }
            Err(Refused::Skip) => {
                self.delegation.slot_mut(id, job.generation).looping = LoopPhase::None;
                false
            }
            Err(Refused::Fail) => {
                self.jobs[id].error = Some(REFUSED_HOP_KIND);
                self.complete_service(now, id);
                true
            }
        }
    }

    /// The result of a looping agent's hop back. False when the result is not the hop back's.
    pub(super) fn delegation_loop_result(&mut self, now: Micros, id: u32, result: AttemptResult) -> bool {
        let generation = self.jobs[id].generation;
        let Some(slot) = self.delegation.slot(id, generation).copied() else { return false };
        if slot.looping != LoopPhase::Sent {
            return false;
        }
        let kind = match result {
            AttemptResult::Ok | AttemptResult::NotFound => {
                self.delegation.slot_mut(id, generation).looping = LoopPhase::None;
                self.jobs[id].sub_attempt = 0;
                self.remote_next(now, id);
                return true;
            }
            AttemptResult::Failed { kind, .. } => kind,
            AttemptResult::TimedOut => FailureKind::TransientTransport,
        };
        let job = &mut self.jobs[id];
        job.sub_attempt += 1;
        if job.sub_attempt < slot.loop_max_attempts && crate::runtime::decision::default_retryable()[kind.index()] {
            self.delegation.slot_mut(id, generation).looping = LoopPhase::Pending;
            self.remote_next(now, id);
        } else {
            job.error = Some(kind);
            self.complete_service(now, id);
        }
        true
    }

    /// A delegate call of job `id`'s agent: sends it as a hop, or says what to do instead.
    /// `Ok(true)` sent, `Ok(false)` skipped (a refused revisit: the sender goes on as if it
    /// were done), `Err(())` refused (the job has failed).
    pub(super) fn delegate_call(
        &mut self,
        now: Micros,
        id: u32,
        to: usize,
        key: crate::sim::StreamKey,
        timeout_us: Micros,
    ) -> Result<bool, ()> {
        match self.send_hop(now, id, to, key, timeout_us) {
            Ok(()) => Ok(true),
            Err(Refused::Skip) => Ok(false),
            Err(Refused::Fail) => {
                self.jobs[id].error = Some(REFUSED_HOP_KIND);
                self.complete_service(now, id);
                Err(())
            }
        }
    }

    /// Checks a hop from job `id`'s agent to `to` against the root run's limits and, if it
    /// may go, sends it carrying the extended chain.
    fn send_hop(
        &mut self,
        now: Micros,
        id: u32,
        to: usize,
        key: crate::sim::StreamKey,
        timeout_us: Micros,
    ) -> Result<(), Refused> {
        let job = self.jobs[id];
        let chain = self.delegation.slot(id, job.generation).map_or(Chain::ROOT, |s| s.chain);
        let cost = self.model.world.dependencies[to].cost_units;
        let run = &self.runs[job.run];
        // A task's work outlives its run: past it, no run's ledger or limits apply.
        let live_run = run.generation == job.run_gen;
        let (limits, root) = if live_run {
            (*run.machine.fan_out_limits(), run.machine.root_ledger(now, self.policy.rules.deadline_propagation))
        } else {
            (self.policy.fan_out, RootLedger { attempts_total: 0, cost_in_flight: 0.0, deadline_passed: false })
        };
        // The deadline the hop carries bounds it: the callee stops when it passes (gRPC's
        // propagated deadline), not at the call's own timeout long after.
        let timeout_us = if live_run && self.policy.rules.deadline_propagation {
            timeout_us.min(run.machine.deadline_left_us(now))
        } else {
            timeout_us
        };
        let hop = Hop { sender: job.station, to: to as u16, cost };
        let HopAllowed { depth, revisit } = match check_hop(&limits, &chain, hop, root) {
            Ok(allowed) => allowed,
            Err(reason) => {
                self.observe(now, job.measured, Observation::Delegation(DelegationObservation::Refused(reason)));
                return Err(match reason {
                    DelegationRefusal::Visited => Refused::Skip,
                    DelegationRefusal::Depth
                    | DelegationRefusal::TotalAttempts
                    | DelegationRefusal::ParallelCost
                    | DelegationRefusal::Deadline => Refused::Fail,
                });
            }
        };
        let attempt = NewAttempt {
            station: to,
            purpose: Purpose::Call,
            priority: job.priority,
            caller: Caller::Remote { job: id, generation: job.generation },
            run: job.run,
            run_gen: job.run_gen,
            measured: job.measured,
            key,
            timeout_us: Some(timeout_us),
            owned: job.owned,
            stuck: false,
            counted: true,
            tokens: None,
            first_token_timeout_us: None,
        };
        self.observe(now, job.measured, Observation::Delegation(DelegationObservation::HopSent { depth, revisit }));
        let child = self.submit(now, attempt);
        self.jobs[id].child = Some(child);
        let (child_id, child_gen) = child;
        let held = if self.jobs[child_id].generation == child_gen {
            let slot = self.delegation.slot_mut(child_id, child_gen);
            slot.chain = chain.extended(job.station);
            slot.cost = if live_run { cost } else { 0.0 };
            slot.cost
        } else {
            0.0
        };
        if live_run {
            let r = job.run as usize;
            let machine = &mut self.runs[job.run].machine;
            machine.hop_sent(held);
            let peak = machine.cost_in_flight();
            if self.delegation.runs.len() <= r {
                self.delegation.runs.resize(r + 1, RunHops::default());
            }
            let hops = &mut self.delegation.runs[r];
            if hops.generation != job.run_gen {
                *hops = RunHops { generation: job.run_gen, ..RunHops::default() };
            }
            hops.max_depth = hops.max_depth.max(depth);
            hops.peak_cost_units = hops.peak_cost_units.max(peak);
        }
        Ok(())
    }

    /// A job leaves: a hop gives its cost in flight back to its run.
    #[inline]
    pub(super) fn delegation_job_freed(&mut self, id: u32) {
        let job = self.jobs[id];
        let Some(slot) = self.delegation.jobs.get_mut(id as usize) else { return };
        if !slot.live || slot.generation != job.generation {
            return;
        }
        slot.live = false;
        let run = &mut self.runs[job.run];
        if slot.cost > 0.0 && run.generation == job.run_gen {
            run.machine.hop_ended(slot.cost);
        }
    }

    /// A run's last attempt has left: its delegation figures.
    pub(super) fn delegation_run_finalized(&mut self, now: Micros, r: u32) {
        let slot = &self.runs[r];
        let (generation, measured, attempts) = (slot.generation, slot.measured, slot.machine.attempts_total());
        let hops = self.delegation.runs.get(r as usize).filter(|h| h.generation == generation).copied();
        let hops = hops.unwrap_or_default();
        let o = DelegationObservation::RunFinalized {
            attempts,
            // The simulator bounds a chain at 16 hops (runtime/delegation.rs).
            max_depth: u16::try_from(hops.max_depth).unwrap_or(u16::MAX),
            peak_cost_units: hops.peak_cost_units,
        };
        self.observe(now, measured, Observation::Delegation(o));
    }
}
