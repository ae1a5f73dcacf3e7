use super::{
    assigned, bounds, clean_life, completed, created, deleted, of, registered, run, scheduled,
};
use crate::check::InvariantId;
use crate::trace::{Actor, Record};

#[test]
fn a_job_of_another_config_assigned_to_an_old_pod_violates() {
    let records = vec![
        (0, created("pod-a", 1, "H1")),
        (1_000, registered("pod-a")),
        (
            2_000,
            Record::ProfileEdited {
                profile: "small".to_owned(),
                config: "H2".to_owned(),
            },
        ),
        (3_000, scheduled(2, 2, "H2")),
        (4_000, assigned(2, "pod-a", "H2")),
    ];
    let violations = run(&bounds(), &records, 10_000);
    let cross = of(&violations, InvariantId::NoCrossConfigReuse);
    assert_eq!(cross.len(), 1);
    assert_eq!(cross[0].at_ms, 4_000);
    assert_eq!(
        cross[0].objects,
        vec!["agent:pod-a".to_owned(), "job:2".to_owned()]
    );
    assert!(cross[0].message.contains("H1") && cross[0].message.contains("H2"));
}

#[test]
fn jobs_of_the_pods_own_config_may_reuse_it() {
    let mut records = clean_life(0, 1, "pod-a");
    records.truncate(6);
    records.push((10_000, scheduled(2, 2, "H")));
    records.push((11_000, assigned(2, "pod-a", "H")));
    let violations = run(&bounds(), &records, 20_000);
    assert!(of(&violations, InvariantId::NoCrossConfigReuse).is_empty());
}

#[test]
fn an_agent_given_a_second_job_while_building_violates() {
    let records = vec![
        (0, scheduled(1, 1, "H")),
        (0, scheduled(2, 2, "H")),
        (1_000, assigned(1, "pod-a", "H")),
        (2_000, assigned(2, "pod-a", "H")),
    ];
    let violations = run(&bounds(), &records, 10_000);
    let doubles = of(&violations, InvariantId::OneJobPerAgent);
    assert_eq!(doubles.len(), 1);
    assert_eq!(doubles[0].at_ms, 2_000);
    let expected = ["agent:pod-a", "job:1", "job:2"]
        .map(str::to_owned)
        .to_vec();
    assert_eq!(doubles[0].objects, expected);
}

#[test]
fn a_job_on_two_agents_at_once_violates() {
    let records = vec![
        (0, scheduled(1, 1, "H")),
        (1_000, assigned(1, "pod-a", "H")),
        (2_000, assigned(1, "pod-b", "H")),
    ];
    let violations = run(&bounds(), &records, 10_000);
    let doubles = of(&violations, InvariantId::OneJobPerAgent);
    assert_eq!(doubles.len(), 1);
    let expected = ["job:1", "agent:pod-a", "agent:pod-b"]
        .map(str::to_owned)
        .to_vec();
    assert_eq!(doubles[0].objects, expected);
}

#[test]
fn an_agent_takes_its_next_job_after_completion_or_reschedule() {
    let records = vec![
        (0, scheduled(1, 1, "H")),
        (0, scheduled(2, 2, "H")),
        (0, scheduled(3, 3, "H")),
        (1_000, assigned(1, "pod-a", "H")),
        (2_000, completed(1, "pod-a")),
        (3_000, assigned(2, "pod-a", "H")),
        (
            4_000,
            Record::JobRescheduled {
                job: 2,
                new_job: 4,
                reason: "hung".to_owned(),
            },
        ),
        (5_000, assigned(3, "pod-a", "H")),
    ];
    let violations = run(&bounds(), &records, 10_000);
    assert!(of(&violations, InvariantId::OneJobPerAgent).is_empty());
}

#[test]
fn a_disabled_agent_given_a_job_violates() {
    let records = vec![
        (0, scheduled(1, 1, "H")),
        (
            1_000,
            Record::AgentConfig {
                agent: "pod-a".to_owned(),
                enabled: false,
            },
        ),
        (2_000, assigned(1, "pod-a", "H")),
    ];
    let violations = run(&bounds(), &records, 10_000);
    let disabled = of(&violations, InvariantId::NoWorkToDisabled);
    assert_eq!(disabled.len(), 1);
    assert_eq!(disabled[0].at_ms, 2_000);
    assert_eq!(
        disabled[0].objects,
        vec!["agent:pod-a".to_owned(), "job:1".to_owned()]
    );
}

#[test]
fn an_agent_enabled_again_may_take_a_job() {
    let records = vec![
        (0, scheduled(1, 1, "H")),
        (
            1_000,
            Record::AgentConfig {
                agent: "pod-a".to_owned(),
                enabled: false,
            },
        ),
        (
            1_500,
            Record::AgentConfig {
                agent: "pod-a".to_owned(),
                enabled: true,
            },
        ),
        (2_000, assigned(1, "pod-a", "H")),
    ];
    let violations = run(&bounds(), &records, 10_000);
    assert!(of(&violations, InvariantId::NoWorkToDisabled).is_empty());
}

#[test]
fn the_allocator_deleting_a_building_pod_violates() {
    let mut records = clean_life(0, 1, "pod-a");
    records.truncate(5);
    records.push((6_000, deleted("pod-a", Actor::Allocator)));
    let violations = run(&bounds(), &records, 10_000);
    let killed = of(&violations, InvariantId::NoKillWhileBuilding);
    assert_eq!(killed.len(), 1);
    assert_eq!(killed[0].at_ms, 6_000);
    assert_eq!(
        killed[0].objects,
        vec!["pod:pod-a".to_owned(), "job:1".to_owned()]
    );
}

#[test]
fn deleting_after_completion_or_by_an_external_fault_is_not_a_kill_while_building() {
    let violations = run(&bounds(), &clean_life(0, 1, "pod-a"), 10_000);
    assert!(of(&violations, InvariantId::NoKillWhileBuilding).is_empty());
    let mut records = clean_life(0, 1, "pod-b");
    records.truncate(5);
    records.push((6_000, deleted("pod-b", Actor::External)));
    let violations = run(&bounds(), &records, 10_000);
    assert!(of(&violations, InvariantId::NoKillWhileBuilding).is_empty());
}

#[test]
fn deleting_a_pod_whose_container_died_mid_build_is_not_a_kill_while_building() {
    let mut records = clean_life(0, 1, "pod-a");
    records.truncate(5);
    let died = Record::ContainerDied {
        pod: "pod-a".to_owned(),
    };
    records.push((5_500, died));
    records.push((6_000, deleted("pod-a", Actor::Allocator)));
    let violations = run(&bounds(), &records, 10_000);
    assert!(of(&violations, InvariantId::NoKillWhileBuilding).is_empty());
}

#[test]
fn a_container_death_before_an_assignment_does_not_excuse_killing_that_build() {
    let mut records = clean_life(0, 1, "pod-a");
    records.truncate(5);
    let died = Record::ContainerDied {
        pod: "pod-a".to_owned(),
    };
    records.insert(4, (3_500, died));
    records.push((6_000, deleted("pod-a", Actor::Allocator)));
    let violations = run(&bounds(), &records, 10_000);
    assert_eq!(of(&violations, InvariantId::NoKillWhileBuilding).len(), 1);
}
