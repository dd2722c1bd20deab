//! A YAML document as the same position-keeping tree json.rs builds ([`Node`]), for formats
//! that accept YAML or JSON alike (Envoy's configuration). Scalars are typed as Envoy's YAML
//! loader types them before it hands the document to protobuf's JSON reader
//! (source/common/protobuf/yaml_utility.cc `parseYamlNode`): a quoted scalar is a string; a
//! plain one is null (`~`, `null`, empty), a boolean (`true`/`false` in any case), a number
//! when it reads as one, and a string otherwise. Duplicate keys and aliases are refused, and
//! `yes`/`on` booleans and hex integers, which yaml-cpp takes, are strings here (so refused where
//! a boolean or a number is due): stricter than Envoy, documented in docs/import.md.

use super::json::{Json, Node, Pos};
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

enum Frame {
    Map { pos: Pos, members: Vec<(String, Node)>, key: Option<String> },
    Seq { pos: Pos, items: Vec<Node> },
}

struct Builder {
    stack: Vec<Frame>,
    documents: Vec<Node>,
    error: Option<(Pos, String)>,
}

fn pos(mark: Marker) -> Pos {
    // yaml-rust2's Marker::col counts from 0 (spring.rs measured it).
    Pos { line: mark.line() as u32, col: mark.col() as u32 + 1 }
}

fn typed(value: String, style: TScalarStyle) -> Json {
    if style != TScalarStyle::Plain {
        return Json::String(value);
    }
    match value.as_str() {
        "" | "~" | "null" | "Null" | "NULL" => return Json::Null,
        _ => {}
    }
    match value.to_ascii_lowercase().as_str() {
        "true" => return Json::Bool(true),
        "false" => return Json::Bool(false),
        _ => {}
    }
    let numeric = value.chars().all(|c| c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E'))
        && value.chars().any(|c| c.is_ascii_digit());
    if numeric && value.parse::<f64>().is_ok_and(f64::is_finite) {
        return Json::Number(value);
    }
    Json::String(value)
}

impl Builder {
    fn fail(&mut self, at: Pos, why: String) {
        if self.error.is_none() {
            self.error = Some((at, why));
        }
    }

    /// Puts a finished value where it belongs: under the pending key, in the list, or as the
    /// document.
    fn place(&mut self, node: Node) {
        match self.stack.last_mut() {
            None => self.documents.push(node),
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map { members, key, .. }) => match key.take() {
                Some(k) => members.push((k, node)),
                None => {
                    let at = node.pos;
                    match node.value {
                        Json::String(k) | Json::Number(k) => {
                            if members.iter().any(|(m, _)| *m == k) {
                                self.fail(at, format!("(YAML): duplicate key `{k}` (refused: stricter than Envoy, whose yaml-cpp loader keeps the last)"));
                            } else {
                                *key = Some(k);
                            }
                        }
                        Json::Bool(b) => *key = Some(b.to_string()),
                        Json::Null => *key = Some(String::new()),
                        Json::Array(_) | Json::Object(_) => {
                            self.fail(at, "(YAML): a mapping or a list cannot be a key".into())
                        }
                    }
                }
            },
        }
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        match ev {
            Event::MappingStart(..) => self.stack.push(Frame::Map { pos: pos(mark), members: Vec::new(), key: None }),
            Event::SequenceStart(..) => self.stack.push(Frame::Seq { pos: pos(mark), items: Vec::new() }),
            Event::MappingEnd => {
                if let Some(Frame::Map { pos, members, .. }) = self.stack.pop() {
                    self.place(Node { pos, value: Json::Object(members) });
                }
            }
            Event::SequenceEnd => {
                if let Some(Frame::Seq { pos, items }) = self.stack.pop() {
                    self.place(Node { pos, value: Json::Array(items) });
                }
            }
            Event::Scalar(value, style, ..) => self.place(Node { pos: pos(mark), value: typed(value, style) }),
            Event::Alias(_) => {
                self.fail(pos(mark), "(YAML): aliases are not read by this importer; write the value out".into())
            }
            Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentStart | Event::DocumentEnd => {}
        }
    }
}

/// Every document of a YAML text, each as a tree. Errors are a position and why.
pub fn parse_documents(text: &str) -> Result<Vec<Node>, (Pos, String)> {
    let mut b = Builder { stack: Vec::new(), documents: Vec::new(), error: None };
    let mut parser = Parser::new_from_str(text);
    parser.load(&mut b, true).map_err(|e| (pos(*e.marker()), format!("(YAML): {}", e.info())))?;
    if let Some(e) = b.error {
        return Err(e);
    }
    Ok(b.documents)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_are_typed_and_positions_kept() {
        let docs = parse_documents("a:\n  b: 5\n  c: \"5\"\n  d: [1s, true, ~]\n").unwrap();
        let Json::Object(top) = &docs[0].value else { panic!() };
        let Json::Object(a) = &top[0].1.value else { panic!() };
        assert_eq!(a[0].1.value, Json::Number("5".into()));
        assert_eq!(a[0].1.pos, Pos { line: 2, col: 6 });
        assert_eq!(a[1].1.value, Json::String("5".into()));
        let Json::Array(d) = &a[2].1.value else { panic!() };
        assert_eq!(d[0].value, Json::String("1s".into()));
        assert_eq!(d[1].value, Json::Bool(true));
        assert_eq!(d[2].value, Json::Null);
        let err = parse_documents("a: 1\na: 2\n").unwrap_err();
        assert_eq!(err.0, Pos { line: 2, col: 1 });
    }
}
