//! `[[faults]] kind = "cluster_profile_edit"`: the cluster profile's properties change mid-run.
//! Under `pr355` every pod created before the edit of a hashed field (`pending_pods_count`
//! here) is foreign to later jobs: its config-hash annotation carries the old
//! `PluginSettings.hashCode()`. `safe` hashes only what shapes pods, so a limit edit keeps old
//! pods reusable, while a `go_server_url` edit (injected into every pod) makes them foreign.

use elasticsim::allocator::Policy;
use elasticsim::trace::Record;
use std::collections::BTreeSet;

fn records_of(text: &str, policy: Policy) -> Vec<(u64, Record)> {
    crate::common::records_under(&crate::common::scenario(text), 1, policy)
}

/// Three short jobs make three idle reusable pods; the cluster profile is edited at 1m30s;
/// more jobs of the same elastic profile follow.
fn scenario(set: &str) -> String {
    format!(
        r#"
name = "cluster-profile-edit"
duration = "8m"
settle = "10m"

[plugin]
enable_agent_reuse = true

[[profiles]]
name = "small"
image = "gocd/gocd-agent:v25.1.0"
cpu = "500m"
memory = "1Gi"

[[jobs]]
kind = "burst"
at = "10s"
count = 3
spread = "5s"
profile = "small"
runtime = {{ min = "20s", max = "40s" }}

[[faults]]
at = "1m30s"
kind = "cluster_profile_edit"
set = {set}

[[jobs]]
kind = "burst"
at = "1m40s"
count = 3
spread = "10s"
profile = "small"
runtime = {{ min = "30s", max = "1m" }}
"#
    )
}

const EDIT_MS: u64 = 90_000;

/// (pods created before the edit that took a job after it, pods created after the edit).
fn old_pods_reused_after_the_edit(records: &[(u64, Record)]) -> (usize, usize) {
    let mut before = BTreeSet::new();
    let mut after = BTreeSet::new();
    let mut reused = BTreeSet::new();
    for (t_ms, record) in records {
        match record {
            Record::PodCreated { pod, .. } if *t_ms < EDIT_MS => drop(before.insert(pod.clone())),
            Record::PodCreated { pod, .. } => drop(after.insert(pod.clone())),
            Record::JobAssigned { agent, .. } if *t_ms > EDIT_MS && before.contains(agent) => {
                reused.insert(agent.clone());
            }
            _ => {}
        }
    }
    (reused.len(), after.len())
}

#[test]
fn a_limit_edit_makes_old_pods_foreign_to_pr355_but_not_to_safe() {
    let text = scenario("{ pending_pods_count = 5 }");
    let (pr355_reused, pr355_new) =
        old_pods_reused_after_the_edit(&records_of(&text, Policy::Pr355));
    assert_eq!(
        pr355_reused, 0,
        "the old pods' hash carries the old pending_pods_count"
    );
    // pending_pods_count = 5 counts the three old idle pods (pr355's limit counts every pod
    // it knows), so only two new pods fit; the third later job reuses one of them.
    assert!(pr355_new >= 2, "the later jobs get new pods: {pr355_new}");
    let (safe_reused, _) = old_pods_reused_after_the_edit(&records_of(&text, Policy::Safe));
    assert!(
        safe_reused > 0,
        "a limit does not shape pods: safe keeps reusing them"
    );
}

#[test]
fn a_server_url_edit_makes_old_pods_foreign_to_pr355_and_safe() {
    let text = scenario("{ go_server_url = \"https://gocd-2.example/go\" }");
    for policy in [Policy::Pr355, Policy::Safe] {
        let (reused, created) = old_pods_reused_after_the_edit(&records_of(&text, policy));
        assert_eq!(
            reused, 0,
            "{policy:?}: old pods point at the old server URL"
        );
        assert!(
            created >= 3,
            "{policy:?}: the later jobs get new pods: {created}"
        );
    }
}
