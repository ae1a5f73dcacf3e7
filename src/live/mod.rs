//! The edges that touch the real world, outside every simulation, behind the default-on
//! `live` feature: recording from a real cluster (`record`) and serving the simulated API over
//! HTTP (`serve`). Only this module and [`crate::wall`] read the wall clock; only this module
//! uses tokio; each such place says why with an `#[allow]`.

#[cfg(feature = "live")]
pub(crate) mod leases;
#[cfg(feature = "live")]
pub(crate) mod objects;
#[cfg(feature = "live")]
pub(crate) mod patch;
#[cfg(feature = "live")]
mod publish;
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
#[cfg(feature = "live")]
mod write_routes;
#[cfg(feature = "live")]
pub(crate) mod writes;
