//! The Lease store's patch semantics, on the sequences the two crates send.

use super::{Answer, LeaseOp, LeaseStore, PatchKind};
use elasticsim::trace::Record;
use serde_json::{Value, json};

const NAME: &str = "lock";

fn store_with_lease() -> LeaseStore {
    let mut store = LeaseStore::new(1);
    let create = LeaseOp::Create {
        body: json!({"metadata": {"name": NAME}, "spec": {}}),
        manager: "kube-rs".to_owned(),
    };
    let (answer, _) = store.serve(0, 0, create, &mut Vec::new());
    assert_eq!(answer.status, 200);
    store
}

fn patch(store: &mut LeaseStore, replica: u32, kind: PatchKind, spec: Value) -> Answer {
    let op = LeaseOp::Patch {
        name: NAME.to_owned(),
        kind,
        manager: format!("manager-{replica}"),
        force: false,
        body: json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "spec": spec}),
    };
    store.serve(10, replica, op, &mut Vec::new()).0
}

#[test]
fn a_second_apply_of_another_holder_conflicts_until_the_field_is_released() {
    let mut store = store_with_lease();
    let take = |who: &str| json!({"holderIdentity": who, "leaseDurationSeconds": 15});
    assert_eq!(
        patch(&mut store, 0, PatchKind::Apply, take("a")).status,
        200
    );
    let refused = patch(&mut store, 1, PatchKind::Apply, take("b"));
    assert_eq!(refused.status, 409);
    assert_eq!(refused.body["reason"], "Conflict");
    // A strategic-merge release (kube-lease-manager's) sets the holder to null: nobody owns it.
    let release = json!({"holderIdentity": null, "leaseDurationSeconds": null});
    assert_eq!(
        patch(&mut store, 1, PatchKind::Strategic, release).status,
        200
    );
    let taken = patch(&mut store, 1, PatchKind::Apply, take("b"));
    assert_eq!(taken.status, 200);
    assert_eq!(taken.body["spec"]["holderIdentity"], "b");
    assert!(taken.body["spec"].get("acquireTime").is_none());
}

#[test]
fn merge_patches_carry_no_precondition_and_are_recorded_as_such() {
    let mut store = store_with_lease();
    let mut records = Vec::new();
    for (replica, who) in [(0, "a"), (1, "b")] {
        let op = LeaseOp::Patch {
            name: NAME.to_owned(),
            kind: PatchKind::Merge,
            manager: who.to_owned(),
            force: false,
            body: json!({"spec": {"holderIdentity": who}}),
        };
        let (answer, written) = store.serve(5, replica, op, &mut records);
        assert_eq!(answer.status, 200);
        assert_eq!(written.unwrap().holder_after.as_deref(), Some(who));
    }
    let writes: Vec<(String, Option<u64>, Option<u64>)> = records
        .iter()
        .filter_map(|record| match record {
            Record::LeaseWritten {
                verb,
                rv_sent,
                rv_current,
                ..
            } => Some((verb.clone(), *rv_sent, *rv_current)),
            _ => None,
        })
        .collect();
    assert_eq!(
        writes,
        vec![
            ("patch".to_owned(), None, Some(1)),
            ("patch".to_owned(), None, Some(2))
        ]
    );
}

#[test]
fn a_patch_that_changes_nothing_writes_nothing_and_a_stale_replace_conflicts() {
    let mut store = store_with_lease();
    let spec = json!({"renewTime": "2026-01-01T00:00:00.000000Z"});
    let first = patch(&mut store, 0, PatchKind::Merge, spec.clone());
    let again = patch(&mut store, 0, PatchKind::Merge, spec);
    assert_eq!(first.body["metadata"]["resourceVersion"], "2");
    assert_eq!(again.body["metadata"]["resourceVersion"], "2");
    let stale = LeaseOp::Replace {
        name: NAME.to_owned(),
        body: json!({"metadata": {"name": NAME, "resourceVersion": "1"}, "spec": {}}),
        manager: "x".to_owned(),
    };
    assert_eq!(store.serve(20, 0, stale, &mut Vec::new()).0.status, 409);
    let missing = LeaseOp::Get {
        name: "other".to_owned(),
    };
    assert_eq!(store.serve(20, 0, missing, &mut Vec::new()).0.status, 404);
}
