//! Ablations: named rules of `safe` and named fixes of `fixed` switched off, one mutant per
//! name with a known defect. Each name is declared next to the code it switches
//! (`allocator::SAFE_ABLATIONS`, `leader::FIXED_ABLATIONS`); this module only parses and
//! carries a set of them. A run without ablations is the plain policy, bit for bit.

/// One declared ablation: its name and what switching it off does, in one line.
pub type Declared = (&'static str, &'static str);

/// A set of ablation names, sorted, without repeats. Empty means nothing is switched off.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ablations {
    names: Vec<&'static str>,
}

impl Ablations {
    /// Nothing switched off.
    pub fn none() -> Ablations {
        Ablations::default()
    }

    /// Parse `NAME[,NAME…]`; an unknown name is an error that lists the valid ones.
    pub fn parse(text: &str) -> Result<Ablations, String> {
        let names: Vec<&str> = text
            .split(',')
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .collect();
        Ablations::from_names(&names)
    }

    /// The set of these names; an unknown name is an error that lists the valid ones.
    pub fn from_names<S: AsRef<str>>(names: &[S]) -> Result<Ablations, String> {
        let mut known = Vec::new();
        for name in names {
            let name = name.as_ref();
            let Some((_, declared, _)) = catalogue().into_iter().find(|(_, n, _)| *n == name)
            else {
                return Err(format!(
                    "unknown ablation {name:?}; valid: {}",
                    valid_names().join(", ")
                ));
            };
            known.push(declared);
        }
        known.sort_unstable();
        known.dedup();
        Ok(Ablations { names: known })
    }

    /// True when rule or fix `name` is switched off.
    pub fn has(&self, name: &str) -> bool {
        self.names.contains(&name)
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The names, sorted.
    pub fn names(&self) -> &[&'static str] {
        &self.names
    }

    /// `a,b` (empty when nothing is switched off): the form `--ablate` takes.
    pub fn label(&self) -> String {
        self.names.join(",")
    }

    /// Only the names `owner` (`"safe"` or `"fixed"`) declares.
    pub fn of(&self, owner: &str) -> Ablations {
        let names = self
            .names
            .iter()
            .copied()
            .filter(|name| catalogue().iter().any(|(o, n, _)| *o == owner && n == name))
            .collect();
        Ablations { names }
    }
}

impl serde::Serialize for Ablations {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.names.iter())
    }
}

impl<'de> serde::Deserialize<'de> for Ablations {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let names = Vec::<String>::deserialize(deserializer)?;
        Ablations::from_names(&names).map_err(serde::de::Error::custom)
    }
}

/// Every ablation: (owner policy or variant, name, one line on what it switches off).
pub fn catalogue() -> Vec<(&'static str, &'static str, &'static str)> {
    let safe = crate::allocator::SAFE_ABLATIONS
        .iter()
        .map(|(name, what)| ("safe", *name, *what));
    let fixed = crate::leader::FIXED_ABLATIONS
        .iter()
        .map(|(name, what)| ("fixed", *name, *what));
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

fn valid_names() -> Vec<&'static str> {
    catalogue().into_iter().map(|(_, name, _)| name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_sorts_and_dedups_known_names() {
        let ablations = Ablations::parse("limits, reservations,limits").expect("known names");
        assert_eq!(ablations.names(), ["limits", "reservations"]);
        assert_eq!(ablations.label(), "limits,reservations");
        assert!(ablations.has("limits") && !ablations.has("fresh-state"));
    }

    #[test]
    fn an_unknown_name_lists_the_valid_ones() {
        let error = Ablations::parse("reservations,nope").expect_err("unknown name");
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
