//! The harness's own identity of an agent config, independent of every policy's hash, so that
//! `no-cross-config-reuse` never shares a bug with the allocator it checks.

use crate::resources::StringMap;
use sha2::{Digest, Sha256};

/// 12 hex digits of SHA-256 over the elastic profile properties and the environment.
pub(crate) fn config_identity(
    elastic_profile_properties: &StringMap,
    environment: Option<&str>,
) -> String {
    let mut hasher = Sha256::new();
    for (key, value) in elastic_profile_properties {
        hasher.update(key.as_bytes());
        hasher.update([0]);
        hasher.update(value.as_bytes());
        hasher.update([0]);
    }
    hasher.update(b"\x01environment\x00");
    hasher.update(environment.unwrap_or("").as_bytes());
    let digest = hasher.finalize();
    digest[..6].iter().map(|b| format!("{b:02x}")).collect()
}
