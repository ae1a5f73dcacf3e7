//! A run's decisions as the review aligns them, kept while the run goes (a trace tap).
//!
//! Every `Decision` record becomes an [`Entry`] tagged with the request its code answers, as
//! the run's policy declares it. A should-assign-work answer for which the policy records no
//! decision (upstream answers silently) becomes an entry too, `assign-yes` or `assign-no`,
//! with the policy's declared rule and the pod's job label as its text, so every policy's
//! answers can be compared.

use crate::allocator::{Declaration, RequestKind};
use crate::trace::Record;
use crate::world::Sink;
use std::collections::BTreeMap;

/// One decision of one run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Entry {
    /// Simulated time of the decision, in milliseconds.
    pub t_ms: u64,
    /// The request the code answers; `None` for a code the policy does not declare.
    pub request: Option<RequestKind>,
    /// The job the decision is about, if any.
    pub job: Option<u64>,
    /// The agent (pod) the decision is about, if any.
    pub agent: Option<String>,
    /// The decision's code.
    pub code: String,
    /// The decision's text.
    pub text: String,
    /// The position of the decision's record in [`Tape::records`].
    pub index: usize,
}

impl Entry {
    /// The request's name (`undeclared` for a code its policy does not declare).
    pub(crate) fn request_name(&self) -> &'static str {
        self.request.map_or("undeclared", RequestKind::name)
    }
}

/// How many records a tape keeps for context lines: the first divergence is almost always
/// early, and a long run of a slow policy (pr355 on a working day: over a million records)
/// must not hold them all. Decisions are kept throughout.
pub(crate) const KEPT_RECORDS: usize = 200_000;

/// Everything the review keeps of one run: its first `KEPT_RECORDS` records (without
/// timeline samples), for context lines, and all its decisions.
pub(crate) struct Tape {
    declaration: &'static Declaration,
    /// The first `KEPT_RECORDS` records (no timeline samples) with their times in milliseconds, for
    /// context lines.
    pub records: Vec<(u64, Record)>,
    /// Records seen (kept or not).
    pub seen: usize,
    /// Every decision of the run, in order.
    pub entries: Vec<Entry>,
    /// The should-assign-work the last recorded decision answered, as (job, agent).
    answered: Option<(u64, String)>,
    /// Pod → the job it was created for (its `Elastic-Agent-Job-Id` label).
    labels: BTreeMap<String, Option<u64>>,
}

impl Tape {
    /// An empty tape for a run of the policy `declaration` describes.
    pub(crate) fn new(declaration: &'static Declaration) -> Tape {
        Tape {
            declaration,
            records: Vec::new(),
            seen: 0,
            entries: Vec::new(),
            answered: None,
            labels: BTreeMap::new(),
        }
    }

    fn decision(&mut self, t_ms: u64, record: &Record) {
        let Record::Decision {
            job,
            pod,
            code,
            text,
        } = record
        else {
            return;
        };
        let request = self.declaration.code(code).map(|declared| declared.request);
        self.answered = match (request, job, pod) {
            (Some(RequestKind::ShouldAssignWork), Some(job), Some(pod)) => {
                Some((*job, pod.clone()))
            }
            _ => None,
        };
        self.entries.push(Entry {
            t_ms,
            request,
            job: *job,
            agent: pod.clone(),
            code: code.clone(),
            text: text.clone(),
            index: self.seen - 1,
        });
    }

    /// A should-assign-work answer: an entry of its own unless a decision just recorded it.
    fn answer(&mut self, t_ms: u64, agent: &str, job: u64, answer: bool) {
        let recorded = self
            .answered
            .take()
            .is_some_and(|(answered_job, answered_agent)| {
                answered_job == job && answered_agent == agent
            });
        if recorded {
            return;
        }
        let label = match self.labels.get(agent) {
            Some(Some(label)) => format!("pod {agent} was created for job {label}"),
            Some(None) => format!("pod {agent} carries no job label"),
            None => format!("pod {agent} is not one the plugin created"),
        };
        self.entries.push(Entry {
            t_ms,
            request: Some(RequestKind::ShouldAssignWork),
            job: Some(job),
            agent: Some(agent.to_owned()),
            code: if answer { "assign-yes" } else { "assign-no" }.to_owned(),
            text: format!(
                "answered {answer} ({}; the policy records no decision for it): {label}",
                self.declaration.assign_rule
            ),
            index: self.seen - 1,
        });
    }

    /// Up to `count` records before `index` and the record at it, one line each; a note
    /// instead when the record is beyond `KEPT_RECORDS`.
    pub(crate) fn lines_before(&self, index: usize, count: usize) -> Vec<String> {
        if index >= self.records.len() {
            return vec![format!(
                "(record {index} is beyond the first {KEPT_RECORDS} the review keeps: rerun \
                 the seed with `sim --trace` to see it)"
            )];
        }
        let first = index.saturating_sub(count);
        self.records[first..=index]
            .iter()
            .map(|(t_ms, record)| record_line(*t_ms, record))
            .collect()
    }
}

/// `t=12.345s {"kind":"decision",…}`: a record as `trace.jsonl` spells it, with its time.
pub(crate) fn record_line(t_ms: u64, record: &Record) -> String {
    let json = serde_json::to_string(record).unwrap_or_else(|e| format!("unprintable: {e}"));
    format!("t={}.{:03}s {json}", t_ms / 1000, t_ms % 1000)
}

impl Sink for Tape {
    fn record(&mut self, t_ms: u64, _node: &str, record: &Record) {
        if matches!(record, Record::Sample) {
            return;
        }
        self.seen += 1;
        if self.records.len() < KEPT_RECORDS {
            self.records.push((t_ms, record.clone()));
        }
        match record {
            Record::Decision { .. } => self.decision(t_ms, record),
            Record::ShouldAssignWork { agent, job, answer } => {
                self.answer(t_ms, agent, *job, *answer);
            }
            Record::PodCreated { pod, job_label, .. } => {
                self.labels.insert(pod.clone(), *job_label);
            }
            _ => {}
        }
    }
}
