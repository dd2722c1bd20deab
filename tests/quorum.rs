//! k-of-n quorum with correlated failures, from outside: the share of quorums that agree on a
//! wrong answer, drawn from seeded streams through the pure machine, against the closed forms
//! (independent errors: 3q^2(1 - q) + q^3 for 2-of-3; with a shared cause s over every branch:
//! s + (1 - s)(3q^2(1 - q) + q^3); shared by only one branch: s(1 - (1 - q)^2) + (1 - s)(...)),
//! and a quorum that agrees on a wrong answer is never counted as a success.

use faultline::runtime::quorum::{BranchAnswer, QuorumOutcome, QuorumSpec, decide};
use faultline::sim::StreamKey;

/// The share of `trials` quorums of `spec` that end `AgreedWrong`, branch i sharing the cause
/// when `sharing[i]`, and the share that end `AgreedRight`.
fn shares(spec: &QuorumSpec, sharing: &[bool], trials: u32, seed: u64) -> (f64, f64) {
    let (mut wrong, mut right) = (0u32, 0u32);
    for t in 0..trials {
        let mut stream = StreamKey::root(seed).with(u64::from(t)).stream();
        let shared_u = stream.unit();
        let branch_u: Vec<f64> = (0..spec.n).map(|_| stream.unit()).collect();
        match decide(spec, &spec.answers(shared_u, &branch_u, sharing).unwrap()) {
            QuorumOutcome::AgreedWrong => wrong += 1,
            QuorumOutcome::AgreedRight => right += 1,
            QuorumOutcome::NoQuorum => {}
        }
    }
    (f64::from(wrong) / f64::from(trials), f64::from(right) / f64::from(trials))
}

/// |observed - expected| within 4 binomial standard errors (about 1 in 16 000 by chance).
fn close(label: &str, observed: f64, expected: f64, trials: u32) {
    let se = (expected * (1.0 - expected) / f64::from(trials)).sqrt();
    assert!((observed - expected).abs() <= 4.0 * se, "{label}: {observed} against {expected} (se {se})");
}

const TRIALS: u32 = 200_000;

#[test]
fn two_of_three_with_independent_errors_agrees_wrong_at_3q2_minus_2q3() {
    let q: f64 = 0.1;
    let spec = QuorumSpec { n: 3, k: 2, wrong: q, shared: 0.0 };
    let (wrong, right) = shares(&spec, &[true; 3], TRIALS, 1);
    let expected = 3.0 * q * q * (1.0 - q) + q.powi(3); // 0.028
    close("independent", wrong, expected, TRIALS);
    close("right", right, 1.0 - expected, TRIALS);
    // One branch alone is wrong at q = 0.1; the quorum cuts that to 0.028.
    assert!(wrong < 0.05);
}

#[test]
fn a_shared_retrieval_result_makes_the_quorum_agree_on_its_error() {
    let (q, s): (f64, f64) = (0.1, 0.05);
    let spec = QuorumSpec { n: 3, k: 2, wrong: q, shared: s };
    let independent = 3.0 * q * q * (1.0 - q) + q.powi(3);
    let (wrong, _) = shares(&spec, &[true; 3], TRIALS, 2);
    close("all share", wrong, s + (1.0 - s) * independent, TRIALS); // 0.0766
    // Two branches sharing the prompt are enough for 2-of-3 to agree on its error.
    let (two, _) = shares(&spec, &[true, true, false], TRIALS, 3);
    close("two share", two, s + (1.0 - s) * independent, TRIALS);
    // Distinct failure domains: only one branch shares the cause, and the other two must both
    // be right to outvote it.
    let (one, _) = shares(&spec, &[true, false, false], TRIALS, 4);
    let expected_one = s * (1.0 - (1.0 - q).powi(2)) + (1.0 - s) * independent;
    close("one shares", one, expected_one, TRIALS); // 0.0361
    assert!(one < wrong - 0.03, "distinct domains agree wrong less often: {one} against {wrong}");
    // The closed form the library states is the one drawn.
    close("library", wrong, spec.p_agreed_wrong(), TRIALS);
}

#[test]
fn an_agreed_wrong_answer_is_never_a_success_and_failures_leave_no_quorum() {
    let spec = QuorumSpec { n: 3, k: 2, wrong: 0.0, shared: 1.0 };
    let (wrong, right) = shares(&spec, &[true; 3], 1_000, 5);
    assert_eq!((wrong, right), (1.0, 0.0), "a certain shared cause: every quorum agrees, wrongly");
    use BranchAnswer::*;
    assert_eq!(decide(&spec, &[Right, Failed, Wrong]), QuorumOutcome::NoQuorum);
    assert_eq!(
        decide(&QuorumSpec { n: 5, k: 3, wrong: 0.1, shared: 0.0 }, &[Wrong, Wrong, Right, Wrong]),
        QuorumOutcome::AgreedWrong
    );
}

#[test]
fn a_quorums_draws_must_cover_its_branches() {
    // Before: the lists were zipped, so two draws for three branches gave two answers and a
    // 2-of-3 quorum of [Right, Failed-by-omission] looked like no quorum.
    let spec = QuorumSpec { n: 3, k: 2, wrong: 0.0, shared: 0.0 };
    assert_eq!(
        spec.answers(0.5, &[0.9, 0.9, 0.9], &[false; 3]).map(|a| decide(&spec, &a)),
        Ok(QuorumOutcome::AgreedRight)
    );
    for (draws, sharing) in
        [(&[0.9, 0.9][..], &[false; 3][..]), (&[0.9; 3][..], &[false; 2][..]), (&[0.9; 4][..], &[false; 4][..])]
    {
        let err = spec.answers(0.5, draws, sharing).unwrap_err();
        assert!(err.contains("2-of-3") && err.contains("per branch"), "{err}");
    }
}
