//! What every retry budget kind shares: the charge a retry carries, the machine trait the
//! pipeline drives, [`Budget`] (any machine as a guard), and the shape of their file tables.

use crate::runtime::command::Effects;
use crate::runtime::guard::compile::{Compile, Invalid};
use crate::runtime::guard::contract::{Ask, AttemptEnd, AttemptInfo, Guard, Parting, Seat, Verdict};
use crate::scenario::{FieldPath, ScenarioError};
use crate::sim::Micros;
use crate::vocab::{FailureKind, Refusal};

/// What a budget took for one retry. Handed back with the retry's attempt end because the AWS
/// quota refunds exactly that amount when the retry succeeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RetryCharge(pub u32);

impl RetryCharge {
    /// For budgets that refund nothing per retry.
    pub const NONE: RetryCharge = RetryCharge(0);
}

/// Which attempt of a logical call a budget hears about. A hedge is a `Retry`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    First,
    Retry(RetryCharge),
}

impl Attempt {
    pub fn is_retry(self) -> bool {
        match self {
            Attempt::First => false,
            Attempt::Retry(_) => true,
        }
    }
}

/// What the pipeline asks of any retry budget.
pub trait RetryBudgetMachine {
    /// Would a retry (or hedge) be allowed now? `after` is the failure that prompts it, `None`
    /// for a hedge. Spends nothing.
    fn allows_retry(&mut self, now: Micros, after: Option<FailureKind>) -> bool;
    /// Takes what the retry costs, or refuses (`None`) and takes nothing. The charge comes back
    /// in `Attempt::Retry` when the retry starts and ends.
    fn spend_retry(&mut self, now: Micros, after: Option<FailureKind>) -> Option<RetryCharge>;
    fn on_attempt_start(&mut self, now: Micros, attempt: Attempt);
    fn on_attempt_end(&mut self, now: Micros, attempt: Attempt, end: AttemptEnd);
    /// What the budget holds now, in its own unit, for the time series (whole, never negative).
    fn level(&mut self, now: Micros) -> u64;
}

/// A retry budget of any kind as a guard.
#[derive(Debug, Clone)]
pub struct Budget<M>(pub M);

impl<M: RetryBudgetMachine> Guard for Budget<M> {
    fn admit(&mut self, now: Micros, ask: &Ask, _seat: Seat, _out: &mut impl Effects) -> Verdict {
        let info = ask.info;
        if info.kind.is_repeat() && !self.0.allows_retry(now, info.after) {
            Verdict::Refuse(Refusal::RetryBudget)
        } else {
            Verdict::Pass
        }
    }

    // `undo` keeps the default: budgets charge only in `start`, once every guard has passed.

    fn start(&mut self, now: Micros, info: &AttemptInfo) -> u32 {
        let (attempt, charge) = if info.kind.is_repeat() {
            let charge = self.0.spend_retry(now, info.after).unwrap_or(RetryCharge::NONE);
            (Attempt::Retry(charge), charge.0)
        } else {
            (Attempt::First, 0)
        };
        self.0.on_attempt_start(now, attempt);
        charge
    }

    fn level(&mut self, now: Micros) -> Option<u64> {
        Some(self.0.level(now))
    }

    fn end(&mut self, now: Micros, parting: Parting, _out: &mut impl Effects) {
        let attempt =
            if parting.info.kind.is_repeat() { Attempt::Retry(RetryCharge(parting.charge)) } else { Attempt::First };
        self.0.on_attempt_end(now, attempt, parting.ending.as_attempt_end());
    }
}

// ---------------------------------------------------------------------------------------------
// The file's tables: `[[policy.<name>.retry_budget]]`, one kind each, one instance per scope
// value covered (`scope`: dependency, the default; tenant; global).

macro_rules! budget_table {
    ($(#[$doc:meta])* $table:ident { $($(#[$fdoc:meta])* $field:ident: $ty:ty,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Default, Serialize, Deserialize)]
        #[serde(deny_unknown_fields, remote = "Self")]
        pub struct $table {
            pub kind: String,
            /// dependency (default), tenant or global.
            #[serde(default)]
            pub scope: Option<String>,
            /// With scope = "dependency": only this dependency; every one when absent.
            #[serde(default)]
            pub dependency: Option<String>,
            $($(#[$fdoc])* #[serde(default)] pub $field: Option<$ty>,)*
        }
        crate::scenario::types::tables_only!($table);
    };
}

pub(crate) use budget_table;

/// Checks a budget's configuration and adds its instances.
pub(super) fn add<G: From<C>, C: Copy>(
    cx: &mut Compile<G>,
    path: &FieldPath,
    (scope, dependency): (Option<&str>, &Option<String>),
    config: C,
    checked: Result<(), Invalid>,
) -> Result<(), ScenarioError> {
    cx.check(path, checked)?;
    cx.add_budgets(path, scope, dependency, config)
}
