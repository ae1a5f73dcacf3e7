//! Ablations: named rules of `safe` and named fixes of `fixed` switched off, one mutant per
//! name with a known defect. Each name is declared next to the code it switches
//! (`allocator::SAFE_ABLATIONS`, `leader::FIXED_ABLATIONS`); this module only carries a set
//! of names, so that the allocator and the leader code can ask it without knowing the
//! catalogue. The catalogue and the parsing of `--ablate` live above both, in `mutants`.
//! A run without ablations is the plain policy, bit for bit.

/// One declared ablation: its name and what switching it off does, in one line.
pub type Declared = (&'static str, &'static str);

/// A set of ablation names, sorted, without repeats. Empty means nothing is switched off.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ablations {
    names: Vec<String>,
}

impl Ablations {
    /// Nothing switched off.
    pub fn none() -> Ablations {
        Ablations::default()
    }

    /// The set of `names`, already checked against the catalogue (`mutants::from_names`
    /// checks them); sorted and without repeats.
    pub fn from_checked<S: AsRef<str>>(names: &[S]) -> Ablations {
        let mut names: Vec<String> = names.iter().map(|n| n.as_ref().to_owned()).collect();
        names.sort_unstable();
        names.dedup();
        Ablations { names }
    }

    /// True when rule or fix `name` is switched off.
    pub fn has(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
    }

    /// True when nothing is switched off (the run is the policy as written).
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The names, sorted.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// `a,b` (empty when nothing is switched off): the form `--ablate` takes.
    pub fn label(&self) -> String {
        self.names.join(",")
    }

    /// Only the names that are also in `declared` (one owner's declarations).
    pub fn only(&self, declared: &[&str]) -> Ablations {
        let names = self
            .names
            .iter()
            .filter(|name| declared.contains(&name.as_str()))
            .cloned()
            .collect();
        Ablations { names }
    }
}

impl serde::Serialize for Ablations {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.names.iter())
    }
}

/// Read back from the harness's own files (`shard.json`, settings); the names were checked
/// when the run was set up.
impl<'de> serde::Deserialize<'de> for Ablations {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let names = Vec::<String>::deserialize(deserializer)?;
        Ok(Ablations::from_checked(&names))
    }
}

#[cfg(test)]
mod tests {
    use super::Ablations;

    #[test]
    fn a_set_is_sorted_without_repeats_and_keeps_only_what_is_asked() {
        let ablations = Ablations::from_checked(&["limits", "reservations", "limits"]);
        assert_eq!(ablations.names(), ["limits", "reservations"]);
        assert_eq!(ablations.label(), "limits,reservations");
        assert!(ablations.has("limits") && !ablations.has("fresh-state"));
        assert_eq!(ablations.only(&["reservations"]).label(), "reservations");
        assert!(Ablations::none().is_empty());
    }
}
