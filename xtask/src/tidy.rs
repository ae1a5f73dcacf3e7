//! House rules checked by `cargo test -p xtask` (rust-analyzer's tidy, TigerBeetle's
//! `tidy.zig`): determinism bans, the allocator/leader boundary, no ignored or panicking-by-
//! design tests, no leftover debugging, line and file size limits.

use std::fs;
use std::path::{Path, PathBuf};

/// Hard caps. Files aim under ~800 lines; only code crossing these fails.
const LINE_COLUMNS_MAX: usize = 100;
const FILE_LINES_MAX: usize = 1000;

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

fn files(dirs: &[&str]) -> Vec<(String, String)> {
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

/// Every code line (comments dropped) of the Rust files under `dirs`, except the files
/// `skipped` names, that contains one of `needles`: `path:line: needle`, one per hit.
fn occurrences(dirs: &[&str], skipped: fn(&str) -> bool, needles: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for (path, text) in files(dirs) {
        if skipped(&path) {
            continue;
        }
        for (line, code) in code_lines(&text) {
            for needle in needles {
                if code.contains(needle) {
                    found.push(format!("{path}:{line}: {needle}"));
                }
            }
        }
    }
    found
}

#[test]
fn nothing_inside_a_run_reads_a_clock_sleeps_or_uses_random_state() {
    const BANNED: [&str; 7] = [
        "Instant::now",
        "SystemTime::now",
        "thread::sleep",
        "thread_rng(",
        "rand::random",
        "collections::HashMap",
        "collections::HashSet",
    ];
    let found = occurrences(&["src"], |path| path.starts_with("src/live/"), &BANNED);
    assert!(
        found.is_empty(),
        "banned outside src/live/ (use engine time, seeded streams, BTreeMap):\n{}",
        found.join("\n")
    );
}

#[test]
fn allocator_and_leader_import_nothing_from_the_simulator() {
    const SIMULATOR: [&str; 9] = [
        "crate::engine",
        "crate::kube",
        "crate::gocd",
        "crate::world",
        "crate::run",
        "crate::cli",
        "crate::check",
        "crate::report",
        "crate::trace",
    ];
    let found = occurrences(&["src/allocator", "src/leader"], |_| false, &SIMULATOR);
    assert!(
        found.is_empty(),
        "the allocator and leader code must stay readable without the simulator:\n{}",
        found.join("\n")
    );
}

#[test]
fn no_ignored_tests_no_panicking_tests_no_leftover_debugging() {
    const BANNED: [&str; 5] = [
        "#[ignore",
        "#[should_panic",
        "todo!(",
        "unimplemented!(",
        "dbg!(",
    ];
    let dirs = ["src", "tests", "xtask/src", "bench/src"];
    let found = occurrences(&dirs, |path| path.ends_with("tidy.rs"), &BANNED);
    assert!(
        found.is_empty(),
        "tests assert behaviour; nothing is left unfinished:\n{}",
        found.join("\n")
    );
}

#[test]
fn lines_and_files_stay_within_their_limits() {
    let mut found = Vec::new();
    for (path, text) in files(&["src", "tests", "xtask/src", "bench/src"]) {
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
    assert!(found.is_empty(), "{}", found.join("\n"));
}
