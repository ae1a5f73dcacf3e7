//! The processor API the plugin calls back into (`go.processor.elastic-agents.*`), served from
//! the server's agent registry.

use super::database::AgentRecord;
use crate::allocator::{AgentMetadata, AgentState, BuildState, ConfigState, ServerApi};
use crate::ids::NameKey;
use crate::trace::{AgentRuntime, Record};
use std::collections::BTreeMap;

/// The v5 agent metadata of the registered agent `id`.
pub(super) fn metadata(id: &NameKey, agent: &AgentRecord) -> AgentMetadata {
    let (agent_state, build_state) = match agent.runtime {
        AgentRuntime::Idle => (AgentState::Idle, BuildState::Idle),
        AgentRuntime::Building if agent.cancelling.is_some() => {
            (AgentState::Building, BuildState::Cancelled)
        }
        AgentRuntime::Building => (AgentState::Building, BuildState::Building),
        AgentRuntime::Missing => (AgentState::Missing, BuildState::Unknown),
        AgentRuntime::LostContact => (AgentState::LostContact, BuildState::Unknown),
    };
    let config_state = if agent.enabled {
        ConfigState::Enabled
    } else {
        ConfigState::Disabled
    };
    AgentMetadata {
        agent_id: std::sync::Arc::clone(id.shared()),
        agent_state,
        build_state,
        config_state,
    }
}

/// `ServerApi` over the registry; records what the plugin does to agents.
pub(super) struct Registry<'a> {
    pub(super) agents: &'a mut BTreeMap<NameKey, AgentRecord>,
    pub(super) records: &'a mut Vec<Record>,
}

impl ServerApi for Registry<'_> {
    fn list_agents(&mut self) -> Vec<AgentMetadata> {
        self.agents
            .iter()
            .map(|(id, agent)| metadata(id, agent))
            .collect()
    }

    fn disable_agents(&mut self, agent_ids: &[String]) {
        for id in agent_ids {
            if let Some(agent) = self.agents.get_mut(id.as_str())
                && agent.enabled
            {
                agent.enabled = false;
                self.records.push(Record::AgentConfig {
                    agent: id.clone(),
                    enabled: false,
                });
            }
        }
    }

    fn delete_agents(&mut self, agent_ids: &[String]) {
        for id in agent_ids {
            if self.agents.remove(id.as_str()).is_some() {
                self.records
                    .push(Record::AgentDeleted { agent: id.clone() });
            }
        }
    }
}
