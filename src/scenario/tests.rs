//! Loading tests: the contract's own example loads to the values it states, defaults apply,
//! and `to_toml` round-trips.

use super::{
    Cluster, ClusterProfileChanges, ElasticFault, Fault, FaultKind, FaultType, Invariants,
    JobSource, JobTarget, Kube, Leader, LeaderConfigChange, LeaderFault, LeaderModule, Loaded,
    NetworkFault, OutageMode, Plugin, PodTarget, Profile, Range, ReplicaRef, Scenario, Server,
    Swarm, load, parse, to_toml,
};
use crate::check::InvariantId;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const CONTRACT_EXAMPLE: &str = include_str!("testdata/contract_example.toml");

fn load_text(text: &str) -> Loaded {
    match parse(text, Path::new("scenarios/example.toml")) {
        Ok(loaded) => loaded,
        Err(error) => panic!("the scenario should load, but: {error}"),
    }
}

fn profile_small() -> Profile {
    Profile {
        name: "small".to_owned(),
        image: "gocd/gocd-agent:v25.1.0".to_owned(),
        cpu: "500m".to_owned(),
        memory: "1Gi".to_owned(),
        environment: Some("prod".to_owned()),
    }
}

fn fault(at_ms: u64, kind: FaultKind) -> Fault {
    Fault { at_ms, kind }
}

/// The contract example's faults: the elastic ones, then the leader ones, in file order.
fn contract_example_faults() -> Vec<Fault> {
    let mut faults = contract_example_elastic_faults();
    faults.extend(contract_example_leader_faults());
    faults
}

fn contract_example_elastic_faults() -> Vec<Fault> {
    let image = BTreeMap::from([("image".to_owned(), "gocd/gocd-agent:v25.2.0".to_owned())]);
    vec![
        fault(
            600_000,
            FaultKind::Elastic(ElasticFault::ServerCrash {
                downtime_ms: 45_000,
            }),
        ),
        fault(
            720_000,
            FaultKind::Elastic(ElasticFault::PodDelete {
                target: PodTarget::Idle,
                count: 2,
            }),
        ),
        fault(
            840_000,
            FaultKind::Elastic(ElasticFault::ContainerRestart {
                target: PodTarget::Busy,
                count: 1,
            }),
        ),
        fault(
            960_000,
            FaultKind::Network(NetworkFault::Partition {
                between: ["gocd".to_owned(), "kube-api".to_owned()],
                for_ms: 90_000,
            }),
        ),
        fault(
            1_200_000,
            FaultKind::Network(NetworkFault::ApiOutage {
                for_ms: 30_000,
                mode: OutageMode::Error,
            }),
        ),
        fault(
            1_500_000,
            FaultKind::Elastic(ElasticFault::ProfileEdit {
                profile: "small".to_owned(),
                set: image,
            }),
        ),
        fault(
            1_800_000,
            FaultKind::Elastic(ElasticFault::NodeLoss {
                count: 1,
                replace_after_ms: 600_000,
            }),
        ),
        fault(
            2_100_000,
            FaultKind::Elastic(ElasticFault::Burst {
                count: 25,
                spread_ms: 0,
                profile: "small".to_owned(),
                runtime: Range {
                    min_ms: 10_000,
                    max_ms: 60_000,
                },
            }),
        ),
    ]
}

fn contract_example_leader_faults() -> Vec<Fault> {
    vec![
        fault(
            300_000,
            FaultKind::Leader(LeaderFault::ReplicaCrash {
                replica: ReplicaRef::Index(0),
                downtime_ms: 60_000,
            }),
        ),
        fault(
            480_000,
            FaultKind::Leader(LeaderFault::ReplicaPause {
                replica: ReplicaRef::Leader,
                for_ms: 20_000,
            }),
        ),
        fault(
            540_000,
            FaultKind::Leader(LeaderFault::ClockDrift {
                replica: ReplicaRef::Index(1),
                rate: 1.3,
            }),
        ),
        fault(660_000, FaultKind::Leader(LeaderFault::LeaseDelete)),
        fault(
            720_000,
            FaultKind::Leader(LeaderFault::CallbackDelay {
                replica: ReplicaRef::Index(2),
                delay_ms: 30_000,
            }),
        ),
    ]
}

fn contract_example_leader() -> Leader {
    let module = |name: &str| LeaderModule {
        name: name.to_owned(),
        runnable_when: name.to_owned(),
        work_ctx: crate::mutants::WorkCtx::Background,
    };
    Leader {
        replicas: 3,
        variant: crate::mutants::Variant::Fixed,
        lease_duration_ms: 15_000,
        renew_deadline_ms: 10_000,
        retry_period_ms: 2_000,
        module_stop_latency: Range {
            min_ms: 0,
            max_ms: 2_000,
        },
        module_behaviour: crate::leader::ModuleBehaviour::Shipped,
        http2_dead_ms: 45_000,
        modules: vec![module("gitops"), module("starboard")],
        config: vec![
            LeaderConfigChange {
                at_ms: 0,
                set: BTreeMap::from([("gitops".to_owned(), true), ("starboard".to_owned(), false)]),
            },
            LeaderConfigChange {
                at_ms: 600_000,
                set: BTreeMap::from([("gitops".to_owned(), false)]),
            },
        ],
        lease_crate: None,
    }
}

/// The contract's example, plus the extensions, as the typed scenario it must become.
fn contract_example_scenario() -> Scenario {
    Scenario {
        name: "burst".to_owned(),
        description: "40 jobs in 10 s hit a warm pool of 3 idle agents".to_owned(),
        seed: 7,
        duration_ms: 3_600_000,
        settle_ms: 1_800_000,
        cluster: Cluster::default(),
        kube: Kube::default(),
        server: Server {
            create_agent_threads: 5,
            ..Server::default()
        },
        plugin: Plugin {
            policy: crate::allocator::Policy::Safe,
            enable_agent_reuse: true,
            max_pods: Some(30),
            ..Plugin::default()
        },
        profiles: vec![profile_small()],
        jobs: vec![
            JobSource::Burst {
                at_ms: 60_000,
                count: 40,
                spread_ms: 10_000,
                profile: "small".to_owned(),
                runtime: Range {
                    min_ms: 30_000,
                    max_ms: 180_000,
                },
                environment: None,
            },
            JobSource::Poisson {
                from_ms: 0,
                until_ms: 3_000_000,
                per_minute: 1.5,
                profile: "small".to_owned(),
                runtime: Range {
                    min_ms: 60_000,
                    max_ms: 600_000,
                },
                environment: None,
            },
            JobSource::Trace {
                file: PathBuf::from("scenarios/traces/example.jsonl"),
            },
            JobSource::Single {
                at_ms: 2_400_000,
                profile: "small".to_owned(),
                runtime_ms: 90_000,
                environment: None,
            },
        ],
        faults: contract_example_faults(),
        swarm: Swarm::default(),
        invariants: Invariants {
            max_job_wait_ms: 240_000,
            plugin_requests_per_job_max: 500,
            disable: vec![InvariantId::PendingLimit],
            require: vec![InvariantId::ReuseHappens],
        },
        leader: Some(contract_example_leader()),
        ablations: crate::ablation::Ablations::none(),
    }
}

#[test]
fn every_key_of_the_contract_example_loads_to_the_stated_value() {
    let loaded = load_text(CONTRACT_EXAMPLE);
    assert_eq!(loaded.scenario, contract_example_scenario());
    assert_eq!(loaded.warnings, Vec::<String>::new());
}

#[test]
fn a_file_with_only_a_name_gets_every_default() {
    let scenario = load_text("name = \"minimal\"\n").scenario;
    let expected = Scenario {
        name: "minimal".to_owned(),
        description: String::new(),
        seed: 1,
        duration_ms: 3_600_000,
        settle_ms: 1_800_000,
        cluster: Cluster::default(),
        kube: Kube::default(),
        server: Server::default(),
        plugin: Plugin::default(),
        profiles: Vec::new(),
        jobs: Vec::new(),
        faults: Vec::new(),
        swarm: Swarm::default(),
        invariants: Invariants::default(),
        leader: None,
        ablations: crate::ablation::Ablations::none(),
    };
    assert_eq!(scenario, expected);
}

#[test]
fn the_model_defaults_are_the_contract_defaults() {
    let cluster = Cluster::default();
    assert_eq!((cluster.nodes, cluster.pods_per_node), (4, 10));
    assert_eq!(
        cluster.pod_startup,
        Range {
            min_ms: 2_000,
            max_ms: 15_000
        }
    );
    assert_eq!(cluster.container_restart_backoff_ms, 10_000);
    let plugin = Plugin::default();
    assert_eq!(
        (plugin.policy, plugin.enable_agent_reuse),
        (crate::allocator::Policy::Upstream, false)
    );
    assert_eq!(
        (plugin.idle_timeout_ms, plugin.auto_register_timeout_ms),
        (300_000, 600_000)
    );
    assert_eq!(Invariants::default().max_job_wait_ms, 300_000);
    assert_eq!(Server::default().server_ping_interval_ms, 60_000);
}

#[test]
fn empty_sections_and_omitted_optional_keys_take_their_defaults() {
    let text = r#"
name = "defaults"
[cluster]
[server]
[plugin]
[swarm]
[invariants]
[leader]
[[profiles]]
name = "p"
[[faults]]
at = "1m"
kind = "pod_delete"
[[faults]]
at = "2m"
kind = "api_outage"
for = "10s"
[[jobs]]
kind = "burst"
at = "0s"
count = 1
profile = "p"
runtime = "1m"
[[jobs]]
kind = "poisson"
per_minute = 2
profile = "p"
runtime = "1m"
"#;
    let scenario = load_text(text).scenario;
    assert_eq!(scenario.cluster, Cluster::default());
    assert_eq!(scenario.server, Server::default());
    assert_eq!(scenario.plugin, Plugin::default());
    assert_eq!(scenario.swarm, Swarm::default());
    assert_eq!(scenario.invariants, Invariants::default());
    assert_leader_defaults(
        scenario
            .leader
            .as_ref()
            .expect("an empty [leader] section still enables the leader"),
    );
    assert_eq!(scenario.profiles[0].environment, None);
    assert_omitted_fault_and_job_keys_default(&scenario);
}

fn assert_leader_defaults(leader: &Leader) {
    assert_eq!(leader.replicas, 3);
    assert_eq!(leader.variant, crate::mutants::Variant::Fixed);
    assert_eq!(
        (
            leader.lease_duration_ms,
            leader.renew_deadline_ms,
            leader.retry_period_ms
        ),
        (15_000, 10_000, 2_000)
    );
    assert_eq!(
        leader.module_stop_latency,
        Range {
            min_ms: 0,
            max_ms: 2_000
        }
    );
}

fn assert_omitted_fault_and_job_keys_default(scenario: &Scenario) {
    assert_eq!(scenario.profiles[0].image, "gocd/gocd-agent:v25.1.0");
    assert_eq!(
        scenario.faults[0].kind,
        FaultKind::Elastic(ElasticFault::PodDelete {
            target: PodTarget::Any,
            count: 1
        })
    );
    assert_eq!(
        scenario.faults[1].kind,
        FaultKind::Network(NetworkFault::ApiOutage {
            for_ms: 10_000,
            mode: OutageMode::Error
        })
    );
    let JobSource::Burst { spread_ms, .. } = &scenario.jobs[0] else {
        panic!("a burst job")
    };
    assert_eq!(*spread_ms, 0);
    let JobSource::Poisson {
        from_ms,
        until_ms,
        per_minute,
        ..
    } = &scenario.jobs[1]
    else {
        panic!("a poisson job")
    };
    assert_eq!((*from_ms, *until_ms, *per_minute), (0, 3_600_000, 2.0));
}

#[test]
fn an_hour_and_a_half_is_5_400_000_milliseconds() {
    let scenario = load_text("name = \"d\"\nduration = \"1h30m\"\nsettle = \"250ms\"\n").scenario;
    assert_eq!(scenario.duration_ms, 5_400_000);
    assert_eq!(scenario.settle_ms, 250);
}

#[test]
fn integers_in_any_toml_notation_are_read() {
    let text = "name = \"n\"\nseed = 0xff\n[cluster]\nnodes = 1_000\npods_per_node = 0o17\n\
                api_error_rate = 1\n";
    let scenario = load_text(text).scenario;
    assert_eq!(scenario.seed, 255);
    assert_eq!(
        (scenario.cluster.nodes, scenario.cluster.pods_per_node),
        (1_000, 15)
    );
    assert_eq!(scenario.cluster.api_error_rate, 1.0);
}

#[test]
fn trace_paths_are_resolved_against_the_scenario_folder() {
    let text = "name = \"t\"\n[[profiles]]\nname = \"p\"\n\
                [[jobs]]\nkind = \"trace\"\nfile = \"a/b.jsonl\"\n";
    let loaded = parse(text, Path::new("/srv/scenarios/t.toml")).expect("valid trace job");
    let expected = JobSource::Trace {
        file: PathBuf::from("/srv/scenarios/a/b.jsonl"),
    };
    assert_eq!(loaded.scenario.jobs, vec![expected]);
}

#[test]
fn a_short_settle_phase_and_unused_leader_flags_are_warnings_with_locations() {
    let text = r#"name = "w"
settle = "5m"
[leader]
[[leader.modules]]
name = "gitops"
runnable_when = "gitops"
[[leader.config]]
at = "0s"
set = { gitops = true, nothing = true }
[[profiles]]
name = "p"
[[jobs]]
kind = "single"
at = "1m"
profile = "p"
runtime = "1m"
"#;
    let warnings = load_text(text).warnings;
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].starts_with("scenarios/example.toml:9:"),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[0].contains("leader.config[0].set.nothing"),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[1].starts_with("scenarios/example.toml:2:10: warning: settle:"),
        "{}",
        warnings[1]
    );
    assert!(warnings[1].contains("\"11m\""), "{}", warnings[1]);
}

#[test]
fn to_toml_round_trips_a_scenario_using_every_section_and_fault_kind() {
    let mut scenario = contract_example_scenario();
    // `pod_fail` and `cluster_profile_edit` are extensions of the contract, so the contract's
    // example does not use them.
    scenario.faults.push(Fault {
        at_ms: 1_000,
        kind: FaultKind::Elastic(ElasticFault::PodFail {
            target: PodTarget::Pending,
            count: 2,
        }),
    });
    // `replica_stop` is an extension too (graceful shutdown).
    scenario.faults.push(Fault {
        at_ms: 2_000,
        kind: FaultKind::Leader(LeaderFault::ReplicaStop {
            replica: ReplicaRef::Index(1),
            downtime_ms: 20_000,
        }),
    });
    if let Some(leader) = scenario.leader.as_mut() {
        leader.http2_dead_ms = 30_000;
    }
    // `node_add` is an extension too (a cluster autoscaler's scale-up).
    scenario.faults.push(Fault {
        at_ms: 3_000,
        kind: FaultKind::Elastic(ElasticFault::NodeAdd { count: 2 }),
    });
    scenario.faults.push(Fault {
        at_ms: 2_000,
        kind: FaultKind::Elastic(ElasticFault::JobCancel {
            target: JobTarget::Building,
            count: 2,
        }),
    });
    scenario.faults.push(Fault {
        at_ms: 2_000,
        kind: FaultKind::Elastic(ElasticFault::ClusterProfileEdit {
            set: ClusterProfileChanges {
                go_server_url: Some("https://gocd-2.example/go".to_owned()),
                enable_agent_reuse: Some(false),
                auto_register_timeout_ms: Some(90_000),
                pending_pods_count: Some(5),
                idle_timeout_ms: Some(120_000),
                max_pods: Some(30),
            },
        }),
    });
    let mut kinds: Vec<FaultType> = scenario
        .faults
        .iter()
        .map(|fault| fault.kind.fault_type())
        .collect();
    kinds.sort_unstable();
    let all_kinds = FaultType::ALL.to_vec();
    assert_eq!(
        kinds, all_kinds,
        "the round-trip scenario must use every fault kind"
    );
    // The trace path is written as stored, so parse it from a file in the current folder.
    let written = to_toml(&scenario);
    let reloaded = parse(&written, Path::new("repro.toml"))
        .unwrap_or_else(|error| panic!("to_toml wrote an invalid file: {error}\n{written}"));
    assert_eq!(reloaded.scenario, scenario);
    assert_eq!(
        to_toml(&reloaded.scenario),
        written,
        "writing is deterministic"
    );
}

#[test]
fn to_toml_round_trips_awkward_strings_numbers_and_extremes() {
    let mut scenario = load_text("name = \"x\"\n").scenario;
    scenario.description = "quote \" backslash \\ newline \n tab \t bell \u{7} é ✓".to_owned();
    scenario.seed = u64::MAX;
    scenario.duration_ms = u64::MAX;
    scenario.settle_ms = 0;
    scenario.cluster.api_error_rate = 1e-7;
    scenario.cluster.api_latency = Range::fixed(3_723_004);
    scenario.plugin.max_pods = None;
    scenario.profiles = vec![Profile {
        environment: None,
        ..profile_small()
    }];
    scenario.jobs = vec![JobSource::Poisson {
        from_ms: 1,
        until_ms: u64::MAX,
        per_minute: 1e300,
        profile: "small".to_owned(),
        runtime: Range::fixed(0),
        environment: Some("staging".to_owned()),
    }];
    let written = to_toml(&scenario);
    let reloaded = parse(&written, Path::new("repro.toml"))
        .unwrap_or_else(|error| panic!("to_toml wrote an invalid file: {error}\n{written}"));
    assert_eq!(reloaded.scenario, scenario);
}

#[test]
fn a_replica_partition_group_loads_when_the_replica_exists() {
    let text = r#"name = "p"
[leader]
replicas = 2
[[faults]]
at = "1m"
kind = "partition"
between = ["replica-1", "kube-api"]
for = "1m"
"#;
    let scenario = load_text(text).scenario;
    let between = ["replica-1".to_owned(), "kube-api".to_owned()];
    assert_eq!(
        scenario.faults[0].kind,
        FaultKind::Network(NetworkFault::Partition {
            between,
            for_ms: 60_000
        })
    );
}

#[test]
fn load_reads_a_file_from_disk() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("src/scenario/testdata/contract_example.toml");
    let loaded = load(&path).expect("the fixture is a valid scenario");
    let JobSource::Trace { file } = &loaded.scenario.jobs[2] else {
        panic!("a trace job")
    };
    assert_eq!(
        file,
        &path
            .parent()
            .expect("a file has a folder")
            .join("traces/example.jsonl")
    );
}

#[test]
fn a_leader_only_scenario_needs_no_settle_time_for_pods() {
    let text = r#"name = "l"
settle = "2m"
[leader]
[[leader.modules]]
name = "gitops"
runnable_when = "gitops"
[[leader.config]]
at = "0s"
set = { gitops = true }
"#;
    let warnings = load_text(text).warnings;
    assert!(warnings.is_empty(), "{warnings:?}");
}

mod errors;
mod kube_keys;
