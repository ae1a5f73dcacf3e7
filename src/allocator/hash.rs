//! Config hashes: the canonical one `safe` writes, and the one PR #355 writes, defect included.

use super::settings::keys;
use crate::resources::StringMap;
use sha2::{Digest, Sha256};
use std::collections::VecDeque;

/// Cluster profile keys that do not change the pods the plugin creates (timeouts, limits,
/// the reuse flag itself, our extensions). Every other cluster property shapes pods.
fn shapes_pods(key: &str) -> bool {
    !matches!(
        key,
        keys::AUTO_REGISTER_TIMEOUT
            | keys::PENDING_PODS_COUNT
            | keys::CLUSTER_REQUEST_TIMEOUT
            | keys::ENABLE_AGENT_REUSE
    ) && !key.starts_with("elasticsim.")
}

/// SHA-256 (hex) over the sorted elastic profile properties, the cluster profile properties
/// that shape pods, and the GoCD environment. Every field is length-prefixed, so no two
/// different inputs share an encoding; maps are `BTreeMap`s, so the order is canonical. The
/// value is the same in every process and after every restart.
pub fn canonical_config_hash(
    elastic_profile_properties: &StringMap,
    cluster_profile_properties: &StringMap,
    environment: Option<&str>,
) -> String {
    let mut hasher = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    field(b"elastic");
    for (key, value) in elastic_profile_properties {
        field(key.as_bytes());
        field(value.as_bytes());
    }
    field(b"cluster");
    for (key, value) in cluster_profile_properties
        .iter()
        .filter(|(key, _)| shapes_pods(key))
    {
        field(key.as_bytes());
        field(value.as_bytes());
    }
    field(b"environment");
    field(environment.unwrap_or("").as_bytes());
    let digest = hasher.finalize();
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The canonical hashes of the configurations seen last. should-assign-work needs the hash
/// of every offer, and only a handful of configurations are in use at a time, so comparing
/// the inputs with a few remembered ones is cheaper than hashing again.
#[derive(Debug, Default)]
pub struct ConfigHashMemo {
    /// Most recently used first.
    recent: VecDeque<(StringMap, StringMap, Option<String>, String)>,
}

impl ConfigHashMemo {
    /// How many configurations are remembered.
    const CAPACITY: usize = 8;

    /// `canonical_config_hash` of these inputs.
    pub fn hash(
        &mut self,
        elastic_profile_properties: &StringMap,
        cluster_profile_properties: &StringMap,
        environment: Option<&str>,
    ) -> String {
        let same = |(elastic, cluster, env, _): &(StringMap, StringMap, Option<String>, String)| {
            env.as_deref() == environment
                && elastic == elastic_profile_properties
                && cluster == cluster_profile_properties
        };
        if let Some(index) = self.recent.iter().position(same) {
            let entry = self.recent.remove(index).expect("the position is in range");
            let hash = entry.3.clone();
            self.recent.push_front(entry);
            return hash;
        }
        let hash = canonical_config_hash(
            elastic_profile_properties,
            cluster_profile_properties,
            environment,
        );
        self.recent.push_front((
            elastic_profile_properties.clone(),
            cluster_profile_properties.clone(),
            environment.map(str::to_owned),
            hash.clone(),
        ));
        self.recent.truncate(Self::CAPACITY);
        hash
    }
}

/// Java's `String.hashCode`.
fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

/// Java's `AbstractMap.hashCode`: the sum of `key.hashCode() ^ value.hashCode()`.
fn java_map_hash(map: &StringMap) -> i32 {
    map.iter()
        .map(|(k, v)| java_string_hash(k) ^ java_string_hash(v))
        .fold(0i32, i32::wrapping_add)
}

/// Java's `Objects.hash(a, b, …)` over string fields (null as 0).
fn java_objects_hash<'a>(fields: impl IntoIterator<Item = Option<&'a str>>) -> i32 {
    fields.into_iter().fold(1i32, |h, f| {
        h.wrapping_mul(31)
            .wrapping_add(f.map_or(0, java_string_hash))
    })
}

/// The eight fields `ClusterProfileProperties.hashCode` covers.
const CLUSTER_HASH_FIELDS: [&str; 8] = [
    "go_server_url",
    "auto_register_timeout",
    "pending_pods_count",
    "kubernetes_cluster_url",
    "namespace",
    "security_token",
    "kubernetes_cluster_ca_cert",
    "cluster_request_timeout",
];

/// PR #355's `agentConfigHash(cp, ep)`: `GSON.toJson(Map.of("cluster_profile_properties",
/// hex(Objects.hash(cp)), "elastic_profile_properties", hex(Objects.hash(ep))))`.
///
/// Two defects are modelled, both as the JVM behaves:
/// * the 32-bit Java hashes are weak (the cluster hash covers timeouts and limits, so editing
///   `pending_pods_count` makes every pod "foreign"; the elastic hash is a sum of XORs);
/// * `Map.of` iterates in an order salted per JVM process (`ImmutableCollections.SALT`), so
///   the JSON's key order — and the string compared — depends on `process_id`: after a
///   server restart the recomputed hash may not equal the annotation on older pods.
pub fn pr355_config_hash(
    elastic_profile_properties: &StringMap,
    cluster_profile_properties: &StringMap,
    process_id: u64,
) -> String {
    let cluster = java_objects_hash(
        CLUSTER_HASH_FIELDS
            .iter()
            .map(|k| cluster_profile_properties.get(*k).map(String::as_str)),
    );
    let elastic = java_objects_hash([None]).wrapping_add(java_map_hash(elastic_profile_properties));
    let cluster_entry = format!("\"cluster_profile_properties\":\"{:x}\"", cluster as u32);
    let elastic_entry = format!("\"elastic_profile_properties\":\"{:x}\"", elastic as u32);
    if process_id & 1 == 0 {
        format!("{{{cluster_entry},{elastic_entry}}}")
    } else {
        format!("{{{elastic_entry},{cluster_entry}}}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> StringMap {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn java_string_hash_matches_the_jvm() {
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("hello"), 99_162_322);
    }

    #[test]
    fn canonical_hash_ignores_limits_but_not_the_environment() {
        let elastic = props(&[("Image", "gocd/gocd-agent:v25.1.0")]);
        let a = canonical_config_hash(
            &elastic,
            &props(&[("pending_pods_count", "10")]),
            Some("prod"),
        );
        let b = canonical_config_hash(
            &elastic,
            &props(&[("pending_pods_count", "3")]),
            Some("prod"),
        );
        let c = canonical_config_hash(&elastic, &props(&[]), Some("test"));
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn pr355_hash_depends_on_the_jvm_process() {
        let elastic = props(&[("Image", "gocd/gocd-agent:v25.1.0")]);
        let cluster = props(&[("namespace", "gocd")]);
        assert_eq!(
            pr355_config_hash(&elastic, &cluster, 2),
            pr355_config_hash(&elastic, &cluster, 4)
        );
        assert_ne!(
            pr355_config_hash(&elastic, &cluster, 2),
            pr355_config_hash(&elastic, &cluster, 3)
        );
    }

    #[test]
    fn the_memo_answers_as_the_hash_does_for_more_configurations_than_it_keeps() {
        let cluster = props(&[("namespace", "gocd"), ("pending_pods_count", "10")]);
        let mut memo = ConfigHashMemo::default();
        // Twice round more configurations than the memo holds, with and without environments:
        // hits, misses and evictions all give the hash itself.
        for _ in 0..2 {
            for index in 0..ConfigHashMemo::CAPACITY + 3 {
                let image = format!("gocd-agent:{index}");
                let elastic = props(&[("Image", image.as_str())]);
                for environment in [None, Some("prod")] {
                    assert_eq!(
                        memo.hash(&elastic, &cluster, environment),
                        canonical_config_hash(&elastic, &cluster, environment),
                    );
                }
            }
        }
        assert_eq!(memo.recent.len(), ConfigHashMemo::CAPACITY);
    }
}
