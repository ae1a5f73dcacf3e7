//! Vocabularies typed from edge to edge (issue #50): a policy, leader variant, swarm kind,
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

/// The text types such a value must not have.
const TEXT_TYPES: [&str; 8] = [
    "String",
    "&str",
    "&'static str",
    "Option<String>",
    "Option<&str>",
    "Vec<String>",
    "Vec<&str>",
    "&[String]",
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

/// `name: <text type>` in one line of code (a field, a parameter or a binding).
fn text_typed(code: &str) -> Option<String> {
    for name in VOCABULARY_NAMES {
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
        for (line, code) in super::code_lines(text) {
            for fallback in FALLBACKS {
                if code.contains(fallback) {
                    found.push(format!(
                        "{path}:{line}: {fallback}: reject the name instead"
                    ));
                }
            }
            if let Some(typed) = text_typed(code) {
                found.push(format!("{path}:{line}: `{typed}`: use the enum"));
            }
        }
    }
    found
}
