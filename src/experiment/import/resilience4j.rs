//! `faultline import resilience4j FILE`: Spring Boot's `resilience4j.*` properties
//! (application.yml or application.properties) read with resilience4j's own inheritance and
//! defaults, written onto faultline's resilience4j-named mechanisms (docs/import.md).
//!
//! Semantics read from resilience4j's source (resilience4j/resilience4j, 2.x line):
//! - resilience4j-framework-common `CommonCircuitBreakerConfigurationProperties`
//!   (`createCircuitBreakerConfig`, `createBaseConfig`, `createDirectConfig`,
//!   `createDefaultConfig`, `buildConfig`, `configureCircuitBreakerOpenStateIntervalFunction`),
//!   commit 28c0fa94e3805eff67b83419f5203cca1ea46fcb;
//! - `CommonRetryConfigurationProperties` (`createRetryConfig`, `configureRetryIntervalFunction`),
//!   `CommonBulkheadConfigurationProperties`, commit 18052ce36a0f968554b6b2427465036172b0342a;
//!   `CommonRateLimiterConfigurationProperties`, commit 07a8304515e7bf20544a29c49a3f3a9017742188;
//!   `CommonTimeLimiterConfigurationProperties`, commit dfda31ece875800c8eb3be32397f1761aa476849
//!   (older versions gave a TimeLimiter no configs.default; this one does, as the bulkhead);
//! - `ConfigUtils.mergePropertiesIfAny` (commit 12ab6b5c56011824126344daeb0d2e7c26d9b8ec): a
//!   Retry instance inherits its base's exponential/randomized flags, multiplier and maximum
//!   (but not `randomizedWaitFactor`);
//! - resilience4j-core `IntervalFunction` (`DEFAULT_INITIAL_INTERVAL` 500, `DEFAULT_MULTIPLIER`
//!   1.5, `DEFAULT_RANDOMIZATION_FACTOR` 0.5, `checkInterval`, `checkRandomizationFactor`) and the
//!   `*Config` defaults.
//!
//! Inheritance as the source has it. CircuitBreaker: the instance, then either its `baseConfig`
//! chain, or `configs.<instance name>`, or `configs.default` (one of the three, in that order:
//! a breaker with a baseConfig does not also get configs.default). Retry, Bulkhead,
//! RateLimiter, TimeLimiter: the instance, then its baseConfig chain, each link of which falls
//! back on configs.default, or configs.default alone; then the library's defaults.

use super::fragment::{Field, Fragment, Table, toml_number};
use super::spring::{Entry, elements, relaxed};
use super::spring_profiles::Activation;
use super::spring_values::{boolean, duration_ms, float, integer};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Module {
    CircuitBreaker,
    Retry,
    Bulkhead,
    ThreadPoolBulkhead,
    RateLimiter,
    TimeLimiter,
}

fn module_of(element: &str) -> Option<Module> {
    match relaxed(element).as_str() {
        "circuitbreaker" => Some(Module::CircuitBreaker),
        "retry" => Some(Module::Retry),
        "bulkhead" => Some(Module::Bulkhead),
        "threadpoolbulkhead" => Some(Module::ThreadPoolBulkhead),
        "ratelimiter" => Some(Module::RateLimiter),
        "timelimiter" => Some(Module::TimeLimiter),
        _ => None,
    }
}

/// One instance's or config's properties: relaxed name -> the last entry that set it.
type Props = BTreeMap<String, Entry>;

#[derive(Default)]
struct ModuleConf {
    /// In the order the file first names them.
    instances: Vec<(String, Props)>,
    configs: BTreeMap<String, Props>,
}

struct Src<'a> {
    shown: &'a str,
    name: &'a str,
}

impl Src<'_> {
    fn err(&self, e: &Entry, msg: impl std::fmt::Display) -> String {
        format!("{}:{}:{}: {}: {msg}", self.shown, e.line, e.col, e.key)
    }
    fn at(&self, e: &Entry) -> String {
        format!("{} ({}:{}) = {}", e.key, self.name, e.line, e.value)
    }
}

/// Where a level of the chain comes from, for the comments.
#[derive(Clone)]
enum Origin {
    Instance,
    Base(String),
    Named(String),
    Default,
}

impl Origin {
    fn describe(&self) -> String {
        match self {
            Origin::Instance => "the instance".into(),
            Origin::Base(n) => format!("baseConfig {n}"),
            Origin::Named(n) => format!("configs.{n}, the instance's own name"),
            Origin::Default => "configs.default".into(),
        }
    }
}

struct Level<'a> {
    origin: Origin,
    props: &'a Props,
}

fn origin_of(name: &str) -> Origin {
    if name == "default" { Origin::Default } else { Origin::Base(name.to_string()) }
}

/// CommonCircuitBreakerConfigurationProperties.createCircuitBreakerConfig.
fn breaker_chain<'a>(src: &Src, conf: &'a ModuleConf, name: &str, props: &'a Props) -> Result<Vec<Level<'a>>, String> {
    let mut levels = vec![Level { origin: Origin::Instance, props }];
    if let Some(base) = props.get("baseconfig").filter(|e| !e.value.is_empty()) {
        if base.value == name {
            return Err(src.err(
                base,
                format!("Circular reference detected in instance config: {name} (resilience4j refuses it)"),
            ));
        }
        let b = conf.configs.get(&base.value).ok_or_else(|| not_found(src, base))?;
        breaker_config_chain(src, conf, &base.value, b, &mut levels, &mut vec![name.to_string()])?;
    } else if let Some(own) = conf.configs.get(name) {
        levels.push(Level { origin: Origin::Named(name.to_string()), props: own });
    } else if let Some(d) = conf.configs.get("default") {
        breaker_config_chain(src, conf, "default", d, &mut levels, &mut vec![name.to_string()])?;
    }
    Ok(levels)
}

/// A config built by createCircuitBreakerConfig(configName, ...): its own baseConfig chain, or
/// itself alone (createDirectConfig starts from the library's defaults, not configs.default).
fn breaker_config_chain<'a>(
    src: &Src,
    conf: &'a ModuleConf,
    name: &str,
    props: &'a Props,
    levels: &mut Vec<Level<'a>>,
    seen: &mut Vec<String>,
) -> Result<(), String> {
    levels.push(Level { origin: origin_of(name), props });
    seen.push(name.to_string());
    if let Some(base) = props.get("baseconfig").filter(|e| !e.value.is_empty()) {
        if base.value == name {
            return Err(src.err(
                base,
                format!("Circular reference detected in instance config: {name} (resilience4j refuses it)"),
            ));
        }
        if seen[1..].contains(&base.value) {
            return Err(circular(src, base, seen));
        }
        let b = conf.configs.get(&base.value).ok_or_else(|| not_found(src, base))?;
        breaker_config_chain(src, conf, &base.value, b, levels, seen)?;
    }
    Ok(())
}

/// createRetryConfig / createBulkheadConfig / createRateLimiterConfig / createTimeLimiterConfig.
fn plain_chain<'a>(
    src: &Src,
    conf: &'a ModuleConf,
    name: &str,
    origin: Origin,
    props: &'a Props,
    levels: &mut Vec<Level<'a>>,
    seen: &mut Vec<String>,
) -> Result<(), String> {
    levels.push(Level { origin, props });
    seen.push(name.to_string());
    if let Some(base) = props.get("baseconfig").filter(|e| !e.value.is_empty()) {
        // seen[0] is the instance; instance and config names do not clash.
        if seen[1..].contains(&base.value) {
            return Err(circular(src, base, seen));
        }
        let b = conf.configs.get(&base.value).ok_or_else(|| not_found(src, base))?;
        plain_chain(src, conf, &base.value, origin_of(&base.value), b, levels, seen)?;
    } else if let Some(d) = conf.configs.get("default").filter(|_| name != "default") {
        plain_chain(src, conf, "default", Origin::Default, d, levels, seen)?;
    }
    Ok(())
}

fn not_found(src: &Src, base: &Entry) -> String {
    src.err(
        base,
        format!(
            "Configuration with name '{}' does not exist (resilience4j's ConfigurationNotFoundException)",
            base.value
        ),
    )
}

fn circular(src: &Src, base: &Entry, seen: &[String]) -> String {
    src.err(
        base,
        format!(
            "circular baseConfig chain {} -> {} (resilience4j recurses until a StackOverflowError)",
            seen.join(" -> "),
            base.value
        ),
    )
}

fn find<'a>(levels: &'a [Level<'a>], prop: &str) -> Option<(&'a Entry, &'a Origin)> {
    levels.iter().find_map(|l| l.props.get(prop).filter(|e| !e.value.is_empty()).map(|e| (e, &l.origin)))
}

/// The comment of a value taken from the file.
fn cite(src: &Src, e: &Entry, origin: &Origin) -> String {
    format!("from {}; {}", src.at(e), origin.describe())
}

fn field(key: &str, value: String, comment: String) -> Field {
    Field { key: key.to_string(), value, comment }
}

fn quote(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

// ---------------------------------------------------------------- typed values

#[derive(Clone, Copy)]
enum Ty {
    /// (0, 100]: resilience4j's failure and slow-call rate thresholds.
    Percent,
    /// An integer in 1 ..= 1,000,000 (faultline's window bound).
    Count,
    /// A bulkhead's permits: resilience4j takes 0 (a bulkhead that refuses every call),
    /// faultline's bulkhead needs at least 1.
    Permits,
    /// A duration >= 0, in ms.
    Ms,
    /// A duration > 0, in ms.
    MsPositive,
    Bool,
    WindowType,
}

struct Spec {
    prop: &'static str,
    field: &'static str,
    ty: Ty,
    /// The library's default, as TOML.
    default: &'static str,
    default_from: &'static str,
}

fn typed(src: &Src, e: &Entry, ty: Ty) -> Result<String, String> {
    let v = &e.value;
    let out = match ty {
        Ty::Percent => {
            let x = float(v).map_err(|m| src.err(e, m))?;
            if !(x > 0.0 && x <= 100.0) {
                return Err(src.err(e, format!("must be above 0 and at most 100, found {v} (resilience4j refuses it)")));
            }
            toml_number(x)
        }
        Ty::Count => {
            let n = integer(v).map_err(|m| src.err(e, m))?;
            if n < 1 {
                return Err(src.err(e, format!("must be at least 1, found {n} (resilience4j refuses it)")));
            }
            if n > 1_000_000 {
                return Err(
                    src.err(e, format!("{n} is above faultline's bound of 1,000,000 (windows are allocated up front)"))
                );
            }
            n.to_string()
        }
        Ty::Permits => {
            let n = integer(v).map_err(|m| src.err(e, m))?;
            if n < 0 {
                return Err(src.err(e, format!("must be at least 0, found {n} (resilience4j refuses it)")));
            }
            if n == 0 {
                return Err(src.err(
                    e,
                    "0: resilience4j accepts it (a bulkhead that refuses every call), faultline's bulkhead needs at least 1 permit; model a dependency that is refused outright with a fault instead",
                ));
            }
            n.to_string()
        }
        Ty::Ms | Ty::MsPositive => {
            let ms = duration_ms(v).map_err(|m| src.err(e, m))?;
            if ms < 0.0 {
                return Err(src.err(e, format!("must not be negative, found {v} (resilience4j refuses it)")));
            }
            if matches!(ty, Ty::MsPositive) && ms <= 0.0 {
                return Err(src.err(e, format!("must be above 0, found {v}")));
            }
            toml_number(ms)
        }
        Ty::Bool => boolean(v).map_err(|m| src.err(e, m))?.to_string(),
        Ty::WindowType => match relaxed(v).as_str() {
            "countbased" => quote("count_based"),
            "timebased" => quote("time_based"),
            _ => return Err(src.err(e, format!("`{v}` is not a sliding window type (COUNT_BASED or TIME_BASED)"))),
        },
    };
    Ok(out)
}

fn spec_fields(src: &Src, levels: &[Level], specs: &[Spec]) -> Result<Vec<Field>, String> {
    let mut out = Vec::new();
    for s in specs {
        let f = match find(levels, &relaxed(s.prop)) {
            Some((e, o)) => field(s.field, typed(src, e, s.ty)?, cite(src, e, o)),
            None => field(
                s.field,
                s.default.to_string(),
                format!("resilience4j's default {} = {} ({})", s.prop, s.default, s.default_from),
            ),
        };
        out.push(f);
    }
    Ok(out)
}

fn flag(src: &Src, levels: &[Level], prop: &str) -> Result<bool, String> {
    match find(levels, prop) {
        Some((e, _)) => boolean(&e.value).map_err(|m| src.err(e, m)),
        None => Ok(false),
    }
}

// ---------------------------------------------------------------- modules

const BREAKER: &[Spec] = &[
    Spec {
        prop: "failureRateThreshold",
        field: "failure_rate_threshold",
        ty: Ty::Percent,
        default: "50",
        default_from: "CircuitBreakerConfig.DEFAULT_FAILURE_RATE_THRESHOLD",
    },
    Spec {
        prop: "slowCallRateThreshold",
        field: "slow_call_rate_threshold",
        ty: Ty::Percent,
        default: "100",
        default_from: "CircuitBreakerConfig.DEFAULT_SLOW_CALL_RATE_THRESHOLD",
    },
    Spec {
        prop: "slowCallDurationThreshold",
        field: "slow_call_duration_threshold_ms",
        ty: Ty::MsPositive,
        default: "60000",
        default_from: "CircuitBreakerConfig.DEFAULT_SLOW_CALL_DURATION_THRESHOLD, 60 s",
    },
    Spec {
        prop: "minimumNumberOfCalls",
        field: "minimum_number_of_calls",
        ty: Ty::Count,
        default: "100",
        default_from: "CircuitBreakerConfig.DEFAULT_MINIMUM_NUMBER_OF_CALLS",
    },
    Spec {
        prop: "slidingWindowType",
        field: "sliding_window_type",
        ty: Ty::WindowType,
        default: "\"count_based\"",
        default_from: "CircuitBreakerConfig.DEFAULT_SLIDING_WINDOW_TYPE",
    },
    Spec {
        prop: "slidingWindowSize",
        field: "sliding_window_size",
        ty: Ty::Count,
        default: "100",
        default_from: "CircuitBreakerConfig.DEFAULT_SLIDING_WINDOW_SIZE",
    },
    Spec {
        prop: "permittedNumberOfCallsInHalfOpenState",
        field: "permitted_number_of_calls_in_half_open_state",
        ty: Ty::Count,
        default: "10",
        default_from: "CircuitBreakerConfig.DEFAULT_PERMITTED_CALLS_IN_HALF_OPEN_STATE",
    },
    Spec {
        prop: "maxWaitDurationInHalfOpenState",
        field: "max_wait_duration_in_half_open_state_ms",
        ty: Ty::Ms,
        default: "0",
        default_from: "CircuitBreakerConfig.DEFAULT_WAIT_DURATION_IN_HALF_OPEN_STATE, 0: off",
    },
    Spec {
        prop: "automaticTransitionFromOpenToHalfOpenEnabled",
        field: "automatic_transition_from_open_to_half_open_enabled",
        ty: Ty::Bool,
        default: "false",
        default_from: "CircuitBreakerConfig",
    },
];

const BULKHEAD: &[Spec] = &[
    Spec {
        prop: "maxConcurrentCalls",
        field: "max_concurrent_calls",
        ty: Ty::Permits,
        default: "25",
        default_from: "BulkheadConfig.DEFAULT_MAX_CONCURRENT_CALLS",
    },
    Spec {
        prop: "maxWaitDuration",
        field: "max_wait_ms",
        ty: Ty::Ms,
        default: "0",
        default_from: "BulkheadConfig.DEFAULT_MAX_WAIT_DURATION",
    },
];

const RATE_LIMITER: &[Spec] = &[
    Spec {
        prop: "limitForPeriod",
        field: "limit_for_period",
        ty: Ty::Count,
        default: "50",
        default_from: "RateLimiterConfig.DEFAULT_LIMIT_FOR_PERIOD",
    },
    Spec {
        prop: "timeoutDuration",
        field: "timeout_duration_ms",
        ty: Ty::Ms,
        default: "5000",
        default_from: "RateLimiterConfig.DEFAULT_TIMEOUT_DURATION, 5 s",
    },
];

/// Properties each module maps (relaxed), besides `baseConfig`.
fn mapped(module: Module, prop: &str) -> bool {
    let names: &[&str] = match module {
        Module::CircuitBreaker => &[
            "failureRateThreshold",
            "slowCallRateThreshold",
            "slowCallDurationThreshold",
            "minimumNumberOfCalls",
            "slidingWindowType",
            "slidingWindowSize",
            "permittedNumberOfCallsInHalfOpenState",
            "maxWaitDurationInHalfOpenState",
            "automaticTransitionFromOpenToHalfOpenEnabled",
            "waitDurationInOpenState",
        ],
        Module::Retry => &[
            "maxAttempts",
            "waitDuration",
            "enableExponentialBackoff",
            "exponentialBackoffMultiplier",
            "exponentialMaxWaitDuration",
            "enableRandomizedWait",
            "randomizedWaitFactor",
        ],
        Module::Bulkhead => &["maxConcurrentCalls", "maxWaitDuration"],
        Module::RateLimiter => &["limitForPeriod", "limitRefreshPeriod", "timeoutDuration"],
        Module::TimeLimiter => &["timeoutDuration"],
        Module::ThreadPoolBulkhead => &[],
    };
    prop == "baseconfig" && module != Module::ThreadPoolBulkhead || names.iter().any(|n| relaxed(n) == prop)
}

/// Why a property resilience4j knows is not mapped; None for a property it does not know.
fn why_not_mapped(module: Module, prop: &str) -> Option<&'static str> {
    let no_effect = "events, health indicators, metrics and stack traces: no effect on calls";
    let r = |n: &str| relaxed(n) == prop;
    if module == Module::ThreadPoolBulkhead {
        return Some(
            "thread-pool bulkheads are not modelled (faultline's bulkhead is resilience4j's semaphore bulkhead, 8.8)",
        );
    }
    if [
        "eventConsumerBufferSize",
        "registerHealthIndicator",
        "allowHealthIndicatorToFail",
        "writableStackTraceEnabled",
        "subscribeForEvents",
    ]
    .iter()
    .any(|n| r(n))
    {
        return Some(no_effect);
    }
    match module {
        Module::CircuitBreaker => {
            if [
                "recordExceptions",
                "ignoreExceptions",
                "recordFailurePredicate",
                "recordResultPredicate",
                "ignoreExceptionPredicate",
                "ignoreUnknownExceptions",
                "ignoreClassBindingExceptions",
            ]
            .iter()
            .any(|n| r(n))
            {
                return Some(
                    "exception classes and predicates name Java types; faultline judges failure kinds, and the fragment records every kind (ignore = []); set `ignore` by hand",
                );
            }
            if [
                "enableExponentialBackoff",
                "exponentialBackoffMultiplier",
                "exponentialMaxWaitDurationInOpenState",
                "enableRandomizedWait",
                "randomizedWaitFactor",
            ]
            .iter()
            .any(|n| r(n))
            {
                return Some(
                    "open-state interval functions (growing or randomized waits in OPEN) are not modelled: faultline waits wait_duration_in_open_state_ms every time, the function's first (or mean) wait",
                );
            }
            if r("initialState") {
                return Some("faultline's breakers start CLOSED (only CLOSED is the same)");
            }
        }
        Module::Retry => {
            if [
                "retryExceptions",
                "ignoreExceptions",
                "retryExceptionPredicate",
                "resultPredicate",
                "consumeResultBeforeRetryAttempt",
                "intervalBiFunction",
            ]
            .iter()
            .any(|n| r(n))
            {
                return Some(
                    "exception classes, predicates and interval functions name Java types; faultline retries failure kinds (retry_on), its default RATE_LIMITED, OVERLOADED and TRANSIENT_TRANSPORT",
                );
            }
            if r("failAfterMaxAttempts") {
                return Some("changes the exception thrown after the last attempt, not the calls");
            }
        }
        Module::TimeLimiter => {
            if r("cancelRunningFuture") {
                return Some(
                    "faultline abandons a timed-out attempt; whether the dependency stops working on it is the dependency's own `cancellation`",
                );
            }
        }
        Module::Bulkhead | Module::RateLimiter | Module::ThreadPoolBulkhead => {}
    }
    None
}

pub struct R4jOptions<'a> {
    pub shown: &'a str,
    pub name: &'a str,
    pub policy: &'a str,
    pub dependencies: &'a [(String, String)],
}

/// Reads the flattened file into modules; everything else goes to `not_mapped` (or is counted
/// as outside resilience4j).
fn collect(src: &Src, file: &Activation, not_mapped: &mut Vec<String>) -> (BTreeMap<Module, ModuleConf>, usize) {
    let mut modules: BTreeMap<Module, ModuleConf> = BTreeMap::new();
    let mut outside = 0;
    for e in &file.entries {
        let el = elements(&e.key);
        if el.first().map(|s| relaxed(s)) != Some("resilience4j".into()) {
            outside += 1;
            continue;
        }
        let Some(module) = el.get(1).and_then(|m| module_of(m)) else {
            not_mapped.push(format!("{}: not a resilience4j module this importer reads", src.at(e)));
            continue;
        };
        let section = el.get(2).map(|s| relaxed(s)).unwrap_or_default();
        let is_instance = matches!(section.as_str(), "instances" | "backends" | "limiters");
        if !(is_instance || section == "configs") || el.len() < 5 {
            not_mapped.push(format!("{}: a module-wide setting (aspect order, metrics, tags): no effect on calls here; faultline's guard order is fixed (scenario.md 8.11)", src.at(e)));
            continue;
        }
        let name = el[3].clone();
        let prop_el = &el[4];
        let prop = relaxed(prop_el.split('[').next().unwrap_or(prop_el));
        if !mapped(module, &prop) {
            let why = why_not_mapped(module, &prop)
                .unwrap_or("not a property resilience4j reads here (Spring ignores unknown keys)");
            not_mapped.push(format!("{}: {why}", src.at(e)));
            // Kept all the same: the open-state flags are checked the way resilience4j checks them.
        }
        let conf = modules.entry(module).or_default();
        let props = if is_instance {
            if let Some(i) = conf.instances.iter().position(|(n, _)| *n == name) {
                &mut conf.instances[i].1
            } else {
                conf.instances.push((name, Props::new()));
                &mut conf.instances.last_mut().expect("just pushed").1
            }
        } else {
            conf.configs.entry(name).or_default()
        };
        props.insert(prop, e.clone());
    }
    (modules, outside)
}

pub fn import(file: &Activation, opts: &R4jOptions) -> Result<Fragment, String> {
    let src = Src { shown: opts.shown, name: opts.name };
    let mut not_mapped = Vec::new();
    let (modules, outside) = collect(&src, file, &mut not_mapped);
    if modules.is_empty() && not_mapped.is_empty() && file.set_aside.is_empty() {
        return Err(format!(
            "{}: no resilience4j.* key ({outside} other keys): nothing to import (is it the file with resilience4j's settings?)",
            opts.shown
        ));
    }
    check_every_level(&src, &modules)?;
    let empty = ModuleConf::default();
    let conf = |m: Module| modules.get(&m).unwrap_or(&empty);

    // Instance names -> dependencies.
    let mut names: Vec<&str> = Vec::new();
    for m in [Module::CircuitBreaker, Module::Retry, Module::Bulkhead, Module::RateLimiter, Module::TimeLimiter] {
        for (n, _) in &conf(m).instances {
            if !names.contains(&n.as_str()) {
                names.push(n);
            }
        }
    }
    for (inst, _) in opts.dependencies {
        if !names.contains(&inst.as_str()) {
            return Err(format!(
                "argument `--dependency {inst}=...`: {} has no resilience4j instance named `{inst}` (instances: {})",
                opts.shown,
                if names.is_empty() { "none".to_string() } else { names.join(", ") }
            ));
        }
    }
    let dep_of = |inst: &str| -> (String, String) {
        match opts.dependencies.iter().rev().find(|(i, _)| i == inst) {
            Some((_, d)) => (d.clone(), format!("instance {inst}, mapped by --dependency {inst}={d}")),
            None => (
                inst.to_string(),
                format!(
                    "instance {inst}: the dependency of the same name (--dependency {inst}=DEPENDENCY to change it)"
                ),
            ),
        }
    };

    let p = opts.policy;
    let mut frag = Fragment::default();
    frag.header.push("faultline import resilience4j (semantics of resilience4j-framework-common 2.x, Spring Boot binding; docs/import.md)".into());
    frag.header.push(format!("file: {}", opts.name));
    for (inst, _) in names.iter().map(|n| (n, ())) {
        let (d, _) = dep_of(inst);
        frag.header.push(format!("instance {inst} -> dependency {d}"));
    }
    frag.header.push(format!("profiles active: {}", file.active));
    for why in &file.set_aside {
        not_mapped.push(format!("the document at {why}"));
    }
    if outside > 0 {
        frag.header.push(format!("keys outside resilience4j.* (not read): {outside}"));
    }

    // The policy's own fields: TimeLimiter -> timeout_ms.
    let policy_fields = vec![time_limiter(&src, conf(Module::TimeLimiter), &mut not_mapped)?];
    frag.tables.push(Table { header: format!("[policy.{p}]"), fields: policy_fields });

    let (retry, backoff) = retry(&src, conf(Module::Retry), &mut not_mapped)?;
    frag.tables.push(Table { header: format!("[policy.{p}.retry]"), fields: retry });
    if !backoff.is_empty() {
        frag.tables.push(Table { header: format!("[policy.{p}.retry.backoff]"), fields: backoff });
    }

    let cb = conf(Module::CircuitBreaker);
    for (inst, props) in &cb.instances {
        let levels = breaker_chain(&src, cb, inst, props)?;
        let (dep, why) = dep_of(inst);
        let mut fields = vec![
            field("kind", quote("resilience4j"), format!("resilience4j.circuitbreaker instance {inst}")),
            field("dependency", quote(&dep), why),
            field("ignore", "[]".into(), "resilience4j records every exception as a failure by default (recordExceptions/ignoreExceptions are NOT MAPPED)".into()),
        ];
        fields.extend(spec_fields(&src, &levels, BREAKER)?);
        fields.push(open_wait(&src, &levels, &mut not_mapped, inst)?);
        frag.tables.push(Table { header: format!("[[policy.{p}.circuit_breaker]]"), fields });
    }
    let bh = conf(Module::Bulkhead);
    for (inst, props) in &bh.instances {
        let mut levels = Vec::new();
        plain_chain(&src, bh, inst, Origin::Instance, props, &mut levels, &mut Vec::new())?;
        let (dep, why) = dep_of(inst);
        let mut fields = vec![
            field("key", quote("dependency"), format!("resilience4j.bulkhead instance {inst} (a SemaphoreBulkhead)")),
            field("dependency", quote(&dep), why),
        ];
        fields.extend(spec_fields(&src, &levels, BULKHEAD)?);
        frag.tables.push(Table { header: format!("[[policy.{p}.bulkhead]]"), fields });
    }
    let rl = conf(Module::RateLimiter);
    for (inst, props) in &rl.instances {
        let mut levels = Vec::new();
        plain_chain(&src, rl, inst, Origin::Instance, props, &mut levels, &mut Vec::new())?;
        let (dep, why) = dep_of(inst);
        let mut fields = vec![field("dependency", quote(&dep), format!("resilience4j.ratelimiter {why}"))];
        fields.extend(spec_fields(&src, &levels, &RATE_LIMITER[..1])?);
        fields.push(refresh_period(&src, &levels)?);
        fields.extend(spec_fields(&src, &levels, &RATE_LIMITER[1..])?);
        frag.tables.push(Table { header: format!("[[policy.{p}.rate_limiter]]"), fields });
    }
    frag.not_mapped = not_mapped;
    Ok(frag)
}

/// resilience4j's Spring configuration builds every `configs.<name>` and every instance when the
/// application starts (CircuitBreakerConfiguration and its siblings create the registry from all
/// configs, then each instance), so a bad value refuses the application even where no instance
/// uses it: checked here for every level of the modules read through a table of specs.
fn check_every_level(src: &Src, modules: &BTreeMap<Module, ModuleConf>) -> Result<(), String> {
    for (module, conf) in modules {
        let specs = match module {
            Module::CircuitBreaker => BREAKER,
            Module::Bulkhead => BULKHEAD,
            Module::RateLimiter => RATE_LIMITER,
            Module::Retry | Module::ThreadPoolBulkhead | Module::TimeLimiter => continue,
        };
        let levels = conf.configs.values().chain(conf.instances.iter().map(|(_, props)| props));
        for props in levels {
            for spec in specs {
                if let Some(e) = props.get(&relaxed(spec.prop)) {
                    typed(src, e, spec.ty)?;
                }
            }
        }
    }
    Ok(())
}

/// configureCircuitBreakerOpenStateIntervalFunction: the first level whose
/// waitDurationInOpenState is at least 1 ms sets it; both growth flags at one level are refused.
fn open_wait(src: &Src, levels: &[Level], not_mapped: &mut Vec<String>, inst: &str) -> Result<Field, String> {
    for l in levels {
        let on = |prop: &str| -> Result<Option<&Entry>, String> {
            match l.props.get(prop) {
                Some(e) if boolean(&e.value).map_err(|m| src.err(e, m))? => Ok(Some(e)),
                _ => Ok(None),
            }
        };
        if let (Some(_), Some(r)) = (on("enableexponentialbackoff")?, on("enablerandomizedwait")?) {
            return Err(src.err(
                r,
                "you can not enable Exponential backoff policy and randomized delay at the same time (resilience4j's IllegalStateException)",
            ));
        }
    }
    for l in levels {
        if let Some(e) = l.props.get("waitdurationinopenstate").filter(|e| !e.value.is_empty()) {
            let ms = duration_ms(&e.value).map_err(|m| src.err(e, m))?;
            if ms.floor() >= 1.0 {
                let grows = ["enableexponentialbackoff", "enablerandomizedwait"]
                    .iter()
                    .any(|k| l.props.get(*k).is_some_and(|f| boolean(&f.value) == Ok(true)));
                if grows {
                    not_mapped.push(format!("circuitbreaker {inst}: its OPEN waits follow an interval function from {}; written as its first (or mean) wait", l.origin.describe()));
                }
                return Ok(field("wait_duration_in_open_state_ms", toml_number(ms.floor()), cite(src, e, &l.origin)));
            }
        }
    }
    Ok(field("wait_duration_in_open_state_ms", "60000".into(), "resilience4j's default waitDurationInOpenState = 60 s (CircuitBreakerConfig.DEFAULT_WAIT_DURATION_IN_OPEN_STATE); a wait under 1 ms is ignored there".into()))
}

/// limitRefreshPeriod: resilience4j's default 500 ns is below faultline's 1 us clock.
fn refresh_period(src: &Src, levels: &[Level]) -> Result<Field, String> {
    let Some((e, o)) = find(levels, "limitrefreshperiod") else {
        return Ok(field("limit_refresh_period_ms", "0.001".into(), "resilience4j's default limitRefreshPeriod = 500 ns (RateLimiterConfig), below faultline's 1 us clock: 1 us".into()));
    };
    let ms = duration_ms(&e.value).map_err(|m| src.err(e, m))?;
    if ms <= 0.0 {
        return Err(src.err(e, format!("must be above 0, found {} (resilience4j refuses it)", e.value)));
    }
    if ms < 0.001 {
        return Ok(field(
            "limit_refresh_period_ms",
            "0.001".into(),
            format!("{}; below faultline's 1 us clock: 1 us", cite(src, e, o)),
        ));
    }
    Ok(field("limit_refresh_period_ms", toml_number(ms), cite(src, e, o)))
}

/// One TimeLimiter (or several with one timeout) -> the policy's per-attempt timeout_ms.
fn time_limiter(src: &Src, conf: &ModuleConf, not_mapped: &mut Vec<String>) -> Result<Field, String> {
    let mut each = Vec::new();
    for (inst, props) in &conf.instances {
        let mut levels = Vec::new();
        plain_chain(src, conf, inst, Origin::Instance, props, &mut levels, &mut Vec::new())?;
        let f = match find(&levels, "timeoutduration") {
            Some((e, o)) => {
                let ms = typed(src, e, Ty::Ms)?;
                if ms.parse::<f64>().is_ok_and(|v| v == 0.0) {
                    // TimeLimiterConfig takes a zero timeout: every call times out at once.
                    // faultline's 0 means no timeout, so the smallest one stands for it.
                    field(
                        "timeout_ms",
                        "0.001".into(),
                        format!(
                            "timelimiter {inst}: {}; 0 times every call out at once in resilience4j, faultline's 0 is no timeout: 1 us",
                            cite(src, e, o)
                        ),
                    )
                } else {
                    field("timeout_ms", ms, format!("timelimiter {inst}: {}", cite(src, e, o)))
                }
            }
            None => field(
                "timeout_ms",
                "1000".into(),
                format!("timelimiter {inst}: resilience4j's default timeoutDuration = 1 s (TimeLimiterConfig)"),
            ),
        };
        each.push((inst.clone(), f));
    }
    match each.len() {
        0 => Ok(field(
            "timeout_ms",
            "0".into(),
            "no resilience4j.timelimiter instance: resilience4j sets no time limit on a call".into(),
        )),
        1 => Ok(each.remove(0).1),
        _ if each.iter().all(|(_, f)| f.value == each[0].1.value) => {
            let (_, mut f) = each.remove(0);
            f.comment = format!("{}; every timelimiter instance has this timeout", f.comment);
            Ok(f)
        }
        _ => {
            for (inst, f) in &each {
                not_mapped.push(format!("timelimiter {inst}: timeout {} ms; the instances differ and faultline's timeout_ms is the policy's (per step with steps.<id>, not per dependency)", f.value));
            }
            Ok(field(
                "timeout_ms",
                "0".into(),
                "the timelimiter instances differ (NOT MAPPED): no timeout written".into(),
            ))
        }
    }
}

/// One Retry (or several that resolve alike) -> the policy's retry; otherwise none.
fn retry(src: &Src, conf: &ModuleConf, not_mapped: &mut Vec<String>) -> Result<(Vec<Field>, Vec<Field>), String> {
    let mut each = Vec::new();
    for (inst, props) in &conf.instances {
        let mut levels = Vec::new();
        plain_chain(src, conf, inst, Origin::Instance, props, &mut levels, &mut Vec::new())?;
        each.push((inst.clone(), retry_instance(src, &levels, inst)?));
    }
    let same = |a: &[Field], b: &[Field]| a.iter().map(|f| &f.value).eq(b.iter().map(|f| &f.value));
    match each.len() {
        0 => Ok((
            vec![field(
                "max_attempts",
                "1".into(),
                "no resilience4j.retry instance: resilience4j does not retry".into(),
            )],
            Vec::new(),
        )),
        n if n == 1 || each.iter().all(|(_, (r, b))| same(r, &each[0].1.0) && same(b, &each[0].1.1)) => {
            let names: Vec<&str> = each.iter().map(|(n, _)| n.as_str()).collect();
            not_mapped.push(format!(
                "retry {}: faultline's retry is the policy's, so it applies to every step of the scenario, not only the instance's dependency; resilience4j retries every exception by default, faultline only RATE_LIMITED, OVERLOADED and TRANSIENT_TRANSPORT (other kinds are never retried, scenario.md 8.1)",
                names.join(", ")
            ));
            Ok(each.remove(0).1)
        }
        _ => {
            for (inst, (r, _)) in &each {
                not_mapped.push(format!("retry {inst}: max_attempts {}: the retry instances differ and faultline's retry is the policy's (per step with steps.<id>, not per dependency)", r[0].value));
            }
            Ok((
                vec![field(
                    "max_attempts",
                    "1".into(),
                    "the retry instances differ (NOT MAPPED): no retries written".into(),
                )],
                Vec::new(),
            ))
        }
    }
}

/// createRetryConfig + configureRetryIntervalFunction for one instance's chain.
fn retry_instance(src: &Src, levels: &[Level], inst: &str) -> Result<(Vec<Field>, Vec<Field>), String> {
    let mut retry = Vec::new();
    let attempts = match find(levels, "maxattempts") {
        Some((e, o)) => {
            let n = integer(&e.value).map_err(|m| src.err(e, m))?;
            if n < 1 {
                return Err(src.err(
                    e,
                    "maxAttempts must be greater than or equal to 1. (resilience4j's IllegalArgumentException)",
                ));
            }
            if n > 20 {
                return Err(src.err(e, format!("{n} attempts is above faultline's max_attempts bound of 20")));
            }
            retry.push(field("max_attempts", n.to_string(), cite(src, e, o)));
            n
        }
        None => {
            retry.push(field(
                "max_attempts",
                "3".into(),
                "resilience4j's default maxAttempts = 3 (RetryConfig.DEFAULT_MAX_ATTEMPTS)".into(),
            ));
            3
        }
    };
    retry.push(field(
        "honor_retry_after",
        "false".into(),
        format!("retry {inst}: resilience4j's IntervalFunction knows no Retry-After"),
    ));

    // The level that sets waitDuration builds the interval function; the flags, multiplier and
    // maximum come from it or the levels below it (mergePropertiesIfAny), the factor from it only.
    let Some(at) = levels.iter().position(|l| l.props.get("waitduration").is_some_and(|e| !e.value.is_empty())) else {
        let b = vec![
            field(
                "kind",
                quote("constant"),
                "resilience4j's default interval: IntervalFunction.ofDefaults(), a fixed 500 ms".into(),
            ),
            field(
                "base_ms",
                "500".into(),
                "resilience4j's default waitDuration = 500 ms (IntervalFunction.DEFAULT_INITIAL_INTERVAL)".into(),
            ),
            field("jitter", quote("none"), "a fixed wait".into()),
        ];
        return Ok((retry, b));
    };
    let wait = &levels[at].props["waitduration"];
    let wait_ms = duration_ms(&wait.value).map_err(|m| src.err(wait, m))?;
    if wait_ms < 0.0 {
        return Err(src.err(wait, format!("Illegal argument waitDuration: {} is negative (resilience4j)", wait.value)));
    }
    let below = &levels[at..];
    let exp = flag(src, below, "enableexponentialbackoff")?;
    let rand = flag(src, below, "enablerandomizedwait")?;
    let wait_c = cite(src, wait, &levels[at].origin);
    if !exp && !rand {
        return Ok((
            retry,
            vec![
                field("kind", quote("constant"), format!("fixed waits (no exponential or randomized flag): {wait_c}")),
                field("base_ms", toml_number(wait_ms), wait_c),
                field("jitter", quote("none"), "a fixed wait".into()),
            ],
        ));
    }
    if wait_ms.floor() < 1.0 {
        return Err(src.err(
            wait,
            format!(
                "Illegal argument interval: {} millis is less than 1 (resilience4j's IntervalFunction)",
                wait_ms.floor()
            ),
        ));
    }
    let flags_c = |prop: &str| find(below, prop).map(|(e, o)| cite(src, e, o)).unwrap_or_default();
    // CommonRetryConfigurationProperties.configureRetryIntervalFunction picks the
    // IntervalFunction by which of multiplier, factor and maximum are set, and a maximum or a
    // factor it does not pass is ignored: `ofExponentialBackoff(wait)` has no cap and multiplier
    // 1.5, `ofExponentialRandomBackoff(wait, mult)` no cap and factor 0.5.
    let multiplier = find(below, "exponentialbackoffmultiplier");
    let factor = levels[at].props.get("randomizedwaitfactor").filter(|e| !e.value.is_empty());
    let maximum = find(below, "exponentialmaxwaitduration");
    let uses_max = exp && multiplier.is_some() && (!rand || factor.is_some());
    let uses_factor = rand && (!exp || multiplier.is_some());
    let mut b = Vec::new();
    if exp {
        let (m, m_c) = match multiplier {
            Some((e, o)) => {
                let m = float(&e.value).map_err(|x| src.err(e, x))?;
                if !(m > 0.0 && m <= 100.0) {
                    return Err(src.err(e, format!("multiplier {m} is outside faultline's (0, 100]")));
                }
                (m, cite(src, e, o))
            }
            None => (
                1.5,
                "resilience4j's default exponentialBackoffMultiplier = 1.5 (IntervalFunction.DEFAULT_MULTIPLIER)"
                    .into(),
            ),
        };
        b.push(field("kind", quote("exponential"), flags_c("enableexponentialbackoff")));
        b.push(field("base_ms", toml_number(wait_ms), wait_c.clone()));
        // The largest wait that can happen when nothing caps it: the last retry's, or the
        // first when the multiplier shrinks the waits.
        let retries = (attempts - 2).max(0);
        let largest = wait_ms * m.max(1.0).powi(retries as i32);
        let uncapped = |why: &str| {
            (
                largest,
                format!(
                    "{why}: unbounded in resilience4j; {attempts} attempts wait at most {} ms, written as the cap",
                    toml_number(largest)
                ),
            )
        };
        let (max_ms, max_c) = match maximum {
            Some((e, o)) if uses_max => {
                let ms = duration_ms(&e.value).map_err(|x| src.err(e, x))?;
                if ms.floor() < 1.0 {
                    return Err(src.err(
                        e,
                        format!(
                            "Illegal argument interval: {} millis is less than 1 (resilience4j's IntervalFunction)",
                            ms.floor()
                        ),
                    ));
                }
                let mut c = cite(src, e, o);
                if rand {
                    c.push_str("; resilience4j caps after randomizing (no sleep above it), faultline randomizes the capped wait (NOT MAPPED)");
                }
                (ms, c)
            }
            Some((e, _)) => uncapped(&format!(
                "{} is ignored: resilience4j passes exponentialMaxWaitDuration only with exponentialBackoffMultiplier{} set",
                src.at(e),
                if rand { " and randomizedWaitFactor" } else { "" }
            )),
            None => uncapped("no exponentialMaxWaitDuration"),
        };
        if max_ms < wait_ms {
            // min(interval, max) is the maximum at every retry (until a shrinking multiplier
            // takes the interval below it).
            let shrinks = if m < 1.0 { "; later waits shrink below it with multiplier < 1 (NOT MAPPED)" } else { "" };
            b[0] = field(
                "kind",
                quote("constant"),
                format!(
                    "exponentialMaxWaitDuration is below waitDuration: every wait is the maximum{shrinks}; {}",
                    flags_c("enableexponentialbackoff")
                ),
            );
            b[1] = field("base_ms", toml_number(max_ms), max_c);
        } else {
            b.push(field("max_ms", toml_number(max_ms), max_c));
            b.push(field("multiplier", toml_number(m), m_c));
        }
    } else {
        b.push(field(
            "kind",
            quote("constant"),
            "randomized waits around a fixed wait (IntervalFunction.ofRandomized)".into(),
        ));
        b.push(field("base_ms", toml_number(wait_ms), wait_c.clone()));
    }
    if rand {
        let (f, f_c) = match factor {
            Some(e) if uses_factor => {
                let f = float(&e.value).map_err(|x| src.err(e, x))?;
                // InstanceProperties.setRandomizedWaitFactor: "is not in range [0..1)".
                if !(0.0..1.0).contains(&f) {
                    return Err(src.err(e, format!("Illegal argument randomizedWaitFactor: {f} is not in range [0..1) (resilience4j)")));
                }
                (f, cite(src, e, &levels[at].origin))
            }
            Some(e) => (0.5, format!("{} is ignored: with exponential backoff resilience4j passes randomizedWaitFactor only with exponentialBackoffMultiplier set; its default 0.5 (IntervalFunction.DEFAULT_RANDOMIZATION_FACTOR)", src.at(e))),
            None => (0.5, "resilience4j's default randomizedWaitFactor = 0.5 (IntervalFunction.DEFAULT_RANDOMIZATION_FACTOR; not inherited: mergePropertiesIfAny leaves it out)".into()),
        };
        b.push(field("jitter", quote("randomized"), flags_c("enablerandomizedwait")));
        b.push(field("randomization_factor", toml_number(f), f_c));
    } else {
        b.push(field("jitter", quote("none"), "no randomized wait".into()));
    }
    Ok((retry, b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::import::spring::{read_properties, read_yaml};
    use crate::experiment::import::spring_profiles::activate;

    fn run(yaml: &str) -> Result<String, String> {
        let file = activate(&read_yaml(yaml).map_err(|e| format!("{e:?}"))?.documents, &[]).unwrap();
        import(&file, &R4jOptions { shown: "a.yml", name: "a.yml", policy: "p", dependencies: &[] })
            .map(|f| f.to_toml())
    }

    #[test]
    fn a_breaker_with_a_base_config_skips_configs_default_but_a_retry_does_not() {
        let y = "resilience4j:\n  circuitbreaker:\n    configs:\n      default: {failureRateThreshold: 30, slidingWindowSize: 7}\n      shared: {minimumNumberOfCalls: 5}\n    instances:\n      a: {baseConfig: shared}\n  retry:\n    configs:\n      default: {maxAttempts: 4}\n      shared: {waitDuration: 1s}\n    instances:\n      a: {baseConfig: shared}\n";
        let t = run(y).unwrap();
        assert!(t.contains("failure_rate_threshold = 50 "), "{t}");
        assert!(t.contains("sliding_window_size = 100 "), "{t}");
        assert!(t.contains("minimum_number_of_calls = 5 "), "{t}");
        assert!(t.contains("max_attempts = 4 "), "{t}");
        assert!(t.contains("base_ms = 1000 "), "{t}");
    }

    #[test]
    fn properties_and_yaml_agree() {
        let p = activate(&read_properties("resilience4j.retry.instances.a.max-attempts=2\n").unwrap().documents, &[])
            .unwrap();
        let f = import(&p, &R4jOptions { shown: "a", name: "a", policy: "p", dependencies: &[] }).unwrap();
        assert!(f.to_toml().contains("max_attempts = 2 "));
    }
}
