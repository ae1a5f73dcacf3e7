//! Ablations: named rules of `safe` and named fixes of `fixed` switched off, one mutant per
//! name with a known defect. The names are one enum, [`Ablation`], which the allocator and the
//! leader code ask by variant; what each switches off is declared next to the code it
//! switches (`allocator::SAFE_ABLATIONS`, `leader::FIXED_ABLATIONS`). The catalogue and the
//! parsing of `--ablate` live above both, in `mutants`. A run without ablations is the plain
//! policy, bit for bit.

/// One rule of `safe` or fix of `fixed` that `--ablate` can switch off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Ablation {
    /// `safe` rule 1: claimed idle pods are reserved.
    Reservations,
    /// `safe` rule 2: create-agent decides on a fresh pod list.
    FreshState,
    /// `safe` rule 3: idle time is measured from the last job.
    IdleTimeout,
    /// `safe` rule 4: the canonical config hash.
    CanonicalHash,
    /// `safe` rule 5: should-assign-work has no side effect.
    PureAssign,
    /// `safe` rule 6: reuse checks the environment and the agent's state.
    Assignable,
    /// `safe` rule 7: unregistered pods of an older process are adopted.
    RestartAdoption,
    /// `safe` rule 8: a restarted container's pod is not reused.
    ContainerRestart,
    /// `safe` rule 9: pending_pods_count counts pending pods only.
    Limits,
    /// `fixed`: a late OnStartedLeading of an old term starts nothing.
    TermCheck,
    /// `fixed`: after a lost term the runner rejoins the election.
    ReEnter,
    /// `fixed`: a restarted module gets the latest configuration.
    LatestConfig,
    /// `fixed`: the release write has a timeout.
    BoundedRelease,
    /// `fixed`: a candidate's Get/Update has a timeout.
    BoundedAcquire,
    /// `fixed`: after a lost term the modules stop before the elector releases.
    StopBeforeRelease,
    /// `fixed`: the release writes only while a fresh read still names us.
    ReleaseHolderCheck,
    /// `fixed`: a candidate's Get/Update is bounded by RD, not RP (issue #49).
    RdAcquireBound,
}

impl Ablation {
    /// Every rule and fix, `safe`'s first.
    pub const ALL: [Ablation; 17] = [
        Ablation::Reservations,
        Ablation::FreshState,
        Ablation::IdleTimeout,
        Ablation::CanonicalHash,
        Ablation::PureAssign,
        Ablation::Assignable,
        Ablation::RestartAdoption,
        Ablation::ContainerRestart,
        Ablation::Limits,
        Ablation::TermCheck,
        Ablation::ReEnter,
        Ablation::LatestConfig,
        Ablation::BoundedRelease,
        Ablation::BoundedAcquire,
        Ablation::StopBeforeRelease,
        Ablation::ReleaseHolderCheck,
        Ablation::RdAcquireBound,
    ];

    /// The name `--ablate` and `ablate = […]` take.
    pub const fn name(self) -> &'static str {
        match self {
            Ablation::Reservations => "reservations",
            Ablation::FreshState => "fresh-state",
            Ablation::IdleTimeout => "idle-timeout",
            Ablation::CanonicalHash => "canonical-hash",
            Ablation::PureAssign => "pure-assign",
            Ablation::Assignable => "assignable",
            Ablation::RestartAdoption => "restart-adoption",
            Ablation::ContainerRestart => "container-restart",
            Ablation::Limits => "limits",
            Ablation::TermCheck => "term-check",
            Ablation::ReEnter => "re-enter",
            Ablation::LatestConfig => "latest-config",
            Ablation::BoundedRelease => "bounded-release",
            Ablation::BoundedAcquire => "bounded-acquire",
            Ablation::StopBeforeRelease => "stop-before-release",
            Ablation::ReleaseHolderCheck => "release-holder-check",
            Ablation::RdAcquireBound => "rd-acquire-bound",
        }
    }
}

/// One declared ablation: the rule or fix, and what switching it off does, in one line.
pub type Declared = (Ablation, &'static str);

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

    /// True when rule or fix `ablation` is switched off.
    pub fn has(&self, ablation: Ablation) -> bool {
        self.names.iter().any(|n| n == ablation.name())
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
    use super::{Ablation, Ablations};

    #[test]
    fn a_set_is_sorted_without_repeats_and_keeps_only_what_is_asked() {
        let ablations = Ablations::from_checked(&["limits", "reservations", "limits"]);
        assert_eq!(ablations.names(), ["limits", "reservations"]);
        assert_eq!(ablations.label(), "limits,reservations");
        assert!(ablations.has(Ablation::Limits) && !ablations.has(Ablation::FreshState));
        assert_eq!(ablations.only(&["reservations"]).label(), "reservations");
        assert!(Ablations::none().is_empty());
    }
}
