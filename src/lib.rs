//! elasticsim: a deterministic simulation and chaos-testing harness for Kubernetes elastic
//! agents (the GoCD plugin's allocator) and lease-elected leader modules.
//!
//! `docs/architecture.md` is the map of the code: what each module owns and which module may
//! depend on which, in a table `cargo xtask tidy` enforces as an allow-list (that table, not
//! this comment, is the truth). Roughly from the bottom up: [`component`], [`ids`], [`wall`],
//! [`interrupt`] and [`ablation`] depend on no other module; [`resources`] on `ids`;
//! [`engine`] on `component`; the logic under test, [`allocator`] and [`leader`], on plain
//! data only (`resources`, `component`, `ablation`, and `ids` for the allocator); [`mutants`]
//! reads the ablations the two declare, and [`scenario`] depends on `ablation` and `mutants`;
//! then [`trace`], [`kube`], [`gocd`], [`check`], [`report`] and [`replay`]; [`world`] wires
//! one run; [`export`], [`run`], [`explore`], [`nightly`], [`review`], [`live`] and [`cli`]
//! sit on top.

#![warn(missing_docs)]
#![deny(unsafe_code)]

pub mod ablation;
#[deny(missing_docs)]
pub mod allocator;
pub mod check;
pub mod cli;
pub mod component;
pub mod engine;
pub mod explore;
pub(crate) mod export;
pub mod gocd;
pub(crate) mod ids;
pub mod interrupt;
pub mod kube;
#[deny(missing_docs)]
pub mod leader;
pub mod live;
pub(crate) mod mutants;
pub mod nightly;
pub mod replay;
pub mod report;
pub mod resources;
pub mod review;
pub mod run;
pub mod scenario;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
pub mod trace;
pub(crate) mod wall;
pub mod world;
