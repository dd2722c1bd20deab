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
            field: field.to_string(),
            message: message.into(),
        }
    }

    pub fn in_argument(argument: &str, field: &str, message: impl Into<String>) -> Self {
        ScenarioError {
            origin: Origin::Argument(argument.to_string()),
            field: field.to_string(),
            message: message.into(),
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
}
