//! resilience4j's RateLimiter (AtomicRateLimiter, docs/references.md section 5) as a pure state
//! machine over virtual time: a client-side limit on the calls sent per refresh period.
//!
//! Time is cut into cycles of `limit_refresh_period_us` from the start of the simulation. Each
//! cycle starts with `limit_for_period` permissions; unused ones do not carry over. A call takes
//! one permission if the current cycle has one. Otherwise it works out how long it would wait
//! for a permission of a later cycle, counting those already reserved by earlier waiters: if
//! that wait is at most `timeout_duration_us` it reserves the permission (the count goes below
//! zero) and waits for that cycle to start; if not, it is refused at once and reserves nothing.
//! A reservation is never given back: a waiter that gives up has still spent its permission,
//! as a thread interrupted in resilience4j's `acquirePermission` has. Compared with
//! AtomicRateLimiter's `calculateNextState`, `nanosToWaitForPermission` (the same cycle
//! arithmetic) and `reservePermission`; unlike `acquirePermission`, a call that cannot wait in
//! time is refused at once instead of after parking for the whole timeout (docs/scenario.md 8.15).

use super::compile::{Compile, Invalid, Scope, Stage};
use super::contract::{Ask, Guard, GuardConfig, Parting, Seat, Verdict};
use crate::runtime::command::{Command, Effects};
use crate::scenario::{FieldPath, RawTable, ScenarioError, read_table};
use crate::sim::Micros;
use crate::sim::time::{MAX_SPAN_US, US_PER_S};
use crate::vocab::Refusal;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// resilience4j's RateLimiterConfig; durations in microseconds of virtual time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimiterConfig {
    /// Permissions per cycle (`limitForPeriod`).
    pub limit_for_period: u32,
    /// Cycle length (`limitRefreshPeriod`).
    pub limit_refresh_period_us: Micros,
    /// The longest a call may wait for a permission (`timeoutDuration`); 0 refuses at once.
    pub timeout_duration_us: Micros,
}

impl Default for RateLimiterConfig {
    /// resilience4j's defaults, except the refresh period: its 500 ns is below our 1 us clock, so
    /// the default here is 1 us (50 calls per microsecond: no limit in practice, as theirs).
    fn default() -> Self {
        RateLimiterConfig { limit_for_period: 50, limit_refresh_period_us: 1, timeout_duration_us: 5 * US_PER_S }
    }
}

impl RateLimiterConfig {
    pub fn check(&self) -> Result<(), Invalid> {
        if self.limit_for_period == 0 {
            return Err(Invalid::new("limit_for_period", "limit_for_period must be at least 1".to_string()));
        }
        if !(1..=MAX_SPAN_US).contains(&self.limit_refresh_period_us) {
            let message = format!(
                "limit_refresh_period_us must be between 1 us and {MAX_SPAN_US} us, got {}",
                self.limit_refresh_period_us
            );
            return Err(Invalid::new("limit_refresh_period_us", message));
        }
        if self.timeout_duration_us > MAX_SPAN_US {
            let message =
                format!("timeout_duration_us must be at most {MAX_SPAN_US} us, got {}", self.timeout_duration_us);
            return Err(Invalid::new("timeout_duration_us", message));
        }
        Ok(())
    }
}

/// What the limiter answers a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permission {
    Now,
    /// Reserved in a later cycle, which starts at this instant.
    At(Micros),
    Refused,
}

#[derive(Debug, Clone)]
pub struct RateLimiter {
    config: RateLimiterConfig,
    /// The cycle `permissions` belongs to.
    cycle: u64,
    /// Permissions left in `cycle`; below zero, permissions of later cycles already reserved.
    permissions: i64,
    /// Waiters and the instant their reserved permission's cycle starts, earliest first.
    waiting: VecDeque<(u64, Micros)>,
}

impl RateLimiter {
    pub fn new(config: RateLimiterConfig) -> Self {
        RateLimiter { config, cycle: 0, permissions: i64::from(config.limit_for_period), waiting: VecDeque::new() }
    }

    fn period(&self) -> Micros {
        self.config.limit_refresh_period_us.max(1)
    }

    fn limit(&self) -> i64 {
        i64::from(self.config.limit_for_period.max(1))
    }

    /// Moves to the cycle of `now`: each cycle passed adds a cycle's permissions, up to the limit
    /// (reservations are paid first, unused permissions do not carry over).
    fn refresh(&mut self, now: Micros) {
        let cycle = now / self.period();
        if cycle > self.cycle {
            let added = (cycle - self.cycle).saturating_mul(self.limit() as u64);
            self.permissions =
                self.permissions.saturating_add(i64::try_from(added).unwrap_or(i64::MAX)).min(self.limit());
            self.cycle = cycle;
        }
        debug_assert!(self.permissions <= self.limit(), "never more than a cycle's permissions");
    }

    /// Takes a permission of the current cycle, if one is left.
    fn take_now(&mut self, now: Micros) -> bool {
        self.refresh(now);
        let left = self.permissions > 0;
        if left {
            self.permissions -= 1;
        }
        left
    }

    /// Asks for one permission at `now` (AtomicRateLimiter.reservePermission).
    pub fn acquire(&mut self, now: Micros) -> Permission {
        if self.take_now(now) {
            return Permission::Now;
        }
        // Permissions at the start of the next cycle, less those reserved: the first cycle whose
        // start leaves one for this call.
        let owed = 1 - self.permissions;
        let cycles_ahead = ((owed + self.limit() - 1) / self.limit()) as u64;
        let at = (self.cycle + cycles_ahead).saturating_mul(self.period());
        if at - now > self.config.timeout_duration_us {
            return Permission::Refused;
        }
        self.permissions -= 1;
        Permission::At(at)
    }

    /// Waiters whose permission's cycle has started, earliest first.
    pub fn due(&mut self, now: Micros) -> Option<u64> {
        match self.waiting.front() {
            Some(&(waiter, at)) if at <= now => {
                self.waiting.pop_front();
                Some(waiter)
            }
            Some(_) | None => None,
        }
    }
}

impl GuardConfig for RateLimiterConfig {
    type Live = RateLimiter;

    fn build(&self) -> RateLimiter {
        RateLimiter::new(*self)
    }
}

/// Every attempt asks, control traffic included (resilience4j knows no classes of calls). A
/// refusal counts as `throttled`, as every client-side throttle's does.
impl Guard for RateLimiter {
    fn admit(&mut self, now: Micros, ask: &Ask, seat: Seat, _out: &mut impl Effects) -> Verdict {
        if seat.waiting_elsewhere {
            // One queue at a time: only a permission of this cycle will do.
            return if self.take_now(now) { Verdict::Pass } else { Verdict::Refuse(Refusal::Throttled) };
        }
        match self.acquire(now) {
            Permission::Now => Verdict::Pass,
            Permission::Refused => Verdict::Refuse(Refusal::Throttled),
            Permission::At(at) => {
                // Reservations come in cycle order, so the queue stays sorted.
                debug_assert!(self.waiting.back().is_none_or(|&(_, last)| last <= at));
                self.waiting.push_back((ask.waiter, at));
                Verdict::Wait { until: at }
            }
        }
    }

    /// A permission taken or reserved is spent whatever happens next.
    fn undo(&mut self, now: Micros, parting: Parting, out: &mut impl Effects) {
        Guard::end(self, now, parting, out);
    }

    fn end(&mut self, _now: Micros, parting: Parting, _out: &mut impl Effects) {
        if parting.waiting_here {
            self.waiting.retain(|&(waiter, _)| waiter != parting.waiter);
        }
    }

    fn on_wake(&mut self, now: Micros, out: &mut impl Effects) {
        while let Some(waiter) = self.due(now) {
            out.command(Command::PermitGranted { waiter });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The file's table

/// `[[policy.<name>.rate_limiter]]`: one limiter per dependency it covers.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct RateLimiterTable {
    /// The dependency whose calls it limits; every dependency (one limiter each) when absent.
    #[serde(default)]
    pub dependency: Option<String>,
    #[serde(default)]
    pub limit_for_period: Option<u32>,
    #[serde(default)]
    pub limit_refresh_period_ms: Option<f64>,
    #[serde(default)]
    pub timeout_duration_ms: Option<f64>,
}

crate::scenario::types::tables_only!(RateLimiterTable);

pub fn compile<G: From<RateLimiterConfig>>(
    cx: &mut Compile<G>,
    path: &FieldPath,
    raw: &RawTable,
) -> Result<(), ScenarioError> {
    let t: RateLimiterTable = read_table(cx.source, path, raw)?;
    let d = RateLimiterConfig::default();
    let config = RateLimiterConfig {
        limit_for_period: t.limit_for_period.unwrap_or(d.limit_for_period),
        limit_refresh_period_us: cx.duration(
            &path.key("limit_refresh_period_ms"),
            t.limit_refresh_period_ms,
            d.limit_refresh_period_us,
        )?,
        timeout_duration_us: cx.duration(
            &path.key("timeout_duration_ms"),
            t.timeout_duration_ms,
            d.timeout_duration_us,
        )?,
    };
    cx.check(path, config.check())?;
    for dependency in cx.dependencies(&path.key("dependency"), &t.dependency)? {
        cx.push(Stage::RateLimit, Scope::Dependency(dependency), config);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Micros = 1_000;

    fn limiter(limit: u32, period_ms: u64, timeout_ms: u64) -> RateLimiter {
        RateLimiter::new(RateLimiterConfig {
            limit_for_period: limit,
            limit_refresh_period_us: period_ms * MS,
            timeout_duration_us: timeout_ms * MS,
        })
    }

    #[test]
    fn defaults_are_resilience4j_defaults_but_the_refresh_period() {
        let d = RateLimiterConfig::default();
        assert_eq!((d.limit_for_period, d.timeout_duration_us), (50, 5 * US_PER_S));
        assert_eq!(d.limit_refresh_period_us, 1, "500 ns is below the clock");
        assert_eq!(d.check(), Ok(()));
    }

    #[test]
    fn check_names_the_field() {
        let d = RateLimiterConfig::default();
        let field = |c: RateLimiterConfig| c.check().unwrap_err().field;
        assert_eq!(field(RateLimiterConfig { limit_for_period: 0, ..d }), "limit_for_period");
        assert_eq!(field(RateLimiterConfig { limit_refresh_period_us: 0, ..d }), "limit_refresh_period_us");
        assert_eq!(field(RateLimiterConfig { timeout_duration_us: MAX_SPAN_US + 1, ..d }), "timeout_duration_us");
    }

    #[test]
    fn a_cycle_grants_its_limit_and_unused_permissions_do_not_carry_over() {
        let mut r = limiter(3, 100, 0);
        let granted = (0..5).filter(|_| r.acquire(10 * MS) == Permission::Now).count();
        assert_eq!(granted, 3, "timeout 0: the rest are refused at once");
        assert_eq!(r.acquire(99 * MS), Permission::Refused);
        assert_eq!(r.acquire(100 * MS), Permission::Now, "a new cycle at 100 ms");
        let later = (0..10).filter(|_| r.acquire(1_000 * MS) == Permission::Now).count();
        assert_eq!(later, 3, "nine idle cycles still leave only 3");
    }

    #[test]
    fn waits_reserve_permissions_of_later_cycles_in_order_within_the_timeout() {
        let mut r = limiter(2, 100, 250);
        assert_eq!(r.acquire(30 * MS), Permission::Now);
        assert_eq!(r.acquire(30 * MS), Permission::Now);
        // Cycle 1 (100 ms) has two permissions, cycle 2 (200 ms) two more; 300 ms is 270 ms away.
        let answers: Vec<Permission> = (0..5).map(|_| r.acquire(30 * MS)).collect();
        assert_eq!(
            answers,
            [
                Permission::At(100 * MS),
                Permission::At(100 * MS),
                Permission::At(200 * MS),
                Permission::At(200 * MS),
                Permission::Refused
            ]
        );
        // The refused call reserved nothing: at 200 ms the reservations are paid, nothing is left.
        assert_eq!(r.acquire(200 * MS), Permission::At(300 * MS));
        assert_eq!(r.acquire(300 * MS), Permission::Now, "one of 300 ms's two paid the reservation");
        assert_eq!(r.acquire(300 * MS), Permission::At(400 * MS));
    }

    #[test]
    fn over_a_long_run_it_grants_at_most_the_limit_per_cycle() {
        // Calls every 7 ms for 100 s against 5 per 100 ms: at most 5 x 1000 + 5 go out.
        let mut r = limiter(5, 100, 0);
        let mut granted = 0;
        let mut per_cycle = [0u32; 1_001];
        for i in 0..(100_000 / 7) {
            let now = i * 7 * MS;
            if r.acquire(now) == Permission::Now {
                granted += 1;
                per_cycle[(now / (100 * MS)) as usize] += 1;
            }
        }
        assert!(per_cycle.iter().all(|&n| n <= 5));
        assert_eq!(granted, 5_000, "every cycle of 100 ms sees 14 calls: all 5 permissions are used");
    }
}
