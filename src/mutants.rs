//! The catalogue of ablations: every rule of `safe` and fix of `fixed` that `--ablate` can
//! switch off, read from the declarations next to the code they switch
//! (`allocator::SAFE_ABLATIONS`, `leader::FIXED_ABLATIONS`), and the parsing of names
//! against it. `elasticsim ablations` prints it.

/// The leader variant and module-behaviour vocabularies, for the layers that may not import
/// `leader` itself (`scenario`, `cli`): one enum each, declared next to the code.
pub(crate) use crate::leader::{ModuleBehaviour, Variant, WorkCtx};

use crate::ablation::{Ablation, Ablations, Declared, Owner};

/// The declarations of one owner, in declaration order.
fn declared_by(owner: Owner) -> &'static [Declared] {
    match owner {
        Owner::Safe => &crate::allocator::SAFE_ABLATIONS,
        Owner::Fixed => &crate::leader::FIXED_ABLATIONS,
    }
}

/// Every ablation: (owner, name, one line on what it switches off), `safe`'s first.
pub(crate) fn catalogue() -> Vec<(Owner, &'static str, &'static str)> {
    Owner::ALL
        .into_iter()
        .flat_map(|owner| {
            declared_by(owner)
                .iter()
                .map(move |(ablation, what)| (owner, ablation.name(), *what))
        })
        .collect()
}

/// The ablations one owner declares, in declaration order.
pub(crate) fn declared_of(owner: Owner) -> Vec<Ablation> {
    declared_by(owner).iter().map(|(a, _)| *a).collect()
}

/// Every declared name.
pub(crate) fn valid_names() -> Vec<&'static str> {
    catalogue().into_iter().map(|(_, name, _)| name).collect()
}

/// The declared ablation named `name`; an unknown name is an error that lists the valid ones.
pub(crate) fn ablation_named(name: &str) -> Result<Ablation, String> {
    Owner::ALL
        .into_iter()
        .flat_map(declared_of)
        .find(|ablation| ablation.name() == name)
        .ok_or_else(|| {
            format!(
                "unknown ablation {name:?}; valid: {}",
                valid_names().join(", ")
            )
        })
}

/// Parse `NAME[,NAME…]`; an unknown name is an error that lists the valid ones.
pub(crate) fn parse(text: &str) -> Result<Ablations, String> {
    let names: Vec<&str> = text
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .collect();
    from_names(&names)
}

/// The set of these names; an unknown name is an error that lists the valid ones.
pub(crate) fn from_names<S: AsRef<str>>(names: &[S]) -> Result<Ablations, String> {
    let ablations = names
        .iter()
        .map(|name| ablation_named(name.as_ref()))
        .collect::<Result<Vec<Ablation>, String>>()?;
    Ok(Ablations::of(ablations))
}

#[cfg(test)]
mod tests {
    use super::{catalogue, declared_of, parse, valid_names};
    use crate::ablation::{Ablation, Owner};

    #[test]
    fn every_ablation_is_declared_by_exactly_its_owner() {
        let mut declared = valid_names();
        declared.sort_unstable();
        let mut all: Vec<&str> = Ablation::ALL.iter().map(|a| a.name()).collect();
        all.sort_unstable();
        assert_eq!(declared, all);
        for owner in Owner::ALL {
            for ablation in declared_of(owner) {
                assert_eq!(
                    ablation.owner(),
                    owner,
                    "{ablation:?} is declared by another"
                );
            }
        }
    }

    #[test]
    fn parse_sorts_and_dedups_known_names() {
        let ablations = parse("limits, reservations,limits").expect("known names");
        assert_eq!(ablations.names(), ["limits", "reservations"]);
        assert_eq!(
            ablations.owned_by(Owner::Safe).label(),
            "limits,reservations"
        );
        assert!(ablations.owned_by(Owner::Fixed).is_empty());
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
        assert_eq!(declared_of(Owner::Safe).len(), 9);
        assert!(!declared_of(Owner::Fixed).is_empty());
    }
}
