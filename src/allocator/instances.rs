//! The plugin's in-memory pod map (`KubernetesAgentInstances.instances`), as the master branch
//! and PR #355 keep it: one map per cluster profile, keyed by pod name, rebuilt from pod labels
//! on every refresh. Used by `upstream` and `pr355` only.

use super::pod_spec::keys;
use super::settings::keys as settings_keys;
use crate::resources::{Pod, PodList, PodPhase, StringMap};
use std::collections::BTreeMap;
use std::sync::Arc;

/// `PodState`: the plugin only distinguishes Running from everything else, so Failed and
/// Succeeded pods count as pending.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PodState {
    Pending,
    Running,
}

impl PodState {
    pub(super) fn from_phase(phase: PodPhase) -> PodState {
        if phase == PodPhase::Running {
            PodState::Running
        } else {
            PodState::Pending
        }
    }
}

/// PR #355's plugin-side agent state. `Unknown` is what every listed (adopted) pod starts as;
/// the master branch never changes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PluginAgentState {
    Unknown,
    Idle,
    Building,
}

/// `KubernetesInstance`: what the plugin remembers about one pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct KnownPod {
    pub(super) name: String,
    /// The `Elastic-Agent-Job-Id` label: the job the pod was created for.
    pub(super) job_id: Option<u64>,
    /// The `Elastic-Agent-Environment-Name` label.
    pub(super) environment: Option<String>,
    /// `metadata.creationTimestamp`.
    pub(super) created_ms: u64,
    pub(super) pod_state: PodState,
    /// The `go.cd/elastic-config-hash` annotation (PR #355 writes it).
    pub(super) config_hash: Option<String>,
    pub(super) agent_state: PluginAgentState,
}

impl KnownPod {
    /// `KubernetesInstanceFactory.fromKubernetesPod`: rebuilt from labels and annotations only.
    pub(super) fn from_pod(pod: &Pod) -> KnownPod {
        debug_assert!(!pod.name.is_empty(), "a pod the API returns has a name");
        KnownPod {
            name: pod.name.clone(),
            job_id: pod.label(keys::JOB_ID).and_then(|value| value.parse().ok()),
            environment: pod.label(keys::ENVIRONMENT).map(str::to_owned),
            created_ms: pod.created_ms,
            pod_state: PodState::from_phase(pod.phase),
            config_hash: pod.annotation(keys::CONFIG_HASH).map(str::to_owned),
            agent_state: PluginAgentState::Unknown,
        }
    }

    /// True iff the pod carries the plugin's `kind` label, the only way it recognises its pods.
    pub(super) fn is_agent_pod(pod: &Pod) -> bool {
        pod.label(keys::KIND) == Some(keys::KIND_VALUE)
    }
}

/// One cluster profile's pod map, ordered by pod name.
pub(super) type PodMap = BTreeMap<String, KnownPod>;

/// Rebuild a pod map from a listing. `previous` supplies the plugin-side agent state of pods
/// already known (PR #355 preserves it; the master branch never sets it, so it stays
/// `Unknown`). Pods without the `kind` label are ignored.
pub(super) fn rebuild_from_listing(previous: &PodMap, pods: &PodList) -> PodMap {
    let mut rebuilt = PodMap::new();
    for pod in pods
        .iter()
        .map(Arc::as_ref)
        .filter(|pod| KnownPod::is_agent_pod(pod))
    {
        let mut known = KnownPod::from_pod(pod);
        if let Some(old) = previous.get(&pod.name) {
            known.agent_state = old.agent_state;
        }
        rebuilt.insert(known.name.clone(), known);
    }
    debug_assert!(
        rebuilt.len() <= pods.len(),
        "a rebuild keeps listed pods only"
    );
    rebuilt
}

/// The cluster profile properties `ClusterProfileProperties.uuid()` hashes (plus our
/// millisecond stand-in for `auto_register_timeout`). Editing any of them makes a new map;
/// the old one is never removed, as in the plugin.
const CLUSTER_KEY_FIELDS: [&str; 9] = [
    settings_keys::GO_SERVER_URL,
    settings_keys::AUTO_REGISTER_TIMEOUT,
    settings_keys::PENDING_PODS_COUNT,
    "kubernetes_cluster_url",
    settings_keys::NAMESPACE,
    "security_token",
    "kubernetes_cluster_ca_cert",
    settings_keys::CLUSTER_REQUEST_TIMEOUT,
    settings_keys::AUTO_REGISTER_TIMEOUT_MS,
];

/// Identifies one cluster profile's map, like the plugin's `clusterUuid`, without the 32-bit
/// hash collisions.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct ClusterKey(StringMap);

impl ClusterKey {
    pub(super) fn from_properties(properties: &StringMap) -> ClusterKey {
        let fields = properties
            .iter()
            .filter(|(key, _)| CLUSTER_KEY_FIELDS.contains(&key.as_str()))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        let key = ClusterKey(fields);
        debug_assert!(
            key.matches(properties),
            "a key matches the properties it is made of"
        );
        key
    }

    /// Whether `from_properties(properties)` would equal this key, without building one
    /// (should-assign-work asks this for every job an agent is offered).
    pub(super) fn matches(&self, properties: &StringMap) -> bool {
        let fields = properties
            .iter()
            .filter(|(key, _)| CLUSTER_KEY_FIELDS.contains(&key.as_str()));
        self.0.iter().eq(fields)
    }
}

#[cfg(test)]
mod tests {
    use super::{
        CLUSTER_KEY_FIELDS, ClusterKey, KnownPod, PluginAgentState, PodMap, PodState,
        rebuild_from_listing,
    };
    use crate::allocator::pod_spec::keys;
    use crate::allocator::settings::keys as settings_keys;
    use crate::component::Random;
    use crate::resources::{Pod, PodPhase, StringMap};
    use std::sync::Arc;

    fn pod(name: &str, phase: PodPhase, kind: bool) -> Pod {
        let mut labels = StringMap::from([(keys::JOB_ID.to_owned(), "7".to_owned())]);
        if kind {
            labels.insert(keys::KIND.to_owned(), keys::KIND_VALUE.to_owned());
        }
        Pod {
            name: name.to_owned(),
            uid: 1,
            labels: Arc::new(labels),
            annotations: StringMap::new(),
            image: "gocd/gocd-agent".to_owned(),
            env: Arc::default(),
            phase,
            node: None,
            created_ms: 5,
            resource_version: 1,
            restart_count: 0,
            deletion_ms: None,
            ready: false,
        }
    }

    #[test]
    fn failed_and_succeeded_pods_count_as_pending() {
        assert_eq!(PodState::from_phase(PodPhase::Failed), PodState::Pending);
        assert_eq!(PodState::from_phase(PodPhase::Succeeded), PodState::Pending);
        assert_eq!(PodState::from_phase(PodPhase::Running), PodState::Running);
    }

    #[test]
    fn a_refresh_keeps_known_agent_states_and_drops_unlabelled_pods() {
        let mut previous = PodMap::new();
        let mut known = KnownPod::from_pod(&pod("a", PodPhase::Pending, true));
        known.agent_state = PluginAgentState::Idle;
        previous.insert("a".to_owned(), known);
        let listing = [
            pod("a", PodPhase::Running, true),
            pod("b", PodPhase::Pending, true),
            pod("c", PodPhase::Running, false),
        ]
        .map(Arc::new)
        .into_iter()
        .collect();
        let rebuilt = rebuild_from_listing(&previous, &listing);
        assert_eq!(rebuilt.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(rebuilt["a"].agent_state, PluginAgentState::Idle);
        assert_eq!(rebuilt["a"].pod_state, PodState::Running);
        assert_eq!(rebuilt["b"].agent_state, PluginAgentState::Unknown);
        assert_eq!(rebuilt["b"].job_id, Some(7));
    }

    #[test]
    fn the_cluster_key_ignores_the_reuse_flag() {
        let mut properties = StringMap::from([("namespace".to_owned(), "gocd".to_owned())]);
        let before = ClusterKey::from_properties(&properties);
        properties.insert(
            settings_keys::ENABLE_AGENT_REUSE.to_owned(),
            "true".to_owned(),
        );
        assert_eq!(ClusterKey::from_properties(&properties), before);
        properties.insert(settings_keys::PENDING_PODS_COUNT.to_owned(), "3".to_owned());
        assert_ne!(ClusterKey::from_properties(&properties), before);
    }

    /// `matches` against its naive reference, building the key and comparing, on random
    /// property maps over the key fields and other keys: the second map is the first, or the
    /// first with one entry set, removed or redrawn, or a fresh draw (so both answers occur).
    #[test]
    fn matching_a_key_agrees_with_building_one_and_comparing() {
        use crate::engine::{Stream, StreamId};
        let names: Vec<&str> = CLUSTER_KEY_FIELDS
            .iter()
            .copied()
            .chain(["enable_agent_reuse", "idle_timeout", "max_pods"])
            .collect();
        let mut random = Stream::new(13, StreamId::Workload);
        let draw = |random: &mut Stream| -> StringMap {
            let mut properties = StringMap::new();
            for name in &names {
                if random.below(3) > 0 {
                    properties.insert((*name).to_owned(), random.below(2).to_string());
                }
            }
            properties
        };
        let (mut equal, mut different) = (0, 0);
        for _ in 0..4_000 {
            let first = draw(&mut random);
            let key = ClusterKey::from_properties(&first);
            let mut properties = first;
            let name = names[random.below(names.len() as u64) as usize].to_owned();
            match random.below(4) {
                0 => {}
                1 => drop(properties.insert(name, random.below(2).to_string())),
                2 => drop(properties.remove(&name)),
                _ => properties = draw(&mut random),
            }
            let naive = ClusterKey::from_properties(&properties) == key;
            assert_eq!(key.matches(&properties), naive, "{key:?} vs {properties:?}");
            if naive { equal += 1 } else { different += 1 }
        }
        assert!(
            equal > 10 && different > 10,
            "both outcomes drawn: {equal}, {different}"
        );
    }
}
