//! Which documents of a Spring Boot file apply, as Spring Boot 2.4+ decides it
//! (`ConfigDataActivationContext`, `ConfigDataProperties.Activate`, `Profiles.of`): the active
//! profiles are the ones the user names (`--profile`, Spring's `--spring.profiles.active`),
//! else `spring.profiles.active` from the documents that apply to every profile, else the
//! default profile (`spring.profiles.default`, else `default`), plus `spring.profiles.include`.
//! A document with `spring.config.activate.on-profile` (or the legacy `spring.profiles`)
//! applies when any of its profile expressions matches them (`prod`, `!prod`, `a & b`,
//! `a | b`, parentheses); one with `spring.config.activate.on-cloud-platform` only on that
//! platform, which a local import is not.

use super::spring::{Entry, elements, relaxed};

/// Keys that activate a document, in their relaxed form, by the element before an index.
const ON_PROFILE: [&str; 2] = ["spring.config.activate.onprofile", "spring.profiles"];
const ON_CLOUD: &str = "spring.config.activate.oncloudplatform";
const ACTIVE: &str = "spring.profiles.active";
const INCLUDE: &str = "spring.profiles.include";
const DEFAULT: &str = "spring.profiles.default";
const GROUP: &str = "spring.profiles.group.";

/// A key's relaxed form without a trailing list index (`a.b[0]` -> `a.b`).
fn base_key(key: &str) -> String {
    let k = relaxed(key);
    match k.find('[') {
        Some(i) if k.ends_with(']') => k[..i].to_string(),
        _ => k,
    }
}

/// The values a key holds in a document: a YAML list's items, or a comma-separated string.
fn values(doc: &[Entry], key: &str) -> Vec<(String, usize, usize)> {
    doc.iter()
        .filter(|e| base_key(&e.key) == key)
        .flat_map(|e| {
            e.value
                .split(',')
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(|v| (v.to_string(), e.line, e.col))
                .collect::<Vec<_>>()
        })
        .collect()
}

fn first_entry<'a>(doc: &'a [Entry], keys: &[&str]) -> Option<&'a Entry> {
    doc.iter().find(|e| keys.contains(&base_key(&e.key).as_str()))
}

/// What the file's documents come to for one set of active profiles.
pub struct Activation {
    pub entries: Vec<Entry>,
    /// The active profiles and where they came from, for the fragment's header.
    pub active: String,
    /// `line N: key = value` of each document set aside, with why.
    pub set_aside: Vec<String>,
}

/// Errors are `(line, col, message)`, located at the key at fault.
pub fn activate(documents: &[Vec<Entry>], named: &[String]) -> Result<Activation, (usize, usize, String)> {
    let conditional = |doc: &[Entry]| first_entry(doc, &[ON_PROFILE[0], ON_PROFILE[1], ON_CLOUD]).is_some();
    for doc in documents.iter().filter(|d| conditional(d)) {
        // ConfigDataEnvironmentContributor: these are invalid in a profile-specific document.
        if let Some(e) = first_entry(doc, &[ACTIVE, INCLUDE, DEFAULT]) {
            return Err((
                e.line,
                e.col,
                format!(
                    "{}: Spring refuses it in a document that applies to a profile or a cloud platform (InvalidConfigDataPropertyException)",
                    e.key
                ),
            ));
        }
    }
    let general: Vec<&Vec<Entry>> = documents.iter().filter(|d| !conditional(d)).collect();
    let last = |key: &str| general.iter().rev().map(|d| values(d, key)).find(|v| !v.is_empty());
    let groups = groups(&general);
    // `Profiles`: the activated profiles (named, else the file's `spring.profiles.active`) and
    // every document's `spring.profiles.include` (ConfigDataEnvironment.getIncludedProfiles
    // adds each contributor's), expanded through the groups; when none, the default ones.
    let (mut activated, mut from): (Vec<String>, String) = if !named.is_empty() {
        (named.iter().flat_map(|n| n.split(',')).map(|n| n.trim().to_string()).collect(), "--profile".into())
    } else if let Some(v) = last(ACTIVE) {
        (v.iter().map(|(p, ..)| p.clone()).collect(), format!("spring.profiles.active (line {})", v[0].1))
    } else {
        (Vec::new(), String::new())
    };
    let included: Vec<(String, usize, usize)> = general.iter().flat_map(|d| values(d, INCLUDE)).collect();
    if let Some((_, line, _)) = included.first() {
        activated.extend(included.iter().map(|(p, ..)| p.clone()));
        from = if from.is_empty() { String::new() } else { format!("{from}, ") };
        from.push_str(&format!("spring.profiles.include (line {line})"));
    }
    if activated.is_empty() {
        (activated, from) = match last(DEFAULT) {
            Some(v) => {
                (v.iter().map(|(p, ..)| p.clone()).collect(), format!("spring.profiles.default (line {})", v[0].1))
            }
            None => (vec!["default".to_string()], "no profile named: Spring's default profile".into()),
        };
    }
    let active = expand(&activated, &groups);
    if active.iter().any(|p| !activated.contains(p)) {
        from.push_str(", with spring.profiles.group");
    }
    let mut out =
        Activation { entries: Vec::new(), active: format!("{} ({from})", active.join(", ")), set_aside: Vec::new() };
    for doc in documents {
        match applies(doc, &active)? {
            None => out.entries.extend(doc.iter().cloned()),
            Some(why) => out.set_aside.push(why),
        }
    }
    Ok(out)
}

/// `spring.profiles.group.<name>` of the documents that apply to every profile (Spring binds
/// them before it reads a profile's document), the last document's list for a name winning.
fn groups(general: &[&Vec<Entry>]) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for doc in general {
        let mut this_doc: Vec<(String, Vec<String>)> = Vec::new();
        for e in doc.iter().filter(|e| base_key(&e.key).starts_with(GROUP)) {
            // The group's own name as written: profile names are case-sensitive.
            let el = elements(&e.key);
            let Some(name) = el.get(3).map(|n| n.split('[').next().unwrap_or(n).to_string()) else { continue };
            let members = e.value.split(',').map(str::trim).filter(|v| !v.is_empty()).map(str::to_string);
            match this_doc.iter_mut().find(|(n, _)| *n == name) {
                Some((_, list)) => list.extend(members),
                None => this_doc.push((name, members.collect())),
            }
        }
        for (name, list) in this_doc {
            out.retain(|(n, _)| *n != name);
            out.push((name, list));
        }
    }
    out
}

/// `Profiles.expandProfiles`: each profile, then its group's members (depth first, in order),
/// each once. A group that names itself, directly or through another, is expanded once here
/// (Spring 2.4 would loop).
fn expand(profiles: &[String], groups: &[(String, Vec<String>)]) -> Vec<String> {
    let mut stack: Vec<String> = profiles.iter().rev().cloned().collect();
    let mut out: Vec<String> = Vec::new();
    while let Some(current) = stack.pop() {
        if out.contains(&current) {
            continue;
        }
        if let Some((_, members)) = groups.iter().find(|(n, _)| *n == current) {
            stack.extend(members.iter().rev().filter(|m| **m != current).cloned());
        }
        out.push(current);
    }
    out
}

/// Where a set-aside document is: its first line, and its activation key's when that is later.
fn document_at(doc: &[Entry], e: &Entry, key: &str, value: &str) -> String {
    match doc.first().map(|first| first.line) {
        Some(first) if first < e.line => format!("line {first} ({key} = {value} at line {})", e.line),
        _ => format!("line {}: {key} = {value}", e.line),
    }
}

/// None when the document applies; else why not.
fn applies(doc: &[Entry], active: &[String]) -> Result<Option<String>, (usize, usize, String)> {
    if let Some(e) = first_entry(doc, &[ON_CLOUD]) {
        return Ok(Some(format!(
            "{}: applies on that cloud platform only, and an import runs on none",
            document_at(doc, e, &e.key, &e.value)
        )));
    }
    let Some(e) = first_entry(doc, &ON_PROFILE) else { return Ok(None) };
    let expressions = values(doc, &base_key(&e.key));
    for (text, line, col) in &expressions {
        if matches(text, active).map_err(|why| (*line, *col, format!("{}: {why}", e.key)))? {
            return Ok(None);
        }
    }
    let shown: Vec<&str> = expressions.iter().map(|(t, ..)| t.as_str()).collect();
    let key = e.key.rsplit_once('[').map_or(e.key.as_str(), |(k, _)| k);
    Ok(Some(format!(
        "{}: no active profile matches (active: {}; --profile NAME activates one)",
        document_at(doc, e, key, &shown.join(", ")),
        active.join(", ")
    )))
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Name(String),
    Not,
    And,
    Or,
    Open,
    Close,
}

fn tokens(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut name = String::new();
    let flush = |name: &mut String, out: &mut Vec<Token>| {
        if !name.is_empty() {
            out.push(Token::Name(std::mem::take(name)));
        }
    };
    for c in text.chars() {
        let t = match c {
            '!' => Some(Token::Not),
            '&' => Some(Token::And),
            '|' => Some(Token::Or),
            '(' => Some(Token::Open),
            ')' => Some(Token::Close),
            c if c.is_whitespace() => None,
            c => {
                name.push(c);
                continue;
            }
        };
        flush(&mut name, &mut out);
        out.extend(t);
    }
    flush(&mut name, &mut out);
    out
}

/// A profile expression against the active profiles, as `Profiles.of` reads it: `&` and `|`
/// may not be mixed without parentheses.
fn matches(text: &str, active: &[String]) -> Result<bool, String> {
    let toks = tokens(text);
    let mut at = 0;
    let value = expression(&toks, &mut at, active, text)?;
    if at != toks.len() {
        return Err(malformed(text));
    }
    Ok(value)
}

fn malformed(text: &str) -> String {
    format!("malformed profile expression [{text}] (Spring refuses it)")
}

fn expression(toks: &[Token], at: &mut usize, active: &[String], text: &str) -> Result<bool, String> {
    let mut value = term(toks, at, active, text)?;
    let mut op: Option<Token> = None;
    while let Some(t @ (Token::And | Token::Or)) = toks.get(*at) {
        if op.as_ref().is_some_and(|o| o != t) {
            return Err(malformed(text));
        }
        op = Some(t.clone());
        *at += 1;
        let rhs = term(toks, at, active, text)?;
        value = if *t == Token::And { value && rhs } else { value || rhs };
    }
    Ok(value)
}

fn term(toks: &[Token], at: &mut usize, active: &[String], text: &str) -> Result<bool, String> {
    let t = toks.get(*at).ok_or_else(|| malformed(text))?;
    *at += 1;
    match t {
        Token::Name(n) => Ok(active.iter().any(|a| a == n)),
        Token::Not => Ok(!term(toks, at, active, text)?),
        Token::Open => {
            let v = expression(toks, at, active, text)?;
            if toks.get(*at) != Some(&Token::Close) {
                return Err(malformed(text));
            }
            *at += 1;
            Ok(v)
        }
        Token::And | Token::Or | Token::Close => Err(malformed(text)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn active(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn expressions_as_profiles_of_reads_them() {
        let a = active(&["prod", "eu"]);
        for (text, want) in [
            ("prod", true),
            ("dev", false),
            ("!prod", false),
            ("!dev", true),
            ("prod & eu", true),
            ("prod & us", false),
            ("dev | eu", true),
            ("(dev | eu) & !us", true),
            ("!(prod & eu)", false),
        ] {
            assert_eq!(matches(text, &a), Ok(want), "{text}");
        }
        for bad in ["prod & eu | dev", "(prod", "prod)", "&", "!"] {
            assert!(matches(bad, &a).unwrap_err().contains("malformed profile expression"), "{bad}");
        }
    }
}
