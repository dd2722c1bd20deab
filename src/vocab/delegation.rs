//! Why a delegation hop between A2A agents was refused before it was sent (docs/essay.md
//! section 22, `runtime/delegation.rs`); the names are as in `delegation_refused_total.<name>`.
//! A closed set of its own, not `Refusal`: these reasons exist only in scenarios that delegate,
//! and every other scenario keeps the metrics it always had.

crate::named_enum! {
    #[derive(PartialOrd, Ord)]
    pub enum DelegationRefusal {
        /// The hop goes to an agent already on the chain and `visited_agents_required` is set:
        /// a delegation loop, detected.
        Visited => "visited",
        /// The hop would go deeper than `max_delegation_depth` (or the simulator's bound).
        Depth => "depth",
        /// The root run has made `max_total_attempts` attempts across hops.
        TotalAttempts => "total_attempts",
        /// The hop's cost would take the root run's cost in flight past `max_parallel_cost_units`.
        ParallelCost => "parallel_cost",
        /// The root run's deadline, carried with the hop, has passed.
        Deadline => "deadline",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_follow_all() {
        for (i, r) in DelegationRefusal::ALL.into_iter().enumerate() {
            assert_eq!(r.index(), i);
        }
        assert_eq!(DelegationRefusal::COUNT, 5);
    }
}
