//! Tidy checks on the source tree: things that must never appear in simulation code, and layers
//! that depend only downward.

use std::path::Path;

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// No wall clock, no OS randomness, no hash containers (whose iteration order is random)
/// anywhere in src/. Progress bars read the clock inside indicatif, outside our code.
#[test]
fn no_wall_clock_os_randomness_or_hash_iteration_in_src() {
    let forbidden = [
        "Instant::now",
        "SystemTime",
        "thread_rng",
        "rand::rng()",
        "from_os_rng",
        "from_entropy",
        "OsRng",
        "SysRng",
        "getrandom",
        "HashMap",
        "HashSet",
        "RandomState",
    ];
    let mut files = Vec::new();
    rust_files(Path::new("src"), &mut files);
    assert!(files.len() > 20, "found only {} files: run from the crate root", files.len());
    let mut hits = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            for word in forbidden {
                if line.contains(word) {
                    hits.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(hits.is_empty(), "forbidden in simulation code:\n{}", hits.join("\n"));
}

/// Layers in rank order (ARCHITECTURE.md): a file may name only modules of lower or equal rank.
/// src/main.rs and src/lib.rs sit outside the layers.
const LAYERS: [&str; 9] = ["sim", "vocab", "scenario", "world", "metrics", "runtime", "engine", "experiment", "cli"];

fn rank(module: &str) -> Option<usize> {
    LAYERS.iter().position(|&m| m == module)
}

/// The layer of src/<module>/... or src/<module>.rs; None for main.rs and lib.rs.
fn layer_of(file: &Path) -> Option<&'static str> {
    let first = file.strip_prefix("src").ok()?.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    LAYERS.iter().copied().find(|&m| m == name)
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn leading_ident(s: &str) -> Option<String> {
    let n = s.find(|c| !is_ident(c)).unwrap_or(s.len());
    (n > 0).then(|| s[..n].to_string())
}

fn line_comment_len(c: &[char], i: usize) -> Option<usize> {
    (c.get(i..i + 2)? == ['/', '/']).then(|| c[i..].iter().position(|&x| x == '\n').unwrap_or(c.len() - i))
}

/// Block comments nest in Rust.
fn block_comment_len(c: &[char], i: usize) -> Option<usize> {
    (c.get(i..i + 2)? == ['/', '*']).then_some(())?;
    let (mut depth, mut j) = (0, i);
    while j + 1 < c.len() {
        match (c[j], c[j + 1]) {
            ('/', '*') => (depth, j) = (depth + 1, j + 2),
            ('*', '/') if depth == 1 => return Some(j + 2 - i),
            ('*', '/') => (depth, j) = (depth - 1, j + 2),
            _ => j += 1,
        }
    }
    Some(c.len() - i)
}

fn string_len(c: &[char], i: usize) -> Option<usize> {
    (c[i] == '"').then_some(())?;
    let mut j = i + 1;
    while j < c.len() && c[j] != '"' {
        j += if c[j] == '\\' { 2 } else { 1 };
    }
    Some((j + 1).min(c.len()) - i)
}

/// r"..." and r#"..."#, where the r does not end an identifier.
fn raw_string_len(c: &[char], i: usize) -> Option<usize> {
    (c[i] == 'r' && !(i > 0 && is_ident(c[i - 1]))).then_some(())?;
    let hashes = c[i + 1..].iter().take_while(|&&x| x == '#').count();
    (c.get(i + 1 + hashes) == Some(&'"')).then_some(())?;
    let close: Vec<char> = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
    let body = i + 2 + hashes;
    let end = (body..c.len()).find(|&j| c[j..].starts_with(&close)).map_or(c.len(), |j| j + close.len());
    Some(end - i)
}

/// 'x' and '\n', but not lifetimes such as 'a or 'static.
fn char_literal_len(c: &[char], i: usize) -> Option<usize> {
    (c[i] == '\'').then_some(())?;
    if c.get(i + 1) == Some(&'\\') {
        return Some((i + 3..c.len()).find(|&j| c[j] == '\'').map_or(c.len(), |j| j + 1) - i);
    }
    (c.get(i + 2) == Some(&'\'')).then_some(3)
}

/// The text with comments and string and char literals blanked out, newlines kept so that
/// line numbers still match the original.
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < c.len() {
        let skip = line_comment_len(&c, i)
            .or_else(|| block_comment_len(&c, i))
            .or_else(|| string_len(&c, i))
            .or_else(|| raw_string_len(&c, i))
            .or_else(|| char_literal_len(&c, i));
        let n = skip.unwrap_or(1);
        for &x in &c[i..i + n] {
            out.push(if skip.is_none() || x == '\n' { x } else { ' ' });
        }
        i += n;
    }
    out
}

/// The first segment of each item of the group opening at `open`: `{a, b::{c, d}}` gives a and b.
fn group_heads(code: &str, open: usize) -> Vec<(usize, String)> {
    let (mut heads, mut depth, mut item_start) = (Vec::new(), 0, false);
    for (i, ch) in code[open..].char_indices() {
        match ch {
            '{' => (depth, item_start) = (depth + 1, depth == 0),
            '}' if depth == 1 => break,
            '}' => depth -= 1,
            ',' => item_start = depth == 1,
            ch if ch.is_whitespace() => {}
            _ if item_start => {
                heads.extend(leading_ident(&code[open + i..]).map(|name| (open + i, name)));
                item_start = false;
            }
            _ => {}
        }
    }
    heads
}

/// Every module named as `crate::<module>` or in a `crate::{...}` group, with its byte offset.
fn crate_references(code: &str) -> Vec<(usize, String)> {
    let mut refs = Vec::new();
    for (at, path) in code.match_indices("crate::") {
        if code[..at].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        let rest = &code[at + path.len()..];
        let start = code.len() - rest.trim_start().len();
        if code[start..].starts_with('{') {
            refs.extend(group_heads(code, start));
        } else {
            refs.extend(leading_ident(&code[start..]).map(|name| (start, name)));
        }
    }
    refs
}

/// "file:line: world (3) uses runtime (5): <line>" for each upward reference in the file.
fn layer_violations(file: &Path, text: &str) -> Vec<String> {
    let Some(layer) = layer_of(file) else { return Vec::new() };
    let own = rank(layer).unwrap();
    let code = code_only(text);
    let lines: Vec<&str> = text.lines().collect();
    let upward = crate_references(&code).into_iter().filter(|(_, m)| rank(m).is_some_and(|r| r > own));
    upward
        .map(|(at, module)| {
            let n = code[..at].matches('\n').count();
            let used = rank(&module).unwrap();
            format!("{}:{}: {layer} ({own}) uses {module} ({used}): {}", file.display(), n + 1, lines[n].trim())
        })
        .collect()
}

/// Layers depend downward only: no file names a module of a higher layer, in a `use` or inline.
#[test]
fn layers_depend_only_downward() {
    let mut files = Vec::new();
    rust_files(Path::new("src"), &mut files);
    files.sort();
    assert!(files.len() > 20, "found only {} files: run from the crate root", files.len());
    let mut hits = Vec::new();
    for file in &files {
        hits.extend(layer_violations(file, &std::fs::read_to_string(file).unwrap()));
    }
    assert!(hits.is_empty(), "upward layer dependencies:\n{}", hits.join("\n"));
}

#[test]
fn layer_scanner_reads_groups_and_inline_paths_but_not_comments_or_strings() {
    let text = "use crate::{sim::Micros,\n    runtime::{a, b}, self};\n// crate::engine\n/// crate::engine\n\
                let s = \"crate::engine \\\" crate::engine\"; let q = '\"'; let t: &'static str = crate::cli::f();\n\
                /* crate::engine /* nested */ crate::engine */ let r = r#\"crate::engine\"#; my_crate::engine::x();\n\
                use crate::\n    experiment::Y;\n";
    let hits = layer_violations(Path::new("src/world/x.rs"), text);
    let lines: Vec<&str> = hits.iter().map(|h| h.split(": ").next().unwrap()).collect();
    assert_eq!(lines, ["src/world/x.rs:2", "src/world/x.rs:5", "src/world/x.rs:8"], "{hits:#?}");
    assert!(hits[0].contains("world (3) uses runtime (5)"), "{hits:#?}");
    assert!(layer_violations(Path::new("src/main.rs"), text).is_empty());
}

/// The layer list covers every top-level module, so a new module cannot escape the layer check.
#[test]
fn layer_list_matches_the_modules_of_lib_rs() {
    let lib = std::fs::read_to_string("src/lib.rs").unwrap();
    let module = |line: &str| {
        let line = line.trim();
        let line = line.strip_prefix("pub ").or(line.strip_prefix("pub(crate) ")).unwrap_or(line);
        Some(line.strip_prefix("mod ")?.strip_suffix(';')?.to_string())
    };
    let mut declared: Vec<String> = lib.lines().filter_map(module).collect();
    declared.sort();
    let mut layers: Vec<String> = LAYERS.iter().map(|m| m.to_string()).collect();
    layers.sort();
    assert_eq!(declared, layers, "src/lib.rs modules vs LAYERS in tests/tidy.rs");
}
