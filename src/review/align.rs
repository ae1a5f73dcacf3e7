//! Aligning two runs' decisions by request and finding where they first differ.
//!
//! Rules (`docs/review.md` repeats them for readers):
//! - a decision belongs to the request its code answers, as the run's policy declares it;
//!   steps inside a request (`queued`, a failed call) are not aligned;
//! - requests are matched by what they are about: create-agent by job; should-assign-work and
//!   job-completion by job and agent; server-ping by pod;
//! - the decisions about one request are paired in order (the first with the first, …);
//!   a pair whose codes differ is a divergence; a request one run received more often than
//!   the other (a resend, a poll) pairs only as far as both go;
//! - per request only its first differing pair counts (what follows is a consequence);
//! - the seed's first divergence is the earliest of them, by the earlier of its two times.

use super::tape::{Entry, Tape};
use crate::allocator::{Declaration, RequestKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How many trace lines before a first divergence the review shows, per run.
pub(crate) const CONTEXT_LINES: usize = 8;

/// One side of a divergence: a decision's code and text, and when it was made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Side {
    /// The decision's code.
    pub code: String,
    /// The decision's text.
    pub text: String,
    /// Simulated time of the decision, in milliseconds.
    pub t_ms: u64,
}

impl Side {
    fn of(entry: &Entry) -> Side {
        Side {
            code: entry.code.clone(),
            text: entry.text.clone(),
            t_ms: entry.t_ms,
        }
    }
}

/// Where the candidate decided a request differently from the base.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Divergence {
    /// The earlier of the two decisions' times.
    pub t_ms: u64,
    /// `create-agent`, `should-assign-work`, `job-completion`, `server-ping`.
    pub request: String,
    /// The job the request was about, if any.
    pub job: Option<u64>,
    /// The agent the request was about, if any.
    pub agent: Option<String>,
    /// What the base policy decided.
    pub base: Side,
    /// What the candidate policy decided.
    pub candidate: Side,
    /// Why the candidate differs on purpose, from its own declaration; `None`: unintended.
    pub intended: Option<String>,
}

/// The trace lines before a first divergence, from both runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Context {
    /// The base run's lines.
    pub base: Vec<String>,
    /// The candidate run's lines.
    pub candidate: Vec<String>,
}

/// What two runs of one seed decided differently.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Alignment {
    /// The earliest divergence, with the lines before it.
    pub first: Option<(Divergence, Context)>,
    /// The earliest divergence of each (base code, candidate code) pair.
    pub pairs: Vec<Divergence>,
}

type Key = (RequestKind, Option<u64>, Option<String>);

/// The request an entry is matched by; `None` for steps.
fn key(entry: &Entry) -> Option<(&'static str, Key)> {
    let request = entry.request.unwrap_or(RequestKind::Step);
    let (job, agent) = match entry.request {
        Some(RequestKind::Step) => return None,
        Some(RequestKind::CreateAgent) => (entry.job, None),
        Some(RequestKind::ServerPing) => (None, entry.agent.clone()),
        _ => (entry.job, entry.agent.clone()),
    };
    Some((entry.request_name(), (request, job, agent)))
}

fn by_request(tape: &Tape) -> BTreeMap<(&'static str, Key), Vec<&Entry>> {
    let mut groups: BTreeMap<(&'static str, Key), Vec<&Entry>> = BTreeMap::new();
    for entry in &tape.entries {
        if let Some(key) = key(entry) {
            groups.entry(key).or_default().push(entry);
        }
    }
    groups
}

/// Align `base` and `candidate`; `declaration` is the candidate's, `reuse` whether the runs
/// had agent reuse on (intents may depend on it).
pub(crate) fn align(
    base: &Tape,
    candidate: &Tape,
    declaration: &Declaration,
    reuse: bool,
) -> Alignment {
    let theirs = by_request(candidate);
    let mut found: Vec<(&Entry, &Entry)> = Vec::new();
    for (key, ours) in by_request(base) {
        let Some(other) = theirs.get(&key) else {
            continue;
        };
        if let Some((b, c)) = ours.iter().zip(other).find(|(b, c)| b.code != c.code) {
            found.push((b, c));
        }
    }
    found.sort_by_key(|(b, c)| (b.t_ms.min(c.t_ms), b.index, c.index));
    let divergence = |(b, c): &(&Entry, &Entry)| Divergence {
        t_ms: b.t_ms.min(c.t_ms),
        request: b.request_name().to_owned(),
        job: b.job.or(c.job),
        agent: b.agent.clone().or_else(|| c.agent.clone()),
        base: Side::of(b),
        candidate: Side::of(c),
        intended: declaration
            .intent(&b.code, &c.code, reuse)
            .map(|intent| intent.why.to_owned()),
    };
    let first = found.first().map(|pair| {
        let context = Context {
            base: base.lines_before(pair.0.index, CONTEXT_LINES),
            candidate: candidate.lines_before(pair.1.index, CONTEXT_LINES),
        };
        (divergence(pair), context)
    });
    let mut pairs: BTreeMap<(&str, &str), Divergence> = BTreeMap::new();
    for pair in &found {
        pairs
            .entry((&pair.0.code, &pair.1.code))
            .or_insert_with(|| divergence(pair));
    }
    let mut pairs: Vec<Divergence> = pairs.into_values().collect();
    pairs.sort_by(|a, b| (a.t_ms, &a.base.code).cmp(&(b.t_ms, &b.base.code)));
    Alignment { first, pairs }
}

#[cfg(test)]
mod tests {
    use super::{Alignment, align};
    use crate::allocator::Policy;
    use crate::review::tape::Tape;
    use crate::trace::{Actor, Record};
    use crate::world::Sink;

    fn decision(job: u64, pod: &str, code: &str) -> Record {
        Record::Decision {
            job: Some(job),
            pod: Some(pod.to_owned()),
            code: code.to_owned(),
            text: format!("{code} for job {job}"),
        }
    }

    fn created(pod: &str, job: u64) -> Record {
        Record::PodCreated {
            pod: pod.to_owned(),
            job_label: Some(job),
            config: "c".to_owned(),
            by: Actor::Allocator,
        }
    }

    fn asked(pod: &str, job: u64, answer: bool) -> Record {
        Record::ShouldAssignWork {
            agent: pod.to_owned(),
            job,
            answer,
        }
    }

    fn tape(policy: Policy, records: &[(u64, Record)]) -> Tape {
        let mut tape = Tape::new(policy.declaration());
        for (t_ms, record) in records {
            tape.record(*t_ms, "gocd", record);
        }
        tape
    }

    #[test]
    fn a_silent_answer_is_aligned_with_a_recorded_one_and_the_earliest_difference_is_first() {
        let upstream = tape(
            Policy::Upstream,
            &[
                (10, decision(1, "p1", "create")),
                (11, created("p1", 1)),
                (20, decision(2, "p2", "create")),
                (21, created("p2", 2)),
                (30, asked("p1", 2, false)),
                (40, asked("p1", 1, true)),
            ],
        );
        let pr355 = tape(
            Policy::Pr355,
            &[
                (
                    10,
                    Record::Decision {
                        job: Some(1),
                        pod: None,
                        code: "queued".to_owned(),
                        text: "waiting".to_owned(),
                    },
                ),
                (10, decision(1, "p1", "create")),
                (11, created("p1", 1)),
                (20, decision(2, "p2", "create")),
                (21, created("p2", 2)),
                (30, decision(2, "p1", "evict")),
                (30, asked("p1", 2, false)),
                (40, decision(1, "p1", "assign-no")),
                (40, asked("p1", 1, false)),
            ],
        );
        let alignment = align(&upstream, &pr355, Policy::Pr355.declaration(), false);
        let (first, context) = alignment.first.expect("the runs diverge");
        assert_eq!((first.t_ms, first.job), (30, Some(2)));
        assert_eq!(first.request, "should-assign-work");
        assert_eq!(
            (first.base.code.as_str(), first.candidate.code.as_str()),
            ("assign-no", "evict")
        );
        assert!(
            first.base.text.contains("pod p1 was created for job 1"),
            "{}",
            first.base.text
        );
        assert_eq!(first.intended, None);
        assert!(
            context
                .candidate
                .last()
                .is_some_and(|line| line.contains("evict"))
        );
        let pairs: Vec<(&str, &str)> = alignment
            .pairs
            .iter()
            .map(|pair| (pair.base.code.as_str(), pair.candidate.code.as_str()))
            .collect();
        assert_eq!(pairs, [("assign-no", "evict"), ("assign-yes", "assign-no")]);
    }

    #[test]
    fn a_declared_intent_marks_the_divergence_only_with_reuse_on() {
        let upstream = tape(Policy::Upstream, &[(10, decision(1, "p1", "create"))]);
        let pr355 = tape(Policy::Pr355, &[(10, decision(1, "p0", "skip-reuse"))]);
        let on = align(&upstream, &pr355, Policy::Pr355.declaration(), true);
        let first = on.first.expect("a divergence").0;
        assert!(first.intended.is_some_and(|why| why.contains("reuse")));
        let off = align(&upstream, &pr355, Policy::Pr355.declaration(), false);
        assert_eq!(off.first.expect("a divergence").0.intended, None);
        let same = align(&upstream, &upstream, Policy::Upstream.declaration(), true);
        assert_eq!(same, Alignment::default());
    }
}
