//! Where a test lives, so that there is one way to find it (`docs/architecture.md`, "Tests").
//!
//! Unit tests (`src/`, `xtask/src/`, `bench/src/`): a module's tests are its child module
//! `tests`, declared `#[cfg(test)] mod tests`, written inline at the end of the file or in the
//! file Rust looks for (`<module>/tests.rs`, split into `tests/<topic>.rs` when long). So no
//! other name for a `#[cfg(test)]` module, no `#[path]`, and no `*_tests.rs`, `*_test.rs` or
//! `tests_*.rs` file. Integration tests (`tests/`): one binary per axis, `tests/<axis>/main.rs`
//! for the axes of `TEST_AXES`, each old-style `tests/<name>.rs` binary being a module of one.

use super::{SourceFile, code_lines};

/// The integration-test binaries, one per axis: what a user types, the models against the
/// real code, ports of the real projects' tests, and what the docs and pins claim.
pub const TEST_AXES: [&str; 4] = ["commands", "fidelity", "conformance", "claims"];

/// The module a line declares (`mod name;` or `mod name {`, any visibility), if it declares
/// one.
fn declared_module(code: &str) -> Option<&str> {
    let mut rest = code.trim_start();
    if let Some(visible) = rest.strip_prefix("pub") {
        rest = match visible.strip_prefix('(') {
            Some(scope) => scope.split_once(')').map_or("", |(_, after)| after),
            None => visible,
        }
        .trim_start();
    }
    let rest = rest.strip_prefix("mod ")?;
    let name = rest.split([';', '{', ' ']).next()?;
    (!name.is_empty()).then_some(name)
}

/// A file name that says "tests" other than `tests.rs`: `x_tests.rs`, `x_test.rs`,
/// `tests_x.rs`.
fn misnamed_test_file(file: &str) -> bool {
    let stem = file.strip_suffix(".rs").unwrap_or(file);
    stem.ends_with("_tests") || stem.ends_with("_test") || stem.starts_with("tests_")
}

/// Unit-test modules named other than `tests`, `#[path]` attributes, and test files named
/// other than `tests.rs` or `tests/<topic>.rs`, in the files of `files` outside `tests/`.
pub fn unit_test_layout_violations(files: &[SourceFile]) -> Vec<String> {
    let mut found = Vec::new();
    // tidy names what it bans, and its tests plant it.
    let tidy = |path: &str| path.ends_with("tidy.rs") || path.starts_with("xtask/src/tidy/");
    for (path, text) in files {
        if path.starts_with("tests/") || tidy(path) {
            continue;
        }
        let file = path.rsplit('/').next().unwrap_or(path);
        if misnamed_test_file(file) {
            found.push(format!(
                "{path}: a test file named `{file}`: tests go in the module's `tests` \
                 (`tests.rs`, or `tests/<topic>.rs`)"
            ));
        }
        let mut under_cfg_test = false;
        for (line, code) in code_lines(text) {
            let code = code.trim();
            if code.starts_with("#[path") {
                found.push(format!(
                    "{path}:{line}: #[path]: put the file where Rust looks"
                ));
            }
            if under_cfg_test
                && let Some(name) = declared_module(code)
                && name != "tests"
            {
                found.push(format!(
                    "{path}:{line}: #[cfg(test)] mod {name}: a module's tests are its `mod tests`"
                ));
            }
            // Other attributes may stand between `#[cfg(test)]` and the `mod`.
            under_cfg_test = code == "#[cfg(test)]" || (under_cfg_test && code.starts_with("#["));
        }
    }
    found
}

/// Integration-test binaries outside the axes: a `tests/<name>.rs` file, or a
/// `tests/<dir>/main.rs` whose folder is not one of `TEST_AXES`.
pub fn test_binary_violations(files: &[SourceFile]) -> Vec<String> {
    let mut found = Vec::new();
    for (path, _) in files {
        let Some(rest) = path.strip_prefix("tests/") else {
            continue;
        };
        let parts: Vec<&str> = rest.split('/').collect();
        let binary = match parts[..] {
            [file] => Some(file.trim_end_matches(".rs")),
            [dir, "main.rs"] if !TEST_AXES.contains(&dir) => Some(dir),
            _ => None,
        };
        if let Some(binary) = binary {
            found.push(format!(
                "{path}: a test binary `{binary}` outside the axes {TEST_AXES:?}: make it a \
                 module of one (`tests/<axis>/main.rs`)"
            ));
        }
    }
    found
}
