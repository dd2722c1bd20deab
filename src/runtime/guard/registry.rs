//! The registry of guards: one line per mechanism. Generates the compiled configuration enum
//! (`GuardSpec`), the live guard enum (`LiveGuard`) and their static dispatch, so the pipeline
//! needs no match on kinds and the hot loop no dynamic dispatch.

use super::compile::Compile;
use super::contract::{Ask, AttemptInfo, Guard, GuardConfig, HiddenEnd, Parting, Seat, Verdict};
use super::retry_budget::{Budget, aws, envoy, finagle, grpc};
use super::{
    adaptive_throttle, admission_control, bulkhead, circuit_breaker, cockatiel_breaker, envoy_outlier,
    litellm_cooldown, load_shedder, opossum_breaker, polly_breaker, rate_limiter,
};
use crate::runtime::command::Effects;
use crate::scenario::{FieldPath, MechanismArray, RawTable, ScenarioError};
use crate::sim::Micros;
use crate::vocab::{BreakerState, Refusal};

/// One line per mechanism, the only place that lists them. Generates the
/// compiled configuration enum (`GuardSpec`), the live guard enum (`LiveGuard`) and their
/// static dispatch.
macro_rules! guards {
    ($($kind:ident: $config:ty => $live:ty,)*) => {
        /// A guard's compiled configuration.
        #[derive(Debug, Clone, Copy, PartialEq)]
        pub enum GuardSpec {
            $($kind($config),)*
        }

        $(impl From<$config> for GuardSpec {
            fn from(config: $config) -> Self {
                GuardSpec::$kind(config)
            }
        })*

        impl GuardSpec {
            pub fn build(&self) -> LiveGuard {
                match self {
                    $(GuardSpec::$kind(c) => LiveGuard::$kind(GuardConfig::build(c)),)*
                }
            }
        }

        /// A guard of one simulation.
        #[derive(Debug)]
        pub enum LiveGuard {
            $($kind($live),)*
        }

        impl Guard for LiveGuard {
            #[inline]
            fn admit(&mut self, now: Micros, ask: &Ask, seat: Seat, out: &mut impl Effects) -> Verdict {
                match self {
                    $(LiveGuard::$kind(g) => <$live as Guard>::admit(g, now, ask, seat, out),)*
                }
            }

            fn undo(&mut self, now: Micros, parting: Parting, out: &mut impl Effects) {
                match self {
                    $(LiveGuard::$kind(g) => <$live as Guard>::undo(g, now, parting, out),)*
                }
            }

            #[inline]
            fn start(&mut self, now: Micros, info: &AttemptInfo) -> u32 {
                match self {
                    $(LiveGuard::$kind(g) => <$live as Guard>::start(g, now, info),)*
                }
            }

            #[inline]
            fn end(&mut self, now: Micros, parting: Parting, out: &mut impl Effects) {
                match self {
                    $(LiveGuard::$kind(g) => <$live as Guard>::end(g, now, parting, out),)*
                }
            }

            fn claim(&mut self, waiter: u64) {
                match self {
                    $(LiveGuard::$kind(g) => <$live as Guard>::claim(g, waiter),)*
                }
            }

            fn sdk_attempt_end(&mut self, now: Micros, waiter: u64, end: HiddenEnd, out: &mut impl Effects) -> bool {
                match self {
                    $(LiveGuard::$kind(g) => <$live as Guard>::sdk_attempt_end(g, now, waiter, end, out),)*
                }
            }

            fn sdk_may_send(&mut self, now: Micros) -> bool {
                match self {
                    $(LiveGuard::$kind(g) => <$live as Guard>::sdk_may_send(g, now),)*
                }
            }

            fn on_wake(&mut self, now: Micros, out: &mut impl Effects) {
                match self {
                    $(LiveGuard::$kind(g) => <$live as Guard>::on_wake(g, now, out),)*
                }
            }

            fn breaker_state(&self) -> Option<(u16, BreakerState)> {
                match self {
                    $(LiveGuard::$kind(g) => <$live as Guard>::breaker_state(g),)*
                }
            }

            fn level(&mut self, now: Micros) -> Option<u64> {
                match self {
                    $(LiveGuard::$kind(g) => <$live as Guard>::level(g, now),)*
                }
            }
        }
    };
}

guards! {
    Resilience4jBreaker: circuit_breaker::Resilience4jSpec => circuit_breaker::Resilience4jGuard,
    PollyBreaker: polly_breaker::PollySpec => polly_breaker::PollyGuard,
    OpossumBreaker: opossum_breaker::OpossumSpec => opossum_breaker::OpossumGuard,
    CockatielBreaker: cockatiel_breaker::CockatielSpec => cockatiel_breaker::CockatielGuard,
    EnvoyOutlier: envoy_outlier::EnvoyOutlierSpec => envoy_outlier::EnvoyOutlierGuard,
    LitellmCooldown: litellm_cooldown::LitellmCooldownSpec => litellm_cooldown::LitellmCooldownGuard,
    Bulkhead: bulkhead::BulkheadConfig => bulkhead::Bulkhead,
    GrpcRetryThrottle: grpc::GrpcRetryThrottleConfig => Budget<grpc::GrpcRetryThrottle>,
    FinagleRetryBudget: finagle::FinagleRetryBudgetConfig => Budget<finagle::FinagleRetryBudget>,
    EnvoyRetryBudget: envoy::EnvoyRetryBudgetConfig => Budget<envoy::EnvoyRetryBudget>,
    AwsRetryQuota: aws::AwsRetryQuotaConfig => Budget<aws::AwsRetryQuota>,
    AdaptiveThrottle: adaptive_throttle::AdaptiveThrottleConfig => adaptive_throttle::AdaptiveThrottle,
    LoadShedder: load_shedder::ShedderSpec => load_shedder::ShedderSpec,
    AdmissionControl: admission_control::AdmissionControlConfig => admission_control::AdmissionControl,
    RateLimiter: rate_limiter::RateLimiterConfig => rate_limiter::RateLimiter,
}

impl GuardSpec {
    /// The one reason this kind of guard refuses with (`refused_total.<reason>`), so a report
    /// can say which reasons a policy can give without running it.
    pub fn refusal(&self) -> Refusal {
        match self {
            GuardSpec::Resilience4jBreaker(_)
            | GuardSpec::PollyBreaker(_)
            | GuardSpec::OpossumBreaker(_)
            | GuardSpec::CockatielBreaker(_)
            | GuardSpec::EnvoyOutlier(_) => Refusal::CircuitOpen,
            GuardSpec::LitellmCooldown(_) => Refusal::CircuitOpen,
            GuardSpec::Bulkhead(_) => Refusal::Bulkhead,
            GuardSpec::GrpcRetryThrottle(_)
            | GuardSpec::FinagleRetryBudget(_)
            | GuardSpec::EnvoyRetryBudget(_)
            | GuardSpec::AwsRetryQuota(_) => Refusal::RetryBudget,
            GuardSpec::AdaptiveThrottle(_) | GuardSpec::AdmissionControl(_) | GuardSpec::RateLimiter(_) => {
                Refusal::Throttled
            }
            GuardSpec::LoadShedder(_) => Refusal::Shed,
        }
    }

    /// The time-series column this kind samples at each window's end, as (family, metric):
    /// `bulkhead.<label>.in_use`, `retry_budget.<label>.level`; None for kinds without a level.
    /// Exactly these kinds answer `Guard::level`.
    pub fn level_column(&self) -> Option<(&'static str, &'static str)> {
        match self {
            GuardSpec::Bulkhead(_) => Some(("bulkhead", "in_use")),
            GuardSpec::GrpcRetryThrottle(_)
            | GuardSpec::FinagleRetryBudget(_)
            | GuardSpec::EnvoyRetryBudget(_)
            | GuardSpec::AwsRetryQuota(_) => Some(("retry_budget", "level")),
            GuardSpec::Resilience4jBreaker(_)
            | GuardSpec::PollyBreaker(_)
            | GuardSpec::OpossumBreaker(_)
            | GuardSpec::CockatielBreaker(_)
            | GuardSpec::EnvoyOutlier(_)
            | GuardSpec::LitellmCooldown(_)
            | GuardSpec::AdaptiveThrottle(_)
            | GuardSpec::LoadShedder(_)
            | GuardSpec::AdmissionControl(_)
            | GuardSpec::RateLimiter(_) => None,
        }
    }

    /// The file's name for this kind, as the report's notes spell it.
    pub fn kind_name(&self) -> &'static str {
        match self {
            GuardSpec::Resilience4jBreaker(_) => "resilience4j circuit breaker",
            GuardSpec::PollyBreaker(_) => "polly circuit breaker",
            GuardSpec::OpossumBreaker(_) => "opossum circuit breaker",
            GuardSpec::CockatielBreaker(_) => "cockatiel circuit breaker",
            GuardSpec::EnvoyOutlier(_) => "envoy outlier detection",
            GuardSpec::LitellmCooldown(_) => "litellm deployment cooldown",
            GuardSpec::Bulkhead(_) => "bulkhead",
            GuardSpec::GrpcRetryThrottle(_) => "grpc retry budget",
            GuardSpec::FinagleRetryBudget(_) => "finagle retry budget",
            GuardSpec::EnvoyRetryBudget(_) => "envoy retry budget",
            GuardSpec::AwsRetryQuota(_) => "aws retry quota",
            GuardSpec::AdaptiveThrottle(_) => "adaptive_throttling",
            GuardSpec::LoadShedder(_) => "priority load shedding",
            GuardSpec::AdmissionControl(_) => "admission_control",
            GuardSpec::RateLimiter(_) => "rate_limiter",
        }
    }
}

/// Reads one table of a mechanism array and adds its guards.
pub type CompileTable = fn(&mut Compile<'_, GuardSpec>, &FieldPath, &RawTable) -> Result<(), ScenarioError>;

/// Which module reads the tables of a mechanism array.
pub enum Kinds {
    /// The array's tables have no `kind`: one module reads them all.
    One(CompileTable),
    /// Chosen by the table's `kind`; `default` when it is absent (None: `kind` is required).
    ByKind { default: Option<&'static str>, kinds: &'static [(&'static str, CompileTable)] },
}

/// The second half of the registry: the kinds a scenario file may name, and their readers.
pub fn kinds_of(array: MechanismArray) -> Kinds {
    match array {
        MechanismArray::CircuitBreaker => Kinds::ByKind {
            default: Some("resilience4j"),
            kinds: &[
                ("resilience4j", circuit_breaker::compile),
                ("polly", polly_breaker::compile),
                ("opossum", opossum_breaker::compile),
                ("cockatiel", cockatiel_breaker::compile),
                ("envoy_outlier", envoy_outlier::compile),
                ("litellm_cooldown", litellm_cooldown::compile),
            ],
        },
        MechanismArray::Bulkhead => Kinds::One(bulkhead::compile),
        MechanismArray::RateLimiter => Kinds::One(rate_limiter::compile),
        MechanismArray::RetryBudget => Kinds::ByKind {
            default: None,
            kinds: &[
                ("grpc", grpc::compile),
                ("finagle", finagle::compile),
                ("envoy", envoy::compile),
                ("aws", aws::compile),
                ("adaptive_throttling", adaptive_throttle::compile),
            ],
        },
        MechanismArray::LoadShedding => Kinds::ByKind {
            default: Some("priority"),
            kinds: &[("priority", load_shedder::compile), ("admission_control", admission_control::compile)],
        },
    }
}
