//! The real leader election: a client-go-faithful Lease elector and the GitLab agent's
//! leader-module runner, as pure state machines.
//!
//! Map of the code:
//!
//! | file | owns |
//! |---|---|
//! | [`elector`] | client-go `tools/leaderelection` on a Lease: acquire, renew, release |
//! | `module.rs` | one leader module's `Run`: start, periodic work, stop with latency |
//! | `agentk_v1.rs` | agentk's 2022 runner actor and module wrappers, defects included |
//! | `agentk_v2.rs` | agentk's 2023 rewrite (v2) and the fork's HEAD, defects included |
//! | `election_loop.rs` | the shipped design's always-running election (v2, HEAD, fixed) |
//! | `fixed.rs` | HEAD's design with every hazard it shows fixed |
//! | `replica.rs` | [`Replica`]: one agentk process, the single entry point |
//!
//! Nothing here reads a clock or draws randomness: every input carries the replica's own
//! local time (`now_local_ms`), timers are outputs the caller fires later, Kubernetes calls
//! are outputs whose answers come back as inputs, and random draws come through [`Random`].
//! `docs/policies.md` ("Leader-runner variants") describes the algorithm and the
//! variants.
//!
//! Contract for whoever drives a [`Replica`]:
//! 1. Feed [`Input::Start`] once, then configurations, timers and call answers, each with the
//!    replica's local time, never decreasing.
//! 2. Fire every [`TimerRequest`] once its local time is reached (timers may be due at the
//!    current time); a timer the replica no longer wants is ignored, so none is ever cancelled.
//! 3. Answer every [`KubeCall`] exactly once: with the server's reply, or with
//!    `Err(KubeError::Timeout)` when `timeout_ms` (local milliseconds) passes first. A call
//!    with `timeout_ms: None` may stay unanswered as long as the API hangs.
//! 4. A crash drops the `Replica`; a restart builds a new one (terms restart at 1).

pub(crate) mod elector;

mod agentk_v1;
mod agentk_v2;
mod election_loop;
mod fixed;
mod module;
mod replica;
mod runner;

#[cfg(test)]
pub(crate) mod tests;

pub(crate) use fixed::FIXED_ABLATIONS;
pub use replica::Replica;

use crate::resources::{KubeRequest, KubeResult};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// The only source of randomness: the caller's seeded stream (the shape every component
/// shares).
pub use crate::component::Random;

/// Identifies one Kubernetes call of one replica process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CallId(pub u64);

/// Identifies one timer of one replica process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TimerToken(pub u64);

/// Which leader runner a replica runs (`docs/policies.md`, last section). Each real variant
/// names the `pluralsh/kubernetes-agent` commit of its runner and wrapper and the client-go
/// version of its `go.mod` there.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
pub enum Variant {
    /// The GitLab agent's 2022 runner (`4438242a`) on client-go v0.24.3, defects included.
    #[serde(rename = "agentk-v1")]
    #[value(name = "agentk-v1")]
    AgentkV1,
    /// The June 2023 rewrite (`278235e8`, MR !1021) with runnability moved into the modules
    /// (`3d59282c`, MR !1024), on client-go v0.26.5, defects included.
    #[serde(rename = "agentk-v2")]
    #[value(name = "agentk-v2")]
    AgentkV2,
    /// Hypothetical build: the fork HEAD's runner and wrapper (`0a4bdc9d`: v2 plus `f3e3bce8`
    /// #434 and `ac5d3305` #437) with v2-era leader modules, on client-go v0.34.2. At
    /// `0a4bdc9d` no module factory produces leader modules; the last build that has them,
    /// `8daa08cc`, runs the same runner on client-go v0.27.2 ([`Variant::build`]).
    #[serde(rename = "agentk-head")]
    #[value(name = "agentk-head")]
    AgentkHead,
    /// `agentk-head` with agentk's one-line alternative fix: `ReleaseOnCancel: false` in
    /// `leader_runner.go`'s `LeaderElectionConfig` (no release on exit; a graceful stop hands
    /// over one lease duration after the last renewal). Not a shipped build.
    #[serde(rename = "agentk-head-no-release")]
    #[value(name = "agentk-head-no-release")]
    AgentkHeadNoRelease,
    /// The fork's HEAD design (`0a4bdc9d`, client-go v0.34.2: the election always runs, the
    /// modules decide runnability) plus fixes for the hazards it shows (`docs/fidelity.md`,
    /// "Variants"): H3 release judged on a fresh record, H4 term-checked OnStartedLeading,
    /// H5 one actor for runner and wrappers, H6 latest configuration on a (re)start, H8
    /// modules stopped before the release, and bounded acquire requests (`fixed.rs`).
    #[serde(rename = "fixed")]
    #[value(name = "fixed")]
    Fixed,
}

impl Variant {
    /// Every variant, in the order reports list them.
    pub const ALL: [Variant; 5] = [
        Variant::AgentkV1,
        Variant::AgentkV2,
        Variant::AgentkHead,
        Variant::AgentkHeadNoRelease,
        Variant::Fixed,
    ];

    /// The name used in scenarios, flags and reports.
    pub fn name(self) -> &'static str {
        match self {
            Variant::AgentkV1 => "agentk-v1",
            Variant::AgentkV2 => "agentk-v2",
            Variant::AgentkHead => "agentk-head",
            Variant::AgentkHeadNoRelease => "agentk-head-no-release",
            Variant::Fixed => "fixed",
        }
    }

    /// Every name, in [`Variant::ALL`] order (what `[leader] variant` accepts).
    pub(crate) const NAMES: [&'static str; 5] = [
        "agentk-v1",
        "agentk-v2",
        "agentk-head",
        "agentk-head-no-release",
        "fixed",
    ];

    /// The variant a scenario names, if any.
    pub fn from_name(name: &str) -> Option<Variant> {
        Variant::ALL
            .into_iter()
            .find(|variant| variant.name() == name)
    }

    /// Which real build a verdict of this variant describes, in one sentence (summaries
    /// print it under the verdict line).
    pub fn build(self) -> &'static str {
        match self {
            Variant::AgentkV1 => {
                "shipped: agentk 4438242a (MR !716, August 2022) on client-go v0.24.3, \
                 leader modules gitops and starboard_vulnerability"
            }
            Variant::AgentkV2 => {
                "shipped: agentk 278235e8 + 3d59282c (MR !1021, !1024, June 2023) on client-go \
                 v0.26.5"
            }
            Variant::AgentkHead => {
                "hypothetical: the fork HEAD 0a4bdc9d has no leader modules (every factory's \
                 IsProducingLeaderModules() is false); its runner and wrapper are those of \
                 8daa08cc, the last build with leader modules (flux, gitops manifestops, \
                 remote_development, starboard_vulnerability), which ran client-go v0.27.2: \
                 runner verdicts (H4, H5, H6, H8's order) describe 8daa08cc, client-go v0.34.2 \
                 ones (H3, a release bounded by RD) no shipped build"
            }
            Variant::AgentkHeadNoRelease => {
                "not a shipped build: agentk-head with ReleaseOnCancel: false (agentk's \
                 one-line alternative to fixing H8 in client-go)"
            }
            Variant::Fixed => {
                "not a shipped build: HEAD's design with the fixes of docs/policies.md \
                 (\"fixed\")"
            }
        }
    }

    /// True when the design runs the election only while some leader module is demanded
    /// (v1's goal); v2 and later, and `fixed` built on HEAD, always run it (`2f07ea9d`,
    /// "Always run leader election").
    pub fn promises_election_iff_demand(self) -> bool {
        match self {
            Variant::AgentkV1 => true,
            Variant::AgentkV2
            | Variant::AgentkHead
            | Variant::AgentkHeadNoRelease
            | Variant::Fixed => false,
        }
    }
}

/// How a leader module's `Run` reacts to its ctx (`[leader] module_behaviour`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ModuleBehaviour {
    /// What the real modules do: gitops and starboard_vulnerability (`4438242a`
    /// `internal/module/gitops/agent/module.go` and `starboard_vulnerability/agent/module.go`,
    /// still so at `3d59282c` `gitops/agent/manifestops/module.go`) loop `for config := range
    /// cfg` and ignore ctx; they return only when the config channel closes.
    #[default]
    #[serde(rename = "shipped")]
    Shipped,
    /// The `LeaderModule` contract (`internal/module/modagent/api.go`): return once ctx is done.
    #[serde(rename = "obeys-ctx")]
    ObeysCtx,
}

impl ModuleBehaviour {
    /// The name used in scenarios.
    pub(crate) fn name(self) -> &'static str {
        match self {
            ModuleBehaviour::Shipped => "shipped",
            ModuleBehaviour::ObeysCtx => "obeys-ctx",
        }
    }
}

/// The ctx a shipped module's workers run on (`[[leader.modules]] work_ctx`): whether the
/// module still acts between a cancel of its ctx and the close of its channel. Both shipped
/// modules loop `for config := range cfg`, so `Run` returns only when the channel closes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum WorkCtx {
    /// gitops at `4438242a` (`internal/module/gitops/agent/worker_manager.go`
    /// `startNewWorker`: `context.WithCancel(context.Background())`): its workers act on
    /// after a cancel, until the channel closes.
    #[default]
    #[serde(rename = "background")]
    Background,
    /// starboard_vulnerability at `4438242a` (`agent/module.go` `newWorkerHolder`:
    /// `context.WithCancel(ctx)` of `Run`'s ctx; `scheduler.go` `CronScheduler.Run` stops the
    /// cron on `<-ctx.Done()`): its worker stops with the cancel while `Run` reads on.
    #[serde(rename = "run")]
    Run,
}

impl WorkCtx {
    /// Both, as scenarios name them.
    pub(crate) const NAMES: [&'static str; 2] = ["background", "run"];

    /// The one a scenario names, if any.
    pub(crate) fn from_name(name: &str) -> Option<WorkCtx> {
        match name {
            "background" => Some(WorkCtx::Background),
            "run" => Some(WorkCtx::Run),
            _ => None,
        }
    }

    /// The name used in scenarios.
    pub(crate) fn name(self) -> &'static str {
        match self {
            WorkCtx::Background => "background",
            WorkCtx::Run => "run",
        }
    }
}

/// One leader module: it wants to run while its configuration flag is on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleSpec {
    /// The module's name, unique among the replica's modules.
    pub name: String,
    /// The configuration flag that makes the module runnable.
    pub runnable_when: String,
    /// The ctx its workers run on (matters only to the shipped modules).
    pub work_ctx: WorkCtx,
}

/// Everything a replica is configured with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaderSettings {
    /// `$POD_NAME`: the Lease holder identity.
    pub identity: String,
    /// `agent-<agentId>-lock`.
    pub lease_name: String,
    /// client-go's `LeaseDuration` (LD), in milliseconds; also the record's `leaseDurationSeconds`.
    pub lease_duration_ms: u64,
    /// client-go's `RenewDeadline` (RD), in milliseconds.
    pub renew_deadline_ms: u64,
    /// client-go's `RetryPeriod` (RP), in milliseconds.
    pub retry_period_ms: u64,
    /// The leader runner the replica runs.
    pub variant: Variant,
    /// The leader modules the runner starts while it leads and their flag is on.
    pub modules: Vec<ModuleSpec>,
    /// A module takes U[min, max] to return after being told to stop.
    pub module_stop_latency_ms_min: u64,
    /// The upper bound of a module's stop latency.
    pub module_stop_latency_ms_max: u64,
    /// Whether the modules obey their ctx or run the shipped `for config := range cfg` loop.
    #[serde(default)]
    pub module_behaviour: ModuleBehaviour,
    /// Fixes of `fixed` switched off (`FIXED_ABLATIONS`); ignored by the other variants.
    #[serde(default, skip_serializing_if = "crate::ablation::Ablations::is_empty")]
    pub ablations: crate::ablation::Ablations,
}

impl LeaderSettings {
    /// client-go's `NewLeaderElector` checks, plus the module list's.
    pub(crate) fn validate(&self) -> Result<(), SettingsError> {
        if self.identity.is_empty() {
            return Err(SettingsError::EmptyIdentity);
        }
        if self.lease_name.is_empty() {
            return Err(SettingsError::EmptyLeaseName);
        }
        if self.retry_period_ms == 0 {
            return Err(SettingsError::ZeroRetryPeriod);
        }
        if self.lease_duration_ms <= self.renew_deadline_ms {
            return Err(SettingsError::LeaseDurationNotAboveRenewDeadline);
        }
        // RenewDeadline must exceed JitterFactor (1.2) times RetryPeriod.
        if self.renew_deadline_ms * 10 <= self.retry_period_ms * 12 {
            return Err(SettingsError::RenewDeadlineTooShort);
        }
        if self.module_stop_latency_ms_min > self.module_stop_latency_ms_max {
            return Err(SettingsError::StopLatencyRangeInverted);
        }
        for (index, module) in self.modules.iter().enumerate() {
            if self.modules[..index]
                .iter()
                .any(|earlier| earlier.name == module.name)
            {
                return Err(SettingsError::DuplicateModule(module.name.clone()));
            }
        }
        Ok(())
    }
}

/// A configuration the elector or runner refuses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SettingsError {
    /// The holder identity is empty (client-go: "Lock identity is empty").
    EmptyIdentity,
    /// The Lease name is empty.
    EmptyLeaseName,
    /// The retry period is zero (client-go: "retryPeriod must be greater than zero").
    ZeroRetryPeriod,
    /// The lease duration does not exceed the renew deadline, as client-go requires.
    LeaseDurationNotAboveRenewDeadline,
    /// The renew deadline does not exceed `JitterFactor` (1.2) times the retry period.
    RenewDeadlineTooShort,
    /// The module stop latency's minimum exceeds its maximum.
    StopLatencyRangeInverted,
    /// Two leader modules share this name.
    DuplicateModule(String),
}

impl fmt::Display for SettingsError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SettingsError::EmptyIdentity => write!(formatter, "the identity must not be empty"),
            SettingsError::EmptyLeaseName => write!(formatter, "the lease name must not be empty"),
            SettingsError::ZeroRetryPeriod => write!(formatter, "retry_period must be positive"),
            SettingsError::LeaseDurationNotAboveRenewDeadline => {
                write!(
                    formatter,
                    "lease_duration must be greater than renew_deadline"
                )
            }
            SettingsError::RenewDeadlineTooShort => {
                write!(
                    formatter,
                    "renew_deadline must be greater than 1.2 x retry_period"
                )
            }
            SettingsError::StopLatencyRangeInverted => {
                write!(formatter, "module_stop_latency has min > max")
            }
            SettingsError::DuplicateModule(name) => {
                write!(formatter, "leader module {name:?} is declared twice")
            }
        }
    }
}

impl std::error::Error for SettingsError {}

/// What happens to a replica.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    /// The process started.
    Start,
    /// A timer the replica asked for is due.
    Timer(TimerToken),
    /// The answer to one Kubernetes call.
    Kube(CallId, KubeResult),
    /// The agent configuration; `version` grows along the configuration timeline.
    Config {
        /// The configuration's place on the configuration timeline.
        version: u64,
        /// The configuration flags by name: a module is runnable while its `runnable_when` is on.
        flags: BTreeMap<String, bool>,
    },
    /// SIGTERM: graceful shutdown as agentk's stager does it (the module stage stops first,
    /// then the leader runner). The process exits once [`Replica::has_exited`] is true.
    Shutdown,
}

/// A Kubernetes call the replica makes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KubeCall {
    /// Identifies the call; its answer comes back as [`Input::Kube`] with this id.
    pub call: CallId,
    /// The Lease read or write to send to the API server.
    pub request: KubeRequest,
    /// The client gives up after this many local milliseconds; `None`: it waits forever.
    pub timeout_ms: Option<u64>,
}

/// A timer the replica wants fired at a local time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimerRequest {
    /// When to fire, on the replica's local clock.
    pub at_local_ms: u64,
    /// What [`Input::Timer`] hands back when the timer fires.
    pub token: TimerToken,
}

/// An observable step of the replica; the world turns each into one trace record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Observation {
    /// A configuration reached the runner; `runnable_modules` names the leader modules it
    /// makes runnable (the demand the election must follow).
    ConfigReceived {
        /// The version of the configuration received.
        version: u64,
        /// The names of the leader modules the configuration makes runnable.
        runnable_modules: Vec<String>,
    },
    /// An elector `Run` started / returned (after its release, if any).
    ElectionStarted,
    /// The elector's `Run` returned (client-go's `OnStoppedLeading`), after its release if any.
    ElectionStopped,
    /// The elector acquired or renewed the Lease (a successful write) in `term`.
    LeaseHeld {
        /// The term the successful write was made in.
        term: u64,
    },
    /// The runner believes it leads because of the OnStartedLeading of `term` / stopped.
    LeadingStarted {
        /// The term whose `OnStartedLeading` the runner acted on.
        term: u64,
    },
    /// The runner no longer believes it leads in `term`.
    LeadingStopped {
        /// The term the runner stopped leading in.
        term: u64,
    },
    /// A leader module's `Run` started (under the runner's believed `term`) / returned.
    ModuleStarted {
        /// The name of the module that started.
        module: String,
        /// The term the runner believed it led in when it started the module.
        term: u64,
    },
    /// A leader module's `Run` returned.
    ModuleStopped {
        /// The name of the module that returned.
        module: String,
    },
    /// A module received configuration `version`.
    ModuleConfig {
        /// The name of the module that received the configuration.
        module: String,
        /// The configuration version the module received.
        version: u64,
    },
    /// The runner blocks until these modules' `Run` returned and handles nothing else
    /// meanwhile (no configuration, no election): agentk-v1's OnStoppedLeading waits in
    /// `holder.wait()`, which the shipped modules (ctx ignored) end only when a non-runnable
    /// configuration closes their channel; agentk-v2's runner blocks for ever in a send to a
    /// wrapper that is blocked sending to it (H5).
    RunnerBlocked {
        /// Where the runner waits, in the real code.
        waits_in: String,
        /// The modules it waits for.
        modules: Vec<String>,
    },
    /// A running module did one unit of its periodic work.
    ModuleAction {
        /// The name of the module that did the work.
        module: String,
    },
}

/// Everything one `handle` produced, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Output {
    /// The Kubernetes calls to make, each to be answered exactly once.
    pub calls: Vec<KubeCall>,
    /// The timers to fire once their local time is reached.
    pub timers: Vec<TimerRequest>,
    /// The observable steps, one trace record each.
    pub observations: Vec<Observation>,
}

/// What one step of a replica may touch: its clock reading, its random stream, its output and
/// its id sequence (call ids and timer tokens share it, so each is unique per process).
pub(crate) struct Context<'a> {
    pub(crate) now_local_ms: u64,
    pub(crate) random: &'a mut dyn Random,
    pub(crate) out: &'a mut Output,
    pub(crate) next_id: &'a mut u64,
}

impl Context<'_> {
    fn next_id(&mut self) -> u64 {
        *self.next_id += 1;
        *self.next_id
    }

    /// Issue a Kubernetes call.
    pub(crate) fn call(&mut self, request: KubeRequest, timeout_ms: Option<u64>) -> CallId {
        let call = CallId(self.next_id());
        self.out.calls.push(KubeCall {
            call,
            request,
            timeout_ms,
        });
        call
    }

    /// Ask for a timer at a local time no earlier than now.
    pub(crate) fn timer(&mut self, at_local_ms: u64) -> TimerToken {
        assert!(
            at_local_ms >= self.now_local_ms,
            "a timer must not be set in the past"
        );
        let token = TimerToken(self.next_id());
        self.out.timers.push(TimerRequest { at_local_ms, token });
        token
    }

    pub(crate) fn observe(&mut self, observation: Observation) {
        self.out.observations.push(observation);
    }

    /// A uniform draw in `[0, 1)`, checked.
    pub(crate) fn unit(&mut self) -> f64 {
        let draw = self.random.unit();
        assert!(
            (0.0..1.0).contains(&draw),
            "Random::unit must return a value in [0, 1)"
        );
        draw
    }

    /// A uniform integer duration in `[min, max]`.
    pub(crate) fn uniform_ms(&mut self, min_ms: u64, max_ms: u64) -> u64 {
        assert!(min_ms <= max_ms, "a uniform range needs min <= max");
        let span = (max_ms - min_ms + 1) as f64;
        min_ms + ((self.unit() * span) as u64).min(max_ms - min_ms)
    }
}
