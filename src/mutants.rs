//! The catalogue of ablations: every rule of `safe` and fix of `fixed` that `--ablate` can
//! switch off, read from the declarations next to the code they switch
//! (`allocator::SAFE_ABLATIONS`, `leader::FIXED_ABLATIONS`), and the parsing of names
//! against it. `elasticsim ablations` prints it.

/// The leader variant and module-behaviour vocabularies, for the layers that may not import
/// `leader` itself (`scenario`, `cli`): one enum each, declared next to the code.
pub use crate::leader::{ModuleBehaviour, Variant, WorkCtx};

use crate::ablation::Ablations;

/// Every ablation: (owner policy or variant, name, one line on what it switches off).
pub fn catalogue() -> Vec<(&'static str, &'static str, &'static str)> {
    let safe = crate::allocator::SAFE_ABLATIONS
        .iter()
        .map(|(ablation, what)| ("safe", ablation.name(), *what));
    let fixed = crate::leader::FIXED_ABLATIONS
        .iter()
        .map(|(ablation, what)| ("fixed", ablation.name(), *what));
    safe.chain(fixed).collect()
}

/// The names of one owner, in declaration order.
pub fn names_of(owner: &str) -> Vec<&'static str> {
    catalogue()
        .into_iter()
        .filter(|(o, _, _)| *o == owner)
        .map(|(_, name, _)| name)
        .collect()
}

/// Every declared name.
pub fn valid_names() -> Vec<&'static str> {
    catalogue().into_iter().map(|(_, name, _)| name).collect()
}

/// Parse `NAME[,NAME…]`; an unknown name is an error that lists the valid ones.
pub fn parse(text: &str) -> Result<Ablations, String> {
    let names: Vec<&str> = text
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .collect();
    from_names(&names)
}

/// The set of these names; an unknown name is an error that lists the valid ones.
pub fn from_names<S: AsRef<str>>(names: &[S]) -> Result<Ablations, String> {
    let valid = valid_names();
    if let Some(unknown) = names.iter().find(|name| !valid.contains(&name.as_ref())) {
        return Err(format!(
            "unknown ablation {:?}; valid: {}",
            unknown.as_ref(),
            valid.join(", ")
        ));
    }
    Ok(Ablations::from_checked(names))
}

/// Only the names `owner` (`"safe"` or `"fixed"`) declares.
pub fn of(ablations: &Ablations, owner: &str) -> Ablations {
    ablations.only(&names_of(owner))
}

#[cfg(test)]
mod tests {
    use super::{catalogue, names_of, of, parse, valid_names};
    use crate::ablation::Ablation;

    #[test]
    fn every_ablation_is_declared_by_exactly_one_owner() {
        let mut declared = valid_names();
        declared.sort_unstable();
        let mut all: Vec<&str> = Ablation::ALL.iter().map(|a| a.name()).collect();
        all.sort_unstable();
        assert_eq!(declared, all);
    }

    #[test]
    fn parse_sorts_and_dedups_known_names() {
        let ablations = parse("limits, reservations,limits").expect("known names");
        assert_eq!(ablations.names(), ["limits", "reservations"]);
        assert_eq!(of(&ablations, "safe").label(), "limits,reservations");
        assert!(of(&ablations, "fixed").is_empty());
    }

    #[test]
    fn an_unknown_name_lists_the_valid_ones() {
        let error = parse("reservations,nope").expect_err("unknown name");
        assert!(error.contains("\"nope\""), "{error}");
        for (_, name, _) in catalogue() {
            assert!(error.contains(name), "{error} lacks {name}");
        }
    }

    #[test]
    fn names_are_unique_across_owners() {
        let mut names = valid_names();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "an ablation name is declared twice");
        assert_eq!(names_of("safe").len(), 9);
        assert!(!names_of("fixed").is_empty());
    }
}
