//! The workspace keeps every house rule, and each rule fails on a planted violation.

use super::*;

fn planted(path: &str, text: &str) -> Vec<SourceFile> {
    vec![(path.to_owned(), text.to_owned())]
}

fn real_layers() -> BTreeMap<String, BTreeSet<String>> {
    let doc = fs::read_to_string(project_root().join(ARCHITECTURE_DOC)).expect("the doc exists");
    parse_layers(&doc).expect("the layer table parses")
}

#[test]
fn the_workspace_keeps_every_house_rule() {
    let mut report = String::new();
    for (rule, found) in check_all() {
        if !found.is_empty() {
            report.push_str(&format!("{rule}:\n  {}\n", found.join("\n  ")));
        }
    }
    assert!(report.is_empty(), "{report}");
}

#[test]
fn an_upward_import_fails_the_layer_check() {
    let layers = real_layers();
    let upward = planted(
        "src/allocator/planted.rs",
        "//! A planted violation.\nuse crate::resources::Pod;\nuse crate::world::World;\n",
    );
    let found = layer_violations(&layers, &upward);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("src/allocator/planted.rs:3: `allocator` imports `world`"));
    let grouped = planted(
        "src/kube/planted.rs",
        "use crate::{engine::SimTime, gocd::Server};\n",
    );
    let found = layer_violations(&layers, &grouped);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("`kube` imports `gocd`"), "{found:?}");
}

#[test]
fn an_allowed_import_a_comment_and_test_code_pass_the_layer_check() {
    let layers = real_layers();
    let text = "\
// crate::world in a comment is fine
use crate::resources::Pod;

#[cfg(test)]
mod tests {
    use crate::world::World;
}
";
    assert_eq!(
        layer_violations(&layers, &planted("src/allocator/x.rs", text)),
        Vec::<String>::new()
    );
    let test_file = planted("src/allocator/tests.rs", "use crate::world::World;\n");
    assert_eq!(layer_violations(&layers, &test_file), Vec::<String>::new());
}

#[test]
fn a_module_missing_from_the_table_and_a_cycle_fail() {
    let layers = real_layers();
    let found = layer_violations(&layers, &planted("src/newcomer/mod.rs", "\n"));
    assert_eq!(found.len(), 1);
    assert!(
        found[0].contains("src/newcomer: a module missing"),
        "{found:?}"
    );
    let doc = "\
| module | owns | may depend on |
|---|---|---|
| `a` | one | `b` |
| `b` | two | `a` |
";
    let cyclic = parse_layers(doc).expect("parses");
    assert_eq!(cyclic["a"], BTreeSet::from(["b".to_owned()]));
    assert_eq!(layer_cycles(&cyclic).len(), 2);
}

#[test]
fn the_layer_table_is_read_from_its_header_on() {
    let doc = "\
Intro | with a pipe.

| module | owns | may depend on |
|---|---|---|
| `engine` | time | — |
| `src/kube/` | pods | `engine`, `trace` |

| other | table |
|---|---|
| `x` | `y` |
";
    let layers = parse_layers(doc).expect("parses");
    assert_eq!(layers.len(), 2);
    assert!(layers["engine"].is_empty());
    assert_eq!(layers["kube"].len(), 2);
    assert!(parse_layers("no table here").is_err());
}

fn function_of(lines: usize) -> String {
    let mut text = String::from("fn long() {\n");
    for i in 0..lines - 2 {
        text.push_str(&format!("    let _x{i} = \"{{\";\n"));
    }
    text.push_str("}\n");
    text
}

#[test]
fn an_over_long_function_fails_the_ratchet() {
    let at_max = planted("src/x.rs", &function_of(FUNCTION_LINES_MAX));
    assert_eq!(
        long_functions(&at_max, FUNCTION_LINES_MAX),
        Vec::<String>::new()
    );
    let over = planted("src/x.rs", &function_of(FUNCTION_LINES_MAX + 1));
    let found = long_functions(&over, FUNCTION_LINES_MAX);
    assert_eq!(found.len(), 1);
    assert!(found[0].starts_with(&format!(
        "src/x.rs:1: fn long is {} lines",
        FUNCTION_LINES_MAX + 1
    )));
}

#[test]
fn function_lengths_ignore_braces_in_literals_and_skip_bodiless_declarations() {
    let text = r##"
trait T {
    fn declared(&self) -> u32;
}

pub(crate) fn tricky<'a>(x: &'a str) -> char {
    let _open = '{';
    let _raw = r#"{ "}" "#;
    // } a brace in a comment
    /* { */
    if x.is_empty() { '}' } else { '\u{7b}' }
}
"##;
    let lengths = function_lengths(text);
    assert_eq!(lengths, vec![(6, "tricky".to_owned(), 7)]);
}

#[test]
fn banned_calls_and_leftovers_are_found() {
    let clock = planted("src/world/x.rs", "let t = std::time::Instant::now();\n");
    assert_eq!(determinism_violations(&clock).len(), 1);
    let edge = planted("src/wall.rs", "let t = std::time::Instant::now();\n");
    assert!(determinism_violations(&edge).is_empty());
    let debug = planted("src/x.rs", "fn f() { dbg!(1); }\n");
    assert_eq!(hygiene_violations(&debug).len(), 1);
    let wide = planted(
        "src/x.rs",
        &format!("// {}\n", "x".repeat(LINE_COLUMNS_MAX)),
    );
    assert_eq!(size_violations(&wide).len(), 1);
}

#[test]
fn a_hash_map_inside_a_run_is_found() {
    let imported = planted(
        "src/check/x.rs",
        "use std::collections::{BTreeMap, HashMap};\nlet s: HashSet<u8> = x;\n",
    );
    assert_eq!(
        hash_map_violations(&imported),
        vec!["src/check/x.rs:1: HashMap", "src/check/x.rs:2: HashSet"]
    );
    let crate_map = planted("src/ids/x.rs", "use hashbrown::HashTable;\n");
    assert_eq!(hash_map_violations(&crate_map).len(), 1);
    let named = planted(
        "src/check/x.rs",
        "use crate::ids::NameMap;\n// a HashMap in a comment\n\
         let s = \"ConcurrentHashMap\";\n",
    );
    assert!(hash_map_violations(&named).is_empty());
    let edge = planted("src/live/x.rs", "use std::collections::HashMap;\n");
    assert!(hash_map_violations(&edge).is_empty());
}

#[test]
fn a_layout_outside_the_layout_module_is_found() {
    let aligned = planted("src/kube/x.rs", "#[repr(C, align(64))]\nstruct Pod;\n");
    assert_eq!(
        micro_layout_violations(&aligned),
        vec![format!(
            "src/kube/x.rs:1: a micro-layout outside {LAYOUT_MODULE}"
        )]
    );
    let prefetch = planted("src/engine/x.rs", "fn f() { _mm_prefetch(p, 3); }\n");
    assert_eq!(micro_layout_violations(&prefetch).len(), 1);
    let home = planted(
        LAYOUT_MODULE,
        "#[repr(C, align(64))]\nstruct CacheLine<T>(T);\n",
    );
    assert!(micro_layout_violations(&home).is_empty());
    let ordered = planted(
        LAYOUT_ORDERED[0],
        "// #[repr(C)] in a comment\n#[repr(C)]\nstruct A;\n",
    );
    assert!(micro_layout_violations(&ordered).is_empty());
    let twice = planted(
        LAYOUT_ORDERED[1],
        "#[repr(C)]\nstruct A;\n#[repr(C)]\nstruct B;\n",
    );
    assert_eq!(micro_layout_violations(&twice).len(), 1);
    let aligned_there = planted(LAYOUT_ORDERED[0], "#[repr(C, align(64))]\nstruct A;\n");
    assert_eq!(micro_layout_violations(&aligned_there).len(), 1);
}

#[test]
fn an_unsafe_block_needs_a_safety_comment_and_a_root_denies_unsafe_code() {
    let bare = planted("src/engine/x.rs", "fn f() {\n    unsafe { g() }\n}\n");
    assert_eq!(unsafe_violations(&bare).len(), 1);
    let said = planted(
        "src/engine/x.rs",
        "fn f() {\n    // SAFETY: g has no precondition.\n    #[allow(unsafe_code)]\n    \
         unsafe { g() }\n}\nlet unsafe_name = 1;\n",
    );
    assert!(unsafe_violations(&said).is_empty());
    let root = planted("src/lib.rs", "//! The crate.\nmod x;\n");
    assert_eq!(unsafe_violations(&root).len(), 1);
}

#[test]
fn the_assertion_ratchet_counts_run_time_checks_and_fails_below_a_floor() {
    let text = "fn f(x: u32) {\n    assert!(x > 0);\n    debug_assert_eq!(x, 1, \"one\");\n    \
                // assert!(commented out)\n}\nconst _: () = assert!(8 == 8);\n\
                #[cfg(test)]\nmod tests {\n    fn t() { assert!(true); }\n}\n";
    let mut files = planted("src/kube/api.rs", text);
    files.push((
        "src/kube/tests.rs".to_owned(),
        "fn t() { assert!(true); }\n".to_owned(),
    ));
    assert_eq!(assertion_counts(&files).get("kube"), Some(&2));
    assert!(assertion_violations(&files, &[("kube", 2)]).is_empty());
    let below = assertion_violations(&files, &[("kube", 3)]);
    assert_eq!(below.len(), 1, "{below:?}");
    assert!(below[0].starts_with("src/kube: 2 assertions, below its floor of 3"));
    let missing = assertion_violations(&files, &[]);
    assert!(missing[0].contains("no assertion floor"), "{missing:?}");
}

#[test]
fn the_density_floor_counts_checks_per_function_and_fails_below_it() {
    // Two functions with bodies and one without, one assertion; the test block counts neither.
    let text = "fn f(x: u32) {\n    debug_assert!(x > 0);\n}\nfn g() {}\nfn h();\n\
                #[cfg(test)]\nmod tests {\n    fn t() { assert!(true); }\n}\n";
    let files = planted("src/check/x.rs", text);
    assert_eq!(assertions::function_counts(&files).get("check"), Some(&2));
    assert!(density_violations(&files, &[("check", 50)]).is_empty());
    let below = density_violations(&files, &[("check", 51)]);
    assert_eq!(below.len(), 1, "{below:?}");
    assert!(
        below[0].starts_with("src/check: 1 assertions over 2 functions, below 51"),
        "{below:?}"
    );
}

#[test]
fn the_public_surface_counts_pub_items_of_the_library_only() {
    let mut files = planted(
        "src/kube/x.rs",
        "pub fn f() {}\npub(crate) fn g() {}\npub struct S {\n    pub field: u8,\n}\n\
         pub use a::B;\n// pub fn commented() {}\npub const fn c() {}\n",
    );
    files.extend(planted("src/main.rs", "pub fn main_only() {}\n"));
    files.extend(planted("tests/x/main.rs", "pub fn helper() {}\n"));
    assert_eq!(surface::pub_item_count(&files), 4);
    assert!(pub_surface_violations(&files, 4).is_empty());
    let above = pub_surface_violations(&files, 3);
    assert_eq!(above.len(), 1, "{above:?}");
    assert!(above[0].starts_with("src/: 4 pub items, above the ceiling of 3"));
}

#[test]
fn a_test_module_not_named_tests_a_path_and_a_test_file_name_fail_the_layout_check() {
    let renamed = planted(
        "src/x.rs",
        "fn f() {}\n#[cfg(test)]\nmod policy_tests {\n}\n",
    );
    let found = unit_test_layout_violations(&renamed);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("src/x.rs:3: #[cfg(test)] mod policy_tests"));
    let between = planted(
        "src/x.rs",
        "#[cfg(test)]\n#[allow(dead_code)]\npub(crate) mod kit;\n",
    );
    let found = unit_test_layout_violations(&between);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("mod kit"), "{found:?}");
    let pathed = planted(
        "src/x.rs",
        "#[cfg(test)]\n#[path = \"x_tests.rs\"]\nmod tests;\n",
    );
    let found = unit_test_layout_violations(&pathed);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("src/x.rs:2: #[path]"), "{found:?}");
    for misnamed in [
        "src/a/tests_errors.rs",
        "src/a/refresh_tests.rs",
        "bench/src/x_test.rs",
    ] {
        let found = unit_test_layout_violations(&planted(misnamed, "\n"));
        assert_eq!(found.len(), 1, "{misnamed}: {found:?}");
        assert!(found[0].contains("a test file named"), "{found:?}");
    }
}

#[test]
fn tests_modules_inline_or_in_their_own_files_pass_the_layout_check() {
    let inline = "fn f() {}\n#[cfg(test)]\nmod tests {\n    mod inner;\n}\n";
    let declared = "#[cfg(test)]\npub(crate) mod tests;\n#[cfg(test)]\nuse x::y;\nmod other;\n";
    let mut files = planted("src/a.rs", inline);
    files.extend(planted("src/b/mod.rs", declared));
    files.extend(planted("src/a/tests.rs", "mod topic;\n"));
    files.extend(planted("src/b/tests/errors.rs", "use super::x;\n"));
    files.extend(planted("src/testkit/cluster.rs", "\n"));
    // Integration tests are modules of their axis binary, named as they like (here after the
    // Java class a conformance module ports).
    files.extend(planted(
        "tests/conformance/kubernetes_agent_instances_test.rs",
        "#[cfg(test)]\nmod helpers;\n",
    ));
    assert_eq!(unit_test_layout_violations(&files), Vec::<String>::new());
}

#[test]
fn a_test_binary_outside_the_axes_fails() {
    let mut files = planted("tests/cli.rs", "\n");
    files.extend(planted("tests/live/main.rs", "\n"));
    for path in [
        "tests/commands/main.rs",
        "tests/commands/cli.rs",
        "tests/commands/live/turmoil_partition.rs",
        "tests/common/mod.rs",
        "tests/conformance/leader/driver.rs",
        "src/main.rs",
    ] {
        files.extend(planted(path, "\n"));
    }
    let found = test_binary_violations(&files);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0].starts_with("tests/cli.rs: a test binary `cli`"),
        "{found:?}"
    );
    assert!(
        found[1].starts_with("tests/live/main.rs: a test binary `live`"),
        "{found:?}"
    );
}

#[test]
fn a_crate_runner_clock_or_unsafe_outside_its_determinism_module_fails() {
    let clock = planted(
        "cratesim/src/planted.rs",
        "fn f() {\n    let a = std::time::Instant::now();\n    // determinism-ok: planted\n    \
         let b = std::time::Instant::now();\n    unsafe { g() }\n}\n",
    );
    let found = crate_runner_violations(&clock);
    assert_eq!(
        found,
        vec![
            "cratesim/src/planted.rs:2: Instant::now without determinism-ok".to_owned(),
            "cratesim/src/planted.rs:5: unsafe outside cratesim/src/determinism.rs".to_owned(),
        ]
    );
    let module = planted(
        CRATE_DETERMINISM,
        "fn now() { std::time::Instant::now(); }\n",
    );
    assert!(crate_runner_violations(&module).is_empty());
}

#[test]
fn a_fallback_or_a_text_typed_vocabulary_fails_the_vocabulary_check() {
    let planted_files = planted(
        "src/run/planted.rs",
        "fn variant(name: Option<&str>) -> Variant {\n\
         \x20   name.and_then(Variant::from_name).unwrap_or(Variant::Fixed)\n\
         }\n\
         struct Settings {\n\
         \x20   policy: String,\n\
         \x20   ablations: Vec<String>,\n\
         \x20   variant: Option<Variant>,\n\
         \x20   policy_label: String,\n\
         }\n",
    );
    let found = vocabulary_violations(&planted_files);
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(
        found[0].starts_with("src/run/planted.rs:2: unwrap_or(Variant::"),
        "{found:?}"
    );
    assert!(
        found[1].starts_with("src/run/planted.rs:5: `policy: String`"),
        "{found:?}"
    );
    assert!(
        found[2].starts_with("src/run/planted.rs:6: `ablations: Vec<String>`"),
        "{found:?}"
    );
    let outside = planted("tests/planted.rs", "fn run(variant: &str) {}\n");
    assert!(vocabulary_violations(&outside).is_empty());
}

#[test]
fn a_fault_kind_or_an_invariant_id_held_as_text_fails_the_vocabulary_check() {
    let code = "struct Swarm {\n\
                \x20   kinds: Vec<String>,\n\
                \x20   id: &'static str,\n\
                }\n\
                fn shrink(invariant: Option<&str>) {}\n";
    let found = vocabulary_violations(&planted("src/explore/planted.rs", code));
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found[0].contains(":2: `kinds: Vec<String>`"), "{found:?}");
    assert!(found[1].contains(":3: `id: &'static str`"), "{found:?}");
    assert!(
        found[2].contains(":5: `invariant: Option<&str>`"),
        "{found:?}"
    );
    // Outside the places that judge and report invariants an `id` is a job's or a pod's,
    // and in `live/` a `kind` is a Kubernetes object's.
    let elsewhere = planted("src/gocd/planted.rs", "fn agent(id: &str) {}\n");
    assert!(vocabulary_violations(&elsewhere).is_empty());
    let kube = planted("src/live/store.rs", "fn record(kind: &'static str) {}\n");
    assert!(vocabulary_violations(&kube).is_empty());
}
