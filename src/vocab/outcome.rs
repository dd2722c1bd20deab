//! How a root run ended (docs/essay.md section 5); the names are as in `outcome_total.<name>`.

crate::named_enum! {
    #[derive(PartialOrd, Ord)]
    pub enum Outcome {
        Succeeded => "succeeded",
        /// A soft step was omitted or a fallback used.
        Degraded => "degraded",
        /// Handed to a human (an unknown write effect, a policy that stops).
        Handoff => "handoff",
        Failed => "failed",
        /// Refused at admission: never started.
        Rejected => "rejected",
        /// A human refused the run's approval step (docs/essay.md section 4).
        ApprovalRefused => "approval_refused",
        /// The run's approval request lapsed at its business expiry before anyone decided.
        ApprovalExpired => "approval_expired",
        /// The root deadline came while the run waited for a human: it was handed to an
        /// asynchronous task that keeps waiting (not a deadline miss: the user was told on time).
        AwaitingApproval => "awaiting_approval",
    }
}

crate::named_enum! {
    /// What a degraded result lacks; the names are as in `degraded_total.<name>`.
    pub enum DegradedReason {
        /// A step's fallback answered (the cheaper model, the approved snapshot).
        FallbackUsed => "fallback_used",
        /// A soft step failed and was left out.
        StepOmitted => "step_omitted",
        /// The degradation mode did not start a soft step (the result says so).
        OmittedByMode => "omitted_by_mode",
        /// A fallback candidate answered from a reduced context (`context_reduction`): the
        /// part it was not sent is missing from the result.
        ContextReduced => "context_reduced",
        /// A cached entry past its fresh TTL answered under stale-if-error, marked with its
        /// time and source (a cache contract with provenance_required).
        StaleCache => "stale_cache",
    }
}

crate::named_enum! {
    /// What a run's retrieved evidence was (docs/essay.md section 18), worst over its steps;
    /// the names are as in `evidence_run_total.<name>`.
    #[derive(PartialOrd, Ord)]
    pub enum EvidenceLevel {
        /// Retrieved from the live source.
        Live => "live",
        /// An approved snapshot within the step's freshness limit.
        ApprovedSnapshot => "approved_snapshot",
        /// A snapshot past its freshness limit: a draft at most, never the basis of an answer.
        Stale => "stale",
        /// A retrieval step was left out.
        None => "none",
    }
}

impl DegradedReason {
    /// The reason's bit in a run's set of reasons.
    pub fn bit(self) -> u8 {
        1 << self.index()
    }
}

impl Outcome {
    /// The outcomes only a scenario with an approval dependency can have: their metrics exist
    /// only then, so other scenarios keep their outputs.
    pub fn needs_approval(self) -> bool {
        match self {
            Outcome::ApprovalRefused | Outcome::ApprovalExpired | Outcome::AwaitingApproval => true,
            Outcome::Succeeded | Outcome::Degraded | Outcome::Handoff | Outcome::Failed | Outcome::Rejected => false,
        }
    }

    /// Counts as goodput: the user got an answer.
    pub fn is_success(self) -> bool {
        match self {
            Outcome::Succeeded | Outcome::Degraded => true,
            Outcome::Handoff
            | Outcome::Failed
            | Outcome::Rejected
            | Outcome::ApprovalRefused
            | Outcome::ApprovalExpired
            | Outcome::AwaitingApproval => false,
        }
    }

    /// Safe unless it caused a duplicate effect: an answer, an honest hand-off or an up-front
    /// refusal. A plain failure is not safe (the user sees an error). A human's refusal, a
    /// lapsed approval and a run handed on to wait for one are honest answers: safe.
    pub fn is_safe(self) -> bool {
        match self {
            Outcome::Succeeded
            | Outcome::Degraded
            | Outcome::Handoff
            | Outcome::Rejected
            | Outcome::ApprovalRefused
            | Outcome::ApprovalExpired
            | Outcome::AwaitingApproval => true,
            Outcome::Failed => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_follow_all() {
        for (i, o) in Outcome::ALL.into_iter().enumerate() {
            assert_eq!(o.index(), i);
        }
        assert_eq!(Outcome::COUNT, 8);
    }
}
