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
        DelegationLoop => "delegation_loop",
    }
}

impl FaultKind {
    /// Kinds that act on long-running tasks: their target needs a `[dependency.task]`.
    pub fn needs_task(self) -> bool {
        match self {
            FaultKind::StuckTask
            | FaultKind::InputRequired
            | FaultKind::IgnoredCancel
            | FaultKind::LateCancel
            | FaultKind::LateResult
            | FaultKind::LostHandle => true,
            FaultKind::Latency
            | FaultKind::Timeout
            | FaultKind::Errors
            | FaultKind::Capacity
            | FaultKind::Down
            | FaultKind::RateLimit
            | FaultKind::LostResponse
            | FaultKind::DelegationLoop => false,
        }
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
            | FaultKind::LostHandle => &["toxicity"],
            FaultKind::LateCancel | FaultKind::LateResult => &["latency_ms", "toxicity"],
            FaultKind::Errors => &["errors", "toxicity"],
            FaultKind::Capacity => &["servers"],
            FaultKind::RateLimit => &["per_s", "burst"],
            FaultKind::DelegationLoop => &["timeout_ms", "max_attempts", "toxicity"],
        }
    }
}
