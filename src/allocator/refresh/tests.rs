//! The incremental refresh against the plugin's rebuild, on random histories: pods created,
//! relabelled, moved to Running, deleted; listings delivered late and out of order; entries
//! inserted for created pods, evicted, and their agent state changed in place.

use super::RefreshBase;
use crate::allocator::instances::{KnownPod, PluginAgentState, PodMap, rebuild_from_listing};
use crate::allocator::pod_spec::keys;
use crate::component::Random;
use crate::engine::{Stream, StreamId};
use crate::resources::{Pod, PodList, PodPhase, StringMap};
use std::sync::Arc;

/// A pod of the plugin (`kind` label) or a foreign one, created for `job`.
fn agent_pod(name: &str, version: u64, job: u64, ours: bool) -> Pod {
    let mut labels = StringMap::from([(keys::JOB_ID.to_owned(), job.to_string())]);
    if ours {
        labels.insert(keys::KIND.to_owned(), keys::KIND_VALUE.to_owned());
    }
    Pod {
        name: name.to_owned(),
        uid: version,
        labels: Arc::new(labels),
        annotations: StringMap::from([(keys::CONFIG_HASH.to_owned(), format!("h{job}"))]),
        image: "gocd/gocd-agent".to_owned(),
        env: Arc::default(),
        phase: PodPhase::Pending,
        node: None,
        created_ms: version,
        resource_version: version,
        restart_count: 0,
        ready: false,
        deletion_ms: None,
    }
}

/// The incremental map with its base, and the map the plugin's rebuild keeps.
struct Maps {
    incremental: PodMap,
    base: RefreshBase,
    rebuilt: PodMap,
}

impl Maps {
    fn refresh(&mut self, listing: PodList) {
        self.rebuilt = rebuild_from_listing(&self.rebuilt, &listing);
        self.base.refresh(&mut self.incremental, listing);
    }

    /// Insert or remove outside a refresh, as a create answer or an eviction does.
    fn write(&mut self, name: &str, known: Option<KnownPod>) {
        self.base.touch(name);
        for map in [&mut self.incremental, &mut self.rebuilt] {
            match &known {
                Some(known) => map.insert(name.to_owned(), known.clone()),
                None => map.remove(name),
            };
        }
    }
}

fn step(
    random: &mut Stream,
    version: u64,
    listing: &mut PodList,
    late: &mut Vec<PodList>,
    maps: &mut Maps,
) {
    let name = format!("k8s-ea-{:03}", random.below(120));
    let job = random.below(40);
    match random.below(11) {
        0..=2 => listing.put(Arc::new(agent_pod(
            &name,
            version,
            job,
            random.below(8) > 0,
        ))),
        3 => {
            if let Some(pod) = listing.get(&name) {
                let mut running = (**pod).clone();
                running.phase = PodPhase::Running;
                running.resource_version = version;
                listing.put(Arc::new(running));
            }
        }
        4 => listing.remove(&name),
        5 => late.push(listing.clone()),
        6 if !late.is_empty() => {
            let list = late.remove(random.below(late.len() as u64) as usize);
            maps.refresh(list);
        }
        7 => maps.refresh(listing.clone()),
        8 => {
            let mut known = KnownPod::from_pod(&agent_pod(&name, version, job, true));
            known.agent_state = PluginAgentState::Building;
            maps.write(&name, Some(known));
        }
        9 => maps.write(&name, None),
        _ => {
            let state = [PluginAgentState::Idle, PluginAgentState::Building][job as usize % 2];
            for map in [&mut maps.incremental, &mut maps.rebuilt] {
                if let Some(known) = map.get_mut(&name) {
                    known.agent_state = state;
                }
            }
        }
    }
}

#[test]
fn the_incremental_refresh_leaves_the_map_as_the_rebuild_does() {
    for seed in 1..=10 {
        let mut random = Stream::new(seed, StreamId::Workload);
        let mut listing = PodList::default();
        let mut late = Vec::new();
        let mut maps = Maps {
            incremental: PodMap::new(),
            base: RefreshBase::default(),
            rebuilt: PodMap::new(),
        };
        let mut sizes = 0;
        for version in 1..=3000 {
            step(&mut random, version, &mut listing, &mut late, &mut maps);
            assert_eq!(
                maps.incremental, maps.rebuilt,
                "seed {seed}, step {version}: the maps differ"
            );
            sizes += maps.rebuilt.len();
        }
        assert!(sizes > 3000 * 20, "seed {seed}: the maps held pods");
    }
}

/// A pod inserted outside a refresh (a create answer) that the next listing does not hold is
/// gone after it, as after the rebuild: the touch is what lets the refresh see it.
#[test]
fn a_pod_inserted_outside_a_refresh_goes_with_the_next_listing_without_it() {
    let mut listing = PodList::default();
    listing.put(Arc::new(agent_pod("k8s-ea-001", 1, 7, true)));
    let mut base = RefreshBase::default();
    let mut map = PodMap::new();
    base.refresh(&mut map, listing.clone());
    let created = KnownPod::from_pod(&agent_pod("k8s-ea-002", 2, 8, true));
    map.insert("k8s-ea-002".to_owned(), created);
    base.touch("k8s-ea-002");
    base.refresh(&mut map, listing);
    assert_eq!(map.keys().collect::<Vec<_>>(), ["k8s-ea-001"]);
}
