//! Conformance of the leader-election model with the real code's own tests: client-go's
//! elector tests and agentk's runner tests, each ported with its origin named in the file.
//! Every case runs against each variant it applies to.

#[path = "conformance/leader_driver.rs"]
mod driver;

#[path = "conformance/leader_client_go.rs"]
mod client_go;

#[path = "conformance/leader_agentk.rs"]
mod agentk;
