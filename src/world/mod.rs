//! One run: the models, the allocator, faults and the leader replicas wired on the engine.
//!
//! [`World::run`] pops events until the end of the settle phase and hands every trace record
//! to a sink (fingerprint, monitors, metrics, `trace.jsonl` — see `crate::run`). The world
//! owns routing only: which node a message goes to, its latency, whether a partition or outage
//! drops or holds it, and whether its target's epoch is still current.

mod agent_table;
mod agents;
mod build;
mod calls;
mod elastic;
mod events;
mod faults;
mod layout;
mod leader;
mod plugin_pods;
mod requests;
mod run;
mod stepping;
mod swarm;

pub use build::{RunSettings, World, WorldError};
#[cfg(test)]
pub(crate) use leader::observation_record;
pub(crate) use swarm::seed_selection;

/// Receives every trace record of a run, in order.
pub trait Sink {
    /// Take record `record` emitted at simulated time `t_ms` by node `node`.
    fn record(&mut self, t_ms: u64, node: &str, record: &crate::trace::Record);

    /// [`Sink::record`], given the record to keep: a sink that stores records (the monitors'
    /// context ring) keeps this one instead of a copy. The world emits every record so.
    fn record_owned(&mut self, t_ms: u64, node: &str, record: crate::trace::Record) {
        self.record(t_ms, node, &record);
    }
}
