//! docs/metrics.md gives each metric an example, tagged by the run it comes from ("MA-R 0.9552",
//! "MMC station 89.91", "`tenant.acme.auto_completion_ratio` NT-I 0.6237"). This test runs the
//! commands of the tags the shipped scenarios produce (the table in metrics.md section 1) and
//! requires every such example to be that run's summary.json mean, to the digits quoted.
//! Examples of scenarios that are not shipped (G, OV-*) and of variants (META-60, META-CODEL)
//! are not checked here.
//!
//! `FAULTLINE_UPDATE_DOCS=1 cargo test --test doc_metric_examples` writes the current figures
//! into metrics.md instead (same number of decimals), for a person to read before committing:
//! prose around a figure ("= 6735 + 395") is not rewritten.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Tag -> (output folder key, policy).
const TAGS: [(&str, &str, &str); 20] = [
    ("MA-R", "MA", "resilient"),
    ("MA-N", "MA", "naive"),
    ("MMC", "MMC", "plain"),
    ("MMCK", "MMCK", "plain"),
    ("NT-I", "NT", "isolated"),
    ("NT-S", "NT", "shared"),
    ("META", "META", "naive"),
    ("MA8-N", "MA8", "naive"),
    ("MA8-R", "MA8", "resilient"),
    ("SS-S", "SS", "synchronised"),
    ("SS-J", "SS", "jittered"),
    ("SS-R", "SS", "resend"),
    ("PS-S", "PS", "synchronised"),
    ("PS-J", "PS", "jittered"),
    ("MS-N", "MS", "naive"),
    ("MS-R", "MS", "resilient"),
    ("MC-N", "MC", "naive"),
    ("MC-R", "MC", "resilient"),
    ("MK-N", "MK", "naive"),
    ("MK-R", "MK", "resilient"),
];

/// Output folder key -> the command's arguments after `faultline run` (MA8 is the committed
/// reference output, checked against the binary by tests/reference_output.rs).
const RUNS: [(&str, &str, &str); 10] = [
    ("MA", "scenarios/meeting-analysis-incident.toml", "2"),
    ("MMC", "scenarios/mmc.toml", "2"),
    ("MMCK", "scenarios/mmck.toml", "2"),
    ("NT", "scenarios/noisy-tenant.toml", "2"),
    ("META", "scenarios/metastability.toml", "2"),
    ("SS", "scenarios/a2a-subscribe-storm.toml", ""),
    ("PS", "scenarios/a2a-poll-storm.toml", ""),
    ("MS", "scenarios/meeting-analysis-incident-sdk.toml", "2"),
    ("MC", "scenarios/meeting-analysis-incident-closed.toml", "2"),
    ("MK", "scenarios/meeting-analysis-incident-cache.toml", "2"),
];

/// Every policy's summary means: (folder key, policy) -> metric -> mean.
type Summaries = BTreeMap<(String, String), BTreeMap<String, f64>>;

fn run_all(dir: &Path) -> Summaries {
    let mut folders: Vec<(String, PathBuf)> =
        vec![("MA8".into(), Path::new(ROOT).join("reference/meeting-analysis-incident"))];
    for (key, scenario, replications) in RUNS {
        let out = dir.join(key);
        let mut c = Command::new(env!("CARGO_BIN_EXE_faultline"));
        c.arg("run").arg(Path::new(ROOT).join(scenario)).arg("--out").arg(&out);
        if !replications.is_empty() {
            c.args(["--replications", replications]);
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{scenario}: {}", String::from_utf8_lossy(&o.stderr));
        folders.push((key.into(), out));
    }
    let mut summaries = Summaries::new();
    for (key, folder) in folders {
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            let path = entry.path().join("summary.json");
            if !path.is_file() {
                continue;
            }
            let json: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let policy = json["policy"].as_str().unwrap().to_string();
            let metrics = json["metrics"].as_object().unwrap();
            let means = metrics.iter().filter_map(|(k, v)| v.as_f64().map(|m| (k.clone(), m))).collect();
            summaries.insert((key.clone(), policy), means);
        }
    }
    summaries
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Tag(&'static str),
    /// A tag of a run this test does not make (G, OV-G, META-60, ...): its figures are skipped.
    OtherTag,
    Name(String),
    Word(String),
    Number {
        text: String,
        start: usize,
    },
    Open,
    Close,
    /// `;` ends a figure's name given after its tag; `,` keeps it for the next tag.
    Separator(char),
}

fn tokens(cell: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let bytes = cell.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i] as char;
        if c == '`' {
            let end = cell[i + 1..].find('`').map_or(cell.len(), |e| i + 1 + e);
            out.push(Token::Name(cell[i + 1..end].to_string()));
            i = end + 1;
        } else if c == '(' {
            out.push(Token::Open);
            i += 1;
        } else if c == ')' {
            out.push(Token::Close);
            i += 1;
        } else if c == ';' || c == ',' {
            out.push(Token::Separator(c));
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else {
            let end =
                cell[i..].find(|ch: char| ch.is_whitespace() || "`();,".contains(ch)).map_or(cell.len(), |e| i + e);
            let word = &cell[i..end];
            let number = word.strip_prefix('-').unwrap_or(word);
            if !number.is_empty()
                && number.chars().all(|ch| ch.is_ascii_digit() || ch == '.')
                && number.chars().next().unwrap().is_ascii_digit()
                && !number.ends_with('.')
            {
                out.push(Token::Number { text: word.to_string(), start: i });
            } else if let Some((tag, _, _)) = TAGS.iter().find(|(t, _, _)| *t == word) {
                out.push(Token::Tag(tag));
            } else if is_tag(word) {
                out.push(Token::OtherTag);
            } else {
                out.push(Token::Word(word.to_string()));
            }
            i = end;
        }
    }
    out
}

/// A run's tag: capitals and digits in parts joined by `-` (MA-R, MMC, OV-G, META-60).
fn is_tag(word: &str) -> bool {
    word.split('-').all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()))
        && word.chars().next().is_some_and(|c| c.is_ascii_uppercase())
}

/// One example: where its number is in the file, the tag, the metric, the quoted text.
#[derive(Debug)]
struct Example {
    line: usize,
    column: usize,
    tag: &'static str,
    policy: Option<String>,
    metric: String,
    quoted: String,
}

#[derive(Clone, Copy, PartialEq)]
enum Section {
    Run,
    Dependency,
    Step,
}

/// The examples of one table row: a number counts when it follows a tag, a backticked name or
/// a dependency/step name directly (outside parentheses); a `(policy)` right after it names the
/// policy when the run has one of that name. A backticked name holds for the figures after it
/// up to the next `;` (`NT-S `x` 0.0027, NT-I 0.00002` quotes x twice).
fn examples(
    line: usize,
    offset: usize,
    row_metric: &str,
    section: Section,
    cell: &str,
    summaries: &Summaries,
) -> Vec<Example> {
    let toks = tokens(cell);
    let mut out: Vec<Example> = Vec::new();
    let (mut tag, mut name, mut qualifier): (Option<&'static str>, Option<String>, Option<String>) = (None, None, None);
    let mut depth = 0usize;
    let mut previous: Option<Token> = None;
    for (k, t) in toks.iter().enumerate() {
        match t {
            Token::Open => depth += 1,
            Token::Close => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > 0 {
            // `(naive)` right after a figure names its policy.
            if let (Token::Word(w), Some(Token::Open), Some(Token::Close), Some(last)) =
                (t, toks.get(k.wrapping_sub(1)), toks.get(k + 1), out.last_mut())
            {
                let (_, key, _) = TAGS.iter().find(|(t, _, _)| *t == last.tag).expect("a checked tag");
                let is_policy = summaries.contains_key(&(key.to_string(), w.clone()));
                if matches!(toks.get(k.wrapping_sub(2)), Some(Token::Number { .. }))
                    && last.policy.is_none()
                    && is_policy
                {
                    last.policy = Some(w.clone());
                }
            }
            previous = None;
            continue;
        }
        match t {
            Token::Tag(t) => {
                tag = Some(t);
                qualifier = None;
            }
            Token::OtherTag => {
                tag = None;
                name = None;
                qualifier = None;
            }
            Token::Name(n) => {
                name = Some(n.clone());
                qualifier = None;
            }
            Token::Word(w) => qualifier = Some(w.clone()),
            Token::Number { text, start } => {
                let follows = matches!(previous, Some(Token::Tag(_)) | Some(Token::Name(_)) | Some(Token::Word(_)));
                if let (true, Some(tag)) = (follows, tag) {
                    let after_word = matches!(previous, Some(Token::Word(_)));
                    let metric = resolve(
                        row_metric,
                        section,
                        name.as_deref(),
                        qualifier.as_deref().filter(|_| after_word),
                        tag,
                        summaries,
                    );
                    if let Some(metric) = metric {
                        out.push(Example {
                            line,
                            column: offset + start,
                            tag,
                            policy: None,
                            metric,
                            quoted: text.clone(),
                        });
                    }
                }
            }
            Token::Separator(';') => name = None,
            Token::Separator(_) | Token::Open | Token::Close => {}
        }
        previous = Some(t.clone());
    }
    out
}

fn summary<'a>(summaries: &'a Summaries, tag: &str, policy: Option<&str>) -> Option<&'a BTreeMap<String, f64>> {
    let (_, key, default) = TAGS.iter().find(|(t, _, _)| *t == tag)?;
    summaries.get(&(key.to_string(), policy.unwrap_or(default).to_string()))
}

/// The metric an example names, or None when it cannot be told (a word that is not one of the
/// run's dependencies or steps: prose).
fn resolve(
    row: &str,
    section: Section,
    name: Option<&str>,
    word: Option<&str>,
    tag: &str,
    summaries: &Summaries,
) -> Option<String> {
    let means = summary(summaries, tag, None)?;
    let exists = |m: &str| means.contains_key(m);
    let prefix = match section {
        Section::Run => "",
        Section::Dependency => "dependency.",
        Section::Step => "step.",
    };
    if let Some(w) = word {
        let m = format!("{prefix}{w}.{row}");
        return (section != Section::Run && exists(&m)).then_some(m);
    }
    if let Some(n) = name {
        if exists(n) {
            return Some(n.to_string());
        }
        if let Some(open) = row.find('<') {
            let close = row.rfind('>')?;
            let filled = format!("{}{n}{}", &row[..open], &row[close + 1..]);
            if section == Section::Run {
                return Some(filled);
            }
        }
        return None;
    }
    match section {
        Section::Run => Some(row.to_string()),
        // A scenario of one dependency (M/M/c, M/M/c/K): the example is that dependency's.
        Section::Dependency => {
            let names: Vec<&str> = means
                .keys()
                .filter_map(|k| k.strip_prefix("dependency.").and_then(|r| r.strip_suffix(&format!(".{row}"))))
                .collect();
            match names.as_slice() {
                [only] => Some(format!("dependency.{only}.{row}")),
                _ => None,
            }
        }
        Section::Step => None,
    }
}

fn all_examples(text: &str, summaries: &Summaries) -> Vec<Example> {
    let mut section = None;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if let Some(rest) = line.strip_prefix("## ") {
            section = match rest.split('.').next() {
                Some("2") => Some(Section::Run),
                Some("3") => Some(Section::Dependency),
                Some("4") => Some(Section::Step),
                _ => None,
            };
        }
        let Some(section) = section else { continue };
        if !line.starts_with("| `") {
            continue;
        }
        let Some(metric) = line[3..].split('`').next() else { continue };
        let cell_start = line.trim_end().trim_end_matches('|').rfind('|').unwrap() + 1;
        let cell = &line[cell_start..line.trim_end().len() - 1];
        out.extend(examples(i + 1, cell_start, metric, section, cell, summaries));
    }
    out
}

fn decimals(quoted: &str) -> usize {
    quoted.split_once('.').map_or(0, |(_, d)| d.len())
}

#[test]
fn every_example_in_metrics_md_is_what_its_run_reports() {
    let dir = std::env::temp_dir().join(format!("faultline-doc-metric-examples-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let summaries = run_all(&dir);
    let path = Path::new(ROOT).join("docs/metrics.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let found = all_examples(&text, &summaries);
    let mut wrong = Vec::new();
    let mut checked = 0;
    let mut replacements: Vec<(usize, usize, usize, String)> = Vec::new();
    for e in &found {
        let means = summary(&summaries, e.tag, e.policy.as_deref());
        let Some(actual) = means.and_then(|m| m.get(&e.metric)) else {
            wrong.push(format!("docs/metrics.md:{}: {} {}: the run reports no such metric", e.line, e.tag, e.metric));
            continue;
        };
        checked += 1;
        let quoted: f64 = e.quoted.parse().unwrap();
        let places = decimals(&e.quoted);
        let tolerance = 0.5 * 10f64.powi(-(places as i32)) + 1e-9 * actual.abs();
        if (actual - quoted).abs() > tolerance {
            // A whole number is written whole, whatever the decimals quoted before.
            let now = if actual.fract() == 0.0 { format!("{actual}") } else { format!("{actual:.places$}") };
            wrong.push(format!(
                "docs/metrics.md:{}:{}: {} `{}` quoted {}, the run reports {now}",
                e.line,
                e.column + 1,
                e.tag,
                e.metric,
                e.quoted
            ));
            replacements.push((e.line, e.column, e.quoted.len(), now));
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    if std::env::var_os("FAULTLINE_UPDATE_DOCS").is_some() && !replacements.is_empty() {
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        replacements.sort_by_key(|r| std::cmp::Reverse((r.0, r.1)));
        for (line, column, len, now) in replacements {
            lines[line - 1].replace_range(column..column + len, &now);
        }
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    }
    assert!(checked >= 150, "only {checked} examples were found and checked: the parser lost track of the tables");
    assert!(
        wrong.is_empty(),
        "{} of {} examples differ from their run:\n{}",
        wrong.len(),
        found.len(),
        wrong.join("\n")
    );
}

#[test]
fn the_parser_reads_the_forms_the_tables_use() {
    let mut summaries = Summaries::new();
    let means: BTreeMap<String, f64> = [
        ("auto_completion_ratio", 0.5),
        ("dependency.station.utilization", 0.9),
        ("dependency.model-primary.attempt_total", 10.0),
        ("dependency.writer.attempt_total", 3.0),
        ("tenant.acme.auto_completion_ratio", 0.6),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), *v))
    .collect();
    for (_, key, policy) in TAGS {
        summaries.insert((key.to_string(), policy.to_string()), means.clone());
        summaries.insert((key.to_string(), "backoff".to_string()), means.clone());
    }
    let got = |row: &str, section, cell: &str| -> Vec<(String, String, Option<String>)> {
        examples(1, 0, row, section, cell, &summaries)
            .into_iter()
            .map(|e| (e.tag.to_string(), format!("{} {}", e.metric, e.quoted), e.policy))
            .collect()
    };
    let s = |t: &str, m: &str, p: Option<&str>| (t.to_string(), m.to_string(), p.map(str::to_string));
    assert_eq!(
        got(
            "auto_completion_ratio",
            Section::Run,
            " MA-R 0.9552; MA-N 0.9770 (rejections included), META 5.55 (backoff) "
        ),
        vec![
            s("MA-R", "auto_completion_ratio 0.9552", None),
            s("MA-N", "auto_completion_ratio 0.9770", None),
            s("META", "auto_completion_ratio 5.55", Some("backoff"))
        ]
    );
    assert_eq!(
        got("attempt_total", Section::Dependency, " MA-R model-primary 35504, writer 7 (about 6 700 retries); MMC 3 "),
        vec![
            s("MA-R", "dependency.model-primary.attempt_total 35504", None),
            s("MA-R", "dependency.writer.attempt_total 7", None)
        ]
    );
    // A scenario of one dependency needs no name; two do.
    assert_eq!(
        got("utilization", Section::Dependency, " MMC 0.8986 (ρ = 0.9) "),
        vec![s("MMC", "dependency.station.utilization 0.8986", None)]
    );
    assert_eq!(
        got(
            "auto_completion_ratio",
            Section::Run,
            " `tenant.acme.auto_completion_ratio` NT-I 0.6237, NT-S 0.7950; META undefined (never) "
        ),
        vec![
            s("NT-I", "tenant.acme.auto_completion_ratio 0.6237", None),
            s("NT-S", "tenant.acme.auto_completion_ratio 0.7950", None)
        ]
    );
}
