//! What `serve` shows: the simulated pods and Leases, and the namespaces, as Kubernetes JSON,
//! each change numbered with a resourceVersion and kept in a history that watches replay from
//! any recent version. The world thread publishes pods and Leases; namespaces are written by
//! the HTTP handlers (the model has none). Pure data plus a change notifier.

use super::objects::{namespace_json, pod_json};
use crate::replay::PodEvent;
use crate::resources::{Pod, StringMap};
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

/// Watch history kept; a watch from an older resourceVersion gets 410 Gone and re-lists.
const HISTORY_MAX: usize = 20_000;

/// The namespaces a new store holds, as a fresh cluster's API server has them.
pub(crate) const BUILT_IN_NAMESPACES: [&str; 4] =
    ["default", "kube-node-lease", "kube-public", "kube-system"];

/// The resources served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Resource {
    /// `pods`.
    Pods,
    /// `leases` (`coordination.k8s.io/v1`).
    Leases,
    /// `namespaces` (cluster-scoped).
    Namespaces,
}

impl Resource {
    /// The resource's plural, as in its URL path.
    pub(crate) fn plural(self) -> &'static str {
        match self {
            Resource::Pods => "pods",
            Resource::Leases => "leases",
            Resource::Namespaces => "namespaces",
        }
    }

    /// The plural qualified by its API group, as the API server's messages name it
    /// (`leases.coordination.k8s.io`).
    pub(crate) fn qualified(self) -> &'static str {
        match self {
            Resource::Pods => "pods",
            Resource::Leases => "leases.coordination.k8s.io",
            Resource::Namespaces => "namespaces",
        }
    }

    /// The API group (empty for the core group).
    pub(crate) fn group(self) -> &'static str {
        match self {
            Resource::Leases => "coordination.k8s.io",
            Resource::Pods | Resource::Namespaces => "",
        }
    }
}

/// The key of a Lease in the simulated API server, which has no namespaces: the name in
/// `default`, `NAMESPACE/NAME` elsewhere (a name never holds a `/`, so keys never collide).
pub(crate) fn lease_key(namespace: &str, name: &str) -> String {
    if namespace == super::objects::NAMESPACE {
        name.to_owned()
    } else {
        format!("{namespace}/{name}")
    }
}

/// The namespace and name of a Lease key (see [`lease_key`]).
pub(crate) fn split_lease_key(key: &str) -> (&str, &str) {
    key.split_once('/')
        .unwrap_or((super::objects::NAMESPACE, key))
}

/// An object as served.
#[derive(Clone, Debug)]
pub(crate) struct Stored {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace` (empty for a namespace).
    pub namespace: String,
    /// `metadata.labels`, for label selectors.
    pub labels: StringMap,
    /// Simulated creation time (for AGE).
    pub created_ms: u64,
    /// The object's Kubernetes JSON.
    pub object: Value,
}

/// One numbered change.
#[derive(Clone, Debug)]
pub(crate) struct Change {
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
pub(crate) struct Gone;

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
    /// By [`lease_key`].
    leases: BTreeMap<String, Stored>,
    namespaces: BTreeMap<String, Stored>,
    history: VecDeque<Change>,
    /// Every change after this version is in `history`.
    history_from: u64,
}

impl Store {
    /// A store whose simulated time zero is `epoch_ms` (Unix wall-clock milliseconds), with
    /// the built-in namespaces and no other object.
    pub fn new(epoch_ms: u64) -> Store {
        let mut store = Store {
            epoch_ms,
            ..Store::default()
        };
        for name in BUILT_IN_NAMESPACES {
            store.publish_namespace(name, false);
        }
        store
    }

    /// The version of the latest change (0 before the first).
    pub(crate) fn resource_version(&self) -> u64 {
        self.resource_version
    }

    fn objects(&self, resource: Resource) -> &BTreeMap<String, Stored> {
        match resource {
            Resource::Pods => &self.pods,
            Resource::Leases => &self.leases,
            Resource::Namespaces => &self.namespaces,
        }
    }

    fn record(&mut self, resource: Resource, kind: &'static str, stored: Stored) {
        self.resource_version += 1;
        let (objects, key) = match resource {
            Resource::Pods => (&mut self.pods, stored.name.clone()),
            Resource::Leases => (&mut self.leases, lease_key(&stored.namespace, &stored.name)),
            Resource::Namespaces => (&mut self.namespaces, stored.name.clone()),
        };
        if kind == "DELETED" {
            objects.remove(&key);
        } else {
            objects.insert(key, stored.clone());
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
            namespace: super::objects::NAMESPACE.to_owned(),
            labels: StringMap::clone(&pod.labels),
            created_ms: pod.created_ms,
            object,
        };
        self.record(Resource::Pods, kind, stored);
    }

    /// The Lease of key `key` (see [`lease_key`]) was written (`Some`: its JSON, whose
    /// `metadata.resourceVersion`, `uid` and `creationTimestamp` this sets) or deleted
    /// (`None`).
    pub(crate) fn publish_lease(&mut self, key: &str, object: Option<Value>) {
        let (namespace, name) = split_lease_key(key);
        let old = self.leases.get(key);
        let created_ms = old.map_or(self.sim_ms, |old| old.created_ms);
        let (kind, object) = match (object, old) {
            (Some(mut object), old) => {
                let rv = self.resource_version + 1;
                let metadata = &mut object["metadata"];
                metadata["resourceVersion"] = Value::from(rv.to_string());
                metadata["uid"] = old.map_or_else(
                    || Value::from(format!("00000000-0000-0000-0001-{rv:012x}")),
                    |old| old.object["metadata"]["uid"].clone(),
                );
                metadata["creationTimestamp"] =
                    Value::from(crate::replay::rfc3339(self.epoch_ms + created_ms));
                (if old.is_some() { "MODIFIED" } else { "ADDED" }, object)
            }
            (None, Some(old)) => ("DELETED", old.object.clone()),
            (None, None) => return,
        };
        let labels = label_map(&object);
        let stored = Stored {
            name: name.to_owned(),
            namespace: namespace.to_owned(),
            labels,
            created_ms,
            object,
        };
        self.record(Resource::Leases, kind, stored);
    }

    /// Namespace `name` was created (`deleted` false) or deleted.
    pub(crate) fn publish_namespace(&mut self, name: &str, deleted: bool) {
        let old = self.namespaces.get(name);
        let created_ms = old.map_or(self.sim_ms, |old| old.created_ms);
        let kind = match (deleted, old.is_some()) {
            (true, false) => return,
            (true, true) => "DELETED",
            (false, true) => "MODIFIED",
            (false, false) => "ADDED",
        };
        let object = namespace_json(
            name,
            self.resource_version + 1,
            self.epoch_ms + created_ms,
            deleted,
        );
        let stored = Stored {
            name: name.to_owned(),
            namespace: String::new(),
            labels: label_map(&object),
            created_ms,
            object,
        };
        self.record(Resource::Namespaces, kind, stored);
    }

    /// Current objects matching `filter`, by name.
    pub(crate) fn list(&self, resource: Resource, filter: &Filter) -> Vec<Stored> {
        self.objects(resource)
            .values()
            .filter(|stored| filter.matches(stored))
            .cloned()
            .collect()
    }

    /// One object by key: a pod's or a namespace's name, a Lease's [`lease_key`].
    pub(crate) fn get(&self, resource: Resource, key: &str) -> Option<Stored> {
        self.objects(resource).get(key).cloned()
    }

    /// The Lease keys of namespace `namespace`.
    pub(crate) fn lease_keys_in(&self, namespace: &str) -> Vec<String> {
        self.leases
            .iter()
            .filter(|(_, stored)| stored.namespace == namespace)
            .map(|(key, _)| key.clone())
            .collect()
    }

    /// Changes after `resource_version` matching `filter`, oldest first.
    pub(crate) fn changes_after(
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

/// `metadata.labels` of an object's JSON.
fn label_map(object: &Value) -> StringMap {
    object["metadata"]["labels"]
        .as_object()
        .map(|labels| {
            labels
                .iter()
                .filter_map(|(key, value)| Some((key.clone(), value.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// A label selector (`a=b`, `a==b`, `a!=b`, `a`, `!a`, comma-separated) and the field selector
/// `metadata.name=NAME`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Filter {
    labels: Vec<(String, Requirement)>,
    name: Option<String>,
    /// Only objects of this namespace (a namespaced path); None: every namespace.
    pub namespace: Option<String>,
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
    pub(crate) fn parse(labels: Option<&str>, fields: Option<&str>) -> Result<Filter, String> {
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
    pub(crate) fn matches(&self, stored: &Stored) -> bool {
        if self.name.as_ref().is_some_and(|name| *name != stored.name)
            || self
                .namespace
                .as_ref()
                .is_some_and(|namespace| *namespace != stored.namespace)
        {
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
    pub(crate) fn lock(&self) -> MutexGuard<'_, Store> {
        // A panic while holding the lock leaves plain data that is still consistent enough
        // to serve; keep serving rather than cascading the panic into every handler.
        self.store
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A receiver that sees every new resourceVersion.
    pub(crate) fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
    }
}
