//! A semaphore bulkhead after resilience4j's `SemaphoreBulkhead` (docs/references.md section 5):
//! at most `max_concurrent_calls` calls hold a permit (default 25); a caller finding none free
//! is refused at once when `max_wait_us` is 0 (the default), or else may wait up to
//! `max_wait_us` in FIFO order, as resilience4j's default fair call handling does.
//!
//! Two additions:
//! - `reserved_for_control` (docs/essay.md section 13: the recovery and reconciliation pool must not be
//!   taken by normal traffic). Normal traffic is admitted only while more than
//!   `reserved_for_control` permits would stay free, whoever holds the others; control traffic
//!   (status lookups, cancels, reconciliation) may take every permit. So normal traffic never
//!   holds more than `max_concurrent_calls - reserved_for_control`, and control traffic borrows
//!   the general permits first. Counting the reserve on the total rather than per class is what
//!   lets `release` work without being told which class held the permit.
//! - `max_waiting`, a bound on the waiting room that resilience4j's semaphore bulkhead lacks:
//!   a simulated overload must not grow memory without limit. A caller beyond it is refused.
//!
//! Waiters are caller-supplied `u64` ids. Control waiters are served before normal ones, each
//! class in FIFO order. The machine keeps one invariant the tests lean on: no waiter could use
//! a permit that is free, so a newcomer never overtakes a waiter of its class or a more urgent one.
//! Time is the caller's virtual time and is expected not to go backwards; if it does, a waiter
//! may expire late, never early.

use super::compile::Invalid;
use super::compile::{Compile, Scope, Stage};
use crate::scenario::Effect;
use crate::scenario::{FieldPath, RawTable, ScenarioError, read_table};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

use super::contract::{Ask, Guard, GuardConfig, Parting, Seat, Verdict};
use crate::runtime::command::{Command, Effects};
use crate::sim::Micros;
use crate::vocab::Refusal;

pub const DEFAULT_MAX_CONCURRENT_CALLS: u32 = 25;
pub const DEFAULT_MAX_WAITING: usize = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BulkheadConfig {
    pub max_concurrent_calls: u32,
    /// 0 refuses at once when no permit is free.
    pub max_wait_us: Micros,
    /// Permits normal traffic may not take.
    pub reserved_for_control: u32,
    /// Waiters of both classes together.
    pub max_waiting: usize,
}

impl Default for BulkheadConfig {
    fn default() -> Self {
        BulkheadConfig {
            max_concurrent_calls: DEFAULT_MAX_CONCURRENT_CALLS,
            max_wait_us: 0,
            reserved_for_control: 0,
            max_waiting: DEFAULT_MAX_WAITING,
        }
    }
}

impl BulkheadConfig {
    pub fn check(&self) -> Result<(), Invalid> {
        if self.max_concurrent_calls == 0 {
            return Err(Invalid::new("max_concurrent_calls", "max_concurrent_calls must be at least 1".to_string()));
        }
        if self.reserved_for_control >= self.max_concurrent_calls {
            return Err(Invalid::new(
                "reserved_for_control",
                format!(
                    "reserved_for_control ({}) must be below max_concurrent_calls ({}), or normal traffic never runs",
                    self.reserved_for_control, self.max_concurrent_calls
                ),
            ));
        }
        if self.max_wait_us > 0 && self.max_waiting == 0 {
            return Err(Invalid::new(
                "max_waiting",
                "max_waiting must be at least 1 when max_wait_us is above 0".to_string(),
            ));
        }
        Ok(())
    }

    /// Saturating so an unchecked config refuses normal traffic instead of panicking.
    fn normal_cap(&self) -> u32 {
        self.max_concurrent_calls.saturating_sub(self.reserved_for_control)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquire {
    Granted,
    Refused,
    /// No permit now; the caller may `wait` for one until this time.
    Wait {
        until: Micros,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Waiter {
    id: u64,
    until: Micros,
}

#[derive(Debug, Clone)]
pub struct Bulkhead {
    config: BulkheadConfig,
    in_use: u32,
    /// Control waiters first (the first `control_waiting` entries), then normal ones: one buffer
    /// sized once for the shared bound instead of two each sized for it.
    queue: VecDeque<Waiter>,
    control_waiting: usize,
    /// Waiters handed a permit by `release` whose attempt has not heard of it yet (the
    /// handover reaches it after the input that freed the permit). If the attempt is cancelled
    /// in between (a hedge's loser, a quorum's surplus branch, a run ending), the permit is
    /// still its, and only this list says so: without it the permit would be held by nobody.
    handed: Vec<u64>,
}

impl Bulkhead {
    /// Does not validate: `BulkheadConfig::check` belongs at scenario load. An invalid config
    /// still never panics; it only refuses more.
    pub fn new(config: BulkheadConfig) -> Self {
        Bulkhead {
            config,
            in_use: 0,
            queue: VecDeque::with_capacity(config.max_waiting),
            control_waiting: 0,
            handed: Vec::new(),
        }
    }

    pub fn config(&self) -> &BulkheadConfig {
        &self.config
    }

    #[cfg(test)]
    fn in_use(&self) -> u32 {
        self.in_use
    }

    pub fn waiting(&self) -> usize {
        self.queue.len()
    }

    pub fn try_acquire(&mut self, now: Micros, control: bool) -> Acquire {
        if self.may_take_now(control) {
            self.take();
            return Acquire::Granted;
        }
        if self.room_to_wait() { Acquire::Wait { until: self.wait_deadline(now) } } else { Acquire::Refused }
    }

    /// Joins the queue after `try_acquire` said `Wait`. False when waiting is off, the room is
    /// full, or a permit is in fact free for this caller (then `try_acquire` again): queueing
    /// beside a free permit would leave the caller stranded until the next release.
    pub fn wait(&mut self, id: u64, now: Micros, control: bool) -> bool {
        if !self.room_to_wait() || self.may_take_now(control) {
            return false;
        }
        let waiter = Waiter { id, until: self.wait_deadline(now) };
        if control {
            self.queue.insert(self.control_waiting, waiter);
            self.control_waiting += 1;
        } else {
            self.queue.push_back(waiter);
        }
        self.debug_check();
        true
    }

    /// Frees a permit, or hands it straight to the first waiter that may use it and returns its
    /// id (that caller now holds the permit). A stray release with nothing in use is ignored.
    /// `now` is unused today: a handover starts no clock, but the guards share one calling shape.
    pub fn release(&mut self, _now: Micros) -> Option<u64> {
        if self.in_use == 0 {
            return None;
        }
        self.in_use -= 1;
        let handed = self.next_fitting_waiter().and_then(|index| self.remove_at(index));
        if let Some(id) = handed {
            self.take();
            self.handed.push(id);
        }
        self.debug_check();
        handed
    }

    /// The attempt handed a permit has heard of it and holds it as its own from now on.
    pub fn claim(&mut self, id: u64) {
        if let Some(index) = self.handed.iter().position(|&h| h == id) {
            self.handed.swap_remove(index);
        }
        self.debug_check();
    }

    /// A waiting attempt gave up: it leaves the queue, or, if the permit had already been
    /// handed to it and it never heard, the permit goes to the next waiter (or back to the
    /// pool). Returns the waiter the permit went on to, if any. An attempt whose wait expired
    /// is in neither place and changes nothing.
    pub fn abandon_wait(&mut self, id: u64, now: Micros) -> Option<u64> {
        if self.cancel_wait(id) {
            return None;
        }
        let index = self.handed.iter().position(|&h| h == id)?;
        self.handed.swap_remove(index);
        self.release(now)
    }

    /// Removes one waiter whose wait ended at or before `now`, the earliest first.
    pub fn expire(&mut self, now: Micros) -> Option<u64> {
        let control = self.control_front().filter(|&i| self.queue[i].until <= now);
        let normal = self.normal_front().filter(|&i| self.queue[i].until <= now);
        let index = match (control, normal) {
            (Some(c), Some(n)) => Some(if self.queue[n].until < self.queue[c].until { n } else { c }),
            (c, n) => c.or(n),
        };
        let id = index.and_then(|i| self.remove_at(i));
        self.debug_check();
        id
    }

    /// Removes the first waiter with this id; false if none waits.
    pub fn cancel_wait(&mut self, id: u64) -> bool {
        let Some(index) = self.queue.iter().position(|w| w.id == id) else {
            return false;
        };
        self.remove_at(index);
        self.debug_check();
        true
    }

    fn fits(&self, control: bool) -> bool {
        let cap = if control { self.config.max_concurrent_calls } else { self.config.normal_cap() };
        self.in_use < cap
    }

    /// Fair handling: a free permit goes to nobody ahead of a queued caller of the same or a
    /// more urgent class.
    fn may_take_now(&self, control: bool) -> bool {
        let nobody_ahead = if control { self.control_waiting == 0 } else { self.queue.is_empty() };
        nobody_ahead && self.fits(control)
    }

    fn room_to_wait(&self) -> bool {
        self.config.max_wait_us > 0 && self.queue.len() < self.config.max_waiting
    }

    fn wait_deadline(&self, now: Micros) -> Micros {
        now.saturating_add(self.config.max_wait_us)
    }

    fn take(&mut self) {
        self.in_use += 1;
        debug_assert!(self.in_use <= self.config.max_concurrent_calls, "a permit beyond the bulkhead");
    }

    /// Only the head of each class can be served; a normal head that does not fit stays put, so a
    /// reserved permit is never given to normal traffic.
    fn next_fitting_waiter(&self) -> Option<usize> {
        match (self.control_front(), self.normal_front()) {
            (Some(c), _) if self.fits(true) => Some(c),
            (_, Some(n)) if self.fits(false) => Some(n),
            (_, _) => None,
        }
    }

    fn control_front(&self) -> Option<usize> {
        (self.control_waiting > 0).then_some(0)
    }

    fn normal_front(&self) -> Option<usize> {
        (self.queue.len() > self.control_waiting).then_some(self.control_waiting)
    }

    fn remove_at(&mut self, index: usize) -> Option<u64> {
        let waiter = self.queue.remove(index)?;
        if index < self.control_waiting {
            debug_assert!(self.control_waiting > 0, "control waiters below zero");
            self.control_waiting -= 1;
        }
        Some(waiter.id)
    }

    /// Accounting and the invariant "no waiter could use a free permit".
    fn debug_check(&self) {
        debug_assert!(self.in_use <= self.config.max_concurrent_calls, "in_use above max_concurrent_calls");
        debug_assert!(self.control_waiting <= self.queue.len(), "more control waiters than waiters");
        debug_assert!(self.queue.len() <= self.config.max_waiting, "waiting room overflow");
        debug_assert!(self.handed.len() <= self.in_use as usize, "a handed permit that is not in use");
        debug_assert!(self.control_waiting == 0 || !self.fits(true), "a control waiter beside a free permit");
        debug_assert!(
            self.queue.len() == self.control_waiting || !self.fits(false),
            "a normal waiter beside a free permit"
        );
    }
}

impl GuardConfig for BulkheadConfig {
    type Live = Bulkhead;

    fn build(&self) -> Bulkhead {
        Bulkhead::new(*self)
    }
}

impl Guard for Bulkhead {
    /// Permits held (waiters not counted).
    fn level(&mut self, _now: Micros) -> Option<u64> {
        Some(u64::from(self.in_use))
    }

    fn admit(&mut self, now: Micros, ask: &Ask, seat: Seat, _out: &mut impl Effects) -> Verdict {
        let control = ask.info.control;
        match self.try_acquire(now, control) {
            Acquire::Granted => Verdict::Pass,
            Acquire::Refused => Verdict::Refuse(Refusal::Bulkhead),
            // One queue at a time: an attempt already waiting elsewhere is refused here.
            Acquire::Wait { until } if !seat.waiting_elsewhere && self.wait(ask.waiter, now, control) => {
                Verdict::Wait { until }
            }
            Acquire::Wait { .. } => Verdict::Refuse(Refusal::Bulkhead),
        }
    }

    fn undo(&mut self, now: Micros, parting: Parting, out: &mut impl Effects) {
        Guard::end(self, now, parting, out);
    }

    /// Leaves the queue, or frees the permit (handing it to the next waiter that fits).
    fn end(&mut self, now: Micros, parting: Parting, out: &mut impl Effects) {
        let next = if parting.waiting_here { self.abandon_wait(parting.waiter, now) } else { self.release(now) };
        if let Some(next) = next {
            out.command(Command::PermitGranted { waiter: next });
        }
    }

    fn claim(&mut self, waiter: u64) {
        Bulkhead::claim(self, waiter);
    }

    fn on_wake(&mut self, now: Micros, out: &mut impl Effects) {
        while let Some(waiter) = self.expire(now) {
            out.command(Command::PermitExpired { waiter });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The file's table

crate::named_enum! {
    enum BulkheadKey { Dependency => "dependency", Workflow => "workflow", Tenant => "tenant", Effect => "effect" }
}

/// `[[policy.<name>.bulkhead]]`: one bulkhead per value of its key it covers.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct BulkheadTable {
    /// dependency (default), workflow, tenant or effect (a read pool and a write pool per
    /// dependency; status lookups use the write pool's reserved permits).
    #[serde(default)]
    pub key: Option<String>,
    /// Only attempts at this dependency; every dependency when absent.
    #[serde(default)]
    pub dependency: Option<String>,
    /// With key = "workflow": only this workflow; with key = "tenant": only this tenant.
    #[serde(default)]
    pub workflow: Option<String>,
    #[serde(default)]
    pub tenant: Option<String>,
    #[serde(default)]
    pub max_concurrent_calls: Option<u32>,
    #[serde(default)]
    pub max_wait_ms: Option<f64>,
    /// Permits only control traffic (status lookups) may take.
    #[serde(default)]
    pub reserved_for_control: Option<u32>,
}

crate::scenario::types::tables_only!(BulkheadTable);

pub fn compile<G: From<BulkheadConfig>>(
    cx: &mut Compile<G>,
    path: &FieldPath,
    raw: &RawTable,
) -> Result<(), ScenarioError> {
    let b: BulkheadTable = read_table(cx.source, path, raw)?;
    let key = cx.named(&path.key("key"), b.key.as_deref(), BulkheadKey::Dependency)?;
    let d = BulkheadConfig::default();
    let config = BulkheadConfig {
        max_concurrent_calls: b.max_concurrent_calls.unwrap_or(d.max_concurrent_calls),
        max_wait_us: cx.duration(&path.key("max_wait_ms"), b.max_wait_ms, d.max_wait_us)?,
        reserved_for_control: b.reserved_for_control.unwrap_or(d.reserved_for_control),
        max_waiting: d.max_waiting,
    };
    cx.check(path, config.check())?;
    let misplaced =
        [("dependency", b.dependency.is_some()), ("workflow", b.workflow.is_some()), ("tenant", b.tenant.is_some())];
    let allowed: &[&str] = match key {
        BulkheadKey::Workflow => &["workflow"],
        BulkheadKey::Tenant => &["tenant"],
        BulkheadKey::Dependency | BulkheadKey::Effect => &["dependency"],
    };
    if let Some((field, _)) = misplaced.iter().find(|(field, set)| *set && !allowed.contains(field)) {
        return Err(cx.err(&path.key(field), format!("`{field}` does not apply to key = \"{}\"", key.name())));
    }
    match key {
        BulkheadKey::Workflow => {
            for w in cx.workflows_named(&path.key("workflow"), &b.workflow)? {
                cx.push(Stage::Bulkhead, Scope::Workflow(w), config);
            }
        }
        BulkheadKey::Tenant => {
            for t in cx.tenants_named(&path.key("tenant"), &b.tenant)? {
                cx.push(Stage::Bulkhead, Scope::Tenant(t), config);
            }
        }
        BulkheadKey::Dependency => {
            for dep in cx.dependencies(&path.key("dependency"), &b.dependency)? {
                cx.push(Stage::Bulkhead, Scope::Dependency(dep), config);
            }
        }
        BulkheadKey::Effect => {
            // Reads never carry control traffic: the read pool reserves nothing.
            let reads = BulkheadConfig { reserved_for_control: 0, ..config };
            for dep in cx.dependencies(&path.key("dependency"), &b.dependency)? {
                cx.push(Stage::Bulkhead, Scope::Effect(dep, Effect::Read), reads);
                cx.push(Stage::Bulkhead, Scope::Effect(dep, Effect::Write), config);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::guard::testing::Lcg;

    fn waiting_config(max: u32, reserved: u32, max_wait_us: Micros) -> BulkheadConfig {
        BulkheadConfig { max_concurrent_calls: max, max_wait_us, reserved_for_control: reserved, max_waiting: 100 }
    }

    /// A holder releases and the waiter handed the permit hears of it, as the engine delivers it.
    fn hand_over(b: &mut Bulkhead, now: Micros) -> Option<u64> {
        let next = b.release(now);
        if let Some(id) = next {
            b.claim(id);
        }
        next
    }

    fn fill(b: &mut Bulkhead, n: u32, control: bool) {
        for _ in 0..n {
            assert_eq!(b.try_acquire(0, control), Acquire::Granted);
        }
    }

    #[test]
    fn defaults_grant_25_refuse_the_26th_and_release_lets_the_next_in() {
        let mut b = Bulkhead::new(BulkheadConfig::default());
        assert_eq!(b.config().check(), Ok(()));
        fill(&mut b, 25, false);
        assert_eq!(b.try_acquire(0, false), Acquire::Refused);
        assert!(!b.wait(7, 0, false), "no waiting room when max_wait_us is 0");
        assert_eq!(b.release(1), None);
        assert_eq!(b.in_use(), 24);
        assert_eq!(b.try_acquire(1, false), Acquire::Granted);
        assert_eq!(b.in_use(), 25);
    }

    #[test]
    fn a_waiter_receives_the_released_permit() {
        let mut b = Bulkhead::new(BulkheadConfig { max_wait_us: 500, ..BulkheadConfig::default() });
        fill(&mut b, 25, false);
        assert_eq!(b.try_acquire(100, false), Acquire::Wait { until: 600 });
        assert!(b.wait(26, 100, false));
        assert_eq!(b.waiting(), 1);
        assert_eq!(b.release(200), Some(26));
        assert_eq!((b.in_use(), b.waiting()), (25, 0));
    }

    #[test]
    fn waiters_are_served_first_in_first_out() {
        let mut b = Bulkhead::new(waiting_config(2, 0, 1_000));
        fill(&mut b, 2, false);
        for id in [5, 3, 9] {
            assert!(b.wait(id, 10, false));
        }
        assert_eq!(b.try_acquire(10, false), Acquire::Wait { until: 1_010 }, "no overtaking");
        assert_eq!([hand_over(&mut b, 20), hand_over(&mut b, 30), hand_over(&mut b, 40)], [Some(5), Some(3), Some(9)]);
        assert_eq!(b.release(50), None);
        assert_eq!(b.in_use(), 1);
    }

    #[test]
    fn expire_removes_only_waiters_whose_time_is_up() {
        let mut b = Bulkhead::new(waiting_config(1, 0, 100));
        fill(&mut b, 1, false);
        assert!(b.wait(1, 0, false));
        assert!(b.wait(2, 50, false));
        assert_eq!(b.expire(99), None);
        assert_eq!(b.expire(100), Some(1));
        assert_eq!(b.expire(100), None, "the second waits until 150");
        assert_eq!(b.expire(150), Some(2));
        assert_eq!(b.waiting(), 0);
    }

    #[test]
    fn expire_takes_the_earliest_deadline_across_classes() {
        let mut b = Bulkhead::new(waiting_config(1, 0, 100));
        fill(&mut b, 1, false);
        assert!(b.wait(1, 0, false));
        assert!(b.wait(2, 40, true));
        assert_eq!(b.expire(200), Some(1));
        assert_eq!(b.expire(200), Some(2));
    }

    #[test]
    fn normal_traffic_leaves_the_reserved_permits_to_control() {
        let mut b = Bulkhead::new(waiting_config(5, 2, 0));
        fill(&mut b, 3, false);
        assert_eq!(b.try_acquire(0, false), Acquire::Refused);
        fill(&mut b, 2, true);
        assert_eq!(b.try_acquire(0, true), Acquire::Refused);
        assert_eq!(b.in_use(), 5);
    }

    #[test]
    fn control_borrows_general_permits_before_the_reserve() {
        let mut b = Bulkhead::new(waiting_config(5, 2, 0));
        fill(&mut b, 2, true);
        fill(&mut b, 1, false);
        assert_eq!(b.try_acquire(0, false), Acquire::Refused, "two permits stay free for control");
    }

    #[test]
    fn a_normal_waiter_is_not_handed_a_reserved_permit() {
        let mut b = Bulkhead::new(waiting_config(5, 2, 1_000));
        fill(&mut b, 3, false);
        fill(&mut b, 2, true);
        assert_eq!(b.try_acquire(0, false), Acquire::Wait { until: 1_000 });
        assert!(b.wait(42, 0, false));
        assert_eq!(b.release(10), None, "the freed permit is a reserved one");
        assert_eq!((b.in_use(), b.waiting()), (4, 1));
        assert_eq!(b.try_acquire(10, true), Acquire::Granted, "control still gets it");
        assert_eq!([b.release(20), b.release(30)], [None, None], "three held: the reserve is still not free");
        assert_eq!(b.release(40), Some(42), "now a general permit is free");
        assert_eq!(b.in_use(), 3);
    }

    #[test]
    fn control_waiters_go_before_normal_ones() {
        let mut b = Bulkhead::new(waiting_config(2, 0, 1_000));
        fill(&mut b, 2, false);
        assert!(b.wait(1, 0, false));
        assert!(b.wait(2, 0, true));
        assert!(b.wait(3, 0, false));
        assert!(b.wait(4, 0, true));
        let order: Vec<_> = (0..4).map(|t| hand_over(&mut b, t)).collect();
        assert_eq!(order, [Some(2), Some(4), Some(1), Some(3)]);
    }

    #[test]
    fn a_control_newcomer_overtakes_normal_waiters_only() {
        let mut b = Bulkhead::new(waiting_config(3, 1, 1_000));
        fill(&mut b, 2, false);
        assert!(b.wait(1, 0, false));
        assert_eq!(b.try_acquire(0, true), Acquire::Granted, "the reserved permit");
        assert!(b.wait(2, 0, true));
        assert_eq!(b.try_acquire(0, true), Acquire::Wait { until: 1_000 }, "behind the control waiter");
    }

    #[test]
    fn cancel_wait_removes_a_waiter_and_reports_unknown_ids() {
        let mut b = Bulkhead::new(waiting_config(1, 0, 1_000));
        fill(&mut b, 1, false);
        assert!(b.wait(1, 0, true));
        assert!(b.wait(2, 0, false));
        assert!(b.cancel_wait(1));
        assert!(!b.cancel_wait(1));
        assert!(!b.cancel_wait(99));
        assert_eq!(b.waiting(), 1);
        assert_eq!(b.release(5), Some(2));
    }

    #[test]
    fn a_waiter_that_gives_up_before_hearing_of_its_permit_passes_it_on() {
        let mut b = Bulkhead::new(waiting_config(1, 0, 1_000));
        fill(&mut b, 1, false);
        assert!(b.wait(1, 0, false));
        assert!(b.wait(2, 0, false));
        assert_eq!(b.release(5), Some(1), "handed to 1, which has not heard yet");
        assert_eq!(b.abandon_wait(1, 5), Some(2), "1 gave up: its permit goes on to 2");
        assert_eq!((b.in_use(), b.waiting()), (1, 0));
        b.claim(2);
        assert_eq!(b.abandon_wait(2, 6), None, "2 heard of it: giving up a wait it is not in is nothing");
        assert_eq!(b.in_use(), 1);
        assert_eq!(b.release(7), None);
        assert_eq!(b.in_use(), 0);
    }

    #[test]
    fn a_handed_permit_with_nobody_waiting_goes_back_to_the_pool() {
        let mut b = Bulkhead::new(waiting_config(1, 0, 1_000));
        fill(&mut b, 1, false);
        assert!(b.wait(1, 0, false));
        assert_eq!(b.release(5), Some(1));
        assert_eq!(b.abandon_wait(1, 5), None);
        assert_eq!(b.in_use(), 0);
        assert_eq!(b.try_acquire(6, false), Acquire::Granted);
    }

    #[test]
    fn an_expired_waiter_that_gives_up_frees_nothing() {
        let mut b = Bulkhead::new(waiting_config(1, 0, 1_000));
        fill(&mut b, 1, false);
        assert!(b.wait(1, 0, false));
        assert_eq!(b.expire(1_000), Some(1));
        assert_eq!(b.abandon_wait(1, 1_000), None);
        assert_eq!(b.in_use(), 1, "the holder's permit stays held");
    }

    #[test]
    fn the_waiting_room_is_bounded() {
        let mut b = Bulkhead::new(BulkheadConfig { max_waiting: 2, ..waiting_config(1, 0, 1_000) });
        fill(&mut b, 1, false);
        assert!(b.wait(1, 0, false));
        assert!(b.wait(2, 0, true));
        assert_eq!(b.try_acquire(0, true), Acquire::Refused);
        assert!(!b.wait(3, 0, true));
        assert_eq!(b.waiting(), 2);
    }

    #[test]
    fn wait_beside_a_free_permit_is_refused() {
        let mut b = Bulkhead::new(waiting_config(2, 0, 1_000));
        assert!(!b.wait(1, 0, false));
        assert_eq!(b.waiting(), 0);
    }

    #[test]
    fn a_stray_release_changes_nothing() {
        let mut b = Bulkhead::new(BulkheadConfig::default());
        assert_eq!(b.release(0), None);
        assert_eq!(b.in_use(), 0);
    }

    #[test]
    fn check_names_the_field() {
        let bad = |c: BulkheadConfig, field: &str| assert_eq!(c.check().unwrap_err().field, field);
        bad(BulkheadConfig { max_concurrent_calls: 0, ..BulkheadConfig::default() }, "max_concurrent_calls");
        bad(BulkheadConfig { reserved_for_control: 25, ..BulkheadConfig::default() }, "reserved_for_control");
        bad(BulkheadConfig { max_wait_us: 1, max_waiting: 0, ..BulkheadConfig::default() }, "max_waiting");
        assert_eq!(BulkheadConfig { reserved_for_control: 24, ..BulkheadConfig::default() }.check(), Ok(()));
    }

    #[test]
    fn an_invalid_config_refuses_without_panicking() {
        let mut b = Bulkhead::new(waiting_config(0, 3, 10));
        assert_eq!(b.try_acquire(0, true), Acquire::Wait { until: 10 });
        assert!(b.wait(1, 0, true));
        assert_eq!(b.release(5), None);
        assert_eq!(b.expire(10), Some(1));
    }

    /// Numerical Recipes' 64-bit LCG; the high bits are the well-mixed ones.
    /// What the caller side knows: who holds a permit and who waits, by class.
    #[derive(Default)]
    struct Holders {
        normal: u32,
        control: u32,
        waiters: Vec<(u64, bool)>,
    }

    impl Holders {
        fn class_of(&mut self, id: u64) -> bool {
            let index = self.waiters.iter().position(|&(w, _)| w == id).expect("a known waiter");
            self.waiters.remove(index).1
        }

        fn grant(&mut self, control: bool) {
            if control { self.control += 1 } else { self.normal += 1 }
        }

        fn release_one(&mut self, rng: &mut Lcg) {
            let control = self.control > 0 && (self.normal == 0 || rng.next(2) == 0);
            if control { self.control -= 1 } else { self.normal = self.normal.saturating_sub(1) }
        }
    }

    /// Returns whether a waiter left the queue with a permit, so the test can show it happened.
    fn step(b: &mut Bulkhead, h: &mut Holders, rng: &mut Lcg, now: Micros, next_id: &mut u64) -> bool {
        let control = rng.next(4) == 0;
        match rng.next(6) {
            0 | 1 => match b.try_acquire(now, control) {
                Acquire::Granted => h.grant(control),
                Acquire::Wait { until } => {
                    assert!(until > now);
                    *next_id += 1;
                    if b.wait(*next_id, now, control) {
                        h.waiters.push((*next_id, control));
                    }
                }
                Acquire::Refused => {}
            },
            2 => {
                h.release_one(rng);
                if let Some(id) = b.release(now) {
                    b.claim(id);
                    let class = h.class_of(id);
                    h.grant(class);
                    return true;
                }
            }
            3 => {
                if let Some(id) = b.expire(now) {
                    h.class_of(id);
                }
            }
            4 => {
                let id = rng.next(*next_id + 2);
                if b.cancel_wait(id) {
                    h.class_of(id);
                }
            }
            _ => {
                // A wait not preceded by try_acquire: refused beside a free permit, else joins.
                *next_id += 1;
                if b.wait(*next_id, now, control) {
                    h.waiters.push((*next_id, control));
                }
            }
        }
        false
    }

    #[test]
    fn long_random_sequences_keep_every_bound() {
        let mut handovers = 0;
        for seed in 0..20u64 {
            let mut rng = Lcg(seed);
            let config = BulkheadConfig {
                max_concurrent_calls: 1 + rng.next(8) as u32,
                max_wait_us: rng.next(3) * 50,
                reserved_for_control: 0,
                max_waiting: rng.next(6) as usize,
            };
            let config =
                BulkheadConfig { reserved_for_control: rng.next(config.max_concurrent_calls as u64) as u32, ..config };
            let mut b = Bulkhead::new(config);
            let mut h = Holders::default();
            let (mut now, mut next_id) = (0, 0);
            for _ in 0..20_000 {
                now += rng.next(20);
                handovers += u32::from(step(&mut b, &mut h, &mut rng, now, &mut next_id));
                assert!(b.in_use() <= config.max_concurrent_calls);
                assert!(b.waiting() <= config.max_waiting);
                assert_eq!(h.normal + h.control, b.in_use());
                assert_eq!(h.waiters.len(), b.waiting());
                assert!(h.normal <= config.max_concurrent_calls - config.reserved_for_control);
            }
        }
        assert!(handovers > 1_000, "the sequences exercise waiting ({handovers} handovers)");
    }
}
