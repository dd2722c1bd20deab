//! How a human approval ended, as its run saw it (docs/essay.md section 4); the names are as in
//! `approval_total.<name>`.

crate::named_enum! {
    pub enum ApprovalVerdict {
        /// A human approved within the business expiry: the run goes on.
        Approved => "approved",
        /// A human refused: the run ends `approval_refused`.
        Refused => "refused",
        /// No human decided within the business expiry: the request lapsed and the run ends
        /// `approval_expired`.
        Expired => "expired",
        /// The root deadline came before any of these: the run ends `awaiting_approval`,
        /// handed to an asynchronous task that keeps waiting for the decision.
        PendingAtDeadline => "pending_at_deadline",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_follow_all() {
        for (i, v) in ApprovalVerdict::ALL.into_iter().enumerate() {
            assert_eq!(v.index(), i);
        }
        assert_eq!(ApprovalVerdict::COUNT, 4);
    }
}
