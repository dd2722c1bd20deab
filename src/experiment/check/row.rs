//! One answered line of `faultline check`: a question of the essay's checklist or a lint rule,
//! its answer for one policy, the evidence that decides it, and, when the answer points at the
//! file, where.

use crate::scenario::error::Origin;
use crate::scenario::{FieldPath, ScenarioError, Source, error_at_path};

crate::named_enum! {
    /// A question's answer.
    pub enum Answer {
        Yes => "yes",
        No => "no",
        NotApplicable => "not applicable",
        /// The policy has what the question is about, but the short simulation never
        /// exercised it (a mode that never engaged, a restoration that never happened): the
        /// figures can say neither yes nor no.
        NotShown => "not shown",
    }
}

impl Answer {
    /// `yes` when `ok`, else `no`: a question answered by one condition.
    pub fn yes_if(ok: bool) -> Answer {
        if ok { Answer::Yes } else { Answer::No }
    }
}

crate::named_enum! {
    /// What a row weighs: `error` makes `check` exit 1 (a gate), `warning` is reported only,
    /// `none` for an answer that flags nothing (a question, or a rule that did not fire).
    pub enum Severity {
        None => "none",
        Warning => "warning",
        Error => "error",
    }
}

crate::named_enum! {
    /// What asks: the essay's section 26 verification questions, its section 29 checklist, or
    /// a lint rule on the file.
    pub enum RowKind {
        Verification => "verification",
        Checklist => "checklist",
        Rule => "rule",
    }
}

/// Where in the file a row points: the field that decides it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Location {
    pub file: String,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub field: String,
}

impl Location {
    /// The field at `path`, found in the source as validation errors find theirs.
    pub fn at(source: &Source, path: &FieldPath) -> Location {
        Location::from_error(&error_at_path(source, path, ""))
    }

    pub fn from_error(e: &ScenarioError) -> Location {
        match &e.origin {
            Origin::File { path, line, column } => {
                Location { file: path.clone(), line: *line, column: *column, field: e.field.clone() }
            }
            Origin::Argument(argument) => {
                Location { file: format!("argument `{argument}`"), line: None, column: None, field: e.field.clone() }
            }
        }
    }

    /// `file:line:column: field`, as the validation errors print it.
    pub fn display(&self) -> String {
        let mut s = self.file.clone();
        if let Some(line) = self.line {
            s.push_str(&format!(":{line}"));
            if let Some(column) = self.column {
                s.push_str(&format!(":{column}"));
            }
        }
        if !self.field.is_empty() {
            s.push_str(&format!(": {}", self.field));
        }
        s
    }
}

/// One answered question or rule for one policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub policy: String,
    pub kind: RowKind,
    /// Stable: `s26.deadline_bounded_branches`, `rule.attempt_timeout_over_deadline`.
    pub id: &'static str,
    /// Where the question or rule comes from (essay section, .NET validator, resilience4j).
    pub source: &'static str,
    pub question: &'static str,
    pub answer: Answer,
    pub severity: Severity,
    /// The field or the metric that decides the answer, with its value.
    pub evidence: String,
    pub location: Location,
}

/// What a question or rule is, before it is answered.
#[derive(Debug, Clone, Copy)]
pub struct Ask {
    pub kind: RowKind,
    pub id: &'static str,
    pub source: &'static str,
    pub question: &'static str,
}

impl Ask {
    pub fn answer(&self, policy: &str, answer: Answer, evidence: String, location: Location) -> Row {
        self.row(policy, answer, Severity::None, evidence, location)
    }

    pub fn row(&self, policy: &str, answer: Answer, severity: Severity, evidence: String, location: Location) -> Row {
        Row {
            policy: policy.to_string(),
            kind: self.kind,
            id: self.id,
            source: self.source,
            question: self.question,
            answer,
            severity,
            evidence,
            location,
        }
    }
}
