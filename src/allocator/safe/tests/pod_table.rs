//! The unsettled index against its naive reference, on random histories of records and
//! agents: pods added, replaced by newer copies (phase changes, container restarts),
//! assigned, released, retired, deleted, and the server's agents registered, changing
//! state, disabled and deleted between listings.

use super::merge::fresh;
use crate::allocator::messages::{AgentList, AgentMetadata, AgentState, BuildState, ConfigState};
use crate::allocator::pod_spec::keys as pod_keys;
use crate::allocator::safe::pod_table::{Class, PodTable, class};
use crate::allocator::safe::view::Claim;
use crate::allocator::safe::view::PodRecord;
use crate::allocator::safe::view::annotation::{CLAIM_DEADLINE_MS, CLAIM_JOB_ID, IDLE_SINCE_MS};
use crate::allocator::safe::walk_index::is_idle;
use crate::component::Random;
use crate::engine::{Stream, StreamId};
use crate::resources::PodPhase;
use std::collections::BTreeSet;
use std::sync::Arc;

/// A copy of pod `name` in a random phase, sometimes restarted.
fn copy(random: &mut Stream, name: &str, version: u64) -> Arc<crate::resources::Pod> {
    let mut pod = fresh(name, 7);
    pod.resource_version = version;
    pod.phase = [
        PodPhase::Running,
        PodPhase::Running,
        PodPhase::Pending,
        PodPhase::Failed,
    ][random.below(4) as usize];
    pod.restart_count = u32::from(random.below(6) == 0);
    // Two configs, with and without an environment: what reuse's buckets are keyed on.
    let hash = ["hash-a", "hash-b"][random.below(2) as usize];
    (pod.annotations).insert(pod_keys::CONFIG_HASH.to_owned(), hash.to_owned());
    if random.below(3) == 0 {
        // Sometimes carrying an idle-since already (written, or written by an earlier
        // process), so an overlay is unwritten or not.
        let written = ["100", "200"][random.below(2) as usize];
        (pod.annotations).insert(IDLE_SINCE_MS.to_owned(), written.to_owned());
    }
    if random.below(3) == 0 {
        // Reserved for one of three jobs.
        let job = (1 + random.below(3)).to_string();
        (pod.annotations).insert(CLAIM_JOB_ID.to_owned(), job);
        (pod.annotations).insert(CLAIM_DEADLINE_MS.to_owned(), "500".to_owned());
    }
    if random.below(2) == 0 {
        Arc::make_mut(&mut pod.labels).insert(pod_keys::ENVIRONMENT.to_owned(), "prod".to_owned());
    }
    Arc::new(pod)
}

/// Agent `name` in a random state (building most often, as in a busy cluster).
fn agent(random: &mut Stream, name: &str) -> Arc<AgentMetadata> {
    let (agent_state, build_state) = [
        (AgentState::Building, BuildState::Building),
        (AgentState::Building, BuildState::Building),
        (AgentState::Building, BuildState::Cancelled),
        (AgentState::Idle, BuildState::Idle),
        (AgentState::Missing, BuildState::Unknown),
        (AgentState::LostContact, BuildState::Unknown),
    ][random.below(6) as usize];
    let config_state = if random.below(5) == 0 {
        ConfigState::Disabled
    } else {
        ConfigState::Enabled
    };
    Arc::new(AgentMetadata {
        agent_id: name.into(),
        agent_state,
        build_state,
        config_state,
    })
}

/// One random change, through the table's own operations, or to the server's agents (which
/// the table sees at its next `set_agents`).
fn step(random: &mut Stream, table: &mut PodTable, agents: &mut AgentList, version: &mut u64) {
    let name = format!("k8s-ea-{:03}", random.below(60));
    *version += 1;
    match random.below(14) {
        0 | 1 => table.insert(name.clone(), PodRecord::new(copy(random, &name, *version))),
        2 => {
            let pod = copy(random, &name, *version);
            table.update(&name, |record| record.take_newer(pod));
        }
        3 => {
            let job = random.below(3);
            table.update(&name, |record| {
                record.running_job = (job > 0).then_some(job);
            });
        }
        4 => {
            table.update(&name, |record| record.retired = true);
        }
        5 => {
            let flag = random.below(2) == 0;
            table.update(&name, |record| record.delete_in_flight = flag);
        }
        6 => table.remove(&name),
        7 => {
            // A pass over every pod, as server-ping's release of finished assignments.
            let names: Vec<String> = table.iter().map(|(name, _)| name.clone()).collect();
            for name in names {
                table.update(&name, |record| record.running_job = None);
            }
        }
        8 | 9 => agents.put(agent(random, &name)),
        10 => agents.remove(&name),
        12 => {
            let claim = (random.below(2) == 0).then(|| Claim {
                job_id: 1 + random.below(3),
                deadline_ms: 700,
            });
            table.update(&name, |record| record.claim_overlay = claim);
        }
        11 => {
            let since = [None, Some(100), Some(300)][random.below(3) as usize];
            table.update(&name, |record| record.idle_since_overlay = since);
        }
        _ => {
            table.set_agents(agents.clone());
        }
    }
}

#[test]
fn the_unsettled_index_lists_exactly_the_pods_a_full_walk_finds_unsettled() {
    let (mut settled_seen, mut idle_seen, mut filed_seen) = (0, 0, 0);
    // Agents without pods, unwritten idle-since times, unmarked idle pods, claiming pods.
    let mut totals = [0; 4];
    for seed in 1..=12 {
        let mut random = Stream::new(seed, StreamId::Workload);
        let (mut table, mut agents) = (PodTable::default(), AgentList::default());
        let mut version = 0;
        for n in 0..4000 {
            step(&mut random, &mut table, &mut agents, &mut version);
            // A decision brings the index up to date with the agents first.
            if random.below(4) == 0 {
                table.set_agents(agents.clone());
                let indexed: BTreeSet<String> = table
                    .unsettled(&agents)
                    .map(|(name, _)| name.clone())
                    .collect();
                assert_eq!(
                    indexed,
                    table.unsettled_naive(),
                    "seed {seed}, step {n}: the index differs from the walk"
                );
                let troubled: BTreeSet<String> = table
                    .troubled(&agents)
                    .map(|(name, _)| name.clone())
                    .collect();
                assert_eq!(troubled, table.naive(Class::Other), "seed {seed}, step {n}");
                idle_seen += indexed.len() - troubled.len();
                // Reuse's buckets: each holds exactly the idle pods of its config.
                for (hash, environment) in [("hash-a", None), ("hash-b", Some("prod"))] {
                    let filed: BTreeSet<String> = table
                        .idle_like(&agents, hash, environment)
                        .map(|(name, _)| name.clone())
                        .collect();
                    let naive: BTreeSet<String> = table
                        .naive(Class::Idle)
                        .into_iter()
                        .filter(|name| {
                            let record = table.get(name).expect("listed");
                            record.config_hash() == Some(hash)
                                && record.environment() == environment
                        })
                        .collect();
                    assert_eq!(
                        filed, naive,
                        "seed {seed}, step {n}: {hash} {environment:?}"
                    );
                    filed_seen += filed.len();
                }
                settled_seen += table.len() - indexed.len();
                let seen = walks(&table, &agents);
                for (total, found) in totals.iter_mut().zip(seen) {
                    *total += found;
                }
            }
        }
    }
    // The histories reach both kinds of pod, so the index is exercised both ways.
    assert!(settled_seen > 1000, "only {settled_seen} settled sightings");
    assert!(idle_seen > 1000, "only {idle_seen} idle sightings");
    assert!(
        filed_seen > 500,
        "only {filed_seen} pods found in reuse's buckets"
    );
    assert!(
        totals.iter().all(|&found| found > 500),
        "the walks found too little: {totals:?}"
    );
}

/// The four walks (`walk_index.rs`) against the index: the listed agents no record is named
/// for, the records with an unwritten idle-since and that time, the idle pods without an
/// idle-since, and the unsettled pods claiming each job. Returns how many of each were found.
fn walks(table: &PodTable, agents: &AgentList) -> [usize; 4] {
    let without: Vec<&String> = table.agents_without_pods(agents).collect();
    let naive: Vec<String> = (agents.iter())
        .map(|agent| agent.agent_id.to_string())
        .filter(|name| table.get(name).is_none())
        .collect();
    assert!(without.iter().copied().eq(&naive), "agents without pods");
    let unwritten: Vec<(&String, u64)> = table.unwritten_idle_since().collect();
    let naive: Vec<(&String, u64)> = (table.iter())
        .filter_map(|(name, record)| Some((name, record.unwritten_idle_since_ms()?)))
        .collect();
    assert_eq!(unwritten, naive, "unwritten idle-since times");
    let unmarked: Vec<&String> = table.unmarked_idle(agents).collect();
    let naive: Vec<&String> = (table.iter())
        .filter(|(name, record)| {
            let agent = agents.get(name).map(Arc::as_ref);
            record.idle_since_ms().is_none() && is_idle(record, agent)
        })
        .map(|(name, _)| name)
        .collect();
    assert_eq!(unmarked, naive, "idle pods without an idle-since");
    let mut claiming = 0;
    for job in 1..=3 {
        let found: Vec<&String> = table.claiming(agents, job).map(|(name, _)| name).collect();
        let naive: Vec<&String> = (table.unsettled(agents))
            .filter(|(_, record)| record.claim().is_some_and(|claim| claim.job_id == job))
            .map(|(name, _)| name)
            .collect();
        assert_eq!(found, naive, "pods claiming job {job}");
        claiming += found.len();
    }
    [without.len(), unwritten.len(), unmarked.len(), claiming]
}

#[test]
fn a_pod_leaves_the_index_while_its_agent_builds_and_returns_when_anything_changes() {
    let name = "k8s-ea-001";
    let (mut table, mut agents) = (PodTable::default(), AgentList::default());
    let mut pod = fresh(name, 1);
    pod.phase = PodPhase::Running;
    table.insert(name.to_owned(), PodRecord::new(Arc::new(pod)));
    let count = |table: &PodTable, agents: &AgentList| table.unsettled(agents).count();
    table.set_agents(agents.clone());
    assert_eq!(
        count(&table, &agents),
        1,
        "a pod without an agent is looked at"
    );
    let building = |agent_state, build_state| {
        Arc::new(AgentMetadata {
            agent_id: name.into(),
            agent_state,
            build_state,
            config_state: ConfigState::Enabled,
        })
    };
    agents.put(building(AgentState::Building, BuildState::Building));
    table.set_agents(agents.clone());
    assert_eq!(count(&table, &agents), 0, "its agent builds: settled");
    let record = table.get(name).expect("listed");
    assert_eq!(
        class(record, agents.get(name).map(Arc::as_ref)),
        Class::Settled
    );
    assert_eq!(table.troubled(&agents).count(), 0);
    table.update(name, |record| record.delete_in_flight = true);
    assert_eq!(
        count(&table, &agents),
        1,
        "a pod being deleted is looked at"
    );
    table.update(name, |record| record.delete_in_flight = false);
    assert_eq!(count(&table, &agents), 0);
    agents.put(building(AgentState::Idle, BuildState::Idle));
    table.set_agents(agents.clone());
    assert_eq!(count(&table, &agents), 1, "its agent is idle: looked at");
    assert_eq!(table.troubled(&agents).count(), 0, "but not by the reaper");
    agents.put(building(AgentState::LostContact, BuildState::Unknown));
    table.set_agents(agents.clone());
    assert_eq!(
        count(&table, &agents),
        1,
        "its agent lost contact: looked at"
    );
    table.remove(name);
    assert_eq!(count(&table, &agents), 0);
}
