//! kube-lease-manager 0.13.1 (crates.io, kube 5), in its "fully automated" use
//! (`src/lib.rs` of the crate, section "Fully automated way"): build a `LeaseManager`, call
//! `watch()`, act while the channel says `true`; drop the channel to release the Lease.
//!
//! Parameters: `duration` is `[leader] lease_duration`, `grace` (how long before expiry the
//! holder renews) is `lease_duration - renew_deadline`, both in whole seconds (the crate takes
//! seconds). A build that fails (the API server unreachable at start-up) is retried after
//! `retry_period`, as a controller's start-up loop would.

use super::LEASE_NAME;
use crate::lease_store::NAMESPACE;
use crate::replica::ReplicaCtx;
use elasticsim::trace::Record;
use kube_lease_manager::{LeaseManager, LeaseManagerBuilder};
use tokio::sync::oneshot;
use tokio::time::sleep;

pub(super) async fn run(ctx: ReplicaCtx, mut stop: oneshot::Receiver<()>) {
    let client = kube::Client::new(ctx.service(), NAMESPACE);
    let manager = tokio::select! {
        biased;
        _ = &mut stop => return,
        manager = build(&ctx, client) => manager,
    };
    let replica = ctx.replica;
    ctx.emit(Record::ElectionStarted { replica });
    let (mut leading, watcher) = manager.watch().await;
    ctx.register(watcher.abort_handle());
    loop {
        tokio::select! {
            biased;
            _ = &mut stop => break,
            changed = leading.changed() => {
                if changed.is_err() {
                    // The watcher ended (it exits only on a channel error): no more election.
                    ctx.set_leading(false);
                    ctx.emit(Record::ElectionStopped { replica });
                    return;
                }
                let now = *leading.borrow_and_update();
                ctx.set_leading(now);
            }
        }
    }
    // SIGTERM: stop acting, then close the channel: the watcher releases the Lease and ends.
    ctx.set_leading(false);
    drop(leading);
    let _ = watcher.await;
    ctx.emit(Record::ElectionStopped { replica });
}

/// `LeaseManagerBuilder::build`, retried every `retry_period` until it succeeds.
async fn build(ctx: &ReplicaCtx, client: kube::Client) -> LeaseManager {
    let timings = ctx.timings;
    let duration = timings.lease_duration.as_secs();
    let grace = duration - timings.renew_deadline.as_secs();
    loop {
        let built = LeaseManagerBuilder::new(client.clone(), LEASE_NAME)
            .with_namespace(NAMESPACE)
            .with_identity(ctx.identity())
            .with_duration(duration)
            .with_grace(grace)
            .build()
            .await;
        match built {
            Ok(manager) => return manager,
            Err(_) => sleep(timings.retry_period).await,
        }
    }
}
