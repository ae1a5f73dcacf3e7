//! Unit tests of the nightly's pieces: JUnit XML, baselines, regression entries.

use super::baseline::moved_metrics;
use super::{Baseline, Case, Suite, Tolerance, Worse, compare, junit_xml, regressions};
use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("elasticsim-nightly-{}-{name}", std::process::id()));
    // A leftover of an earlier process with the same id may exist; start empty.
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("the temp folder is writable");
    dir
}

#[test]
fn junit_xml_nests_cases_in_suites_and_escapes_failure_text() {
    let suites = vec![
        Suite {
            name: "burst".to_owned(),
            cases: vec![
                Case {
                    name: "upstream".to_owned(),
                    time_s: 1.5,
                    failure: None,
                },
                Case {
                    name: "pr355".to_owned(),
                    time_s: 2.0,
                    failure: Some((
                        "1 of 2 seeds failed".to_owned(),
                        "seed 2 violated job-wait-bound & <more>".to_owned(),
                    )),
                },
            ],
        },
        Suite {
            name: "steady".to_owned(),
            cases: vec![Case {
                name: "upstream".to_owned(),
                time_s: 0.5,
                failure: None,
            }],
        },
    ];
    let xml = junit_xml(&suites);
    let document = roxmltree::Document::parse(&xml).expect("junit.xml is XML");
    let root = document.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    assert_eq!(root.attribute("tests"), Some("3"));
    assert_eq!(root.attribute("failures"), Some("1"));
    let names: Vec<&str> = root
        .children()
        .filter(|node| node.is_element())
        .map(|suite| suite.attribute("name").unwrap_or_default())
        .collect();
    assert_eq!(names, ["burst", "steady"]);
    let failure = document
        .descendants()
        .find(|node| node.has_tag_name("failure"))
        .expect("the failing case has a failure");
    assert_eq!(
        failure.parent().and_then(|case| case.attribute("name")),
        Some("pr355")
    );
    assert_eq!(
        failure.text(),
        Some("seed 2 violated job-wait-bound & <more>")
    );
}

#[test]
fn a_baseline_round_trips_and_compares_only_metrics_with_a_tolerance() {
    let dir = scratch("baseline");
    let mut means = BTreeMap::new();
    means.insert("wait_s_p95".to_owned(), 30.0);
    means.insert("pods_created".to_owned(), 40.0);
    let baseline = Baseline {
        scenario: "burst".to_owned(),
        seeds: 20,
        version: "0.1.0".to_owned(),
        policies: [("upstream".to_owned(), means.clone())]
            .into_iter()
            .collect(),
    };
    baseline.save(&dir).expect("the temp folder is writable");
    let loaded = Baseline::load(&dir, "burst")
        .expect("the baseline parses")
        .expect("the baseline exists");
    assert_eq!(loaded, baseline);
    assert_eq!(Baseline::load(&dir, "absent"), Ok(None));
    let mut worse = means.clone();
    worse.insert("wait_s_p95".to_owned(), 40.0);
    worse.insert("pods_created".to_owned(), 400.0);
    let tolerances: BTreeMap<String, Tolerance> = [(
        "wait_s_p95".to_owned(),
        Tolerance {
            worse: Worse::Higher,
            tolerance: 0.10,
            absolute: 0.0,
        },
    )]
    .into_iter()
    .collect();
    let regressions = compare("burst", "upstream", &means, &worse, &tolerances);
    assert_eq!(
        regressions.len(),
        1,
        "pods_created has no tolerance, so it is not judged"
    );
    let message = regressions[0].message();
    for part in [
        "burst",
        "upstream",
        "wait_s_p95",
        "baseline 30",
        "new 40",
        "tolerance 10%",
    ] {
        assert!(message.contains(part), "{part} missing from {message}");
    }
}

#[test]
fn regression_entries_are_read_leniently_and_bad_ones_become_warnings() {
    let dir = scratch("entries");
    let regressions_dir = dir.join("regressions");
    fs::create_dir_all(&regressions_dir).expect("the temp folder is writable");
    fs::write(dir.join("burst.toml"), "name = \"burst\"\n").expect("writable");
    fs::write(
        regressions_dir.join("regressions.toml"),
        "[[entry]]\nscenario = \"burst\"\nseed = 7\npolicy = \"pr355\"\nverdict = \"fail\"\n\
         violated = [\"job-wait-bound\"]\n\n[[entry]]\nscenario = \"missing\"\nseed = 1\n",
    )
    .expect("writable");
    let (entries, warnings) = regressions::load(&dir);
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].file, dir.join("burst.toml"));
    assert_eq!(entries[0].verdict, "fail");
    assert_eq!(
        entries[0].violated,
        Some(vec![crate::check::InvariantId::JobWaitBound])
    );
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("entry 2") && warnings[0].contains("missing"));
    fs::write(
        regressions_dir.join("regressions.toml"),
        "this is [not toml",
    )
    .expect("writable");
    let (entries, warnings) = regressions::load(&dir);
    assert!(entries.is_empty());
    assert!(warnings[0].contains("skipped"), "{warnings:?}");
}

#[test]
fn moved_metrics_names_every_difference_both_ways_but_not_wall_clock_ones() {
    let base: BTreeMap<String, f64> = [
        ("wait_s_p95".to_owned(), 30.0),
        ("pods_created".to_owned(), 40.0),
        ("events".to_owned(), 1000.0),
        ("wall_s".to_owned(), 1.0),
    ]
    .into_iter()
    .collect();
    let mut now = base.clone();
    assert!(moved_metrics(&base, &now).is_empty());
    now.insert("wall_s".to_owned(), 9.0);
    assert!(
        moved_metrics(&base, &now).is_empty(),
        "wall clock is no metric"
    );
    now.insert("wait_s_p95".to_owned(), 29.5);
    now.remove("events");
    now.insert("reuse_ratio".to_owned(), 0.5);
    let moved = moved_metrics(&base, &now);
    assert_eq!(
        moved,
        vec![
            "events: in the baseline, not measured now".to_owned(),
            "reuse_ratio: measured now, not in the baseline".to_owned(),
            "wait_s_p95: baseline 30, now 29.5".to_owned(),
        ]
    );
}
