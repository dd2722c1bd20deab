//! The closed set of fault kinds a scenario may inject, named as in Toxiproxy where it has one.

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FaultKind {
    Latency,
    Timeout,
    Errors,
    Capacity,
    Down,
    RateLimit,
    LostResponse,
}

impl FaultKind {
    pub const COUNT: usize = 7;
    /// In the order error messages list them.
    pub const ALL: [FaultKind; Self::COUNT] = [
        FaultKind::Latency,
        FaultKind::Timeout,
        FaultKind::Errors,
        FaultKind::Capacity,
        FaultKind::Down,
        FaultKind::RateLimit,
        FaultKind::LostResponse,
    ];

    /// The scenario spelling.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Latency => "latency",
            FaultKind::Timeout => "timeout",
            FaultKind::Errors => "errors",
            FaultKind::Capacity => "capacity",
            FaultKind::Down => "down",
            FaultKind::RateLimit => "rate_limit",
            FaultKind::LostResponse => "lost_response",
        }
    }

    pub fn parse(text: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|k| k.name() == text)
    }

    /// The optional `[[fault]]` fields this kind reads; any other one given is an error, so a
    /// misplaced field is never silently ignored.
    pub fn allowed_fields(self) -> &'static [&'static str] {
        match self {
            FaultKind::Latency => &["service_time", "factor", "latency_ms", "jitter_ms", "toxicity"],
            FaultKind::Timeout | FaultKind::LostResponse | FaultKind::Down => &["toxicity"],
            FaultKind::Errors => &["errors", "toxicity"],
            FaultKind::Capacity => &["servers"],
            FaultKind::RateLimit => &["per_s", "burst"],
        }
    }
}
