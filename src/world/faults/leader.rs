//! The faults of the `[leader]` replicas and their Lease.

use super::super::Sink;
use super::super::build::World;
use super::{Lasting, Started};
use crate::engine::SimTime;
use crate::scenario::{FaultKind, LeaderFault, ReplicaRef};

impl World {
    /// A fault of the replicas or their Lease starts. A replica's fault ends when the world
    /// signals it: a restart, a resume, a newer drift, a late callback delivered.
    pub(super) fn start_leader_fault(
        &mut self,
        now: SimTime,
        index: usize,
        fault: &LeaderFault,
        sink: &mut dyn Sink,
    ) -> Started {
        match fault {
            LeaderFault::LeaseDelete => {
                let deleted = self.delete_lease(now, sink);
                let target = if deleted { "lease" } else { "lease (absent)" }.to_owned();
                Started::Acting {
                    target,
                    lasting: Lasting::Instant,
                }
            }
            LeaderFault::ReplicaCrash {
                replica,
                downtime_ms,
            } => self.on_replica(index, *replica, |world, at| {
                let crashed = world.crash_replica(now, at, *downtime_ms, sink);
                crashed.then(|| format!("replica-{at}"))
            }),
            LeaderFault::ReplicaStop {
                replica,
                downtime_ms,
            } => self.on_replica(index, *replica, |world, at| {
                let stopped = world.stop_replica(now, at, *downtime_ms, sink);
                stopped.then(|| format!("replica-{at}"))
            }),
            LeaderFault::ReplicaPause { replica, for_ms } => {
                self.on_replica(index, *replica, |world, at| {
                    let paused = world.pause_replica(now, at, *for_ms, sink);
                    paused.then(|| format!("replica-{at}"))
                })
            }
            // A drift lasts until the safety phase ends or a newer drift of the same
            // replica replaces it: the monitors judge the fault budget on drifts in force.
            LeaderFault::ClockDrift { replica, rate } => {
                self.on_replica(index, *replica, |world, at| {
                    world.end_drift_faults(now, at, sink);
                    world.drift_replica(now, at, *rate);
                    Some(format!("replica-{at} rate={rate}"))
                })
            }
            // The fault lasts until the late callback is delivered (or the process dies):
            // the failover monitor holds its clock while it is in force.
            LeaderFault::CallbackDelay { replica, delay_ms } => {
                self.on_replica(index, *replica, |world, at| {
                    let delayed = world.leader.delay_next_started_leading(at, *delay_ms);
                    delayed.then(|| format!("replica-{at} +{delay_ms}ms"))
                })
            }
        }
    }

    /// A fault of one replica: `act` on the replica `replica` names now (its index), which
    /// gives the fault's target, or `None` when it finds nothing to hit. The fault lasts
    /// until the world signals its end.
    fn on_replica(
        &mut self,
        index: usize,
        replica: ReplicaRef,
        act: impl FnOnce(&mut World, u32) -> Option<String>,
    ) -> Started {
        let Some(replica_index) = self.replica_index(replica) else {
            return Started::NoTarget;
        };
        let Some(target) = act(self, replica_index) else {
            return Started::NoTarget;
        };
        self.faults.fault_targets.insert(index, replica_index);
        Started::Acting {
            target,
            lasting: Lasting::Signalled,
        }
    }

    /// Called when a replica restarts or resumes: its crash or pause fault ends.
    pub(in crate::world) fn end_replica_faults(
        &mut self,
        now: SimTime,
        replica: u32,
        sink: &mut dyn Sink,
    ) {
        self.end_faults(now, sink, |kind, target| {
            matches!(
                kind,
                FaultKind::Leader(
                    LeaderFault::ReplicaCrash { .. }
                        | LeaderFault::ReplicaStop { .. }
                        | LeaderFault::ReplicaPause { .. }
                )
            ) && target == Some(replica)
        });
    }

    /// `callback_delay` faults of `replica` end once no late callback is pending any more.
    pub(in crate::world) fn end_delivered_callback_delays(
        &mut self,
        now: SimTime,
        replica: u32,
        sink: &mut dyn Sink,
    ) {
        if self.leader.callback_delay_pending(replica) {
            return;
        }
        self.end_faults(now, sink, |kind, target| {
            matches!(kind, FaultKind::Leader(LeaderFault::CallbackDelay { .. }))
                && target == Some(replica)
        });
    }

    /// A new drift of `replica` replaces the one in force, which ends.
    fn end_drift_faults(&mut self, now: SimTime, replica: u32, sink: &mut dyn Sink) {
        self.end_faults(now, sink, |kind, target| {
            matches!(kind, FaultKind::Leader(LeaderFault::ClockDrift { .. }))
                && target == Some(replica)
        });
    }
}
