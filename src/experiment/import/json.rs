//! A JSON reader that keeps where every value and key starts (line and column, from 1), so that
//! an import can name the line of each key it maps or refuses. serde_json's `Value` forgets
//! positions. Numbers keep their text: gRPC parses `tokenRatio` from its digits (truncating),
//! so a float would lose what the user wrote. Duplicate keys are refused, as gRPC's own JSON
//! reader refuses them.

/// Where a value starts: line and column (in characters), both from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pos {
    pub line: u32,
    pub col: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    /// The number's text as written (valid JSON number grammar).
    Number(String),
    String(String),
    Array(Vec<Node>),
    /// Members in file order.
    Object(Vec<(String, Node)>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub pos: Pos,
    pub value: Json,
}

impl Json {
    /// The JSON type's name, as refusals say what was found.
    pub fn type_name(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Number(_) => "a number",
            Json::String(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }
}

impl Node {
    /// The value as it reads in the file, short (for comments): strings quoted, containers elided.
    pub fn raw(&self) -> String {
        match &self.value {
            Json::Null => "null".into(),
            Json::Bool(b) => b.to_string(),
            Json::Number(n) => n.clone(),
            Json::String(s) => format!("{s:?}"),
            Json::Array(items) => {
                let parts: Vec<String> = items.iter().map(Node::raw).collect();
                format!("[{}]", parts.join(", "))
            }
            Json::Object(_) => "{...}".into(),
        }
    }
}

/// Nesting deeper than this is refused rather than risking the stack on hostile input.
const MAX_DEPTH: usize = 64;

/// Parses a whole document; an error carries where it was found and why.
pub fn parse(text: &str) -> Result<Node, (Pos, String)> {
    let mut p = Parser { chars: text.chars().collect(), i: 0, line: 1, col: 1 };
    p.skip_ws();
    let node = p.value(0)?;
    p.skip_ws();
    if p.i < p.chars.len() {
        return Err((p.pos(), "trailing characters after the JSON value".into()));
    }
    Ok(node)
}

struct Parser {
    chars: Vec<char>,
    i: usize,
    line: u32,
    col: u32,
}

impl Parser {
    fn pos(&self) -> Pos {
        Pos { line: self.line, col: self.col }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.i).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.i += 1;
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t' | '\n' | '\r')) {
            self.bump();
        }
    }

    fn expect(&mut self, c: char) -> Result<(), (Pos, String)> {
        match self.peek() {
            Some(x) if x == c => {
                self.bump();
                Ok(())
            }
            Some(x) => Err((self.pos(), format!("expected `{c}`, found `{x}`"))),
            None => Err((self.pos(), format!("expected `{c}`, found the end of the file"))),
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, (Pos, String)> {
        let pos = self.pos();
        if depth > MAX_DEPTH {
            return Err((pos, format!("nested deeper than {MAX_DEPTH} levels")));
        }
        let value = match self.peek() {
            None => return Err((pos, "expected a JSON value, found the end of the file".into())),
            Some('{') => self.object(depth)?,
            Some('[') => self.array(depth)?,
            Some('"') => Json::String(self.string()?),
            Some('t') => self.word("true", Json::Bool(true))?,
            Some('f') => self.word("false", Json::Bool(false))?,
            Some('n') => self.word("null", Json::Null)?,
            Some(c) if c == '-' || c.is_ascii_digit() => Json::Number(self.number()?),
            Some(c) => return Err((pos, format!("expected a JSON value, found `{c}`"))),
        };
        Ok(Node { pos, value })
    }

    fn word(&mut self, w: &str, value: Json) -> Result<Json, (Pos, String)> {
        let pos = self.pos();
        for c in w.chars() {
            if self.peek() != Some(c) {
                return Err((pos, format!("expected `{w}`")));
            }
            self.bump();
        }
        Ok(value)
    }

    fn object(&mut self, depth: usize) -> Result<Json, (Pos, String)> {
        self.expect('{')?;
        let mut members: Vec<(String, Node)> = Vec::new();
        self.skip_ws();
        if self.peek() == Some('}') {
            self.bump();
            return Ok(Json::Object(members));
        }
        loop {
            self.skip_ws();
            let key_pos = self.pos();
            if self.peek() != Some('"') {
                return Err((key_pos, "expected a member name in double quotes".into()));
            }
            let key = self.string()?;
            if members.iter().any(|(k, _)| *k == key) {
                return Err((key_pos, format!("duplicate key \"{key}\"")));
            }
            self.skip_ws();
            self.expect(':')?;
            self.skip_ws();
            let node = self.value(depth + 1)?;
            members.push((key, node));
            self.skip_ws();
            match self.peek() {
                Some(',') => {
                    self.bump();
                }
                Some('}') => {
                    self.bump();
                    return Ok(Json::Object(members));
                }
                _ => return Err((self.pos(), "expected `,` or `}` after an object member".into())),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Json, (Pos, String)> {
        self.expect('[')?;
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(']') {
            self.bump();
            return Ok(Json::Array(items));
        }
        loop {
            self.skip_ws();
            items.push(self.value(depth + 1)?);
            self.skip_ws();
            match self.peek() {
                Some(',') => {
                    self.bump();
                }
                Some(']') => {
                    self.bump();
                    return Ok(Json::Array(items));
                }
                _ => return Err((self.pos(), "expected `,` or `]` after an array element".into())),
            }
        }
    }

    fn string(&mut self) -> Result<String, (Pos, String)> {
        self.expect('"')?;
        let mut out = String::new();
        loop {
            let pos = self.pos();
            match self.bump() {
                None => return Err((pos, "unterminated string".into())),
                Some('"') => return Ok(out),
                Some('\\') => match self.bump() {
                    Some('"') => out.push('"'),
                    Some('\\') => out.push('\\'),
                    Some('/') => out.push('/'),
                    Some('b') => out.push('\u{8}'),
                    Some('f') => out.push('\u{c}'),
                    Some('n') => out.push('\n'),
                    Some('r') => out.push('\r'),
                    Some('t') => out.push('\t'),
                    Some('u') => {
                        let mut code = 0u32;
                        for _ in 0..4 {
                            let d = self.bump().and_then(|c| c.to_digit(16));
                            code = code * 16 + d.ok_or((pos, "bad \\u escape".to_string()))?;
                        }
                        // Surrogate halves are not characters on their own; keep the text readable.
                        out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                    }
                    _ => return Err((pos, "bad escape in string".into())),
                },
                Some(c) if (c as u32) < 0x20 => return Err((pos, "control character in string".into())),
                Some(c) => out.push(c),
            }
        }
    }

    fn number(&mut self) -> Result<String, (Pos, String)> {
        let pos = self.pos();
        let start = self.i;
        let bad = || (pos, "malformed number".to_string());
        if self.peek() == Some('-') {
            self.bump();
        }
        match self.peek() {
            Some('0') => {
                self.bump();
            }
            Some(c) if c.is_ascii_digit() => self.digits(),
            _ => return Err(bad()),
        }
        if self.peek() == Some('.') {
            self.bump();
            if !self.peek().is_some_and(|c| c.is_ascii_digit()) {
                return Err(bad());
            }
            self.digits();
        }
        if matches!(self.peek(), Some('e' | 'E')) {
            self.bump();
            if matches!(self.peek(), Some('+' | '-')) {
                self.bump();
            }
            if !self.peek().is_some_and(|c| c.is_ascii_digit()) {
                return Err(bad());
            }
            self.digits();
        }
        Ok(self.chars[start..self.i].iter().collect())
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.bump();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_and_errors() {
        let doc = parse("{\n  \"a\": [1, \"x\"],\n  \"b\": 2.5e1\n}").unwrap();
        let Json::Object(m) = doc.value else { panic!() };
        assert_eq!(m[0].1.pos, Pos { line: 2, col: 8 });
        assert_eq!(m[1].1.value, Json::Number("2.5e1".into()));
        assert_eq!(parse("{\"a\": 1,}").unwrap_err().0, Pos { line: 1, col: 9 });
        assert!(parse("{\"a\": 1, \"a\": 2}").unwrap_err().1.contains("duplicate key"));
        assert!(parse(&"[".repeat(100)).is_err());
    }
}
