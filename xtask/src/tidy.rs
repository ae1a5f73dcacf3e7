//! House rules checked by `cargo xtask tidy` and by `cargo test -p xtask` (rust-analyzer's
//! tidy, TigerBeetle's `tidy.zig`): determinism bans, the module layers of
//! `docs/architecture.md` (an allow-list), hash maps for lookups only, micro-layouts in one
//! module, a `SAFETY` comment for every `unsafe`, no ignored or panicking-by-design tests, no
//! leftover debugging, line, file and function size limits, the assertion ratchet
//! (`tidy/assertions.rs`), the public surface's ceiling (`tidy/surface.rs`), where tests
//! live (`tidy/layout.rs`) and vocabularies typed past the edge (`tidy/vocabulary.rs`).
//!
//! Every check is a function over file contents, so that its test can plant a violation.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

mod assertions;
#[cfg(test)]
use assertions::assertion_counts;
use assertions::{ASSERTION_FLOORS, DENSITY_FLOORS, assertion_violations, density_violations};
mod layout;
use layout::{test_binary_violations, unit_test_layout_violations};
mod surface;
use surface::{PUB_ITEMS_MAX, pub_surface_violations};
mod vocabulary;
use vocabulary::vocabulary_violations;

/// Hard caps. Files aim under ~800 lines; only code crossing these fails.
const LINE_COLUMNS_MAX: usize = 100;
const FILE_LINES_MAX: usize = 1000;

/// The function-length ratchet: no function (signature to closing brace) is longer. It only
/// ever goes down: lower it when the longest function is split (the aim is 70). 204 when it
/// was introduced (`World::fault_start`); 106 once that was split by fault family; 98 once the
/// turmoil partition test was split into its hosts and its run; 96 once `KubeApi::serve` and a
/// review test were.
pub const FUNCTION_LINES_MAX: usize = 70;

/// The folders every size and hygiene check reads.
const CODE_DIRS: [&str; 6] = [
    "src",
    "tests",
    "xtask/src",
    "bench/src",
    "cratesim/src",
    "cratesim/tests",
];

/// The one file of `elasticsim-crates` (`cratesim/`) that replaces the clock and entropy the
/// crates under test read, with the crate's only `unsafe`.
pub const CRATE_DETERMINISM: &str = "cratesim/src/determinism.rs";

/// The document whose layer table is the allow-list of module dependencies.
pub const ARCHITECTURE_DOC: &str = "docs/architecture.md";

/// A Rust file: its path relative to the workspace root, and its text.
pub type SourceFile = (String, String);

fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_owned()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The Rust files under `dirs` of the workspace.
pub fn files(dirs: &[&str]) -> Vec<SourceFile> {
    let root = project_root();
    let mut paths = Vec::new();
    for dir in dirs {
        rust_files(&root.join(dir), &mut paths);
    }
    paths
        .into_iter()
        .map(|path| {
            let text = fs::read_to_string(&path).expect("source files are UTF-8");
            let relative = path
                .strip_prefix(&root)
                .expect("under the root")
                .display()
                .to_string();
            (relative, text)
        })
        .collect()
}

/// Code only: drop `//` comments, so that a doc sentence naming a banned API is fine.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().filter_map(|(i, line)| {
        let code = line.split("//").next().unwrap_or("");
        (!code.trim().is_empty()).then_some((i + 1, code))
    })
}

/// Every code line (comments dropped) of `files`, except the files `skipped` names, that
/// contains one of `needles`: `path:line: needle`, one per hit.
fn occurrences(files: &[SourceFile], skipped: fn(&str) -> bool, needles: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for (path, text) in files {
        if skipped(path) {
            continue;
        }
        for (line, code) in code_lines(text) {
            for needle in needles {
                if code.contains(needle) {
                    found.push(format!("{path}:{line}: {needle}"));
                }
            }
        }
    }
    found
}

/// The wall-clock and real-world edges, where clocks and hash maps are allowed.
fn is_edge(path: &str) -> bool {
    path.starts_with("src/live/") || path == "src/wall.rs"
}

/// Clocks, sleeps and unseeded randomness anywhere but the wall-clock edges.
pub fn determinism_violations(files: &[SourceFile]) -> Vec<String> {
    const BANNED: [&str; 5] = [
        "Instant::now",
        "SystemTime::now",
        "thread::sleep",
        "thread_rng(",
        "rand::random",
    ];
    occurrences(files, is_edge, &BANNED)
}

/// `elasticsim-crates` runs real crates on the run's clock (`cratesim/src/determinism.rs`):
/// outside that file, a line of `cratesim/` that reads a clock, sleeps or draws unseeded
/// randomness says why that is deterministic with `determinism-ok` (on the line or the one
/// above), and `unsafe` code lives in that file only.
pub fn crate_runner_violations(files: &[SourceFile]) -> Vec<String> {
    const BANNED: [&str; 5] = [
        "Instant::now",
        "SystemTime::now",
        "thread::sleep",
        "thread_rng(",
        "rand::random",
    ];
    let mut found = Vec::new();
    for (path, text) in files {
        if !path.starts_with("cratesim/") {
            continue;
        }
        let lines: Vec<&str> = text.lines().collect();
        for (line, code) in code_lines(text) {
            if path != CRATE_DETERMINISM && has_word(code, "unsafe") {
                found.push(format!("{path}:{line}: unsafe outside {CRATE_DETERMINISM}"));
            }
            let justified = lines[line.saturating_sub(2)..line]
                .iter()
                .any(|l| l.contains("determinism-ok"));
            for needle in BANNED {
                if code.contains(needle) && !justified && path != CRATE_DETERMINISM {
                    found.push(format!("{path}:{line}: {needle} without determinism-ok"));
                }
            }
        }
    }
    found
}

/// True when `code` holds `word` as a whole identifier (so `NameMap` is not `HashMap`).
fn has_word(code: &str, word: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    code.match_indices(word).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + word.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

/// A run may look values up by hash but never iterate a hash map (its order is not the
/// run's to decide). The robust form of that rule: no code inside a run names `HashMap`,
/// `HashSet` or `hashbrown`, however imported (only the edges may); lookups by hash go
/// through the `ids` tables (`NameMap`, `NameIndex`), whose own open addressing never lets a
/// hash decide an order that leaves them.
pub fn hash_map_violations(files: &[SourceFile]) -> Vec<String> {
    const NAMES: [&str; 3] = ["HashMap", "HashSet", "hashbrown"];
    let mut found = Vec::new();
    for (path, text) in files {
        if is_edge(path) {
            continue;
        }
        for (line, code) in code_lines(text) {
            for needle in NAMES {
                if has_word(code, needle) {
                    found.push(format!("{path}:{line}: {needle}"));
                }
            }
        }
    }
    found
}

/// The one module that chooses how data sits in memory for speed (`docs/performance.md`).
pub const LAYOUT_MODULE: &str = "src/world/layout.rs";

/// The domain types whose field order that module relies on: each may say `#[repr(C)]`, once.
pub const LAYOUT_ORDERED: [&str; 2] = ["src/gocd/agent.rs", "src/component.rs"];

/// Micro-layouts live in [`LAYOUT_MODULE`] only: any `#[repr(...)]` (alignment, padding, field
/// order) or prefetch elsewhere in `src/` is flagged, except one plain `#[repr(C)]` in each of
/// [`LAYOUT_ORDERED`], the field order the module's measured layout needs.
pub fn micro_layout_violations(files: &[SourceFile]) -> Vec<String> {
    let mut found = Vec::new();
    for (path, text) in files {
        if path == LAYOUT_MODULE || !path.starts_with("src/") {
            continue;
        }
        let mut ordered_left = usize::from(LAYOUT_ORDERED.contains(&path.as_str()));
        for (line, code) in code_lines(text) {
            let repr = code.contains("#[repr(");
            if repr && code.trim() == "#[repr(C)]" && ordered_left > 0 {
                ordered_left -= 1;
            } else if repr || code.contains("prefetch") {
                found.push(format!(
                    "{path}:{line}: a micro-layout outside {LAYOUT_MODULE}"
                ));
            }
        }
    }
    found
}

/// Every `unsafe` in code has a `// SAFETY:` comment on its line or the three above it; every
/// crate root denies unsafe code, so each use also carries a local `#[allow(unsafe_code)]`.
pub fn unsafe_violations(files: &[SourceFile]) -> Vec<String> {
    const ROOTS: [&str; 5] = [
        "src/lib.rs",
        "src/main.rs",
        "xtask/src/main.rs",
        "bench/src/main.rs",
        "cratesim/src/main.rs",
    ];
    let mut found = Vec::new();
    for (path, text) in files {
        if ROOTS.contains(&path.as_str()) && !text.contains("#![deny(unsafe_code)]") {
            found.push(format!("{path}: no #![deny(unsafe_code)]"));
        }
        // tidy names what it checks, and its tests plant it.
        if path.ends_with("tidy.rs") || path.starts_with("xtask/src/tidy/") {
            continue;
        }
        let lines: Vec<&str> = text.lines().collect();
        for (line, code) in code_lines(text) {
            if !has_word(code, "unsafe") || code.contains("unsafe_code") {
                continue;
            }
            let from = line.saturating_sub(4);
            if !lines[from..line].iter().any(|l| l.contains("SAFETY:")) {
                found.push(format!(
                    "{path}:{line}: unsafe without a // SAFETY: comment"
                ));
            }
        }
    }
    found
}

/// Ignored tests, tests that pass by panicking, unfinished code, leftover `dbg!`.
pub fn hygiene_violations(files: &[SourceFile]) -> Vec<String> {
    const BANNED: [&str; 5] = [
        "#[ignore",
        "#[should_panic",
        "todo!(",
        "unimplemented!(",
        "dbg!(",
    ];
    // tidy names what it bans, and its tests plant it.
    let tidy = |path: &str| path.ends_with("tidy.rs") || path.starts_with("xtask/src/tidy/");
    occurrences(files, tidy, &BANNED)
}

/// Lines over `LINE_COLUMNS_MAX` columns and files over `FILE_LINES_MAX` lines.
pub fn size_violations(files: &[SourceFile]) -> Vec<String> {
    let mut found = Vec::new();
    for (path, text) in files {
        let lines = text.lines().count();
        if lines > FILE_LINES_MAX {
            found.push(format!(
                "{path}: {lines} lines (max {FILE_LINES_MAX}: split it by concept)"
            ));
        }
        for (index, line) in text.lines().enumerate() {
            let columns = line.chars().count();
            if columns > LINE_COLUMNS_MAX {
                found.push(format!(
                    "{path}:{}: {columns} columns (max {LINE_COLUMNS_MAX})",
                    index + 1
                ));
            }
        }
    }
    found
}

// ---------------------------------------------------------------------------------------------
// Layers: the allow-list of docs/architecture.md.

/// Module name -> the modules it may import, from the first Markdown table of `doc` whose
/// header row is `| module | owns | may depend on |`. A module cell is `` `name` `` (or
/// `` `src/name/` ``); the third cell lists allowed modules in backticks, or `—` for none.
pub fn parse_layers(doc: &str) -> Result<BTreeMap<String, BTreeSet<String>>, String> {
    let mut layers = BTreeMap::new();
    let mut in_table = false;
    for (index, line) in doc.lines().enumerate() {
        let cells: Vec<&str> = line
            .trim()
            .trim_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        if !line.trim_start().starts_with('|') {
            if in_table {
                break;
            }
            continue;
        }
        if !in_table {
            in_table = cells.len() == 3
                && cells[0] == "module"
                && cells[1] == "owns"
                && cells[2] == "may depend on";
            continue;
        }
        if cells
            .iter()
            .all(|cell| cell.chars().all(|c| "-: ".contains(c)))
        {
            continue;
        }
        let [module, _, allowed] = cells[..] else {
            return Err(format!(
                "{ARCHITECTURE_DOC}:{}: expected 3 cells",
                index + 1
            ));
        };
        let Some(name) = backticked(module).into_iter().next() else {
            return Err(format!("{ARCHITECTURE_DOC}:{}: no `module`", index + 1));
        };
        layers.insert(
            module_name(&name),
            backticked(allowed).iter().map(|m| module_name(m)).collect(),
        );
    }
    if layers.is_empty() {
        return Err(format!(
            "{ARCHITECTURE_DOC}: no `| module | owns | may depend on |` table"
        ));
    }
    Ok(layers)
}

/// `src/check/` or `check` -> `check`.
fn module_name(cell: &str) -> String {
    let name = cell.trim_start_matches("src/").trim_end_matches('/');
    name.trim_end_matches(".rs").to_owned()
}

/// The texts between backticks in `cell`.
fn backticked(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// The top-level module a library file belongs to: `src/check/x.rs` and `src/check.rs` ->
/// `check`. `None` for the crate root, the binary and files outside `src/`.
pub fn module_of(path: &str) -> Option<String> {
    let rest = path.strip_prefix("src/")?;
    let first = rest.split('/').next()?;
    let name = first.trim_end_matches(".rs");
    (!matches!(name, "lib" | "main")).then(|| name.to_owned())
}

/// Test-only files may reach into any module (a test wires what it needs).
fn test_only(path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path);
    path.contains("/tests/") || file == "tests.rs" || file.starts_with("test_")
}

/// The modules `text` imports through `crate::name`, with their line numbers; comments are
/// skipped, and so is a trailing `#[cfg(test)] mod … {` block.
pub fn crate_imports(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut previous = "";
    for (line, code) in code_lines(text) {
        let test_block = code.trim_start().starts_with("mod ") && code.trim_end().ends_with('{');
        if previous.trim() == "#[cfg(test)]" && test_block {
            break;
        }
        previous = code;
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                for item in group.split([',', '}']) {
                    push_ident(item.trim(), line, &mut found);
                }
            } else {
                push_ident(rest, line, &mut found);
            }
        }
    }
    found
}

fn push_ident(text: &str, line: usize, found: &mut Vec<(usize, String)>) {
    let ident: String = text
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    if !ident.is_empty() && ident != "self" {
        found.push((line, ident));
    }
}

/// Every import of a module the allow-list does not give the importing module, and every
/// library module the table does not list.
pub fn layer_violations(
    layers: &BTreeMap<String, BTreeSet<String>>,
    files: &[SourceFile],
) -> Vec<String> {
    let mut found = Vec::new();
    let mut unlisted = BTreeSet::new();
    for (path, text) in files {
        let Some(module) = module_of(path) else {
            continue;
        };
        let Some(allowed) = layers.get(&module) else {
            unlisted.insert(module);
            continue;
        };
        if test_only(path) {
            continue;
        }
        for (line, target) in crate_imports(text) {
            if target != module && layers.contains_key(&target) && !allowed.contains(&target) {
                found.push(format!(
                    "{path}:{line}: `{module}` imports `{target}`, which {ARCHITECTURE_DOC} \
                     does not let it depend on"
                ));
            }
        }
    }
    for module in unlisted {
        found.push(format!(
            "src/{module}: a module missing from {ARCHITECTURE_DOC}'s table"
        ));
    }
    found
}

/// The allow-list itself must be layered: no module may reach itself through it.
pub fn layer_cycles(layers: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut found = Vec::new();
    for (module, allowed) in layers {
        for target in allowed {
            if reaches(layers, target, module, &mut BTreeSet::new()) {
                found.push(format!(
                    "{ARCHITECTURE_DOC}: `{module}` -> `{target}` is a cycle"
                ));
            }
        }
    }
    found
}

fn reaches(
    layers: &BTreeMap<String, BTreeSet<String>>,
    from: &str,
    to: &str,
    seen: &mut BTreeSet<String>,
) -> bool {
    if from == to {
        return true;
    }
    if !seen.insert(from.to_owned()) {
        return false;
    }
    layers
        .get(from)
        .is_some_and(|next| next.iter().any(|module| reaches(layers, module, to, seen)))
}

// ---------------------------------------------------------------------------------------------
// Function length.

/// `text` with comments, string and character literals blanked (newlines kept), so that
/// braces can be counted.
fn blank_literals(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied().unwrap_or(' ');
        let end = if c == '/' && next == '/' {
            chars[i..]
                .iter()
                .position(|&c| c == '\n')
                .map_or(chars.len(), |n| i + n)
        } else if c == '/' && next == '*' {
            find(&chars, i + 2, "*/").map_or(chars.len(), |n| n + 2)
        } else if c == 'r' && (next == '"' || next == '#') && !ident_before(&chars, i) {
            raw_string_end(&chars, i)
        } else if c == '"' {
            string_end(&chars, i)
        } else if c == '\'' {
            char_end(&chars, i)
        } else {
            i
        };
        if end > i {
            out.extend(chars[i..end].iter().map(|&c| blank(c)));
            i = end;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_before(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_ascii_alphanumeric() || chars[i - 1] == '_')
}

fn find(chars: &[char], from: usize, needle: &str) -> Option<usize> {
    let needle: Vec<char> = needle.chars().collect();
    (from..chars.len()).find(|&i| chars[i..].starts_with(&needle))
}

/// The index after the closing quote of the string starting at `i`.
fn string_end(chars: &[char], i: usize) -> usize {
    let mut j = i + 1;
    while j < chars.len() {
        match chars[j] {
            '\\' => j += 2,
            '"' => return j + 1,
            _ => j += 1,
        }
    }
    chars.len()
}

/// `r"…"`, `r#"…"#`: the index after the closing delimiter; `i` itself if not a raw string.
fn raw_string_end(chars: &[char], i: usize) -> usize {
    let hashes = chars[i + 1..].iter().take_while(|&&c| c == '#').count();
    if chars.get(i + 1 + hashes) != Some(&'"') {
        return i;
    }
    let closing: String = std::iter::once('"')
        .chain(std::iter::repeat_n('#', hashes))
        .collect();
    find(chars, i + 2 + hashes, &closing).map_or(chars.len(), |n| n + closing.len())
}

/// A character literal (`'{'`, `'\n'`, `'\u{7b}'`): the index after it; a lifetime: `i`.
fn char_end(chars: &[char], i: usize) -> usize {
    match (chars.get(i + 1), chars.get(i + 2)) {
        (Some('\\'), _) => (i + 2..chars.len())
            .find(|&j| chars[j] == '\'')
            .map_or(chars.len(), |j| j + 1),
        (Some(_), Some('\'')) => i + 3,
        _ => i,
    }
}

/// The name of the function a line declares, if it does.
fn declared_function(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    for prefix in [
        "pub(crate) ",
        "pub(super) ",
        "pub ",
        "const ",
        "async ",
        "unsafe ",
    ] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    let rest = rest.strip_prefix("fn ")?;
    let name = rest.split(['(', '<', ' ']).next()?;
    (!name.is_empty()).then_some(name)
}

/// Every function with a body in `text`: its line, name and length in lines (signature to
/// closing brace).
pub fn function_lengths(text: &str) -> Vec<(usize, String, usize)> {
    let code = blank_literals(text);
    let lines: Vec<&str> = code.lines().collect();
    let mut found = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let Some(name) = declared_function(line) else {
            continue;
        };
        if let Some(end) = body_end(&lines, start) {
            found.push((start + 1, name.to_owned(), end - start + 1));
        }
    }
    found
}

/// The line of the brace that closes the body of the function declared at `start`; `None`
/// for a declaration without a body.
fn body_end(lines: &[&str], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut opened = false;
    for (index, line) in lines.iter().enumerate().skip(start) {
        for c in line.chars() {
            match c {
                ';' if !opened && depth == 0 => return None,
                '{' => {
                    opened = true;
                    depth += 1;
                }
                '}' if opened => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(index);
                    }
                }
                _ => {}
            }
        }
    }
    None
}

/// Every function of `files` longer than `max` lines.
pub fn long_functions(files: &[SourceFile], max: usize) -> Vec<String> {
    let mut found = Vec::new();
    for (path, text) in files {
        for (line, name, length) in function_lengths(text) {
            if length > max {
                found.push(format!(
                    "{path}:{line}: fn {name} is {length} lines (max {max}: split it)"
                ));
            }
        }
    }
    found
}

/// The longest functions of the workspace, longest first.
pub fn longest_functions(count: usize) -> Vec<String> {
    let mut all: Vec<(usize, String)> = Vec::new();
    for (path, text) in files(&CODE_DIRS) {
        for (line, name, length) in function_lengths(&text) {
            all.push((length, format!("{length:4}  {path}:{line}  fn {name}")));
        }
    }
    all.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    all.into_iter().take(count).map(|(_, line)| line).collect()
}

/// The layer table's own cycles and the imports of `sources` it does not allow.
fn layer_problems(sources: &[SourceFile]) -> Vec<String> {
    let layers = fs::read_to_string(project_root().join(ARCHITECTURE_DOC))
        .map_err(|e| format!("{ARCHITECTURE_DOC}: {e}"))
        .and_then(|doc| parse_layers(&doc));
    match layers {
        Ok(layers) => {
            let mut problems = layer_cycles(&layers);
            problems.extend(layer_violations(&layers, sources));
            problems
        }
        Err(error) => vec![error],
    }
}

/// Every house rule over the workspace: one line per violation, grouped by rule.
pub fn check_all() -> Vec<(&'static str, Vec<String>)> {
    let sources = files(&["src"]);
    let all = files(&CODE_DIRS);
    let mut checks = vec![
        (
            "nothing inside a run reads a clock, sleeps or uses random state \
             (use engine time, seeded streams, BTreeMap)",
            determinism_violations(&sources),
        ),
        (
            "no hash map inside a run (lookups by hash go through the ids tables, never iterated)",
            hash_map_violations(&sources),
        ),
        (
            "micro-layouts (repr, alignment, prefetch) live in src/world/layout.rs only",
            micro_layout_violations(&sources),
        ),
        (
            "every unsafe block says why it is sound (// SAFETY:), under deny(unsafe_code)",
            unsafe_violations(&all),
        ),
        (
            "modules depend only on what docs/architecture.md allows",
            layer_problems(&sources),
        ),
        (
            "elasticsim-crates reads clocks and entropy through its determinism module only",
            crate_runner_violations(&all),
        ),
        (
            "tests assert behaviour; nothing is left unfinished",
            hygiene_violations(&all),
        ),
        (
            "lines and files stay within their limits",
            size_violations(&all),
        ),
        (
            "functions stay within the ratchet",
            long_functions(&all, FUNCTION_LINES_MAX),
        ),
    ];
    checks.extend(ratchets(&sources));
    checks.push((
        "a module's unit tests are its `mod tests` (inline, tests.rs or tests/)",
        unit_test_layout_violations(&all),
    ));
    checks.push((
        "integration tests are modules of the axis binaries, tests/<axis>/main.rs",
        test_binary_violations(&all),
    ));
    checks
}

/// The counts that only move one way: assertions, their density, the public surface.
fn ratchets(sources: &[SourceFile]) -> Vec<(&'static str, Vec<String>)> {
    vec![
        (
            "modules keep their assertions (the ratchet of tidy/assertions.rs)",
            assertion_violations(sources, ASSERTION_FLOORS),
        ),
        (
            "modules where values cross keep their assertion density (tidy/assertions.rs)",
            density_violations(sources, DENSITY_FLOORS),
        ),
        (
            "the library's public surface stays within its ceiling (tidy/surface.rs)",
            pub_surface_violations(sources, PUB_ITEMS_MAX),
        ),
        (
            "policies, variants, ablations, fault kinds and invariant ids are enums past the \
             edge: no fallback to a default, no field or parameter holding one as text",
            vocabulary_violations(sources),
        ),
    ]
}

#[cfg(test)]
mod tests;
