//! What each job's plan froze of the cluster profile when the server scheduled it. GoCD
//! stores a job's elastic and cluster profile with the job at scheduling (gocd/gocd
//! `JobInstanceSqlMapDao.save`, read back by `loadPlan`) and a reschedule copies the old
//! plan (`ScheduleService.rescheduleJob`), so every create-agent for a job carries the
//! settings of its first scheduling, whatever `cluster_profile_edited` came since. Monitors
//! that judge what the plugin was told read it here.

use crate::ids::IdMap;
use crate::trace::Record;

/// The cluster-profile settings the monitors judge by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ClusterSettings {
    /// The pending-pod limit.
    pub(crate) pending_pods_count: u32,
    /// Whether agent reuse is on.
    pub(crate) enable_agent_reuse: bool,
}

/// The settings in force now and those frozen into each job scheduled so far.
#[derive(Debug)]
pub(crate) struct FrozenSettings {
    now: ClusterSettings,
    of_job: IdMap<ClusterSettings>,
    /// The instance a `JobRescheduled` just replaced and what it had frozen: the
    /// `JobScheduled` of its new instance follows at once and copies it.
    rescheduled: Option<(u64, ClusterSettings)>,
}

impl FrozenSettings {
    /// Settings `now` at the start of the run.
    pub(crate) fn new(now: ClusterSettings) -> Self {
        FrozenSettings {
            now,
            of_job: IdMap::default(),
            rescheduled: None,
        }
    }

    /// The settings in force for jobs scheduled from now on.
    pub(crate) fn now(&self) -> ClusterSettings {
        self.now
    }

    /// What job `job`'s plan carries (the settings now for a job not seen scheduled).
    pub(crate) fn of_job(&self, job: u64) -> ClusterSettings {
        self.planned(job).unwrap_or(self.now)
    }

    /// What job `job`'s plan carries, if the job was seen scheduled.
    pub(crate) fn planned(&self, job: u64) -> Option<ClusterSettings> {
        self.of_job.get(job).copied()
    }

    /// Follows edits, schedules and reschedules.
    pub(crate) fn observe(&mut self, record: &Record) {
        match record {
            Record::ClusterProfileEdited {
                pending_pods_count,
                enable_agent_reuse,
                ..
            } => {
                self.now = ClusterSettings {
                    pending_pods_count: *pending_pods_count,
                    enable_agent_reuse: *enable_agent_reuse,
                };
            }
            Record::JobRescheduled { job, new_job, .. } => {
                debug_assert!(new_job > job, "a reschedule makes a new job instance");
                self.rescheduled = Some((*new_job, self.of_job(*job)));
            }
            Record::JobScheduled { job, .. } => {
                let settings = match self.rescheduled.take() {
                    Some((new_job, settings)) if new_job == *job => settings,
                    _ => self.now,
                };
                self.of_job.insert(*job, settings);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{ClusterSettings, FrozenSettings};
    use crate::trace::Record;

    fn scheduled(job: u64) -> Record {
        Record::JobScheduled {
            job,
            logical: job,
            profile: "p".into(),
            environment: None,
            config: "c".into(),
        }
    }

    fn edited(pending_pods_count: u32, enable_agent_reuse: bool) -> Record {
        Record::ClusterProfileEdited {
            cluster: "k".into(),
            pending_pods_count,
            enable_agent_reuse,
            auto_register_timeout_ms: 1,
            idle_timeout_ms: 1,
            max_pods: None,
        }
    }

    #[test]
    fn a_job_keeps_the_settings_of_its_first_scheduling_across_edits_and_reschedules() {
        let before = ClusterSettings {
            pending_pods_count: 10,
            enable_agent_reuse: true,
        };
        let mut frozen = FrozenSettings::new(before);
        frozen.observe(&scheduled(1));
        frozen.observe(&edited(2, false));
        frozen.observe(&scheduled(2));
        let after = frozen.now();
        assert_eq!(after.pending_pods_count, 2);
        assert_eq!(frozen.of_job(1), before);
        assert_eq!(frozen.of_job(2), after);
        // Job 1 is rescheduled as job 3 after the edit: the copy keeps job 1's plan.
        frozen.observe(&Record::JobRescheduled {
            job: 1,
            new_job: 3,
            reason: "hung".into(),
        });
        frozen.observe(&scheduled(3));
        assert_eq!(frozen.of_job(3), before);
        // A fresh job takes the settings in force.
        frozen.observe(&scheduled(4));
        assert_eq!(frozen.of_job(4), after);
    }
}
