//! k-of-n quorum over model or agent calls (docs/essay.md section 22: "a quorum is evidence of
//! reliability, not a guarantee of truth"), as a pure machine and its closed forms. A workflow
//! step's `quorum` table (`runtime/quorum_step.rs`) makes the run machine send its branches
//! and feed their answers to a [`QuorumTally`] (`runtime/run/quorum.rs`).
//!
//! The model. Each of the n branches answers right or wrong, or fails (an error, a timeout:
//! no answer to count). The answer space is binary, right or the one plausible wrong answer,
//! so two wrong branches agree with each other: the case the essay warns of, branches that
//! share a retrieval result or a prompt and are wrong together. A shared cause (the shared
//! retrieval result is bad, the shared prompt misleads) occurs with probability `shared` per
//! quorum and makes every branch that shares it wrong; otherwise each branch is wrong on its
//! own with probability `wrong`. The quorum agrees when k branches give the same answer; it
//! needs a strict majority (2k > n) so that two answers can never both reach it. A quorum that
//! agrees on the wrong answer is `AgreedWrong`, never a success.
//!
//! With every branch answering and sharing the cause, P(agreed wrong) is
//! s + (1 - s) x sum over j >= k of C(n, j) q^j (1 - q)^(n - j); for 2-of-3,
//! s + (1 - s) x (3 q^2 (1 - q) + q^3).

/// One branch's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BranchAnswer {
    Right,
    Wrong,
    /// No answer to count (an error, a timeout, a refusal).
    Failed,
}

/// What a quorum decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuorumOutcome {
    AgreedRight,
    /// k branches agreed on a wrong answer: counted as such, never as a success.
    AgreedWrong,
    /// Too few branches agree: no answer from the quorum.
    NoQuorum,
}

/// A quorum's shape and its error model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuorumSpec {
    pub n: u32,
    pub k: u32,
    /// Each branch's own probability of a wrong answer.
    pub wrong: f64,
    /// Probability of the shared cause that makes every sharing branch wrong.
    pub shared: f64,
}

impl QuorumSpec {
    /// Why the spec cannot be a quorum, if it cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.n == 0 || self.n > 15 {
            return Err(format!("n must be between 1 and 15, got {}", self.n));
        }
        if self.k == 0 || self.k > self.n || 2 * self.k <= self.n {
            return Err(format!("k must be a strict majority of n = {} (2k > n, k <= n), got {}", self.n, self.k));
        }
        for (name, p) in [("wrong", self.wrong), ("shared", self.shared)] {
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("{name} must be in [0, 1], got {p}"));
            }
        }
        Ok(())
    }

    /// The branches' answers from uniform draws: `shared_u` decides the shared cause,
    /// `branch_u[i]` branch i's own error, `sharing[i]` whether branch i shares the cause.
    /// Both lists have one entry per branch (n): a shorter one would silently drop branches
    /// and turn a quorum into no quorum.
    pub fn answers(&self, shared_u: f64, branch_u: &[f64], sharing: &[bool]) -> Result<Vec<BranchAnswer>, String> {
        let n = self.n as usize;
        if branch_u.len() != n || sharing.len() != n {
            return Err(format!(
                "a {}-of-{n} quorum needs one draw and one sharing flag per branch, got {} draws and {} flags",
                self.k,
                branch_u.len(),
                sharing.len()
            ));
        }
        let cause = shared_u < self.shared;
        Ok(branch_u
            .iter()
            .zip(sharing)
            .map(
                |(&u, &shares)| {
                    if (cause && shares) || u < self.wrong { BranchAnswer::Wrong } else { BranchAnswer::Right }
                },
            )
            .collect())
    }

    /// P(the quorum agrees on the wrong answer) when every branch answers and shares the cause.
    pub fn p_agreed_wrong(&self) -> f64 {
        let n = self.n;
        let tail: f64 = (self.k..=n)
            .map(|j| binomial(n, j) * self.wrong.powi(j as i32) * (1.0 - self.wrong).powi((n - j) as i32))
            .sum();
        self.shared + (1.0 - self.shared) * tail
    }

    /// P(the quorum agrees on the right answer) under the same conditions.
    pub fn p_agreed_right(&self) -> f64 {
        let n = self.n;
        let right = 1.0 - self.wrong;
        let tail: f64 =
            (self.k..=n).map(|j| binomial(n, j) * right.powi(j as i32) * self.wrong.powi((n - j) as i32)).sum();
        (1.0 - self.shared) * tail
    }
}

/// C(n, j) as a float (n <= 15: exact).
fn binomial(n: u32, j: u32) -> f64 {
    (0..j).fold(1.0, |c, i| c * f64::from(n - i) / f64::from(i + 1))
}

/// A quorum's count as its branches answer, deciding as soon as the outcome is certain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuorumTally {
    n: u32,
    k: u32,
    right: u32,
    wrong: u32,
    failed: u32,
}

impl QuorumTally {
    pub fn new(spec: &QuorumSpec) -> QuorumTally {
        QuorumTally { n: spec.n, k: spec.k, right: 0, wrong: 0, failed: 0 }
    }

    /// Branches that have answered (or failed) so far.
    pub fn heard(&self) -> u32 {
        self.right + self.wrong + self.failed
    }

    /// Counts one branch; returns the outcome once it is decided (the rest need not be awaited).
    pub fn record(&mut self, answer: BranchAnswer) -> Option<QuorumOutcome> {
        assert!(self.heard() < self.n, "a quorum hears each of its n branches once");
        match answer {
            BranchAnswer::Right => self.right += 1,
            BranchAnswer::Wrong => self.wrong += 1,
            BranchAnswer::Failed => self.failed += 1,
        }
        self.outcome()
    }

    /// The fewest further answers that could still decide by agreement: k less the larger
    /// of the two counts (at least 1 while undecided).
    pub fn need(&self) -> u32 {
        self.k.saturating_sub(self.right.max(self.wrong))
    }

    /// The outcome if it is decided: k agree, or too few are left for either answer to reach k.
    pub fn outcome(&self) -> Option<QuorumOutcome> {
        let left = self.n - self.heard();
        if self.right >= self.k {
            Some(QuorumOutcome::AgreedRight)
        } else if self.wrong >= self.k {
            Some(QuorumOutcome::AgreedWrong)
        } else if self.right + left < self.k && self.wrong + left < self.k {
            Some(QuorumOutcome::NoQuorum)
        } else {
            None
        }
    }
}

/// The outcome of one quorum whose branches answered `answers` in this order.
pub fn decide(spec: &QuorumSpec, answers: &[BranchAnswer]) -> QuorumOutcome {
    let mut tally = QuorumTally::new(spec);
    for &a in answers {
        if let Some(outcome) = tally.record(a) {
            return outcome;
        }
    }
    tally.outcome().unwrap_or(QuorumOutcome::NoQuorum)
}

/// A branch's chances of answering right or wrong on its own; it fails (no answer) otherwise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BranchOdds {
    pub right: f64,
    pub wrong: f64,
}

impl BranchOdds {
    fn failed(&self) -> f64 {
        (1.0 - self.right - self.wrong).max(0.0)
    }

    /// Under the shared cause every answer is wrong; failures stay failures.
    fn under_cause(&self) -> BranchOdds {
        BranchOdds { right: 0.0, wrong: self.right + self.wrong }
    }
}

/// P(at least k of n independent trials succeed, each with probability p).
fn at_least(n: u32, k: u32, p: f64) -> f64 {
    (k..=n).map(|j| binomial(n, j) * p.powi(j as i32) * (1.0 - p).powi((n - j) as i32)).sum()
}

/// The shares of k-of-n quorums that are met, not met, and agreed wrong, when every branch
/// shares the cause of probability `shared` and otherwise answers by `odds` on its own. The
/// tally's early decision does not change them: with a strict majority the first answer to
/// reach k is the one the full count would reach.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OutcomeShares {
    pub met: f64,
    pub not_met: f64,
    pub wrong_agreement: f64,
}

pub fn outcome_shares(n: u32, k: u32, odds: BranchOdds, shared: f64) -> OutcomeShares {
    let met = (1.0 - shared) * at_least(n, k, odds.right);
    let wrong_agreement =
        shared * at_least(n, k, odds.right + odds.wrong) + (1.0 - shared) * at_least(n, k, odds.wrong);
    OutcomeShares { met, not_met: 1.0 - met - wrong_agreement, wrong_agreement }
}

/// Expected branches sent and answers heard per quorum, when answers come back in the order
/// the branches were sent, each by `odds` (every branch sharing the cause of probability
/// `shared`). `as_needed`: k at first, then one more whenever those out cannot decide (the
/// run machine's rule); otherwise all n at once, and n - heard are cancelled. For 2-of-3 the
/// order does not matter: as needed the third is sent unless the first two agree
/// (3 - r^2 - w^2), and it is heard unless the first two decide, agreeing or both failed
/// (3 - r^2 - w^2 - f^2).
pub fn expected_branches(n: u32, k: u32, odds: BranchOdds, shared: f64, as_needed: bool) -> (f64, f64) {
    let (s1, h1) = walk(n, k, odds.under_cause(), as_needed);
    let (s0, h0) = walk(n, k, odds, as_needed);
    (shared * s1 + (1.0 - shared) * s0, shared * h1 + (1.0 - shared) * h0)
}

/// (E sent, E heard) from the start, by exhausting the answer sequences (n <= 15: 3^n paths at
/// most; the tests use small n).
fn walk(n: u32, k: u32, odds: BranchOdds, as_needed: bool) -> (f64, f64) {
    fn go(tally: QuorumTally, sent: u32, odds: BranchOdds, as_needed: bool) -> (f64, f64) {
        if tally.outcome().is_some() {
            return (f64::from(sent), f64::from(tally.heard()));
        }
        let mut sent = sent;
        while sent < tally.n && (!as_needed || sent - tally.heard() < tally.need()) {
            sent += 1;
        }
        let mut e = (0.0, 0.0);
        for (answer, p) in [
            (BranchAnswer::Right, odds.right),
            (BranchAnswer::Wrong, odds.wrong),
            (BranchAnswer::Failed, odds.failed()),
        ] {
            if p == 0.0 {
                continue;
            }
            let mut next = tally;
            next.record(answer);
            let (s, h) = go(next, sent, odds, as_needed);
            e = (e.0 + p * s, e.1 + p * h);
        }
        e
    }
    let spec = QuorumSpec { n, k, wrong: 0.0, shared: 0.0 };
    go(QuorumTally::new(&spec), 0, odds, as_needed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use BranchAnswer::*;

    fn spec(n: u32, k: u32, wrong: f64, shared: f64) -> QuorumSpec {
        QuorumSpec { n, k, wrong, shared }
    }

    #[test]
    fn two_of_three_decides_as_soon_as_it_can() {
        let s = spec(3, 2, 0.1, 0.0);
        let mut t = QuorumTally::new(&s);
        assert_eq!(t.record(Right), None);
        assert_eq!(t.record(Right), Some(QuorumOutcome::AgreedRight), "the third need not be awaited");
        assert_eq!(decide(&s, &[Wrong, Right, Wrong]), QuorumOutcome::AgreedWrong);
        assert_eq!(decide(&s, &[Wrong, Failed, Right]), QuorumOutcome::NoQuorum);
        // A failure and a wrong answer: only the wrong one can still reach 2; a right third ends it.
        let mut t = QuorumTally::new(&s);
        assert_eq!(t.record(Failed), None);
        assert_eq!(t.record(Wrong), None);
        assert_eq!(t.record(Right), Some(QuorumOutcome::NoQuorum));
        let mut t = QuorumTally::new(&s);
        t.record(Failed);
        assert_eq!(t.record(Failed), Some(QuorumOutcome::NoQuorum), "two failures of three: no quorum is possible");
    }

    #[test]
    fn a_quorum_needs_a_strict_majority() {
        assert!(spec(3, 2, 0.1, 0.0).check().is_ok());
        assert!(spec(4, 2, 0.1, 0.0).check().is_err(), "2 of 4 could agree on both answers");
        assert!(spec(3, 4, 0.1, 0.0).check().is_err());
        assert!(spec(3, 2, 1.1, 0.0).check().is_err());
        assert!(spec(0, 0, 0.1, 0.0).check().is_err());
    }

    #[test]
    fn the_closed_forms_of_two_of_three() {
        let q: f64 = 0.1;
        let independent = 3.0 * q * q * (1.0 - q) + q.powi(3);
        assert!((spec(3, 2, q, 0.0).p_agreed_wrong() - independent).abs() < 1e-15);
        let s = 0.05;
        assert!((spec(3, 2, q, s).p_agreed_wrong() - (s + (1.0 - s) * independent)).abs() < 1e-15);
        // Without failures every 2-of-3 quorum agrees on one answer or the other.
        let p = spec(3, 2, q, s);
        assert!((p.p_agreed_wrong() + p.p_agreed_right() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn the_closed_forms_of_a_quorum_with_failing_branches() {
        let q: f64 = 0.1;
        let odds = BranchOdds { right: 1.0 - q, wrong: 0.0 };
        let plain = outcome_shares(3, 2, odds, 0.0);
        assert!((plain.not_met - (3.0 * q * q - 2.0 * q.powi(3))).abs() < 1e-12, "{plain:?}");
        let shared = outcome_shares(3, 2, odds, 0.05);
        assert!((shared.not_met + shared.wrong_agreement - 0.0766).abs() < 1e-12, "{shared:?}");
        // As needed, the third goes out unless the first two agree (3 - 0.9^2: a first failure
        // sends it at once); it is heard unless the first two decide, agreeing or both failed
        // (3 - 0.9^2 - 0.1^2).
        let (sent, heard) = expected_branches(3, 2, odds, 0.0, true);
        assert!((sent - 2.19).abs() < 1e-12 && (heard - 2.18).abs() < 1e-12, "{sent} {heard}");
        let (sent, heard) = expected_branches(3, 2, odds, 0.0, false);
        assert!((sent - 3.0).abs() < 1e-12 && (heard - 2.18).abs() < 1e-12, "{sent} {heard}");
        let mut t = QuorumTally::new(&spec(3, 2, 0.0, 0.0));
        assert_eq!(t.need(), 2);
        t.record(Right);
        t.record(Wrong);
        assert_eq!(t.need(), 1);
    }

    #[test]
    fn a_shared_cause_makes_the_sharing_branches_wrong_together() {
        let s = spec(3, 2, 0.0, 0.5);
        assert_eq!(s.answers(0.4, &[0.9, 0.9, 0.9], &[true, true, false]), Ok(vec![Wrong, Wrong, Right]));
        assert_eq!(s.answers(0.6, &[0.9, 0.9, 0.9], &[true, true, true]), Ok(vec![Right, Right, Right]));
    }
}
