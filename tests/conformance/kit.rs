//! Small helpers shared by the ported tests. This file ports no test of its own: the origins
//! (gocd/kubernetes-elastic-agents master and the PR #355 branch, file and test name) are named
//! in each module that uses it.

use elasticsim::allocator::{ClusterProfile, Policy};
use elasticsim::testkit::Driver;

/// Auto-register timeout in the plugin's default: 10 minutes.
pub const ART_MS: u64 = 10 * 60_000;

/// A driver for `policy` in process 2 whose calls are answered at once.
pub fn driver(policy: Policy, settings: ClusterProfile) -> Driver {
    let mut d = Driver::new(policy, 2, settings);
    d.auto_answer = true;
    d
}

/// Default cluster profile with reuse on or off.
pub fn settings(reuse: bool) -> ClusterProfile {
    ClusterProfile {
        enable_agent_reuse: reuse,
        ..ClusterProfile::default()
    }
}
