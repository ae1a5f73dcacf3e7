//! client-go's `tools/leaderelection` on a Lease lock (`docs/policies.md`), one `Run` at a time.
//!
//! A `Run` acquires (an attempt every RP·U[1, 2.2), measured from the end of the previous
//! one), then renews: a cycle every RP after the previous cycle ends, each cycle polling every
//! RP until the renew deadline RD. When a cycle fails, or the run is cancelled, it releases
//! the Lease if it still believes it holds it (`ReleaseOnCancel`), then returns, which is
//! client-go's always-called `OnStoppedLeading`.
//!
//! Expiry is judged on the candidate's own clock: the time it last *observed the record
//! change*, plus the lease duration. The record's `renewTime` is never compared with anything.
//! Writes are compare-and-swap on the resourceVersion cached from the last Get/Create/Update.
//!
//! Version knobs ([`ElectorSettings`]): client-go v0.24.3 (agentk-v1) takes the takeover
//! duration from its own configuration and releases without a timeout; v0.27+ reads the
//! record's `leaseDurationSeconds` and v0.31+ bounds the release by RD. The fixed runner also
//! asks the elector to wait, after a lost term, until the modules have stopped before it
//! releases ([`ElectorEvent::LeadershipLost`]).

use super::{CallId, Context, TimerToken};
use crate::resources::{KubeError, KubeReply, KubeRequest, KubeResult, LeaseSpec};

/// Where the takeover rule (b.4 d) takes the lease duration from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TakeoverDuration {
    /// The candidate's own configured LD (client-go before v0.27).
    Configured,
    /// The record's `leaseDurationSeconds` (client-go v0.27+, k/k#114872).
    Record,
}

/// How the renew loop's `PollImmediateUntil(RP, …)` ticks after its immediate attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PollTicker {
    /// apimachinery v0.24.3 (`wait.poller`): the ticker starts when the immediate attempt
    /// returns, and a tick that falls while an attempt runs is dropped (the poller's send is
    /// non-blocking). Attempts of 2.5 s with RP 2 s start at 0, 4.5 and 8.5 s.
    StartsAfterImmediate,
    /// Newer apimachinery: the ticker starts with the cycle and a tick that fell during an
    /// attempt is kept and fires as soon as the attempt returns.
    StartsWithCycle,
}

/// What `release()` reads before its write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReleaseRead {
    /// Nothing: the write carries the cached resourceVersion (client-go before v0.34). A
    /// version gone stale (a renewal answered after the term ended) gets 409 and leaves the
    /// Lease naming us.
    Nothing,
    /// A Get refreshes the resourceVersion, but whether we lead is decided from the cached
    /// observed record (client-go v0.34+): a slow release can wipe the next holder's
    /// Lease (H3).
    RefreshVersion,
    /// A Get refreshes the version and the release goes out only while the Lease still names
    /// us (the `fixed` variant; closes H3).
    RefreshAndCheckHolder,
}

/// One elector's configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ElectorSettings {
    /// The holder identity written to the Lease (client-go's `ResourceLockConfig.Identity`).
    pub identity: String,
    /// The name of the Lease object used as the lock.
    pub lease_name: String,
    /// `LeaseDuration` (LD): how long after the last observed change a candidate may take over.
    pub lease_duration_ms: u64,
    /// `RenewDeadline` (RD): how long the leader keeps trying to renew before it gives up.
    pub renew_deadline_ms: u64,
    /// `RetryPeriod` (RP): the wait between acquire or renew attempts.
    pub retry_period_ms: u64,
    /// Where the takeover rule reads the lease duration from (depends on the client-go version).
    pub takeover_duration: TakeoverDuration,
    /// Timeout of the release write: `None` as in v0.24 (`context.TODO()`), RD from v0.31.
    pub release_timeout_ms: Option<u64>,
    /// What `release()` reads before its write (depends on the client-go version).
    pub release_read: ReleaseRead,
    /// Timeout of each acquire request: `None` as in client-go (only the Run's ctx), so a
    /// blackholed request wedges the candidate; the fixed runner bounds it.
    pub acquire_timeout_ms: Option<u64>,
    /// client-go's `ReleaseOnCancel`: on leaving a term, write holder "" so a follower takes
    /// over at its next try; without it the Lease expires one lease duration after the last
    /// renewal.
    pub release_on_cancel: bool,
    /// After a lost or cancelled term, emit [`ElectorEvent::LeadershipLost`] and release only
    /// once `Elector::acknowledge_modules_stopped` is called.
    pub release_after_acknowledgement: bool,
    /// Start every `Run` with no observed record (a new client-go `LeaderElector` per run, as
    /// agentk v1 builds it) instead of reusing the last observation.
    pub forget_observations_between_runs: bool,
    /// The renew loop's poll ticker.
    pub poll_ticker: PollTicker,
}

/// What the elector tells its owner (the callbacks of client-go, as outputs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ElectorEvent {
    /// `go OnStartedLeading(ctx2)`: a new term began.
    StartedLeading {
        /// The new term's number, counted from 1 in this elector.
        term: u64,
    },
    /// A successful acquire or renew write in `term`.
    LeaseHeld {
        /// The term the write was made in.
        term: u64,
    },
    /// Only with `release_after_acknowledgement`: the term ended; stop the guarded work, then
    /// call `Elector::acknowledge_modules_stopped`.
    LeadershipLost {
        /// The term that ended.
        term: u64,
    },
    /// `Run` returned (`OnStoppedLeading`, always called); `led_term` if it led.
    RunReturned {
        /// The term this run led, `None` if it never acquired the Lease.
        led_term: Option<u64>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    Acquiring,
    /// `cycle` is the running poll cycle, `None` between cycles.
    Renewing {
        term: u64,
        cycle: Option<Cycle>,
    },
    AwaitingAcknowledgement {
        term: u64,
    },
    /// `reading`: the release's Get is in flight (see `release_read`).
    Releasing {
        term: u64,
        reading: bool,
    },
}

/// One `PollImmediateUntil(RP, …, deadline)` of the renew loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cycle {
    start_ms: u64,
    deadline_ms: u64,
    /// With [`PollTicker::StartsAfterImmediate`]: when the immediate attempt returned.
    ticker_start_ms: Option<u64>,
}

/// One `tryAcquireOrRenew` in flight.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Attempt {
    /// `now` read before the Get (b.4: `now_k`).
    now_ms: u64,
    /// `now` when the attempt started; drives the poll ticker.
    started_ms: u64,
    call: CallId,
    stage: Stage,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Stage {
    Get,
    Write(LeaseSpec),
}

/// client-go's `LeaderElector`.
#[derive(Clone, Debug)]
pub(crate) struct Elector {
    settings: ElectorSettings,
    phase: Phase,
    attempt: Option<Attempt>,
    /// Retry, poll tick or next renew cycle.
    wake: Option<TimerToken>,
    /// The running renew cycle's deadline.
    deadline: Option<TimerToken>,
    release_call: Option<CallId>,
    /// With a release that reads first (v0.34+): the local time its one RD timeout ends;
    /// the Get and the Update share it (`release()`'s single `timeoutCtx`).
    release_deadline_ms: Option<u64>,
    /// The record as last read (client-go compares raw bytes: any field change counts).
    observed_raw: Option<LeaseSpec>,
    /// `observedRecord`: as last read or written by this elector.
    observed_record: Option<LeaseSpec>,
    /// `observedTime`, local.
    observed_time_ms: u64,
    /// The resourceVersion the next Update sends.
    cached_resource_version: Option<u64>,
    terms_led: u64,
}

impl Elector {
    /// An elector with `settings` that is not running and has observed no record.
    pub(crate) fn new(settings: ElectorSettings) -> Elector {
        assert!(settings.retry_period_ms > 0, "the retry period is above 0");
        assert!(
            settings.lease_duration_ms > settings.renew_deadline_ms,
            "the lease outlasts the renew deadline"
        );
        Elector {
            settings,
            phase: Phase::Idle,
            attempt: None,
            wake: None,
            deadline: None,
            release_call: None,
            release_deadline_ms: None,
            observed_raw: None,
            observed_record: None,
            observed_time_ms: 0,
            cached_resource_version: None,
            terms_led: 0,
        }
    }

    /// True from `run` until `RunReturned`.
    pub(crate) fn is_running(&self) -> bool {
        self.phase != Phase::Idle
    }

    /// The term being renewed, until the renew loop ends.
    pub(crate) fn leading_term(&self) -> Option<u64> {
        match self.phase {
            Phase::Renewing { term, .. } => Some(term),
            _ => None,
        }
    }

    /// `IsLeader()`: judged on the observed record only.
    pub(crate) fn is_leader(&self) -> bool {
        self.observed_record
            .as_ref()
            .is_some_and(|record| record.holder_identity == self.settings.identity)
    }

    /// `go Run(ctx)`: start acquiring at once.
    pub(crate) fn run(&mut self, cx: &mut Context) {
        assert_eq!(self.phase, Phase::Idle, "an elector runs one Run at a time");
        if self.settings.forget_observations_between_runs {
            self.observed_raw = None;
            self.observed_record = None;
            self.cached_resource_version = None;
        }
        self.phase = Phase::Acquiring;
        self.start_attempt(cx);
    }

    /// Cancel the Run's ctx: in-flight calls are abandoned, a leader releases.
    pub(crate) fn cancel(&mut self, cx: &mut Context, events: &mut Vec<ElectorEvent>) {
        match self.phase {
            Phase::Idle | Phase::AwaitingAcknowledgement { .. } | Phase::Releasing { .. } => {}
            Phase::Acquiring => {
                self.abandon();
                self.finish(None, events);
            }
            Phase::Renewing { term, .. } => {
                self.abandon();
                self.end_term(term, cx, events);
            }
        }
    }

    /// The guarded work has stopped: release now (only after `LeadershipLost`).
    pub(crate) fn acknowledge_modules_stopped(
        &mut self,
        cx: &mut Context,
        events: &mut Vec<ElectorEvent>,
    ) {
        let Phase::AwaitingAcknowledgement { term } = self.phase else {
            panic!("acknowledge_modules_stopped without a pending LeadershipLost");
        };
        self.release(term, cx, events);
    }

    /// Handle a timer if it is this elector's; false if not (or no longer) wanted here.
    pub(crate) fn handle_timer(
        &mut self,
        token: TimerToken,
        cx: &mut Context,
        events: &mut Vec<ElectorEvent>,
    ) -> bool {
        if self.deadline == Some(token) {
            self.deadline = None;
            let Phase::Renewing {
                term,
                cycle: Some(_),
            } = self.phase
            else {
                panic!("a renew deadline is armed only during a renew cycle");
            };
            // PollImmediateUntil returns ErrWaitTimeout; the request in flight is cancelled.
            self.abandon();
            self.end_term(term, cx, events);
            return true;
        }
        if self.wake != Some(token) {
            return false;
        }
        self.wake = None;
        match self.phase {
            Phase::Acquiring => self.start_attempt(cx),
            Phase::Renewing { term, cycle: None } => {
                debug_assert!(self.attempt.is_none(), "no attempt between renew cycles");
                let cycle = Cycle {
                    start_ms: cx.now_local_ms,
                    deadline_ms: cx.now_local_ms + self.settings.renew_deadline_ms,
                    ticker_start_ms: None,
                };
                self.phase = Phase::Renewing {
                    term,
                    cycle: Some(cycle),
                };
                self.deadline = Some(cx.timer(cycle.deadline_ms));
                self.start_attempt(cx);
            }
            Phase::Renewing {
                term,
                cycle: Some(cycle),
            } if cycle.deadline_ms <= cx.now_local_ms => {
                // The wake came late (a pause, a faster clock): the poll's ctx is already
                // done, so PollImmediateUntil returns ErrWaitTimeout without a request.
                self.abandon();
                self.end_term(term, cx, events);
            }
            Phase::Renewing { cycle: Some(_), .. } => self.start_attempt(cx),
            phase => panic!("elector wake timer armed in phase {phase:?}"),
        }
        true
    }

    /// Handle a call answer if it is this elector's live call; false otherwise (answers to
    /// abandoned calls land here and are ignored).
    pub(crate) fn handle_kube(
        &mut self,
        call: CallId,
        result: KubeResult,
        cx: &mut Context,
        events: &mut Vec<ElectorEvent>,
    ) -> bool {
        if self.release_call == Some(call) {
            self.release_call = None;
            self.on_release_answer(result, cx, events);
            return true;
        }
        if self
            .attempt
            .as_ref()
            .is_none_or(|attempt| attempt.call != call)
        {
            return false;
        }
        if let Some(outcome) = self.on_attempt_answer(result, cx) {
            let attempt = self.attempt.take().expect("the attempt was matched above");
            self.on_attempt_done(outcome, attempt.started_ms, cx, events);
        }
        true
    }

    fn abandon(&mut self) {
        self.attempt = None;
        self.wake = None;
        self.deadline = None;
    }

    fn finish(&mut self, led_term: Option<u64>, events: &mut Vec<ElectorEvent>) {
        assert!(
            self.attempt.is_none(),
            "a returning Run has no attempt in flight"
        );
        assert!(
            self.release_call.is_none(),
            "a returning Run has no release in flight"
        );
        self.phase = Phase::Idle;
        self.wake = None;
        self.deadline = None;
        events.push(ElectorEvent::RunReturned { led_term });
    }

    /// The renew loop ended (deadline passed or ctx cancelled).
    fn end_term(&mut self, term: u64, cx: &mut Context, events: &mut Vec<ElectorEvent>) {
        if self.settings.release_after_acknowledgement {
            self.phase = Phase::AwaitingAcknowledgement { term };
            events.push(ElectorEvent::LeadershipLost { term });
        } else {
            self.release(term, cx, events);
        }
    }

    /// `release()`: write holder "" and LDs 1 with the cached resourceVersion, if the observed
    /// record still names us; the Run returns when it is answered.
    fn release(&mut self, term: u64, cx: &mut Context, events: &mut Vec<ElectorEvent>) {
        // `if le.config.ReleaseOnCancel { le.release() }` (client-go `renew`).
        if !self.settings.release_on_cancel {
            self.finish(Some(term), events);
            return;
        }
        // v0.34.2 `release()` Gets first and checks `IsLeader()` only after the Get (on the
        // cached record); before v0.34 it checks first and writes with the cached version.
        if self.settings.release_read != ReleaseRead::Nothing {
            let request = KubeRequest::GetLease {
                name: self.settings.lease_name.clone(),
            };
            self.release_deadline_ms = self
                .settings
                .release_timeout_ms
                .map(|timeout_ms| cx.now_local_ms + timeout_ms);
            self.release_call = Some(cx.call(request, self.settings.release_timeout_ms));
            self.phase = Phase::Releasing {
                term,
                reading: true,
            };
            return;
        }
        if !self.is_leader() {
            self.finish(Some(term), events);
            return;
        }
        let observed = self
            .observed_record
            .as_ref()
            .expect("is_leader implies a record");
        let transitions = observed.lease_transitions;
        let resource_version = self
            .cached_resource_version
            .expect("a held lease was read or written before");
        self.send_release(term, resource_version, transitions, cx);
    }

    /// The release write: holder "" and LDs 1, `transitions` kept.
    fn send_release(
        &mut self,
        term: u64,
        resource_version: u64,
        transitions: u32,
        cx: &mut Context,
    ) {
        let spec = LeaseSpec {
            holder_identity: String::new(),
            lease_duration_seconds: 1,
            acquire_time_ms: cx.now_local_ms,
            renew_time_ms: cx.now_local_ms,
            lease_transitions: transitions,
        };
        let request = KubeRequest::UpdateLease {
            name: self.settings.lease_name.clone(),
            spec,
            resource_version,
        };
        // After a Get, the Update has what is left of the release's one timeout.
        let timeout_ms = match self.release_deadline_ms.take() {
            Some(deadline_ms) => {
                assert!(
                    deadline_ms > cx.now_local_ms,
                    "a release write within its timeout"
                );
                Some(deadline_ms - cx.now_local_ms)
            }
            None => self.settings.release_timeout_ms,
        };
        self.release_call = Some(cx.call(request, timeout_ms));
        self.phase = Phase::Releasing {
            term,
            reading: false,
        };
    }

    fn on_release_answer(
        &mut self,
        result: KubeResult,
        cx: &mut Context,
        events: &mut Vec<ElectorEvent>,
    ) {
        let Phase::Releasing { term, reading } = self.phase else {
            panic!("a release call is live only while releasing");
        };
        if reading {
            // RefreshAndCheckHolder: release only a Lease that still names us, with its
            // current version. RefreshVersion (v0.34.2): `IsLeader()` on the cached record,
            // then the current version and the fresh record's transitions, whoever holds it.
            let check = self.settings.release_read == ReleaseRead::RefreshAndCheckHolder;
            let deadline_left = self
                .release_deadline_ms
                .is_none_or(|deadline_ms| deadline_ms > cx.now_local_ms);
            match result {
                Ok(KubeReply::Lease(lease))
                    if deadline_left
                        && if check {
                            lease.spec.holder_identity == self.settings.identity
                        } else {
                            self.is_leader()
                        } =>
                {
                    let transitions = lease.spec.lease_transitions;
                    self.send_release(term, lease.resource_version, transitions, cx);
                }
                _ => {
                    self.release_deadline_ms = None;
                    self.finish(Some(term), events);
                }
            }
            return;
        }
        if let Ok(KubeReply::Lease(lease)) = result {
            self.cached_resource_version = Some(lease.resource_version);
            self.observed_record = Some(lease.spec);
            self.observed_time_ms = cx.now_local_ms;
        }
        self.finish(Some(term), events);
    }

    /// The per-request timeout: the renew deadline bounds each request of a cycle; acquire
    /// requests have `acquire_timeout_ms`.
    fn request_timeout_ms(&self, now_ms: u64) -> Option<u64> {
        match self.phase {
            Phase::Renewing {
                cycle: Some(cycle), ..
            } => {
                assert!(
                    cycle.deadline_ms > now_ms,
                    "no request starts at the renew deadline"
                );
                Some(cycle.deadline_ms - now_ms)
            }
            Phase::Acquiring => self.settings.acquire_timeout_ms,
            phase => panic!("no tryAcquireOrRenew in phase {phase:?}"),
        }
    }

    /// `tryAcquireOrRenew`, step 1: read `now`, then Get.
    fn start_attempt(&mut self, cx: &mut Context) {
        assert!(self.attempt.is_none(), "one tryAcquireOrRenew at a time");
        let request = KubeRequest::GetLease {
            name: self.settings.lease_name.clone(),
        };
        let call = cx.call(request, self.request_timeout_ms(cx.now_local_ms));
        self.attempt = Some(Attempt {
            now_ms: cx.now_local_ms,
            started_ms: cx.now_local_ms,
            call,
            stage: Stage::Get,
        });
    }

    /// The record this elector writes at `now_ms` before corrections (b.3).
    fn own_record(&self, now_ms: u64) -> LeaseSpec {
        debug_assert!(
            self.settings.lease_duration_ms >= 1000,
            "a lease lasts whole seconds, at least one"
        );
        LeaseSpec {
            holder_identity: self.settings.identity.clone(),
            lease_duration_seconds: (self.settings.lease_duration_ms / 1000) as u32,
            acquire_time_ms: now_ms,
            renew_time_ms: now_ms,
            lease_transitions: 0,
        }
    }

    /// Advance the attempt; `Some(outcome)` when `tryAcquireOrRenew` returns.
    fn on_attempt_answer(&mut self, result: KubeResult, cx: &mut Context) -> Option<bool> {
        let attempt = self
            .attempt
            .as_ref()
            .expect("handle_kube matched a live attempt");
        let now_k_ms = attempt.now_ms;
        let stage = attempt.stage.clone();
        match (stage, result) {
            (Stage::Get, _) if self.renew_deadline_passed(cx.now_local_ms) => Some(false),
            (Stage::Get, Err(KubeError::NotFound)) => {
                let spec = self.own_record(now_k_ms);
                let request = KubeRequest::CreateLease {
                    name: self.settings.lease_name.clone(),
                    spec: spec.clone(),
                };
                self.send_write(request, spec, cx);
                None
            }
            (Stage::Get, Ok(KubeReply::Lease(lease))) => {
                self.observe_read(&lease.spec, cx.now_local_ms);
                self.cached_resource_version = Some(lease.resource_version);
                let Some(spec) = self.correct_record(&lease.spec, now_k_ms) else {
                    return Some(false);
                };
                let request = KubeRequest::UpdateLease {
                    name: self.settings.lease_name.clone(),
                    spec: spec.clone(),
                    resource_version: lease.resource_version,
                };
                self.send_write(request, spec, cx);
                None
            }
            (Stage::Get, _) => Some(false),
            (Stage::Write(spec), Ok(KubeReply::Lease(lease))) => {
                debug_assert_eq!(
                    spec.holder_identity, self.settings.identity,
                    "an attempt writes its own record"
                );
                self.observed_record = Some(spec);
                self.observed_time_ms = cx.now_local_ms;
                self.cached_resource_version = Some(lease.resource_version);
                Some(true)
            }
            (Stage::Write(_), _) => Some(false),
        }
    }

    /// True if a renew cycle's deadline has passed: a request made now fails at once, because
    /// its ctx is done (the answer came late, after a pause or with a faster clock).
    fn renew_deadline_passed(&self, now_ms: u64) -> bool {
        matches!(
            self.phase,
            Phase::Renewing { cycle: Some(cycle), .. } if cycle.deadline_ms <= now_ms
        )
    }

    fn send_write(&mut self, request: KubeRequest, spec: LeaseSpec, cx: &mut Context) {
        let call = cx.call(request, self.request_timeout_ms(cx.now_local_ms));
        let attempt = self
            .attempt
            .as_mut()
            .expect("a write follows a Get of the same attempt");
        attempt.call = call;
        attempt.stage = Stage::Write(spec);
    }

    /// b.3 step 3: a record whose bytes differ from the last read resets `observedTime`.
    fn observe_read(&mut self, spec: &LeaseSpec, now_ms: u64) {
        if self.observed_raw.as_ref() != Some(spec) {
            self.observed_raw = Some(spec.clone());
            self.observed_record = Some(spec.clone());
            self.observed_time_ms = now_ms;
        }
    }

    /// b.3 steps 4-5: `None` if another holder's lease has not expired by our own clock,
    /// otherwise the record to write.
    fn correct_record(&self, read: &LeaseSpec, now_k_ms: u64) -> Option<LeaseSpec> {
        let takeover_ms = match self.settings.takeover_duration {
            TakeoverDuration::Configured => self.settings.lease_duration_ms,
            TakeoverDuration::Record => u64::from(read.lease_duration_seconds) * 1000,
        };
        let unexpired = self.observed_time_ms + takeover_ms > now_k_ms;
        if !read.holder_identity.is_empty() && unexpired && !self.is_leader() {
            return None;
        }
        let mut spec = self.own_record(now_k_ms);
        if self.is_leader() {
            spec.acquire_time_ms = read.acquire_time_ms;
            spec.lease_transitions = read.lease_transitions;
        } else {
            spec.lease_transitions = read.lease_transitions + 1;
        }
        Some(spec)
    }

    fn on_attempt_done(
        &mut self,
        outcome: bool,
        attempt_started_ms: u64,
        cx: &mut Context,
        events: &mut Vec<ElectorEvent>,
    ) {
        let now_ms = cx.now_local_ms;
        let retry_period_ms = self.settings.retry_period_ms;
        match self.phase {
            Phase::Acquiring if outcome => {
                debug_assert!(self.deadline.is_none(), "no renew deadline while acquiring");
                self.terms_led += 1;
                let term = self.terms_led;
                // The write succeeded before client-go spawns the callback.
                events.push(ElectorEvent::LeaseHeld { term });
                events.push(ElectorEvent::StartedLeading { term });
                // renew(): wait.Until runs its first cycle at once.
                let cycle = Cycle {
                    start_ms: now_ms,
                    deadline_ms: now_ms + self.settings.renew_deadline_ms,
                    ticker_start_ms: None,
                };
                self.phase = Phase::Renewing {
                    term,
                    cycle: Some(cycle),
                };
                self.deadline = Some(cx.timer(cycle.deadline_ms));
                self.start_attempt(cx);
            }
            Phase::Acquiring => {
                // JitterUntil(RP, 1.2, sliding): the gap starts when the attempt returns.
                let jitter_ms = (cx.unit() * 1.2 * retry_period_ms as f64) as u64;
                self.wake = Some(cx.timer(now_ms + retry_period_ms + jitter_ms));
            }
            Phase::Renewing {
                term,
                cycle: Some(_),
            } if outcome => {
                events.push(ElectorEvent::LeaseHeld { term });
                self.deadline = None;
                self.phase = Phase::Renewing { term, cycle: None };
                self.wake = Some(cx.timer(now_ms + retry_period_ms));
            }
            Phase::Renewing {
                term,
                cycle: Some(mut cycle),
            } => {
                let next_ms = match self.settings.poll_ticker {
                    PollTicker::StartsWithCycle => {
                        next_poll_ms(cycle.start_ms, attempt_started_ms, now_ms, retry_period_ms)
                    }
                    PollTicker::StartsAfterImmediate => {
                        let ticker_start_ms = *cycle.ticker_start_ms.get_or_insert(now_ms);
                        let earliest_ms = now_ms.max(attempt_started_ms + 1);
                        next_undropped_tick_ms(ticker_start_ms, earliest_ms, retry_period_ms)
                    }
                };
                self.phase = Phase::Renewing {
                    term,
                    cycle: Some(cycle),
                };
                debug_assert!(next_ms >= now_ms, "the next poll is not in the past");
                if next_ms < cycle.deadline_ms {
                    self.wake = Some(cx.timer(next_ms));
                }
            }
            phase => panic!("an attempt finished in phase {phase:?}"),
        }
    }
}

/// The poll ticker of `PollImmediateUntil`: ticks at `cycle_start + k·RP`; a tick that fell
/// while the attempt ran is buffered and fires at once.
fn next_poll_ms(cycle_start_ms: u64, attempt_started_ms: u64, now_ms: u64, period_ms: u64) -> u64 {
    debug_assert!(
        cycle_start_ms <= attempt_started_ms && attempt_started_ms <= now_ms,
        "an attempt starts within its cycle and ends after it starts"
    );
    let ticks_before = (attempt_started_ms - cycle_start_ms) / period_ms;
    let next_tick_ms = cycle_start_ms + (ticks_before + 1) * period_ms;
    next_tick_ms.max(now_ms)
}

/// v0.24.3's poller: ticks at `ticker_start + k·RP` (k ≥ 1); a tick that fell while the
/// attempt ran was dropped (and the one that started it is spent), so the next attempt waits
/// for the first tick not before `earliest_ms`.
fn next_undropped_tick_ms(ticker_start_ms: u64, earliest_ms: u64, period_ms: u64) -> u64 {
    let elapsed_ms = earliest_ms.saturating_sub(ticker_start_ms);
    let ticks = elapsed_ms.div_ceil(period_ms).max(1);
    let tick_ms = ticker_start_ms + ticks * period_ms;
    debug_assert!(
        tick_ms >= earliest_ms,
        "the next tick is not before the earliest"
    );
    tick_ms
}
