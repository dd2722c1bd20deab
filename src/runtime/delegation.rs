//! Delegation between A2A agents (docs/essay.md section 22) as a pure rule: each hop carries the
//! root run's delegation context, and the agent about to delegate checks it before it sends.
//!
//! The context is the chain of agents above the sender (the visited agents; its length is the
//! sender's depth) plus what the root run keeps: its attempts so far across hops, the cost of
//! its attempts in flight, its deadline. A2A has no field for any of this (a `contextId` groups
//! the tasks of one conversation, `referenceTaskIds` names earlier tasks, `metadata` is free
//! form): faultline assumes the runtime and its agents agree on a context carried in message
//! metadata, and that every agent on the chain honours the root run's `fan_out` limits, as a
//! propagated deadline is honoured. The engine keeps a `Chain` per hop and asks `check_hop`.

use super::fan_out::{FanOutLimits, MAX_DELEGATION_DEPTH};
use crate::vocab::DelegationRefusal;

/// Agents above a sender on one delegation chain, the root run's first agent first. Fixed size:
/// a chain never grows past `MAX_DELEGATION_DEPTH`, so it is `Copy` and allocates nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chain {
    agents: [u16; MAX_DELEGATION_DEPTH as usize],
    len: u8,
}

impl Chain {
    /// The chain of the root run's own attempt: no agent above it, depth 0.
    pub const ROOT: Chain = Chain { agents: [0; MAX_DELEGATION_DEPTH as usize], len: 0 };

    /// Hops between the root run's first agent and the sender.
    pub fn depth(&self) -> u32 {
        u32::from(self.len)
    }

    pub fn agents(&self) -> &[u16] {
        &self.agents[..self.len as usize]
    }

    /// The first agent on the chain, or the sender itself when it is the first.
    pub fn first_or(&self, sender: u16) -> u16 {
        self.agents().first().copied().unwrap_or(sender)
    }

    /// Whether `agent` is on the chain or is the sender: a hop to it would be a revisit.
    pub fn visited(&self, sender: u16, agent: u16) -> bool {
        agent == sender || self.agents().contains(&agent)
    }

    /// The chain the receiver of a hop from `sender` gets. Only called for a hop `check_hop`
    /// allowed, which is never deeper than the bound.
    pub fn extended(&self, sender: u16) -> Chain {
        let mut next = *self;
        assert!(next.depth() < MAX_DELEGATION_DEPTH, "a chain never grows past MAX_DELEGATION_DEPTH");
        next.agents[next.len as usize] = sender;
        next.len += 1;
        next
    }
}

/// What the root run says when one of its agents asks to delegate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RootLedger {
    /// Attempts of the root run so far: the runtime's own and every hop's.
    pub attempts_total: u32,
    /// Cost units of the root run's attempts and hops in flight now.
    pub cost_in_flight: f64,
    /// The root run's deadline has passed and the policy propagates it.
    pub deadline_passed: bool,
}

/// One hop an agent asks to send: from `sender` (on `chain`) to `to`, costing `cost`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hop {
    pub sender: u16,
    pub to: u16,
    pub cost: f64,
}

/// An allowed hop: the receiver's depth and whether it revisits an agent on the chain (a loop
/// the policy did not stop).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HopAllowed {
    pub depth: u32,
    pub revisit: bool,
}

/// The rule: a revisit is refused first when visited agents are required (a loop is cut at its
/// first revisit, whatever else is left), then the depth, the attempts across hops, the cost in
/// flight, and the deadline carried with the hop.
pub fn check_hop(
    limits: &FanOutLimits,
    chain: &Chain,
    hop: Hop,
    root: RootLedger,
) -> Result<HopAllowed, DelegationRefusal> {
    let revisit = chain.visited(hop.sender, hop.to);
    if revisit && limits.visited_agents_required {
        return Err(DelegationRefusal::Visited);
    }
    let depth = chain.depth() + 1;
    if depth > limits.max_delegation_depth.unwrap_or(MAX_DELEGATION_DEPTH).min(MAX_DELEGATION_DEPTH) {
        return Err(DelegationRefusal::Depth);
    }
    if limits.max_total_attempts.is_some_and(|max| root.attempts_total >= max) {
        return Err(DelegationRefusal::TotalAttempts);
    }
    if limits.max_parallel_cost_units.is_some_and(|max| root.cost_in_flight + hop.cost > max + 1e-9) {
        return Err(DelegationRefusal::ParallelCost);
    }
    if root.deadline_passed {
        return Err(DelegationRefusal::Deadline);
    }
    Ok(HopAllowed { depth, revisit })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOM: RootLedger = RootLedger { attempts_total: 0, cost_in_flight: 0.0, deadline_passed: false };

    fn chain(agents: &[u16]) -> Chain {
        agents.iter().fold(Chain::ROOT, |c, &a| c.extended(a))
    }

    #[test]
    fn a_loop_is_refused_at_its_first_revisit_only_when_visited_agents_are_required() {
        // A (0) -> B (1) asks to delegate back to A.
        let c = chain(&[0]);
        let back = Hop { sender: 1, to: 0, cost: 1.0 };
        let strict = FanOutLimits { visited_agents_required: true, ..FanOutLimits::NONE };
        assert_eq!(check_hop(&strict, &c, back, ROOM), Err(DelegationRefusal::Visited));
        // A hop to itself is a revisit too.
        assert_eq!(check_hop(&strict, &c, Hop { to: 1, ..back }, ROOM), Err(DelegationRefusal::Visited));
        // Without the flag the loop goes on, marked as a revisit.
        assert_eq!(check_hop(&FanOutLimits::NONE, &c, back, ROOM), Ok(HopAllowed { depth: 2, revisit: true }));
        // A fresh agent is no revisit either way.
        assert_eq!(check_hop(&strict, &c, Hop { to: 2, ..back }, ROOM), Ok(HopAllowed { depth: 2, revisit: false }));
    }

    #[test]
    fn depth_counts_hops_below_the_first_agent_and_the_bound_holds_without_a_limit() {
        let limits = FanOutLimits { max_delegation_depth: Some(2), ..FanOutLimits::NONE };
        let hop = |sender| Hop { sender, to: 9, cost: 0.0 };
        assert_eq!(check_hop(&limits, &Chain::ROOT, hop(0), ROOM).map(|h| h.depth), Ok(1));
        assert_eq!(check_hop(&limits, &chain(&[0]), hop(1), ROOM).map(|h| h.depth), Ok(2));
        assert_eq!(check_hop(&limits, &chain(&[0, 1]), hop(2), ROOM), Err(DelegationRefusal::Depth));
        let deepest: Vec<u16> = (0..MAX_DELEGATION_DEPTH as u16 - 1).collect();
        let at_bound = chain(&deepest);
        assert!(check_hop(&FanOutLimits::NONE, &at_bound, hop(100), ROOM).is_ok(), "the 16th hop");
        assert_eq!(
            check_hop(&FanOutLimits::NONE, &at_bound.extended(100), hop(101), ROOM),
            Err(DelegationRefusal::Depth),
            "the 17th hop, with no limit set"
        );
    }

    #[test]
    fn attempts_cost_and_deadline_are_the_root_runs() {
        let limits =
            FanOutLimits { max_total_attempts: Some(3), max_parallel_cost_units: Some(5.0), ..FanOutLimits::NONE };
        let hop = Hop { sender: 0, to: 1, cost: 2.0 };
        let at = |attempts_total, cost_in_flight| RootLedger { attempts_total, cost_in_flight, deadline_passed: false };
        assert!(check_hop(&limits, &Chain::ROOT, hop, at(2, 3.0)).is_ok(), "the third attempt, cost exactly 5");
        assert_eq!(check_hop(&limits, &Chain::ROOT, hop, at(3, 0.0)), Err(DelegationRefusal::TotalAttempts));
        assert_eq!(check_hop(&limits, &Chain::ROOT, hop, at(0, 3.5)), Err(DelegationRefusal::ParallelCost));
        let late = RootLedger { deadline_passed: true, ..ROOM };
        assert_eq!(check_hop(&FanOutLimits::NONE, &Chain::ROOT, hop, late), Err(DelegationRefusal::Deadline));
    }

    #[test]
    fn the_chain_keeps_its_first_agent_and_its_order() {
        let c = chain(&[4, 7]);
        assert_eq!(c.agents(), &[4, 7]);
        assert_eq!(c.first_or(9), 4);
        assert_eq!(Chain::ROOT.first_or(9), 9);
        assert!(c.visited(9, 7) && c.visited(9, 9) && !c.visited(9, 5));
    }
}
