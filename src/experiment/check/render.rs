//! What `check` prints: an aligned table per policy (question, answer, evidence) followed by
//! the rules that fired, located as validation errors are; or one JSON array of flat records
//! (one per row, the same keys in every record) that `pandas.read_json` loads as a table.

use super::row::{Answer, Row, Severity};
use crate::experiment::report::table::render_aligned;
use serde::Serialize;

pub fn text(scenario: &str, rows: &[Row], replications: u32) -> String {
    let mut out = String::new();
    let mut policies: Vec<&str> = Vec::new();
    for r in rows {
        if !policies.contains(&r.policy.as_str()) {
            policies.push(&r.policy);
        }
    }
    for policy in policies {
        let mine: Vec<&Row> = rows.iter().filter(|r| r.policy == policy).collect();
        let count = |s: Severity| mine.iter().filter(|r| r.severity == s).count();
        let answered = |a: Answer| mine.iter().filter(|r| r.answer == a).count();
        out.push_str(&format!(
            "policy {policy}: {} yes, {} no, {} not applicable, {} not shown; {} error(s), {} warning(s) ({scenario}, {replications} replication(s) simulated)\n",
            answered(Answer::Yes),
            answered(Answer::No),
            answered(Answer::NotApplicable),
            answered(Answer::NotShown),
            count(Severity::Error),
            count(Severity::Warning),
        ));
        let header: Vec<String> = ["question", "answer", "evidence"].iter().map(|s| s.to_string()).collect();
        let cells: Vec<Vec<String>> = mine
            .iter()
            .map(|r| {
                let answer = match r.severity {
                    Severity::None => r.answer.name().to_string(),
                    Severity::Warning | Severity::Error => format!("{} ({})", r.answer.name(), r.severity.name()),
                };
                vec![r.question.to_string(), answer, r.evidence.clone()]
            })
            .collect();
        out.push_str(&render_aligned(&header, &cells, &[0, 1, 2]));
        for r in mine.iter().filter(|r| r.severity != Severity::None) {
            out.push_str(&format!("{}[{}]: {}: {}\n", r.severity.name(), r.id, r.location.display(), r.evidence));
        }
        out.push('\n');
    }
    out
}

/// One record of the JSON output: every key present in every record, numbers as numbers.
#[derive(Serialize)]
struct Record<'a> {
    scenario: &'a str,
    policy: &'a str,
    kind: &'a str,
    id: &'a str,
    source: &'a str,
    question: &'a str,
    answer: &'a str,
    severity: &'a str,
    evidence: &'a str,
    file: &'a str,
    line: Option<usize>,
    column: Option<usize>,
    field: &'a str,
}

pub fn json(scenario: &str, rows: &[Row]) -> String {
    let records: Vec<Record> = rows
        .iter()
        .map(|r| Record {
            scenario,
            policy: &r.policy,
            kind: r.kind.name(),
            id: r.id,
            source: r.source,
            question: r.question,
            answer: r.answer.name(),
            severity: r.severity.name(),
            evidence: &r.evidence,
            file: &r.location.file,
            line: r.location.line,
            column: r.location.column,
            field: &r.location.field,
        })
        .collect();
    let mut text = serde_json::to_string_pretty(&records).expect("plain records always serialise");
    text.push('\n');
    text
}
