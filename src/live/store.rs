//! What `serve` shows: the simulated pods and Leases as Kubernetes JSON, each change numbered
//! with a resourceVersion and kept in a history that watches replay from any recent version.
//! The world thread publishes; HTTP handlers read. Pure data plus a change notifier.

use super::objects::{lease_json, pod_json};
use crate::replay::PodEvent;
use crate::resources::{Lease, Pod, StringMap};
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

/// Watch history kept; a watch from an older resourceVersion gets 410 Gone and re-lists.
const HISTORY_MAX: usize = 20_000;

/// The two resources served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    /// `pods`.
    Pods,
    /// `leases` (`coordination.k8s.io/v1`).
    Leases,
}

impl Resource {
    /// The resource's plural, as in its URL path.
    pub fn plural(self) -> &'static str {
        match self {
            Resource::Pods => "pods",
            Resource::Leases => "leases",
        }
    }
}

/// An object as served.
#[derive(Clone, Debug)]
pub struct Stored {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.labels`, for label selectors.
    pub labels: StringMap,
    /// Simulated creation time (for AGE).
    pub created_ms: u64,
    /// The object's Kubernetes JSON.
    pub object: Value,
}

/// One numbered change.
#[derive(Clone, Debug)]
pub struct Change {
    /// The resourceVersion the change got.
    pub resource_version: u64,
    /// Pods or Leases.
    pub resource: Resource,
    /// `ADDED`, `MODIFIED` or `DELETED`.
    pub kind: &'static str,
    /// The object after the change (for `DELETED`, as it was last).
    pub stored: Stored,
}

/// A watch asked for a resourceVersion older than the history.
#[derive(Debug)]
pub struct Gone;

/// The served state.
#[derive(Debug, Default)]
pub struct Store {
    /// Wall-clock milliseconds (Unix) of simulated time zero: timestamps in objects.
    pub epoch_ms: u64,
    /// Simulated now, for ages.
    pub sim_ms: u64,
    /// The run reached its end; objects stay as they were.
    pub ended: bool,
    resource_version: u64,
    pods: BTreeMap<String, Stored>,
    leases: BTreeMap<String, Stored>,
    history: VecDeque<Change>,
    /// Every change after this version is in `history`.
    history_from: u64,
}

impl Store {
    /// An empty store whose simulated time zero is `epoch_ms` (Unix wall-clock milliseconds).
    pub fn new(epoch_ms: u64) -> Store {
        Store {
            epoch_ms,
            ..Store::default()
        }
    }

    /// The version of the latest change (0 before the first).
    pub fn resource_version(&self) -> u64 {
        self.resource_version
    }

    fn objects(&self, resource: Resource) -> &BTreeMap<String, Stored> {
        match resource {
            Resource::Pods => &self.pods,
            Resource::Leases => &self.leases,
        }
    }

    fn record(&mut self, resource: Resource, kind: &'static str, stored: Stored) {
        self.resource_version += 1;
        let objects = match resource {
            Resource::Pods => &mut self.pods,
            Resource::Leases => &mut self.leases,
        };
        if kind == "DELETED" {
            objects.remove(&stored.name);
        } else {
            objects.insert(stored.name.clone(), stored.clone());
        }
        self.history.push_back(Change {
            resource_version: self.resource_version,
            resource,
            kind,
            stored,
        });
        if self.history.len() > HISTORY_MAX
            && let Some(oldest) = self.history.pop_front()
        {
            self.history_from = oldest.resource_version;
        }
    }

    /// A pod was added, modified or deleted (`pod` as last seen for a deletion).
    pub fn publish_pod(&mut self, event: PodEvent, pod: &Pod) {
        let kind = match event {
            PodEvent::Added => "ADDED",
            PodEvent::Modified => "MODIFIED",
            PodEvent::Deleted => "DELETED",
        };
        let object = pod_json(pod, self.resource_version + 1, self.epoch_ms);
        let stored = Stored {
            name: pod.name.clone(),
            labels: StringMap::clone(&pod.labels),
            created_ms: pod.created_ms,
            object,
        };
        self.record(Resource::Pods, kind, stored);
    }

    /// A Lease was written (`Some`) or deleted (`None`).
    pub fn publish_lease(&mut self, name: &str, lease: Option<&Lease>) {
        let (kind, object) = match lease {
            Some(lease) => {
                let kind = if self.leases.contains_key(name) {
                    "MODIFIED"
                } else {
                    "ADDED"
                };
                (
                    kind,
                    lease_json(lease, self.resource_version + 1, self.epoch_ms),
                )
            }
            None => match self.leases.get(name) {
                Some(old) => ("DELETED", old.object.clone()),
                None => return,
            },
        };
        let created_ms = self
            .leases
            .get(name)
            .map_or(self.sim_ms, |old| old.created_ms);
        let stored = Stored {
            name: name.to_owned(),
            labels: StringMap::new(),
            created_ms,
            object,
        };
        self.record(Resource::Leases, kind, stored);
    }

    /// Current objects matching `filter`, by name.
    pub fn list(&self, resource: Resource, filter: &Filter) -> Vec<Stored> {
        self.objects(resource)
            .values()
            .filter(|stored| filter.matches(stored))
            .cloned()
            .collect()
    }

    /// One object by name.
    pub fn get(&self, resource: Resource, name: &str) -> Option<Stored> {
        self.objects(resource).get(name).cloned()
    }

    /// Changes after `resource_version` matching `filter`, oldest first.
    pub fn changes_after(
        &self,
        resource_version: u64,
        resource: Resource,
        filter: &Filter,
    ) -> Result<Vec<Change>, Gone> {
        if resource_version < self.history_from {
            return Err(Gone);
        }
        Ok(self
            .history
            .iter()
            .filter(|change| change.resource_version > resource_version)
            .filter(|change| change.resource == resource && filter.matches(&change.stored))
            .cloned()
            .collect())
    }
}

/// A label selector (`a=b`, `a==b`, `a!=b`, `a`, `!a`, comma-separated) and the field selector
/// `metadata.name=NAME`.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    labels: Vec<(String, Requirement)>,
    name: Option<String>,
}

#[derive(Clone, Debug)]
enum Requirement {
    Equals(String),
    NotEquals(String),
    Exists,
    Absent,
}

impl Filter {
    /// Parse the selectors of a request; unsupported syntax is an error message.
    pub fn parse(labels: Option<&str>, fields: Option<&str>) -> Result<Filter, String> {
        let mut filter = Filter::default();
        for term in labels
            .unwrap_or("")
            .split(',')
            .filter(|t| !t.trim().is_empty())
        {
            let term = term.trim();
            let requirement = if let Some((key, value)) = term.split_once("!=") {
                (key, Requirement::NotEquals(value.to_owned()))
            } else if let Some((key, value)) = term.split_once("==") {
                (key, Requirement::Equals(value.to_owned()))
            } else if let Some((key, value)) = term.split_once('=') {
                (key, Requirement::Equals(value.to_owned()))
            } else if let Some(key) = term.strip_prefix('!') {
                (key, Requirement::Absent)
            } else if term.contains(' ') {
                return Err(format!("unsupported label selector {term:?}"));
            } else {
                (term, Requirement::Exists)
            };
            filter
                .labels
                .push((requirement.0.trim().to_owned(), requirement.1));
        }
        for term in fields
            .unwrap_or("")
            .split(',')
            .filter(|t| !t.trim().is_empty())
        {
            let value = term
                .strip_prefix("metadata.name==")
                .or_else(|| term.strip_prefix("metadata.name="))
                .ok_or_else(|| format!("unsupported field selector {term:?}"))?;
            filter.name = Some(value.to_owned());
        }
        Ok(filter)
    }

    /// True if `stored` satisfies every selector term.
    pub fn matches(&self, stored: &Stored) -> bool {
        if self.name.as_ref().is_some_and(|name| *name != stored.name) {
            return false;
        }
        self.labels.iter().all(|(key, requirement)| {
            let value = stored.labels.get(key);
            match requirement {
                Requirement::Equals(wanted) => value == Some(wanted),
                Requirement::NotEquals(unwanted) => value != Some(unwanted),
                Requirement::Exists => value.is_some(),
                Requirement::Absent => value.is_none(),
            }
        })
    }
}

/// The store shared between the world thread and the HTTP handlers, with a notifier that
/// wakes watches on every change.
pub struct Hub {
    store: Mutex<Store>,
    changed: tokio::sync::watch::Sender<u64>,
}

impl Hub {
    /// A hub over `store`, with no watch waiting yet.
    pub fn new(store: Store) -> Arc<Hub> {
        let (changed, _) = tokio::sync::watch::channel(store.resource_version());
        Arc::new(Hub {
            store: Mutex::new(store),
            changed,
        })
    }

    /// Read or change the store; watches wake after a change.
    pub fn with<T>(&self, change: impl FnOnce(&mut Store) -> T) -> T {
        let mut store = self.lock();
        let before = store.resource_version();
        let result = change(&mut store);
        let after = store.resource_version();
        drop(store);
        if after != before {
            self.changed.send_replace(after);
        }
        result
    }

    /// Read the store.
    pub fn lock(&self) -> MutexGuard<'_, Store> {
        // A panic while holding the lock leaves plain data that is still consistent enough
        // to serve; keep serving rather than cascading the panic into every handler.
        self.store
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A receiver that sees every new resourceVersion.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
    }
}
