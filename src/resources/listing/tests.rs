//! The persistent listing against its naive reference: a name-ordered map of pod copies.

use super::PodList;
use crate::component::Random;
use crate::engine::{Stream, StreamId};
use crate::resources::{Pod, PodPhase, StringMap};
use std::collections::BTreeMap;
use std::sync::Arc;

fn pod(name: String, version: u64) -> Arc<Pod> {
    Arc::new(Pod {
        name,
        uid: version,
        labels: Arc::default(),
        annotations: StringMap::new(),
        image: "gocd/gocd-agent".to_owned(),
        env: Arc::default(),
        phase: PodPhase::Pending,
        node: None,
        created_ms: 0,
        resource_version: version,
        restart_count: 0,
        ready: false,
        deletion_ms: None,
    })
}

/// The naive diff: names whose copy is not the same allocation on both sides.
fn naive_changes(
    earlier: &BTreeMap<String, Arc<Pod>>,
    later: &BTreeMap<String, Arc<Pod>>,
) -> Vec<String> {
    let mut names: Vec<String> = earlier.keys().chain(later.keys()).cloned().collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter(|name| match (earlier.get(name), later.get(name)) {
            (Some(a), Some(b)) => !Arc::ptr_eq(a, b),
            _ => true,
        })
        .collect()
}

#[test]
fn a_listing_follows_random_writes_and_its_diffs_name_exactly_the_changed_pods() {
    for seed in 1..=20 {
        let mut random = Stream::new(seed, StreamId::Workload);
        let (mut list, mut naive) = (PodList::default(), BTreeMap::new());
        let mut snapshots: Vec<(PodList, BTreeMap<String, Arc<Pod>>)> = Vec::new();
        for step in 0..3000u64 {
            let number = random.below(if seed % 2 == 0 { 80 } else { 3000 });
            // Every third seed names pods past the 24 bytes a name's head holds, so searches
            // tie on heads and read the names; some names differ from others by length only.
            let name = match seed % 3 {
                0 => format!(
                    "k8s-ea-0a1b2c3d-e5f6a7b8-{number:04}{}",
                    "-".repeat(number as usize % 3)
                ),
                _ => format!("k8s-ea-{number:04}"),
            };
            match random.below(10) {
                // Deletions, including of pods that are not there.
                0..=2 => {
                    list.remove(&name);
                    naive.remove(&name);
                }
                // A new copy (a write), or a new pod.
                3..=7 => {
                    let copy = pod(name.clone(), step);
                    list.put(Arc::clone(&copy));
                    naive.insert(name.clone(), copy);
                }
                // The same copy again (a no-op write of an identical allocation).
                _ => {
                    if let Some(copy) = naive.get(&name).cloned() {
                        list.put(copy);
                    }
                }
            }
            if random.below(40) == 0 {
                snapshots.push((list.clone(), naive.clone()));
            }
            if step % 97 == 0 {
                let expected: Vec<Arc<Pod>> = naive.values().cloned().collect();
                assert_eq!(list.to_vec(), expected, "seed {seed} step {step}");
            }
            assert_eq!(list.len(), naive.len());
            assert_eq!(list.get(&name), naive.get(&name), "seed {seed} step {step}");
        }
        // Every pair of snapshots, in both directions, diffs like the naive maps.
        for (a, naive_a) in &snapshots {
            for (b, naive_b) in snapshots.iter().take(12) {
                let changed: Vec<String> =
                    b.changed_names(a).into_iter().map(str::to_owned).collect();
                assert_eq!(changed, naive_changes(naive_a, naive_b), "seed {seed}");
            }
        }
    }
}

#[test]
fn a_snapshot_does_not_see_later_writes() {
    let mut list = PodList::from_pods([pod("a".to_owned(), 1), pod("b".to_owned(), 1)]);
    let snapshot = list.clone();
    list.put(pod("a".to_owned(), 2));
    list.remove("b");
    assert_eq!(snapshot.get("a").map(|p| p.resource_version), Some(1));
    assert!(snapshot.get("b").is_some());
    assert_eq!(list.changed_names(&snapshot), ["a", "b"]);
    assert!(snapshot.changed_names(&snapshot).is_empty());
}

#[test]
fn equal_contents_compare_equal_and_serialise_as_a_list() {
    let a = PodList::from_pods([pod("x".to_owned(), 3)]);
    let b = PodList::from_pods([pod("x".to_owned(), 3)]);
    assert_eq!(
        a, b,
        "equal contents in different allocations are equal listings"
    );
    assert_eq!(b.changed_names(&a), ["x"], "but not the same copy");
    let json = serde_json::to_string(&a).expect("a listing serialises");
    assert!(json.starts_with("[{"), "{json}");
    let back: PodList = serde_json::from_str(&json).expect("and reads back");
    assert_eq!(back, a);
}

/// Filling a listing far past one group of chunks and emptying it again, a block of names at
/// a time (so whole chunks and whole groups empty and go), keeps it equal to the naive map;
/// each snapshot diffs against the one before it like the naive maps do.
#[test]
fn groups_split_as_the_listing_grows_and_go_when_emptied() {
    let names: Vec<String> = (0..3000)
        .map(|number| format!("k8s-ea-{number:05}"))
        .collect();
    let (mut list, mut naive) = (PodList::default(), BTreeMap::new());
    let mut before = (list.clone(), naive.clone());
    // Grow in a scattered order, then shrink from the middle outwards.
    let grow = (0..names.len()).map(|i| (i * 7) % names.len());
    let shrink = (0..names.len()).map(|i| (names.len() / 2 + i) % names.len());
    for (step, (index, adds)) in grow
        .map(|i| (i, true))
        .chain(shrink.map(|i| (i, false)))
        .enumerate()
    {
        let name = &names[index];
        if adds {
            let copy = pod(name.clone(), step as u64);
            list.put(Arc::clone(&copy));
            naive.insert(name.clone(), copy);
        } else {
            list.remove(name);
            naive.remove(name);
        }
        if step + 1 == names.len() {
            let groups = list.spine.groups.len();
            assert!(groups >= 3, "every name listed in {groups} groups");
        }
        if step % 250 == 0 {
            let expected: Vec<Arc<Pod>> = naive.values().cloned().collect();
            assert_eq!(list.to_vec(), expected, "step {step}");
            let changed: Vec<String> = list
                .changed_names(&before.0)
                .into_iter()
                .map(str::to_owned)
                .collect();
            assert_eq!(changed, naive_changes(&before.1, &naive), "step {step}");
            before = (list.clone(), naive.clone());
        }
    }
    assert!(list.is_empty() && list.to_vec().is_empty());
}
