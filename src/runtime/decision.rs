//! What the runtime does after a failed attempt: the default action table of docs/essay.md section 8,
//! the retry limits, Retry-After and the deadline check of section 10, and write
//! reconciliation of section 11. A pure function of its inputs, so it is tested without the engine.

use super::backoff::Backoff;
use super::deadline::retry_fits;
use crate::sim::Micros;
use crate::vocab::BudgetKind;
use crate::vocab::FailureKind;

crate::named_enum! {
    pub enum OnEffectUnknown {
        /// Re-send the write (duplicates unless the dependency deduplicates a shared key).
        Retry => "retry",
        /// Look the key up first; reuse a committed effect, else retry with the same key.
        ReconcileFirst => "reconcile_first",
        /// Stop and hand the run to a human.
        Handoff => "handoff",
    }
}

/// The retry part of a policy, as the decision needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryRules {
    pub max_attempts: u32,
    pub backoff: Backoff,
    pub honor_retry_after: bool,
    /// Indexed by [`FailureKind::index`].
    pub retryable: [bool; FailureKind::COUNT],
    pub on_effect_unknown: OnEffectUnknown,
    pub deadline_propagation: bool,
}

/// The default table: RATE_LIMITED, OVERLOADED and TRANSIENT_TRANSPORT may be retried (the
/// latter only for reads or deduplicated writes, checked in [`decide`]); INVALID_INPUT,
/// UNAUTHORIZED, PERMANENT_PROVIDER, RESULT_INVALID, DEADLINE_EXHAUSTED and CANCELED never are;
/// EFFECT_UNKNOWN follows `on_effect_unknown`.
pub fn default_retryable() -> [bool; FailureKind::COUNT] {
    let mut table = [false; FailureKind::COUNT];
    for kind in [FailureKind::RateLimited, FailureKind::Overloaded, FailureKind::TransientTransport] {
        table[kind.index()] = true;
    }
    table
}

/// Kinds the essay forbids retrying with the same input; a policy cannot list them in retry_on.
pub const NEVER_RETRIED: [FailureKind; 6] = [
    FailureKind::InvalidInput,
    FailureKind::Unauthorized,
    FailureKind::PermanentProvider,
    FailureKind::ResultInvalid,
    FailureKind::DeadlineExhausted,
    FailureKind::Canceled,
];

/// Everything known about a logical call when one of its attempts fails.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FailedAttempt {
    pub kind: FailureKind,
    pub is_write: bool,
    /// The write carries the logical call's idempotency key to a deduplicating dependency.
    pub deduplicated: bool,
    pub status_lookup: bool,
    /// Attempts of this logical call at this dependency so far, including the failed one.
    pub attempts_made: u32,
    pub max_attempts: u32,
    /// The run can pay for one more retry (`RunBudget::has_retry_token`).
    pub has_retry_token: bool,
    pub retry_after_us: Option<Micros>,
    pub remaining_us: Micros,
    pub reserve_us: Micros,
    pub predicted_attempt_us: Micros,
    pub previous_sleep_us: Micros,
    pub jitter: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GiveUp {
    /// The kind is not retried (INVALID_INPUT and company, or a TRANSIENT_TRANSPORT write).
    NotRetryable,
    AttemptsExhausted,
    Budget(BudgetKind),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Retry {
        sleep_us: Micros,
    },
    /// Ask the dependency whether the key committed before doing anything else.
    Reconcile,
    Handoff,
    GiveUp(GiveUp),
}

pub fn decide(rules: &RetryRules, failed: &FailedAttempt) -> Decision {
    if failed.kind == FailureKind::EffectUnknown {
        match rules.on_effect_unknown {
            OnEffectUnknown::Handoff => return Decision::Handoff,
            OnEffectUnknown::ReconcileFirst if failed.status_lookup => return Decision::Reconcile,
            // Without a lookup, only a retry that the dependency deduplicates is safe.
            OnEffectUnknown::ReconcileFirst if !failed.deduplicated => return Decision::Handoff,
            OnEffectUnknown::ReconcileFirst | OnEffectUnknown::Retry => {}
        }
    } else {
        if !rules.retryable[failed.kind.index()] {
            return Decision::GiveUp(GiveUp::NotRetryable);
        }
        // A transport error on a write may hide a commit: retry only reads and deduplicated writes.
        if failed.kind == FailureKind::TransientTransport && failed.is_write && !failed.deduplicated {
            return Decision::GiveUp(GiveUp::NotRetryable);
        }
    }
    retry_or_give_up(rules, failed)
}

/// The limits every retry must pass, in the order the runtime checks them.
pub fn retry_or_give_up(rules: &RetryRules, failed: &FailedAttempt) -> Decision {
    if failed.attempts_made >= failed.max_attempts {
        return Decision::GiveUp(GiveUp::AttemptsExhausted);
    }
    if !failed.has_retry_token {
        return Decision::GiveUp(GiveUp::Budget(BudgetKind::Retry));
    }
    let retry_number = failed.attempts_made.saturating_sub(1);
    // A provider's Retry-After on a 429 replaces the backoff where the policy honours it.
    let retry_after =
        failed.retry_after_us.filter(|_| failed.kind == FailureKind::RateLimited && rules.honor_retry_after);
    let sleep_us = match retry_after {
        Some(after) => after,
        None => rules.backoff.sleep_us(retry_number, failed.previous_sleep_us, failed.jitter),
    };
    if rules.deadline_propagation
        && !retry_fits(sleep_us, failed.predicted_attempt_us, failed.reserve_us, failed.remaining_us)
    {
        return Decision::GiveUp(GiveUp::Budget(BudgetKind::Time));
    }
    Decision::Retry { sleep_us }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::backoff::{BackoffKind, Jitter};

    fn rules() -> RetryRules {
        RetryRules {
            max_attempts: 3,
            backoff: Backoff::doubling(BackoffKind::Exponential, 200_000, 2_000_000, Jitter::None),
            honor_retry_after: true,
            retryable: default_retryable(),
            on_effect_unknown: OnEffectUnknown::ReconcileFirst,
            deadline_propagation: true,
        }
    }

    fn failed(kind: FailureKind) -> FailedAttempt {
        FailedAttempt {
            kind,
            is_write: false,
            deduplicated: false,
            status_lookup: false,
            attempts_made: 1,
            max_attempts: 3,
            has_retry_token: true,
            retry_after_us: None,
            remaining_us: 10_000_000,
            reserve_us: 0,
            predicted_attempt_us: 1_000_000,
            previous_sleep_us: 0,
            jitter: 0.5,
        }
    }

    #[test]
    fn the_essay_table_never_retries_semantic_failures() {
        for kind in NEVER_RETRIED {
            assert_eq!(decide(&rules(), &failed(kind)), Decision::GiveUp(GiveUp::NotRetryable), "{kind:?}");
        }
        for kind in [FailureKind::RateLimited, FailureKind::Overloaded, FailureKind::TransientTransport] {
            assert_eq!(decide(&rules(), &failed(kind)), Decision::Retry { sleep_us: 200_000 }, "{kind:?}");
        }
    }

    #[test]
    fn transport_errors_on_writes_are_retried_only_with_a_shared_key() {
        let mut f = failed(FailureKind::TransientTransport);
        f.is_write = true;
        assert_eq!(decide(&rules(), &f), Decision::GiveUp(GiveUp::NotRetryable));
        f.deduplicated = true;
        assert_eq!(decide(&rules(), &f), Decision::Retry { sleep_us: 200_000 });
    }

    #[test]
    fn effect_unknown_follows_the_policy() {
        let mut f = failed(FailureKind::EffectUnknown);
        f.is_write = true;
        let mut r = rules();
        // reconcile_first: lookup when possible, else a same-key retry, else handoff
        f.status_lookup = true;
        assert_eq!(decide(&r, &f), Decision::Reconcile);
        f.status_lookup = false;
        assert_eq!(decide(&r, &f), Decision::Handoff);
        f.deduplicated = true;
        assert_eq!(decide(&r, &f), Decision::Retry { sleep_us: 200_000 });
        r.on_effect_unknown = OnEffectUnknown::Handoff;
        assert_eq!(decide(&r, &f), Decision::Handoff);
        r.on_effect_unknown = OnEffectUnknown::Retry;
        f.deduplicated = false;
        assert_eq!(decide(&r, &f), Decision::Retry { sleep_us: 200_000 }, "the naive re-send");
    }

    #[test]
    fn limits_apply_in_order() {
        let mut f = failed(FailureKind::Overloaded);
        f.attempts_made = 3;
        assert_eq!(decide(&rules(), &f), Decision::GiveUp(GiveUp::AttemptsExhausted));
        f.attempts_made = 2;
        f.has_retry_token = false;
        assert_eq!(decide(&rules(), &f), Decision::GiveUp(GiveUp::Budget(BudgetKind::Retry)));
        f.has_retry_token = true;
        assert_eq!(decide(&rules(), &f), Decision::Retry { sleep_us: 400_000 }, "second retry doubles");
        f.remaining_us = 1_300_000;
        assert_eq!(decide(&rules(), &f), Decision::GiveUp(GiveUp::Budget(BudgetKind::Time)));
        let mut naive = rules();
        naive.deadline_propagation = false;
        assert_eq!(
            decide(&naive, &f),
            Decision::Retry { sleep_us: 400_000 },
            "without propagation the deadline is not consulted"
        );
    }

    #[test]
    fn retry_after_is_honoured_only_when_it_fits() {
        // The essay's example: Retry-After 5000 ms with 4300 ms left and a 1700 ms attempt.
        let mut f = failed(FailureKind::RateLimited);
        f.retry_after_us = Some(5_000_000);
        f.remaining_us = 4_300_000;
        f.predicted_attempt_us = 1_700_000;
        assert_eq!(decide(&rules(), &f), Decision::GiveUp(GiveUp::Budget(BudgetKind::Time)));
        f.remaining_us = 8_000_000;
        assert_eq!(decide(&rules(), &f), Decision::Retry { sleep_us: 5_000_000 });
        let mut ignore = rules();
        ignore.honor_retry_after = false;
        assert_eq!(decide(&ignore, &f), Decision::Retry { sleep_us: 200_000 });
    }
}
