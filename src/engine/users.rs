//! Closed populations (docs/scenario.md 4.3.2): each user starts a root run, waits for its
//! answer or gives up after `abandon_after_ms` (the run goes on in the system, as a Locust
//! user's request goes on at the server after its client timed out), thinks for its wait_time,
//! and starts the next. A user who met a failure may leave for good (`leave_after_failure`),
//! as people do; a ramp down lets the users it no longer wants go at their next decision.
//!
//! Every draw of a user is keyed by (workflow, user, cycle), never by the order events happen
//! in, so two policies compared on one seed give the same user the same think times.

use super::event::Event;
use super::simulation::Simulation;
use super::user_slots::{UserLink, UserState};
use crate::metrics::Observation;
use crate::runtime::Tracer;
use crate::sim::Micros;

impl<T: Tracer> Simulation<'_, T> {
    /// The populations' own events, out of the hot dispatch.
    #[cold]
    #[inline(never)]
    pub(super) fn on_user_event(&mut self, now: Micros, event: Event) {
        match event {
            Event::PopulationStep { workflow } => self.population_step(now, workflow as usize),
            Event::UserWake { workflow, user, cycle } => self.user_wakes(now, workflow as usize, user, cycle),
            Event::UserAbandon { workflow, user, cycle } => self.user_abandons(now, workflow as usize, user, cycle),
            Event::Arrival { .. }
            | Event::Resubmit { .. }
            | Event::ServiceEnd { .. }
            | Event::Timeout { .. }
            | Event::StepWake { .. }
            | Event::QueueExpiry { .. }
            | Event::GuardWake
            | Event::RemoteWake { .. }
            | Event::CapacityChange { .. }
            | Event::CacheAnswer { .. }
            | Event::CacheTimeout { .. }
            | Event::WindowEnd
            | Event::ModeTick
            | Event::ClientWake { .. }
            | Event::ClientTimeout { .. }
            | Event::TaskWake { .. }
            | Event::StreamsBroken { .. }
            | Event::PushDelivered { .. }
            | Event::SdkWake { .. }
            | Event::SdkTimeout { .. } => debug_assert!(false, "not a user event: {event:?}"),
        }
    }

    /// Applies every schedule entry due now: more users start at once; fewer let users go at
    /// their next decision.
    fn population_step(&mut self, now: Micros, w: usize) {
        let model = self.model;
        let workload = &model.world.workloads[w];
        let Some(spec) = workload.population.as_ref() else { return };
        let Some(p) = self.populations[w].as_mut() else { return };
        let before = p.target;
        while let Some(&(t, target)) = spec.schedule.get(p.next_step)
            && t <= now
        {
            p.next_step += 1;
            p.target = target;
        }
        let spawn = p.target.saturating_sub(before);
        if let Some(t) = p.next_step_at(workload)
            && t < model.world.duration_us
        {
            self.queue.schedule(t, Event::PopulationStep { workflow: w as u16 });
        }
        for _ in 0..spawn {
            let p = self.populations[w].as_mut().expect("checked above");
            let user = p.users.len() as u32;
            p.users.push(super::user_slots::User { state: UserState::Waiting, cycle: 0, run_started: now });
            p.active += 1;
            self.observe_users(now);
            self.start_user_run(now, w, user);
        }
    }

    /// The user's next root run; it waits for it (and gives up on it after abandon_after_ms).
    fn start_user_run(&mut self, now: Micros, w: usize, user: u32) {
        let model = self.model;
        let spec = model.world.workloads[w].population.as_ref().expect("a closed population");
        let p = self.populations[w].as_mut().expect("a closed population");
        let u = &mut p.users[user as usize];
        u.state = UserState::Waiting;
        u.run_started = now;
        let cycle = u.cycle;
        let arrival = p.runs;
        p.runs = p.runs.wrapping_add(1);
        if let Some(after) = spec.abandon_after_us {
            self.queue.schedule(now + after, Event::UserAbandon { workflow: w as u16, user, cycle });
        }
        let measured = now >= model.world.warmup_us;
        self.start_run(now, w, arrival, 0, Some(UserLink { user, cycle, measured }));
    }

    /// A run's answer reached its user (called as the run ends); ignored if the user gave up.
    pub(super) fn user_answered(&mut self, now: Micros, w: usize, link: UserLink, failed: bool) {
        let Some(p) = self.populations[w].as_ref() else { return };
        let u = p.users[link.user as usize];
        if u.state == UserState::Waiting && u.cycle == link.cycle {
            self.user_decides(now, w, link.user, failed);
        }
    }

    fn user_abandons(&mut self, now: Micros, w: usize, user: u32, cycle: u32) {
        let model = self.model;
        let Some(p) = self.populations[w].as_ref() else { return };
        let u = p.users[user as usize];
        if u.state != UserState::Waiting || u.cycle != cycle {
            return;
        }
        let after = model.world.workloads[w].population.as_ref().and_then(|s| s.abandon_after_us).unwrap_or(0);
        let measured = now.saturating_sub(after) >= model.world.warmup_us;
        self.observe(now, measured, Observation::RunAbandoned);
        // From the user's side a run it gave up on failed.
        self.user_decides(now, w, user, true);
    }

    /// After an answer or giving up: leave (after a failure, or let go by a ramp down) or think.
    fn user_decides(&mut self, now: Micros, w: usize, user: u32, failed: bool) {
        let model = self.model;
        let spec = model.world.workloads[w].population.as_ref().expect("a closed population");
        let p = self.populations[w].as_mut().expect("a closed population");
        let (cycle, run_started) = (p.users[user as usize].cycle, p.users[user as usize].run_started);
        // Both draws always, so the think time does not depend on the outcome.
        let mut stream = p.key.with(u64::from(user)).with(u64::from(cycle)).stream();
        let (leave_draw, think_draw) = (stream.unit(), stream.unit());
        let leaves_after_failure = failed && leave_draw < spec.leave_after_failure;
        if leaves_after_failure || p.active > p.target {
            p.users[user as usize].state = UserState::Gone;
            p.active -= 1;
            let measured = (model.world.warmup_us..model.world.duration_us).contains(&now);
            if leaves_after_failure {
                self.observe(now, measured, Observation::UserLeft);
            }
            self.observe_users(now);
            return;
        }
        p.users[user as usize].state = UserState::Thinking;
        let think_us = spec.wait.draw_us(think_draw, now.saturating_sub(run_started));
        let at = now.saturating_add(think_us);
        // Runs start in [0, duration): a user whose think ends later starts none.
        if at < model.world.duration_us {
            self.queue.schedule(at, Event::UserWake { workflow: w as u16, user, cycle });
        }
        let measured = (model.world.warmup_us..model.world.duration_us).contains(&now);
        self.observe(now, measured, Observation::UserThought { think_us });
    }

    fn user_wakes(&mut self, now: Micros, w: usize, user: u32, cycle: u32) {
        let Some(p) = self.populations[w].as_mut() else { return };
        let u = p.users[user as usize];
        if u.state != UserState::Thinking || u.cycle != cycle {
            return;
        }
        if p.active > p.target {
            p.users[user as usize].state = UserState::Gone;
            p.active -= 1;
            self.observe_users(now);
            return;
        }
        p.users[user as usize].cycle = cycle.wrapping_add(1);
        self.start_user_run(now, w, user);
    }

    /// The users present and thinking in every population at a window's end, for the time
    /// series (once per window: a scan of the users who ever joined, never per event).
    pub(super) fn sample_users(&mut self, window_end: Micros) {
        let (mut active, mut thinking) = (0u32, 0u32);
        for p in self.populations.iter().flatten() {
            active += p.active;
            thinking += p.users.iter().filter(|u| u.state == UserState::Thinking).count() as u32;
        }
        self.recorder.sample_users(window_end, active, thinking);
    }

    /// Users present in every population, for the time integral.
    fn observe_users(&mut self, now: Micros) {
        let active: u32 = self.populations.iter().flatten().map(|p| p.active).sum();
        self.observe(now, true, Observation::UsersActive { active });
    }
}
