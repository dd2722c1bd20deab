//! A workflow step's `quorum` table (docs/scenario.md 6.2), compiled: which dependency each of
//! the n branches calls, how many must agree, how the branches are sent, and which of them share
//! a cause. The counting itself is `runtime/quorum.rs`'s pure tally; the run machine sends the
//! branches and feeds it (`runtime/run/quorum.rs`).

use super::quorum::{BranchAnswer, QuorumSpec, QuorumTally};
use crate::scenario::{
    Criticality, Effect, FieldPath, QuorumStepSpec, ScenarioError, Source, error_at_path, parse_named, quote,
    unknown_name,
};
use crate::world::World;

/// Branches of one quorum at most (the tally's bound; a u16 holds their sharing flags).
pub const MAX_BRANCHES: u32 = 15;

crate::named_enum! {
    /// When a quorum's branches are sent.
    pub enum QuorumSend {
        /// Every branch at once; those still out when the tally decides are cancelled.
        All => "all",
        /// k branches at first, then one more each time the answers in and the branches out
        /// can no longer decide without it: fewer branches sent, a longer wait.
        AsNeeded => "as_needed",
    }
}

/// A compiled quorum.
#[derive(Debug, Clone, PartialEq)]
pub struct StepQuorum {
    pub k: u32,
    /// Branch i's dependency; n = its length.
    pub branches: Vec<usize>,
    pub send: QuorumSend,
    /// Probability per run and step of the shared cause.
    pub shared: f64,
    /// Bit i: branch i shares the cause.
    pub sharing: u16,
}

impl StepQuorum {
    pub fn n(&self) -> u32 {
        self.branches.len() as u32
    }

    /// The tally's view (answers are judged by the run machine, so no error rates here).
    pub fn spec(&self) -> QuorumSpec {
        QuorumSpec { n: self.n(), k: self.k, wrong: 0.0, shared: self.shared }
    }

    pub fn shares_cause(&self, branch: u32) -> bool {
        self.sharing & (1 << branch) != 0
    }
}

/// Purpose tag of a quorum's shared cause below a run's key (then the step's stream id): drawn
/// once per root run and step, the same under every policy.
pub const TAG_QUORUM: u64 = 0x7175_6f72;

/// A quorum step of a run, while its tally is undecided.
#[derive(Debug, Clone, Copy)]
pub struct QuorumRun {
    pub step: u8,
    pub tally: QuorumTally,
    /// The shared cause struck this run's quorum: its sharing branches answer wrong.
    pub cause: bool,
    /// The next branch to send.
    pub next: u32,
    /// Branch b's attempt serial once sent (`u32::MAX`: not sent, or refused).
    serials: [u32; MAX_BRANCHES as usize],
}

impl QuorumRun {
    pub fn new(step: u8, q: &StepQuorum, cause: bool) -> QuorumRun {
        QuorumRun {
            step,
            tally: QuorumTally::new(&q.spec()),
            cause,
            next: 0,
            serials: [u32::MAX; MAX_BRANCHES as usize],
        }
    }

    /// Whether branch `next` should go out now, with `in_flight` branches out: every branch
    /// at once, or only while those out are fewer than the answers that could decide.
    pub fn wants_more(&self, q: &StepQuorum, in_flight: u32) -> bool {
        self.next < q.n()
            && match q.send {
                QuorumSend::All => true,
                QuorumSend::AsNeeded => in_flight < self.tally.need(),
            }
    }

    pub fn sent(&mut self, branch: u32, serial: u32) {
        self.serials[branch as usize] = serial;
    }

    /// The branch whose attempt has this serial.
    pub fn branch_of(&self, serial: u32) -> Option<u32> {
        self.serials[..self.next as usize].iter().position(|&s| s == serial).map(|b| b as u32)
    }

    /// How branch `branch` answered: failed, wrong (its own bad result, or the shared cause
    /// when it shares it), or right.
    pub fn answer(&self, q: &StepQuorum, branch: u32, failed: bool, bad: bool) -> BranchAnswer {
        if failed {
            BranchAnswer::Failed
        } else if bad || (self.cause && q.shares_cause(branch)) {
            BranchAnswer::Wrong
        } else {
            BranchAnswer::Right
        }
    }
}

/// Step `s`'s quorum at `sp.quorum`, if it has one: every rule checked with its field named.
pub fn compile_quorum(
    source: &Source,
    world: &World,
    sp: &FieldPath,
    s: &crate::scenario::Step,
    dependency: usize,
) -> Result<Option<StepQuorum>, ScenarioError> {
    let Some(q) = &s.quorum else { return Ok(None) };
    let path = sp.key("quorum");
    let err = |p: &FieldPath, m: String| Err(error_at_path(source, p, m));
    check_step_contract(source, world, sp, s)?;
    let branches = match (&q.dependencies, q.n) {
        (None, None) => {
            return err(
                &path,
                "a quorum needs `n` (branches to the step's dependency) or `dependencies` (one branch each)".into(),
            );
        }
        // The range is checked before the branches are made: a huge `n` is a located error,
        // not an allocation that aborts the process.
        (None, Some(n)) if n == 0 || n > MAX_BRANCHES => {
            return err(&path.key("n"), format!("a quorum has 1 to {MAX_BRANCHES} branches, got {n}"));
        }
        (None, Some(n)) => vec![dependency; n as usize],
        (Some(list), n) => {
            let branches = branch_dependencies(source, world, &path, list, dependency)?;
            if let Some(n) = n
                && n as usize != branches.len()
            {
                let message = format!("n = {n}, but `dependencies` lists {} branches", branches.len());
                return err(&path.key("n"), message);
            }
            branches
        }
    };
    let n = branches.len() as u32;
    if n == 0 || n > MAX_BRANCHES {
        let field = if q.n.is_some() { path.key("n") } else { path.key("dependencies") };
        return err(&field, format!("a quorum has 1 to {MAX_BRANCHES} branches, got {n}"));
    }
    let k = q.k;
    let message = match k {
        0 => Some("must be at least 1: a quorum of no branches agrees on nothing".to_string()),
        k if k > n => Some(format!("k = {k} is more than the quorum's {n} branches: it could never be met")),
        k if 2 * k <= n => {
            Some(format!("k = {k} of {n} is not a strict majority (2k > n): two answers could both reach it"))
        }
        _ => None,
    };
    if let Some(m) = message {
        return err(&path.key("k"), m);
    }
    let shared = q.shared_cause_probability.unwrap_or(0.0);
    if !(0.0..=1.0).contains(&shared) {
        return err(&path.key("shared_cause_probability"), format!("must be in [0, 1], got {shared}"));
    }
    let sharing = sharing_mask(source, &path, q, n)?;
    let send = parse_named(source, &path.key("send"), q.send.as_deref(), QuorumSend::All)?;
    Ok(Some(StepQuorum { k, branches, send, shared, sharing }))
}

/// What a quorum step cannot be: a write (n writes commit n times), advisory (one attempt in
/// a window), or a step with a fallback (a quorum that is not met has no one answer to stand in
/// for).
fn check_step_contract(
    source: &Source,
    world: &World,
    sp: &FieldPath,
    s: &crate::scenario::Step,
) -> Result<(), ScenarioError> {
    let err = |field: &str, m: &str| Err(error_at_path(source, &sp.key(field), m));
    if s.effect == Effect::Write {
        return err("effect", "a quorum step is a read: n branches of a write would commit it n times");
    }
    if s.criticality == Criticality::Advisory {
        return err("criticality", "an advisory step has one attempt in its window: it cannot be a quorum");
    }
    if s.fallback.is_some() {
        return err("fallback", "a quorum that is not met gives up: a quorum step has no fallback");
    }
    if world.dependency_index(&s.dependency).is_some_and(|d| world.dependencies[d].approval.is_some()) {
        return err("quorum", "a human's decision is not a vote: an approval step cannot be a quorum");
    }
    Ok(())
}

/// The dependencies of `dependencies`, the first the step's own.
fn branch_dependencies(
    source: &Source,
    world: &World,
    path: &FieldPath,
    list: &[String],
    dependency: usize,
) -> Result<Vec<usize>, ScenarioError> {
    let mut branches = Vec::with_capacity(list.len());
    for (i, name) in list.iter().enumerate() {
        let field = path.key("dependencies").index(i);
        let d = world
            .dependency_index(name)
            .ok_or_else(|| error_at_path(source, &field, unknown_name("dependency", name, world.dependency_names())))?;
        if world.dependencies[d].approval.is_some() {
            let message = format!("{} is an approval dependency: a human's decision is not a vote", quote(name));
            return Err(error_at_path(source, &field, message));
        }
        branches.push(d);
    }
    if branches.first().is_some_and(|&d| d != dependency) {
        let message = format!(
            "the first branch is the step's own dependency {}: list it first",
            quote(&world.dependencies[dependency].name)
        );
        return Err(error_at_path(source, &path.key("dependencies").index(0), message));
    }
    Ok(branches)
}

/// The sharing flags: every branch by default, else the listed ones (each once, each < n).
fn sharing_mask(source: &Source, path: &FieldPath, q: &QuorumStepSpec, n: u32) -> Result<u16, ScenarioError> {
    let Some(list) = &q.shared_cause_branches else { return Ok(((1u32 << n) - 1) as u16) };
    let mut mask = 0u16;
    for (i, &b) in list.iter().enumerate() {
        let field = path.key("shared_cause_branches").index(i);
        if b >= n {
            return Err(error_at_path(
                source,
                &field,
                format!("branch {b} does not exist: branches are 0 to {}", n - 1),
            ));
        }
        if mask & (1 << b) != 0 {
            return Err(error_at_path(source, &field, format!("branch {b} is listed twice")));
        }
        mask |= 1 << b;
    }
    Ok(mask)
}

/// Settings that compile and change nothing at a quorum step, and a cache that makes its
/// branches one vote (docs/scenario.md 6.2): warnings `faultline validate` prints, in file
/// order of the quorum steps. The file still runs.
pub fn quorum_input_warnings(scenario: &crate::scenario::Scenario, source: &Source) -> Vec<ScenarioError> {
    let mut out = Vec::new();
    for (w, workflow) in scenario.workflows.iter().enumerate() {
        for (j, step) in workflow.steps.iter().enumerate() {
            let Some(q) = &step.quorum else { continue };
            let qp = FieldPath::root().key("workflow").index(w).key("step").index(j).key("quorum");
            let id = &step.id;
            let probability = q.shared_cause_probability.unwrap_or(0.0);
            match &q.shared_cause_branches {
                Some(list) if list.is_empty() && probability > 0.0 => out.push(error_at_path(
                    source,
                    &qp.key("shared_cause_branches"),
                    format!("no branch of quorum `{id}` shares the cause, so shared_cause_probability = {probability} changes nothing"),
                )),
                Some(_) if probability == 0.0 => out.push(error_at_path(
                    source,
                    &qp.key("shared_cause_branches"),
                    format!("quorum `{id}` has no shared_cause_probability (0): no cause to share, so shared_cause_branches is ignored"),
                )),
                Some(_) | None => {}
            }
            let dependencies: Vec<&str> = match &q.dependencies {
                Some(list) => list.iter().map(String::as_str).collect(),
                None => vec![step.dependency.as_str()],
            };
            for (p, policy) in &scenario.policies {
                let pp = FieldPath::root().key("policy").key(p);
                if let Some(o) = policy.steps.get(id)
                    && o.max_attempts.is_some()
                {
                    out.push(error_at_path(
                        source,
                        &pp.key("steps").key(id).key("max_attempts"),
                        format!("step `{id}` is a quorum: each branch is one first attempt, never retried (docs/scenario.md 6.2), so `max_attempts` is ignored"),
                    ));
                }
                if policy.hedging.is_some() {
                    out.push(error_at_path(
                        source,
                        &pp.key("hedging"),
                        format!("quorum step `{id}` is never hedged: its branches are its parallel calls (docs/scenario.md 6.2); hedging applies to the other steps only"),
                    ));
                }
                for name in dependencies.iter().filter(|d| policy.cache.contains_key(**d)) {
                    out.push(error_at_path(
                        source,
                        &pp.key("cache").key(name),
                        format!("quorum step `{id}` calls `{name}` through this cache: its branches ask for one key, so a hit gives them one entry, one answer counted as every branch's vote (a bad entry is a wrong agreement); only misses reach `{name}`, each branch on its own (docs/scenario.md 6.2)"),
                    ));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sharing_flags_name_their_branches() {
        let q = StepQuorum { k: 2, branches: vec![0, 1, 2], send: QuorumSend::All, shared: 0.1, sharing: 0b101 };
        assert!(q.shares_cause(0) && !q.shares_cause(1) && q.shares_cause(2));
        assert_eq!((q.spec().n, q.spec().k), (3, 2));
    }

    #[test]
    fn as_needed_sends_only_what_could_still_decide() {
        let mut q =
            StepQuorum { k: 2, branches: vec![0, 0, 0], send: QuorumSend::AsNeeded, shared: 0.0, sharing: 0b111 };
        let mut run = QuorumRun::new(0, &q, true);
        assert!(run.wants_more(&q, 1) && !run.wants_more(&q, 2), "k = 2 out at first");
        run.next = 2;
        run.sent(0, 7);
        run.sent(1, 9);
        assert_eq!((run.branch_of(9), run.branch_of(8)), (Some(1), None));
        run.tally.record(BranchAnswer::Right);
        run.tally.record(BranchAnswer::Wrong);
        assert!(run.wants_more(&q, 0), "a split needs the third");
        assert_eq!(run.answer(&q, 0, false, false), BranchAnswer::Wrong, "the cause struck and branch 0 shares it");
        q.sharing = 0b110;
        assert_eq!(run.answer(&q, 0, false, false), BranchAnswer::Right);
        assert_eq!(run.answer(&q, 0, true, true), BranchAnswer::Failed);
        q.send = QuorumSend::All;
        run.next = 3;
        assert!(!run.wants_more(&q, 0), "every branch is out");
    }
}
