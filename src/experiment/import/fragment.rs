//! The fragment every importer writes: tables of `key = value` lines, each with a comment
//! naming where it came from, then the `# NOT MAPPED` list. Its own file so that the format
//! readers (grpc.rs, ...) and the command (mod.rs) both use it without importing each other.

/// One line of a table: `key = value`, and where it came from.
pub struct Field {
    pub key: String,
    /// The value as a TOML literal.
    pub value: String,
    pub comment: String,
}

/// One `[...]` or `[[...]]` table of the fragment.
pub struct Table {
    pub header: String,
    pub fields: Vec<Field>,
}

/// What an importer produces: header comments, tables, and the keys it could not map.
#[derive(Default)]
pub struct Fragment {
    pub header: Vec<String>,
    pub tables: Vec<Table>,
    pub not_mapped: Vec<String>,
}

/// Comments start in this column when the field is shorter, so the file reads as two columns.
const COMMENT_COLUMN: usize = 40;

impl Fragment {
    /// The TOML text: the same fragment gives the same bytes.
    pub fn to_toml(&self) -> String {
        let mut out = String::new();
        for line in &self.header {
            out.push_str(&comment_line(line));
        }
        for table in &self.tables {
            out.push_str(&table.header);
            out.push('\n');
            for f in &table.fields {
                let left = format!("{} = {}", f.key, f.value);
                if f.comment.is_empty() {
                    out.push_str(&left);
                } else {
                    let pad = COMMENT_COLUMN.saturating_sub(left.chars().count()).max(1);
                    out.push_str(&format!("{left}{}# {}", " ".repeat(pad), one_line(&f.comment)));
                }
                out.push('\n');
            }
        }
        out.push_str("# NOT MAPPED:");
        if self.not_mapped.is_empty() {
            out.push_str(" nothing\n");
        } else {
            out.push('\n');
            for line in &self.not_mapped {
                out.push_str(&comment_line(&format!("- {line}")));
            }
        }
        out
    }

    /// Mapped fields, for the summary line.
    pub fn field_count(&self) -> usize {
        self.tables.iter().map(|t| t.fields.len()).sum()
    }
}

/// A comment never spans lines: a newline in a user's string would end the comment and turn
/// the rest into TOML.
fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

fn comment_line(s: &str) -> String {
    format!("# {}\n", one_line(s))
}

/// A number as TOML writes it: Rust's shortest round-trip form (`100`, `0.1`, `1.5`).
pub fn toml_number(x: f64) -> String {
    format!("{x}")
}
