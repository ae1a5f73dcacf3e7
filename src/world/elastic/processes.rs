//! The go-agent processes of the elastic side: started and killed with their pod's
//! container, fed their timers and replies, and the get-work requests the server holds for
//! them. The world carries their requests and replies over the agents↔gocd link.

use super::Elastic;
use crate::allocator::pod_spec::keys;
use crate::component::{Component, Random};
use crate::engine::SimTime;
use crate::gocd::{AgentAction, AgentInput, GoAgent, Registration};
use crate::scenario::Range;

impl Elastic {
    /// The container of pod `uid` (named `name`) started: its go-agent process starts with
    /// the pod's auto-register environment and a fresh uuid, and boots for a time drawn from
    /// `boot` before it registers. The new incarnation and what the process wants done.
    pub(in crate::world) fn start_agent(
        &mut self,
        now: SimTime,
        uid: u64,
        name: &str,
        boot: Range,
    ) -> (u32, Vec<AgentAction>) {
        let pod = self
            .kube
            .pod(name)
            .expect("a started container belongs to a pod");
        let key = pod
            .env
            .get(keys::ENV_AUTO_REGISTER_KEY)
            .cloned()
            .unwrap_or_default();
        let elastic_agent_id = pod
            .env
            .get(keys::ENV_ELASTIC_AGENT_ID)
            .map_or(name, String::as_str);
        let environment = pod.env.get(keys::ENV_AUTO_REGISTER_ENVIRONMENT).cloned();
        let (id, elastic_agent_id) = self.agent_ids.number(elastic_agent_id);
        let registration = Registration {
            elastic_agent_id,
            key,
            environment,
        };
        let uuid = self.random_agents.next_u64();
        let boot_ms = crate::world::build::draw(&mut self.random_agent_boot, boot);
        let mut agent = GoAgent::new(id, uuid, registration);
        let mut actions = std::mem::take(&mut self.agent_actions);
        let input = AgentInput::Start { boot_ms };
        agent.handle(now.as_ms(), input, &mut self.random_agents, &mut actions);
        let incarnation = self.agents.start(uid, agent);
        (incarnation, actions)
    }

    /// The container died or the pod is gone: the process goes, and everything addressed to
    /// it is stale from now on.
    pub(in crate::world) fn kill_agent(&mut self, uid: u64) {
        self.agents.kill(uid);
    }

    /// Hand `input` (a timer, a reply) to the go-agent of `uid`: what it wants done, or
    /// `None` if `incarnation` is no longer the one running.
    pub(in crate::world) fn agent_input(
        &mut self,
        now: SimTime,
        uid: u64,
        incarnation: u32,
        input: AgentInput,
    ) -> Option<Vec<AgentAction>> {
        let agent = self.agents.current_mut(uid, incarnation)?;
        // Every timer of a running process is queued and none is dropped, so the one popping
        // now is the earliest not fired: the process's next deadline.
        debug_assert!(
            !matches!(input, AgentInput::Timer(_)) || agent.next_deadline() == Some(now.as_ms()),
            "go-agent {uid}: next deadline {:?} when {input:?} fires at {now}",
            agent.next_deadline()
        );
        let mut actions = std::mem::take(&mut self.agent_actions);
        agent.handle(now.as_ms(), input, &mut self.random_agents, &mut actions);
        Some(actions)
    }

    /// The emptied action buffer comes back for the next event (agents act on most events of
    /// a run, and a fresh vector each time was an allocation each).
    pub(in crate::world) fn recycle_actions(&mut self, actions: Vec<AgentAction>) {
        debug_assert!(actions.is_empty(), "every action was carried out");
        self.agent_actions = actions;
    }

    /// The server holds the get-work request of `uid`'s `incarnation` under `hold`.
    pub(in crate::world) fn hold_get_work(&mut self, hold: u64, uid: u64, incarnation: u32) {
        let previous = self.held_get_work.insert(hold, (uid, incarnation));
        assert!(previous.is_none(), "hold ids are fresh within a process");
    }

    /// The server answers the get-work request it held under `hold`: whose it was (the
    /// agent's uid and incarnation).
    pub(in crate::world) fn release_get_work(&mut self, hold: u64) -> (u64, u32) {
        self.held_get_work
            .remove(&hold)
            .expect("the server releases what it held")
    }
}
