//! The Lease objects the crates read and write, on top of the project's simulated API server
//! (`elasticsim::kube::KubeApi`).
//!
//! The model keeps what the leader monitors judge: each Lease's resourceVersion, holder and
//! transitions, the compare-and-swap of an update, and a `LeaseWritten` record for every
//! accepted write. The crates see more of the object than the model keeps: absent versus
//! empty fields (kube-lease-manager releases by setting `holderIdentity` to null and tells an
//! unlocked Lease by its absence), microsecond timestamps, and field ownership
//! (kube-lease-manager takes a free Lease with a server-side apply, which fails with 409
//! Conflict when another field manager owns `spec.holderIdentity` with another value). So
//! each Lease's spec is also kept here as JSON, with the field manager(s) of each spec field,
//! and every write goes through the model first: a write the model refuses is refused.
//!
//! A patch (JSON merge, strategic merge, apply) is applied by the API server to the object as
//! it is when the patch arrives, with no precondition unless the patch carries a
//! resourceVersion: here it is read and written back in the same instant, so no other write
//! can come between. The `LeaseWritten` record of a patch says `patch` or `apply` and
//! carries the resourceVersion the patch sent (none for both crates).

use elasticsim::engine::{Stream, StreamId};
use elasticsim::kube::{ApiOutput, ApiRequest, KubeApi, KubeSettings, PodDescription};
use elasticsim::resources::{KubeError, KubeReply, KubeRequest, LeaseSpec, Pod};
use elasticsim::trace::{Actor, Record};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// The namespace the crates are given.
pub const NAMESPACE: &str = "default";

/// How a PATCH body is to be read (its `Content-Type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchKind {
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/strategic-merge-patch+json`: for a Lease's spec (scalars only) the same
    /// as a merge patch.
    Strategic,
    /// `application/apply-patch+yaml`: server-side apply, with field-ownership conflicts.
    Apply,
}

/// One Lease call, as the HTTP layer parsed it.
#[derive(Clone, Debug)]
pub enum LeaseOp {
    /// `GET …/leases/{name}`.
    Get { name: String },
    /// `POST …/leases`.
    Create { body: Value, manager: String },
    /// `PATCH …/leases/{name}`.
    Patch {
        name: String,
        kind: PatchKind,
        manager: String,
        force: bool,
        body: Value,
    },
    /// `PUT …/leases/{name}`: an update, conditional on the resourceVersion it carries.
    Replace {
        name: String,
        body: Value,
        manager: String,
    },
    /// `DELETE …/leases/{name}`.
    Delete { name: String },
}

/// What the API server answers: an HTTP status and a JSON body (the object or a `Status`).
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    /// The HTTP status code.
    pub status: u16,
    /// The Lease, or a `Status` for an error.
    pub body: Value,
}

impl Answer {
    fn ok(body: Value) -> Answer {
        Answer { status: 200, body }
    }

    /// A `metav1.Status` failure, as the API server writes it.
    pub fn status(code: u16, reason: &str, message: String) -> Answer {
        let body = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        });
        Answer { status: code, body }
    }

    fn not_found(name: &str) -> Answer {
        let message = format!("leases.coordination.k8s.io \"{name}\" not found");
        Answer::status(404, "NotFound", message)
    }
}

/// A Lease's spec as JSON and the field managers of each of its fields.
#[derive(Clone, Debug, Default, PartialEq)]
struct Stored {
    spec: Map<String, Value>,
    owners: BTreeMap<String, BTreeSet<String>>,
}

/// A write that was accepted: who holds the Lease before and after.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    /// `holderIdentity` before the write (`None`: absent or no Lease).
    pub holder_before: Option<String>,
    /// `holderIdentity` after the write.
    pub holder_after: Option<String>,
}

/// The Lease store: the model plus the JSON objects.
pub struct LeaseStore {
    model: KubeApi,
    objects: BTreeMap<String, Stored>,
    /// Handed to the model, which draws nothing for Lease calls.
    random: Stream,
}

impl LeaseStore {
    /// An empty API server.
    pub fn new(seed: u64) -> LeaseStore {
        let settings = KubeSettings {
            nodes: 0,
            pods_per_node: 0,
            pod_startup_ms: (0, 0),
            pod_startup_sample_ms: Vec::new(),
            container_restart_backoff_ms: 10_000,
            describe_pod: describe_no_pod,
            termination_grace_ms: 30_000,
            node_eviction_ms: 300_000,
        };
        LeaseStore {
            model: KubeApi::new(settings),
            objects: BTreeMap::new(),
            random: Stream::new(seed, StreamId::KubeApi),
        }
    }

    /// Answer `op` from replica `replica` at `now_ms`; the model's trace records are pushed
    /// to `records`, and an accepted write is described in the second value.
    pub fn serve(
        &mut self,
        now_ms: u64,
        replica: u32,
        op: LeaseOp,
        records: &mut Vec<Record>,
    ) -> (Answer, Option<Written>) {
        match op {
            LeaseOp::Get { name } => (self.get(&name), None),
            LeaseOp::Create { body, manager } => {
                self.create(now_ms, replica, body, manager, records)
            }
            LeaseOp::Patch {
                name,
                kind,
                manager,
                force,
                body,
            } => {
                let edit = Edit {
                    kind,
                    manager,
                    force,
                    body,
                };
                self.patch(now_ms, replica, &name, edit, records)
            }
            LeaseOp::Replace {
                name,
                body,
                manager,
            } => self.replace(now_ms, replica, &name, body, manager, records),
            LeaseOp::Delete { name } => self.delete(now_ms, replica, &name, records),
        }
    }

    fn call(
        &mut self,
        now_ms: u64,
        replica: u32,
        request: KubeRequest,
        records: &mut Vec<Record>,
    ) -> Result<KubeReply, KubeError> {
        use elasticsim::component::Component;
        let mut out = ApiOutput::default();
        let input = ApiRequest {
            actor: Actor::Replica(replica),
            request,
        };
        self.model
            .api_server()
            .handle(now_ms, input, &mut self.random, &mut out);
        records.append(&mut out.effects.records);
        out.reply.unwrap_or(Err(KubeError::ServerError))
    }

    fn get(&self, name: &str) -> Answer {
        match (self.model.lease(name), self.objects.get(name)) {
            (Some(lease), Some(stored)) => {
                Answer::ok(object(name, lease.resource_version, &stored.spec))
            }
            _ => Answer::not_found(name),
        }
    }

    fn create(
        &mut self,
        now_ms: u64,
        replica: u32,
        body: Value,
        manager: String,
        records: &mut Vec<Record>,
    ) -> (Answer, Option<Written>) {
        let Some(name) = body["metadata"]["name"].as_str().map(str::to_owned) else {
            let message = "Lease \"\" is invalid: metadata.name: Required value".to_owned();
            return (Answer::status(422, "Invalid", message), None);
        };
        let mut stored = Stored::default();
        let spec = body["spec"].as_object().cloned().unwrap_or_default();
        let changes = merge(&mut stored.spec, &spec);
        stored.take_updated(&changes, &manager);
        let request = KubeRequest::CreateLease {
            name: name.clone(),
            spec: model_spec(&stored.spec),
        };
        match self.call(now_ms, replica, request, records) {
            Ok(_) => {
                let written = Written {
                    holder_before: None,
                    holder_after: holder(&stored.spec),
                };
                self.objects.insert(name.clone(), stored);
                (self.get(&name), Some(written))
            }
            Err(KubeError::Conflict) => {
                let message = format!("leases.coordination.k8s.io \"{name}\" already exists");
                (Answer::status(409, "AlreadyExists", message), None)
            }
            Err(other) => (model_error(other), None),
        }
    }

    fn patch(
        &mut self,
        now_ms: u64,
        replica: u32,
        name: &str,
        edit: Edit,
        records: &mut Vec<Record>,
    ) -> (Answer, Option<Written>) {
        let (Some(lease), Some(stored)) = (self.model.lease(name), self.objects.get(name)) else {
            return (Answer::not_found(name), None);
        };
        let current_rv = lease.resource_version;
        if let Some(sent) = sent_resource_version(&edit.body)
            && sent != current_rv
        {
            return (conflict_rv(name), None);
        }
        let mut next = stored.clone();
        let patch = edit.body["spec"].as_object().cloned().unwrap_or_default();
        if edit.kind == PatchKind::Apply {
            if let Err(conflicts) = next.apply(&patch, &edit.manager, edit.force) {
                return (conflict_apply(&conflicts), None);
            }
        } else {
            let changes = merge(&mut next.spec, &patch);
            next.take_updated(&changes, &edit.manager);
        }
        let verb = match edit.kind {
            PatchKind::Apply => "apply",
            PatchKind::Merge | PatchKind::Strategic => "patch",
        };
        let rv_sent = sent_resource_version(&edit.body);
        self.write(
            now_ms,
            replica,
            name,
            next,
            (current_rv, rv_sent, verb),
            records,
        )
    }

    fn replace(
        &mut self,
        now_ms: u64,
        replica: u32,
        name: &str,
        body: Value,
        manager: String,
        records: &mut Vec<Record>,
    ) -> (Answer, Option<Written>) {
        let Some(stored) = self.objects.get(name) else {
            return (Answer::not_found(name), None);
        };
        let Some(sent) = sent_resource_version(&body) else {
            let message = "metadata.resourceVersion: Invalid value: 0x0: must be specified for \
                           an update"
                .to_owned();
            return (Answer::status(422, "Invalid", message), None);
        };
        let mut next = stored.clone();
        let spec = body["spec"].as_object().cloned().unwrap_or_default();
        let mut changes: Vec<String> = next.spec.keys().cloned().collect();
        changes.retain(|field| !spec.contains_key(field));
        next.spec.retain(|field, _| spec.contains_key(field));
        changes.extend(merge(&mut next.spec, &spec));
        next.take_updated(&changes, &manager);
        self.write(
            now_ms,
            replica,
            name,
            next,
            (sent, Some(sent), "update"),
            records,
        )
    }

    /// Write `next` over Lease `name` through the model (compare-and-swap on `rv.0`); the
    /// record says `rv.2` and carries the resourceVersion the client sent, `rv.1`.
    fn write(
        &mut self,
        now_ms: u64,
        replica: u32,
        name: &str,
        next: Stored,
        rv: (u64, Option<u64>, &str),
        records: &mut Vec<Record>,
    ) -> (Answer, Option<Written>) {
        let (expected_rv, rv_sent, verb) = rv;
        let before = self.objects.get(name).map(|stored| holder(&stored.spec));
        if self.objects.get(name) == Some(&next) {
            // Nothing changes: the API server answers with the object and writes nothing.
            return (self.get(name), None);
        }
        let request = KubeRequest::UpdateLease {
            name: name.to_owned(),
            spec: model_spec(&next.spec),
            resource_version: expected_rv,
        };
        let first = records.len();
        match self.call(now_ms, replica, request, records) {
            Ok(_) => {
                for record in &mut records[first..] {
                    if let Record::LeaseWritten {
                        verb: written,
                        rv_sent: sent,
                        ..
                    } = record
                    {
                        *written = verb.to_owned();
                        *sent = rv_sent;
                    }
                }
                let written = Written {
                    holder_before: before.flatten(),
                    holder_after: holder(&next.spec),
                };
                self.objects.insert(name.to_owned(), next);
                (self.get(name), Some(written))
            }
            Err(KubeError::Conflict) => (conflict_rv(name), None),
            Err(KubeError::NotFound) => (Answer::not_found(name), None),
            Err(other) => (model_error(other), None),
        }
    }

    fn delete(
        &mut self,
        now_ms: u64,
        replica: u32,
        name: &str,
        records: &mut Vec<Record>,
    ) -> (Answer, Option<Written>) {
        let request = KubeRequest::DeleteLease {
            name: name.to_owned(),
        };
        match self.call(now_ms, replica, request, records) {
            Ok(_) => {
                let before = self
                    .objects
                    .remove(name)
                    .and_then(|stored| holder(&stored.spec));
                let body = json!({"kind": "Status", "apiVersion": "v1", "status": "Success"});
                let written = Written {
                    holder_before: before,
                    holder_after: None,
                };
                (Answer::ok(body), Some(written))
            }
            Err(KubeError::NotFound) => (Answer::not_found(name), None),
            Err(other) => (model_error(other), None),
        }
    }
}

/// A patch: how to read it, who sends it, and whether it overrides ownership conflicts.
struct Edit {
    kind: PatchKind,
    manager: String,
    force: bool,
    body: Value,
}

impl Stored {
    /// After an update (create, merge or strategic patch, replace) by `manager`: the fields
    /// it changed are its alone; fields it removed are nobody's.
    fn take_updated(&mut self, changes: &[String], manager: &str) {
        for field in changes {
            if self.spec.contains_key(field) {
                let owners = BTreeSet::from([manager.to_owned()]);
                self.owners.insert(field.clone(), owners);
            } else {
                self.owners.remove(field);
            }
        }
    }

    /// Server-side apply of `patch` by `manager`: a field set to another value than it has,
    /// and owned by another manager, is a conflict unless `force`; otherwise the applier owns
    /// every field it applies (alone where it changed the value, shared where not).
    fn apply(
        &mut self,
        patch: &Map<String, Value>,
        manager: &str,
        force: bool,
    ) -> Result<(), Vec<(String, String)>> {
        let mut conflicts = Vec::new();
        for (field, value) in patch {
            let changes = self.spec.get(field) != Some(value) && !value.is_null();
            let others = self.owners.get(field).into_iter().flatten();
            for owner in others.filter(|owner| *owner != manager) {
                if changes && !force {
                    conflicts.push((owner.clone(), field.clone()));
                }
            }
        }
        if !conflicts.is_empty() {
            return Err(conflicts);
        }
        for (field, value) in patch {
            if value.is_null() {
                self.spec.remove(field);
                self.owners.remove(field);
            } else if self.spec.get(field) == Some(value) {
                let owners = self.owners.entry(field.clone()).or_default();
                owners.insert(manager.to_owned());
            } else {
                self.spec.insert(field.clone(), value.clone());
                let owners = BTreeSet::from([manager.to_owned()]);
                self.owners.insert(field.clone(), owners);
            }
        }
        Ok(())
    }
}

/// RFC 7386 merge of `patch` into `spec` (a Lease's spec holds scalars only); the names of
/// the fields whose value changed.
fn merge(spec: &mut Map<String, Value>, patch: &Map<String, Value>) -> Vec<String> {
    let mut changed = Vec::new();
    for (field, value) in patch {
        let before = spec.get(field).cloned();
        if value.is_null() {
            spec.remove(field);
        } else {
            spec.insert(field.clone(), value.clone());
        }
        if spec.get(field) != before.as_ref() {
            changed.push(field.clone());
        }
    }
    changed
}

fn holder(spec: &Map<String, Value>) -> Option<String> {
    spec.get("holderIdentity")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The model's view of a spec: what the monitors judge (holder and transitions); the times
/// are the writer's and informational, so they are not converted.
fn model_spec(spec: &Map<String, Value>) -> LeaseSpec {
    let number = |field: &str| {
        spec.get(field)
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(0)
    };
    LeaseSpec {
        holder_identity: holder(spec).unwrap_or_default(),
        lease_duration_seconds: number("leaseDurationSeconds"),
        acquire_time_ms: 0,
        renew_time_ms: 0,
        lease_transitions: number("leaseTransitions"),
    }
}

/// The Lease as the API server returns it.
fn object(name: &str, resource_version: u64, spec: &Map<String, Value>) -> Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "resourceVersion": resource_version.to_string(),
        },
        "spec": spec,
    })
}

fn sent_resource_version(body: &Value) -> Option<u64> {
    body["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|rv| rv.parse().ok())
}

fn conflict_rv(name: &str) -> Answer {
    let message = format!(
        "Operation cannot be fulfilled on leases.coordination.k8s.io \"{name}\": the object has \
         been modified; please apply your changes to the latest version and try again"
    );
    Answer::status(409, "Conflict", message)
}

fn conflict_apply(conflicts: &[(String, String)]) -> Answer {
    let list: Vec<String> = conflicts
        .iter()
        .map(|(owner, field)| format!("conflict with \"{owner}\": .spec.{field}"))
        .collect();
    let message = format!(
        "Apply failed with {} conflict{}: {}",
        conflicts.len(),
        if conflicts.len() == 1 { "" } else { "s" },
        list.join(", ")
    );
    Answer::status(409, "Conflict", message)
}

fn model_error(error: KubeError) -> Answer {
    Answer::status(500, "InternalError", format!("{error:?}"))
}

fn describe_no_pod(_pod: &Pod) -> PodDescription {
    PodDescription {
        job_label: None,
        config: String::new(),
    }
}

#[cfg(test)]
mod tests;
