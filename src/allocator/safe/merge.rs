//! Merging a pod list into the view: the naive merge (walk the whole list) and the
//! incremental one (only the pods that changed since the last list merged), which must leave
//! the view exactly as the naive one would.
//!
//! A list comes at every create-agent and server-ping. The naive merge costs O(pods) each
//! time, so a cluster ten times larger made every create-agent ten times dearer. The
//! incremental merge looks only at the names the two listings do not share
//! ([`PodList::changed_names`]) plus the names the view took in or dropped outside a merge
//! since (`observe`, `forget`). Why that is enough: after any merge, a name outside those two
//! sets is in the view iff it is in the last list, not terminating and not deleted by this
//! process, and its record holds that listed copy or a newer one — exactly what the naive
//! merge would leave for an unchanged listed copy. Debug builds run both and compare them at
//! every merge; `tests.rs` drives both with random lists, observations and deletions.

#[cfg(any(test, debug_assertions))]
use super::view::PodRecord;
use super::view::View;
use crate::resources::{Pod, PodList};
use std::collections::BTreeSet;
use std::sync::Arc;

/// What the incremental merge compares a new list with.
#[derive(Debug, Default)]
pub(crate) struct MergeBase {
    /// The last list merged.
    list: PodList,
    /// Names whose record `observe` or `forget` changed since that merge.
    pub(super) touched: BTreeSet<String>,
}

impl View {
    /// Merge a fresh list: pods missing from it are gone; for pods in it, keep the copy with
    /// the higher resourceVersion (a write answered after the list was served is newer).
    /// A terminating pod (deletion timestamp set) counts as gone: its agent was told to
    /// stop, so it is never claimed, assigned, or counted for a job or a limit.
    pub(crate) fn merge_list(&mut self, list: PodList) {
        #[cfg(debug_assertions)]
        let expected = {
            let mut naive = self.pods.records();
            merge_naive(&mut naive, &self.deleted, list.to_vec());
            naive
        };
        let mut names = std::mem::take(&mut self.merged.touched);
        names.extend(
            list.changed_names(&self.merged.list)
                .into_iter()
                .map(str::to_owned),
        );
        for name in names {
            self.merge_one(&name, list.get(&name));
        }
        self.merged.list = list;
        #[cfg(debug_assertions)]
        assert!(
            self.pods.records() == expected,
            "the incremental merge left the view unlike the naive merge"
        );
        self.apply_early_idle();
        self.distrust_after_cut_start();
        self.date_registered_containers();
    }

    /// The naive merge, for tests that compare the two.
    #[cfg(test)]
    pub(crate) fn merge_list_naive(&mut self, list: PodList) {
        let mut records = self.pods.records();
        merge_naive(&mut records, &self.deleted, list.to_vec());
        self.pods.replace_all(records);
        self.merged = MergeBase {
            list,
            touched: BTreeSet::new(),
        };
    }

    /// What the naive merge does to one name, given its listed copy.
    fn merge_one(&mut self, name: &str, listed: Option<&Arc<Pod>>) {
        let listed = listed.filter(|pod| !pod.is_terminating());
        match listed {
            // A pod this process deleted may still be listed by a list served before.
            Some(pod) if self.pods.contains_key(name) || !self.deleted.contains(name) => {
                self.pods.take_in(Arc::clone(pod));
            }
            Some(_) => {}
            None => self.pods.remove(name),
        }
    }
}

/// The naive merge: one pass over the view and the whole list, in name order.
#[cfg(any(test, debug_assertions))]
fn merge_naive(
    view: &mut std::collections::BTreeMap<String, PodRecord>,
    deleted: &BTreeSet<String>,
    mut pods: Vec<Arc<Pod>>,
) {
    pods.retain(|pod| !pod.is_terminating());
    // The API lists in name order, so the sort is a single check.
    pods.sort_by(|a, b| a.name.cmp(&b.name));
    let mut listed = pods.into_iter().peekable();
    let mut new_pods = Vec::new();
    view.retain(|name, record| {
        while let Some(pod) = listed.next_if(|pod| pod.name < *name) {
            new_pods.push(pod);
        }
        match listed.next_if(|pod| pod.name == *name) {
            Some(pod) => {
                record.take_newer(pod);
                true
            }
            // Not listed: gone from Kubernetes.
            None => false,
        }
    });
    new_pods.extend(listed);
    for pod in new_pods {
        // A pod this process deleted may still be in a list served before the delete.
        if !deleted.contains(&pod.name) {
            view.insert(pod.name.clone(), PodRecord::new(pod));
        }
    }
}
