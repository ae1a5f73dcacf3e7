//! elasticsim: a deterministic simulation and chaos-testing harness for Kubernetes elastic
//! agents (the GoCD plugin's allocator) and lease-elected leader modules.
//!
//! Map of the code (arrows point down only):
//!
//! | module | owns |
//! |---|---|
//! | [`ablation`] | named rules/fixes switched off: the mutants `--ablate` runs |
//! | [`resources`] | Kubernetes resource shapes and API calls (plain data) |
//! | [`allocator`] | the real allocator: v5 messages, cluster profile, policies (pure logic) |
//! | [`leader`] | the real leader election: lease elector, leader-module runner (pure logic) |
//! | [`engine`] | simulated time, event queue, seeded RNG streams, nodes and epochs, network |
//! | [`kube`] | the simulated Kubernetes API server and kubelets |
//! | [`gocd`] | the simulated GoCD server and go-agent processes |
//! | [`scenario`] | the scenario file: parse, validate, defaults |
//! | [`trace`] | trace records, fingerprint, `trace.jsonl` |
//! | [`check`] | invariant monitors fed by trace records |
//! | [`world`] | one run: wires models, allocator, faults and monitors on the engine |
//! | [`report`] | metrics, CSV, JSON and Markdown summaries, plots, index pages |
//! | [`explore`] | many seeds: sweeps, policy comparisons, shrinking, regressions |
//! | [`nightly`] | the nightly regression run: baselines, JUnit XML |
//! | [`replay`] | recorded pod traces: format, reading, workload derivation, export |

pub mod ablation;
pub mod allocator;
pub mod check;
pub mod cli;
pub mod engine;
pub mod explore;
pub mod gocd;
pub mod interrupt;
pub mod kube;
pub mod leader;
pub mod live;
pub mod nightly;
pub mod replay;
pub mod report;
pub mod resources;
pub mod run;
pub mod scenario;
pub mod trace;
pub mod world;
