//! Results that look like success (AgentChaos's "faults that look like success"): an attempt
//! that ends well at its station, but whose answer is truncated, empty, breaks its schema, was
//! cut mid-stream, or comes from a vector search that returned part of its hits or searched a
//! stale index. The runtime sees a success; only a validator (runtime/validator.rs) can tell.
//!
//! Which fault makes an attempt's answer bad is drawn per fault from the attempt's own keyed
//! stream (`station::draw_bad_result`), at positions far past the ones its fate and service
//! time use, so adding these faults moves no other draw (common random numbers hold with and
//! without them).

use super::fault_kind::FaultKind;

crate::named_enum! {
    /// What is wrong with an answer that came back as a success; metric labels.
    #[derive(PartialOrd, Ord, Hash)]
    pub enum BadResult {
        Truncated => "truncated",
        Empty => "empty",
        SchemaViolation => "schema_violation",
        StreamCut => "stream_cut",
        PartialResult => "partial_result",
        StaleIndex => "stale_index",
    }
}

impl BadResult {
    /// The bad result a fault kind leaves on the answers it touches, if it leaves one.
    pub fn of_fault(kind: FaultKind) -> Option<BadResult> {
        match kind {
            FaultKind::TruncatedResult => Some(BadResult::Truncated),
            FaultKind::EmptyResult => Some(BadResult::Empty),
            FaultKind::SchemaViolation => Some(BadResult::SchemaViolation),
            FaultKind::StreamCut => Some(BadResult::StreamCut),
            FaultKind::PartialResult => Some(BadResult::PartialResult),
            FaultKind::StaleIndex => Some(BadResult::StaleIndex),
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
            | FaultKind::SlowStream
            | FaultKind::DelegationLoop
            | FaultKind::CacheOutage
            | FaultKind::ColdCache
            | FaultKind::QuotaCut => None,
        }
    }
}
