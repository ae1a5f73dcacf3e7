//! elasticsim: a deterministic simulation and chaos-testing harness for Kubernetes elastic
//! agents (the GoCD plugin's allocator) and lease-elected leader modules.
//!
//! `docs/architecture.md` is the map of the code: what each module owns and which module may
//! depend on which (an allow-list `cargo xtask tidy` enforces). From the bottom up:
//! [`resources`], [`engine`], [`ids`], [`wall`], [`interrupt`] and [`scenario`] depend on
//! nothing; [`ablation`] names the rules and fixes a run may switch off;
//! [`allocator`] and [`leader`] (the real logic under test) only on `resources`; then
//! [`trace`], [`kube`], [`gocd`], [`check`], [`report`], [`replay`]; [`world`] wires one run;
//! [`export`], [`run`], [`explore`], [`nightly`], [`live`] and [`cli`] sit on top.

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
pub mod export;
pub mod gocd;
pub mod ids;
pub mod interrupt;
pub mod kube;
#[deny(missing_docs)]
pub mod leader;
pub mod live;
pub mod mutants;
pub mod nightly;
pub mod replay;
pub mod report;
pub mod resources;
pub mod review;
pub mod run;
pub mod scenario;
pub mod trace;
pub mod wall;
pub mod world;
