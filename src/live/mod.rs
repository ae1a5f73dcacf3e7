//! The edges that touch the real world, outside every simulation: the wall clock that times
//! runs (never read inside one), and — behind the default-on `live` feature — recording from a
//! real cluster and serving the simulated API over HTTP.

pub mod wall;
