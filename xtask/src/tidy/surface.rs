//! The library's public surface: `pub` items of `src/` (functions, types, traits, modules,
//! constants, statics, re-exports; not fields, not `pub(crate)`). The crate's API is what the
//! binary, the bench, xtask and the tests use (`docs/architecture.md`, "The public API");
//! everything else is `pub(crate)` or private. The ceiling only goes down: lower it when
//! items leave the surface (make an item `pub(crate)`, build every target, keep `pub` what an
//! outside user needs).

use super::{SourceFile, code_lines};

/// The most `pub` items `src/` may hold (#50 asked for 600 or fewer).
pub const PUB_ITEMS_MAX: usize = 517;

/// The item kinds counted, after `pub `.
const KINDS: [&str; 9] = [
    "fn ", "struct ", "enum ", "mod ", "const ", "type ", "trait ", "use ", "static ",
];

/// How many `pub` items the library's files declare.
pub fn pub_item_count(files: &[SourceFile]) -> usize {
    let mut count = 0;
    for (path, text) in files {
        if !path.starts_with("src/") || path == "src/main.rs" || path.starts_with("src/bin/") {
            continue;
        }
        for (_, code) in code_lines(text) {
            let rest = code.trim_start();
            if let Some(item) = rest.strip_prefix("pub ")
                && KINDS.iter().any(|kind| item.starts_with(kind))
            {
                count += 1;
            }
        }
    }
    count
}

/// One line if the library declares more `pub` items than `max`.
pub fn pub_surface_violations(files: &[SourceFile], max: usize) -> Vec<String> {
    let count = pub_item_count(files);
    if count <= max {
        return Vec::new();
    }
    vec![format!(
        "src/: {count} pub items, above the ceiling of {max}: make what only the library uses \
         pub(crate) (see PUB_ITEMS_MAX in xtask/src/tidy/surface.rs)"
    )]
}
