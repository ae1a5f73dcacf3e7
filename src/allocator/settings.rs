//! Cluster profile settings, read from `cluster_profile_properties` as the plugin reads them
//! (`PluginSettings.java`), plus two `elasticsim.*` keys that only the `safe` policy uses.

use crate::resources::StringMap;

/// Property keys of a cluster profile.
pub(crate) mod keys {
    /// Minutes; both "unregistered pod" reaping and "old idle agent" reaping. Default 10.
    pub(crate) const AUTO_REGISTER_TIMEOUT: &str = "auto_register_timeout";
    /// Max pods not Running (master semantics). Default 10.
    pub(crate) const PENDING_PODS_COUNT: &str = "pending_pods_count";
    /// Milliseconds. Default 10 000.
    pub(crate) const CLUSTER_REQUEST_TIMEOUT: &str = "cluster_request_timeout";
    /// PR #355 only: "true" turns reuse on. Default false.
    pub(crate) const ENABLE_AGENT_REUSE: &str = "enable_agent_reuse";
    /// The GoCD server URL agent pods connect to (their `GO_EA_SERVER_URL`).
    pub(crate) const GO_SERVER_URL: &str = "go_server_url";
    /// The Kubernetes namespace the plugin creates and lists pods in.
    pub(crate) const NAMESPACE: &str = "namespace";
    /// Extension: `auto_register_timeout` in milliseconds, when it is not whole minutes.
    pub(crate) const AUTO_REGISTER_TIMEOUT_MS: &str = "elasticsim.auto_register_timeout_ms";
    /// Extension for `safe`: how long an idle reusable pod is kept, in milliseconds.
    pub(crate) const IDLE_TIMEOUT_MS: &str = "elasticsim.idle_timeout_ms";
    /// Extension for `safe`: an optional limit on all pods.
    pub(crate) const MAX_PODS: &str = "elasticsim.max_pods";
}

/// Typed cluster profile settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterProfile {
    /// `go_server_url`: the server URL given to agent pods.
    pub go_server_url: String,
    /// `namespace`: the namespace of the agent pods.
    pub namespace: String,
    /// `auto_register_timeout` (ART), in milliseconds: the registration and old-agent age limit.
    pub auto_register_timeout_ms: u64,
    /// `pending_pods_count`: the pod limit: pods not Running (`pr355`: pods in any phase).
    pub pending_pods_count: u32,
    /// `cluster_request_timeout`: how long a Kubernetes call may take, in milliseconds.
    pub cluster_request_timeout_ms: u64,
    /// `enable_agent_reuse`: keep a pod after its job for the next one (`pr355`, `safe`).
    pub enable_agent_reuse: bool,
    /// `elasticsim.idle_timeout_ms`: how long `safe` keeps an idle reusable pod.
    pub idle_timeout_ms: u64,
    /// `elasticsim.max_pods`: `safe`'s optional limit on all pods.
    pub max_pods: Option<u32>,
}

impl Default for ClusterProfile {
    fn default() -> Self {
        ClusterProfile {
            go_server_url: "https://gocd.example/go".to_owned(),
            namespace: "gocd".to_owned(),
            auto_register_timeout_ms: 10 * 60_000,
            pending_pods_count: 10,
            cluster_request_timeout_ms: 10_000,
            enable_agent_reuse: false,
            idle_timeout_ms: 5 * 60_000,
            max_pods: None,
        }
    }
}

impl ClusterProfile {
    /// Read settings from properties; blank or unparsable values take the plugin's defaults.
    pub(crate) fn from_properties(properties: &StringMap) -> ClusterProfile {
        let defaults = ClusterProfile::default();
        let get = |key: &str| {
            properties
                .get(key)
                .map(|v| v.trim())
                .filter(|v| !v.is_empty())
        };
        let number = |key: &str| get(key).and_then(|v| v.parse::<u64>().ok());
        let auto_register_timeout_ms = number(keys::AUTO_REGISTER_TIMEOUT_MS)
            .or_else(|| number(keys::AUTO_REGISTER_TIMEOUT).map(|minutes| minutes * 60_000))
            .unwrap_or(defaults.auto_register_timeout_ms);
        ClusterProfile {
            go_server_url: get(keys::GO_SERVER_URL).map_or(defaults.go_server_url, str::to_owned),
            namespace: get(keys::NAMESPACE).map_or(defaults.namespace, str::to_owned),
            auto_register_timeout_ms,
            pending_pods_count: number(keys::PENDING_PODS_COUNT)
                .map_or(defaults.pending_pods_count, |n| {
                    n.min(u64::from(u32::MAX)) as u32
                }),
            cluster_request_timeout_ms: number(keys::CLUSTER_REQUEST_TIMEOUT)
                .unwrap_or(defaults.cluster_request_timeout_ms),
            enable_agent_reuse: get(keys::ENABLE_AGENT_REUSE) == Some("true"),
            idle_timeout_ms: number(keys::IDLE_TIMEOUT_MS).unwrap_or(defaults.idle_timeout_ms),
            max_pods: number(keys::MAX_PODS).map(|n| n.min(u64::from(u32::MAX)) as u32),
        }
    }

    /// Write settings as properties (what the server sends in every request).
    pub fn to_properties(&self) -> StringMap {
        let mut map = StringMap::new();
        map.insert(keys::GO_SERVER_URL.to_owned(), self.go_server_url.clone());
        map.insert(keys::NAMESPACE.to_owned(), self.namespace.clone());
        if self.auto_register_timeout_ms.is_multiple_of(60_000) {
            let minutes = self.auto_register_timeout_ms / 60_000;
            map.insert(keys::AUTO_REGISTER_TIMEOUT.to_owned(), minutes.to_string());
        } else {
            let ms = self.auto_register_timeout_ms.to_string();
            map.insert(keys::AUTO_REGISTER_TIMEOUT_MS.to_owned(), ms);
        }
        map.insert(
            keys::PENDING_PODS_COUNT.to_owned(),
            self.pending_pods_count.to_string(),
        );
        let timeout = self.cluster_request_timeout_ms.to_string();
        map.insert(keys::CLUSTER_REQUEST_TIMEOUT.to_owned(), timeout);
        map.insert(
            keys::ENABLE_AGENT_REUSE.to_owned(),
            self.enable_agent_reuse.to_string(),
        );
        map.insert(
            keys::IDLE_TIMEOUT_MS.to_owned(),
            self.idle_timeout_ms.to_string(),
        );
        if let Some(max_pods) = self.max_pods {
            map.insert(keys::MAX_PODS.to_owned(), max_pods.to_string());
        }
        map
    }
}

#[cfg(test)]
mod tests {
    use super::ClusterProfile;
    use crate::resources::StringMap;

    #[test]
    fn settings_round_trip_through_properties() {
        let profile = ClusterProfile {
            auto_register_timeout_ms: 90_000,
            enable_agent_reuse: true,
            max_pods: Some(40),
            ..ClusterProfile::default()
        };
        assert_eq!(
            ClusterProfile::from_properties(&profile.to_properties()),
            profile
        );
    }

    #[test]
    fn blank_properties_take_the_plugin_defaults() {
        let profile = ClusterProfile::from_properties(&StringMap::new());
        assert_eq!(profile.auto_register_timeout_ms, 600_000);
        assert_eq!(profile.pending_pods_count, 10);
        assert!(!profile.enable_agent_reuse);
    }
}
