//! The run's bound on job-driven plugin requests (`bounded-requests`): the limit a request
//! storm runs into.
//!
//! A healthy allocator costs the server a handful of create-agent and should-assign-work
//! requests per job (about 3 on the shipped day, at most 16 on the shipped scenarios). One
//! that answers `false` to every agent for every other job makes each idle agent ask about
//! every queued job at each of its get-work polls: requests grow with idle agents × queued jobs,
//! and a simulated working day never finishes. The world counts requests and jobs as their
//! records pass and ends the run when the count passes `per_job_max` for each job scheduled
//! so far; the `bounded-requests` monitor reports it.

use crate::trace::Record;

/// Counts job-driven plugin requests against jobs scheduled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RequestBound {
    /// `None`: no bound (`bounded-requests` disabled).
    per_job_max: Option<u64>,
    requests: u64,
    jobs: u64,
}

impl RequestBound {
    pub(crate) fn new(per_job_max: Option<u64>) -> RequestBound {
        RequestBound {
            per_job_max,
            requests: 0,
            jobs: 0,
        }
    }

    /// Count `record`; the record that ends the run when it passes the bound. The bound is
    /// `per_job_max` × the jobs scheduled so far (at least one).
    pub(crate) fn observe(&mut self, record: &Record) -> Option<Record> {
        let per_job_max = self.per_job_max?;
        match record {
            Record::JobScheduled { .. } => self.jobs += 1,
            Record::CreateAgentStarted { .. } | Record::ShouldAssignWork { .. } => {
                self.requests += 1;
                if self.requests > per_job_max.saturating_mul(self.jobs.max(1)) {
                    return Some(Record::RequestsBounded {
                        requests: self.requests,
                        jobs: self.jobs,
                        per_job_max,
                    });
                }
            }
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::RequestBound;
    use crate::trace::Record;

    fn scheduled(job: u64) -> Record {
        Record::JobScheduled {
            job,
            logical: job,
            profile: "small".to_owned(),
            environment: None,
            config: "c".to_owned(),
        }
    }

    fn asked(job: u64) -> Record {
        Record::ShouldAssignWork {
            agent: "k8s-ea-1".to_owned(),
            job,
            answer: false,
        }
    }

    #[test]
    fn the_bound_trips_at_the_first_request_past_per_job_max_times_the_jobs_so_far() {
        let mut bound = RequestBound::new(Some(3));
        assert_eq!(bound.observe(&scheduled(1)), None);
        assert_eq!(bound.observe(&scheduled(2)), None);
        for _ in 0..6 {
            assert_eq!(
                bound.observe(&asked(1)),
                None,
                "6 = 3 × 2 requests are allowed"
            );
        }
        assert_eq!(bound.observe(&scheduled(3)), None);
        for _ in 0..3 {
            assert_eq!(
                bound.observe(&asked(3)),
                None,
                "a third job raises the bound to 9"
            );
        }
        assert_eq!(
            bound.observe(&asked(3)),
            Some(Record::RequestsBounded {
                requests: 10,
                jobs: 3,
                per_job_max: 3,
            })
        );
    }

    #[test]
    fn before_any_job_the_bound_counts_one_job_and_pings_never_count() {
        let mut bound = RequestBound::new(Some(2));
        for _ in 0..100 {
            assert_eq!(bound.observe(&Record::ServerPing), None);
        }
        let created = Record::CreateAgentStarted { job: 1, request: 1 };
        assert_eq!(bound.observe(&created), None);
        assert_eq!(bound.observe(&created), None);
        assert!(matches!(
            bound.observe(&created),
            Some(Record::RequestsBounded {
                requests: 3,
                jobs: 0,
                per_job_max: 2
            })
        ));
    }

    #[test]
    fn without_a_bound_nothing_trips() {
        let mut bound = RequestBound::new(None);
        for _ in 0..10_000 {
            assert_eq!(bound.observe(&asked(1)), None);
        }
    }
}
