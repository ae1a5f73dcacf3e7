//! Lease writes from `serve`'s clients, carried out on the world thread: each becomes one call
//! to the simulated API server (`crate::kube`) by `Actor::External`, between two events of the
//! run, so the model's resourceVersion compare-and-swap decides every conflict, and the write
//! is in `trace.jsonl` as a `lease_written` by `external`.
//!
//! Versions: the served store numbers every change it serves in one sequence (watches need
//! one), the model numbers its own writes. A client sends the served version; it is the
//! current one exactly when it equals the served object's, and the model is then handed its
//! own current version, else a version it never gave out (0), which it answers with Conflict.
//! A patch is read, patched and written in one step here, as the API server's
//! `GuaranteedUpdate` does, with a `metadata.resourceVersion` in the patch as a precondition.

use super::leases::{
    Checked, MODIFIED, Rejection, already_exists, bad_request, check, conflict,
    field_manager_required, namespace_not_found, not_found, stopped, version_required,
};
use super::patch::{PatchKind, json_patch, merge};
use super::publish::Publisher;
use super::store::{Resource, lease_key};
use crate::resources::{KubeError, KubeReply, KubeRequest};
use crate::world::{Sink, World};
use serde_json::{Value, json};

/// A write to a Lease, as a client sent it.
#[derive(Debug)]
pub enum LeaseCall {
    /// `POST …/namespaces/NS/leases`.
    Create {
        /// The namespace of the URL.
        namespace: String,
        /// The body.
        object: Value,
    },
    /// `PUT …/leases/NAME`.
    Replace {
        /// The namespace of the URL.
        namespace: String,
        /// The name of the URL.
        name: String,
        /// The body.
        object: Value,
    },
    /// `PATCH …/leases/NAME`.
    Patch {
        /// The namespace of the URL.
        namespace: String,
        /// The name of the URL.
        name: String,
        /// From the `Content-Type`.
        kind: PatchKind,
        /// The body.
        patch: Value,
        /// The `fieldManager` query parameter.
        field_manager: Option<String>,
    },
    /// `DELETE …/leases/NAME`, with `preconditions.resourceVersion` if the body had one.
    Delete {
        /// The namespace of the URL.
        namespace: String,
        /// The name of the URL.
        name: String,
        /// `DeleteOptions.preconditions.resourceVersion`.
        precondition: Option<String>,
    },
    /// `DELETE /api/v1/namespaces/NS`: its Leases go with it.
    DeleteNamespace {
        /// The namespace.
        namespace: String,
    },
}

/// A successful answer: the HTTP code and the body.
pub(crate) type Answer = (u16, Value);

/// The world thread's tools for one write.
pub(super) struct Writer<'w, 'p, 'h> {
    pub(super) world: &'w mut World,
    pub(super) sink: &'w mut dyn Sink,
    pub(super) publisher: &'p mut Publisher<'h>,
}

impl Writer<'_, '_, '_> {
    /// Carry out `call`.
    pub(super) fn write(&mut self, call: LeaseCall) -> Result<Answer, Rejection> {
        match call {
            LeaseCall::Create { namespace, object } => {
                self.namespace_exists(&namespace)?;
                let checked = check(object, &namespace, None, self.epoch_ms())?;
                self.create(&namespace, checked)
            }
            LeaseCall::Replace {
                namespace,
                name,
                object,
            } => self.replace(&namespace, &name, object),
            LeaseCall::Patch {
                namespace,
                name,
                kind,
                patch,
                field_manager,
            } => self.patch(&namespace, &name, kind, &patch, field_manager),
            LeaseCall::Delete {
                namespace,
                name,
                precondition,
            } => self.delete(&namespace, &name, precondition.as_deref()),
            LeaseCall::DeleteNamespace { namespace } => {
                for key in self.publisher.hub.lock().lease_keys_in(&namespace) {
                    self.call(KubeRequest::DeleteLease { name: key })?.ok();
                }
                self.publisher
                    .publish(self.world)
                    .map_err(|e| stopped_because(&e))?;
                Ok((200, Value::Null))
            }
        }
    }

    fn epoch_ms(&self) -> u64 {
        self.publisher.hub.lock().epoch_ms
    }

    fn namespace_exists(&self, namespace: &str) -> Result<(), Rejection> {
        let store = self.publisher.hub.lock();
        match store.get(Resource::Namespaces, namespace) {
            Some(_) => Ok(()),
            None => Err(namespace_not_found(namespace)),
        }
    }

    /// The served object of Lease `key`, if there is one.
    fn served(&self, key: &str) -> Option<Value> {
        let store = self.publisher.hub.lock();
        store.get(Resource::Leases, key).map(|stored| stored.object)
    }

    /// One call to the simulated API server; the outer error is the run having ended.
    fn call(&mut self, request: KubeRequest) -> Result<Result<KubeReply, KubeError>, Rejection> {
        self.world
            .external_api_request(request, self.sink)
            .ok_or_else(stopped)
    }

    /// Publish, and answer with the served object of `key`.
    fn answer(&mut self, code: u16, key: &str, object: Value) -> Result<Answer, Rejection> {
        self.publisher.written.insert(key.to_owned(), object);
        self.publisher
            .publish(self.world)
            .map_err(|e| stopped_because(&e))?;
        let served = self.served(key).ok_or_else(stopped)?;
        Ok((code, served))
    }

    fn create(&mut self, namespace: &str, checked: Checked) -> Result<Answer, Rejection> {
        let key = lease_key(namespace, &checked.name);
        let request = KubeRequest::CreateLease {
            name: key.clone(),
            spec: checked.spec,
        };
        match self.call(request)? {
            Ok(_) => self.answer(201, &key, checked.object),
            Err(KubeError::Conflict) => Err(already_exists(&checked.name)),
            Err(other) => Err(unexpected(other)),
        }
    }

    /// Write `checked` over Lease `key` if `sent_version` (a served version) is current.
    fn update(
        &mut self,
        key: &str,
        checked: Checked,
        sent_version: &str,
    ) -> Result<Answer, Rejection> {
        let current = self.served(key).ok_or_else(|| not_found(&checked.name))?;
        let model_version = self
            .world
            .kube()
            .lease(key)
            .map_or(0, |l| l.resource_version);
        let resource_version = if current["metadata"]["resourceVersion"] == sent_version {
            model_version
        } else {
            0
        };
        let request = KubeRequest::UpdateLease {
            name: key.to_owned(),
            spec: checked.spec,
            resource_version,
        };
        match self.call(request)? {
            Ok(_) => self.answer(200, key, checked.object),
            Err(KubeError::Conflict) => Err(conflict(&checked.name, MODIFIED)),
            Err(KubeError::NotFound) => Err(not_found(&checked.name)),
            Err(other) => Err(unexpected(other)),
        }
    }

    fn replace(&mut self, namespace: &str, name: &str, object: Value) -> Result<Answer, Rejection> {
        self.namespace_exists(namespace)?;
        let sent = object["metadata"]["resourceVersion"]
            .as_str()
            .map(str::to_owned);
        let mut checked = check(object, namespace, Some(name), self.epoch_ms())?;
        let key = lease_key(namespace, name);
        if self.served(&key).is_none() {
            // AllowCreateOnUpdate: a PUT of a missing Lease creates it.
            strip_version(&mut checked.object);
            return self.create(namespace, checked);
        }
        match sent.filter(|sent| !sent.is_empty()) {
            Some(sent) => self.update(&key, checked, &sent),
            None => Err(version_required(name)),
        }
    }

    fn patch(
        &mut self,
        namespace: &str,
        name: &str,
        kind: PatchKind,
        patch: &Value,
        field_manager: Option<String>,
    ) -> Result<Answer, Rejection> {
        self.namespace_exists(namespace)?;
        if kind == PatchKind::Apply && field_manager.is_none() {
            return Err(field_manager_required());
        }
        let key = lease_key(namespace, name);
        let Some(mut object) = self.served(&key) else {
            if kind != PatchKind::Apply {
                return Err(not_found(name));
            }
            // An apply of a missing object creates it.
            let mut checked = check(patch.clone(), namespace, Some(name), self.epoch_ms())?;
            strip_version(&mut checked.object);
            return self.create(namespace, checked);
        };
        let current = object["metadata"]["resourceVersion"].clone();
        match kind {
            PatchKind::Json => json_patch(&mut object, patch).map_err(|e| bad_request(&e))?,
            PatchKind::Merge | PatchKind::Strategic | PatchKind::Apply => {
                if !patch.is_object() {
                    return Err(bad_request("the patch is not a JSON object"));
                }
                merge(&mut object, patch);
            }
        }
        let sent = object["metadata"]["resourceVersion"].clone();
        if sent != current {
            return Err(conflict(name, MODIFIED));
        }
        let checked = check(object, namespace, Some(name), self.epoch_ms())?;
        let sent = current.as_str().unwrap_or_default().to_owned();
        self.update(&key, checked, &sent)
    }

    fn delete(
        &mut self,
        namespace: &str,
        name: &str,
        precondition: Option<&str>,
    ) -> Result<Answer, Rejection> {
        let key = lease_key(namespace, name);
        let current = self.served(&key).ok_or_else(|| not_found(name))?;
        let version = current["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default();
        if let Some(precondition) = precondition.filter(|p| *p != version) {
            let detail = format!(
                "Precondition failed: ResourceVersion in precondition: {precondition}, \
                 ResourceVersion in object meta: {version}"
            );
            return Err(conflict(name, &detail));
        }
        match self.call(KubeRequest::DeleteLease { name: key })? {
            Ok(_) => {}
            Err(KubeError::NotFound) => return Err(not_found(name)),
            Err(other) => return Err(unexpected(other)),
        }
        self.publisher
            .publish(self.world)
            .map_err(|e| stopped_because(&e))?;
        let status = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": {
                "name": name, "group": "coordination.k8s.io", "kind": "leases",
                "uid": current["metadata"]["uid"],
            },
        });
        Ok((200, status))
    }
}

/// A PUT or apply that creates sends no version (the API server ignores one).
fn strip_version(object: &mut Value) {
    if let Some(metadata) = object["metadata"].as_object_mut() {
        metadata.remove("resourceVersion");
    }
}

/// The simulated API server answers a call from outside at once: a timeout or a 500 would be
/// a fault, which no scenario aims at `serve`'s clients.
fn unexpected(error: KubeError) -> Rejection {
    let message = format!("the simulated API server answered {error:?}");
    Rejection {
        code: 500,
        body: super::objects::status(500, "InternalError", &message),
    }
}

fn stopped_because(error: &str) -> Rejection {
    Rejection {
        code: 503,
        body: super::objects::status(503, "ServiceUnavailable", error),
    }
}
