//! Vocabularies typed from edge to edge (issue #50): a policy, leader variant, fault kind,
//! ablation or invariant id is parsed once where it enters (the scenario reader, clap, serde)
//! and is an enum from there on. Two things would bring the strings back: a fallback that
//! turns an unknown name into a default value, and a field or parameter that holds one of
//! these names as text. Both are banned in `src/` (`docs/architecture.md`, "Vocabularies").

/// Fallbacks that run a misspelt name as some default instead of rejecting it.
const FALLBACKS: [&str; 4] = [
    "unwrap_or(Variant::",
    "unwrap_or(Policy::",
    "unwrap_or(crate::leader::Variant::",
    "unwrap_or(crate::allocator::Policy::",
];

/// The names of fields and parameters that hold a vocabulary value.
const VOCABULARY_NAMES: [&str; 5] = ["policy", "policies", "variant", "variants", "ablations"];

/// Names that hold a fault kind or an invariant id, anywhere in `src/` except [`OTHER_KINDS`].
const KIND_NAMES: [&str; 4] = ["kind", "kinds", "invariant", "invariants"];

/// Files where a `kind` is not one of ours: a Kubernetes object's kind (`live/`, the pod
/// owner kinds of `kube/`), or a fault kind as the trace records it and the report's
/// `faults.csv` writes and reads it back (the trace is itself an edge: its records carry
/// names, and the fingerprint hashes them).
const OTHER_KINDS: [&str; 6] = [
    "src/live/router.rs",
    "src/live/objects.rs",
    "src/live/store.rs",
    "src/kube/listings.rs",
    "src/report/rows.rs",
    "src/report/plots/data.rs",
];

/// Names an invariant id goes by where violations are judged, run, swept and reported.
const ID_NAMES: [&str; 2] = ["id", "ids"];

/// Where [`ID_NAMES`] are invariant ids (elsewhere an `id` is a job's, an agent's, a pod's).
const ID_PLACES: [&str; 7] = [
    "src/check/",
    "src/explore/",
    "src/report/",
    "src/review/",
    "src/nightly/",
    "src/cli/",
    "src/run.rs",
];

/// The text types such a value must not have.
const TEXT_TYPES: [&str; 11] = [
    "String",
    "&str",
    "&'static str",
    "Option<String>",
    "Option<&str>",
    "Option<&'static str>",
    "Vec<String>",
    "Vec<&str>",
    "Vec<&'static str>",
    "&[String]",
    "&[&str]",
];

/// Files allowed to hold vocabulary names as text: none. The edges parse names into enums
/// (`Table::choice_of`, clap's `ValueEnum`, serde's derives), so no file needs a name field.
const TEXT_EDGES: [&str; 0] = [];

/// The text type declared right after `name:` at byte `at` of `code`, if it is one.
fn text_type_after(code: &str, at: usize) -> Option<&'static str> {
    let rest = code[at..].trim_start();
    let rest = rest.strip_prefix(':')?.trim_start();
    TEXT_TYPES.into_iter().find(|text| {
        rest.strip_prefix(text).is_some_and(|after| {
            after
                .chars()
                .next()
                .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == '<'))
        })
    })
}

/// The names that hold a vocabulary value in the file at `path`.
fn names_in(path: &str) -> Vec<&'static str> {
    let mut names = VOCABULARY_NAMES.to_vec();
    if !OTHER_KINDS.contains(&path) {
        names.extend(KIND_NAMES);
    }
    if ID_PLACES.iter().any(|place| path.starts_with(place)) {
        names.extend(ID_NAMES);
    }
    names
}

/// `name: <text type>` in one line of code (a field, a parameter or a binding).
fn text_typed(code: &str, names: &[&str]) -> Option<String> {
    for &name in names {
        for (at, _) in code.match_indices(name) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.') {
                continue;
            }
            if let Some(text) = text_type_after(code, at + name.len()) {
                return Some(format!("{name}: {text}"));
            }
        }
    }
    None
}

/// Fallbacks to a default variant or policy, and vocabulary fields typed as text, in `src/`.
pub fn vocabulary_violations(files: &[super::SourceFile]) -> Vec<String> {
    let mut found = Vec::new();
    for (path, text) in files {
        if !path.starts_with("src/") || TEXT_EDGES.contains(&path.as_str()) {
            continue;
        }
        let names = names_in(path);
        for (line, code) in super::code_lines(text) {
            for fallback in FALLBACKS {
                if code.contains(fallback) {
                    found.push(format!(
                        "{path}:{line}: {fallback}: reject the name instead"
                    ));
                }
            }
            if let Some(typed) = text_typed(code, &names) {
                found.push(format!("{path}:{line}: `{typed}`: use the enum"));
            }
        }
    }
    found
}
