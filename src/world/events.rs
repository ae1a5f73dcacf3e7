//! The world's event vocabulary.

use crate::engine::Epoch;
use crate::gocd::{AgentRequest, AgentTimer, RequestKind, ServerReply, ServerTimer};
use crate::kube::KubeTimer;
use crate::leader::TimerToken;

/// Everything that can happen at an instant.
#[derive(Debug)]
pub(super) enum Event {
    /// A planned workload job arrives (index into the arrivals table); the next planned one
    /// is queued when this one pops.
    Arrival {
        index: usize,
    },
    /// An arrival queued on its own: a job-burst fault's jobs, or one held while the server
    /// was down and delivered at its restart.
    SingleArrival {
        index: usize,
    },
    /// A server timer of process `epoch`.
    Server {
        epoch: Epoch,
        timer: ServerTimer,
    },
    /// The crashed server process comes back.
    ServerRestart,
    /// A Kubernetes call reaches the API server.
    KubeArrive {
        call: u64,
    },
    /// Its answer reaches the client.
    KubeReturn {
        call: u64,
    },
    /// The client gives up waiting.
    KubeTimeout {
        call: u64,
    },
    /// Replica `replica`'s call without a timeout checks its connection's HTTP/2 dead-peer
    /// deadline.
    KubeDeadPeer {
        call: u64,
        replica: u32,
    },
    /// The API server's own request timeout ends a call it held (`hang` outage): 504.
    KubeServerTimeout {
        call: u64,
    },
    Kubelet(KubeTimer),
    /// A go-agent timer of one container incarnation.
    AgentTimer {
        uid: u64,
        incarnation: u32,
        timer: AgentTimer,
    },
    /// A go-agent request reaches the server.
    AgentArrive {
        uid: u64,
        incarnation: u32,
        request: AgentRequest,
    },
    /// The server's answer (or a failure) reaches the go-agent.
    AgentReply {
        uid: u64,
        incarnation: u32,
        kind: RequestKind,
        reply: ServerReply,
    },
    /// A timer or a configuration reaches leader replica `replica` in process `epoch`.
    Replica {
        replica: u32,
        epoch: Epoch,
        delivery: ReplicaDelivery,
    },
    /// A crashed replica process comes back.
    ReplicaRestart {
        replica: u32,
    },
    /// A paused replica process resumes.
    ReplicaResume {
        replica: u32,
    },
    /// A `[[leader.config]]` entry takes effect.
    ConfigChange {
        index: usize,
    },
    FaultStart {
        index: usize,
    },
    FaultEnd {
        index: usize,
    },
    Sample,
    SafetyEnd,
    End,
}

/// What reaches a replica process ([`Event::Replica`]).
#[derive(Debug)]
pub(super) enum ReplicaDelivery {
    /// One of its timers, due at this local time.
    Timer { token: TimerToken, at_local_ms: u64 },
    /// A configuration version.
    Config { version: u64 },
}
