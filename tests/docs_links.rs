//! References between the documents must resolve (issue 7). README.md, docs/*.md and
//! scenarios/*.toml are scanned for:
//!
//! - plain references `docs/<file>.md`: the file must exist; when followed by `section N` (or
//!   `sections N and M`, `sections N-M`), the file must have a heading numbered N (and M);
//! - markdown links `](path)` and `](path#anchor)` to local files: the path must exist, and the
//!   anchor must be the GitHub slug of a heading of the target (or an explicit `<a id>`);
//! - the text `ANCHORS.md`: its contents now live in docs/references.md.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md, docs/*.md and scenarios/*.toml, in a fixed order.
fn scanned_files() -> Vec<PathBuf> {
    let root = root();
    let mut files = vec![root.join("README.md")];
    for (dir, ext) in [("docs", "md"), ("scenarios", "toml")] {
        let mut found: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == ext))
            .collect();
        found.sort();
        files.extend(found);
    }
    files
}

/// GitHub's heading slug: lowercase; letters, digits, `-` and `_` kept; spaces become `-`;
/// every other character dropped.
fn slug(heading: &str) -> String {
    let mut out = String::new();
    for c in heading.trim().chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() || c == '-' || c == '_' {
            out.push(c);
        } else if c == ' ' {
            out.push('-');
        }
    }
    out
}

/// The text of each ATX heading outside fenced code blocks.
fn headings(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
            out.push(line[hashes..].trim().trim_end_matches('#').trim().to_string());
        }
    }
    out
}

/// Every anchor a markdown file defines: heading slugs (a repeated slug gets `-1`, `-2`, ... as
/// on GitHub) and explicit `<a id="...">` / `<a name="...">`.
fn anchors(text: &str) -> Vec<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for h in headings(text) {
        let s = slug(&h);
        let n = seen.entry(s.clone()).or_insert(0);
        out.push(if *n == 0 { s.clone() } else { format!("{s}-{n}") });
        *n += 1;
    }
    for attr in ["id=\"", "name=\""] {
        for (i, _) in text.match_indices(&format!("<a {attr}")) {
            let rest = &text[i + 3 + attr.len()..];
            if let Some(end) = rest.find('"') {
                out.push(rest[..end].to_string());
            }
        }
    }
    out
}

/// The section numbers of a markdown file: the first word of each heading without its final
/// dot ("## 7. Metastable failures" -> "7", "### 8.12 `load_shedding`" -> "8.12").
fn section_numbers(text: &str) -> Vec<String> {
    headings(text)
        .iter()
        .filter_map(|h| h.split_whitespace().next())
        .map(|w| w.trim_end_matches('.').to_string())
        .filter(|w| w.starts_with(|c: char| c.is_ascii_digit()))
        .collect()
}

fn line_of(text: &str, byte: usize) -> usize {
    text[..byte].matches('\n').count() + 1
}

/// The numbers after "section " / "sections ": `7`, `6 and 10`, `3-6`, `4.4 and 8.7-8.14`.
fn cited_sections(after: &str) -> Vec<String> {
    let Some(mut s) = after.strip_prefix(" sections").or_else(|| after.strip_prefix(" section")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    loop {
        s = s.trim_start();
        let n = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
        let number = s[..n].trim_end_matches('.');
        if !number.starts_with(|c: char| c.is_ascii_digit()) {
            return out;
        }
        out.push(number.to_string());
        s = &s[n..];
        // Another number follows after "-", ", " or " and ".
        let next = if let Some(r) = s.strip_prefix('-') {
            r
        } else if let Some(r) = s.strip_prefix(',') {
            r
        } else if let Some(r) = s.trim_start().strip_prefix("and").filter(|r| r.starts_with(char::is_whitespace)) {
            r
        } else {
            return out;
        };
        if !next.trim_start().starts_with(|c: char| c.is_ascii_digit()) {
            return out;
        }
        s = next;
    }
}

fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// Plain `docs/<file>.md` references, with the sections they cite.
fn check_plain_references(file: &Path, text: &str, problems: &mut Vec<String>) {
    let shown = file.strip_prefix(root()).unwrap_or(file).display().to_string();
    for (i, _) in text.match_indices("docs/") {
        let before = text[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || matches!(c, '/' | '.' | '_' | '-')) {
            continue;
        }
        let rest = &text[i + 5..];
        let n = rest.find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))).unwrap_or(rest.len());
        let name = rest[..n].trim_end_matches('.');
        if !name.ends_with(".md") {
            continue;
        }
        let line = line_of(text, i);
        let target = root().join("docs").join(name);
        let Some(target_text) = read(&target) else {
            problems.push(format!("{shown}:{line}: docs/{name} does not exist"));
            continue;
        };
        let numbers = section_numbers(&target_text);
        for cited in cited_sections(&rest[name.len()..]) {
            if !numbers.contains(&cited) {
                problems.push(format!("{shown}:{line}: docs/{name} has no section {cited}"));
            }
        }
    }
}

/// Markdown links `](target)` to local files, outside fenced code blocks.
fn check_links(file: &Path, text: &str, problems: &mut Vec<String>) {
    let shown = file.strip_prefix(root()).unwrap_or(file).display().to_string();
    let dir = file.parent().unwrap();
    let mut fenced = false;
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        for (i, _) in line.match_indices("](") {
            let rest = &line[i + 2..];
            let end = rest.find([')', ' ']).unwrap_or(rest.len());
            let target = &rest[..end];
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target, None),
            };
            let resolved = if path.is_empty() { file.to_path_buf() } else { dir.join(path) };
            if !resolved.exists() {
                problems.push(format!("{shown}:{}: link to {target}: {path} does not exist", n + 1));
                continue;
            }
            let Some(anchor) = anchor else { continue };
            let Some(target_text) = read(&resolved) else {
                problems.push(format!("{shown}:{}: link to {target}: {path} is not a text file", n + 1));
                continue;
            };
            if !anchors(&target_text).iter().any(|a| a == anchor) {
                problems.push(format!("{shown}:{}: link to {target}: no heading has the slug #{anchor}", n + 1));
            }
        }
    }
}

#[test]
fn slugs_follow_github() {
    assert_eq!(slug("7. Metastable failures"), "7-metastable-failures");
    assert_eq!(slug("8.4 Per-step overrides: `steps.<step_id>`"), "84-per-step-overrides-stepsstep_id");
    assert_eq!(slug("2.12 Circuit breakers: `breaker.<label>.<metric>`"), "212-circuit-breakers-breakerlabelmetric");
    assert_eq!(slug("10. `[slo]` and `[slo.regression]`"), "10-slo-and-sloregression");
    assert_eq!(
        slug("Sweeps that take a day: resume, shards and clusters"),
        "sweeps-that-take-a-day-resume-shards-and-clusters"
    );
    let text = "# A\n## Same\n```\n## Not a heading\n```\n## Same\n<a id=\"explicit\"></a>\n";
    assert_eq!(anchors(text), ["a", "same", "same-1", "explicit"]);
    assert_eq!(section_numbers("## 7. X\n### 8.12 `y`\n### 6.2a z\n## Tested\n"), ["7", "8.12", "6.2a"]);
}

#[test]
fn cited_section_lists_are_parsed() {
    assert_eq!(cited_sections(" section 7."), ["7"]);
    assert_eq!(cited_sections(" sections 6 and 10):"), ["6", "10"]);
    assert_eq!(cited_sections(" sections 3-6)."), ["3", "6"]);
    assert_eq!(cited_sections(" sections 4.4 and\n8.7-8.14 give"), ["4.4", "8.7", "8.14"]);
    assert_eq!(cited_sections(" sections 13 and 15): two"), ["13", "15"]);
    assert_eq!(cited_sections(" every metric"), Vec::<String>::new());
}

#[test]
fn document_references_resolve() {
    let files = scanned_files();
    assert!(files.len() >= 8, "found only {} files: run from the crate root", files.len());
    let mut problems = Vec::new();
    for file in &files {
        let text = read(file).unwrap();
        check_plain_references(file, &text, &mut problems);
        check_links(file, &text, &mut problems);
    }
    assert!(problems.is_empty(), "broken references:\n{}", problems.join("\n"));
}

#[test]
fn nothing_cites_the_missing_anchors_file() {
    let mut hits = Vec::new();
    for file in scanned_files() {
        let text = read(&file).unwrap();
        for (i, _) in text.match_indices("ANCHORS.md") {
            hits.push(format!("{}:{}", file.strip_prefix(root()).unwrap().display(), line_of(&text, i)));
        }
    }
    assert!(
        hits.is_empty(),
        "ANCHORS.md is not in the repository; cite docs/references.md instead:\n{}",
        hits.join("\n")
    );
}
