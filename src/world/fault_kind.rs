//! The closed set of fault kinds a scenario may inject, named as in Toxiproxy where it has one.

crate::named_enum! {
    /// In the order error messages list them; named as in scenario files.
    #[derive(PartialOrd, Ord, Hash)]
    pub enum FaultKind {
        Latency => "latency",
        Timeout => "timeout",
        Errors => "errors",
        Capacity => "capacity",
        Down => "down",
        RateLimit => "rate_limit",
        LostResponse => "lost_response",
        StuckTask => "stuck_task",
        InputRequired => "input_required",
        IgnoredCancel => "ignored_cancel",
        LateCancel => "late_cancel",
        LateResult => "late_result",
        LostHandle => "lost_handle",
        TruncatedResult => "truncated_result",
        EmptyResult => "empty_result",
        SchemaViolation => "schema_violation",
        StreamCut => "stream_cut",
        SlowStream => "slow_stream",
        PartialResult => "partial_result",
        StaleIndex => "stale_index",
        QuotaCut => "quota_cut",
        DelegationLoop => "delegation_loop",
        /// The cache in front of the target fails its lookups (world::cache).
        CacheOutage => "cache_outage",
        /// The cache in front of the target restarts empty at the fault's start.
        ColdCache => "cold_cache",
    }
}

/// What a fault's target must have for the fault to mean anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetNeed {
    Nothing,
    /// A `[dependency.task]` (long-running tasks).
    Task,
    /// A `[dependency.tokens]` table (a token-shaped model that streams).
    Tokens,
    /// A `[dependency.tokens]` table with a per-minute quota.
    Quota,
    /// `kind = "retrieval"` (a vector search).
    Retrieval,
    /// A `[dependency.cache]` table.
    Cache,
}

impl FaultKind {
    /// What the target must have.
    pub fn target_need(self) -> TargetNeed {
        match self {
            FaultKind::StreamCut | FaultKind::SlowStream => TargetNeed::Tokens,
            FaultKind::QuotaCut => TargetNeed::Quota,
            FaultKind::PartialResult | FaultKind::StaleIndex => TargetNeed::Retrieval,
            FaultKind::CacheOutage | FaultKind::ColdCache => TargetNeed::Cache,
            FaultKind::StuckTask
            | FaultKind::InputRequired
            | FaultKind::IgnoredCancel
            | FaultKind::LateCancel
            | FaultKind::LateResult
            | FaultKind::LostHandle => TargetNeed::Task,
            FaultKind::Latency
            | FaultKind::Timeout
            | FaultKind::Errors
            | FaultKind::Capacity
            | FaultKind::Down
            | FaultKind::RateLimit
            | FaultKind::LostResponse
            | FaultKind::TruncatedResult
            | FaultKind::EmptyResult
            | FaultKind::SchemaViolation
            | FaultKind::DelegationLoop => TargetNeed::Nothing,
        }
    }

    /// Kinds whose answers look like success (docs/scenario.md): they, `slow_stream` and
    /// `quota_cut` are the kinds `explore` draws only for a scenario that already uses them or a
    /// validator, so the schedules of every other scenario stay as they were.
    pub fn looks_like_success(self) -> bool {
        match self {
            FaultKind::TruncatedResult
            | FaultKind::EmptyResult
            | FaultKind::SchemaViolation
            | FaultKind::StreamCut
            | FaultKind::SlowStream
            | FaultKind::PartialResult
            | FaultKind::StaleIndex
            | FaultKind::QuotaCut => true,
            FaultKind::Latency
            | FaultKind::Timeout
            | FaultKind::Errors
            | FaultKind::Capacity
            | FaultKind::Down
            | FaultKind::RateLimit
            | FaultKind::LostResponse
            | FaultKind::StuckTask
            | FaultKind::InputRequired
            | FaultKind::IgnoredCancel
            | FaultKind::LateCancel
            | FaultKind::LateResult
            | FaultKind::LostHandle
            | FaultKind::DelegationLoop
            | FaultKind::CacheOutage
            | FaultKind::ColdCache => false,
        }
    }

    /// Kinds that act on long-running tasks: their target needs a `[dependency.task]`.
    pub fn needs_task(self) -> bool {
        self.target_need() == TargetNeed::Task
    }

    /// Kinds that act on a cache: their target needs a `[dependency.cache]`.
    pub fn needs_cache(self) -> bool {
        self.target_need() == TargetNeed::Cache
    }

    /// The optional `[[fault]]` fields this kind reads; any other one given is an error, so a
    /// misplaced field is never silently ignored.
    pub fn allowed_fields(self) -> &'static [&'static str] {
        match self {
            FaultKind::Latency => &["service_time", "factor", "latency_ms", "jitter_ms", "toxicity"],
            FaultKind::Down => &["toxicity", "retry_after_ms"],
            FaultKind::Timeout
            | FaultKind::LostResponse
            | FaultKind::StuckTask
            | FaultKind::InputRequired
            | FaultKind::IgnoredCancel
            | FaultKind::LostHandle
            | FaultKind::TruncatedResult
            | FaultKind::EmptyResult
            | FaultKind::SchemaViolation
            | FaultKind::StreamCut
            | FaultKind::PartialResult
            | FaultKind::StaleIndex
            | FaultKind::CacheOutage => &["toxicity"],
            FaultKind::SlowStream => &["factor", "toxicity"],
            FaultKind::QuotaCut => &["factor"],
            // Emptied once, at start_s; the window only shows when it happened.
            FaultKind::ColdCache => &[],
            FaultKind::LateCancel | FaultKind::LateResult => &["latency_ms", "toxicity"],
            FaultKind::Errors => &["errors", "toxicity"],
            FaultKind::Capacity => &["servers"],
            FaultKind::RateLimit => &["per_s", "burst"],
            FaultKind::DelegationLoop => &["timeout_ms", "max_attempts", "toxicity"],
        }
    }
}
