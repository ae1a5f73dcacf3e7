//! Ablations: named rules of `safe` and named fixes of `fixed` switched off, one mutant per
//! name with a known defect. The names are one enum, [`Ablation`], which the allocator and the
//! leader code ask by variant; what each switches off is declared next to the code it
//! switches (`allocator::SAFE_ABLATIONS`, `leader::FIXED_ABLATIONS`). Each name has one owner,
//! [`Owner`] (`safe` or `fixed`). The catalogue and the parsing of `--ablate` live above
//! both, in `mutants`. A run without ablations is the plain
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
    pub(crate) const ALL: [Ablation; 17] = [
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
    pub(crate) const fn name(self) -> &'static str {
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
pub(crate) type Declared = (Ablation, &'static str);

/// Who declares an ablation: the policy whose rule or the variant whose fix it switches off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Owner {
    /// A rule of the `safe` allocator policy.
    Safe,
    /// A fix of the `fixed` leader variant.
    Fixed,
}

impl Owner {
    /// Both owners, `safe` first.
    pub(crate) const ALL: [Owner; 2] = [Owner::Safe, Owner::Fixed];

    /// The owner's name: the policy or variant name (`safe`, `fixed`).
    pub(crate) const fn name(self) -> &'static str {
        match self {
            Owner::Safe => "safe",
            Owner::Fixed => "fixed",
        }
    }
}

impl Ablation {
    /// The policy or variant whose rule or fix this is.
    pub(crate) const fn owner(self) -> Owner {
        match self {
            Ablation::Reservations
            | Ablation::FreshState
            | Ablation::IdleTimeout
            | Ablation::CanonicalHash
            | Ablation::PureAssign
            | Ablation::Assignable
            | Ablation::RestartAdoption
            | Ablation::ContainerRestart
            | Ablation::Limits => Owner::Safe,
            Ablation::TermCheck
            | Ablation::ReEnter
            | Ablation::LatestConfig
            | Ablation::BoundedRelease
            | Ablation::BoundedAcquire
            | Ablation::StopBeforeRelease
            | Ablation::ReleaseHolderCheck
            | Ablation::RdAcquireBound => Owner::Fixed,
        }
    }

    /// The ablation named `name`, if any.
    pub(crate) fn from_name(name: &str) -> Option<Ablation> {
        Ablation::ALL.into_iter().find(|a| a.name() == name)
    }
}

/// A set of ablations, kept sorted by name without repeats (the order of labels and
/// `summary.json`). Empty means nothing is switched off.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ablations {
    set: Vec<Ablation>,
}

impl Ablations {
    /// Nothing switched off.
    pub fn none() -> Ablations {
        Ablations::default()
    }

    /// The set of `ablations`, sorted by name and without repeats.
    pub fn of(ablations: impl IntoIterator<Item = Ablation>) -> Ablations {
        let mut set: Vec<Ablation> = ablations.into_iter().collect();
        set.sort_unstable_by_key(|a| a.name());
        set.dedup();
        Ablations { set }
    }

    /// True when rule or fix `ablation` is switched off.
    pub(crate) fn has(&self, ablation: Ablation) -> bool {
        self.set.contains(&ablation)
    }

    /// True when nothing is switched off (the run is the policy as written).
    pub(crate) fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// The ablations, sorted by name.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Ablation> + '_ {
        self.set.iter().copied()
    }

    /// The names, sorted.
    pub(crate) fn names(&self) -> Vec<&'static str> {
        self.iter().map(Ablation::name).collect()
    }

    /// `a,b` (empty when nothing is switched off): the form `--ablate` takes.
    pub(crate) fn label(&self) -> String {
        self.names().join(",")
    }

    /// Only the ablations `owner` declares.
    pub(crate) fn owned_by(&self, owner: Owner) -> Ablations {
        let set = self.iter().filter(|a| a.owner() == owner).collect();
        Ablations { set }
    }
}

impl serde::Serialize for Ablations {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter().map(Ablation::name))
    }
}

/// Read back from the harness's own files (`shard.json`, settings): an unknown name is an
/// error, never dropped.
impl<'de> serde::Deserialize<'de> for Ablations {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let names = Vec::<String>::deserialize(deserializer)?;
        let mut set = Vec::new();
        for name in &names {
            let ablation = Ablation::from_name(name)
                .ok_or_else(|| serde::de::Error::custom(format!("unknown ablation {name:?}")))?;
            set.push(ablation);
        }
        Ok(Ablations::of(set))
    }
}

#[cfg(test)]
mod tests {
    use super::{Ablation, Ablations, Owner};

    #[test]
    fn a_set_is_sorted_by_name_without_repeats_and_keeps_one_owner() {
        let ablations = Ablations::of([Ablation::Limits, Ablation::Reservations, Ablation::Limits]);
        assert_eq!(ablations.names(), ["limits", "reservations"]);
        assert_eq!(ablations.label(), "limits,reservations");
        assert!(ablations.has(Ablation::Limits) && !ablations.has(Ablation::FreshState));
        let mixed = Ablations::of([Ablation::TermCheck, Ablation::Reservations]);
        assert_eq!(mixed.owned_by(Owner::Safe).label(), "reservations");
        assert_eq!(mixed.owned_by(Owner::Fixed).label(), "term-check");
        assert!(Ablations::none().is_empty());
    }

    #[test]
    fn names_read_back_typed_and_an_unknown_name_is_refused() {
        let read: Ablations = serde_json::from_str(r#"["term-check","limits"]"#).expect("known");
        assert_eq!(read, Ablations::of([Ablation::Limits, Ablation::TermCheck]));
        assert_eq!(
            serde_json::to_string(&read).expect("names"),
            r#"["limits","term-check"]"#
        );
        let error = serde_json::from_str::<Ablations>(r#"["limit"]"#).expect_err("misspelt");
        assert!(
            error.to_string().contains("unknown ablation \"limit\""),
            "{error}"
        );
        for ablation in Ablation::ALL {
            assert_eq!(Ablation::from_name(ablation.name()), Some(ablation));
        }
    }
}
