//! Environments belong to jobs, not to elastic profiles (`scenarios/reuse-two-environments.toml`:
//! one profile, `staging` jobs, then `prod` jobs, then `staging` again).
//!
//! GoCD sends the pipeline's environment with each create-agent (gocd/gocd@f17b6f3fc9,
//! `ElasticAgentPluginService.createAgentsFor`, `envForPipeline`), the plugin puts it into the
//! pod (`GO_EA_AUTO_REGISTER_ENVIRONMENT`, `CreateAgentRequest.environmentVariables`) and the
//! agent registers in it (`AgentRegistrationController`, `setEnvironments`); the server offers
//! a job only to agents of its environment, before it asks the plugin should-assign-work
//! (`BuildAssignmentService.findMatchingJob` → `EnvironmentConfigService.filterJobsByAgent`;
//! `EnvironmentPipelineMatchers.match`). PR #355's reuse check compares the config hash, the
//! agent state and the pod phase only (brandonvin/kubernetes-elastic-agents@816a2cc,
//! `KubernetesAgentInstances.findPodsEligibleForReuse`).

use elasticsim::allocator::Policy;
use elasticsim::trace::Record;
use std::collections::BTreeMap;

/// The shipped scenario's records under `policy` and `seed`, and whether it passed.
fn run(policy: Policy, seed: u64) -> (Vec<(u64, Record)>, bool) {
    let scenario = crate::common::scenario_file("scenarios/reuse-two-environments.toml");
    let records = crate::common::records_under(&scenario, seed, policy);
    let outcome = crate::common::run_outcome(&scenario, seed, Some(policy));
    (records, outcome.passed())
}

/// Job → environment, and pod → the environment of the job it was created for.
fn environments(records: &[(u64, Record)]) -> (BTreeMap<u64, String>, BTreeMap<String, String>) {
    let mut jobs = BTreeMap::new();
    let mut pods = BTreeMap::new();
    for (_, record) in records {
        match record {
            Record::JobScheduled {
                job, environment, ..
            } => {
                jobs.insert(*job, environment.clone().unwrap_or_default());
            }
            Record::PodCreated {
                pod,
                job_label: Some(job),
                ..
            } => {
                pods.insert(pod.clone(), jobs.get(job).cloned().unwrap_or_default());
            }
            _ => {}
        }
    }
    (jobs, pods)
}

#[test]
fn one_profile_serves_two_environments_and_each_agent_gets_only_its_environments_jobs() {
    for policy in [Policy::Upstream, Policy::Pr355, Policy::Safe] {
        let (records, _) = run(policy, 1);
        let (jobs, pods) = environments(&records);
        let used: std::collections::BTreeSet<&String> = jobs.values().collect();
        assert_eq!(
            used.len(),
            2,
            "{policy:?}: staging and prod jobs of one profile"
        );
        for (_, record) in &records {
            let (job, agent) = match record {
                Record::ShouldAssignWork { job, agent, .. }
                | Record::JobAssigned { job, agent, .. } => (job, agent),
                _ => continue,
            };
            assert_eq!(
                jobs.get(job),
                pods.get(agent),
                "{policy:?}: job {job} offered to {agent} of another environment"
            );
        }
    }
}

#[test]
fn pr355_skips_the_create_for_a_prod_job_on_an_idle_staging_pod_and_the_job_starves() {
    for seed in 1..=3 {
        let (records, passed) = run(Policy::Pr355, seed);
        let (jobs, pods) = environments(&records);
        let foreign_skip = records.iter().any(|(_, record)| {
            matches!(record, Record::Decision { job: Some(job), pod: Some(pod), code, .. }
                if code == "skip-reuse"
                    && jobs.get(job).is_some_and(|env| env == "prod")
                    && pods.get(pod).is_some_and(|env| env == "staging"))
        });
        assert!(
            foreign_skip,
            "seed {seed}: a staging pod counted for a prod job"
        );
        assert!(!passed, "seed {seed}: the prod jobs wait past the bound");
        let (_, safe_passed) = run(Policy::Safe, seed);
        assert!(
            safe_passed,
            "seed {seed}: safe creates pods for the prod jobs"
        );
    }
}
