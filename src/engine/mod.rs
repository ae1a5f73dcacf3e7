//! The discrete-event engine: simulated time, the event queue, seeded random streams, node
//! epochs and network partitions. Nothing here knows about GoCD, Kubernetes or leases.
//!
//! Time jumps straight to the next event: an idle simulated hour costs nothing. Ties are
//! broken by insertion sequence, never by addresses; randomness comes only from named streams
//! derived from the run seed, so turning one concern on (a fault) does not shift another's
//! draws (job arrivals).

mod network;
mod nodes;
mod queue;
mod rng;
mod time;

pub(crate) use network::{GroupMask, Partitions};
pub use nodes::{Epoch, NodeId, Nodes};
pub use queue::Queue;
pub use rng::{Stream, StreamId};
pub use time::SimTime;
