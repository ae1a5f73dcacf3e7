//! The incremental merge against the naive one, on random histories: pods written, replaced
//! by a new object of the same name, terminating and removed; lists delivered late and out of
//! order; copies observed stale or fresh; pods forgotten after a delete.

use crate::allocator::safe::view::View;
use crate::component::Random;
use crate::engine::{Stream, StreamId};
use crate::resources::{Pod, PodList, PodPhase, StringMap};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The world the view follows: the store's current copies, every copy ever written, and a
/// listing kept in step with the store the way the API server keeps it.
struct Store {
    pods: BTreeMap<String, Arc<Pod>>,
    history: Vec<Arc<Pod>>,
    listing: PodList,
    version: u64,
}

impl Store {
    fn write(&mut self, name: &str, edit: impl FnOnce(&mut Pod)) {
        self.version += 1;
        let mut pod = self
            .pods
            .get(name)
            .map_or_else(|| fresh(name, self.version), |p| (**p).clone());
        edit(&mut pod);
        pod.resource_version = self.version;
        let pod = Arc::new(pod);
        self.history.push(Arc::clone(&pod));
        self.listing.put(Arc::clone(&pod));
        self.pods.insert(name.to_owned(), pod);
    }

    fn remove(&mut self, name: &str) {
        self.pods.remove(name);
        self.listing.remove(name);
    }
}

pub(super) fn fresh(name: &str, uid: u64) -> Pod {
    Pod {
        name: name.to_owned(),
        uid,
        labels: Arc::default(),
        annotations: StringMap::new(),
        image: "gocd/gocd-agent".to_owned(),
        env: Arc::default(),
        phase: PodPhase::Pending,
        node: None,
        created_ms: 0,
        resource_version: 0,
        restart_count: 0,
        ready: false,
        deletion_ms: None,
    }
}

fn step(
    random: &mut Stream,
    store: &mut Store,
    in_flight: &mut Vec<PodList>,
    views: &mut [View; 2],
) {
    let name = format!("k8s-ea-{:04}", random.below(200));
    match random.below(12) {
        0..=3 => store.write(&name, |pod| pod.restart_count += 1),
        4 => store.write(&name, |pod| pod.phase = PodPhase::Running),
        // A new object under a name that may still be in use.
        5 => {
            let uid = 1_000_000 + store.version;
            store.write(&name, |pod| *pod = fresh(&name, uid));
        }
        6 => store.write(&name, |pod| pod.deletion_ms = Some(1)),
        7 => store.remove(&name),
        // A list served now, delivered later.
        8 => in_flight.push(store.listing.clone()),
        // A list delivered, possibly out of order.
        9 if !in_flight.is_empty() => {
            let list = in_flight.remove(random.below(in_flight.len() as u64) as usize);
            views[0].merge_list(list.clone());
            views[1].merge_list_naive(list);
        }
        // An answer observed: any copy ever written, stale or fresh.
        10 if !store.history.is_empty() => {
            let copy = &store.history[random.below(store.history.len() as u64) as usize];
            for view in views.iter_mut() {
                view.observe(Arc::clone(copy));
            }
        }
        11 => {
            for view in views.iter_mut() {
                view.forget(&name);
            }
        }
        _ => {}
    }
}

#[test]
fn the_incremental_merge_leaves_the_view_as_the_naive_merge_does() {
    for seed in 1..=12 {
        let mut random = Stream::new(seed, StreamId::Workload);
        let mut store = Store {
            pods: BTreeMap::new(),
            history: Vec::new(),
            listing: PodList::default(),
            version: 0,
        };
        let mut in_flight = Vec::new();
        let mut views = [View::default(), View::default()];
        for n in 0..4000 {
            step(&mut random, &mut store, &mut in_flight, &mut views);
            assert!(
                views[0].pods.records() == views[1].pods.records(),
                "seed {seed}, step {n}: the views differ"
            );
            assert_eq!(views[0].deleted, views[1].deleted);
        }
        assert!(
            !views[0].pods.is_empty(),
            "seed {seed}: the history kept some pods"
        );
    }
}
