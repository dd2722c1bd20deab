//! Spring Boot configuration as flat `key = value` entries with their place in the file, read the
//! way Spring reads `application.yml` (YAML documents, nested keys joined by `.`, list items as
//! `key[i]`) and `application.properties` (java.util.Properties syntax, `#---` between
//! documents), document by document; which documents apply, and so which values win, is
//! spring_profiles.rs's question.

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

/// One value and where it was written (1-based line and column of the value).
#[derive(Debug, Clone)]
pub struct Entry {
    /// The key as written, dotted (`resilience4j.retry.instances.backendA.max-attempts`).
    pub key: String,
    pub value: String,
    pub line: usize,
    pub col: usize,
}

#[derive(Debug, Default)]
pub struct SpringFile {
    /// Each document's entries, in file order.
    pub documents: Vec<Vec<Entry>>,
}

/// A Spring property name's canonical form for comparison: relaxed binding treats
/// `max-attempts`, `maxAttempts`, `max_attempts` and `MAX_ATTEMPTS` as one name.
pub fn relaxed(name: &str) -> String {
    name.chars().filter(|c| *c != '-' && *c != '_').flat_map(char::to_lowercase).collect()
}

/// The elements of a dotted key; `[a.b]` keeps its dots (Spring's map-key escape) and loses
/// its brackets, and an index (`record-exceptions[0]`) stays on its element.
pub fn elements(key: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    for c in key.chars() {
        match c {
            '[' => {
                depth += 1;
                cur.push(c);
            }
            ']' => {
                depth = depth.saturating_sub(1);
                cur.push(c);
            }
            '.' if depth == 0 => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter()
        .filter(|e| !e.is_empty())
        .map(|e| if e.starts_with('[') && e.ends_with(']') { e[1..e.len() - 1].to_string() } else { e })
        .collect()
}

fn add_document(file: &mut SpringFile, doc: Vec<Entry>) {
    file.documents.push(doc);
}

// ---------------------------------------------------------------- YAML

enum Frame {
    Map { prefix: String, key: Option<String>, seen: Vec<String> },
    Seq { prefix: String, index: usize },
}

struct Flattener {
    stack: Vec<Frame>,
    doc: Vec<Entry>,
    file: SpringFile,
    error: Option<(usize, usize, String)>,
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() { key.to_string() } else { format!("{prefix}.{key}") }
}

impl Flattener {
    fn fail(&mut self, mark: Marker, why: String) {
        if self.error.is_none() {
            self.error = Some((mark.line(), mark.col() + 1, why));
        }
    }

    /// The key under which the next value or container goes, or None at a document's root.
    fn next_key(&mut self, mark: Marker) -> Option<String> {
        match self.stack.last_mut() {
            None => None,
            Some(Frame::Map { prefix, key, .. }) => match key.take() {
                Some(k) => Some(join(prefix, &k)),
                None => {
                    let p = prefix.clone();
                    self.fail(
                        mark,
                        format!("{}: a mapping or a list cannot be a key", if p.is_empty() { "(root)" } else { &p }),
                    );
                    None
                }
            },
            Some(Frame::Seq { prefix, index }) => {
                let k = format!("{prefix}[{index}]");
                *index += 1;
                Some(k)
            }
        }
    }

    fn scalar(&mut self, value: String, mark: Marker) {
        if let Some(Frame::Map { prefix, key, seen }) = self.stack.last_mut()
            && key.is_none()
        {
            // Spring's YAML loader refuses duplicate keys (SnakeYAML with allowDuplicateKeys off).
            if seen.contains(&value) {
                let k = join(prefix, &value);
                self.fail(mark, format!("{k}: duplicate key"));
                return;
            }
            seen.push(value.clone());
            *key = Some(value);
            return;
        }
        let Some(key) = self.next_key(mark) else {
            return;
        };
        // A YAML null (`~`, `null`, nothing) is Spring's empty value: the property stays unset.
        let value = if matches!(value.as_str(), "~" | "null" | "Null" | "NULL") { String::new() } else { value };
        // yaml-rust2 0.13's Marker::col counts from 0 (its doc comment says 1): measured.
        self.doc.push(Entry { key, value, line: mark.line(), col: mark.col() + 1 });
    }
}

impl MarkedEventReceiver for Flattener {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        match ev {
            Event::DocumentStart => self.stack.clear(),
            Event::DocumentEnd => {
                let doc = std::mem::take(&mut self.doc);
                add_document(&mut self.file, doc);
            }
            Event::MappingStart(..) => {
                let prefix =
                    if self.stack.is_empty() { String::new() } else { self.next_key(mark).unwrap_or_default() };
                self.stack.push(Frame::Map { prefix, key: None, seen: Vec::new() });
            }
            Event::SequenceStart(..) => {
                let prefix =
                    if self.stack.is_empty() { String::new() } else { self.next_key(mark).unwrap_or_default() };
                self.stack.push(Frame::Seq { prefix, index: 0 });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                self.stack.pop();
            }
            Event::Scalar(value, ..) => self.scalar(value, mark),
            Event::Alias(_) => {
                self.fail(mark, "(YAML): aliases are not read by this importer; write the value out".into())
            }
            Event::Nothing | Event::StreamStart | Event::StreamEnd => {}
        }
    }
}

/// Every document of a YAML file. Errors are `(line, col, message)`.
pub fn read_yaml(text: &str) -> Result<SpringFile, (usize, usize, String)> {
    let mut f = Flattener { stack: Vec::new(), doc: Vec::new(), file: SpringFile::default(), error: None };
    let mut parser = Parser::new_from_str(text);
    parser
        .load(&mut f, true)
        .map_err(|e| (e.marker().line(), e.marker().col() + 1, format!("(YAML): {}", e.info())))?;
    if let Some(e) = f.error {
        return Err(e);
    }
    Ok(f.file)
}

// ---------------------------------------------------------------- .properties

/// A `.properties` file as `java.util.Properties.load` reads it: `=`, `:` or whitespace between
/// key and value, `#` and `!` comment lines, a backslash at the end of a line continues it
/// (the next line's leading blanks dropped), `\uXXXX`, `\t`, `\n`, `\r`, `\f`, and any other
/// escaped character stands for itself. A `#---` (or `!---`) line separates documents as Spring
/// Boot 2.4 and later read it ([`is_new_document`]; a comment before a document's first
/// property joins it to the one before). Errors are `(line, col, message)`.
pub fn read_properties(text: &str) -> Result<SpringFile, (usize, usize, String)> {
    let mut file = SpringFile::default();
    let mut doc = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    // The previous line's comment character, if it was a comment (Spring's
    // `lastLineCommentPrefixCharacter`; a blank or a property line clears it).
    let mut last_comment: Option<char> = None;
    let mut i = 0;
    while i < lines.len() {
        let start = i;
        let trimmed = lines[i].trim_start_matches([' ', '\t', '\x0c']);
        if let Some(prefix) = trimmed.chars().next().filter(|c| *c == '#' || *c == '!') {
            if is_new_document(lines[i], prefix, last_comment) {
                if !doc.is_empty() {
                    add_document(&mut file, std::mem::take(&mut doc));
                }
            } else {
                // A comment before a document's first property joins it to the one before
                // (OriginTrackedPropertiesLoader.load: `documents.remove(documents.size() - 1)`).
                if doc.is_empty()
                    && let Some(previous) = file.documents.pop()
                {
                    doc = previous;
                }
                last_comment = Some(prefix);
            }
            i += 1;
            continue;
        }
        last_comment = None;
        if trimmed.is_empty() {
            i += 1;
            continue;
        }
        // The logical line: (char, line, col) for each character, continuations joined.
        let mut chars: Vec<(char, usize, usize)> = Vec::new();
        let mut first = true;
        loop {
            let line = lines[i];
            let indent = if first { 0 } else { line.len() - line.trim_start_matches([' ', '\t', '\x0c']).len() };
            first = false;
            let body: Vec<char> = line[indent..].chars().collect();
            let backslashes = body.iter().rev().take_while(|c| **c == '\\').count();
            let continues = backslashes % 2 == 1 && i + 1 < lines.len();
            let keep = if backslashes % 2 == 1 { body.len() - 1 } else { body.len() };
            let col0 = line[..indent].chars().count();
            for (j, c) in body[..keep].iter().enumerate() {
                chars.push((*c, i + 1, col0 + j + 1));
            }
            i += 1;
            if !continues {
                break;
            }
        }
        let (key, rest) = split_key(&chars);
        let key = unescape(&key)?;
        let (line, col) = rest.first().map(|(_, l, c)| (*l, *c)).unwrap_or((start + 1, chars.len() + 1));
        let value = unescape(rest)?;
        doc.push(Entry { key, value, line, col });
    }
    if !doc.is_empty() {
        add_document(&mut file, doc);
    }
    Ok(file)
}

/// Spring Boot's `OriginTrackedPropertiesLoader.isNewDocument`: `#---` (or `!---`) from the
/// line's first column, then nothing but blanks, and not right after a comment line with the
/// same character.
fn is_new_document(line: &str, prefix: char, last_comment: Option<char>) -> bool {
    last_comment != Some(prefix)
        && line
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_prefix("---"))
            .is_some_and(|rest| rest.chars().all(|c| matches!(c, ' ' | '\t' | '\x0c')))
}

type Located = (char, usize, usize);

/// The key (still escaped) and the value's characters.
fn split_key(chars: &[Located]) -> (Vec<Located>, &[Located]) {
    let mut key = Vec::new();
    let mut k = 0;
    while k < chars.len() {
        let c = chars[k].0;
        if c == '\\' && k + 1 < chars.len() {
            key.push(chars[k]);
            key.push(chars[k + 1]);
            k += 2;
            continue;
        }
        if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\x0c' {
            break;
        }
        key.push(chars[k]);
        k += 1;
    }
    while k < chars.len() && matches!(chars[k].0, ' ' | '\t' | '\x0c') {
        k += 1;
    }
    if k < chars.len() && matches!(chars[k].0, '=' | ':') {
        k += 1;
    }
    while k < chars.len() && matches!(chars[k].0, ' ' | '\t' | '\x0c') {
        k += 1;
    }
    (key, &chars[k..])
}

fn unescape(chars: &[Located]) -> Result<String, (usize, usize, String)> {
    let mut out = String::new();
    let mut k = 0;
    while k < chars.len() {
        let (c, line, col) = chars[k];
        if c != '\\' || k + 1 == chars.len() {
            out.push(c);
            k += 1;
            continue;
        }
        let e = chars[k + 1].0;
        k += 2;
        match e {
            't' => out.push('\t'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            'f' => out.push('\x0c'),
            'u' => {
                let hex: String = chars[k..].iter().take(4).map(|x| x.0).collect();
                let code = (hex.len() == 4).then(|| u32::from_str_radix(&hex, 16).ok()).flatten();
                match code.and_then(char::from_u32) {
                    Some(ch) => out.push(ch),
                    None => return Err((line, col, format!("(properties): malformed \\uxxxx encoding `\\u{hex}`"))),
                }
                k += 4;
            }
            other => out.push(other),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_separators_continuations_and_escapes() {
        let f = read_properties("# c\n! c\na.b=1\na.c : 2\na.d 3\na.e = x\\\n    y\na.f=\\u0041\\t\n").unwrap();
        let kv: Vec<(&str, &str)> = f.documents[0].iter().map(|e| (e.key.as_str(), e.value.as_str())).collect();
        assert_eq!(kv, [("a.b", "1"), ("a.c", "2"), ("a.d", "3"), ("a.e", "xy"), ("a.f", "A\t")]);
        assert_eq!((f.documents[0][1].line, f.documents[0][1].col), (4, 7));
    }

    #[test]
    fn yaml_keys_join_document_by_document() {
        let f = read_yaml("a:\n  b: 1\n  c: [x, y]\n---\nspring.config.activate.on-profile: prod\na.b: 2\n").unwrap();
        let kv: Vec<(&str, &str)> = f.documents[0].iter().map(|e| (e.key.as_str(), e.value.as_str())).collect();
        assert_eq!(kv, [("a.b", "1"), ("a.c[0]", "x"), ("a.c[1]", "y")]);
        assert_eq!((f.documents[0][0].line, f.documents[0][0].col), (2, 6));
        assert_eq!(f.documents.len(), 2);
    }

    #[test]
    fn relaxed_names_and_bracketed_elements() {
        assert_eq!(relaxed("max-attempts"), relaxed("maxAttempts"));
        assert_eq!(relaxed("MAX_ATTEMPTS"), "maxattempts");
        assert_eq!(elements("r.instances.[a.b].x"), ["r", "instances", "a.b", "x"]);
    }
}
