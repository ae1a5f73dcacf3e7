//! Rule 9's turns when the room a younger job's create-agent finds holds more than one pod.

use super::driver;
use crate::allocator::ClusterProfile;

/// explore/elastic seeds 40364 and 40476: under `pending_pods_count` 3 a burst's pods had
/// all become Running when a younger job's create-agent came, yet the room went to an older
/// job the limit had turned away and the younger job got no pod; at each of its resends the
/// same happened with two slots left free, and it waited 8 to 12 minutes. The older job's
/// turn comes first; the younger job's own pod follows while room remains.
#[test]
fn a_younger_job_gets_its_own_pod_after_an_older_turn_while_room_remains() {
    let mut driver = driver(ClusterProfile {
        pending_pods_count: 3,
        ..ClusterProfile::default()
    });
    for job in 1..=4 {
        driver.create_agent(job);
    }
    driver.settle();
    assert_eq!(driver.decided("skip-limit")[0].job_id, Some(4));
    for pod in driver.pod_names() {
        driver.register(&pod);
    }
    // Room for three: job 4's turn first, then job 5's own pod.
    driver.now_ms = 20_000;
    driver.create_agent(5);
    driver.settle();
    assert_eq!(driver.decided("skip-turn")[0].job_id, Some(5));
    let created: Vec<Option<u64>> = driver.decided("create").iter().map(|d| d.job_id).collect();
    assert_eq!(created, vec![Some(1), Some(2), Some(3), Some(4), Some(5)]);
    // Job 5 has its pod: it holds no turn, and the last slot is job 6's own.
    driver.now_ms = 30_000;
    driver.create_agent(6);
    driver.settle();
    assert_eq!(driver.decided("skip-turn").len(), 1);
    let created: Vec<Option<u64>> = driver.decided("create").iter().map(|d| d.job_id).collect();
    assert_eq!(created.last(), Some(&Some(6)));
    assert_eq!(created.len(), 6, "one pod per job");
}

/// The other edge: when the older job's pod fills the limit, the younger job gets none and
/// keeps its own turn (the limit is full for it too).
#[test]
fn a_younger_job_gets_no_pod_when_the_older_turn_fills_the_limit() {
    let mut driver = driver(ClusterProfile {
        pending_pods_count: 2,
        ..ClusterProfile::default()
    });
    for job in 1..=4 {
        driver.create_agent(job);
    }
    driver.settle();
    let refused: Vec<Option<u64>> = (driver.decided("skip-limit").iter())
        .map(|d| d.job_id)
        .collect();
    assert_eq!(refused, vec![Some(3), Some(4)]);
    let first = driver.pod_names()[0].clone();
    driver.register(&first);
    // Room for one: job 3's turn takes it; job 5 is refused by the limit it filled.
    driver.now_ms = 20_000;
    driver.create_agent(5);
    driver.settle();
    assert_eq!(driver.decided("skip-turn")[0].job_id, Some(5));
    let refused: Vec<Option<u64>> = (driver.decided("skip-limit").iter())
        .map(|d| d.job_id)
        .collect();
    assert_eq!(refused, vec![Some(3), Some(4), Some(5)]);
    let created: Vec<Option<u64>> = driver.decided("create").iter().map(|d| d.job_id).collect();
    assert_eq!(created, vec![Some(1), Some(2), Some(3)]);
}
