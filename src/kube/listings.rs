//! The API server's pod listings: one [`PodList`] per label selector that clients list with,
//! kept in step with the store at every write, so that answering a list costs O(1) instead of
//! a walk over every pod.
//!
//! The naive reference is [`naive_list`], a filter over the whole store: a listing built
//! once from it and then updated write by write must always equal it. Debug builds check that
//! at every list (`KubeApi::serve`), and the tests below check it on random write sequences.

use crate::resources::{Pod, PodList, StringMap};
use std::sync::Arc;

/// True when the pod carries every label of the selector.
pub(super) fn selects(selector: &StringMap, pod: &Pod) -> bool {
    selector
        .iter()
        .all(|(key, value)| pod.labels.get(key) == Some(value))
}

/// The pods of `store` that `selector` selects, built by walking the store.
pub(super) fn naive_list<'a>(
    selector: &StringMap,
    store: impl Iterator<Item = &'a Arc<Pod>>,
) -> PodList {
    store
        .filter(|pod| selects(selector, pod))
        .cloned()
        .collect()
}

/// The listings of every selector listed so far.
#[derive(Debug, Default)]
pub(super) struct Listings {
    by_selector: Vec<(StringMap, PodList)>,
}

impl Listings {
    /// The store's copy of pod `name` is now `pod` (`None`: the pod left the store).
    pub(super) fn publish(&mut self, name: &str, pod: Option<&Arc<Pod>>) {
        for (selector, list) in &mut self.by_selector {
            match pod {
                Some(pod) if selects(selector, pod) => list.put(Arc::clone(pod)),
                _ => list.remove(name),
            }
        }
    }

    /// The listing for `selector`: shared, O(1) once the selector has been listed before;
    /// the first list of a selector builds it from the store.
    pub(super) fn list<'a>(
        &mut self,
        selector: &StringMap,
        store: impl Iterator<Item = &'a Arc<Pod>>,
    ) -> PodList {
        if let Some((_, list)) = self.by_selector.iter().find(|(s, _)| s == selector) {
            return list.clone();
        }
        let list = naive_list(selector, store);
        self.by_selector.push((selector.clone(), list.clone()));
        list
    }
}

#[cfg(test)]
mod tests {
    use super::{Listings, naive_list};
    use crate::component::Random;
    use crate::engine::{Stream, StreamId};
    use crate::resources::{Pod, PodPhase, StringMap};
    use std::collections::BTreeMap;
    use std::sync::Arc;

    fn pod(name: &str, kind: Option<&str>, version: u64) -> Arc<Pod> {
        let labels = kind
            .map(|kind| StringMap::from([("kind".to_owned(), kind.to_owned())]))
            .unwrap_or_default();
        Arc::new(Pod {
            name: name.to_owned(),
            uid: version,
            labels: Arc::new(labels),
            annotations: StringMap::new(),
            image: "gocd/gocd-agent".to_owned(),
            env: Arc::default(),
            phase: PodPhase::Running,
            node: None,
            created_ms: 0,
            resource_version: version,
            restart_count: 0,
            ready: true,
            deletion_ms: None,
        })
    }

    #[test]
    fn listings_kept_by_writes_equal_a_walk_over_the_store() {
        let agents = StringMap::from([("kind".to_owned(), "agent".to_owned())]);
        let everything = StringMap::new();
        for seed in 1..=20 {
            let mut random = Stream::new(seed, StreamId::Kubelet);
            let mut store: BTreeMap<String, Arc<Pod>> = BTreeMap::new();
            let mut listings = Listings::default();
            for step in 0..500u64 {
                let name = format!("pod-{:02}", random.below(40));
                if random.below(4) == 0 {
                    store.remove(&name);
                } else {
                    // Labels may change between writes: a pod can enter or leave a selector.
                    let kind = ["agent", "other"][random.below(2) as usize];
                    let kind = (random.below(5) != 0).then_some(kind);
                    store.insert(name.clone(), pod(&name, kind, step));
                }
                listings.publish(&name, store.get(&name));
                // Selectors are first listed part-way through, as clients start late.
                for selector in [&agents, &everything] {
                    if step > 50 * (seed % 4) {
                        let kept = listings.list(selector, store.values());
                        let naive = naive_list(selector, store.values());
                        assert_eq!(kept, naive, "seed {seed} step {step}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_list_handed_out_keeps_its_contents_after_later_writes() {
        let selector = StringMap::new();
        let mut listings = Listings::default();
        let first = pod("a", None, 1);
        let handed = listings.list(&selector, [&first].into_iter());
        listings.publish("a", Some(&pod("a", None, 2)));
        listings.publish("b", Some(&pod("b", None, 3)));
        assert_eq!(handed.to_vec(), vec![first]);
        let now = listings.list(&selector, std::iter::empty());
        assert_eq!(now.len(), 2, "later lists see the writes");
    }
}
