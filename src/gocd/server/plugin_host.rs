//! The server's plugin host: every call into the allocator goes through
//! [`Server::call_plugin`], which applies what the allocator asked for; the bounded pool of
//! create-agent threads, the single server-ping thread, job completion and the get-work
//! requests held while the plugin lists pods.

use super::{Server, ServerOut};
use crate::allocator::{
    Allocator, AllocatorInput, CallId, JobCompletionRequest, Outbox, PluginRequest, RequestId,
    ServerPingRequest,
};
use crate::gocd::database::Job;
use crate::gocd::registry::Registry;
use crate::ids::NameKey;
use crate::resources::KubeResult;
use crate::trace::Record;

/// Create-agent messages live `job_starvation_timeout` minus this in the queue.
const CREATE_AGENT_TTL_MARGIN_MS: u64 = 10_000;
/// Server-ping messages live the heartbeat interval minus this in the queue
/// (`ElasticAgentPluginService.heartbeat` posts with `elasticPluginHeartBeatInterval - 10000`).
const SERVER_PING_TTL_MARGIN_MS: u64 = 10_000;

/// A plugin request the allocator has not finished yet, by request id: what finishing it
/// frees.
pub(super) enum Pending {
    CreateAgent,
    JobCompletion,
    Ping,
    /// A get-work held while the plugin lists pods for should-assign-work; `hold` is the id
    /// the agent's request was held under.
    GetWork {
        agent: NameKey,
        uuid: u64,
        hold: u64,
    },
}

impl Server {
    /// Hand queued create-agent messages to free plugin threads; drop expired ones.
    pub(super) fn dispatch_creates(&mut self, now_ms: u64, out: &mut ServerOut) {
        if self.dispatching {
            return;
        }
        self.dispatching = true;
        let ttl = self
            .settings
            .job_starvation_timeout_ms
            .saturating_sub(CREATE_AGENT_TTL_MARGIN_MS);
        while let Some(memory) = self.memory.as_mut() {
            if memory.threads_busy >= self.settings.create_agent_threads {
                break;
            }
            let Some(queued) = memory.queue.pop_front() else {
                break;
            };
            if now_ms - queued.queued_ms > ttl {
                out.records.push(Record::CreateAgentExpired {
                    job: queued.job,
                    request: queued.request,
                });
                continue;
            }
            memory.threads_busy += 1;
            debug_assert!(
                memory.threads_busy <= self.settings.create_agent_threads,
                "more create-agent threads busy than the server has"
            );
            let previous = memory.pending.insert(queued.request, Pending::CreateAgent);
            debug_assert!(
                previous.is_none(),
                "request {} started twice",
                queued.request
            );
            out.records.push(Record::CreateAgentStarted {
                job: queued.job,
                request: queued.request,
            });
            let request = PluginRequest::CreateAgent(queued.body);
            let id = RequestId(queued.request);
            self.call_plugin(now_ms, AllocatorInput::Request { id, request }, out);
        }
        self.dispatching = false;
    }

    /// Hand `input` to the allocator with the registry as its `ServerApi`, then apply the
    /// outbox: calls go out, decisions become records, finished requests free their thread.
    /// Returns the allocator's synchronous answer, if the input asks for one.
    pub(super) fn call_plugin(
        &mut self,
        now_ms: u64,
        input: AllocatorInput<'_>,
        out: &mut ServerOut,
    ) -> Option<bool> {
        let Server { db, memory, .. } = self;
        let memory = memory.as_mut().expect("plugin called on a stopped server");
        let mut outbox = Outbox::default();
        let mut registry = Registry {
            agents: &mut db.agents,
            records: &mut out.records,
        };
        memory
            .allocator
            .handle(now_ms, input, &mut registry, &mut outbox);
        out.kube_calls.extend(outbox.calls);
        for decision in outbox.decisions {
            out.records.push(Record::Decision {
                job: decision.job_id,
                pod: decision.pod,
                code: decision.code.as_str().to_owned(),
                text: decision.text,
            });
        }
        for RequestId(id) in outbox.finished {
            match memory.pending.remove(&id) {
                Some(Pending::CreateAgent) => {
                    assert!(memory.threads_busy > 0, "thread accounting");
                    memory.threads_busy -= 1;
                }
                Some(Pending::Ping) => memory.ping_running = false,
                Some(Pending::JobCompletion) => memory.job_status.finished(),
                Some(Pending::GetWork { agent, uuid, hold }) => {
                    memory.resume.push((agent, uuid, hold));
                }
                None => panic!("allocator finished request {id} twice or never got it"),
            }
            out.records.push(Record::PluginRequestDone { request: id });
        }
        outbox.answer
    }

    /// The answer to one of the allocator's Kubernetes calls.
    pub(super) fn handle_kube(
        &mut self,
        now_ms: u64,
        call: CallId,
        result: KubeResult,
        out: &mut ServerOut,
    ) {
        self.call_plugin(now_ms, AllocatorInput::Kube { call, result }, out);
        self.deliver_job_completions(now_ms, out);
        self.resume_held(now_ms, out);
        self.start_queued_ping(now_ms, out);
        self.dispatch_creates(now_ms, out);
    }

    /// Start again the get-work requests whose listing is in; their replies are released.
    fn resume_held(&mut self, now_ms: u64, out: &mut ServerOut) {
        let Some(memory) = self.memory.as_mut() else {
            return;
        };
        for (agent, uuid, hold) in std::mem::take(&mut memory.resume) {
            if let Some(reply) = self.get_work(now_ms, &agent, uuid, Some(hold), out) {
                out.released.push((hold, reply));
            }
        }
    }

    /// The heartbeat posts a server-ping message; the single ping thread takes it now or
    /// when it is free, unless it expired in the queue first.
    pub(super) fn server_ping(&mut self, now_ms: u64, out: &mut ServerOut) {
        let memory = self.memory.as_mut().expect("checked by caller");
        memory.ping_queue.push_back(now_ms);
        self.start_queued_ping(now_ms, out);
    }

    /// Hand the oldest live server-ping message to the ping thread if it is free.
    fn start_queued_ping(&mut self, now_ms: u64, out: &mut ServerOut) {
        let ttl = self
            .settings
            .server_ping_interval_ms
            .saturating_sub(SERVER_PING_TTL_MARGIN_MS);
        let Some(memory) = self.memory.as_mut() else {
            return;
        };
        if memory.ping_running {
            return;
        }
        let live = loop {
            match memory.ping_queue.pop_front() {
                Some(posted_ms) if now_ms - posted_ms > ttl => {}
                other => break other,
            }
        };
        if live.is_none() {
            return;
        }
        memory.ping_running = true;
        memory.next_request += 1;
        let id = memory.next_request;
        let previous = memory.pending.insert(id, Pending::Ping);
        debug_assert!(previous.is_none(), "request ids are used once");
        out.records.push(Record::ServerPing);
        let request = PluginRequest::ServerPing(ServerPingRequest {
            all_cluster_profile_properties: vec![self.cluster_properties.clone()],
        });
        let input = AllocatorInput::Request {
            id: RequestId(id),
            request,
        };
        self.call_plugin(now_ms, input, out);
        self.dispatch_creates(now_ms, out);
    }

    /// Ask the plugin whether should-assign-work can be answered now for a job whose plan
    /// froze the cluster profile `properties` (the request carries the plan's copy, and the
    /// plugin's `getAgentInstancesFor` keys its map on it: gocd/kubernetes-elastic-agents
    /// @8128178, `KubernetesPlugin.handle` → `getAgentInstancesFor`); if not, the get-work is
    /// held under a new request id until the plugin finishes it.
    pub(super) fn ready_to_assign(
        &mut self,
        now_ms: u64,
        (agent, uuid): (&NameKey, u64),
        properties: &crate::resources::StringMap,
        hold: Option<u64>,
        out: &mut ServerOut,
    ) -> bool {
        let memory = self.memory.as_mut().expect("checked by caller");
        let request = memory.next_request + 1;
        let input = AllocatorInput::ReadyToAssign {
            id: RequestId(request),
            cluster_profile_properties: properties,
        };
        let ready = self
            .call_plugin(now_ms, input, out)
            .expect("ready-to-assign is answered");
        if !ready {
            let memory = self.memory.as_mut().expect("checked by caller");
            memory.next_request = request;
            debug_assert!(
                !memory.pending.contains_key(&request),
                "a held get-work takes a fresh request id"
            );
            let hold = hold.unwrap_or(request);
            let waiting = Pending::GetWork {
                agent: agent.clone(),
                uuid,
                hold,
            };
            memory.pending.insert(request, waiting);
        }
        ready
    }

    /// `ElasticAgentPluginService.jobCompleted`: job-completion for `job`, which ran on `id`.
    pub(super) fn send_job_completion(
        &mut self,
        now_ms: u64,
        id: &str,
        job: &Job,
        out: &mut ServerOut,
    ) {
        let memory = self.memory.as_mut().expect("checked");
        memory.last_try_ms.remove(&job.id);
        memory.next_request += 1;
        let request_id = memory.next_request;
        let previous = memory.pending.insert(request_id, Pending::JobCompletion);
        debug_assert!(previous.is_none(), "request ids are used once");
        let request = PluginRequest::JobCompletion(JobCompletionRequest {
            elastic_agent_id: id.to_owned(),
            job_identifier: Self::job_identifier(job),
            elastic_agent_profile_properties: job.profiles.elastic.clone(),
            cluster_profile_properties: job.profiles.cluster.clone(),
        });
        let input = AllocatorInput::Request {
            id: RequestId(request_id),
            request,
        };
        self.call_plugin(now_ms, input, out);
        self.dispatch_creates(now_ms, out);
    }
}
