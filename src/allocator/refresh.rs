//! Refreshing the plugin's pod map from a listing (`upstream`, `pr355`): the naive rebuild
//! ([`rebuild_from_listing`], what the plugin does) and an incremental one that must leave
//! the map exactly as the rebuild would.
//!
//! The plugin rebuilds its map from every pod at every create-agent and server-ping, so a
//! cluster ten times larger made each of them ten times dearer to simulate. The incremental
//! refresh looks only at the names the new listing does not share with the last one
//! ([`PodList::changed_names`]) plus the names written into the map outside a refresh since
//! (a created pod, an eviction, a deleted pod: [`RefreshBase::touch`]). Why that is enough:
//! after a refresh, every entry is `KnownPod::from_pod` of its listed copy with an agent state
//! carried over; an entry whose name was neither touched nor changed since still is, because
//! its listed copy is the same allocation — exactly what the rebuild would make of it. Only
//! the agent state may change in place, and both refreshes carry it over. Debug builds run
//! both and compare them at every refresh; the tests below drive both with random histories.

use super::instances::{KnownPod, PodMap, rebuild_from_listing};
use crate::resources::{Pod, PodList};
use std::collections::BTreeSet;
use std::sync::Arc;

/// What an incremental refresh compares a new listing with.
#[derive(Debug, Default)]
pub(super) struct RefreshBase {
    /// The listing of the last refresh.
    list: PodList,
    /// Names whose entry was inserted or removed outside a refresh since.
    touched: BTreeSet<String>,
}

impl RefreshBase {
    /// The map's entry for `name` is about to be inserted or removed outside a refresh.
    pub(super) fn touch(&mut self, name: &str) {
        debug_assert!(!name.is_empty(), "a touched entry has a name");
        self.touched.insert(name.to_owned());
    }

    /// Replace `pods` with what [`rebuild_from_listing`] would make of `listing`, looking
    /// only at the names that changed since the last refresh.
    pub(super) fn refresh(&mut self, pods: &mut PodMap, listing: PodList) {
        let expected = cfg!(debug_assertions).then(|| rebuild_from_listing(pods, &listing));
        let mut names = std::mem::take(&mut self.touched);
        names.extend(
            listing
                .changed_names(&self.list)
                .into_iter()
                .map(str::to_owned),
        );
        for name in names {
            refresh_one(pods, &name, listing.get(&name));
        }
        self.list = listing;
        debug_assert!(
            self.touched.is_empty(),
            "a refresh settles every touched name"
        );
        if let Some(expected) = expected {
            assert!(
                *pods == expected,
                "the incremental refresh left the pod map unlike the rebuild"
            );
        }
    }
}

/// What the rebuild makes of one name, given its listed copy.
fn refresh_one(pods: &mut PodMap, name: &str, listed: Option<&Arc<Pod>>) {
    match listed.filter(|pod| KnownPod::is_agent_pod(pod)) {
        Some(pod) => {
            debug_assert_eq!(pod.name, name, "a listing finds a pod under its own name");
            let mut known = KnownPod::from_pod(pod);
            if let Some(old) = pods.get(name) {
                known.agent_state = old.agent_state;
            }
            pods.insert(name.to_owned(), known);
        }
        None => {
            pods.remove(name);
        }
    }
}

#[cfg(test)]
mod tests;
