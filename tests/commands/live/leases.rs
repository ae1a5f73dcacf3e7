//! Leases through `serve`: kubectl watching the simulated leader Lease change holders, and
//! clients writing their own Leases with the API server's codes and Status bodies.

use super::{Guard, kubectl, run, scratch, serve};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// Consecutive repeats dropped.
fn changes(holders: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for holder in holders {
        if out.last() != Some(&holder) {
            out.push(holder);
        }
    }
    out
}

/// The holder after each Lease write of a served run's trace.
fn traced_holders(trace: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(trace).expect("trace written");
    text.lines()
        .skip(1)
        .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("json line"))
        .filter(|record| record["kind"] == "lease_written")
        .map(|record| record["holder"].as_str().expect("a holder").to_owned())
        .collect()
}

/// `elasticsim serve scenarios/leader-failover.toml` with `kubectl get leases -w` watching: the
/// holders kubectl prints, one row per Lease event under NAME, HOLDER, AGE, change exactly as
/// the run's trace says the Lease was written (two crashes: three holders at least).
#[test]
fn kubectl_watches_every_holder_change_of_leader_failover() {
    let dir = scratch("leases-watch");
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/leader-failover.toml");
    // 7 simulated minutes at 20x: 21 s of wall time; the first takeover comes about 75
    // simulated seconds (nearly 4 s) in, so kubectl is watching long before it.
    let (mut server, kubeconfig) = serve(&dir, &scenario, "20", "22s");
    let Some(mut watch) = kubectl(&dir, &kubeconfig) else {
        return;
    };
    watch
        .args(["get", "leases", "-A", "-w", "--request-timeout=0"])
        .stdout(Stdio::piped());
    let mut watcher = Guard(watch.spawn().expect("kubectl runs"));
    let stdout = watcher.0.stdout.take().expect("piped");
    let (sender, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = sender.send(line);
        }
    });
    assert!(server.wait(Duration::from_secs(40)).success());
    drop(watcher);
    let printed: Vec<String> = lines.try_iter().collect();
    assert_eq!(
        printed[0].split_whitespace().collect::<Vec<_>>(),
        ["NAMESPACE", "NAME", "HOLDER", "AGE"],
        "{printed:?}"
    );
    let holders = printed[1..].iter().map(|row| {
        let cells: Vec<&str> = row.split_whitespace().collect();
        // An empty HOLDER cell leaves three words.
        if cells.len() == 4 { cells[2] } else { "" }.to_owned()
    });
    let printed_changes = changes(holders);
    let traced = changes(traced_holders(&dir.join("served/trace.jsonl")));
    assert!(
        traced.len() >= 3,
        "two crashes, three holders at least: {traced:?}"
    );
    assert_eq!(
        printed_changes,
        traced,
        "kubectl printed:\n{}",
        printed.join("\n")
    );
}

/// A scenario with an empty cluster and nothing running, an hour long: the API alone.
pub fn api_only() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/commands/live/lease-api.toml")
}

fn lease(name: &str, holder: &str, duration: i32) -> Lease {
    serde_json::from_value(json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": { "name": name },
        "spec": {
            "holderIdentity": holder, "leaseDurationSeconds": duration, "leaseTransitions": 0,
        },
    }))
    .expect("a Lease")
}

/// The API error of a failed call: code, reason and message.
fn refused<T: std::fmt::Debug>(result: kube::Result<T>) -> (u16, String, String) {
    match result {
        Err(kube::Error::Api(status)) => {
            (status.code, status.reason.clone(), status.message.clone())
        }
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// Create (once: a second create is AlreadyExists) and replace (the current version once;
/// a stale one is Conflict, none is Invalid). Returns the created Lease's version.
async fn creates_and_replaces(leases: &Api<Lease>) -> String {
    let created = leases
        .create(&PostParams::default(), &lease("lock", "a", 15))
        .await
        .expect("created");
    let version = created
        .metadata
        .resource_version
        .clone()
        .expect("a version");
    let (code, reason, message) = refused(
        leases
            .create(&PostParams::default(), &lease("lock", "b", 15))
            .await,
    );
    assert_eq!((code, reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(
        message,
        "leases.coordination.k8s.io \"lock\" already exists"
    );

    // Compare-and-swap: the current version wins once; the same version again is stale.
    let mut next = created.clone();
    next.spec.as_mut().expect("spec").holder_identity = Some("b".to_owned());
    let replaced = leases
        .replace("lock", &PostParams::default(), &next)
        .await
        .expect("current version");
    assert_ne!(replaced.metadata.resource_version, Some(version.clone()));
    let (code, reason, message) =
        refused(leases.replace("lock", &PostParams::default(), &next).await);
    assert_eq!((code, reason.as_str()), (409, "Conflict"));
    assert_eq!(
        message,
        "Operation cannot be fulfilled on leases.coordination.k8s.io \"lock\": the object has \
         been modified; please apply your changes to the latest version and try again"
    );
    let mut unversioned = next.clone();
    unversioned.metadata.resource_version = None;
    let (code, reason, message) = refused(
        leases
            .replace("lock", &PostParams::default(), &unversioned)
            .await,
    );
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert!(
        message.contains(
            "metadata.resourceVersion: Invalid value: \"0x0\": must be specified for an update"
        ),
        "{message}"
    );
    version
}

/// Patches: merge with a stale version precondition, merge, strategic, apply.
async fn patches(leases: &Api<Lease>, version: &str) {
    let stale =
        json!({ "metadata": { "resourceVersion": version }, "spec": { "holderIdentity": "c" } });
    let (code, reason, _) = refused(
        leases
            .patch("lock", &PatchParams::default(), &Patch::Merge(&stale))
            .await,
    );
    assert_eq!((code, reason.as_str()), (409, "Conflict"));
    let merged = leases
        .patch(
            "lock",
            &PatchParams::apply("c"),
            &Patch::Merge(json!({ "spec": { "holderIdentity": "c" } })),
        )
        .await
        .expect("merge patch");
    let spec = merged.spec.expect("spec");
    assert_eq!(
        (spec.holder_identity.as_deref(), spec.lease_duration_seconds),
        (Some("c"), Some(15))
    );
    let released = leases
        .patch(
            "lock",
            &PatchParams::default(),
            &Patch::Strategic(json!({ "spec": { "holderIdentity": null } })),
        )
        .await
        .expect("strategic patch");
    assert_eq!(
        released.spec.expect("spec").holder_identity,
        None,
        "null removes the field"
    );
    let applied = leases
        .patch(
            "other",
            &PatchParams::apply("d"),
            &Patch::Apply(lease("other", "d", 5)),
        )
        .await
        .expect("an apply creates");
    assert_eq!(
        applied.spec.expect("spec").holder_identity.as_deref(),
        Some("d")
    );
}

/// Validation, a missing namespace, a stale delete precondition, a missing Lease.
async fn refusals(client: kube::Client, leases: &Api<Lease>, version: String) {
    let (code, reason, message) = refused(
        leases
            .create(&PostParams::default(), &lease("zero", "a", 0))
            .await,
    );
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert_eq!(
        message,
        "Lease.coordination.k8s.io \"zero\" is invalid: spec.leaseDurationSeconds: Invalid \
         value: 0: must be greater than 0"
    );
    let elsewhere: Api<Lease> = Api::namespaced(client, "nowhere");
    let (code, _, message) = refused(
        elsewhere
            .create(&PostParams::default(), &lease("x", "a", 5))
            .await,
    );
    assert_eq!(
        (code, message.as_str()),
        (404, "namespaces \"nowhere\" not found")
    );
    let stale_delete = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            resource_version: Some(version),
            uid: None,
        }),
        ..DeleteParams::default()
    };
    let (code, reason, _) = refused(leases.delete("lock", &stale_delete).await);
    assert_eq!((code, reason.as_str()), (409, "Conflict"));
    leases
        .delete("lock", &DeleteParams::default())
        .await
        .expect("deleted");
    let (code, reason, message) = refused(leases.get("lock").await);
    assert_eq!((code, reason.as_str()), (404, "NotFound"));
    assert_eq!(message, "leases.coordination.k8s.io \"lock\" not found");
}

/// Leases written through `serve` get the API server's answers: 201, 409 AlreadyExists and
/// Conflict, 422 Invalid, 404, each with its Status body; every accepted write is in the run's
/// trace as the model's `lease_written` by `external`.
#[test]
fn written_leases_get_the_api_servers_codes_and_bodies() {
    let dir = scratch("leases-write");
    let (mut server, kubeconfig) = serve(&dir, &api_only(), "1", "10s");
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    runtime.block_on(async {
        let client = elasticsim::live::record::client(Some(&kubeconfig))
            .await
            .expect("a client");
        let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
        let version = creates_and_replaces(&leases).await;
        patches(&leases, &version).await;
        refusals(client, &leases, version).await;
    });
    assert!(server.wait(Duration::from_secs(20)).success());
    let trace = std::fs::read_to_string(dir.join("served/trace.jsonl")).expect("trace written");
    let verbs: Vec<String> = trace
        .lines()
        .filter(|line| line.contains("\"kind\":\"lease_written\""))
        .map(|line| {
            assert!(line.contains("\"by\":\"external\""), "{line}");
            let record: serde_json::Value = serde_json::from_str(line).expect("json");
            record["verb"].as_str().expect("verb").to_owned()
        })
        .collect();
    // create, replace, merge, strategic, apply (a create), delete.
    assert_eq!(
        verbs,
        ["create", "update", "update", "update", "create", "delete"]
    );
}

/// `kubectl patch --type=json` on Lease `team/lock` (holder `me`): a failing `test` changes
/// nothing and says why; a passing one lets the `replace` through.
fn json_patches(dir: &Path, kubeconfig: &Path) {
    let patch = |operations: &str| {
        let mut patch = kubectl(dir, kubeconfig).expect("present");
        patch.args([
            "-n",
            "team",
            "patch",
            "lease",
            "lock",
            "--type=json",
            "-p",
            operations,
        ]);
        patch.output().expect("kubectl runs")
    };
    let failing = patch(r#"[{"op":"test","path":"/spec/holderIdentity","value":"you"}]"#);
    assert!(!failing.status.success());
    assert!(
        String::from_utf8_lossy(&failing.stderr)
            .contains("testing value /spec/holderIdentity failed")
    );
    let passing = patch(
        r#"[{"op":"test","path":"/spec/holderIdentity","value":"me"},
            {"op":"replace","path":"/spec/holderIdentity","value":"you"}]"#,
    );
    assert!(
        passing.status.success(),
        "{}",
        String::from_utf8_lossy(&passing.stderr)
    );
}

/// What kube-leader-election's test helpers run: `kubectl create namespace`, `get lease`,
/// `delete namespace` (which takes its Leases along); and a JSON patch with a failing test.
#[test]
fn kubectl_creates_and_deletes_namespaces_and_their_leases() {
    let dir = scratch("leases-kubectl");
    let (_server, kubeconfig) = serve(&dir, &api_only(), "1", "20s");
    let Some(mut create) = kubectl(&dir, &kubeconfig) else {
        return;
    };
    create.args(["create", "namespace", "team"]);
    assert!(run(create).contains("namespace/team created"));
    let manifest = dir.join("lease.json");
    let body = json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": { "name": "lock", "namespace": "team" },
        "spec": { "holderIdentity": "me", "leaseDurationSeconds": 10 },
    });
    std::fs::write(&manifest, body.to_string()).expect("writable");
    let mut apply = kubectl(&dir, &kubeconfig).expect("present");
    apply
        .args(["create", "--validate=false", "-f"])
        .arg(&manifest);
    assert!(run(apply).contains("lease.coordination.k8s.io/lock created"));
    let mut get = kubectl(&dir, &kubeconfig).expect("present");
    get.args(["-n", "team", "get", "lease", "lock"]);
    let table = run(get);
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0], ["NAME", "HOLDER", "AGE"]);
    assert_eq!(rows[1][..2], ["lock", "me"]);
    json_patches(&dir, &kubeconfig);
    let mut delete = kubectl(&dir, &kubeconfig).expect("present");
    delete.args(["delete", "namespace", "team", "--wait=false"]);
    assert!(run(delete).contains("namespace \"team\" deleted"));
    let mut gone = kubectl(&dir, &kubeconfig).expect("present");
    gone.args(["-n", "team", "get", "lease", "lock"]);
    let output = gone.output().expect("kubectl runs");
    assert!(!output.status.success());
    // kubectl 1.33 names the missing namespace after the Lease's 404; older ones the Lease.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("namespaces \"team\" not found")
            || stderr.contains("leases.coordination.k8s.io \"lock\" not found"),
        "{stderr}"
    );
    let mut protected = kubectl(&dir, &kubeconfig).expect("present");
    protected.args(["delete", "namespace", "default"]);
    let output = protected.output().expect("kubectl runs");
    assert!(String::from_utf8_lossy(&output.stderr).contains("this namespace may not be deleted"));
}
