//! Shared retry budgets (docs/references.md section 3): four published designs that limit the retries of
//! many logical calls together, so that a struggling dependency does not see its load multiplied.
//! Each is its own state machine with its source's parameter names; [`RetryBudget`] puts them
//! behind one small surface so a pipeline can consult any of them without knowing which:
//!
//! - [`RetryBudget::allows_retry`] peeks (nothing is spent),
//! - [`RetryBudget::spend_retry`] takes what a retry costs, or refuses,
//! - [`RetryBudget::on_attempt_start`] / [`RetryBudget::on_attempt_end`] report every attempt.
//!
//! Hedges go through the same calls as retries: gRPC throttles hedges with the same tokens and
//! Finagle's backup requests withdraw from the client's retry budget.

use super::compile::Compile;
use super::compile::Invalid;
use super::contract::{Ask, AttemptEnd, AttemptInfo, Guard, GuardConfig, Parting, Seat, Verdict};
use super::slice_ring::SliceRing;
use crate::runtime::command::Effects;
use crate::scenario::{FieldPath, RawTable, ScenarioError, read_table};
use crate::sim::Micros;
use crate::sim::time::US_PER_S;
use crate::vocab::FailureKind;
use crate::vocab::Refusal;
use serde::{Deserialize, Serialize};

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

// ---------------------------------------------------------------------------------------------
// gRPC retry throttling (gRFC A6)

/// gRPC keeps tokens in thousandths: A6 supports `tokenRatio` to three decimal places, and
/// integer arithmetic keeps a long run free of float drift.
const MILLI: u64 = 1_000;

/// gRPC `retryThrottling`: `maxTokens`, `tokenRatio`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GrpcRetryThrottleConfig {
    /// 0 < max_tokens <= 1000 (A6).
    pub max_tokens: u32,
    /// Tokens a success adds; rounded to three decimal places as A6 allows.
    pub token_ratio: f64,
    /// Indexed by [`FailureKind::index`]. A6 counts only failures whose status the policy
    /// retries (or hedging treats as non-fatal), so that malformed requests do not read as server
    /// trouble. The default is the runtime's default retry set (RATE_LIMITED, OVERLOADED,
    /// TRANSIENT_TRANSPORT) plus EFFECT_UNKNOWN, a timed-out write, which is gRPC's retryable
    /// DEADLINE_EXCEEDED of one attempt. DEADLINE_EXHAUSTED (the logical call's own time ran out,
    /// never retried) and CANCELED (the caller gave up) say nothing about the server.
    pub counted_failures: [bool; FailureKind::COUNT],
}

impl Default for GrpcRetryThrottleConfig {
    fn default() -> Self {
        GrpcRetryThrottleConfig { max_tokens: 10, token_ratio: 0.1, counted_failures: grpc_counted_failures() }
    }
}

fn grpc_counted_failures() -> [bool; FailureKind::COUNT] {
    let mut table = [false; FailureKind::COUNT];
    for kind in FailureKind::ALL {
        table[kind.index()] = match kind {
            FailureKind::RateLimited
            | FailureKind::Overloaded
            | FailureKind::TransientTransport
            | FailureKind::EffectUnknown => true,
            FailureKind::InvalidInput
            | FailureKind::Unauthorized
            | FailureKind::PermanentProvider
            | FailureKind::ResultInvalid
            | FailureKind::DeadlineExhausted
            | FailureKind::Canceled => false,
        };
    }
    table
}

impl GrpcRetryThrottleConfig {
    pub fn check(&self) -> Result<(), Invalid> {
        if self.max_tokens == 0 || self.max_tokens > 1_000 {
            return Err(Invalid::new("max_tokens", format!("max_tokens must be in 1..=1000, got {}", self.max_tokens)));
        }
        if !(self.token_ratio.is_finite() && self.token_ratio > 0.0 && milli_of(self.token_ratio) > 0) {
            return Err(Invalid::new(
                "token_ratio",
                format!("token_ratio must be positive (three decimal places), got {}", self.token_ratio),
            ));
        }
        Ok(())
    }
}

/// `as` saturates, so an enormous ratio becomes "refill at once", never an overflow.
fn milli_of(tokens: f64) -> u64 {
    crate::sim::round_u64(tokens * MILLI as f64)
}

/// The per-server token bucket of gRPC retry throttling.
#[derive(Debug, Clone)]
pub struct GrpcRetryThrottle {
    milli_tokens: u64,
    max_milli: u64,
    ratio_milli: u64,
    counted_failures: [bool; FailureKind::COUNT],
}

impl GrpcRetryThrottle {
    pub fn new(config: GrpcRetryThrottleConfig) -> Result<Self, Invalid> {
        config.check()?;
        let max_milli = u64::from(config.max_tokens) * MILLI;
        Ok(GrpcRetryThrottle {
            milli_tokens: max_milli,
            max_milli,
            ratio_milli: milli_of(config.token_ratio),
            counted_failures: config.counted_failures,
        })
    }

    pub fn token_count(&self) -> f64 {
        self.milli_tokens as f64 / MILLI as f64
    }

    /// Retries and hedges stop at half the bucket, not at empty, so a recovering server is
    /// probed by first attempts alone until successes refill it.
    pub fn allows_retry(&self) -> bool {
        self.milli_tokens > self.max_milli / 2
    }

    pub fn on_success(&mut self) {
        self.milli_tokens = self.milli_tokens.saturating_add(self.ratio_milli).min(self.max_milli);
    }

    pub fn on_failure(&mut self) {
        self.milli_tokens = self.milli_tokens.saturating_sub(MILLI);
    }

    /// Every attempt counts, first or retry: gRPC sees each attempt as an outgoing RPC.
    pub fn on_attempt_end(&mut self, end: AttemptEnd) {
        match end.failure {
            None => self.on_success(),
            Some(kind) if self.counted_failures[kind.index()] => self.on_failure(),
            Some(_) => {}
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Finagle RetryBudget (TokenRetryBudget over a leaky bucket of WindowedAdder slices)

/// Finagle scales deposits by 1000 so that `percent_can_retry` works in integer tokens.
const FINAGLE_SCALE: f64 = 1_000.0;
/// Finagle's leaky bucket splits the ttl into 10 slices.
const FINAGLE_SLICES: usize = 10;

/// `RetryBudget(ttl, minRetriesPerSec, percentCanRetry)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FinagleRetryBudgetConfig {
    /// How long a deposit (and a withdrawal) counts; Finagle requires 1 s to 60 s.
    pub ttl_us: Micros,
    /// A reserve of `min_retries_per_s * ttl` retries per ttl, whatever the traffic.
    pub min_retries_per_s: u32,
    /// Retries allowed per request on top of the reserve (0.2 = one retry per five requests).
    pub percent_can_retry: f64,
}

impl Default for FinagleRetryBudgetConfig {
    fn default() -> Self {
        FinagleRetryBudgetConfig { ttl_us: 10 * US_PER_S, min_retries_per_s: 10, percent_can_retry: 0.2 }
    }
}

impl FinagleRetryBudgetConfig {
    pub fn check(&self) -> Result<(), Invalid> {
        if !(US_PER_S..=60 * US_PER_S).contains(&self.ttl_us) {
            return Err(Invalid::new("ttl_us", format!("ttl_us must be between 1 s and 60 s, got {} us", self.ttl_us)));
        }
        if !(0.0..=FINAGLE_SCALE).contains(&self.percent_can_retry) {
            return Err(Invalid::new(
                "percent_can_retry",
                format!("percent_can_retry must be in [0, 1000], got {}", self.percent_can_retry),
            ));
        }
        Ok(())
    }
}

/// Deposits per request and withdrawals per retry in one trailing window, plus a fixed reserve.
/// As in Finagle, withdrawals expire like deposits (the reserve thus renews every ttl), and a
/// deposit can expire before the withdrawals it paid for: the balance may then dip below zero
/// until those expire too.
#[derive(Debug, Clone)]
pub struct FinagleRetryBudget {
    window: SliceRing<1>,
    deposit: i64,
    withdrawal: i64,
    reserve: i64,
}

impl FinagleRetryBudget {
    pub fn new(config: FinagleRetryBudgetConfig) -> Result<Self, Invalid> {
        config.check()?;
        let (deposit, withdrawal) = Self::amounts_for(config.percent_can_retry);
        let ttl_s = (config.ttl_us / US_PER_S) as i64;
        let reserve = i64::from(config.min_retries_per_s).saturating_mul(ttl_s).saturating_mul(withdrawal);
        let window = SliceRing::new(config.ttl_us / FINAGLE_SLICES as u64, FINAGLE_SLICES);
        Ok(FinagleRetryBudget { window, deposit, withdrawal, reserve })
    }

    /// With no percentage, requests earn nothing and a retry costs one token of the reserve.
    /// Finagle truncates `1000 / percent` to an `Int`; the clamp keeps that range.
    fn amounts_for(percent: f64) -> (i64, i64) {
        if percent == 0.0 {
            return (0, 1);
        }
        (FINAGLE_SCALE as i64, ((FINAGLE_SCALE / percent) as i64).clamp(1, i64::from(i32::MAX)))
    }

    /// Each logical request deposits once (Finagle's RetryFilter deposits before the first try).
    pub fn on_request(&mut self, now: Micros) {
        if self.deposit > 0 {
            self.window.add(now, 0, self.deposit);
        }
    }

    pub fn try_withdraw(&mut self, now: Micros) -> bool {
        let ok = self.can_withdraw(now);
        if ok {
            self.window.add(now, 0, -self.withdrawal);
        }
        ok
    }

    pub fn can_withdraw(&mut self, now: Micros) -> bool {
        self.tokens(now) >= self.withdrawal
    }

    /// Retries that could be made now (negative while expired deposits leave withdrawals owing).
    pub fn balance(&mut self, now: Micros) -> i64 {
        self.tokens(now) / self.withdrawal
    }

    fn tokens(&mut self, now: Micros) -> i64 {
        self.window.total(now, 0).saturating_add(self.reserve)
    }
}

// ---------------------------------------------------------------------------------------------
// Envoy retry_budget (circuit-breaker thresholds)

/// Envoy `RetryBudget`: `budget_percent`, `min_retry_concurrency`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EnvoyRetryBudgetConfig {
    /// In percent, as Envoy's `Percent` type: 20.0 means a fifth of the active requests.
    pub budget_percent: f64,
    /// The limit on concurrent retries never drops below this, so quiet clusters can retry.
    pub min_retry_concurrency: u32,
}

impl Default for EnvoyRetryBudgetConfig {
    fn default() -> Self {
        EnvoyRetryBudgetConfig { budget_percent: 20.0, min_retry_concurrency: 3 }
    }
}

impl EnvoyRetryBudgetConfig {
    pub fn check(&self) -> Result<(), Invalid> {
        if !(0.0..=100.0).contains(&self.budget_percent) {
            return Err(Invalid::new(
                "budget_percent",
                format!("budget_percent must be in [0, 100], got {}", self.budget_percent),
            ));
        }
        Ok(())
    }
}

/// Concurrent retries against a share of the requests in flight. Envoy's active count covers
/// every upstream request, retries included; this model has no connection-pool queue, so its
/// pending requests are always zero. Envoy holds a retry's slot from the retry decision through
/// its backoff; here the slot is taken when the retry attempt starts, which needs no extra call
/// when a retry is abandoned during its backoff.
#[derive(Debug, Clone)]
pub struct EnvoyRetryBudget {
    config: EnvoyRetryBudgetConfig,
    active: u64,
    active_retries: u64,
}

impl EnvoyRetryBudget {
    pub fn new(config: EnvoyRetryBudgetConfig) -> Result<Self, Invalid> {
        config.check()?;
        Ok(EnvoyRetryBudget { config, active: 0, active_retries: 0 })
    }

    pub fn on_start(&mut self, is_retry: bool) {
        self.active += 1;
        if is_retry {
            self.active_retries += 1;
        }
    }

    pub fn on_end(&mut self, is_retry: bool) {
        debug_assert!(self.active > 0, "an attempt ended that never started");
        self.active = self.active.saturating_sub(1);
        if is_retry {
            debug_assert!(self.active_retries > 0, "a retry ended that never started");
            self.active_retries = self.active_retries.saturating_sub(1);
        }
    }

    /// Envoy converts the share to an integer by truncation before taking the floor.
    pub fn max_retries(&self) -> u64 {
        let share = (self.config.budget_percent / 100.0 * self.active as f64) as u64;
        share.max(u64::from(self.config.min_retry_concurrency))
    }

    pub fn allows_retry(&self) -> bool {
        self.active_retries < self.max_retries()
    }

    pub fn active(&self) -> u64 {
        self.active
    }

    pub fn active_retries(&self) -> u64 {
        self.active_retries
    }
}

// ---------------------------------------------------------------------------------------------
// AWS SDK standard retry mode: the retry quota

/// The standard-mode quota as the SDKs name it, with the costs of standard mode 2.0 (botocore's
/// newer 2.1 charges 14 per retry and 5 after throttling instead; docs/references.md section 2 keeps the former).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AwsRetryQuotaConfig {
    /// Starting and maximum capacity.
    pub initial_retry_tokens: u32,
    pub retry_cost: u32,
    /// Charged instead of `retry_cost` when the failed attempt timed out.
    pub timeout_retry_cost: u32,
    /// Returned by a call that succeeds at its first attempt.
    pub no_retry_increment: u32,
}

impl Default for AwsRetryQuotaConfig {
    fn default() -> Self {
        AwsRetryQuotaConfig { initial_retry_tokens: 500, retry_cost: 5, timeout_retry_cost: 10, no_retry_increment: 1 }
    }
}

impl AwsRetryQuotaConfig {
    pub fn check(&self) -> Result<(), Invalid> {
        if self.retry_cost == 0 {
            return Err(Invalid::new(
                "retry_cost",
                "retry_cost must be at least 1: a free retry would leave the quota no limit".to_string(),
            ));
        }
        if self.timeout_retry_cost == 0 {
            return Err(Invalid::new(
                "timeout_retry_cost",
                "timeout_retry_cost must be at least 1: a free retry would leave the quota no limit".to_string(),
            ));
        }
        Ok(())
    }
}

/// The vocabulary folds an attempt timeout into TRANSIENT_TRANSPORT (reads) or EFFECT_UNKNOWN
/// (writes). botocore charges the timeout cost for connect and read timeouts only; a refused
/// connection, also TRANSIENT_TRANSPORT here, is charged as a timeout too, the nearer fit for
/// "no answer from the service".
fn is_timeout(kind: FailureKind) -> bool {
    match kind {
        FailureKind::TransientTransport | FailureKind::EffectUnknown => true,
        FailureKind::InvalidInput
        | FailureKind::Unauthorized
        | FailureKind::RateLimited
        | FailureKind::Overloaded
        | FailureKind::PermanentProvider
        | FailureKind::ResultInvalid
        | FailureKind::DeadlineExhausted
        | FailureKind::Canceled => false,
    }
}

/// A capacity that retries draw from and successes refill.
#[derive(Debug, Clone)]
pub struct AwsRetryQuota {
    config: AwsRetryQuotaConfig,
    available: u32,
}

impl AwsRetryQuota {
    pub fn new(config: AwsRetryQuotaConfig) -> Result<Self, Invalid> {
        config.check()?;
        Ok(AwsRetryQuota { config, available: config.initial_retry_tokens })
    }

    pub fn available(&self) -> u32 {
        self.available
    }

    /// A hedge (no failure yet) is charged the plain retry cost.
    pub fn cost_of(&self, after: Option<FailureKind>) -> u32 {
        match after {
            Some(kind) if is_timeout(kind) => self.config.timeout_retry_cost,
            Some(_) | None => self.config.retry_cost,
        }
    }

    pub fn can_acquire(&self, after: Option<FailureKind>) -> bool {
        self.cost_of(after) <= self.available
    }

    /// When the quota is short the SDK does not retry at all, and takes nothing.
    pub fn acquire(&mut self, after: Option<FailureKind>) -> Option<RetryCharge> {
        let cost = self.cost_of(after);
        if cost > self.available {
            return None;
        }
        self.available -= cost;
        Some(RetryCharge(cost))
    }

    pub fn release(&mut self, amount: u32) {
        self.available = self.available.saturating_add(amount).min(self.config.initial_retry_tokens);
    }

    /// Only a successful end refunds: what the last retry took, or the small increment when the
    /// call needed no retry. A failed end gives nothing back.
    pub fn on_attempt_end(&mut self, attempt: Attempt, end: AttemptEnd) {
        if end.failure.is_some() {
            return;
        }
        match attempt {
            Attempt::First => self.release(self.config.no_retry_increment),
            Attempt::Retry(charge) => self.release(charge.0),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The common surface

/// The configuration of any one of the four budgets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RetryBudgetConfig {
    Grpc(GrpcRetryThrottleConfig),
    Finagle(FinagleRetryBudgetConfig),
    Envoy(EnvoyRetryBudgetConfig),
    Aws(AwsRetryQuotaConfig),
}

impl RetryBudgetConfig {
    pub fn check(&self) -> Result<(), Invalid> {
        match self {
            RetryBudgetConfig::Grpc(c) => c.check(),
            RetryBudgetConfig::Finagle(c) => c.check(),
            RetryBudgetConfig::Envoy(c) => c.check(),
            RetryBudgetConfig::Aws(c) => c.check(),
        }
    }
}

/// One shared retry budget of any kind, driven through one surface.
#[derive(Debug, Clone)]
pub enum RetryBudget {
    Grpc(GrpcRetryThrottle),
    Finagle(FinagleRetryBudget),
    Envoy(EnvoyRetryBudget),
    Aws(AwsRetryQuota),
}

impl RetryBudget {
    pub fn new(config: RetryBudgetConfig) -> Result<Self, Invalid> {
        Ok(match config {
            RetryBudgetConfig::Grpc(c) => RetryBudget::Grpc(GrpcRetryThrottle::new(c)?),
            RetryBudgetConfig::Finagle(c) => RetryBudget::Finagle(FinagleRetryBudget::new(c)?),
            RetryBudgetConfig::Envoy(c) => RetryBudget::Envoy(EnvoyRetryBudget::new(c)?),
            RetryBudgetConfig::Aws(c) => RetryBudget::Aws(AwsRetryQuota::new(c)?),
        })
    }

    /// Would a retry (or hedge) be allowed now? `after` is the failure that prompts it, `None`
    /// for a hedge. Spends nothing.
    pub fn allows_retry(&mut self, now: Micros, after: Option<FailureKind>) -> bool {
        match self {
            RetryBudget::Grpc(b) => b.allows_retry(),
            RetryBudget::Finagle(b) => b.can_withdraw(now),
            RetryBudget::Envoy(b) => b.allows_retry(),
            RetryBudget::Aws(b) => b.can_acquire(after),
        }
    }

    /// Takes what the retry costs, or refuses (`None`) and takes nothing. The charge goes back in
    /// `Attempt::Retry` when the retry starts and ends.
    pub fn spend_retry(&mut self, now: Micros, after: Option<FailureKind>) -> Option<RetryCharge> {
        match self {
            RetryBudget::Grpc(b) => b.allows_retry().then_some(RetryCharge::NONE),
            RetryBudget::Finagle(b) => b.try_withdraw(now).then_some(RetryCharge::NONE),
            RetryBudget::Envoy(b) => b.allows_retry().then_some(RetryCharge::NONE),
            RetryBudget::Aws(b) => b.acquire(after),
        }
    }

    pub fn on_attempt_start(&mut self, now: Micros, attempt: Attempt) {
        match self {
            RetryBudget::Grpc(_) | RetryBudget::Aws(_) => {}
            RetryBudget::Finagle(b) => {
                if !attempt.is_retry() {
                    b.on_request(now);
                }
            }
            RetryBudget::Envoy(b) => b.on_start(attempt.is_retry()),
        }
    }

    pub fn on_attempt_end(&mut self, _now: Micros, attempt: Attempt, end: AttemptEnd) {
        match self {
            RetryBudget::Grpc(b) => b.on_attempt_end(end),
            RetryBudget::Finagle(_) => {}
            RetryBudget::Envoy(b) => b.on_end(attempt.is_retry()),
            RetryBudget::Aws(b) => b.on_attempt_end(attempt, end),
        }
    }
}

impl GuardConfig for RetryBudgetConfig {
    type Live = RetryBudget;

    fn build(&self) -> RetryBudget {
        RetryBudget::new(*self).expect("retry budget configurations are checked at compile time")
    }
}

/// Only retries and hedges ask; every attempt that passes is reported when it starts and ends.
impl Guard for RetryBudget {
    fn admit(&mut self, now: Micros, ask: &Ask, _seat: Seat, _out: &mut impl Effects) -> Verdict {
        let info = ask.info;
        if info.kind.is_repeat() && !self.allows_retry(now, info.after) {
            Verdict::Refuse(Refusal::RetryBudget)
        } else {
            Verdict::Pass
        }
    }

    /// Nothing was taken yet: budgets charge only in `start`, once every guard has passed.
    fn undo(&mut self, _now: Micros, _parting: Parting, _out: &mut impl Effects) {}

    fn start(&mut self, now: Micros, info: &AttemptInfo) -> u32 {
        let (attempt, charge) = if info.kind.is_repeat() {
            let charge = self.spend_retry(now, info.after).unwrap_or(RetryCharge::NONE);
            (Attempt::Retry(charge), charge.0)
        } else {
            (Attempt::First, 0)
        };
        self.on_attempt_start(now, attempt);
        charge
    }

    fn end(&mut self, now: Micros, parting: Parting, _out: &mut impl Effects) {
        let attempt =
            if parting.info.kind.is_repeat() { Attempt::Retry(RetryCharge(parting.charge)) } else { Attempt::First };
        self.on_attempt_end(now, attempt, parting.ending.as_attempt_end());
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

budget_table!(
    /// `kind = "grpc"`: gRPC retry throttling (gRFC A6 `retryThrottling`).
    GrpcTable { max_tokens: u32, token_ratio: f64, }
);
budget_table!(
    /// `kind = "finagle"`: Finagle's RetryBudget.
    FinagleTable { ttl_ms: f64, min_retries_per_s: u32, percent_can_retry: f64, }
);
budget_table!(
    /// `kind = "envoy"`: Envoy's retry_budget circuit-breaker threshold.
    EnvoyTable { budget_percent: f64, min_retry_concurrency: u32, }
);
budget_table!(
    /// `kind = "aws"`: the AWS SDKs' standard-mode retry quota.
    AwsTable { initial_retry_tokens: u32, retry_cost: u32, timeout_retry_cost: u32, no_retry_increment: u32, }
);

/// Checks a budget's configuration and adds its instances.
fn add<G: From<RetryBudgetConfig>>(
    cx: &mut Compile<G>,
    path: &FieldPath,
    (scope, dependency): (Option<&str>, &Option<String>),
    config: RetryBudgetConfig,
) -> Result<(), ScenarioError> {
    cx.check(path, config.check())?;
    cx.add_budgets(path, scope, dependency, config)
}

pub fn compile_grpc<G: From<RetryBudgetConfig>>(
    cx: &mut Compile<G>,
    path: &FieldPath,
    raw: &RawTable,
) -> Result<(), ScenarioError> {
    let t: GrpcTable = read_table(cx.source, path, raw)?;
    let d = GrpcRetryThrottleConfig::default();
    let c = GrpcRetryThrottleConfig {
        max_tokens: t.max_tokens.unwrap_or(d.max_tokens),
        token_ratio: t.token_ratio.unwrap_or(d.token_ratio),
        ..d
    };
    add(cx, path, (t.scope.as_deref(), &t.dependency), RetryBudgetConfig::Grpc(c))
}

pub fn compile_finagle<G: From<RetryBudgetConfig>>(
    cx: &mut Compile<G>,
    path: &FieldPath,
    raw: &RawTable,
) -> Result<(), ScenarioError> {
    let t: FinagleTable = read_table(cx.source, path, raw)?;
    let d = FinagleRetryBudgetConfig::default();
    let c = FinagleRetryBudgetConfig {
        ttl_us: cx.duration(&path.key("ttl_ms"), t.ttl_ms, d.ttl_us)?,
        min_retries_per_s: t.min_retries_per_s.unwrap_or(d.min_retries_per_s),
        percent_can_retry: t.percent_can_retry.unwrap_or(d.percent_can_retry),
    };
    add(cx, path, (t.scope.as_deref(), &t.dependency), RetryBudgetConfig::Finagle(c))
}

pub fn compile_envoy<G: From<RetryBudgetConfig>>(
    cx: &mut Compile<G>,
    path: &FieldPath,
    raw: &RawTable,
) -> Result<(), ScenarioError> {
    let t: EnvoyTable = read_table(cx.source, path, raw)?;
    let d = EnvoyRetryBudgetConfig::default();
    let c = EnvoyRetryBudgetConfig {
        budget_percent: t.budget_percent.unwrap_or(d.budget_percent),
        min_retry_concurrency: t.min_retry_concurrency.unwrap_or(d.min_retry_concurrency),
    };
    add(cx, path, (t.scope.as_deref(), &t.dependency), RetryBudgetConfig::Envoy(c))
}

pub fn compile_aws<G: From<RetryBudgetConfig>>(
    cx: &mut Compile<G>,
    path: &FieldPath,
    raw: &RawTable,
) -> Result<(), ScenarioError> {
    let t: AwsTable = read_table(cx.source, path, raw)?;
    let d = AwsRetryQuotaConfig::default();
    let c = AwsRetryQuotaConfig {
        initial_retry_tokens: t.initial_retry_tokens.unwrap_or(d.initial_retry_tokens),
        retry_cost: t.retry_cost.unwrap_or(d.retry_cost),
        timeout_retry_cost: t.timeout_retry_cost.unwrap_or(d.timeout_retry_cost),
        no_retry_increment: t.no_retry_increment.unwrap_or(d.no_retry_increment),
    };
    add(cx, path, (t.scope.as_deref(), &t.dependency), RetryBudgetConfig::Aws(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: AttemptEnd = AttemptEnd { failure: None, duration_us: 1_000 };
    const OVERLOADED: AttemptEnd = AttemptEnd { failure: Some(FailureKind::Overloaded), duration_us: 1_000 };

    fn grpc() -> GrpcRetryThrottle {
        GrpcRetryThrottle::new(GrpcRetryThrottleConfig::default()).unwrap()
    }

    /// `failures` failures spread evenly over every `period` calls, repeated for `calls` calls.
    fn grpc_after_pattern(failures: u64, period: u64, calls: u64) -> GrpcRetryThrottle {
        let mut t = grpc();
        for i in 0..calls {
            let fails = (i % period) * failures % period < failures;
            t.on_attempt_end(if fails { OVERLOADED } else { OK });
        }
        t
    }

    #[test]
    fn grpc_blocks_at_half_the_bucket() {
        let mut t = grpc();
        for _ in 0..4 {
            t.on_attempt_end(OVERLOADED);
        }
        assert!(t.allows_retry(), "6 tokens > 5");
        t.on_attempt_end(OVERLOADED);
        assert_eq!(t.token_count(), 5.0);
        assert!(!t.allows_retry(), "5 tokens <= 10 / 2");
        t.on_attempt_end(OK);
        assert!(t.allows_retry(), "5.1 tokens");
        for _ in 0..20 {
            t.on_attempt_end(OVERLOADED);
        }
        assert_eq!(t.token_count(), 0.0, "the count never goes below zero");
        for _ in 0..200 {
            t.on_attempt_end(OK);
        }
        assert_eq!(t.token_count(), 10.0, "nor above max_tokens");
    }

    #[test]
    fn grpc_ignores_failures_its_policy_would_not_retry() {
        let mut t = grpc();
        for _ in 0..100 {
            t.on_attempt_end(AttemptEnd::failed(FailureKind::InvalidInput, 5));
            t.on_attempt_end(AttemptEnd::failed(FailureKind::Canceled, 5));
        }
        assert_eq!(t.token_count(), 10.0);
    }

    #[test]
    fn grpc_threshold_sits_at_r_over_one_plus_r() {
        let r = GrpcRetryThrottleConfig::default().token_ratio;
        let threshold = r / (1.0 + r);
        assert!((threshold - 0.090909).abs() < 1e-6);
        // (failures, period): each side of 9.0909 %, and the fixed point itself.
        let allowed = [(2, 25), (9, 100), (1, 11)];
        let blocked = [(1, 10), (23, 250), (12, 131)];
        for (f, p) in allowed {
            assert!((f as f64 / p as f64) <= threshold + 1e-12);
            assert!(grpc_after_pattern(f, p, 20_000).allows_retry(), "{f} in {p} keeps retries");
        }
        for (f, p) in blocked {
            assert!(f as f64 / p as f64 > threshold);
            assert!(!grpc_after_pattern(f, p, 20_000).allows_retry(), "{f} in {p} stops retries");
        }
    }

    #[test]
    fn grpc_config_is_checked() {
        let bad = GrpcRetryThrottleConfig { max_tokens: 1_001, ..Default::default() };
        assert_eq!(bad.check().unwrap_err().field, "max_tokens");
        let bad = GrpcRetryThrottleConfig { token_ratio: 0.0001, ..Default::default() };
        assert_eq!(bad.check().unwrap_err().field, "token_ratio");
        let bad = GrpcRetryThrottleConfig { token_ratio: f64::NAN, ..Default::default() };
        assert_eq!(bad.check().unwrap_err().field, "token_ratio");
    }

    fn finagle() -> FinagleRetryBudget {
        FinagleRetryBudget::new(FinagleRetryBudgetConfig::default()).unwrap()
    }

    fn withdraw_all(b: &mut FinagleRetryBudget, now: Micros) -> u32 {
        let mut n = 0;
        while b.try_withdraw(now) {
            n += 1;
        }
        n
    }

    #[test]
    fn finagle_defaults_scale_like_finagle() {
        let b = finagle();
        assert_eq!((b.deposit, b.withdrawal), (1_000, 5_000));
        assert_eq!(b.reserve, 10 * 10 * 5_000);
    }

    #[test]
    fn finagle_reserve_allows_min_retries_per_s_times_ttl() {
        let mut b = finagle();
        assert_eq!(b.balance(0), 100);
        assert_eq!(withdraw_all(&mut b, 0), 100);
        assert_eq!(b.balance(0), 0);
        assert!(!b.can_withdraw(9 * US_PER_S));
        assert_eq!(withdraw_all(&mut b, 10 * US_PER_S), 100, "withdrawals expire too: the reserve renews");
    }

    #[test]
    fn finagle_requests_add_percent_can_retry() {
        let mut b = finagle();
        for _ in 0..1_000 {
            b.on_request(0);
        }
        assert_eq!(b.balance(0), 300);
        assert_eq!(withdraw_all(&mut b, 0), 100 + 200);
    }

    #[test]
    fn finagle_deposits_expire_after_ttl() {
        let mut b = finagle();
        for _ in 0..1_000 {
            b.on_request(0);
        }
        assert_eq!(b.balance(10 * US_PER_S - 1), 300);
        assert_eq!(b.balance(10 * US_PER_S), 100);
    }

    #[test]
    fn finagle_withdrawals_outlive_the_deposits_that_paid_for_them() {
        let mut b = finagle();
        for _ in 0..1_000 {
            b.on_request(0);
        }
        assert_eq!(withdraw_all(&mut b, 5 * US_PER_S), 300);
        assert_eq!(b.balance(10 * US_PER_S), -200, "deposits gone, withdrawals still owed");
        assert!(!b.can_withdraw(10 * US_PER_S));
        assert_eq!(b.balance(15 * US_PER_S), 100);
    }

    #[test]
    fn finagle_without_reserve_or_percent_never_retries() {
        let config = FinagleRetryBudgetConfig { min_retries_per_s: 0, percent_can_retry: 0.0, ..Default::default() };
        let mut b = FinagleRetryBudget::new(config).unwrap();
        b.on_request(0);
        assert!(!b.try_withdraw(0));
        let config = FinagleRetryBudgetConfig { min_retries_per_s: 1, percent_can_retry: 0.0, ..Default::default() };
        let mut b = FinagleRetryBudget::new(config).unwrap();
        assert_eq!(withdraw_all(&mut b, 0), 10, "reserve only: one token per retry");
    }

    #[test]
    fn finagle_config_is_checked() {
        let bad = FinagleRetryBudgetConfig { ttl_us: US_PER_S / 2, ..Default::default() };
        assert_eq!(bad.check().unwrap_err().field, "ttl_us");
        let bad = FinagleRetryBudgetConfig { percent_can_retry: -0.1, ..Default::default() };
        assert_eq!(bad.check().unwrap_err().field, "percent_can_retry");
        let bad = FinagleRetryBudgetConfig { percent_can_retry: f64::NAN, ..Default::default() };
        assert_eq!(bad.check().unwrap_err().field, "percent_can_retry");
    }

    fn envoy_with(first: u32) -> EnvoyRetryBudget {
        let mut b = EnvoyRetryBudget::new(EnvoyRetryBudgetConfig::default()).unwrap();
        for _ in 0..first {
            b.on_start(false);
        }
        b
    }

    fn start_retries_while_allowed(b: &mut EnvoyRetryBudget) -> u64 {
        while b.allows_retry() {
            b.on_start(true);
        }
        b.active_retries()
    }

    #[test]
    fn envoy_low_traffic_gets_min_retry_concurrency() {
        let b = envoy_with(10);
        assert_eq!(b.max_retries(), 3, "10 active: 20 % is 2, the floor of 3 wins");
        let mut b = envoy_with(7);
        assert_eq!(start_retries_while_allowed(&mut b), 3);
        assert_eq!(b.active(), 10);
    }

    #[test]
    fn envoy_busy_traffic_gets_budget_percent() {
        let mut b = envoy_with(80);
        for _ in 0..20 {
            b.on_start(true);
        }
        assert_eq!((b.active(), b.max_retries()), (100, 20));
        assert!(!b.allows_retry(), "20 retries of 100 active requests is the whole budget");
        // Retries are active requests too, so 100 first attempts make room for 24 retries:
        // 20 % of 124 truncates to 24.
        let mut b = envoy_with(100);
        assert_eq!(b.max_retries(), 20);
        assert_eq!(start_retries_while_allowed(&mut b), 24);
    }

    #[test]
    fn envoy_ending_a_retry_frees_its_slot() {
        let mut b = envoy_with(10);
        start_retries_while_allowed(&mut b);
        b.on_end(true);
        assert!(b.allows_retry());
        assert_eq!(b.active(), 12);
    }

    #[test]
    fn envoy_config_is_checked() {
        let bad = EnvoyRetryBudgetConfig { budget_percent: 120.0, ..Default::default() };
        assert_eq!(bad.check().unwrap_err().field, "budget_percent");
    }

    fn aws() -> AwsRetryQuota {
        AwsRetryQuota::new(AwsRetryQuotaConfig::default()).unwrap()
    }

    fn acquire_all(q: &mut AwsRetryQuota, after: FailureKind) -> u32 {
        let mut n = 0;
        while q.acquire(Some(after)).is_some() {
            n += 1;
        }
        n
    }

    #[test]
    fn aws_capacity_allows_100_retries_or_50_timeout_retries() {
        let mut q = aws();
        assert_eq!(acquire_all(&mut q, FailureKind::Overloaded), 100);
        assert_eq!(q.available(), 0);
        let mut q = aws();
        assert_eq!(acquire_all(&mut q, FailureKind::TransientTransport), 50);
        let mut q = aws();
        assert_eq!(acquire_all(&mut q, FailureKind::EffectUnknown), 50);
        let mut q = aws();
        assert_eq!(q.acquire(None), Some(RetryCharge(5)), "a hedge pays the plain cost");
    }

    #[test]
    fn aws_short_quota_takes_nothing() {
        let mut q = aws();
        for _ in 0..99 {
            q.acquire(Some(FailureKind::RateLimited));
        }
        assert_eq!(q.available(), 5);
        assert_eq!(q.acquire(Some(FailureKind::TransientTransport)), None);
        assert_eq!(q.available(), 5);
        assert_eq!(q.acquire(Some(FailureKind::RateLimited)), Some(RetryCharge(5)));
    }

    #[test]
    fn aws_refunds_follow_the_sdk() {
        let mut q = aws();
        q.on_attempt_end(Attempt::First, OK);
        assert_eq!(q.available(), 500, "never above capacity");
        let small = q.acquire(Some(FailureKind::Overloaded)).unwrap();
        let large = q.acquire(Some(FailureKind::TransientTransport)).unwrap();
        assert_eq!(q.available(), 485);
        q.on_attempt_end(Attempt::Retry(large), OVERLOADED);
        assert_eq!(q.available(), 485, "a failure refunds nothing");
        q.on_attempt_end(Attempt::First, OK);
        assert_eq!(q.available(), 486, "a success without retry returns 1");
        q.on_attempt_end(Attempt::Retry(large), OK);
        assert_eq!(q.available(), 496, "a successful retry returns what it cost");
        q.on_attempt_end(Attempt::Retry(small), OK);
        assert_eq!(q.available(), 500, "capped at capacity");
    }

    #[test]
    fn aws_config_is_checked() {
        let bad = AwsRetryQuotaConfig { timeout_retry_cost: 0, ..Default::default() };
        assert_eq!(bad.check().unwrap_err().field, "timeout_retry_cost");
    }

    fn all_defaults() -> [RetryBudget; 4] {
        [
            RetryBudgetConfig::Grpc(Default::default()),
            RetryBudgetConfig::Finagle(Default::default()),
            RetryBudgetConfig::Envoy(Default::default()),
            RetryBudgetConfig::Aws(Default::default()),
        ]
        .map(|c| RetryBudget::new(c).unwrap())
    }

    /// Sequential calls that fail at every attempt and retry once while the budget lets them:
    /// how many retries each kind lets through.
    fn retries_through(budget: &mut RetryBudget, calls: u64) -> u64 {
        let mut retries = 0;
        for i in 0..calls {
            let now = i * 1_000;
            budget.on_attempt_start(now, Attempt::First);
            budget.on_attempt_end(now, Attempt::First, OVERLOADED);
            if budget.allows_retry(now, Some(FailureKind::Overloaded)) {
                let charge = budget.spend_retry(now, Some(FailureKind::Overloaded)).unwrap();
                budget.on_attempt_start(now, Attempt::Retry(charge));
                budget.on_attempt_end(now, Attempt::Retry(charge), OVERLOADED);
                retries += 1;
            }
        }
        retries
    }

    #[test]
    fn one_surface_drives_every_kind() {
        let got = all_defaults().map(|mut b| retries_through(&mut b, 1_000));
        // gRPC: 5 tokens to lose, two per call. Finagle: 100 reserve + 20 % of 1000 requests.
        // Envoy: one retry at a time never meets the floor of 3. AWS: 500 / 5.
        assert_eq!(got, [2, 300, 1_000, 100]);
    }

    #[test]
    fn dispatch_reports_bad_configs() {
        let bad = RetryBudgetConfig::Envoy(EnvoyRetryBudgetConfig { budget_percent: -1.0, ..Default::default() });
        assert!(bad.check().is_err());
        assert!(RetryBudget::new(bad).is_err());
    }

    /// Numerical Recipes' 64-bit LCG: enough to shuffle operations, no dependency needed.
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self, bound: u64) -> u64 {
            self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 33) % bound
        }
    }

    fn random_end(rng: &mut Lcg) -> AttemptEnd {
        match rng.next(FailureKind::COUNT as u64 + 3) as usize {
            k if k < FailureKind::COUNT => AttemptEnd::failed(FailureKind::ALL[k], rng.next(5_000)),
            _ => AttemptEnd::success(rng.next(5_000)),
        }
    }

    fn random_cause(rng: &mut Lcg) -> Option<FailureKind> {
        let k = rng.next(FailureKind::COUNT as u64 + 1) as usize;
        FailureKind::ALL.get(k).copied()
    }

    fn assert_in_bounds(budget: &mut RetryBudget, now: Micros, requests: i64) {
        match budget {
            RetryBudget::Grpc(b) => assert!((0.0..=10.0).contains(&b.token_count())),
            RetryBudget::Finagle(b) => {
                let balance = b.balance(now);
                assert!(balance <= 100 + requests / 5 && balance >= -(requests / 5) - 1, "{balance}");
            }
            RetryBudget::Envoy(b) => assert!(b.active_retries() <= b.active()),
            RetryBudget::Aws(b) => assert!(b.available() <= 500),
        }
    }

    #[test]
    fn random_sequences_keep_every_budget_in_bounds() {
        for (seed, mut budget) in all_defaults().into_iter().enumerate() {
            let mut rng = Lcg(seed as u64 + 1);
            let mut in_flight: Vec<Attempt> = Vec::new();
            let (mut now, mut requests) = (0, 0);
            for _ in 0..30_000 {
                now += rng.next(3) * rng.next(400_000);
                match rng.next(4) {
                    0 => {
                        budget.on_attempt_start(now, Attempt::First);
                        in_flight.push(Attempt::First);
                        requests += 1;
                    }
                    1 => {
                        let cause = random_cause(&mut rng);
                        let peek = budget.allows_retry(now, cause);
                        let spent = budget.spend_retry(now, cause);
                        assert_eq!(peek, spent.is_some(), "the peek and the spend agree");
                        if let Some(charge) = spent {
                            budget.on_attempt_start(now, Attempt::Retry(charge));
                            in_flight.push(Attempt::Retry(charge));
                        }
                    }
                    _ if !in_flight.is_empty() => {
                        let attempt = in_flight.swap_remove(rng.next(in_flight.len() as u64) as usize);
                        budget.on_attempt_end(now, attempt, random_end(&mut rng));
                    }
                    _ => {}
                }
                assert_in_bounds(&mut budget, now, requests);
            }
        }
    }
}
