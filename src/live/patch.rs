//! The four patch types of `PATCH` requests, on JSON values, as the API server applies them to
//! a Lease: JSON merge patch (RFC 7386), strategic merge patch (for a Lease the same as a merge
//! patch: its only lists, `metadata.finalizers` and `ownerReferences`, are not patched by the
//! clients served here), JSON patch (RFC 6902) and server-side apply (the applied
//! configuration merged onto the live object; field ownership is not modelled).

use serde_json::Value;

/// A `PATCH` request's type, from its `Content-Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchKind {
    /// `application/merge-patch+json`.
    Merge,
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// `application/json-patch+json`.
    Json,
    /// `application/apply-patch+yaml` (served for JSON bodies, which are YAML).
    Apply,
}

impl PatchKind {
    /// The type a `Content-Type` names; None for any other (415 Unsupported Media Type).
    pub(crate) fn from_content_type(content_type: &str) -> Option<PatchKind> {
        let media = content_type.split(';').next().unwrap_or("").trim();
        match media {
            "application/merge-patch+json" => Some(PatchKind::Merge),
            "application/strategic-merge-patch+json" => Some(PatchKind::Strategic),
            "application/json-patch+json" => Some(PatchKind::Json),
            "application/apply-patch+yaml" | "application/apply-patch+cbor" => {
                Some(PatchKind::Apply)
            }
            _ => None,
        }
    }
}

/// RFC 7386: objects merge key by key, `null` removes a key, anything else replaces.
pub(crate) fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(serde_json::Map::new());
    }
    let target = target.as_object_mut().expect("made an object above");
    for (key, value) in patch {
        if value.is_null() {
            target.remove(key);
        } else {
            merge(target.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

/// RFC 6902 on `target`: `add`, `remove`, `replace`, `move`, `copy` and `test`, all or none.
pub(crate) fn json_patch(target: &mut Value, operations: &Value) -> Result<(), String> {
    let operations = operations
        .as_array()
        .ok_or("a JSON patch must be an array of operations")?;
    let mut result = target.clone();
    for operation in operations {
        let op = operation["op"]
            .as_str()
            .ok_or("an operation without \"op\"")?;
        let path = operation["path"]
            .as_str()
            .ok_or_else(|| format!("{op}: missing \"path\""))?;
        match op {
            "add" | "replace" => {
                let value = operation.get("value").ok_or("missing \"value\"")?.clone();
                if op == "replace" {
                    take(&mut result, path)?;
                }
                insert(&mut result, path, value)?;
            }
            "remove" => {
                take(&mut result, path)?;
            }
            "move" | "copy" => {
                let from = operation["from"].as_str().ok_or("missing \"from\"")?;
                let value = if op == "move" {
                    take(&mut result, from)?
                } else {
                    result.pointer(from).cloned().ok_or_else(|| missing(from))?
                };
                insert(&mut result, path, value)?;
            }
            "test" => {
                let found = result.pointer(path).ok_or_else(|| missing(path))?;
                if Some(found) != operation.get("value") {
                    return Err(format!("testing value {path} failed"));
                }
            }
            other => return Err(format!("unexpected operation {other:?}")),
        }
    }
    *target = result;
    Ok(())
}

fn missing(path: &str) -> String {
    format!("doc is missing path: \"{path}\"")
}

/// Split a JSON pointer into its parent pointer and its last token, unescaped.
fn parent_and_key(path: &str) -> Result<(&str, String), String> {
    let (parent, key) = path
        .rsplit_once('/')
        .ok_or_else(|| format!("invalid path {path:?}"))?;
    Ok((parent, key.replace("~1", "/").replace("~0", "~")))
}

fn take(target: &mut Value, path: &str) -> Result<Value, String> {
    let (parent, key) = parent_and_key(path)?;
    match target.pointer_mut(parent) {
        Some(Value::Object(map)) => map.remove(&key).ok_or_else(|| missing(path)),
        Some(Value::Array(items)) => {
            let index: usize = key.parse().map_err(|_| missing(path))?;
            (index < items.len())
                .then(|| items.remove(index))
                .ok_or_else(|| missing(path))
        }
        _ => Err(missing(path)),
    }
}

fn insert(target: &mut Value, path: &str, value: Value) -> Result<(), String> {
    if path.is_empty() {
        *target = value;
        return Ok(());
    }
    let (parent, key) = parent_and_key(path)?;
    match target.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.insert(key, value);
            Ok(())
        }
        Some(Value::Array(items)) if key == "-" => {
            items.push(value);
            Ok(())
        }
        Some(Value::Array(items)) => {
            let index: usize = key.parse().map_err(|_| missing(path))?;
            if index > items.len() {
                return Err(missing(path));
            }
            items.insert(index, value);
            Ok(())
        }
        _ => Err(missing(path)),
    }
}

#[cfg(test)]
mod tests {
    use super::{PatchKind, json_patch, merge};
    use serde_json::json;

    #[test]
    fn a_merge_patch_replaces_merges_and_removes_with_null() {
        let mut lease = json!({ "spec": { "holderIdentity": "a", "leaseDurationSeconds": 15 } });
        merge(
            &mut lease,
            &json!({ "spec": { "holderIdentity": null, "renewTime": "t" } }),
        );
        assert_eq!(
            lease,
            json!({ "spec": { "leaseDurationSeconds": 15, "renewTime": "t" } })
        );
    }

    #[test]
    fn a_json_patch_applies_all_or_nothing() {
        let mut lease = json!({ "spec": { "holderIdentity": "a", "leaseTransitions": 1 } });
        let patch = json!([
            { "op": "test", "path": "/spec/holderIdentity", "value": "a" },
            { "op": "replace", "path": "/spec/holderIdentity", "value": "b" },
            { "op": "add", "path": "/spec/leaseTransitions", "value": 2 },
        ]);
        json_patch(&mut lease, &patch).expect("applies");
        assert_eq!(
            lease,
            json!({ "spec": { "holderIdentity": "b", "leaseTransitions": 2 } })
        );
        let failing = json!([
            { "op": "remove", "path": "/spec/holderIdentity" },
            { "op": "test", "path": "/spec/leaseTransitions", "value": 9 },
        ]);
        let before = lease.clone();
        assert_eq!(
            json_patch(&mut lease, &failing),
            Err("testing value /spec/leaseTransitions failed".to_owned())
        );
        assert_eq!(lease, before, "a failed patch changes nothing");
    }

    #[test]
    fn content_types_name_the_patch_kinds() {
        let kind = PatchKind::from_content_type;
        assert_eq!(
            kind("application/merge-patch+json; charset=utf-8"),
            Some(PatchKind::Merge)
        );
        assert_eq!(kind("application/apply-patch+yaml"), Some(PatchKind::Apply));
        assert_eq!(kind("application/json"), None);
    }
}
