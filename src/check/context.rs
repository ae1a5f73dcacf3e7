//! The recent-record ring that gives each violation its context lines.
//!
//! The ring stores record clones and formats them only when a violation asks, so `observe`
//! stays cheap on runs with millions of records.

use crate::trace::{Actor, Record};
use std::collections::VecDeque;

/// How many recent records the ring keeps.
pub(crate) const RING_RECORDS_MAX: usize = 4096;
/// How many context lines a violation gets.
pub(crate) const CONTEXT_LINES_MAX: usize = 8;

/// What an object string (`job:17`, `pod:p`, `agent:p`, `logical:3`, `replica:2`,
/// `module:m`) names. Pods and agents share a name space: the agent id is the pod name.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Subject {
    Job(u64),
    Logical(u64),
    Name(String),
    Replica(u32),
    Module(String),
}

impl Subject {
    fn parse(object: &str) -> Option<Subject> {
        let (prefix, value) = object.split_once(':')?;
        match prefix {
            "job" => value.parse().ok().map(Subject::Job),
            "logical" => value.parse().ok().map(Subject::Logical),
            "pod" | "agent" => Some(Subject::Name(value.to_owned())),
            "replica" => value.parse().ok().map(Subject::Replica),
            "module" => Some(Subject::Module(value.to_owned())),
            _ => None,
        }
    }
}

/// The objects one record touches.
#[derive(Default)]
struct Keys<'a> {
    jobs: [Option<u64>; 2],
    logical: Option<u64>,
    names: [Option<&'a str>; 2],
    replica: Option<u32>,
    module: Option<&'a str>,
}

fn actor_replica(actor: &Actor) -> Option<u32> {
    match actor {
        Actor::Replica(replica) => Some(*replica),
        _ => None,
    }
}

fn job(job: u64) -> Keys<'static> {
    Keys {
        jobs: [Some(job), None],
        ..Keys::default()
    }
}

fn name(name: &str) -> Keys<'_> {
    Keys {
        names: [Some(name), None],
        ..Keys::default()
    }
}

fn job_name(job: u64, name: &str) -> Keys<'_> {
    Keys {
        jobs: [Some(job), None],
        names: [Some(name), None],
        ..Keys::default()
    }
}

fn module(replica: u32, module: Option<&str>) -> Keys<'_> {
    Keys {
        replica: Some(replica),
        module,
        ..Keys::default()
    }
}

/// The objects a record touches (workload, GoCD and allocator records here).
fn keys(record: &Record) -> Keys<'_> {
    use Record as R;
    match record {
        R::JobScheduled { job, logical, .. } => Keys {
            jobs: [Some(*job), None],
            logical: Some(*logical),
            ..Keys::default()
        },
        R::CreateAgentQueued { job: id, .. }
        | R::CreateAgentStarted { job: id, .. }
        | R::CreateAgentExpired { job: id, .. }
        | R::JobCancelled { job: id } => job(*id),
        R::ShouldAssignWork { agent, job: id, .. }
        | R::JobAssigned { job: id, agent, .. }
        | R::JobCompleted { job: id, agent } => job_name(*id, agent),
        R::JobRescheduled { job, new_job, .. } => Keys {
            jobs: [Some(*job), Some(*new_job)],
            ..Keys::default()
        },
        R::AgentRegistered { agent, .. }
        | R::AgentRegistrationRefused { agent, .. }
        | R::AgentState { agent, .. }
        | R::AgentConfig { agent, .. }
        | R::AgentDeleted { agent } => name(agent),
        R::Decision { job, pod, .. } => Keys {
            jobs: [*job, None],
            names: [pod.as_deref(), None],
            ..Keys::default()
        },
        _ => cluster_keys(record),
    }
}

/// The objects a Kubernetes or leader-election record touches.
fn cluster_keys(record: &Record) -> Keys<'_> {
    use Record as R;
    match record {
        R::PodCreated {
            pod, job_label, by, ..
        } => Keys {
            jobs: [*job_label, None],
            names: [Some(pod), None],
            replica: actor_replica(by),
            ..Keys::default()
        },
        R::PodScheduled { pod, node } => Keys {
            names: [Some(pod), Some(node)],
            ..Keys::default()
        },
        R::PodUnschedulable { pod }
        | R::PodRunning { pod }
        | R::ContainerDied { pod }
        | R::ContainerRestarted { pod, .. }
        | R::PodPhase { pod, .. }
        | R::PodGone { pod } => name(pod),
        R::PodDeleted { pod, by } => Keys {
            names: [Some(pod), None],
            replica: actor_replica(by),
            ..Keys::default()
        },
        R::NodeLost { node } | R::NodeJoined { node } => name(node),
        R::LeaseWritten { by, .. } => Keys {
            replica: actor_replica(by),
            ..Keys::default()
        },
        R::ElectionStarted { replica }
        | R::ElectionStopped { replica }
        | R::LeaseHeld { replica, .. }
        | R::LeadingStarted { replica, .. }
        | R::LeadingStopped { replica, .. }
        | R::ReplicaStopped { replica }
        | R::ReplicaStarted { replica }
        | R::ReplicaPaused { replica }
        | R::ReplicaResumed { replica } => module(*replica, None),
        R::ModuleStarted {
            replica,
            module: name,
            ..
        }
        | R::ModuleStopped {
            replica,
            module: name,
        }
        | R::ModuleConfig {
            replica,
            module: name,
            ..
        }
        | R::ModuleAction {
            replica,
            module: name,
        } => module(*replica, Some(name)),
        _ => Keys::default(),
    }
}

fn touches(record: &Record, subject: &Subject) -> bool {
    let keys = keys(record);
    match subject {
        Subject::Job(job) => keys.jobs.contains(&Some(*job)),
        Subject::Logical(logical) => keys.logical == Some(*logical),
        Subject::Name(name) => keys.names.contains(&Some(name.as_str())),
        Subject::Replica(replica) => keys.replica == Some(*replica),
        Subject::Module(module) => keys.module == Some(module.as_str()),
    }
}

/// One trace line: `t=123.456s kind field=value …` (fields in name order).
pub(crate) fn format_line(t_ms: u64, record: &Record) -> String {
    let mut line = format!("t={}.{:03}s", t_ms / 1000, t_ms % 1000);
    let value = serde_json::to_value(record).expect("records serialize to JSON objects");
    let serde_json::Value::Object(fields) = value else {
        panic!("a record serializes to a JSON object, got {value}");
    };
    if let Some(serde_json::Value::String(kind)) = fields.get("kind") {
        line.push(' ');
        line.push_str(kind);
    }
    for (name, field) in &fields {
        match field {
            _ if name == "kind" => {}
            serde_json::Value::Null => {}
            serde_json::Value::String(text) if !text.contains(char::is_whitespace) => {
                line.push_str(&format!(" {name}={text}"));
            }
            other => line.push_str(&format!(" {name}={other}")),
        }
    }
    debug_assert!(
        line.starts_with("t="),
        "a context line starts with its time"
    );
    line
}

/// The last [`RING_RECORDS_MAX`] records (without `Sample`s), oldest first.
#[derive(Debug)]
pub(crate) struct Ring {
    records: VecDeque<(u64, Record)>,
}

/// Room for every record the ring keeps, from the start: grown by doubling, the ring copied
/// itself eleven times per run (a run of the leader swarm spent 1 % of its instructions there).
impl Default for Ring {
    fn default() -> Ring {
        Ring {
            records: VecDeque::with_capacity(RING_RECORDS_MAX),
        }
    }
}

impl Ring {
    /// Remember a copy of `record` (not a `Sample`), forgetting the oldest one when full.
    pub(crate) fn push(&mut self, t_ms: u64, record: &Record) {
        if !matches!(record, Record::Sample) {
            self.keep(t_ms, record.clone());
        }
    }

    /// Remember `record` itself, forgetting the oldest one when full, and lend it back.
    pub(crate) fn keep(&mut self, t_ms: u64, record: Record) -> &Record {
        debug_assert!(!matches!(record, Record::Sample), "samples are not context");
        if self.records.len() == RING_RECORDS_MAX {
            self.records.pop_front();
        }
        debug_assert!(
            self.records
                .back()
                .is_none_or(|(last_ms, _)| *last_ms <= t_ms),
            "records arrive in time order"
        );
        self.records.push_back((t_ms, record));
        &self.records.back().expect("just remembered").1
    }

    /// The record remembered last.
    pub(crate) fn last(&self) -> Option<&Record> {
        self.records.back().map(|(_, record)| record)
    }

    /// The last [`CONTEXT_LINES_MAX`] remembered records at or before `until_ms` that touch
    /// any of `objects`, oldest first, formatted.
    pub(crate) fn context(&self, objects: &[String], until_ms: u64) -> Vec<String> {
        let subjects: Vec<Subject> = objects.iter().filter_map(|o| Subject::parse(o)).collect();
        let mut lines: Vec<String> = self
            .records
            .iter()
            .rev()
            .filter(|(t_ms, _)| *t_ms <= until_ms)
            .filter(|(_, record)| subjects.iter().any(|subject| touches(record, subject)))
            .take(CONTEXT_LINES_MAX)
            .map(|(t_ms, record)| format_line(*t_ms, record))
            .collect();
        debug_assert!(lines.len() <= CONTEXT_LINES_MAX);
        lines.reverse();
        lines
    }
}
