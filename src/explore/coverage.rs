//! The coverage signal a guided hunt steers by, read off the trace a run already makes:
//!
//! * transitions: for each job and each pod, the pair (previous decision code → decision
//!   code) of the allocator; for leader runs, per replica, (previous step → step) over its
//!   election, leading, module and process records;
//! * abstract states: at each such step, the code with a coarse picture of the world — pods
//!   by phase bucket, agents by state bucket, replicas leading and modules running, and which
//!   fault kinds are in force.
//!
//! A run's coverage is a set of such features (strings); a draw that adds one the hunt has
//! not seen goes into its corpus.

use crate::trace::{AgentRuntime, Record};
use crate::world::Sink;
use std::collections::{BTreeMap, BTreeSet};

/// Features seen in one run, and the state needed to derive them.
#[derive(Debug, Default)]
pub(crate) struct Coverage {
    features: BTreeSet<String>,
    job_code: BTreeMap<u64, String>,
    pod_code: BTreeMap<String, String>,
    replica_step: BTreeMap<u32, &'static str>,
    /// Pod name → 0 pending, 1 running, 2 ended.
    pods: BTreeMap<String, u8>,
    agents: BTreeMap<String, AgentRuntime>,
    faults: BTreeMap<u32, String>,
    leading: BTreeSet<u32>,
    modules: BTreeSet<(u32, String)>,
}

impl Coverage {
    /// The features of this run.
    pub(crate) fn features(self) -> BTreeSet<String> {
        self.features
    }

    fn state(&self) -> String {
        let mut pods = [0usize; 3];
        for phase in self.pods.values() {
            pods[usize::from(*phase)] += 1;
        }
        let mut agents = [0usize; 4];
        for state in self.agents.values() {
            let slot = match state {
                AgentRuntime::Idle => 0,
                AgentRuntime::Building => 1,
                AgentRuntime::Missing => 2,
                AgentRuntime::LostContact => 3,
            };
            agents[slot] += 1;
        }
        let faults: BTreeSet<&str> = self.faults.values().map(String::as_str).collect();
        let faults: Vec<&str> = faults.into_iter().collect();
        format!(
            "p{}.{}.{} a{}.{}.{}.{} l{} m{} f{}",
            bucket(pods[0]),
            bucket(pods[1]),
            bucket(pods[2]),
            bucket(agents[0]),
            bucket(agents[1]),
            bucket(agents[2]),
            bucket(agents[3]),
            bucket(self.leading.len()),
            bucket(self.modules.len()),
            faults.join("+")
        )
    }

    fn decision(&mut self, job: Option<u64>, pod: Option<&str>, code: &str) {
        let state = self.state();
        self.features.insert(format!("state {code} {state}"));
        if let Some(job) = job {
            let previous = self.job_code.insert(job, code.to_owned());
            let previous = previous.as_deref().unwrap_or("-");
            self.features.insert(format!("job {previous}>{code}"));
        }
        if let Some(pod) = pod {
            let previous = self.pod_code.insert(pod.to_owned(), code.to_owned());
            let previous = previous.as_deref().unwrap_or("-");
            self.features.insert(format!("pod {previous}>{code}"));
        }
    }

    fn leader_step(&mut self, replica: u32, step: &'static str) {
        let previous = self.replica_step.insert(replica, step).unwrap_or("-");
        let state = self.state();
        self.features.insert(format!("replica {previous}>{step}"));
        self.features.insert(format!("state {step} {state}"));
    }

    fn track(&mut self, record: &Record) {
        match record {
            Record::PodCreated { pod, .. } => {
                self.pods.insert(pod.clone(), 0);
            }
            Record::PodRunning { pod } => {
                self.pods.insert(pod.clone(), 1);
            }
            Record::PodPhase { pod, .. } => {
                self.pods.insert(pod.clone(), 2);
            }
            Record::PodDeleted { pod, .. } => {
                self.pods.remove(pod);
            }
            Record::AgentState { agent, state } => {
                self.agents.insert(agent.clone(), *state);
            }
            Record::AgentDeleted { agent } => {
                self.agents.remove(agent);
            }
            Record::FaultStarted { index, fault, .. } => {
                self.faults.insert(*index, fault.clone());
            }
            Record::FaultEnded { index, .. } => {
                self.faults.remove(index);
            }
            Record::LeadingStarted { replica, .. } => {
                self.leading.insert(*replica);
            }
            Record::LeadingStopped { replica, .. } | Record::ReplicaStopped { replica } => {
                self.leading.remove(replica);
                self.modules.retain(|(r, _)| r != replica);
            }
            Record::ModuleStarted {
                replica, module, ..
            } => {
                self.modules.insert((*replica, module.clone()));
            }
            Record::ModuleStopped { replica, module } => {
                self.modules.remove(&(*replica, module.clone()));
            }
            _ => {}
        }
    }
}

impl Sink for Coverage {
    fn record(&mut self, _t_ms: u64, _node: &str, record: &Record) {
        self.track(record);
        if let Record::Decision { job, pod, code, .. } = record {
            self.decision(*job, pod.as_deref(), code);
        } else if let (Some(replica), Some(step)) = (record.replica(), leader_step(record)) {
            self.leader_step(replica, step);
        }
    }
}

/// The step a leader record stands for (None for records that are no step).
fn leader_step(record: &Record) -> Option<&'static str> {
    Some(match record {
        Record::ElectionStarted { .. } => "election-start",
        Record::ElectionStopped { .. } => "election-stop",
        Record::LeaseHeld { .. } => "lease-held",
        Record::LeadingStarted { .. } => "leading-start",
        Record::LeadingStopped { .. } => "leading-stop",
        Record::ModuleStarted { .. } => "module-start",
        Record::ModuleStopped { .. } => "module-stop",
        Record::ReplicaStopped { .. } => "replica-stop",
        Record::ReplicaStarted { .. } => "replica-start",
        Record::ReplicaPaused { .. } => "replica-pause",
        Record::ReplicaResumed { .. } => "replica-resume",
        _ => return None,
    })
}

/// 0, 1, 2, 3-4, 5-8, 9+ as a short label.
fn bucket(count: usize) -> &'static str {
    match count {
        0 => "0",
        1 => "1",
        2 => "2",
        3..=4 => "4",
        5..=8 => "8",
        _ => "9+",
    }
}

#[cfg(test)]
mod tests {
    use super::Coverage;
    use crate::trace::Record;
    use crate::world::Sink;

    fn decision(job: u64, pod: &str, code: &str) -> Record {
        Record::Decision {
            job: Some(job),
            pod: Some(pod.to_owned()),
            code: code.to_owned(),
            text: String::new(),
        }
    }

    #[test]
    fn transitions_and_states_are_features() {
        let mut coverage = Coverage::default();
        coverage.record(0, "h", &decision(1, "p", "create"));
        let fault = Record::FaultStarted {
            index: 0,
            fault: "api_outage".to_owned(),
            target: String::new(),
        };
        coverage.record(1, "h", &fault);
        coverage.record(2, "h", &decision(1, "p", "assign-yes"));
        let features = coverage.features();
        assert!(features.contains("job ->create"), "{features:?}");
        assert!(features.contains("job create>assign-yes"), "{features:?}");
        assert!(features.contains("pod create>assign-yes"), "{features:?}");
        assert!(
            features
                .iter()
                .any(|f| f.starts_with("state assign-yes") && f.ends_with("fapi_outage")),
            "{features:?}"
        );
    }
}
