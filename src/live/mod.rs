//! The edges that touch the real world, outside every simulation: the wall clock that times
//! runs (never read inside one), and — behind the default-on `live` feature — recording from a
//! real cluster (`record`) and serving the simulated API over HTTP (`serve`). Only this module
//! reads the wall clock or uses tokio; each such place says why with an `#[allow]`.

pub mod wall;

#[cfg(feature = "live")]
pub mod objects;
#[cfg(feature = "live")]
pub mod record;
#[cfg(feature = "live")]
pub mod router;
#[cfg(feature = "live")]
pub mod serve;
#[cfg(feature = "live")]
pub mod store;
#[cfg(feature = "live")]
mod watch;
