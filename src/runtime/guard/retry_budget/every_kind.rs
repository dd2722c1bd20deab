//! Tests that drive every retry budget kind through the one machine surface.

#[cfg(test)]
mod tests {
    use super::super::aws::AwsRetryQuota;
    use super::super::envoy::EnvoyRetryBudget;
    use super::super::finagle::FinagleRetryBudget;
    use super::super::grpc::GrpcRetryThrottle;
    use super::super::machine::{Attempt, RetryBudgetMachine};
    use crate::runtime::guard::contract::AttemptEnd;
    use crate::runtime::guard::testing::Lcg;
    use crate::sim::Micros;
    use crate::vocab::FailureKind;

    const OVERLOADED: AttemptEnd = AttemptEnd { failure: Some(FailureKind::Overloaded), duration_us: 1_000 };

    /// Every kind behind one test-only enum, so one sequence drives them all.
    enum AnyBudget {
        Grpc(GrpcRetryThrottle),
        Finagle(FinagleRetryBudget),
        Envoy(EnvoyRetryBudget),
        Aws(AwsRetryQuota),
    }

    impl AnyBudget {
        fn machine(&mut self) -> &mut dyn RetryBudgetMachine {
            match self {
                AnyBudget::Grpc(b) => b,
                AnyBudget::Finagle(b) => b,
                AnyBudget::Envoy(b) => b,
                AnyBudget::Aws(b) => b,
            }
        }
    }

    fn all_defaults() -> [AnyBudget; 4] {
        [
            AnyBudget::Grpc(GrpcRetryThrottle::new(Default::default()).unwrap()),
            AnyBudget::Finagle(FinagleRetryBudget::new(Default::default()).unwrap()),
            AnyBudget::Envoy(EnvoyRetryBudget::new(Default::default()).unwrap()),
            AnyBudget::Aws(AwsRetryQuota::new(Default::default()).unwrap()),
        ]
    }

    /// Sequential calls that fail at every attempt and retry once while the budget lets them:
    /// how many retries each kind lets through.
    fn retries_through(budget: &mut AnyBudget, calls: u64) -> u64 {
        let mut retries = 0;
        for i in 0..calls {
            let now = i * 1_000;
            budget.machine().on_attempt_start(now, Attempt::First);
            budget.machine().on_attempt_end(now, Attempt::First, OVERLOADED);
            if budget.machine().allows_retry(now, Some(FailureKind::Overloaded)) {
                let charge = budget.machine().spend_retry(now, Some(FailureKind::Overloaded)).unwrap();
                budget.machine().on_attempt_start(now, Attempt::Retry(charge));
                budget.machine().on_attempt_end(now, Attempt::Retry(charge), OVERLOADED);
                retries += 1;
            }
        }
        retries
    }

    #[test]
    fn one_surface_drives_every_kind() {
        let got = all_defaults().map(|mut b| retries_through(&mut b, 1_000));
        // gRPC: 5 tokens to lose, two per call. Finagle: 100 reserve + 20 % of 1000 requests.
        // Envoy: one retry at a time never meets the floor of 3. AWS: 500 / 5.
        assert_eq!(got, [2, 300, 1_000, 100]);
    }

    /// Numerical Recipes' 64-bit LCG: enough to shuffle operations, no dependency needed.
    fn random_end(rng: &mut Lcg) -> AttemptEnd {
        match rng.next(FailureKind::COUNT as u64 + 3) as usize {
            k if k < FailureKind::COUNT => AttemptEnd::failed(FailureKind::ALL[k], rng.next(5_000)),
            _ => AttemptEnd::success(rng.next(5_000)),
        }
    }

    fn random_cause(rng: &mut Lcg) -> Option<FailureKind> {
        let k = rng.next(FailureKind::COUNT as u64 + 1) as usize;
        FailureKind::ALL.get(k).copied()
    }

    fn assert_in_bounds(budget: &mut AnyBudget, now: Micros, requests: i64) {
        match budget {
            AnyBudget::Grpc(b) => assert!((0.0..=10.0).contains(&b.token_count())),
            AnyBudget::Finagle(b) => {
                let balance = b.balance(now);
                assert!(balance <= 100 + requests / 5 && balance >= -(requests / 5) - 1, "{balance}");
            }
            AnyBudget::Envoy(b) => assert!(b.active_retries() <= b.active()),
            AnyBudget::Aws(b) => assert!(b.available() <= 500),
        }
    }

    #[test]
    fn random_sequences_keep_every_budget_in_bounds() {
        for (seed, mut budget) in all_defaults().into_iter().enumerate() {
            let mut rng = Lcg(seed as u64 + 1);
            let mut in_flight: Vec<Attempt> = Vec::new();
            let (mut now, mut requests) = (0, 0);
            for _ in 0..30_000 {
                now += rng.next(3) * rng.next(400_000);
                match rng.next(4) {
                    0 => {
                        budget.machine().on_attempt_start(now, Attempt::First);
                        in_flight.push(Attempt::First);
                        requests += 1;
                    }
                    1 => {
                        let cause = random_cause(&mut rng);
                        let peek = budget.machine().allows_retry(now, cause);
                        let spent = budget.machine().spend_retry(now, cause);
                        assert_eq!(peek, spent.is_some(), "the peek and the spend agree");
                        if let Some(charge) = spent {
                            budget.machine().on_attempt_start(now, Attempt::Retry(charge));
                            in_flight.push(Attempt::Retry(charge));
                        }
                    }
                    _ if !in_flight.is_empty() => {
                        let attempt = in_flight.swap_remove(rng.next(in_flight.len() as u64) as usize);
                        budget.machine().on_attempt_end(now, attempt, random_end(&mut rng));
                    }
                    _ => {}
                }
                assert_in_bounds(&mut budget, now, requests);
            }
        }
    }

    #[test]
    fn levels_read_what_each_kind_holds() {
        // Fresh: gRPC's 10 tokens, Finagle's reserve of 10 retries/s over 10 s, Envoy's floor
        // of 3 concurrent retries, the AWS quota's 500 tokens.
        let fresh = all_defaults().map(|mut b| b.machine().level(0));
        assert_eq!(fresh, [10, 100, 3, 500]);
        // After calls that all fail, each has let through what it could and holds nothing
        // more, except Envoy, whose limit is on retries in flight (none are now).
        let spent = all_defaults().map(|mut b| {
            retries_through(&mut b, 1_000);
            b.machine().level(1_000_000)
        });
        assert_eq!(spent, [0, 0, 3, 0]);
    }
}
