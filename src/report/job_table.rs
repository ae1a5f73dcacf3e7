//! The rows of `jobs.csv`, kept compact: a day has tens of thousands of job instances and the
//! collector holds every one until the run ends, so a row stores fixed-size fields only
//! (names as [`Names`] indexes, absent times as a sentinel) in an [`IdMap`] by job id.

use super::rows::{JobOutcome, JobRow};
use crate::ids::IdMap;
use crate::ids::Names;

/// A time that has not happened: simulated times are far below it.
const NEVER_MS: u64 = u64::MAX;
/// A name that is absent (no environment, no agent yet).
const NO_NAME: u32 = u32::MAX;

fn time(time_ms: u64) -> Option<u64> {
    (time_ms != NEVER_MS).then_some(time_ms)
}

fn name_or_none(index: Option<u32>) -> u32 {
    index.unwrap_or(NO_NAME)
}

fn name(names: &Names, index: u32) -> Option<String> {
    (index != NO_NAME).then(|| names.name(index).to_owned())
}

/// One job instance as stored; [`JobTable::rows`] turns it into a [`JobRow`].
#[derive(Clone, Debug)]
pub(super) struct StoredJob {
    logical_job: u64,
    scheduled_at_ms: u64,
    assigned_at_ms: u64,
    completed_at_ms: u64,
    profile: u32,
    environment: u32,
    agent: u32,
    pod_reused: bool,
    pub(super) outcome: JobOutcome,
}

impl StoredJob {
    pub(super) fn assigned(&mut self, t_ms: u64, agent: u32, reused: bool) {
        self.assigned_at_ms = t_ms;
        self.agent = agent;
        self.pod_reused = reused;
    }

    pub(super) fn completed(&mut self, t_ms: u64) {
        self.completed_at_ms = t_ms;
    }

    /// The agent the job was last assigned to, as a [`Names`] index.
    pub(super) fn agent(&self) -> Option<u32> {
        (self.agent != NO_NAME).then_some(self.agent)
    }
}

/// Job instances by job id; an out-of-order or repeated id still lands in its place.
#[derive(Clone, Debug, Default)]
pub(super) struct JobTable {
    rows: IdMap<StoredJob>,
}

impl JobTable {
    /// A job instance scheduled at `t_ms`, Waiting. Returns the outcome of the row it
    /// replaced if the id was already there.
    pub(super) fn schedule(
        &mut self,
        t_ms: u64,
        job: u64,
        logical: u64,
        profile: u32,
        environment: Option<u32>,
    ) -> Option<JobOutcome> {
        let row = StoredJob {
            logical_job: logical,
            scheduled_at_ms: t_ms,
            assigned_at_ms: NEVER_MS,
            completed_at_ms: NEVER_MS,
            profile,
            environment: name_or_none(environment),
            agent: NO_NAME,
            pod_reused: false,
            outcome: JobOutcome::Waiting,
        };
        self.rows.insert(job, row).map(|old| old.outcome)
    }

    pub(super) fn get_mut(&mut self, job: u64) -> Option<&mut StoredJob> {
        self.rows.get_mut(job)
    }

    /// Every row in job id order, names resolved through `names`.
    pub(super) fn rows<'a>(&'a self, names: &'a Names) -> impl Iterator<Item = JobRow> + 'a {
        self.rows.iter().map(|(job_id, row)| JobRow {
            job_id,
            logical_job: row.logical_job,
            profile: names.name(row.profile).to_owned(),
            environment: name(names, row.environment),
            scheduled_at_ms: row.scheduled_at_ms,
            assigned_at_ms: time(row.assigned_at_ms),
            completed_at_ms: time(row.completed_at_ms),
            agent_id: name(names, row.agent),
            pod_reused: row.pod_reused,
            outcome: row.outcome,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::JobTable;
    use crate::ids::Names;
    use crate::report::rows::{JobOutcome, JobRow};

    #[test]
    fn rows_come_out_in_job_id_order_whatever_the_scheduling_order() {
        let mut names = Names::default();
        let profile = names.intern("small");
        let mut table = JobTable::default();
        for job in [2, 5, 3] {
            assert_eq!(table.schedule(job * 10, job, job, profile, None), None);
        }
        let ids: Vec<u64> = table.rows(&names).map(|row| row.job_id).collect();
        assert_eq!(ids, [2, 3, 5]);
    }

    #[test]
    fn a_repeated_job_id_replaces_its_row_and_returns_the_old_outcome() {
        let mut names = Names::default();
        let profile = names.intern("small");
        let agent = names.intern("pod-a");
        let mut table = JobTable::default();
        table.schedule(1_000, 7, 1, profile, None);
        let row = table.get_mut(7).expect("job 7 was scheduled");
        row.assigned(2_000, agent, true);
        row.outcome = JobOutcome::Building;
        assert_eq!(
            table.schedule(3_000, 7, 1, profile, None),
            Some(JobOutcome::Building)
        );
        let rows: Vec<JobRow> = table.rows(&names).collect();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].scheduled_at_ms, 3_000);
        assert_eq!(rows[0].agent_id, None);
        assert_eq!(rows[0].assigned_at_ms, None);
    }

    #[test]
    fn stored_names_and_times_come_back_as_scheduled_and_assigned() {
        let mut names = Names::default();
        let profile = names.intern("small");
        let environment = names.intern("prod");
        let agent = names.intern("pod-a");
        let mut table = JobTable::default();
        table.schedule(1_000, 4, 2, profile, Some(environment));
        let row = table.get_mut(4).expect("job 4 was scheduled");
        row.assigned(1_500, agent, false);
        row.completed(9_000);
        row.outcome = JobOutcome::Completed;
        let rows: Vec<JobRow> = table.rows(&names).collect();
        let expected = JobRow {
            job_id: 4,
            logical_job: 2,
            profile: "small".to_owned(),
            environment: Some("prod".to_owned()),
            scheduled_at_ms: 1_000,
            assigned_at_ms: Some(1_500),
            completed_at_ms: Some(9_000),
            agent_id: Some("pod-a".to_owned()),
            pod_reused: false,
            outcome: JobOutcome::Completed,
        };
        assert_eq!(rows, [expected]);
    }
}
