//! What the world thread of `serve` publishes after each event: pod and Lease changes into the
//! served store, and the export lines.
//!
//! A Lease is served from the simulated API server's copy (`lease_json`), except one written
//! through `serve` by a client, which is served as the client wrote it (labels, an absent
//! holder, microseconds) for as long as the model's spec still equals that object's: once a
//! simulated replica or a fault writes it, the model's copy is served again.

use super::leases::check;
use super::objects::lease_json;
use super::store::{Hub, split_lease_key};
use crate::export::{Exporter, PodDiff};
use crate::resources::Lease;
use crate::world::World;
use serde_json::Value;
use std::collections::BTreeMap;

/// The world thread's publisher.
pub(super) struct Publisher<'a> {
    pub(super) hub: &'a Hub,
    pub(super) pods: PodDiff,
    /// The model resourceVersion last published, by Lease key.
    pub(super) leases: BTreeMap<String, u64>,
    /// The objects clients wrote through `serve`, by Lease key.
    pub(super) written: BTreeMap<String, Value>,
    pub(super) export: Exporter<std::io::LineWriter<std::fs::File>>,
}

impl Publisher<'_> {
    /// The served JSON of the model's Lease `lease`.
    fn lease_object(&self, lease: &Lease, epoch_ms: u64) -> Value {
        let written = self.written.get(&lease.name).filter(|object| {
            let (namespace, _) = split_lease_key(&lease.name);
            check((*object).clone(), namespace, None, epoch_ms)
                .is_ok_and(|checked| checked.spec == lease.spec)
        });
        written
            .cloned()
            .unwrap_or_else(|| lease_json(&lease.name, lease, epoch_ms))
    }

    /// True if a Lease was written or deleted since the last publication.
    pub(super) fn leases_changed(&self, world: &World) -> bool {
        let kube = world.kube();
        kube.leases().count() != self.leases.len()
            || kube
                .leases()
                .any(|lease| self.leases.get(&lease.name) != Some(&lease.resource_version))
    }

    /// Publish every pod and Lease change since the last call.
    pub(super) fn publish(&mut self, world: &World) -> Result<(), String> {
        let now_ms = world.now().as_ms();
        let changes = self.pods.diff(world.kube().pods());
        let epoch_ms = self.hub.lock().epoch_ms;
        let leases: Vec<(String, Option<Value>)> = world
            .kube()
            .leases()
            .filter(|lease| self.leases.get(&lease.name) != Some(&lease.resource_version))
            .map(|lease| (lease.name.clone(), Some(self.lease_object(lease, epoch_ms))))
            .chain(
                self.leases
                    .keys()
                    .filter(|key| world.kube().lease(key).is_none())
                    .map(|key| (key.clone(), None)),
            )
            .collect();
        for (key, object) in &leases {
            match (object, world.kube().lease(key)) {
                (Some(_), Some(lease)) => {
                    self.leases.insert(key.clone(), lease.resource_version);
                }
                _ => {
                    self.leases.remove(key);
                    self.written.remove(key);
                }
            }
        }
        self.hub.with(|store| {
            for change in &changes {
                store.publish_pod(change.event, &change.pod);
            }
            for (key, object) in leases {
                store.publish_lease(&key, object);
            }
        });
        let written: Vec<_> = changes.into_iter().filter(|c| c.state_changed).collect();
        self.export
            .write_changes(now_ms, written)
            .map_err(|e| format!("writing export.jsonl: {e}"))
    }
}
