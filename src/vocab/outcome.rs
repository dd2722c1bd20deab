//! How a root run ended (essay section 3).

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    Succeeded,
    /// A soft step was omitted or a fallback used.
    Degraded,
    /// Handed to a human (an unknown write effect, a policy that stops).
    Handoff,
    Failed,
    /// Refused at admission: never started.
    Rejected,
}

impl Outcome {
    pub const COUNT: usize = 5;
    pub const ALL: [Outcome; Self::COUNT] =
        [Outcome::Succeeded, Outcome::Degraded, Outcome::Handoff, Outcome::Failed, Outcome::Rejected];

    pub fn index(self) -> usize {
        self as usize
    }

    /// As in `outcome_total.<name>`.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Succeeded => "succeeded",
            Outcome::Degraded => "degraded",
            Outcome::Handoff => "handoff",
            Outcome::Failed => "failed",
            Outcome::Rejected => "rejected",
        }
    }

    /// Counts as goodput: the user got an answer.
    pub fn is_success(self) -> bool {
        match self {
            Outcome::Succeeded | Outcome::Degraded => true,
            Outcome::Handoff | Outcome::Failed | Outcome::Rejected => false,
        }
    }

    /// Safe unless it caused a duplicate effect: an answer, an honest hand-off or an up-front
    /// refusal. A plain failure is not safe (the user sees an error).
    pub fn is_safe(self) -> bool {
        match self {
            Outcome::Succeeded | Outcome::Degraded | Outcome::Handoff | Outcome::Rejected => true,
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
    }
}
