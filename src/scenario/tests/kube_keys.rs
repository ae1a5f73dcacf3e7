//! The Kubernetes-fidelity keys (`[cluster] termination_grace` and `node_eviction`,
//! `[server] cancel_kill`, `node_loss.replace_after`, `job_cancel`): defaults, round trip,
//! `[kube] request_timeout` and `dial_timeout` (and their older `[cluster]` spelling), and
//! bad values rejected with file, line, column and key.

use crate::scenario::{
    ElasticFault, ErrorKind, FaultKind, JobTarget, Scenario, ScenarioError, parse, to_toml,
};
use std::path::Path;

fn load(text: &str) -> Scenario {
    parse(text, Path::new("scenarios/ok.toml"))
        .unwrap_or_else(|error| panic!("{error}"))
        .scenario
}

fn error_of(text: &str) -> ScenarioError {
    match parse(text, Path::new("scenarios/bad.toml")) {
        Ok(loaded) => panic!("the scenario should be rejected:\n{text}\nloaded: {loaded:?}"),
        Err(error) => error,
    }
}

fn assert_located(error: &ScenarioError, kind: ErrorKind, key: &str, line: usize, column: usize) {
    assert_eq!(
        (error.kind, error.key.as_str(), error.line, error.column),
        (kind, key, line, column),
        "unexpected error: {error}"
    );
    let shown = error.to_string();
    let prefix = format!("scenarios/bad.toml:{line}:{column}: {key}: ");
    assert!(shown.starts_with(&prefix), "{shown}");
}

#[test]
fn the_new_keys_default_to_kubernetes_and_gocd_values() {
    let scenario = load("name = \"x\"\n[[faults]]\nat = \"1m\"\nkind = \"node_loss\"\n");
    assert_eq!(scenario.cluster.termination_grace_ms, 30_000);
    assert_eq!(scenario.cluster.node_eviction_ms, 300_000);
    assert_eq!(scenario.server.cancel_kill_ms, 10_000);
    assert_eq!(
        scenario.faults[0].kind,
        FaultKind::Elastic(ElasticFault::NodeLoss {
            count: 1,
            replace_after_ms: 600_000
        })
    );
}

#[test]
fn the_new_keys_round_trip_through_to_toml() {
    let text = "name = \"x\"\n[cluster]\ntermination_grace = \"0s\"\nnode_eviction = \"40s\"\n\
                [server]\ncancel_kill = \"3m\"\n\
                [[faults]]\nat = \"1m\"\nkind = \"node_loss\"\nreplace_after = \"2m\"\n\
                [[faults]]\nat = \"2m\"\nkind = \"job_cancel\"\ntarget = \"scheduled\"\n\
                count = 3\n";
    let scenario = load(text);
    assert_eq!(scenario.cluster.termination_grace_ms, 0);
    assert_eq!(scenario.cluster.node_eviction_ms, 40_000);
    assert_eq!(scenario.server.cancel_kill_ms, 180_000);
    assert_eq!(
        scenario.faults[1].kind,
        FaultKind::Elastic(ElasticFault::JobCancel {
            target: JobTarget::Scheduled,
            count: 3
        })
    );
    let written = to_toml(&scenario);
    assert_eq!(load(&written), scenario, "{written}");
}

#[test]
fn bad_cluster_and_server_durations_are_located() {
    let cases = [
        (
            "[cluster]\ntermination_grace = \"30\"\n",
            "cluster.termination_grace",
            21,
        ),
        (
            "[cluster]\nnode_eviction = 300\n",
            "cluster.node_eviction",
            17,
        ),
        (
            "[server]\ncancel_kill = \"-1s\"\n",
            "server.cancel_kill",
            15,
        ),
    ];
    for (section, key, column) in cases {
        let error = error_of(&format!("name = \"x\"\n{section}"));
        assert!(
            matches!(error.kind, ErrorKind::InvalidValue | ErrorKind::WrongType),
            "{error}"
        );
        assert_located(&error, error.kind, key, 3, column);
    }
}

#[test]
fn bad_node_loss_and_job_cancel_values_are_located() {
    let fault = "name = \"x\"\n[[faults]]\nat = \"1m\"\nkind = ";
    let zero = error_of(&format!("{fault}\"node_loss\"\nreplace_after = \"0s\"\n"));
    assert_located(&zero, ErrorKind::Semantic, "faults[0].replace_after", 5, 17);
    let unit = error_of(&format!("{fault}\"node_loss\"\nreplace_after = \"10\"\n"));
    assert_located(
        &unit,
        ErrorKind::InvalidValue,
        "faults[0].replace_after",
        5,
        17,
    );
    let target = error_of(&format!("{fault}\"job_cancel\"\ntarget = \"idle\"\n"));
    assert_located(&target, ErrorKind::InvalidValue, "faults[0].target", 5, 10);
    assert_eq!(target.choices, ["building", "scheduled"]);
    let missing = error_of(&format!("{fault}\"job_cancel\"\ncount = 2\n"));
    assert_eq!(
        (missing.kind, missing.key.as_str()),
        (ErrorKind::MissingKey, "faults[0].target"),
        "{missing}"
    );
    assert_eq!(missing.line, 2, "{missing}");
    let count = error_of(&format!(
        "{fault}\"job_cancel\"\ntarget = \"building\"\ncount = 0\n"
    ));
    assert_located(&count, count.kind, "faults[0].count", 6, 9);
    let foreign = error_of(&format!(
        "{fault}\"job_cancel\"\ntarget = \"building\"\nfor = \"1m\"\n"
    ));
    assert_located(&foreign, ErrorKind::UnknownKey, "faults[0].for", 6, 1);
    let swarm = error_of("name = \"x\"\n[swarm]\nenabled = true\nkinds = [\"job_cancle\"]\n");
    assert_eq!(swarm.key, "swarm.kinds[0]", "{swarm}");
    assert!(swarm.choices.contains(&"job_cancel".to_owned()), "{swarm}");
}

#[test]
fn the_kube_timeouts_default_to_the_api_server_and_client_go_values() {
    let scenario = load("name = \"x\"\n");
    assert_eq!(scenario.kube.request_timeout_ms, 60_000);
    assert_eq!(scenario.kube.dial_timeout_ms, 30_000);
    assert!(
        !to_toml(&scenario).contains("[kube]"),
        "defaults are not written"
    );
}

#[test]
fn the_kube_section_round_trips_and_the_older_cluster_spelling_still_loads() {
    let scenario =
        load("name = \"x\"\n[kube]\nrequest_timeout = \"30s\"\ndial_timeout = \"10s\"\n");
    assert_eq!(
        (
            scenario.kube.request_timeout_ms,
            scenario.kube.dial_timeout_ms
        ),
        (30_000, 10_000)
    );
    let written = to_toml(&scenario);
    assert!(
        written.contains("[kube]\nrequest_timeout = \"30s\""),
        "{written}"
    );
    assert_eq!(load(&written), scenario, "{written}");
    let older =
        load("name = \"x\"\n[cluster]\napi_request_timeout = \"30s\"\ndial_timeout = \"10s\"\n");
    assert_eq!(older.kube, scenario.kube);
}

#[test]
fn bad_or_doubled_kube_timeouts_are_located() {
    let zero = error_of("name = \"x\"\n[kube]\nrequest_timeout = \"0s\"\n");
    assert_located(&zero, ErrorKind::Semantic, "kube.request_timeout", 3, 19);
    let unknown = error_of("name = \"x\"\n[kube]\nrequest_timout = \"5s\"\n");
    assert_located(&unknown, ErrorKind::UnknownKey, "kube.request_timout", 3, 1);
    let both =
        error_of("name = \"x\"\n[cluster]\ndial_timeout = \"5s\"\n[kube]\ndial_timeout = \"9s\"\n");
    assert_located(&both, ErrorKind::Semantic, "cluster.dial_timeout", 3, 16);
    assert!(both.to_string().contains("[kube] dial_timeout"), "{both}");
}
