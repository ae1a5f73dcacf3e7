//! The processor API the plugin calls back into (`go.processor.elastic-agents.*`), served from
//! the server's agent registry.

use super::agent_table::AgentTable;
use crate::allocator::{AgentList, AgentMetadata, ServerApi};
use crate::trace::Record;

/// `ServerApi` over the registry; records what the plugin does to agents.
pub(super) struct Registry<'a> {
    pub(super) agents: &'a mut AgentTable,
    pub(super) records: &'a mut Vec<Record>,
}

impl ServerApi for Registry<'_> {
    fn list_agents(&mut self) -> Vec<AgentMetadata> {
        self.agents.list()
    }

    fn agent_listing(&mut self) -> AgentList {
        self.agents.listing()
    }

    fn disable_agents(&mut self, agent_ids: &[String]) {
        for id in agent_ids {
            let was_enabled = self.agents.update(id.as_str(), |agent| {
                std::mem::replace(&mut agent.enabled, false)
            });
            if was_enabled == Some(true) {
                self.records.push(Record::AgentConfig {
                    agent: id.clone(),
                    enabled: false,
                });
            }
        }
    }

    fn delete_agents(&mut self, agent_ids: &[String]) {
        for id in agent_ids {
            if self.agents.remove(id) {
                self.records
                    .push(Record::AgentDeleted { agent: id.clone() });
            }
        }
    }
}
