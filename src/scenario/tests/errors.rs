//! Error tests: each kind of malformed scenario names the right line, column and key, and no
//! input makes loading panic.

use crate::scenario::{
    ErrorKind, FAULT_KINDS, INVARIANT_IDS, PARTITION_GROUPS, POLICIES, ScenarioError, VARIANTS,
    load, parse, parse_bytes, to_toml,
};
use std::path::Path;

const CONTRACT_EXAMPLE: &str = include_str!("../testdata/contract_example.toml");
const PROFILE: &str = "[[profiles]]\nname = \"small\"\n";

fn error_of(text: &str) -> ScenarioError {
    match parse(text, Path::new("scenarios/bad.toml")) {
        Ok(loaded) => panic!("the scenario should be rejected:\n{text}\nloaded: {loaded:?}"),
        Err(error) => error,
    }
}

/// Asserts the error's kind, key and 1-based position.
fn assert_error(error: &ScenarioError, kind: ErrorKind, key: &str, line: usize, column: usize) {
    assert_eq!(
        (error.kind, error.key.as_str(), error.line, error.column),
        (kind, key, line, column),
        "unexpected error: {error}"
    );
    assert_eq!(error.file, Path::new("scenarios/bad.toml"));
}

#[test]
fn a_toml_syntax_error_names_its_line_and_column() {
    let error = error_of("name = \"x\"\n[cluster]\nnodes = = 3\n");
    assert_error(&error, ErrorKind::Syntax, "cluster.nodes", 3, 9);
    assert!(
        error
            .to_string()
            .starts_with("scenarios/bad.toml:3:9: cluster.nodes: invalid TOML: "),
        "{error}"
    );
}

#[test]
fn an_unknown_key_is_named_with_its_location_and_the_valid_keys() {
    let error = error_of("name = \"x\"\n[cluster]\nnodes = 3\n  nodez = 3\n");
    assert_error(&error, ErrorKind::UnknownKey, "cluster.nodez", 4, 3);
    assert_eq!(
        error.to_string(),
        "scenarios/bad.toml:4:3: cluster.nodez: unknown key \"nodez\"; valid keys here: \
         \"nodes\", \"pods_per_node\", \"pod_startup\", \"api_latency\", \"api_error_rate\", \
         \"api_request_timeout\", \"dial_timeout\", \"container_restart_backoff\", \
         \"termination_grace\", \"node_eviction\""
    );
    let top = error_of("name = \"x\"\nsed = 3\n");
    assert_error(&top, ErrorKind::UnknownKey, "sed", 2, 1);
    assert!(top.choices.contains(&"seed".to_owned()));
}

#[test]
fn a_key_that_belongs_to_another_fault_kind_is_unknown_for_this_one() {
    let error = error_of(
        "name = \"x\"\n[[faults]]\nat = \"1m\"\nkind = \"node_loss\"\ntarget = \"idle\"\n",
    );
    assert_error(&error, ErrorKind::UnknownKey, "faults[0].target", 5, 1);
    assert_eq!(error.choices, ["at", "kind", "count", "replace_after"]);
}

#[test]
fn a_value_of_the_wrong_type_names_what_was_expected_and_found() {
    let error = error_of("name = \"x\"\n[cluster]\nnodes = \"four\"\n");
    assert_error(&error, ErrorKind::WrongType, "cluster.nodes", 3, 9);
    assert!(
        error
            .to_string()
            .ends_with("expected a non-negative integer; found \"four\""),
        "{error}"
    );
    let section = error_of("name = \"x\"\ncluster = 4\n");
    assert_error(&section, ErrorKind::WrongType, "cluster", 2, 11);
    let single_table = error_of("name = \"x\"\n[profiles]\nname = \"p\"\n");
    assert_error(&single_table, ErrorKind::WrongType, "profiles", 2, 1);
    let flag = error_of("name = \"x\"\n[plugin]\nenable_agent_reuse = \"yes\"\n");
    assert_error(
        &flag,
        ErrorKind::WrongType,
        "plugin.enable_agent_reuse",
        3,
        22,
    );
}

#[test]
fn a_bad_enum_value_lists_the_valid_choices() {
    let text = "name = \"x\"\n[[faults]]\nat = \"1m\"\n\n[[faults]]\nat = \"2m\"\n\
                kind = \"server-crash\"\n";
    // The first fault has no kind at all: that is reported at its table header.
    let error = error_of(text);
    assert_error(&error, ErrorKind::MissingKey, "faults[0].kind", 2, 1);
    let error = error_of(&text.replacen("at = \"1m\"\n", "at = \"1m\"\nkind = \"node_loss\"\n", 1));
    assert_error(&error, ErrorKind::InvalidValue, "faults[1].kind", 8, 8);
    assert_eq!(error.choices, FAULT_KINDS);
    assert!(
        error.to_string().starts_with(
            "scenarios/bad.toml:8:8: faults[1].kind: \
             expected one of \"server_crash\", \"pod_delete\""
        ),
        "{error}"
    );
    assert!(
        error.to_string().ends_with("; found \"server-crash\""),
        "{error}"
    );
    let policy = error_of("name = \"x\"\n[plugin]\npolicy = \"pr-355\"\n");
    assert_error(&policy, ErrorKind::InvalidValue, "plugin.policy", 3, 10);
    assert_eq!(policy.choices, POLICIES);
    let mode = error_of(
        "name = \"x\"\n[[faults]]\nat = \"1m\"\nkind = \"api_outage\"\nfor = \"1s\"\n\
         mode = \"slow\"\n",
    );
    assert_error(&mode, ErrorKind::InvalidValue, "faults[0].mode", 6, 8);
    assert_eq!(mode.choices, ["error", "hang"]);
}

#[test]
fn a_bad_duration_says_why() {
    let fault = "name = \"x\"\n[[faults]]\nat = \"1m\"\nkind = \"server_crash\"\ndowntime = ";
    let cases = [
        ("\"45\"", "a number without a unit"),
        ("\"5d\"", "the unknown unit \"d\""),
        ("\"-5s\"", "a negative duration"),
        ("\"\"", "an empty string"),
        ("\"99999999999999999999h\"", "too large"),
        ("\"1.5s\"", "the character '.'"),
    ];
    for (value, reason) in cases {
        let error = error_of(&format!("{fault}{value}\n"));
        assert_error(&error, ErrorKind::InvalidValue, "faults[0].downtime", 5, 12);
        assert!(error.found.contains(reason), "{value}: {error}");
    }
    let integer = error_of(&format!("{fault}45\n"));
    assert_error(&integer, ErrorKind::WrongType, "faults[0].downtime", 5, 12);
    assert!(integer.expected.contains("\"90s\""), "{integer}");
}

#[test]
fn min_above_max_points_at_min() {
    let error =
        error_of("name = \"x\"\n[cluster]\npod_startup = { min = \"15s\", max = \"2s\" }\n");
    assert_error(
        &error,
        ErrorKind::Semantic,
        "cluster.pod_startup.min",
        3,
        23,
    );
    assert!(
        error
            .to_string()
            .ends_with("expected min <= max; found min = \"15s\" > max = \"2s\"")
    );
    let missing = error_of("name = \"x\"\n[cluster]\npod_startup = { min = \"15s\" }\n");
    assert_error(
        &missing,
        ErrorKind::MissingKey,
        "cluster.pod_startup.max",
        3,
        15,
    );
    let extra =
        error_of("name = \"x\"\n[cluster]\napi_latency = { min = \"1s\", mean = \"2s\" }\n");
    assert_error(
        &extra,
        ErrorKind::UnknownKey,
        "cluster.api_latency.mean",
        3,
        29,
    );
}

#[test]
fn negative_or_zero_counts_are_rejected_where_meaningless() {
    let job = format!(
        "name = \"x\"\n{PROFILE}[[jobs]]\nkind = \"burst\"\nat = \"0s\"\nprofile = \"small\"\n\
         runtime = \"1m\"\ncount = "
    );
    let negative = error_of(&format!("{job}-2\n"));
    assert_error(&negative, ErrorKind::InvalidValue, "jobs[0].count", 9, 9);
    assert!(
        negative.to_string().ends_with("found the integer -2"),
        "{negative}"
    );
    let zero = error_of(&format!("{job}0\n"));
    assert_error(&zero, ErrorKind::InvalidValue, "jobs[0].count", 9, 9);
    let huge = error_of(&format!("{job}5000000000\n"));
    assert_error(&huge, ErrorKind::InvalidValue, "jobs[0].count", 9, 9);
    let nodes = error_of("name = \"x\"\n[cluster]\nnodes = 0\n");
    assert_error(&nodes, ErrorKind::InvalidValue, "cluster.nodes", 3, 9);
    let seed = error_of("name = \"x\"\nseed = -1\n");
    assert_error(&seed, ErrorKind::InvalidValue, "seed", 2, 8);
}

#[test]
fn a_job_or_fault_naming_an_unknown_profile_lists_the_known_ones() {
    let job = "[[jobs]]\nkind = \"single\"\nat = \"1m\"\nruntime = \"1m\"\nprofile = \"large\"\n";
    let error = error_of(&format!("name = \"x\"\n{PROFILE}{job}"));
    assert_error(&error, ErrorKind::Semantic, "jobs[0].profile", 8, 11);
    assert_eq!(error.choices, ["small"]);
    let no_profiles = error_of(&format!("name = \"x\"\n{job}"));
    assert_error(&no_profiles, ErrorKind::Semantic, "jobs[0].profile", 6, 11);
    assert!(
        no_profiles.to_string().contains("the file defines none"),
        "{no_profiles}"
    );
    let trace = error_of("name = \"x\"\n[[jobs]]\nkind = \"trace\"\nfile = \"t.jsonl\"\n");
    assert_error(&trace, ErrorKind::Semantic, "jobs[0].kind", 3, 8);
    let edit = "[[faults]]\nat = \"1m\"\nkind = \"profile_edit\"\nprofile = \"big\"\n\
                set = { cpu = \"1\" }\n";
    let error = error_of(&format!("name = \"x\"\n{PROFILE}{edit}"));
    assert_error(&error, ErrorKind::Semantic, "faults[0].profile", 7, 11);
    let bad_set = edit.replace("\"big\"", "\"small\"").replace("cpu", "gpu");
    let error = error_of(&format!("name = \"x\"\n{PROFILE}{bad_set}"));
    assert_error(&error, ErrorKind::UnknownKey, "faults[0].set.gpu", 8, 9);
    assert_eq!(error.choices, ["image", "cpu", "memory", "environment"]);
}

#[test]
fn cluster_profile_edits_name_the_bad_value_of_each_key() {
    let edit = |set: &str| {
        format!(
            "name = \"x\"\n[[faults]]\nat = \"1m\"\nkind = \"cluster_profile_edit\"\n\
             set = {set}\n"
        )
    };
    let cases = [
        (
            "{ pending_pods_count = 0 }",
            ErrorKind::InvalidValue,
            "pending_pods_count",
            30,
        ),
        ("{ max_pods = -1 }", ErrorKind::InvalidValue, "max_pods", 20),
        (
            "{ enable_agent_reuse = \"yes\" }",
            ErrorKind::WrongType,
            "enable_agent_reuse",
            30,
        ),
        (
            "{ idle_timeout = \"soon\" }",
            ErrorKind::InvalidValue,
            "idle_timeout",
            24,
        ),
        (
            "{ auto_register_timeout = 10 }",
            ErrorKind::WrongType,
            "auto_register_timeout",
            33,
        ),
        (
            "{ go_server_url = 1 }",
            ErrorKind::WrongType,
            "go_server_url",
            25,
        ),
        (
            "{ namespace = \"b\" }",
            ErrorKind::UnknownKey,
            "namespace",
            9,
        ),
    ];
    for (set, kind, key, column) in cases {
        let error = error_of(&edit(set));
        assert_error(&error, kind, &format!("faults[0].set.{key}"), 5, column);
    }
    let empty = error_of(&edit("{}"));
    assert_error(&empty, ErrorKind::Semantic, "faults[0].set", 5, 7);
    let missing =
        error_of("name = \"x\"\n[[faults]]\nat = \"1m\"\nkind = \"cluster_profile_edit\"\n");
    assert_eq!(missing.key, "faults[0].set");
}

#[test]
fn leader_faults_need_a_leader_section_and_an_existing_replica() {
    let fault = "[[faults]]\nat = \"1m\"\nkind = \"replica_crash\"\ndowntime = \"1m\"\nreplica = ";
    let no_leader = error_of(&format!("name = \"x\"\n{fault}0\n"));
    assert_error(&no_leader, ErrorKind::Semantic, "faults[0].kind", 4, 8);
    let leader = "[leader]\nreplicas = 2\n";
    let too_high = error_of(&format!("name = \"x\"\n{leader}{fault}2\n"));
    assert_error(&too_high, ErrorKind::Semantic, "faults[0].replica", 8, 11);
    assert!(
        too_high
            .expected
            .contains("from 0 to 1, \"replica-N\" or \"leader\""),
        "{too_high}"
    );
    let wrong = error_of(&format!("name = \"x\"\n{leader}{fault}\"follower\"\n"));
    assert_error(&wrong, ErrorKind::InvalidValue, "faults[0].replica", 8, 11);
    let partition = "[[faults]]\nat = \"1m\"\nkind = \"partition\"\nfor = \"1m\"\nbetween = ";
    let replica_group = error_of(&format!(
        "name = \"x\"\n{leader}{partition}[\"gocd\", \"replica-5\"]\n"
    ));
    assert_error(
        &replica_group,
        ErrorKind::Semantic,
        "faults[0].between[1]",
        8,
        20,
    );
    let no_leader = error_of(&format!(
        "name = \"x\"\n{partition}[\"leader\", \"gocd\"]\n"
    ));
    assert_error(
        &no_leader,
        ErrorKind::Semantic,
        "faults[0].between[0]",
        6,
        12,
    );
    let unknown = error_of(&format!("name = \"x\"\n{partition}[\"gocd\", \"etcd\"]\n"));
    assert_error(
        &unknown,
        ErrorKind::InvalidValue,
        "faults[0].between[1]",
        6,
        20,
    );
    assert_eq!(unknown.choices, PARTITION_GROUPS);
    let three = error_of(&format!(
        "name = \"x\"\n{partition}[\"gocd\", \"agents\", \"kube-api\"]\n"
    ));
    assert_error(&three, ErrorKind::InvalidValue, "faults[0].between", 6, 11);
}

#[test]
fn rates_must_be_finite_and_in_range() {
    let rate = error_of("name = \"x\"\n[cluster]\napi_error_rate = 1.5\n");
    assert_error(
        &rate,
        ErrorKind::InvalidValue,
        "cluster.api_error_rate",
        3,
        18,
    );
    let poisson = format!(
        "name = \"x\"\n{PROFILE}[[jobs]]\nkind = \"poisson\"\nprofile = \"small\"\n\
         runtime = \"1m\"\nper_minute = "
    );
    for value in ["0", "-1.5", "nan", "inf", "-inf"] {
        let error = error_of(&format!("{poisson}{value}\n"));
        assert_error(&error, ErrorKind::InvalidValue, "jobs[0].per_minute", 8, 14);
    }
    let drift = "name = \"x\"\n[leader]\n[[faults]]\nat = \"1m\"\nkind = \"clock_drift\"\n\
                 replica = 0\nrate = ";
    let error = error_of(&format!("{drift}0.0\n"));
    assert_error(&error, ErrorKind::InvalidValue, "faults[0].rate", 7, 8);
    let order = error_of(&format!("{poisson}1\nfrom = \"10m\"\nuntil = \"10m\"\n"));
    assert_error(&order, ErrorKind::Semantic, "jobs[0].from", 9, 8);
}

#[test]
fn leader_timings_follow_the_client_go_rule() {
    let base = "name = \"x\"\n[leader]\n";
    let lease = error_of(&format!("{base}lease_duration = \"10s\"\n"));
    assert_error(&lease, ErrorKind::Semantic, "leader.lease_duration", 3, 18);
    let renew = error_of(&format!("{base}renew_deadline = \"2400ms\"\n"));
    assert_error(&renew, ErrorKind::Semantic, "leader.renew_deadline", 3, 18);
    assert!(renew.to_string().contains("1.2 × retry_period"), "{renew}");
    let retry = error_of(&format!("{base}retry_period = \"0s\"\n"));
    assert_error(&retry, ErrorKind::Semantic, "leader.retry_period", 3, 16);
    let variant = error_of(&format!("{base}variant = \"agentk-v3\"\n"));
    assert_eq!(variant.choices, VARIANTS);
}

#[test]
fn names_ids_and_times_are_checked_against_the_contract() {
    let missing = error_of("seed = 3\n");
    assert_error(&missing, ErrorKind::MissingKey, "name", 1, 1);
    let unsafe_name = error_of("name = \"../etc\"\n");
    assert_error(&unsafe_name, ErrorKind::InvalidValue, "name", 1, 8);
    let disable =
        error_of("name = \"x\"\n[invariants]\ndisable = [\"job-wait-bound\", \"job-wait\"]\n");
    assert_error(
        &disable,
        ErrorKind::InvalidValue,
        "invariants.disable[1]",
        3,
        30,
    );
    assert_eq!(disable.choices, INVARIANT_IDS);
    let swarm = error_of("name = \"x\"\n[swarm]\nkinds = [\"meteor\"]\n");
    assert_error(&swarm, ErrorKind::InvalidValue, "swarm.kinds[0]", 3, 10);
    let leader_kind = error_of("name = \"x\"\n[swarm]\nkinds = [\"lease_delete\"]\n");
    assert_error(&leader_kind, ErrorKind::Semantic, "swarm.kinds", 3, 9);
    let late = error_of(
        "name = \"x\"\nduration = \"10m\"\n[[faults]]\nat = \"10m\"\nkind = \"lease_delete\"\n",
    );
    assert_error(&late, ErrorKind::Semantic, "faults[0].kind", 5, 8);
    let late = error_of(
        "name = \"x\"\nduration = \"10m\"\n[[faults]]\nat = \"10m\"\nkind = \"node_loss\"\n",
    );
    assert_error(&late, ErrorKind::Semantic, "faults[0].at", 4, 6);
    let spread = error_of(
        "name = \"x\"\nduration = \"10m\"\n[[profiles]]\nname = \"p\"\n[[faults]]\nat = \"9m\"\n\
         kind = \"burst\"\ncount = 2\nprofile = \"p\"\nruntime = \"1m\"\nspread = \"2m\"\n",
    );
    assert_error(&spread, ErrorKind::Semantic, "faults[0].spread", 11, 10);
    let duplicate =
        error_of("name = \"x\"\n[[profiles]]\nname = \"a\"\n[[profiles]]\nname = \"a\"\n");
    assert_error(&duplicate, ErrorKind::Semantic, "profiles[1].name", 5, 8);
}

#[test]
fn invalid_utf8_is_reported_at_the_first_bad_byte() {
    let error = parse_bytes(
        b"name = \"x\"\ndescription = \"caf\xe9\"\n",
        Path::new("bad.toml"),
    )
    .expect_err("Latin-1 bytes are not UTF-8");
    assert_eq!(
        (error.kind, error.line, error.column),
        (ErrorKind::Encoding, 2, 19)
    );
    assert_eq!(
        error.to_string(),
        "bad.toml:2:19: expected UTF-8 text; found byte 0xe9"
    );
}

#[test]
fn an_unreadable_file_is_an_error_naming_the_file() {
    let path = Path::new("/nonexistent/elasticsim/scenario.toml");
    let error = load(path).expect_err("the file does not exist");
    assert_eq!((error.kind, error.line), (ErrorKind::Unreadable, 0));
    assert!(
        error
            .to_string()
            .starts_with("/nonexistent/elasticsim/scenario.toml: expected a readable")
    );
}

#[test]
fn huge_numbers_and_deep_nesting_are_errors_not_panics() {
    let seed = error_of("name = \"x\"\nseed = 99999999999999999999999\n");
    assert!(
        matches!(seed.kind, ErrorKind::Syntax | ErrorKind::InvalidValue),
        "{seed}"
    );
    let deep_array = format!("name = \"x\"\ndescription = {}\n", "[".repeat(100_000));
    assert_eq!(error_of(&deep_array).kind, ErrorKind::Syntax);
    let deep_table = format!(
        "name = \"x\"\ncluster = {}{}\n",
        "{ a = ".repeat(5_000),
        "}".repeat(5_000)
    );
    assert!(matches!(
        error_of(&deep_table).kind,
        ErrorKind::Syntax | ErrorKind::UnknownKey
    ));
}

/// A small deterministic generator so the fuzz loop is the same on every run.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut mixed = self.0;
        mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        mixed ^ (mixed >> 31)
    }

    fn below(&mut self, bound: usize) -> usize {
        usize::try_from(self.next() % bound as u64).expect("below a usize bound")
    }
}

/// One random edit of a valid file: flip, delete, duplicate or insert bytes, or swap lines.
fn mutate(random: &mut SplitMix64, bytes: &mut Vec<u8>) {
    const INTERESTING: &[&[u8]] = &[
        b"-",
        b"\"",
        b"[",
        b"]]",
        b"{",
        b"=",
        b"\n",
        b"0",
        b"9999999999999999999999",
        b"nan",
        b"ms",
        b"\xff",
    ];
    let at = random.below(bytes.len() + 1);
    match random.below(5) {
        0 if at < bytes.len() => bytes[at] ^= 1 << random.below(8),
        1 if at < bytes.len() => {
            let end = (at + 1 + random.below(8)).min(bytes.len());
            bytes.drain(at..end);
        }
        2 => {
            let token = INTERESTING[random.below(INTERESTING.len())];
            bytes.splice(at..at, token.iter().copied());
        }
        3 if at < bytes.len() => {
            let end = (at + 1 + random.below(40)).min(bytes.len());
            let copy = bytes[at..end].to_vec();
            bytes.splice(at..at, copy);
        }
        _ => {
            let mut lines: Vec<Vec<u8>> = bytes
                .split(|&byte| byte == b'\n')
                .map(<[u8]>::to_vec)
                .collect();
            let (first, second) = (random.below(lines.len()), random.below(lines.len()));
            lines.swap(first, second);
            *bytes = lines.join(&b'\n');
        }
    }
}

/// Loading either fails at a position inside the file or yields a scenario that round-trips.
fn assert_loads_sanely(bytes: &[u8]) {
    match parse_bytes(bytes, Path::new("fuzz.toml")) {
        Err(error) => {
            let lines = bytes.iter().filter(|&&byte| byte == b'\n').count() + 1;
            assert!(
                error.line >= 1 && error.line <= lines,
                "{error} for {bytes:?}"
            );
            assert!(!error.to_string().is_empty());
        }
        Ok(loaded) => {
            let written = to_toml(&loaded.scenario);
            let reloaded = parse(&written, Path::new("fuzz.toml")).unwrap_or_else(|error| {
                panic!("to_toml wrote an invalid file: {error}\n{written}")
            });
            assert_eq!(reloaded.scenario, loaded.scenario);
        }
    }
}

#[test]
fn random_bytes_and_mutated_scenarios_never_panic() {
    let mut random = SplitMix64(20_261_129);
    for _ in 0..300 {
        let length = random.below(200);
        let bytes: Vec<u8> = (0..length)
            .map(|_| random.next().to_le_bytes()[0])
            .collect();
        assert_loads_sanely(&bytes);
    }
    let mut loaded_count = 0;
    for _ in 0..600 {
        let mut bytes = CONTRACT_EXAMPLE.as_bytes().to_vec();
        for _ in 0..1 + random.below(3) {
            mutate(&mut random, &mut bytes);
        }
        if parse_bytes(&bytes, Path::new("fuzz.toml")).is_ok() {
            loaded_count += 1;
        }
        assert_loads_sanely(&bytes);
    }
    // Mutations often land in comments, so some files must still load: the loop then also
    // exercises the round trip on scenarios nobody wrote by hand.
    assert!(
        loaded_count > 20,
        "only {loaded_count} mutated files loaded"
    );
}

#[test]
fn bad_http2_dead_and_replica_stop_values_name_their_line_and_column() {
    let leader = "[leader]\nreplicas = 2\n";
    let zero = error_of(&format!("name = \"x\"\n{leader}http2_dead = \"0s\"\n"));
    assert_error(&zero, ErrorKind::Semantic, "leader.http2_dead", 4, 14);
    let word = error_of(&format!("name = \"x\"\n{leader}http2_dead = \"soon\"\n"));
    assert_eq!(
        (word.key.as_str(), word.line, word.column),
        ("leader.http2_dead", 4, 14)
    );
    let stop = "[[faults]]\nat = \"1m\"\nkind = \"replica_stop\"\nreplica = ";
    let named = error_of(&format!("name = \"x\"\n{leader}{stop}\"replica-2\"\n"));
    assert_error(&named, ErrorKind::Semantic, "faults[0].replica", 7, 11);
    let garbled = error_of(&format!("name = \"x\"\n{leader}{stop}\"replica-x\"\n"));
    assert_error(
        &garbled,
        ErrorKind::InvalidValue,
        "faults[0].replica",
        7,
        11,
    );
    let downtime = error_of(&format!(
        "name = \"x\"\n{leader}{stop}\"leader\"\ndowntime = 5\n"
    ));
    assert_eq!(
        (downtime.key.as_str(), downtime.line, downtime.column),
        ("faults[0].downtime", 8, 12)
    );
}

#[test]
fn a_request_bound_of_zero_is_rejected_and_a_positive_one_loads_and_round_trips() {
    let error = error_of("name = \"x\"\n[invariants]\nplugin_requests_per_job_max = 0\n");
    assert_error(
        &error,
        ErrorKind::InvalidValue,
        "invariants.plugin_requests_per_job_max",
        3,
        31,
    );
    assert!(error.to_string().contains("a positive integer"), "{error}");
    let text = "name = \"x\"\n[invariants]\nplugin_requests_per_job_max = 250\n";
    let loaded = parse(text, Path::new("x.toml")).expect("a positive bound loads");
    assert_eq!(loaded.scenario.invariants.plugin_requests_per_job_max, 250);
    let again = parse(&to_toml(&loaded.scenario), Path::new("x.toml")).expect("it round-trips");
    assert_eq!(again.scenario, loaded.scenario);
}
