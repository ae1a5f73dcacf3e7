//! `bounded-requests`: the server sends at most `plugin_requests_per_job_max` job-driven
//! plugin requests (create-agent and should-assign-work) per job scheduled so far.
//!
//! The world counts and ends the run at the request that passes the bound (a request storm
//! would otherwise run for hours); this monitor reports the record it leaves.

use super::{Kind, Monitor, Violation};
use crate::check::InvariantId;
use crate::trace::Record;

/// `bounded-requests` (always).
#[derive(Debug, Default)]
pub(crate) struct BoundedRequests;

impl Monitor for BoundedRequests {
    fn id(&self) -> InvariantId {
        InvariantId::BoundedRequests
    }

    fn observe(&mut self, t_ms: u64, record: &Record, out: &mut Vec<Violation>) {
        let Record::RequestsBounded {
            requests,
            jobs,
            per_job_max,
        } = record
        else {
            return;
        };
        debug_assert!(
            *requests > per_job_max.saturating_mul((*jobs).max(1)),
            "the world stops the run at the request that passes the bound"
        );
        let message = format!(
            "the server sent {requests} create-agent and should-assign-work requests for \
             {jobs} jobs, more than plugin_requests_per_job_max = {per_job_max} per job: a \
             request storm; the run stops here and its eventually-invariants are judged now"
        );
        out.push(Violation::new(
            InvariantId::BoundedRequests,
            Kind::Always,
            t_ms,
            vec!["server:gocd".to_owned()],
            message,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::BoundedRequests;
    use crate::check::{InvariantId, Kind, Monitor};
    use crate::trace::Record;

    #[test]
    fn the_bound_record_is_one_always_violation_and_nothing_else_is() {
        let mut monitor = BoundedRequests;
        let mut out = Vec::new();
        monitor.observe(5, &Record::ServerPing, &mut out);
        assert!(out.is_empty());
        let bound = Record::RequestsBounded {
            requests: 41,
            jobs: 4,
            per_job_max: 10,
        };
        monitor.observe(9_000, &bound, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(
            (out[0].id, out[0].kind, out[0].at_ms),
            (InvariantId::BoundedRequests, Kind::Always, 9_000)
        );
        assert!(
            out[0].message.contains("41 create-agent"),
            "{}",
            out[0].message
        );
    }
}
