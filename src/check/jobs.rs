//! Job monitors: `job-wait-bound`, `all-jobs-complete`, `no-lost-job`.

use super::bounds::Bounds;
use super::deadlines::Deadlines;
use super::frozen::ClusterSettings;
use super::late_kill::{LateKill, LateKillBounds};
use super::stranded::Stranded;
use super::wait_budget::{Covered, WaitBudget};
use super::{Kind, Monitor, Violation};
use crate::check::InvariantId;
use crate::ids::IdMap;
use crate::trace::Record;
use std::collections::{BTreeMap, VecDeque};

/// How many distinct allocator answers a waiting job remembers.
const DECISIONS_KEPT_MAX: usize = 3;

/// Seconds with milliseconds, for messages.
pub(crate) fn seconds(ms: u64) -> String {
    format!("{}.{:03}s", ms / 1000, ms % 1000)
}

/// One allocator answer about a job, with how many times in a row it was given.
#[derive(Debug)]
struct Answer {
    code: String,
    text: String,
    pod: Option<String>,
    repeats: u32,
}

/// A scheduled, not yet assigned job instance.
#[derive(Debug)]
struct Waiting {
    scheduled_ms: u64,
    answers: VecDeque<Answer>,
    /// Past `max_job_wait_ms`, with a deadline the job-wait budgets moved out.
    overdue: bool,
}

/// `job-wait-bound`: every job instance is assigned within `max_job_wait_ms` of being
/// scheduled. Reported once per instance, at `scheduled + max_job_wait_ms`.
///
/// The job-wait budgets (`wait_budget.rs`) move a job's deadline out by the part of its wait
/// they cover; a job assigned (or still waiting at the end) within the moved deadline is
/// reported at its first deadline, labelled expected with the budgets that covered it.
#[derive(Debug)]
pub(crate) struct JobWaitBound {
    max_job_wait_ms: u64,
    waiting: BTreeMap<u64, Waiting>,
    deadlines: Deadlines<u64>,
    budget: WaitBudget,
}

impl JobWaitBound {
    /// A monitor that reports a job instance still unassigned `max_job_wait_ms` after it was
    /// scheduled, past what the job-wait budgets cover.
    pub(crate) fn new(bounds: &Bounds, settings: ClusterSettings) -> Self {
        JobWaitBound {
            max_job_wait_ms: bounds.max_job_wait_ms,
            waiting: BTreeMap::new(),
            deadlines: Deadlines::default(),
            budget: WaitBudget::new(bounds.wait, settings),
        }
    }

    /// `job`'s deadline passed at `now_ms`: move it out by what the budgets cover, or report.
    fn due(&mut self, deadline_ms: u64, job: u64, now_ms: u64, out: &mut Vec<Violation>) {
        let scheduled_ms = self.waiting[&job].scheduled_ms;
        let covered = self.budget.covered(job, scheduled_ms, deadline_ms, now_ms);
        let moved_ms = scheduled_ms
            .saturating_add(self.max_job_wait_ms)
            .saturating_add(covered.total_ms);
        if moved_ms > deadline_ms {
            self.waiting.get_mut(&job).expect("checked above").overdue = true;
            self.deadlines.set(job, moved_ms);
            return;
        }
        self.report(deadline_ms, job, &covered, false, out);
    }

    /// Report `job`, unassigned at `at_ms`; `expected` when within the budgets (`covered`).
    fn report(
        &mut self,
        at_ms: u64,
        job: u64,
        covered: &Covered,
        expected: bool,
        out: &mut Vec<Violation>,
    ) {
        let waiting = self
            .waiting
            .remove(&job)
            .expect("a job with a deadline is waiting");
        self.deadlines.remove(&job);
        self.budget.forget(job);
        let deadline_ms = if expected {
            waiting.scheduled_ms.saturating_add(self.max_job_wait_ms)
        } else {
            at_ms
        };
        debug_assert!(
            deadline_ms >= waiting.scheduled_ms,
            "job {job}'s deadline comes after its scheduling"
        );
        let mut objects = vec![format!("job:{job}")];
        let mut answers = Vec::new();
        for answer in &waiting.answers {
            if let Some(pod) = &answer.pod {
                let object = format!("pod:{pod}");
                if !objects.contains(&object) {
                    objects.push(object);
                }
            }
            let repeats = if answer.repeats > 1 {
                format!(" ×{}", answer.repeats)
            } else {
                String::new()
            };
            answers.push(format!("{} ({}){repeats}", answer.code, answer.text));
        }
        let said = if answers.is_empty() {
            "the allocator recorded no decision about it".to_owned()
        } else {
            format!("the allocator answered: {}", answers.join("; "))
        };
        let mut message = format!(
            "job {job} scheduled at t={} waited {} without being assigned (bound {}); {said}",
            seconds(waiting.scheduled_ms),
            seconds(at_ms - waiting.scheduled_ms),
            seconds(self.max_job_wait_ms),
        );
        if covered.total_ms > 0 {
            let within = if expected { "within" } else { "beyond" };
            message = format!(
                "{message} ({within} the job-wait budgets, which cover {} of it: {})",
                seconds(covered.total_ms),
                covered.label()
            );
        }
        let mut violation = Violation::new(self.id(), Kind::Always, deadline_ms, objects, message);
        violation.expected = expected;
        out.push(violation);
    }

    /// `job` waits no more at `t_ms`: if it was overdue within the budgets, say so.
    fn stop_waiting(&mut self, t_ms: u64, job: u64, out: &mut Vec<Violation>) {
        if self
            .waiting
            .get(&job)
            .is_some_and(|waiting| waiting.overdue)
        {
            let scheduled_ms = self.waiting[&job].scheduled_ms;
            let covered = self.budget.covered(job, scheduled_ms, t_ms, t_ms);
            debug_assert!(covered.total_ms > 0, "an overdue job has budget");
            self.report(t_ms, job, &covered, true, out);
            return;
        }
        self.waiting.remove(&job);
        self.deadlines.remove(&job);
        self.budget.forget(job);
    }

    fn remember(&mut self, job: u64, code: &str, text: &str, pod: Option<&String>) {
        let Some(waiting) = self.waiting.get_mut(&job) else {
            return;
        };
        if let Some(last) = waiting.answers.back_mut()
            && last.code == code
            && last.text == text
        {
            last.repeats += 1;
            return;
        }
        debug_assert!(waiting.answers.len() <= DECISIONS_KEPT_MAX);
        if waiting.answers.len() == DECISIONS_KEPT_MAX {
            waiting.answers.pop_front();
        }
        let answer = Answer {
            code: code.to_owned(),
            text: text.to_owned(),
            pod: pod.cloned(),
            repeats: 1,
        };
        waiting.answers.push_back(answer);
    }
}

impl Monitor for JobWaitBound {
    fn id(&self) -> InvariantId {
        InvariantId::JobWaitBound
    }

    fn observe(&mut self, t_ms: u64, record: &Record, out: &mut Vec<Violation>) {
        while let Some((deadline_ms, job)) = self.deadlines.pop_passed(t_ms) {
            self.due(deadline_ms, job, t_ms, out);
        }
        self.budget.observe(t_ms, record);
        match record {
            Record::JobScheduled { job, .. } => {
                let waiting = Waiting {
                    scheduled_ms: t_ms,
                    answers: VecDeque::new(),
                    overdue: false,
                };
                self.waiting.insert(*job, waiting);
                self.deadlines
                    .set(*job, t_ms.saturating_add(self.max_job_wait_ms));
            }
            Record::Decision {
                job: Some(job),
                pod,
                code,
                text,
            } => {
                self.remember(*job, code, text, pod.as_ref());
            }
            Record::JobAssigned { job, .. }
            | Record::JobCompleted { job, .. }
            | Record::JobRescheduled { job, .. }
            | Record::JobCancelled { job } => self.stop_waiting(t_ms, *job, out),
            _ => {}
        }
    }

    fn finish(&mut self, t_ms: u64, out: &mut Vec<Violation>) {
        while let Some((deadline_ms, job)) = self.deadlines.pop_passed(t_ms) {
            self.due(deadline_ms, job, t_ms, out);
        }
        // Jobs overdue within the budgets when the run ends: reported as expected.
        let overdue: Vec<u64> = (self.waiting.iter())
            .filter(|(_, waiting)| waiting.overdue)
            .map(|(job, _)| *job)
            .collect();
        for job in overdue {
            self.stop_waiting(t_ms, job, out);
        }
    }
}

/// Where a job instance is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Scheduled,
    Assigned,
    Completed,
    Rescheduled,
    Cancelled,
}

impl Stage {
    fn name(self) -> &'static str {
        match self {
            Stage::Scheduled => "still scheduled",
            Stage::Assigned => "assigned but never completed",
            Stage::Completed => "completed",
            Stage::Rescheduled => "rescheduled",
            Stage::Cancelled => "cancelled",
        }
    }

    fn is_finished(self) -> bool {
        matches!(
            self,
            Stage::Completed | Stage::Rescheduled | Stage::Cancelled
        )
    }
}

/// One logical job: a job and its reschedules. Only the first two completion times are kept:
/// the message names those two and the count.
#[derive(Debug)]
struct Logical {
    last_instance: u64,
    /// Where `last_instance` is in its life.
    last_stage: Stage,
    completions: u32,
    first_completion_ms: u64,
}

/// `all-jobs-complete`: at the end of the settle phase every logical job has exactly one
/// `JobCompleted` among its instances. A second completion is reported at its own time.
///
/// A completion may come for any instance ever scheduled (a late one after a reschedule), so
/// every instance's logical job is kept, compactly; an instance's own stage matters only
/// while it is the last of its logical job, so that is kept per logical job.
#[derive(Debug)]
pub(crate) struct AllJobsComplete {
    logical_of: IdMap<u64>,
    logicals: IdMap<Logical>,
    /// The second completion time of logical jobs that completed more than once (rare).
    second_completion_ms: BTreeMap<u64, u64>,
    /// Jobs the server cannot reschedule: left assigned with no agent live (expected).
    stranded: Stranded,
    /// Jobs killed late and replaced in time, whose last build may outlast the run (expected).
    late_kill: LateKill,
}

impl AllJobsComplete {
    /// The monitor, with the late-kill budget's bounds.
    pub(crate) fn new(bounds: LateKillBounds) -> AllJobsComplete {
        AllJobsComplete {
            logical_of: IdMap::default(),
            logicals: IdMap::default(),
            second_completion_ms: BTreeMap::new(),
            stranded: Stranded::default(),
            late_kill: LateKill::new(bounds),
        }
    }

    fn scheduled(&mut self, job: u64, logical: u64) {
        self.logical_of.insert(job, logical);
        if let Some(entry) = self.logicals.get_mut(logical) {
            entry.last_instance = job;
            entry.last_stage = Stage::Scheduled;
        } else {
            let entry = Logical {
                last_instance: job,
                last_stage: Stage::Scheduled,
                completions: 0,
                first_completion_ms: 0,
            };
            self.logicals.insert(logical, entry);
        }
    }

    fn completed(&mut self, t_ms: u64, logical: u64) {
        let entry = self
            .logicals
            .get_mut(logical)
            .expect("logical jobs are kept");
        entry.completions += 1;
        debug_assert!(
            entry.first_completion_ms <= t_ms,
            "completions arrive in time order"
        );
        match entry.completions {
            1 => entry.first_completion_ms = t_ms,
            2 => {
                self.second_completion_ms.insert(logical, t_ms);
            }
            _ => {}
        }
    }
}

impl Monitor for AllJobsComplete {
    fn id(&self) -> InvariantId {
        InvariantId::AllJobsComplete
    }

    fn observe(&mut self, t_ms: u64, record: &Record, _out: &mut Vec<Violation>) {
        self.stranded.observe(t_ms, record);
        self.late_kill.observe(t_ms, record);
        let (job, stage) = match record {
            Record::JobScheduled { job, logical, .. } => {
                self.scheduled(*job, *logical);
                return;
            }
            Record::JobAssigned { job, .. } => (*job, Stage::Assigned),
            Record::JobCompleted { job, .. } => (*job, Stage::Completed),
            Record::JobRescheduled { job, .. } => (*job, Stage::Rescheduled),
            Record::JobCancelled { job } => (*job, Stage::Cancelled),
            _ => return,
        };
        let Some(logical) = self.logical_of.get(job).copied() else {
            return;
        };
        if stage == Stage::Completed {
            self.completed(t_ms, logical);
        }
        let entry = self
            .logicals
            .get_mut(logical)
            .expect("logical jobs are kept");
        if entry.last_instance == job {
            entry.last_stage = stage;
        }
    }

    fn finish(&mut self, t_ms: u64, out: &mut Vec<Violation>) {
        for (logical, entry) in self.logicals.iter() {
            let instance = entry.last_instance;
            let objects = vec![format!("logical:{logical}"), format!("job:{instance}")];
            let (at_ms, message, expected) = match entry.completions {
                // A user cancelled it: GoCD completes it with the result Cancelled.
                0 if entry.last_stage == Stage::Cancelled => continue,
                // The server itself cannot reschedule it (`stranded.rs`): expected.
                0 if entry.last_stage == Stage::Assigned
                    && let Some(why) = self.stranded.why(instance) =>
                {
                    let message = format!(
                        "logical job {logical} never completed: its last instance, job \
                         {instance}, is assigned at the end of the run, and {why}"
                    );
                    (t_ms, message, true)
                }
                // Killed late, replaced in time, and its build may outlast the run: expected.
                0 if entry.last_stage == Stage::Assigned
                    && let Some(why) = self.late_kill.why(instance, t_ms) =>
                {
                    let message = format!(
                        "logical job {logical} never completed: its last instance, job \
                         {instance}, is assigned at the end of the run, and {why}"
                    );
                    (t_ms, message, true)
                }
                0 => (
                    t_ms,
                    format!(
                        "logical job {logical} never completed: its last instance, job \
                         {instance}, is {} at the end of the run",
                        entry.last_stage.name()
                    ),
                    false,
                ),
                1 => continue,
                count => {
                    let second_ms = *self
                        .second_completion_ms
                        .get(&logical)
                        .expect("a second completion's time is kept");
                    let message = format!(
                        "logical job {logical} completed {count} times (at t={} and t={})",
                        seconds(entry.first_completion_ms),
                        seconds(second_ms)
                    );
                    (second_ms, message, false)
                }
            };
            let mut violation =
                Violation::new(self.id(), Kind::Eventually, at_ms, objects, message);
            violation.expected = expected;
            out.push(violation);
        }
    }
}

/// `no-lost-job`: an instance leaves Scheduled only by being assigned, rescheduled or
/// cancelled. Flags a completion of a never-assigned instance and an assignment of an unknown
/// or finished instance, once per instance.
#[derive(Debug, Default)]
pub(crate) struct NoLostJob {
    stage_of: IdMap<Stage>,
    reported: std::collections::BTreeSet<u64>,
}

impl NoLostJob {
    fn report(&mut self, t_ms: u64, job: u64, agent: &str, message: String) -> Option<Violation> {
        debug_assert!(
            self.stage_of.get(job) != Some(&Stage::Assigned),
            "a lost job is one the server never assigned, or assigned again"
        );
        if !self.reported.insert(job) {
            return None;
        }
        let objects = vec![format!("job:{job}"), format!("agent:{agent}")];
        Some(Violation::new(
            self.id(),
            Kind::Always,
            t_ms,
            objects,
            message,
        ))
    }
}

impl Monitor for NoLostJob {
    fn id(&self) -> InvariantId {
        InvariantId::NoLostJob
    }

    fn observe(&mut self, t_ms: u64, record: &Record, out: &mut Vec<Violation>) {
        match record {
            Record::JobScheduled { job, .. } => {
                self.stage_of.insert(*job, Stage::Scheduled);
            }
            Record::JobAssigned { job, agent, .. } => {
                let stage = self.stage_of.get(*job).copied();
                let problem = match stage {
                    None => Some("was never scheduled".to_owned()),
                    Some(stage) if stage.is_finished() => {
                        Some(format!("was already {}", stage.name()))
                    }
                    Some(_) => None,
                };
                if let Some(problem) = problem {
                    let message = format!("job {job} was assigned to agent {agent} but {problem}");
                    out.extend(self.report(t_ms, *job, agent, message));
                } else {
                    debug_assert!(matches!(stage, Some(Stage::Scheduled | Stage::Assigned)));
                    self.stage_of.insert(*job, Stage::Assigned);
                }
            }
            Record::JobCompleted { job, agent } => {
                let stage = self.stage_of.get(*job).copied();
                if matches!(stage, None | Some(Stage::Scheduled)) {
                    let message =
                        format!("job {job} completed on agent {agent} without being assigned");
                    out.extend(self.report(t_ms, *job, agent, message));
                }
                self.stage_of.insert(*job, Stage::Completed);
            }
            Record::JobRescheduled { job, .. } => {
                self.stage_of.insert(*job, Stage::Rescheduled);
            }
            Record::JobCancelled { job } => {
                self.stage_of.insert(*job, Stage::Cancelled);
            }
            _ => {}
        }
    }
}
