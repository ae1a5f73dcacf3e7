//! The store's invariants, checked after every write in debug builds (the test suite).
//!
//! Each check walks the whole store (O(pods + nodes + Leases)), so it runs only when a
//! request or a kubelet input wrote something, and only with debug assertions on: a release
//! run pays nothing for it.

use super::api::KubeApi;
use std::collections::BTreeMap;

impl KubeApi {
    /// After a request or kubelet input that began at resourceVersion `before`: if it wrote,
    /// every node's used slots equal the pods bound to it, the uid index names exactly the
    /// stored pods, and no object's resourceVersion is ahead of the server's (a write takes
    /// a fresh, larger one).
    pub(super) fn check_store_after(&self, before: u64) {
        if !cfg!(debug_assertions) || self.resource_version == before {
            return;
        }
        debug_assert!(self.resource_version > before, "resourceVersion went back");
        let mut bound: BTreeMap<&str, u32> = BTreeMap::new();
        for state in self.pods.values() {
            let pod = &state.pod;
            debug_assert_eq!(
                self.uid_to_name.get(&pod.uid),
                Some(&pod.name),
                "the uid index misses pod {}",
                pod.name
            );
            debug_assert!(
                pod.resource_version <= self.resource_version,
                "pod {} is ahead of the server's resourceVersion",
                pod.name
            );
            if let Some(node) = &pod.node {
                *bound.entry(node.as_str()).or_default() += 1;
            }
        }
        debug_assert_eq!(
            self.uid_to_name.len(),
            self.pods.len(),
            "the uid index names pods the store lacks"
        );
        for node in &self.nodes {
            let pods = bound.remove(node.name.as_str()).unwrap_or(0);
            debug_assert_eq!(
                node.used, pods,
                "{}: used slots differ from bound pods",
                node.name
            );
        }
        debug_assert!(bound.is_empty(), "pods bound to unknown nodes: {bound:?}");
        let newest = self
            .leases
            .values()
            .map(|lease| lease.resource_version)
            .max();
        debug_assert!(
            newest.is_none_or(|rv| rv <= self.resource_version),
            "a Lease is ahead of the server's resourceVersion"
        );
    }
}
