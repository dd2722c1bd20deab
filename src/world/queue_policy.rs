//! How a dependency's waiting room behaves (docs/essay.md section 12): the order it serves in, how
//! long an attempt may wait, what a full room does, and whether it drops work nobody waits
//! for any more. The defaults are today's plain bounded FIFO.

use super::check::Checker;
use crate::scenario::{FieldPath, QueuePolicySpec, ScenarioError};
use crate::sim::{Micros, ms_to_us};

crate::named_enum! {
    pub enum QueueOrder {
        Fifo => "fifo",
        /// Newest first: under overload the fresh requests (whose callers still wait) are served.
        Lifo => "lifo",
        /// Most important priority first, FIFO within a priority.
        Priority => "priority",
    }
}

crate::named_enum! {
    /// What a full waiting room does with a new attempt.
    pub enum Overflow {
        /// OVERLOADED at once for the newcomer.
        RejectNew => "reject_new",
        /// Evict the newest waiting attempt of the least important priority below the
        /// newcomer's; the newcomer is rejected only when nothing less important waits.
        RejectLowestPriority => "reject_lowest_priority",
    }
}

/// Adaptive queue timeouts after CoDel as Facebook runs it ("Fail at Scale", 2015): while the
/// queue has not been empty for `interval_us`, an attempt that waited longer than `target_us`
/// is dropped; otherwise only one that waited longer than `interval_us`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Codel {
    pub target_us: Micros,
    pub interval_us: Micros,
}

impl Codel {
    /// The longest an attempt taken from the queue now may have waited.
    pub fn limit_us(&self, now: Micros, last_empty_us: Micros) -> Micros {
        if now.saturating_sub(last_empty_us) > self.interval_us { self.target_us } else { self.interval_us }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueuePolicy {
    pub order: QueueOrder,
    /// An attempt still waiting this long after it arrived is dropped (OVERLOADED, counted as
    /// `expired`).
    pub max_wait_us: Option<Micros>,
    pub overflow: Overflow,
    /// Skip, without serving, an attempt whose caller has already given up.
    pub drop_abandoned: bool,
    pub codel: Option<Codel>,
}

impl Default for QueuePolicy {
    fn default() -> Self {
        QueuePolicy {
            order: QueueOrder::Fifo,
            max_wait_us: None,
            overflow: Overflow::RejectNew,
            drop_abandoned: false,
            codel: None,
        }
    }
}

/// A dependency's `queue_policy` table, checked.
pub(super) fn compile_queue_policy(
    c: &Checker,
    path: &FieldPath,
    q: &QueuePolicySpec,
) -> Result<QueuePolicy, ScenarioError> {
    let order = c.named(&path.key("order"), q.order.as_deref(), QueueOrder::Fifo)?;
    let overflow = c.named(&path.key("overflow"), q.overflow.as_deref(), Overflow::RejectNew)?;
    if overflow == Overflow::RejectLowestPriority && order != QueueOrder::Priority {
        let message = "reject_lowest_priority needs order = \"priority\" (the queue must know its priorities)";
        return Err(c.err(&path.key("overflow"), message));
    }
    let max_wait_us = match q.max_wait_ms {
        Some(ms) => Some(ms_to_us(c.positive(&path.key("max_wait_ms"), ms)?)),
        None => None,
    };
    let codel = match &q.codel {
        Some(spec) => {
            let cp = path.key("codel");
            let target_us = ms_to_us(c.positive(&cp.key("target_ms"), spec.target_ms.unwrap_or(5.0))?);
            let interval_us = ms_to_us(c.positive(&cp.key("interval_ms"), spec.interval_ms.unwrap_or(100.0))?);
            if target_us > interval_us {
                return Err(c.err(&cp.key("target_ms"), "target_ms must not exceed interval_ms"));
            }
            Some(Codel { target_us, interval_us })
        }
        None => None,
    };
    Ok(QueuePolicy { order, max_wait_us, overflow, drop_abandoned: q.drop_abandoned, codel })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for o in QueueOrder::ALL {
            assert_eq!(QueueOrder::parse(o.name()), Some(o));
        }
        for o in Overflow::ALL {
            assert_eq!(Overflow::parse(o.name()), Some(o));
        }
        assert_eq!(QueueOrder::parse("random"), None);
    }

    #[test]
    fn codel_tightens_while_the_queue_stays_busy() {
        let c = Codel { target_us: 5_000, interval_us: 100_000 };
        assert_eq!(c.limit_us(150_000, 100_000), 100_000, "empty 50 ms ago: the long limit");
        assert_eq!(c.limit_us(250_000, 100_000), 5_000, "busy for 150 ms: the short limit");
        assert_eq!(c.limit_us(200_000, 100_000), 100_000, "exactly the interval is not past it");
    }
}
