//! The elastic-agent side of a run: the GoCD server (with the plugin inside), the simulated
//! Kubernetes API and kubelets, the go-agent processes, and the jobs still to arrive.

use super::agent_table::ProcessTable;
use super::build::Arrival;
use super::requests::RequestBound;
use crate::engine::{Stream, StreamId};
use crate::gocd::{AgentAction, AgentIds, GoAgent, Server};
use crate::kube::KubeApi;
use std::collections::BTreeMap;

/// The elastic-agent models of one run and the state the world keeps to route between them.
pub(super) struct Elastic {
    pub(super) server: Server,
    pub(super) kube: KubeApi,
    pub(super) agents: ProcessTable<GoAgent>,
    /// Elastic agent ids, numbered in first-seen order.
    pub(super) agent_ids: AgentIds,
    pub(super) arrivals: Vec<Arrival>,
    /// The sequence number reserved for `arrivals[0]`; planned arrival `i` has this plus `i`.
    pub(super) arrival_sequence: u64,
    /// How many of `arrivals` were planned before the run (job-burst faults append more).
    pub(super) planned_arrival_count: usize,
    /// A reused buffer for the actions of the go-agent handling the current event.
    pub(super) agent_actions: Vec<AgentAction>,
    /// Arrivals that came while the server was down, scheduled at its restart.
    pub(super) deferred: Vec<usize>,
    /// get-work requests the server holds, by hold id: the agent's uid and incarnation.
    pub(super) held_get_work: BTreeMap<u64, (u64, u32)>,
    /// `bounded-requests`: ends the run in a request storm.
    pub(super) request_bound: RequestBound,
    pub(super) random_kubelet: Stream,
    pub(super) random_server: Stream,
    pub(super) random_agents: Stream,
    /// Go-agent boot times, drawn from `[server] agent_boot` at each container start.
    pub(super) random_agent_boot: Stream,
}

impl Elastic {
    /// The models before the run, with the planned `arrivals`; `requests_per_job_max` bounds
    /// the server's requests per job (`bounded-requests`).
    pub(super) fn new(
        server: Server,
        kube: KubeApi,
        arrivals: Vec<Arrival>,
        requests_per_job_max: Option<u64>,
        seed: u64,
    ) -> Elastic {
        Elastic {
            server,
            kube,
            agents: ProcessTable::default(),
            agent_ids: AgentIds::default(),
            planned_arrival_count: arrivals.len(),
            arrivals,
            arrival_sequence: 0,
            agent_actions: Vec::new(),
            deferred: Vec::new(),
            held_get_work: BTreeMap::new(),
            request_bound: RequestBound::new(requests_per_job_max),
            random_kubelet: Stream::new(seed, StreamId::Kubelet),
            random_server: Stream::new(seed, StreamId::Server),
            random_agents: Stream::new(seed, StreamId::Agents),
            random_agent_boot: Stream::new(seed, StreamId::AgentBoot),
        }
    }
}
