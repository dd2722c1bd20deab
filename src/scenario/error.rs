//! One error type for bad input: where it is (file, line, column or the command-line argument),
//! which field, and what is wrong.

use std::fmt;

/// A path to a field inside a scenario, e.g. `dependency[2].service_time.p95_ms`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldPath(pub Vec<PathSegment>);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSegment {
    Key(String),
    Index(usize),
}

impl FieldPath {
    pub fn root() -> Self {
        FieldPath(Vec::new())
    }

    pub fn key(&self, key: &str) -> Self {
        let mut next = self.clone();
        next.0.push(PathSegment::Key(key.to_string()));
        next
    }

    pub fn index(&self, index: usize) -> Self {
        let mut next = self.clone();
        next.0.push(PathSegment::Index(index));
        next
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for segment in &self.0 {
            match segment {
                PathSegment::Key(k) => {
                    if !first {
                        f.write_str(".")?;
                    }
                    f.write_str(k)?;
                }
                PathSegment::Index(i) => write!(f, "[{i}]")?,
            }
            first = false;
        }
        Ok(())
    }
}

/// Where a bad value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    File { path: String, line: Option<usize>, column: Option<usize> },
    Argument(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    pub origin: Origin,
    pub field: String,
    pub message: String,
}

impl ScenarioError {
    pub fn in_file(
        path: &str,
        line: Option<usize>,
        column: Option<usize>,
        field: &str,
        message: impl Into<String>,
    ) -> Self {
        ScenarioError {
            origin: Origin::File { path: path.to_string(), line, column },
            field: tame_field(field),
            message: tame(&message.into(), MAX_MESSAGE_CHARS),
        }
    }

    pub fn in_argument(argument: &str, field: &str, message: impl Into<String>) -> Self {
        ScenarioError {
            origin: Origin::Argument(tame(argument, MAX_FIELD_CHARS)),
            field: tame_field(field),
            message: tame(&message.into(), MAX_MESSAGE_CHARS),
        }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.origin {
            Origin::File { path, line: Some(line), column: Some(column) } => write!(f, "{path}:{line}:{column}: ")?,
            Origin::File { path, line: Some(line), column: None } => write!(f, "{path}:{line}: ")?,
            Origin::File { path, .. } => write!(f, "{path}: ")?,
            Origin::Argument(arg) => write!(f, "argument `{arg}`: ")?,
        }
        if !self.field.is_empty() {
            write!(f, "{}: ", self.field)?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ScenarioError {}

/// Characters of a value that an error message quotes; the rest is counted, not shown.
pub const QUOTE_CHARS: usize = 60;
/// Bounds on an error's field path and message (a name or a list of names can be megabytes).
const MAX_FIELD_CHARS: usize = 200;
const MAX_MESSAGE_CHARS: usize = 1000;

/// An error message built from input that is not a scenario (a shard file, a checkpoint) as
/// scenario errors are kept: one line, long quoted values cut with their size, at most 1 000
/// characters. serde_json quotes a whole string it did not expect, megabytes of it.
pub fn tame_message(message: &str) -> String {
    tame(message, MAX_MESSAGE_CHARS)
}

/// A value from the input as an error message shows it: in backticks, control characters
/// escaped (an error stays one line), and past [`QUOTE_CHARS`] characters cut with its size,
/// so a 10 MB name is echoed as `` `aaaa...` (10485760 bytes) ``.
pub fn quote(value: &str) -> String {
    match value.char_indices().nth(QUOTE_CHARS) {
        None => format!("`{}`", escape_controls(value)),
        Some((cut, _)) => format!("`{}...` ({} bytes)", escape_controls(&value[..cut]), value.len()),
    }
}

/// The message for a name that refers to nothing: the closest known name when one is near
/// (an edit or two away), then the names there are, so a typo is fixed without opening the file:
/// "unknown dependency `modle-primary`; did you mean `model-primary`? (known: ...)".
pub fn unknown_name<'a>(kind: &str, name: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    let known: Vec<&str> = known.into_iter().collect();
    let mut message = format!("unknown {kind} {}", quote(name));
    if let Some(close) = closest(name, &known) {
        message.push_str(&format!("; did you mean {}?", quote(close)));
    }
    const LISTED: usize = 12;
    match known.len() {
        0 => message.push_str(&format!(" (there is no {kind})")),
        n => {
            let listed: Vec<String> = known.iter().take(LISTED).map(|k| quote(k)).collect();
            let more = if n > LISTED { format!(" and {} more", n - LISTED) } else { String::new() };
            message.push_str(&format!(" (known: {}{more})", listed.join(", ")));
        }
    }
    message
}

/// ` (did you mean `x`?)` for a metric or other name not among `known`: a known name that
/// contains it or is contained in it, else the nearest in edit distance; empty when none is near.
pub fn name_hint(name: &str, known: &[String]) -> String {
    let known: Vec<&str> = known.iter().map(String::as_str).collect();
    let near = known.iter().copied().find(|k| k.contains(name) || name.contains(k)).or_else(|| closest(name, &known));
    near.map(|k| format!(" (did you mean `{k}`?)")).unwrap_or_default()
}

/// The known name nearest to `name` in edit distance, if it is near enough to be a typo.
pub fn closest<'a>(name: &str, known: &[&'a str]) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    known
        .iter()
        .map(|k| (edit_distance(&name.to_lowercase(), &k.to_lowercase()), *k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Levenshtein distance over characters; names longer than 64 characters are not compared.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.len() > 64 || b.len() > 64 {
        return usize::MAX;
    }
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

fn escape_controls(text: &str) -> String {
    text.chars().flat_map(|c| if c.is_control() { c.escape_default().collect() } else { vec![c] }).collect()
}

/// The safety net under [`quote`] for text we do not write ourselves (serde's and the
/// parsers' messages embed values, field paths embed map keys): control characters escaped,
/// and when the text is longer than `max_chars` characters, any backtick- or
/// double-quote-delimited span longer than [`QUOTE_CHARS`] cut as `quote` cuts it and the
/// whole kept to `max_chars` characters.
fn tame(text: &str, max_chars: usize) -> String {
    // Measured once escaped: a control character takes up to 8 characters as `\u{..}`.
    let escaped = escape_controls(text);
    if escaped.chars().nth(max_chars).is_none() {
        return escaped;
    }
    let budget = 4 * max_chars;
    let mut out = String::new();
    let mut rest = text;
    while out.len() < budget {
        let Some(open) = rest.find(['`', '"']) else { break };
        out.push_str(&escape_controls(cut_at(&rest[..open], budget)));
        let delimiter = &rest[open..open + 1];
        let inside = &rest[open + 1..];
        let Some(close) = inside.find(delimiter) else {
            // An unpaired delimiter (a value that was never closed): the rest is cut below.
            out.push_str(delimiter);
            rest = inside;
            break;
        };
        let span = &inside[..close];
        // Up to QUOTE_CHARS + 3 characters are kept: what `quote` cut (its prefix and `...`)
        // is not cut again.
        let longer = span.char_indices().nth(QUOTE_CHARS + 3).is_some();
        match span.char_indices().nth(QUOTE_CHARS) {
            Some((cut, _)) if longer => out.push_str(&format!(
                "{delimiter}{}...{delimiter} ({} bytes)",
                escape_controls(&span[..cut]),
                span.len()
            )),
            _ => out.push_str(&format!("{delimiter}{}{delimiter}", escape_controls(span))),
        }
        rest = &inside[close + 1..];
    }
    out.push_str(&escape_controls(cut_at(rest, budget)));
    match out.char_indices().nth(max_chars) {
        None => out,
        Some((cut, _)) => format!("{}... ({} bytes in all)", &out[..cut], text.len()),
    }
}

/// A field path with every segment longer than [`QUOTE_CHARS`] (a map key such as a policy
/// name) cut to its prefix; the message, not the path, tells the value's size.
fn tame_field(field: &str) -> String {
    if field.chars().nth(QUOTE_CHARS).is_none() {
        return escape_controls(field);
    }
    let segments: Vec<String> = field
        .split('.')
        .map(|segment| match segment.char_indices().nth(QUOTE_CHARS) {
            None => escape_controls(segment),
            Some((cut, _)) => format!("{}...", escape_controls(&segment[..cut])),
        })
        .collect();
    tame(&segments.join("."), MAX_FIELD_CHARS)
}

/// The longest prefix of `text` of at most `bytes` bytes that ends on a character boundary.
fn cut_at(text: &str, bytes: usize) -> &str {
    let mut end = bytes.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// 1-based line and column of a byte offset.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.bytes().filter(|b| *b == b'\n').count() + 1;
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_positions_render_like_compilers_do() {
        let p = FieldPath::root().key("dependency").index(2).key("servers");
        assert_eq!(p.to_string(), "dependency[2].servers");
        assert_eq!(line_column("ab\ncd\nef", 4), (2, 2));
        assert_eq!(line_column("abc", 0), (1, 1));
        let e = ScenarioError::in_file("s.toml", Some(3), Some(5), "simulation.seed", "expected an integer");
        assert_eq!(e.to_string(), "s.toml:3:5: simulation.seed: expected an integer");
    }

    #[test]
    fn quotes_are_short_and_one_line() {
        assert_eq!(quote("db"), "`db`");
        assert_eq!(quote("a\nb"), "`a\\nb`");
        let long = "é".repeat(100);
        assert_eq!(quote(&long), format!("`{}...` (200 bytes)", "é".repeat(QUOTE_CHARS)));
    }

    #[test]
    fn messages_from_parsers_are_tamed() {
        let name = "x".repeat(10_000_000);
        let e = ScenarioError::in_file(
            "s.toml",
            Some(1),
            Some(1),
            &format!("policy.{name}.timeout_ms"),
            format!("unknown variant `{name}`, expected \"{name}\" or `a\nb`"),
        );
        let text = e.to_string();
        assert!(text.len() < 500, "{} bytes: {text}", text.len());
        assert!(!text.contains('\n'), "{text}");
        assert!(text.contains("(10000000 bytes)"), "{text}");
        assert!(text.contains("unknown variant `xxxx"), "{text}");
        // What quote() cut is not cut again when the whole message is long.
        let list = vec!["p"; 600].join(", ");
        let e = ScenarioError::in_file("s.toml", None, None, "", format!("no policy {} ({list})", quote(&name)));
        assert!(
            e.to_string().starts_with(&format!("s.toml: no policy `{}...` (10000000 bytes) (p, p", "x".repeat(60))),
            "{e}"
        );
        assert!(e.to_string().ends_with("bytes in all)"), "{e}");
        // Short messages are left alone, even when they quote.
        let e = ScenarioError::in_argument("--set a=1", "a", "unknown value `q`");
        assert_eq!(e.to_string(), "argument `--set a=1`: a: unknown value `q`");
    }

    #[test]
    fn a_near_name_is_suggested_and_the_known_ones_listed() {
        let known = ["model-primary", "model-lite", "vector-search"];
        let m = unknown_name("dependency", "modle-primary", known);
        assert_eq!(
            m,
            "unknown dependency `modle-primary`; did you mean `model-primary`? (known: `model-primary`, `model-lite`, `vector-search`)"
        );
        assert!(!unknown_name("dependency", "billing", known).contains("did you mean"));
        assert_eq!(closest("Vector-Serch", &known), Some("vector-search"));
        let many: Vec<String> = (0..20).map(|i| format!("d{i}")).collect();
        assert!(unknown_name("dependency", "zzz", many.iter().map(String::as_str)).ends_with("and 8 more)"));
        assert!(unknown_name("step", "x", []).ends_with("(there is no step)"));
    }
}
