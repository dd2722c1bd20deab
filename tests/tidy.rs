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

/// Every file a command reads goes through the one reading rule, `scenario/input_file.rs`
/// (regular files only, a stated bound, refused at once otherwise): no other code in src/
/// opens a file for reading. `output/folder.rs` opens the files it wrote to sync them. Test
/// modules (after `#[cfg(test)]`) may read what they like.
#[test]
fn every_file_a_command_reads_goes_through_the_reading_rule() {
    let forbidden = ["fs::read(", "fs::read_to_string(", "File::open(", ".read(true)"];
    let allowed = [Path::new("src/scenario/input_file.rs"), Path::new("src/experiment/output/folder.rs")];
    let mut files = Vec::new();
    rust_files(Path::new("src"), &mut files);
    let mut hits = Vec::new();
    for file in files.iter().filter(|f| !allowed.contains(&f.as_path())) {
        let text = std::fs::read_to_string(file).unwrap();
        let code = code_only(&text);
        let code = code.split("#[cfg(test)]").next().unwrap_or_default();
        for (n, line) in code.lines().enumerate() {
            if forbidden.iter().any(|w| line.contains(w)) {
                hits.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(hits.is_empty(), "files read around scenario::input_file (open_input, read_input):\n{}", hits.join("\n"));
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

// ---------------------------------------------------------------------------------------------
// No import circles between the files of one layer.
//
// The rank check above keeps the layers apart; inside a layer files may name each other freely,
// and that lets circles grow (a names b, b names a), after which neither file can be read,
// tested or moved without the other. This check draws each layer's file-level import graph and
// refuses every circle in it.
//
// An arrow F -> G means that a path in F's code names an item that G holds. The paths read are
//   - `crate::layer::...` inside F's own layer (arrows to other layers are the rank check's);
//   - `super::...` and `self::...`, counted from the module where they stand, so the usual
//     `mod tests { use super::*; }` names the file itself, not its parent;
//   - `child::...`, where F declares `mod child;`;
// each in `use` trees with groups (`use super::{a::{B, self}, c}`) and inline
// (`super::report::f()`), comments and literals left out. A path names the deepest file its
// leading segments reach (src/a/b.rs or src/a/b/mod.rs); the rest is an item of that file.
// A module's face is no arrow: `mod x;` builds the module tree, and `pub use x::Item;` only
// hands a name on. A path through a face is followed to the file the face takes the name from
// (through a `pub use x::*` when the face neither names nor defines it), so `use
// crate::sim::Micros` in sim/queue.rs is an arrow to sim/time.rs, not to sim/mod.rs.
// ---------------------------------------------------------------------------------------------

type PathBuf = std::path::PathBuf;

/// One token of code: an identifier, `::`, or any other single character (whitespace dropped).
struct Token {
    text: String,
    at: usize,
}

fn tokens(code: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut chars = code.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c.is_whitespace() {
            continue;
        }
        let mut text = c.to_string();
        if is_ident(c) {
            while let Some(&(_, n)) = chars.peek().filter(|(_, n)| is_ident(*n)) {
                text.push(n);
                chars.next();
            }
        } else if c == ':' && chars.peek().is_some_and(|(_, n)| *n == ':') {
            text.push(':');
            chars.next();
        }
        out.push(Token { text, at });
    }
    out
}

fn is_name(t: Option<&Token>) -> bool {
    t.is_some_and(|t| t.text.starts_with(|c: char| c.is_alphabetic() || c == '_'))
}

fn text_at(t: &[Token], i: usize) -> &str {
    t.get(i).map_or("", |x| x.text.as_str())
}

/// Reads the path (or `use` tree) that starts at token `i`, appending each complete path to
/// `out`, prefixed with `prefix`; returns the index after it. A glob ends in "*".
fn read_tree(t: &[Token], mut i: usize, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let mut path = prefix.to_vec();
    while is_name(t.get(i)) {
        path.push(t[i].text.clone());
        i += 1;
        if text_at(t, i) != "::" {
            break;
        }
        i += 1;
        if text_at(t, i) == "*" {
            path.push("*".into());
            i += 1;
        } else if text_at(t, i) == "{" {
            // A group: each item is a tree of its own under the path so far.
            i += 1;
            loop {
                i = read_tree(t, i, &path, out);
                // What may follow an item before its comma: `as alias`.
                while !matches!(text_at(t, i), "," | "}" | "") {
                    i += 1;
                }
                i += 1;
                if text_at(t, i - 1) != "," || text_at(t, i) == "}" {
                    return i + usize::from(text_at(t, i) == "}");
                }
            }
        }
    }
    out.push(path);
    i
}

/// A path as `code` names it: absolute module segments, where it starts, and whether it is a
/// face's `pub use`.
struct Named {
    at: usize,
    path: Vec<String>,
    reexport: bool,
}

/// Every path `code` names relative to the crate. `module` is the file's own module path
/// (["experiment", "sweep"] for src/experiment/sweep/mod.rs).
fn named_paths(code: &str, module: &[String]) -> Vec<Named> {
    let t = tokens(code);
    let children: Vec<&str> = t
        .windows(3)
        .filter(|w| w[0].text == "mod" && is_name(Some(&w[1])) && w[2].text == ";")
        .map(|w| w[1].text.as_str())
        .collect();
    // Inline modules (`mod tests { ... }`), each with the brace depth of its `{`.
    let (mut inline, mut depth): (Vec<(String, usize)>, usize) = (Vec::new(), 0);
    let mut found = Vec::new();
    let mut i = 0;
    while i < t.len() {
        match t[i].text.as_str() {
            "{" if i >= 2 && t[i - 2].text == "mod" => {
                inline.push((t[i - 1].text.clone(), depth));
                depth += 1;
            }
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            _ => {}
        }
        let head = t[i].text.as_str();
        let starts = matches!(head, "crate" | "super" | "self") || children.contains(&head);
        let inside_another = i > 0 && matches!(t[i - 1].text.as_str(), "::" | ".");
        if !starts || inside_another || text_at(&t, i + 1) != "::" {
            i += 1;
            continue;
        }
        let reexport = i >= 2 && t[i - 1].text == "use" && matches!(t[i - 2].text.as_str(), "pub" | ")");
        let here: Vec<String> = module.iter().cloned().chain(inline.iter().map(|(n, _)| n.clone())).collect();
        let mut written = Vec::new();
        let next = read_tree(&t, i, &[], &mut written);
        for path in written {
            // `crate::`, `super::`, `self::` and `child::` become segments from the crate root.
            let mut absolute = if path[0] == "crate" { Vec::new() } else { here.clone() };
            for s in path.iter().skip(usize::from(path[0] == "crate")) {
                match s.as_str() {
                    "self" => {}
                    "super" => {
                        absolute.pop();
                    }
                    _ => absolute.push(s.clone()),
                }
            }
            found.push(Named { at: t[i].at, path: absolute, reexport });
        }
        i = next.max(i + 1);
    }
    found
}

/// The module path of a file: src/experiment/sweep/mod.rs gives ["experiment", "sweep"].
fn module_path(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix("src").unwrap_or(file).with_extension("");
    let mut parts: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// What a file hands on (`pub use`) and defines, for following paths through it.
struct Face {
    /// (name, the absolute path it stands for).
    names: Vec<(String, Vec<String>)>,
    /// `pub use x::*`: the modules whose items it hands on.
    globs: Vec<Vec<String>>,
    code: String,
}

impl Face {
    fn of(file: &Path, text: &str) -> Face {
        let code = code_only(text);
        let (mut names, mut globs) = (Vec::new(), Vec::new());
        for n in named_paths(&code, &module_path(file)).into_iter().filter(|n| n.reexport) {
            match n.path.last().map(String::as_str) {
                Some("*") => globs.push(n.path[..n.path.len() - 1].to_vec()),
                Some(name) => names.push((name.to_string(), n.path.clone())),
                None => {}
            }
        }
        Face { names, globs, code }
    }

    /// Whether the file itself defines `name` (an item, not a name handed on).
    fn defines(&self, name: &str) -> bool {
        let t = tokens(&self.code);
        let kinds = ["struct", "enum", "fn", "trait", "type", "const", "static", "mod", "union", "macro_rules"];
        t.windows(2).any(|w| kinds.contains(&w[0].text.as_str()) && w[1].text == name)
            || t.windows(3).any(|w| w[0].text == "macro_rules" && w[2].text == name)
    }
}

/// The file that holds the item a path names: the deepest module file that its leading
/// segments reach, followed through faces.
fn file_named(faces: &std::collections::BTreeMap<PathBuf, Face>, path: &[String], hops: usize) -> Option<PathBuf> {
    let (file, k) = (1..=path.len()).rev().find_map(|k| {
        let base = Path::new("src").join(path[..k].join("/"));
        [base.with_extension("rs"), base.join("mod.rs")].into_iter().find(|f| faces.contains_key(f)).map(|f| (f, k))
    })?;
    let (face, rest) = (&faces[&file], &path[k..]);
    let Some(item) = rest.first().filter(|i| *i != "*") else { return Some(file) };
    let via = match face.names.iter().find(|(n, _)| n == item) {
        Some((_, target)) => Some(target.clone()),
        None if !face.defines(item) => face.globs.first().map(|g| [g.as_slice(), std::slice::from_ref(item)].concat()),
        None => None,
    };
    // Faces that hand a name round in a loop would never end: a few steps are plenty.
    match via.filter(|_| hops < 8) {
        Some(target) => file_named(faces, &[target.as_slice(), &rest[1..]].concat(), hops + 1).or(Some(file)),
        None => Some(file),
    }
}

/// Arrows from `file` to other files of its layer: (to, line of the reference), once per line.
fn layer_arrows(faces: &std::collections::BTreeMap<PathBuf, Face>, file: &Path) -> Vec<(PathBuf, usize)> {
    let Some(layer) = layer_of(file) else { return Vec::new() };
    let code = &faces[file].code;
    let mut arrows: Vec<(PathBuf, usize)> = named_paths(code, &module_path(file))
        .into_iter()
        .filter(|n| !n.reexport && n.path.first().is_some_and(|m| m == layer))
        .filter_map(|n| Some((file_named(faces, &n.path, 0)?, code[..n.at].matches('\n').count() + 1)))
        .filter(|(to, _)| to != file)
        .collect();
    arrows.dedup();
    arrows
}

/// Each group of two or more files that reach one another, sorted, with the arrows inside it.
fn circles(arrows: &[(PathBuf, PathBuf, usize)]) -> Vec<(Vec<String>, Vec<String>)> {
    let mut nodes: Vec<&PathBuf> = arrows.iter().flat_map(|(a, b, _)| [a, b]).collect();
    nodes.sort();
    nodes.dedup();
    // Plain depth-first reachability: a layer has tens of files.
    let reach = |from: &PathBuf| {
        let (mut seen, mut todo) = (vec![from.clone()], vec![from.clone()]);
        while let Some(n) = todo.pop() {
            for (_, to, _) in arrows.iter().filter(|(a, _, _)| *a == n) {
                if !seen.contains(to) {
                    seen.push(to.clone());
                    todo.push(to.clone());
                }
            }
        }
        seen
    };
    let reached: Vec<Vec<PathBuf>> = nodes.iter().map(|n| reach(n)).collect();
    let mut out: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    for (i, a) in nodes.iter().enumerate() {
        let group: Vec<&PathBuf> = (0..nodes.len())
            .filter(|&j| reached[i].contains(nodes[j]) && reached[j].contains(a))
            .map(|j| nodes[j])
            .collect();
        let names: Vec<String> = group.iter().map(|f| f.display().to_string()).collect();
        if group.len() > 1 && !out.iter().any(|(g, _)| *g == names) {
            let inside = arrows
                .iter()
                .filter(|(a, b, _)| group.contains(&a) && group.contains(&b))
                .map(|(a, b, line)| format!("{}:{line} -> {}", a.display(), b.display()))
                .collect();
            out.push((names, inside));
        }
    }
    out
}

fn faces_of(files: &[(PathBuf, String)]) -> std::collections::BTreeMap<PathBuf, Face> {
    files.iter().map(|(f, text)| (f.clone(), Face::of(f, text))).collect()
}

/// No file of a layer reaches itself through the files it imports.
#[test]
fn no_import_circles_between_files_of_a_layer() {
    let mut paths = Vec::new();
    rust_files(Path::new("src"), &mut paths);
    paths.sort();
    assert!(paths.len() > 20, "found only {} files: run from the crate root", paths.len());
    let files: Vec<(PathBuf, String)> =
        paths.into_iter().map(|p| (p.clone(), std::fs::read_to_string(&p).unwrap())).collect();
    let faces = faces_of(&files);
    let mut arrows = Vec::new();
    for (file, _) in &files {
        arrows.extend(layer_arrows(&faces, file).into_iter().map(|(to, line)| (file.clone(), to, line)));
    }
    let found = circles(&arrows);
    let found: Vec<String> =
        found.iter().map(|(g, inside)| format!("{}\n    {}", g.join(" <-> "), inside.join("\n    "))).collect();
    assert!(found.is_empty(), "import circles between files of one layer:\n{}", found.join("\n"));
}

#[test]
fn circle_scanner_reads_use_trees_inline_paths_faces_and_test_modules() {
    let texts = [
        ("src/experiment/mod.rs", "pub mod a;\nmod b;\npub use b::c::Y;\npub use self::a::*;\npub struct E;\n"),
        ("src/experiment/a.rs", "use crate::experiment::{Y, X, E};\npub struct X;\n"),
        ("src/experiment/b/mod.rs", "pub mod c;\n"),
        (
            "src/experiment/b/c.rs",
            "use super::{c::{self, Y as Z}, super::a::X};\n// super::super::d::f\n\
             fn f() { super::super::d::g(); }\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use crate::experiment::d::H;\n}\n",
        ),
        ("src/experiment/d.rs", "pub fn g() { crate::engine::x(); }\n"),
    ];
    let files: Vec<(PathBuf, String)> = texts.iter().map(|(f, t)| (PathBuf::from(f), t.to_string())).collect();
    let faces = faces_of(&files);
    let show = |file: &str| -> Vec<String> {
        layer_arrows(&faces, Path::new(file)).iter().map(|(f, l)| format!("{}:{l}", f.display())).collect()
    };
    // Through the face: Y to b/c.rs, X to a.rs through the glob (itself: no arrow), E defined there.
    assert_eq!(show("src/experiment/a.rs"), ["src/experiment/b/c.rs:1", "src/experiment/mod.rs:1"]);
    // `super` of b/c.rs is experiment::b; a test module's `super` is the file itself.
    assert_eq!(
        show("src/experiment/b/c.rs"),
        ["src/experiment/a.rs:1", "src/experiment/d.rs:3", "src/experiment/d.rs:7"]
    );
    assert!(show("src/experiment/mod.rs").is_empty(), "a face's `pub use` is no arrow");
    let arrows = [
        (PathBuf::from("src/experiment/a.rs"), PathBuf::from("src/experiment/d.rs"), 1),
        (PathBuf::from("src/experiment/d.rs"), PathBuf::from("src/experiment/a.rs"), 2),
        (PathBuf::from("src/experiment/d.rs"), PathBuf::from("src/experiment/mod.rs"), 3),
    ];
    let found = circles(&arrows);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].0, ["src/experiment/a.rs", "src/experiment/d.rs"]);
}
