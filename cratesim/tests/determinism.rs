//! The crates' runs replay: one seed twice gives one fingerprint, and the pinned seeds of
//! `tests/pins.txt` give the pinned fingerprints. `cargo test` here checks them on the debug
//! build; `.ci/run` runs these tests in the optimised `sim` profile, the build `cargo xtask sim`
//! runs: one pins file for both is the claim that debug and optimised builds agree.

use std::path::Path;
use std::process::Command;

/// `(exit code, first line)` of `elasticsim-crates sim SCENARIO --seed SEED`, run from the
/// repository's root.
fn sim(scenario: &str, seed: u64) -> (i32, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let output = Command::new(env!("CARGO_BIN_EXE_elasticsim-crates"))
        .current_dir(&root)
        .args(["sim", scenario, "--seed", &seed.to_string()])
        .output()
        .expect("the runner starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let first = stdout.lines().next().unwrap_or("").to_owned();
    (output.status.code().unwrap_or(-1), first)
}

/// The fingerprint in a seed line `seed N: VERDICT FINGERPRINT IDS`.
fn fingerprint(line: &str) -> &str {
    line.split_whitespace().nth(3).unwrap_or("")
}

#[test]
fn one_seed_run_twice_gives_one_fingerprint_and_another_seed_another() {
    let scenario = "scenarios/crates/kube-lease-manager-outage-error.toml";
    let (code, first) = sim(scenario, 3);
    let (again_code, again) = sim(scenario, 3);
    let (_, other) = sim(scenario, 4);
    assert!(code == 0 || code == 1, "exit {code}: {first}");
    assert_eq!(
        (code, fingerprint(&first)),
        (again_code, fingerprint(&again))
    );
    assert_eq!(fingerprint(&first).len(), 64, "{first}");
    assert_ne!(fingerprint(&first), fingerprint(&other));
}

#[test]
fn the_pinned_seeds_give_their_pinned_fingerprints() {
    let pins = include_str!("pins.txt");
    let mut checked = 0;
    for line in pins.lines().filter(|line| !line.starts_with('#')) {
        let [scenario, seed, expected] = line.split_whitespace().collect::<Vec<_>>()[..] else {
            panic!("tests/pins.txt: a line is `scenario seed fingerprint`, not {line:?}");
        };
        let (_, got) = sim(scenario, seed.parse().expect("a seed"));
        assert_eq!(fingerprint(&got), expected, "{scenario} seed {seed}: {got}");
        checked += 1;
    }
    assert!(
        checked >= 2,
        "tests/pins.txt pins one seed of each crate at least"
    );
}

#[test]
fn a_scenario_without_a_lease_crate_or_with_a_fault_a_crate_run_cannot_take_is_refused() {
    let (code, _) = sim("scenarios/leader-outage.toml", 1);
    assert_eq!(code, 2);
    let (code, _) = sim("scenarios/leader-chaos.toml", 1);
    assert_eq!(code, 2);
}
