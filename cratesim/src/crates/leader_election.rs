//! kube-leader-election 0.44.0 (crates.io, kube 4), in its documented use (README and
//! `examples/shared-lease.rs` of the crate): call `try_acquire_or_renew()` every
//! `retry_period`, lead while the answer is `Acquired`, keep the last answer when the call
//! fails (the example logs the error and leaves its `is_leader` flag as it was), and
//! `step_down()` on a graceful stop.
//!
//! Parameters: `lease_ttl` is `[leader] lease_duration`; the period is `retry_period` (the
//! README's example renews a 15 s lease every 5 s).

use super::LEASE_NAME;
use crate::lease_store::NAMESPACE;
use crate::replica::ReplicaCtx;
use elasticsim::trace::Record;
use kube_leader_election::{LeaseLock, LeaseLockParams, LeaseLockResult};
use tokio::sync::oneshot;
use tokio::time::sleep;

pub(super) async fn run(ctx: ReplicaCtx, mut stop: oneshot::Receiver<()>) {
    let client = kube4::Client::new(ctx.service(), NAMESPACE);
    let leadership = LeaseLock::new(
        client,
        NAMESPACE,
        LeaseLockParams {
            holder_id: ctx.identity(),
            lease_name: LEASE_NAME.to_owned(),
            lease_ttl: ctx.timings.lease_duration,
        },
    );
    let replica = ctx.replica;
    ctx.emit(Record::ElectionStarted { replica });
    loop {
        tokio::select! {
            biased;
            _ = &mut stop => break,
            result = leadership.try_acquire_or_renew() => match result {
                Ok(LeaseLockResult::Acquired(_)) => ctx.set_leading(true),
                Ok(LeaseLockResult::NotAcquired(_)) => ctx.set_leading(false),
                Err(_) => {}
            },
        }
        tokio::select! {
            biased;
            _ = &mut stop => break,
            () = sleep(ctx.timings.retry_period) => {}
        }
    }
    // SIGTERM: stop acting, then give the Lease up.
    ctx.set_leading(false);
    let _ = leadership.step_down().await;
    ctx.emit(Record::ElectionStopped { replica });
}
