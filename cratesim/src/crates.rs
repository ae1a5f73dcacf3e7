//! The crates under test, each driven through its documented use. Which one a run drives is
//! the scenario's `[leader] lease_crate` (`elasticsim::scenario::LeaseCrate`, matched here
//! exhaustively).

mod leader_election;
mod lease_manager;

pub use elasticsim::scenario::LeaseCrate;

use crate::replica::ReplicaCtx;
use tokio::sync::oneshot;

/// The name of the Lease every replica competes for.
pub const LEASE_NAME: &str = "crate-under-test";

/// Run `lease_crate`'s election in replica `ctx` until `stop` fires (a graceful stop) or the
/// task is aborted (a crash).
pub async fn run(lease_crate: LeaseCrate, ctx: ReplicaCtx, stop: oneshot::Receiver<()>) {
    match lease_crate {
        LeaseCrate::KubeLeaseManager => lease_manager::run(ctx, stop).await,
        LeaseCrate::KubeLeaderElection => leader_election::run(ctx, stop).await,
    }
}
