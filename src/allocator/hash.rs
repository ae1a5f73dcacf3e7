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
pub(crate) fn canonical_config_hash(
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
pub(crate) struct ConfigHashMemo {
    /// Most recently used first.
    recent: VecDeque<(StringMap, StringMap, Option<String>, String)>,
}

impl ConfigHashMemo {
    /// How many configurations are remembered.
    const CAPACITY: usize = 8;

    /// `canonical_config_hash` of these inputs.
    pub(crate) fn hash(
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
            debug_assert_eq!(
                hash,
                canonical_config_hash(
                    elastic_profile_properties,
                    cluster_profile_properties,
                    environment
                ),
                "a remembered hash is the hash"
            );
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
        debug_assert!(self.recent.len() <= Self::CAPACITY);
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

/// The eight `PluginSettings` fields in the order `PluginSettings.hashCode` combines them.
/// This is not quite their declaration order: `namespace` is declared before
/// `cluster_request_timeout` but hashed after it. `enable_agent_reuse` is not hashed.
pub(crate) const PLUGIN_SETTINGS_HASH_FIELDS: [&str; 8] = [
    "go_server_url",
    "auto_register_timeout",
    "pending_pods_count",
    "kubernetes_cluster_url",
    "security_token",
    "kubernetes_cluster_ca_cert",
    "cluster_request_timeout",
    "namespace",
];

/// `PluginSettings.hashCode()`: `result = f0.hashCode(); result = 31 * result + fi.hashCode()`
/// for the other fields in [`PLUGIN_SETTINGS_HASH_FIELDS`] order, a null field counting 0.
fn plugin_settings_hash(cluster_profile_properties: &StringMap) -> i32 {
    PLUGIN_SETTINGS_HASH_FIELDS.iter().fold(0i32, |h, key| {
        let field = cluster_profile_properties.get(*key);
        h.wrapping_mul(31)
            .wrapping_add(field.map_or(0, |value| java_string_hash(value)))
    })
}

/// `Util.objectUUID(o)` = `Integer.toHexString(Objects.hash(o))`, and `Objects.hash(o)` of one
/// argument is `31 * 1 + o.hashCode()`.
fn object_uuid(hash_code: i32) -> String {
    format!("{:x}", 31i32.wrapping_add(hash_code) as u32)
}

/// The JVM's `ImmutableCollections.SALT32L` in the server process `process_id`: drawn once per
/// process (the real JVM derives it from `System.nanoTime()` at class initialisation); here
/// the low 32 bits of the process id, which the simulator draws from a seeded stream.
pub(crate) fn jvm_salt(process_id: u64) -> u32 {
    process_id as u32
}

/// True when `Map.of("cluster_profile_properties", …, "elastic_profile_properties", …)`
/// iterates the cluster entry first in a JVM with this salt.
///
/// `MapN` of two pairs has a table of 4 pair slots; a key goes to slot
/// `floorMod(key.hashCode(), 4)` (probing upwards), which the salt does not change:
/// `"cluster_profile_properties".hashCode()` = 1053479918 → slot 2,
/// `"elastic_profile_properties".hashCode()` = 843487027 → slot 3. The iterator starts at
/// pair slot `(SALT32L * 4) >>> 32` and steps before reading: upwards when
/// `REVERSE = (SALT32L & 1) == 0`, downwards otherwise.
pub(crate) fn map_of_cluster_first(salt: u32) -> bool {
    const SLOTS: u64 = 4;
    let mut taken = [None; SLOTS as usize];
    for (index, key) in ["cluster_profile_properties", "elastic_profile_properties"]
        .iter()
        .enumerate()
    {
        let mut slot = java_string_hash(key).rem_euclid(SLOTS as i32) as usize;
        while taken[slot].is_some() {
            slot = (slot + 1) % SLOTS as usize;
        }
        taken[slot] = Some(index);
    }
    let mut slot = ((u64::from(salt) * SLOTS) >> 32) as usize;
    let upwards = salt & 1 == 0;
    loop {
        slot = if upwards {
            (slot + 1) % SLOTS as usize
        } else {
            (slot + SLOTS as usize - 1) % SLOTS as usize
        };
        if let Some(index) = taken[slot] {
            return index == 0;
        }
    }
}

/// PR #355's `agentConfigHash(cp, ep)`: `GSON.toJson(Map.of("cluster_profile_properties",
/// objectUUID(cp), "elastic_profile_properties", objectUUID(ep)))`, bit for bit:
///
/// * cluster part: hex of `31 + PluginSettings.hashCode()` (eight string fields, see
///   `PLUGIN_SETTINGS_HASH_FIELDS`); editing `pending_pods_count` or a timeout makes every
///   older pod "foreign";
/// * elastic part: hex of `31 + Map.hashCode()` (a sum of `key ^ value` string hashes);
/// * key order: `Map.of`'s iteration order, salted per JVM process (`map_of_cluster_first`
///   of `jvm_salt`), so after a server restart the recomputed string may not equal the
///   annotation on older pods.
pub(crate) fn pr355_config_hash(
    elastic_profile_properties: &StringMap,
    cluster_profile_properties: &StringMap,
    process_id: u64,
) -> String {
    let cluster = object_uuid(plugin_settings_hash(cluster_profile_properties));
    let elastic = object_uuid(java_map_hash(elastic_profile_properties));
    let cluster_entry = format!("\"cluster_profile_properties\":\"{cluster}\"");
    let elastic_entry = format!("\"elastic_profile_properties\":\"{elastic}\"");
    if map_of_cluster_first(jvm_salt(process_id)) {
        format!("{{{cluster_entry},{elastic_entry}}}")
    } else {
        format!("{{{elastic_entry},{cluster_entry}}}")
    }
}

#[cfg(test)]
mod tests {
    use super::{
        ConfigHashMemo, PLUGIN_SETTINGS_HASH_FIELDS, canonical_config_hash, java_string_hash,
        map_of_cluster_first, pr355_config_hash,
    };
    use crate::resources::StringMap;

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
    fn pr355_hash_is_the_java_value_computed_by_hand() {
        // Cluster part, `PluginSettings.hashCode()` over its eight fields in hashCode order:
        //   go_server_url null → 0, auto_register_timeout "10" → '1'·31 + '0' = 49·31 + 48
        //   = 1567, pending_pods_count "5" → 53, kubernetes_cluster_url, security_token,
        //   kubernetes_cluster_ca_cert, cluster_request_timeout null → 0, namespace "ns" →
        //   'n'·31 + 's' = 110·31 + 115 = 3525.
        //   hashCode = 1567·31^6 + 53·31^5 + 3525 = 1 390 718 268 127 + 1 517 345 003 + 3525
        //            = 1 392 235 616 655 ≡ 666 212 751 (mod 2^32, minus 324·2^32) = 0x27b5998f;
        //   Objects.hash(cp) = 31 + 0x27b5998f = 0x27b599ae.
        // Elastic part, `Map.hashCode()` of {Image: a}: "Image".hashCode() = 70 760 763,
        //   "a".hashCode() = 97, 70 760 763 ^ 97 = 70 760 794; + 31 = 70 760 825 = 0x437b979.
        // Key order: salt 2 starts at pair slot (2·4)>>>32 = 0 and, REVERSE being true
        //   (2 & 1 == 0), steps up to slot 1 (empty), then 2 = "cluster_profile_properties".
        let cluster = props(&[
            ("auto_register_timeout", "10"),
            ("pending_pods_count", "5"),
            ("namespace", "ns"),
            ("enable_agent_reuse", "true"),
            ("elasticsim.idle_timeout_ms", "300000"),
        ]);
        let elastic = props(&[("Image", "a")]);
        assert_eq!(
            pr355_config_hash(&elastic, &cluster, 2),
            r#"{"cluster_profile_properties":"27b599ae","elastic_profile_properties":"437b979"}"#
        );
        // Salt 3: same start, REVERSE false, steps down to slot 3 = the elastic entry.
        assert_eq!(
            pr355_config_hash(&elastic, &cluster, 3),
            r#"{"elastic_profile_properties":"437b979","cluster_profile_properties":"27b599ae"}"#
        );
    }

    #[test]
    fn map_of_order_follows_the_salt_start_and_direction() {
        // Upwards from start slot s visits s+1 first: only s = 2 reaches slot 3 before 2.
        // Downwards from s visits s-1 first: only s = 3 reaches slot 2 before 3.
        let start = |slot: u32| slot << 30;
        for (slot, upwards_first, downwards_first) in [
            (0, true, false),
            (1, true, false),
            (2, false, false),
            (3, true, true),
        ] {
            assert_eq!(
                map_of_cluster_first(start(slot)),
                upwards_first,
                "{slot} up"
            );
            assert_eq!(
                map_of_cluster_first(start(slot) | 1),
                downwards_first,
                "{slot} down"
            );
        }
    }

    #[test]
    fn pr355_hash_depends_on_the_jvm_process_and_on_every_hashed_field() {
        let elastic = props(&[("Image", "gocd/gocd-agent:v25.1.0")]);
        let cluster = props(&[("namespace", "gocd")]);
        let hash =
            |cluster: &StringMap, process_id| pr355_config_hash(&elastic, cluster, process_id);
        assert_eq!(hash(&cluster, 2), hash(&cluster, 4));
        assert_ne!(hash(&cluster, 2), hash(&cluster, 3));
        for key in PLUGIN_SETTINGS_HASH_FIELDS {
            let mut edited = cluster.clone();
            edited.insert(key.to_owned(), "5".to_owned());
            assert_ne!(hash(&edited, 2), hash(&cluster, 2), "{key}");
        }
        let mut reuse = cluster.clone();
        reuse.insert("enable_agent_reuse".to_owned(), "true".to_owned());
        assert_eq!(
            hash(&reuse, 2),
            hash(&cluster, 2),
            "the reuse flag is not hashed"
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
