//! Human approvals (docs/essay.md section 4: "Approval: a human decision is needed; separate the
//! deadline from the business expiry") as pure data and one pure machine.
//!
//! An approval dependency is a desk of humans, not a station: a request waits for a free
//! approver (first come, first served over `approvers` people, or none when unlimited), who
//! decides only inside working hours and takes a drawn decision time of working time. A request
//! nobody has decided by its business expiry lapses; the approver who held it lets it go then.
//! Because the order is first come, first served and nobody is interrupted, a request's whole
//! future is known when it is made (each approver is a "free at" instant), so the desk answers
//! at once with the verdict and its instant, and the run machine only sleeps until then.

use super::dist::Distribution;
use crate::sim::Micros;
use crate::vocab::ApprovalVerdict;

pub const US_PER_HOUR: Micros = 3_600_000_000;
pub const US_PER_DAY: Micros = 24 * US_PER_HOUR;
pub const US_PER_WEEK: Micros = 7 * US_PER_DAY;
/// Day names of the week in the order virtual time walks them (0 = Monday).
pub const DAY_NAMES: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
/// At most this many approvers at one desk (a bound on the desk's memory).
pub const MAX_APPROVERS: u32 = 100_000;
/// A decision later than any simulation (beyond every duration's bound): it never comes.
pub const NEVER: Micros = 1 << 61;

/// When humans decide: the same hours `[start, end)` on each listed day, on the run's virtual
/// clock, where virtual time 0 is `week_hour_at_start` hours after Monday 00:00.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkingHours {
    /// Opening and closing time of day.
    pub start_us: Micros,
    pub end_us: Micros,
    /// Open days, Monday first.
    pub days: [bool; 7],
    /// Where in the week virtual time 0 falls.
    pub offset_us: Micros,
}

impl WorkingHours {
    fn open_per_week_us(&self) -> Micros {
        self.days.iter().filter(|&&d| d).count() as Micros * (self.end_us - self.start_us)
    }

    /// Whether `t` is inside working hours.
    pub fn is_open(&self, t: Micros) -> bool {
        let pos = (t + self.offset_us) % US_PER_WEEK;
        let (day, tod) = ((pos / US_PER_DAY) as usize, pos % US_PER_DAY);
        self.days[day] && (self.start_us..self.end_us).contains(&tod)
    }

    /// The first instant at or after `t` inside working hours. Some day is open (checked).
    pub fn next_open(&self, t: Micros) -> Micros {
        let pos = (t + self.offset_us) % US_PER_WEEK;
        let (day, tod) = ((pos / US_PER_DAY) as usize, pos % US_PER_DAY);
        if self.days[day] && tod < self.end_us {
            return t + self.start_us.saturating_sub(tod);
        }
        for k in 1..=7u64 {
            if self.days[(day + k as usize) % 7] {
                return t + (k * US_PER_DAY - tod) + self.start_us;
            }
        }
        debug_assert!(false, "working hours have an open day");
        t
    }

    /// The instant `work_us` of working time after `t`: what a human who starts at `t` (or at
    /// the next opening) needs to finish. Bounded: whole weeks are skipped at once.
    pub fn advance(&self, t: Micros, work_us: Micros) -> Micros {
        let mut t = self.next_open(t);
        let mut left = work_us;
        let week = self.open_per_week_us();
        if left > week {
            // Leave (0, week] to walk: a whole week from an open instant is a week of work.
            let weeks = (left - 1) / week;
            match weeks.checked_mul(US_PER_WEEK).and_then(|span| t.checked_add(span)) {
                Some(later) if later < NEVER => t = later,
                // A few open minutes a week and a decision of centuries: never, in any run.
                _ => return NEVER,
            }
            left -= weeks * week;
        }
        loop {
            t = self.next_open(t);
            let tod = (t + self.offset_us) % US_PER_DAY;
            let open_left = self.end_us - tod;
            if left <= open_left {
                return t + left;
            }
            left -= open_left;
            t += open_left;
        }
    }
}

/// A dependency's compiled `approval` table.
#[derive(Debug, Clone)]
pub struct ApprovalModel {
    /// A human's time to decide, in working time (ms).
    pub decision_time: Distribution,
    /// People deciding, first come first served; None: every request has its own.
    pub approvers: Option<u32>,
    /// The share of decisions that approve; the rest refuse.
    pub approved_share: f64,
    /// The business expiry: a request not decided this long after it was made lapses.
    pub expires_after_us: Micros,
    /// None: humans decide at any hour.
    pub working_hours: Option<WorkingHours>,
}

/// What the desk will answer a request, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scheduled {
    /// Approved, Refused or Expired (never PendingAtDeadline: that is the run's view).
    pub verdict: ApprovalVerdict,
    pub at: Micros,
}

/// One approval dependency's humans during a replication: each approver's next free instant.
#[derive(Debug, Clone, Default)]
pub struct ApprovalDesk {
    free_at: Vec<Micros>,
}

impl ApprovalDesk {
    pub fn new(model: Option<&ApprovalModel>) -> ApprovalDesk {
        let approvers = model.and_then(|m| m.approvers).unwrap_or(0);
        ApprovalDesk { free_at: vec![0; approvers as usize] }
    }

    /// A request made at `now` that needs `work_us` of a human's working time, and whose
    /// decision, if it comes in time, is `approve`. The earliest free approver takes it (first
    /// come, first served: the requests before it already hold theirs); one who could only
    /// start after the expiry never starts it.
    pub fn request(&mut self, model: &ApprovalModel, now: Micros, work_us: Micros, approve: bool) -> Scheduled {
        let expires_at = now.saturating_add(model.expires_after_us);
        let open = |t: Micros| model.working_hours.as_ref().map_or(t, |h| h.next_open(t));
        let finish =
            |t: Micros| model.working_hours.as_ref().map_or(t.saturating_add(work_us), |h| h.advance(t, work_us));
        let approver = (!self.free_at.is_empty()).then(|| {
            // The first of the earliest: a fixed order, so the desk is deterministic.
            let mut best = 0;
            for (i, &f) in self.free_at.iter().enumerate() {
                if f < self.free_at[best] {
                    best = i;
                }
            }
            best
        });
        let start = open(approver.map_or(now, |i| self.free_at[i].max(now)));
        if start >= expires_at {
            return Scheduled { verdict: ApprovalVerdict::Expired, at: expires_at };
        }
        let decided = finish(start);
        let scheduled = if decided <= expires_at {
            let verdict = if approve { ApprovalVerdict::Approved } else { ApprovalVerdict::Refused };
            Scheduled { verdict, at: decided }
        } else {
            Scheduled { verdict: ApprovalVerdict::Expired, at: expires_at }
        };
        if let Some(i) = approver {
            debug_assert!(scheduled.at >= self.free_at[i], "an approver's free instant never goes back");
            self.free_at[i] = scheduled.at;
        }
        scheduled
    }
}

/// Compiles a dependency's `approval` table; every error names its field.
pub(super) fn compile_approval(
    c: &super::check::Checker,
    path: &crate::scenario::FieldPath,
    spec: &crate::scenario::ApprovalSpec,
) -> Result<ApprovalModel, crate::scenario::ScenarioError> {
    let decision_time = c.distribution(&path.key("decision_time"), &spec.decision_time)?;
    let approvers = spec.approvers.map(|n| c.in_range(&path.key("approvers"), n, 1, MAX_APPROVERS)).transpose()?;
    let approved_share = c.probability(&path.key("approved_share"), spec.approved_share.unwrap_or(1.0))?;
    let expires_after_s = c.positive(&path.key("expires_after_s"), spec.expires_after_s)?;
    let working_hours =
        spec.working_hours.as_ref().map(|h| compile_hours(c, &path.key("working_hours"), h)).transpose()?;
    Ok(ApprovalModel {
        decision_time,
        approvers,
        approved_share,
        expires_after_us: crate::sim::ms_to_us(expires_after_s * 1e3),
        working_hours,
    })
}

fn compile_hours(
    c: &super::check::Checker,
    path: &crate::scenario::FieldPath,
    spec: &crate::scenario::WorkingHoursSpec,
) -> Result<WorkingHours, crate::scenario::ScenarioError> {
    let hour = |field: &str, h: f64| {
        if (0.0..=24.0).contains(&h) {
            Ok((h * US_PER_HOUR as f64).round() as Micros)
        } else {
            Err(c.err(&path.key(field), format!("an hour of the day must be in [0, 24], got {h}")))
        }
    };
    let (start_us, end_us) = (hour("start_h", spec.start_h)?, hour("end_h", spec.end_h)?);
    if start_us >= end_us {
        let message = format!(
            "start_h ({}) must come before end_h ({}): hours that span midnight are two days' hours, not modelled",
            spec.start_h, spec.end_h
        );
        return Err(c.err(&path.key("end_h"), message));
    }
    let mut days = [false; 7];
    match &spec.days {
        None => days[..5].fill(true),
        Some(names) => {
            for (i, name) in names.iter().enumerate() {
                let Some(d) = DAY_NAMES.iter().position(|n| n == name) else {
                    let message = format!(
                        "unknown day {}; expected one of {}",
                        crate::scenario::quote(name),
                        DAY_NAMES.join(", ")
                    );
                    return Err(c.err(&path.key("days").index(i), message));
                };
                if days[d] {
                    let message = format!("day {} is listed twice", crate::scenario::quote(name));
                    return Err(c.err(&path.key("days").index(i), message));
                }
                days[d] = true;
            }
            if names.is_empty() {
                return Err(c.err(&path.key("days"), "no open day: no approval would ever be decided"));
            }
        }
    }
    let at_start = spec.week_hour_at_start.unwrap_or(0.0);
    if !(0.0..168.0).contains(&at_start) {
        let message = format!("an hour of the week must be in [0, 168), got {at_start}");
        return Err(c.err(&path.key("week_hour_at_start"), message));
    }
    let offset_us = ((at_start * US_PER_HOUR as f64).round() as Micros).min(US_PER_WEEK - 1);
    Ok(WorkingHours { start_us, end_us, days, offset_us })
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: Micros = US_PER_HOUR;

    fn office() -> WorkingHours {
        let mut days = [true; 7];
        days[5] = false;
        days[6] = false;
        WorkingHours { start_us: 9 * H, end_us: 17 * H, days, offset_us: 0 }
    }

    fn model(approvers: Option<u32>, hours: Option<WorkingHours>) -> ApprovalModel {
        ApprovalModel {
            decision_time: Distribution::Constant { value_ms: 0.0 },
            approvers,
            approved_share: 1.0,
            expires_after_us: 1_000 * H,
            working_hours: hours,
        }
    }

    #[test]
    fn a_request_at_night_waits_for_the_morning() {
        let h = office();
        assert_eq!(h.next_open(2 * H), 9 * H, "Monday 02:00 opens at 09:00");
        assert_eq!(h.next_open(10 * H), 10 * H, "open already");
        assert_eq!(h.next_open(17 * H), 24 * H + 9 * H, "closing time is closed: Tuesday 09:00");
        assert_eq!(h.advance(2 * H, H), 10 * H);
        // Friday 16:30 with one hour of work: half an hour Friday, half an hour Monday.
        let friday = 4 * 24 * H;
        assert_eq!(h.advance(friday + 16 * H + H / 2, H), 7 * 24 * H + 9 * H + H / 2);
        assert!(!h.is_open(5 * 24 * H + 10 * H), "Saturday is closed");
        assert!(h.is_open(friday + 10 * H), "Friday 10:00 is open");
        assert!(h.is_open(US_PER_WEEK + 10 * H), "so is the next week's Monday 10:00");
        assert!(!h.is_open(US_PER_WEEK + 17 * H), "and not its closing time");
    }

    #[test]
    fn long_work_skips_whole_weeks_and_agrees_with_the_walk() {
        let h = office();
        // 40 working hours a week: 81 hours of work from Monday 09:00 end on the third Monday at 10:00.
        assert_eq!(h.advance(9 * H, 81 * H), 2 * US_PER_WEEK + 10 * H);
        assert_eq!(h.advance(9 * H, 83 * H), 2 * US_PER_WEEK + 12 * H);
        // Exactly a week of work from an opening ends at the previous Friday's closing.
        assert_eq!(h.advance(9 * H, 40 * H), 4 * 24 * H + 17 * H);
        // The offset moves virtual 0 into the week: 0 is Saturday 00:00, so Monday 09:00 is 57 h.
        let shifted = WorkingHours { offset_us: 5 * 24 * H, ..office() };
        assert_eq!(shifted.next_open(0), 2 * 24 * H + 9 * H);
    }

    #[test]
    fn a_decision_of_centuries_in_a_few_open_minutes_a_week_never_comes_and_never_overflows() {
        let mut days = [false; 7];
        days[0] = true;
        let thin = WorkingHours { start_us: 0, end_us: 1_000_000, days, offset_us: 0 };
        assert_eq!(thin.advance(5, crate::sim::time::MAX_SPAN_US), NEVER);
        let m = ApprovalModel { working_hours: Some(thin), ..model(Some(1), None) };
        let mut desk = ApprovalDesk::new(Some(&m));
        let s = desk.request(&m, crate::sim::time::MAX_SPAN_US, crate::sim::time::MAX_SPAN_US, true);
        assert_eq!(s.verdict, ApprovalVerdict::Expired);
    }

    #[test]
    fn approvers_take_requests_in_order_and_expired_ones_hold_nobody() {
        let m = model(Some(2), None);
        let mut desk = ApprovalDesk::new(Some(&m));
        let a = desk.request(&m, 0, 10 * H, true);
        let b = desk.request(&m, 0, 4 * H, false);
        let c = desk.request(&m, H, 2 * H, true);
        assert_eq!(a, Scheduled { verdict: ApprovalVerdict::Approved, at: 10 * H });
        assert_eq!(b, Scheduled { verdict: ApprovalVerdict::Refused, at: 4 * H });
        assert_eq!(c.at, 6 * H, "waits for the second approver, free at 4 h");
        let short = ApprovalModel { expires_after_us: H, ..m.clone() };
        let d = desk.request(&short, 2 * H, H, true);
        assert_eq!(d, Scheduled { verdict: ApprovalVerdict::Expired, at: 3 * H }, "nobody is free before 6 h");
        let e = desk.request(&m, 2 * H, H, true);
        assert_eq!(e.at, 7 * H, "the lapsed request took nobody's time");
    }

    #[test]
    fn a_decision_past_the_expiry_lapses_and_frees_its_approver_then() {
        let m = ApprovalModel { expires_after_us: 2 * H, ..model(Some(1), None) };
        let mut desk = ApprovalDesk::new(Some(&m));
        assert_eq!(desk.request(&m, 0, 3 * H, true), Scheduled { verdict: ApprovalVerdict::Expired, at: 2 * H });
        assert_eq!(desk.request(&m, H, H, true).at, 3 * H, "the approver let the first go at its expiry");
    }

    #[test]
    fn unlimited_approvers_never_queue_but_keep_the_hours() {
        let m = model(None, Some(office()));
        let mut desk = ApprovalDesk::new(Some(&m));
        for _ in 0..3 {
            assert_eq!(desk.request(&m, 20 * H, H, true).at, 24 * H + 10 * H);
        }
    }
}
