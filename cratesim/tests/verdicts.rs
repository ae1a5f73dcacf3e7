//! The verdicts docs/crates.md states, on seed 1 of each scenario it names: what each crate
//! keeps, and the violation each bug report shows.

use std::path::Path;
use std::process::Command;

/// The verdict line of `elasticsim-crates sim SCENARIO --seed 1`: `(PASS|FAIL, violated ids)`.
fn verdict(scenario: &str) -> (String, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let output = Command::new(env!("CARGO_BIN_EXE_elasticsim-crates"))
        .current_dir(&root)
        .args(["sim", scenario, "--seed", "1"])
        .output()
        .expect("the runner starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let first: Vec<&str> = stdout
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let code = output.status.code();
    let verdict = first.get(2).copied().unwrap_or("").to_owned();
    assert_eq!(
        code,
        Some(if verdict == "PASS" { 0 } else { 1 }),
        "{stdout}"
    );
    (verdict, first.get(4).copied().unwrap_or("").to_owned())
}

#[test]
fn both_crates_fail_over_after_a_crash_and_a_graceful_stop_but_kube_leader_election_races() {
    let lease_manager = verdict("scenarios/crates/kube-lease-manager-failover.toml");
    assert_eq!(lease_manager, ("PASS".to_owned(), String::new()));
    let leader_election = verdict("scenarios/crates/kube-leader-election-failover.toml");
    assert_eq!(
        leader_election,
        ("FAIL".to_owned(), "single-leader-acting".to_owned())
    );
}

#[test]
fn a_leader_cut_off_from_the_api_keeps_acting_under_both_crates() {
    for lease_crate in ["kube-lease-manager", "kube-leader-election"] {
        let scenario = format!("scenarios/crates/{lease_crate}-partition.toml");
        let (verdict, ids) = verdict(&scenario);
        assert_eq!(verdict, "FAIL", "{scenario}");
        assert!(ids.contains("single-leader-acting"), "{scenario}: {ids}");
        assert!(ids.contains("leader-grounded"), "{scenario}: {ids}");
    }
}

#[test]
fn an_api_outage_leaves_the_leader_acting_without_a_lease() {
    for lease_crate in ["kube-lease-manager", "kube-leader-election"] {
        for mode in ["error", "hang"] {
            let scenario = format!("scenarios/crates/{lease_crate}-outage-{mode}.toml");
            let (verdict, ids) = verdict(&scenario);
            assert_eq!(verdict, "FAIL", "{scenario}");
            assert!(ids.contains("leader-grounded"), "{scenario}: {ids}");
        }
    }
}
