//! How a lint rule becomes rows for one policy: each place where it fires gives a row (answer
//! `no`, with the rule's severity), and a rule that fires nowhere gives one quiet row saying
//! what it checked. Every rule builds its rows this way, so the shape is the same in all.

use super::row::{Answer, Ask, Location, Row, Severity};

pub struct RuleRows<'a> {
    ask: &'a Ask,
    policy: &'a str,
    rows: Vec<Row>,
}

impl<'a> RuleRows<'a> {
    pub fn new(ask: &'a Ask, policy: &'a str) -> RuleRows<'a> {
        RuleRows { ask, policy, rows: Vec::new() }
    }

    /// The rule fires at `location`.
    pub fn fire(&mut self, severity: Severity, evidence: String, location: Location) {
        self.rows.push(self.ask.row(self.policy, Answer::No, severity, evidence, location));
    }

    /// Nothing fired yet.
    pub fn is_quiet(&self) -> bool {
        self.rows.is_empty()
    }

    /// The rows fired, or (none fired) the one quiet answer `quiet` gives.
    pub fn or_else(mut self, quiet: impl FnOnce() -> (Answer, String, Location)) -> Vec<Row> {
        if self.rows.is_empty() {
            let (answer, evidence, location) = quiet();
            self.rows.push(self.ask.answer(self.policy, answer, evidence, location));
        }
        self.rows
    }
}
