//! `--shard` parsing, the ownership rule, and merge's coverage check on hand-made shards.

use super::{Cell, CommandKind, Placed, Shard, ShardFile, ShardInput, assemble, cells_text};
use crate::check::Kind;
use crate::explore::{SeedRow, ViolatedId};
use crate::report::Metrics;
use serde_json::Value;
use std::path::PathBuf;

#[test]
fn k_of_n_parses_and_k_is_zero_based() {
    assert_eq!(Shard::parse("0/4", None), Ok(Shard { index: 0, count: 4 }));
    assert_eq!(
        Shard::parse(" 3/4 ", None),
        Ok(Shard { index: 3, count: 4 })
    );
    let error = Shard::parse("4/4", None).expect_err("K = N is past the last shard");
    assert!(
        error.contains("not below N = 4") && error.contains("0 to 3"),
        "{error}"
    );
}

#[test]
fn auto_takes_k_from_the_completion_index_and_says_what_is_missing() {
    assert_eq!(
        Shard::parse("auto/4", Some("2")),
        Ok(Shard { index: 2, count: 4 })
    );
    let unset = Shard::parse("auto/4", None).expect_err("no index");
    assert!(unset.contains("JOB_COMPLETION_INDEX is not set"), "{unset}");
    let too_big = Shard::parse("auto/4", Some("4")).expect_err("index past N");
    assert!(too_big.contains("completions must equal N"), "{too_big}");
    let garbage = Shard::parse("auto/4", Some("two")).expect_err("not a number");
    assert!(
        garbage.contains("JOB_COMPLETION_INDEX=\"two\""),
        "{garbage}"
    );
}

#[test]
fn zero_shards_and_malformed_values_are_errors_naming_the_flag() {
    for text in [
        "1/0", "0/0", "x", "1", "1/x", "-1/4", "1/2/3", "/4", "auto/",
    ] {
        let error = Shard::parse(text, Some("0")).expect_err(text);
        assert!(error.starts_with("--shard"), "{text}: {error}");
    }
    assert!(
        Shard::parse("0/0", None)
            .expect_err("no shards")
            .contains("N must be at least 1")
    );
}

#[test]
fn cell_i_belongs_to_shard_i_mod_n_and_every_cell_to_exactly_one_shard() {
    let shards: Vec<Shard> = (0..3).map(|index| Shard { index, count: 3 }).collect();
    for position in 0..20 {
        let owners: Vec<u64> = shards
            .iter()
            .filter(|shard| shard.owns(position))
            .map(|shard| shard.index)
            .collect();
        assert_eq!(owners, vec![position as u64 % 3], "cell {position}");
    }
    assert_eq!(shards[1].folder_name(), "shard-1-of-3");
}

fn seed_row(seed: u64) -> SeedRow {
    SeedRow {
        seed,
        verdict: "fail".to_owned(),
        failure_class: Some("safety".to_owned()),
        violated: vec![ViolatedId {
            id: crate::check::InvariantId::PendingLimit,
            kind: Kind::Always,
        }],
        first_violated: Some(crate::check::InvariantId::PendingLimit),
        fingerprint: format!("f{seed}"),
        metrics: Metrics {
            reuse_ratio: 1.0 / 3.0,
            wait_s_p95: 0.1 + 0.2,
            pods_created: seed,
            ..Metrics::default()
        },
        waits_ms: vec![5, 9],
        assigned: 2,
        reused: 1,
        reproduce: format!("cargo xtask sim x.toml --seed {seed}"),
        variant: None,
        failover_ms: Vec::new(),
        hazards: Vec::new(),
    }
}

#[test]
fn a_seed_row_comes_back_from_json_bit_for_bit() {
    let row = seed_row(7);
    let text = serde_json::to_string(&row).expect("a row serialises");
    let back: SeedRow = serde_json::from_str(&text).expect("and reads back");
    assert_eq!(back, row);
    assert_eq!(
        back.metrics.wait_s_p95.to_bits(),
        row.metrics.wait_s_p95.to_bits()
    );
}

/// Shard `index` of `count` over seeds 1..=seeds, as a sweep writes it.
fn shard_input(index: u64, count: u64, seeds: u64, folder: &str) -> ShardInput {
    let shard = Shard { index, count };
    let cells: Vec<Cell> = (1..=seeds)
        .map(|seed| Cell {
            suite: "burst".to_owned(),
            case: "upstream".to_owned(),
            seed,
        })
        .collect();
    let rows = (0..cells.len())
        .filter(|position| shard.owns(*position))
        .map(|position| Placed {
            position,
            row: serde_json::to_value(seed_row(position as u64 + 1)).expect("serialises"),
        })
        .collect();
    let file = ShardFile::new(
        CommandKind::Sweep,
        shard,
        serde_json::json!({ "title": "burst" }),
        cells,
        rows,
    );
    ShardInput {
        folder: PathBuf::from(folder),
        file,
    }
}

#[test]
fn every_shard_once_assembles_every_row_in_canonical_order() {
    let inputs = vec![
        shard_input(2, 3, 10, "c"),
        shard_input(0, 3, 10, "a"),
        shard_input(1, 3, 10, "b"),
    ];
    let assembled = assemble(inputs).expect("every shard once");
    let (plan, rows): (Value, Vec<(SeedRow, PathBuf)>) = assembled.typed().expect("typed");
    assert_eq!(plan["title"], "burst");
    let seeds: Vec<u64> = rows.iter().map(|(row, _)| row.seed).collect();
    assert_eq!(seeds, (1..=10).collect::<Vec<_>>());
    assert_eq!(rows[4].1, PathBuf::from("b"), "seed 5 is cell 4, shard 1");
}

#[test]
fn a_missing_and_a_repeated_shard_are_both_named_with_their_seeds_and_folders() {
    let inputs = vec![shard_input(0, 3, 10, "a"), shard_input(0, 3, 10, "again")];
    let error = assemble(inputs).expect_err("shards 1 and 2 are missing, 0 is repeated");
    assert!(
        error.contains("shard 0/3 appears in 2 folders: a, again"),
        "{error}"
    );
    assert!(error.contains("shard 1/3 is missing"), "{error}");
    assert!(error.contains("shard 2/3 is missing"), "{error}");
    assert!(
        error.contains("3 seeds of shard 1/3 are missing: burst / upstream seeds 2, 5, 8"),
        "{error}"
    );
    assert!(
        error.contains(
            "4 seeds are in more than one folder (a, again): burst / upstream seeds 1, 4, 7, 10"
        ),
        "{error}"
    );
}

#[test]
fn shards_of_different_runs_do_not_merge() {
    let other_count = vec![shard_input(0, 2, 10, "a"), shard_input(1, 3, 10, "b")];
    let error = assemble(other_count).expect_err("N differs");
    assert!(
        error.contains("a and b are not shards of the same run"),
        "{error}"
    );
    assert!(error.contains("shard counts differ"), "{error}");
    let other_seeds = vec![shard_input(0, 2, 10, "a"), shard_input(1, 2, 12, "b")];
    let error = assemble(other_seeds).expect_err("the cell lists differ");
    assert!(
        error.contains("cell lists differ (10 and 12 cells"),
        "{error}"
    );
}

#[test]
fn a_row_filed_under_the_wrong_shard_is_named() {
    let mut wrong = shard_input(1, 2, 4, "b");
    wrong.file.rows[0].position = 0;
    let error = assemble(vec![shard_input(0, 2, 4, "a"), wrong]).expect_err("misfiled");
    assert!(
        error.contains("b (shard 1/2) holds burst / upstream seed 1, which belongs to shard 0/2"),
        "{error}"
    );
}

#[test]
fn long_seed_lists_are_cut_after_the_limit() {
    let cells: Vec<Cell> = (1..=5)
        .map(|seed| Cell {
            suite: "s".to_owned(),
            case: "p".to_owned(),
            seed,
        })
        .collect();
    let references: Vec<&Cell> = cells.iter().collect();
    assert_eq!(
        cells_text(&references, 3),
        "s / p seeds 1, 2, 3, … and 2 more"
    );
    assert_eq!(cells_text(&references[..1], 3), "s / p seed 1");
}
