//! The assertion ratchet: each module's non-test code keeps at least the `assert!` and
//! `debug_assert!` checks it had (`ASSERTION_FLOORS`), and the modules where values cross a
//! boundary (the allocator's decisions, the models' inputs, the monitors' records) keep at
//! least a density of checks per function (`DENSITY_FLOORS`). A check that states an
//! invariant of a model transition is part of the model's specification; removing one must be
//! a decision, taken by lowering the floor in the same change and saying why.

use super::{SourceFile, code_lines, function_lengths, module_of, test_only};
use std::collections::BTreeMap;

/// The assertion macros counted (`debug_assert…` contains its `assert…`, so each call counts
/// once).
const MACROS: [&str; 3] = ["assert!(", "assert_eq!(", "assert_ne!("];

/// The least number of run-time assertions each top-level module of `src/` keeps in its
/// non-test code. Raise a floor when a module gains checks; a module missing here fails.
pub const ASSERTION_FLOORS: &[(&str, usize)] = &[
    ("ablation", 0),
    ("allocator", 52),
    ("check", 54),
    ("cli", 0),
    ("component", 2),
    ("engine", 4),
    ("explore", 1),
    ("export", 0),
    ("gocd", 47),
    ("ids", 1),
    ("interrupt", 0),
    ("kube", 11),
    ("leader", 46),
    ("live", 0),
    ("mutants", 0),
    ("nightly", 0),
    ("replay", 1),
    ("report", 2),
    ("resources", 0),
    ("review", 0),
    ("run", 0),
    ("scenario", 0),
    ("testkit", 8),
    ("trace", 0),
    ("wall", 0),
    ("world", 5),
];

/// The least run-time assertions per non-test function (with a body) of the modules where
/// values cross a boundary, in hundredths: 20 is one check for every five functions. Raise a
/// floor as checks are added. All five hold at least 20 (#50).
pub const DENSITY_FLOORS: &[(&str, usize)] = &[
    ("allocator", 20),
    ("check", 20),
    ("gocd", 20),
    ("kube", 20),
    ("leader", 20),
];

/// Run-time assertions in the non-test code of each module: test-only files and a trailing
/// `#[cfg(test)] mod … {` block are skipped, and so are compile-time layout checks
/// (`const _: () = assert!(…)`), which state no invariant of a transition.
pub fn assertion_counts(files: &[SourceFile]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for (module, code) in non_test_code(files) {
        let count = counts.entry(module).or_insert(0);
        for (_, line) in code_lines(&code) {
            if !line.contains("const _") {
                *count += MACROS
                    .iter()
                    .map(|m| line.matches(m).count())
                    .sum::<usize>();
            }
        }
    }
    counts
}

/// Functions with a body in the non-test code of each module (test files and a trailing
/// `#[cfg(test)] mod … {` block skipped, as for the assertions).
pub fn function_counts(files: &[SourceFile]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for (module, code) in non_test_code(files) {
        *counts.entry(module).or_insert(0) += function_lengths(&code).len();
    }
    counts
}

/// Each library file's module and its non-test code: empty for a test-only file, else the
/// text up to a trailing `#[cfg(test)] mod … {` block.
fn non_test_code(files: &[SourceFile]) -> Vec<(String, String)> {
    let test_modules = test_module_paths(files);
    let is_test = |path: &str| {
        test_only(path)
            || (test_modules.iter()).any(|m| path == format!("{m}.rs") || path.starts_with(m))
    };
    let mut found = Vec::new();
    for (path, text) in files {
        let Some(module) = module_of(path) else {
            continue;
        };
        if is_test(path) {
            found.push((module, String::new()));
            continue;
        }
        let mut kept = String::new();
        let mut previous = "";
        for line in text.lines() {
            let code = line.split("//").next().unwrap_or("");
            let test_block =
                code.trim_start().starts_with("mod ") && code.trim_end().ends_with('{');
            if previous.trim() == "#[cfg(test)]" && test_block {
                break;
            }
            if !code.trim().is_empty() {
                previous = code;
            }
            kept.push_str(line);
            kept.push('\n');
        }
        found.push((module, kept));
    }
    found
}

/// The paths (without `.rs`; a folder's path is also a prefix of its files) of the modules
/// declared `#[cfg(test)] mod name;`, whatever their file is called.
fn test_module_paths(files: &[SourceFile]) -> Vec<String> {
    let mut found = Vec::new();
    for (path, text) in files {
        let dir = match path
            .strip_suffix("/mod.rs")
            .or(path.strip_suffix("/lib.rs"))
        {
            Some(dir) => dir.to_owned(),
            None => path.trim_end_matches(".rs").to_owned(),
        };
        let mut previous = "";
        for (_, code) in code_lines(text) {
            let declared = code
                .trim()
                .strip_prefix("mod ")
                .or(code.trim().strip_prefix("pub(crate) mod "));
            if previous.trim() == "#[cfg(test)]"
                && let Some(name) = declared.and_then(|rest| rest.strip_suffix(';'))
            {
                found.push(format!("{dir}/{name}"));
            }
            previous = code;
        }
    }
    found
}

/// Modules below their floor, and modules without one.
pub fn assertion_violations(files: &[SourceFile], floors: &[(&str, usize)]) -> Vec<String> {
    let floors: BTreeMap<&str, usize> = floors.iter().copied().collect();
    let mut found = Vec::new();
    for (module, count) in assertion_counts(files) {
        match floors.get(module.as_str()) {
            None => found.push(format!(
                "src/{module}: no assertion floor: add (\"{module}\", {count}) to \
                 ASSERTION_FLOORS in xtask/src/tidy/assertions.rs"
            )),
            Some(&floor) if count < floor => found.push(format!(
                "src/{module}: {count} assertions, below its floor of {floor}: restore the \
                 checks, or lower the floor in xtask/src/tidy/assertions.rs and say why"
            )),
            Some(_) => {}
        }
    }
    found
}

/// Modules whose assertions per function fall below their `DENSITY_FLOORS` entry.
pub fn density_violations(files: &[SourceFile], floors: &[(&str, usize)]) -> Vec<String> {
    let assertions = assertion_counts(files);
    let functions = function_counts(files);
    let mut found = Vec::new();
    for &(module, floor) in floors {
        let count = assertions.get(module).copied().unwrap_or(0);
        let fns = functions.get(module).copied().unwrap_or(0);
        if count * 100 < floor * fns {
            found.push(format!(
                "src/{module}: {count} assertions over {fns} functions, below {floor} per \
                 hundred functions: state the invariants where values cross (debug_assert! on \
                 hot paths), or lower the floor in xtask/src/tidy/assertions.rs and say why"
            ));
        }
    }
    found
}
