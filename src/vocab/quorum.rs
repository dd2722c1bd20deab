//! How a k-of-n quorum step ended (docs/essay.md section 22, `runtime/quorum.rs`); the names
//! are as in `quorum_total.<name>`. A closed set of its own: these outcomes exist only in
//! scenarios with a quorum step, and every other scenario keeps the metrics it always had.

crate::named_enum! {
    pub enum QuorumVerdict {
        /// k branches agreed on the right answer: the step succeeded.
        Met => "met",
        /// Too few branches agreed (failures, or a split): the step gave up.
        NotMet => "not_met",
        /// k branches agreed on a wrong answer: the step "succeeded" on it, and nothing in
        /// the runtime can tell (a bad result that reaches the answer undetected).
        WrongAgreement => "wrong_agreement",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_follow_all() {
        for (i, v) in QuorumVerdict::ALL.into_iter().enumerate() {
            assert_eq!(v.index(), i);
            assert_eq!(QuorumVerdict::parse(v.name()), Some(v));
        }
    }
}
