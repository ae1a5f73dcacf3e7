//! The user and contributor docs in `docs/` stay true: every scenario key the parser accepts
//! is documented and every documented key is accepted; every invariant id, decision code,
//! command and flag is documented, and nothing documented is gone. The lists come from the
//! code (the parser's own "valid keys here" answers, `INVARIANT_IDS`, the allocators' sources,
//! clap's command tree), so a key, id, code or flag added without its doc fails here.

use clap::CommandFactory;
use elasticsim::allocator::DecisionCode;
use elasticsim::scenario::{ErrorKind, FAULT_KINDS, FaultType, INVARIANT_IDS, JOB_KINDS, parse};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn doc(name: &str) -> String {
    fs::read_to_string(root().join("docs").join(name))
        .unwrap_or_else(|e| panic!("docs/{name}: {e}"))
}

/// The texts between backticks in `text`.
fn backticked(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// The first cell of every table row of `text` that starts with a backticked name.
fn row_names(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split('`').next())
        .map(str::to_owned)
        .collect()
}

/// `text` split at headings of `level` (`"## "`, `"### "`): (heading, body) in order.
fn sections<'a>(text: &'a str, level: &str) -> Vec<(&'a str, String)> {
    let mut found: Vec<(&str, String)> = Vec::new();
    for line in text.lines() {
        if let Some(heading) = line.strip_prefix(level) {
            found.push((heading, String::new()));
        } else if line.starts_with("## ") || line.starts_with("# ") {
            found.push(("", String::new()));
        } else if let Some((_, body)) = found.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    found.retain(|(heading, _)| !heading.is_empty());
    found
}

// ---------------------------------------------------------------------------------------------
// Scenario keys.

/// The keys the parser accepts where `probe` puts the unknown key `zz_unknown`: the choices of
/// its "unknown key … valid keys here" error.
fn accepted_keys(probe: &str) -> BTreeSet<String> {
    let error = parse(probe, Path::new("probe.toml")).expect_err("the probe holds an unknown key");
    assert_eq!(
        error.kind,
        ErrorKind::UnknownKey,
        "{error}\nfor the probe:\n{probe}"
    );
    assert!(
        error.key.ends_with("zz_unknown"),
        "{error}\nfor the probe:\n{probe}"
    );
    error.choices.iter().cloned().collect()
}

const PROFILE: &str = "name = \"probe\"\n[[profiles]]\nname = \"p\"\n";
const LEADER: &str = "[leader]\nreplicas = 3\n";

/// The probe for a heading's backticked words, e.g. `["[[faults]]", "pod_delete"]`.
fn probe_for(words: &[String]) -> String {
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    match words[..] {
        ["top"] => "zz_unknown = 1\n".to_owned(),
        ["[[profiles]]"] => "name = \"probe\"\n[[profiles]]\nzz_unknown = 1\n".to_owned(),
        ["[[jobs]]", kind] => format!("{PROFILE}[[jobs]]\nkind = \"{kind}\"\nzz_unknown = 1\n"),
        ["[[faults]]", "profile_edit", "set"] => format!(
            "{PROFILE}[[faults]]\nkind = \"profile_edit\"\nat = \"1m\"\nprofile = \"p\"\n\
             set = {{ zz_unknown = \"x\" }}\n"
        ),
        ["[[faults]]", "cluster_profile_edit", "set"] => format!(
            "{PROFILE}[[faults]]\nkind = \"cluster_profile_edit\"\nat = \"1m\"\n\
             set = {{ zz_unknown = \"x\" }}\n"
        ),
        ["[[faults]]", kind] => {
            format!("{PROFILE}{LEADER}[[faults]]\nkind = \"{kind}\"\nat = \"1m\"\nzz_unknown = 1\n")
        }
        ["[[leader.modules]]"] => format!("{PROFILE}{LEADER}[[leader.modules]]\nzz_unknown = 1\n"),
        ["[[leader.config]]"] => format!("{PROFILE}{LEADER}[[leader.config]]\nzz_unknown = 1\n"),
        [table] if table.starts_with('[') => {
            format!("{PROFILE}{table}\nzz_unknown = 1\n")
        }
        _ => panic!("docs/scenario-format.md: no probe for the heading words {words:?}"),
    }
}

/// Every `### ` section of the keys part of scenario-format.md: its heading words and the
/// keys of its table.
fn documented_sections() -> Vec<(Vec<String>, BTreeSet<String>)> {
    let text = doc("scenario-format.md");
    let keys_part = text
        .split("## Sections and keys")
        .nth(1)
        .expect("scenario-format.md has a \"Sections and keys\" part");
    sections(keys_part, "### ")
        .into_iter()
        .map(|(heading, body)| (backticked(heading), row_names(&body)))
        .collect()
}

#[test]
fn every_scenario_key_the_parser_accepts_is_documented_and_every_documented_key_parses() {
    let mut problems = Vec::new();
    for (words, documented) in documented_sections() {
        let accepted = accepted_keys(&probe_for(&words));
        for key in accepted.difference(&documented) {
            problems.push(format!("{words:?}: `{key}` is accepted but not documented"));
        }
        for key in documented.difference(&accepted) {
            problems.push(format!("{words:?}: `{key}` is documented but not accepted"));
        }
    }
    assert!(
        problems.is_empty(),
        "docs/scenario-format.md:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_section_kind_and_table_key_has_its_own_documented_section() {
    let documented = documented_sections();
    let headings: BTreeSet<Vec<String>> =
        documented.iter().map(|(words, _)| words.clone()).collect();
    let mut wanted: Vec<Vec<String>> = vec![vec!["top".to_owned()]];
    for kind in JOB_KINDS {
        wanted.push(vec!["[[jobs]]".to_owned(), (*kind).to_owned()]);
    }
    for kind in FAULT_KINDS {
        wanted.push(vec!["[[faults]]".to_owned(), (*kind).to_owned()]);
    }
    // Every key of the top level and of `[leader]` documented as a table (not the job and
    // fault arrays, which have a section per kind) has a section of its own.
    let text = doc("scenario-format.md");
    let tables: String = sections(&text, "### ")
        .into_iter()
        .filter(|(heading, _)| ["`top` level", "`[leader]`"].contains(heading))
        .map(|(_, body)| body)
        .collect();
    for line in tables.lines().filter(|line| line.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (key, kind) = (cells[1].trim_matches('`'), cells[2]);
        if matches!(kind, "table" | "array of tables") && !["jobs", "faults"].contains(&key) {
            let heading = match (kind, key) {
                ("table", _) => format!("[{key}]"),
                (_, "modules" | "config") => format!("[[leader.{key}]]"),
                _ => format!("[[{key}]]"),
            };
            wanted.push(vec![heading]);
        }
    }
    let missing: Vec<_> = wanted.iter().filter(|w| !headings.contains(*w)).collect();
    assert!(
        missing.is_empty(),
        "docs/scenario-format.md lacks sections {missing:?}"
    );
    // The top level itself: every accepted key (tables included) is a row of `top`.
    let top = accepted_keys(&probe_for(&["top".to_owned()]));
    assert!(top.contains("leader") && top.contains("cluster"), "{top:?}");
}

#[test]
fn every_scenario_example_on_the_page_parses() {
    let text = doc("scenario-format.md");
    let blocks: Vec<&str> = text
        .split("```toml\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .collect();
    assert!(blocks.len() >= 2, "the page has its examples");
    for block in blocks {
        let loaded = parse(block, &root().join("docs/example.toml"));
        assert!(
            loaded.is_ok(),
            "an example does not parse: {:?}\n{block}",
            loaded.err()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Invariants.

#[test]
fn every_invariant_id_is_documented_with_its_kind_and_an_existing_monitor_file() {
    let text = doc("invariants.md");
    let mut rows = BTreeMap::new();
    for line in text.lines().filter(|line| line.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        rows.insert(cells[1].trim_matches('`').to_owned(), cells.clone());
    }
    let code: BTreeSet<String> = INVARIANT_IDS.iter().map(|id| (*id).to_owned()).collect();
    let documented: BTreeSet<String> = rows.keys().cloned().collect();
    let missing: Vec<_> = code.difference(&documented).collect();
    let gone: Vec<_> = documented.difference(&code).collect();
    assert!(
        missing.is_empty(),
        "ids not in docs/invariants.md: {missing:?}"
    );
    assert!(
        gone.is_empty(),
        "docs/invariants.md names ids the code lacks: {gone:?}"
    );
    for (id, cells) in &rows {
        assert!(
            ["always", "eventually", "sometimes"].contains(&cells[2]),
            "{id}: kind {:?}",
            cells[2]
        );
        let monitor = backticked(cells[4])
            .into_iter()
            .next()
            .expect("a monitor file");
        assert!(
            root().join(&monitor).is_file(),
            "{id}: {monitor} does not exist"
        );
        let source = fs::read_to_string(root().join(&monitor)).expect("readable");
        let invariant = elasticsim::check::InvariantId::from_name(id).expect("a code id");
        assert!(
            source.contains(&format!("InvariantId::{invariant:?}")),
            "{id} is not checked in {monitor}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Decision codes.

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("readable").filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The decision codes the allocators emit: every `DecisionCode` variant a non-test file of
/// `src/allocator/` names (besides the enum's own file), spelled as the trace spells it.
fn emitted_codes() -> BTreeSet<String> {
    let mut files = Vec::new();
    rust_files(&root().join("src/allocator"), &mut files);
    let mut codes = BTreeSet::new();
    for path in files {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let test = name.contains("test") || path.components().any(|c| c.as_os_str() == "tests");
        if test || name == "decision_code.rs" {
            continue;
        }
        let text = fs::read_to_string(&path).expect("readable");
        for code in DecisionCode::ALL {
            let variant = format!("DecisionCode::{code:?}");
            let named = text.match_indices(&variant).any(|(at, _)| {
                let next = text[at + variant.len()..].chars().next();
                !next.is_some_and(|c| c.is_ascii_alphanumeric())
            });
            if named {
                codes.insert(code.as_str().to_owned());
            }
        }
    }
    codes
}

#[test]
fn every_decision_code_an_allocator_emits_is_documented() {
    let codes = emitted_codes();
    assert!(
        codes.len() >= 30 && codes.contains("claim"),
        "the scan finds the codes: {codes:?}"
    );
    let unused: Vec<_> = DecisionCode::ALL
        .iter()
        .filter(|code| !codes.contains(code.as_str()))
        .collect();
    assert!(unused.is_empty(), "codes no allocator records: {unused:?}");
    let text = doc("policies.md");
    let table = text
        .split("## Decision codes")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("policies.md has a \"Decision codes\" section");
    let documented = row_names(table);
    let missing: Vec<_> = codes.difference(&documented).collect();
    let gone: Vec<_> = documented.difference(&codes).collect();
    assert!(
        missing.is_empty(),
        "codes not in docs/policies.md: {missing:?}"
    );
    assert!(
        gone.is_empty(),
        "docs/policies.md names codes no allocator emits: {gone:?}"
    );
}

#[test]
fn safe_has_nine_rules_each_with_where_it_lives() {
    let text = doc("policies.md");
    let rules: Vec<&str> = text
        .lines()
        .filter(|line| {
            line.starts_with("| ") && line[2..].starts_with(|c: char| c.is_ascii_digit())
        })
        .collect();
    assert_eq!(rules.len(), 9, "{rules:#?}");
    for (index, rule) in rules.iter().enumerate() {
        assert!(rule.starts_with(&format!("| {} | **", index + 1)), "{rule}");
        let places = rule.rsplit('|').nth(1).expect("a where cell");
        let files: Vec<&str> = places
            .split(['(', ')', ';', ',', ' '])
            .filter(|w| w.contains(".rs"))
            .collect();
        assert!(
            !files.is_empty(),
            "rule {} says where it lives: {rule}",
            index + 1
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The command line.

#[test]
fn every_command_and_flag_is_documented_and_every_documented_flag_exists() {
    let text = doc("cli.md");
    let documented: BTreeMap<String, String> = sections(&text, "## ")
        .into_iter()
        .filter_map(|(heading, body)| {
            let name = backticked(heading).into_iter().next()?;
            Some((name, body))
        })
        .collect();
    let mut problems = Vec::new();
    for command in elasticsim::cli::Cli::command().get_subcommands() {
        let name = command.get_name();
        if name == "help" {
            continue;
        }
        let Some(body) = documented.get(name) else {
            problems.push(format!("`{name}` has no `## \\`{name}\\`` section"));
            continue;
        };
        let flags: BTreeSet<String> = command
            .get_arguments()
            .filter_map(|arg| arg.get_long())
            .filter(|long| !["help", "version"].contains(long))
            .map(|long| format!("--{long}"))
            .collect();
        let named: BTreeSet<String> = backticked(body)
            .iter()
            .filter_map(|word| word.split_whitespace().next())
            .filter(|word| word.starts_with("--"))
            .map(str::to_owned)
            .collect();
        for flag in flags.difference(&named) {
            problems.push(format!("`{name} {flag}` is not documented"));
        }
        for flag in named.difference(&flags) {
            problems.push(format!("`{name} {flag}` is documented but does not exist"));
        }
    }
    assert!(problems.is_empty(), "docs/cli.md:\n{}", problems.join("\n"));
}

#[test]
fn every_exit_code_and_report_file_is_documented() {
    let text = doc("cli.md");
    for code in ["`0`", "`1`", "`2`", "`3`"] {
        assert!(text.contains(&format!("| {code} |")), "exit code {code}");
    }
    let header = |name: &[&str]| name.join(", ");
    use elasticsim::report::tables::{FAULTS_HEADER, JOBS_HEADER, PODS_HEADER, TIMELINE_HEADER};
    for columns in [
        &JOBS_HEADER[..],
        &PODS_HEADER,
        &TIMELINE_HEADER,
        &FAULTS_HEADER,
    ] {
        assert!(
            text.contains(&header(columns)),
            "columns {} in docs/cli.md",
            header(columns)
        );
    }
    let mut sweep = vec![
        "seed",
        "verdict",
        "violated",
        "fingerprint",
        "failure_class",
    ];
    sweep.extend(elasticsim::explore::SWEEP_METRICS);
    let flat: String = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('`', "");
    assert!(
        flat.contains(&sweep[5..].join(", ")),
        "sweep.csv metric columns"
    );
}

// ---------------------------------------------------------------------------------------------
// Citations.

#[test]
fn docs_cite_only_files_inside_the_repository_and_those_exist() {
    let mut problems = Vec::new();
    for entry in fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .filter_map(Result::ok)
    {
        let path = entry.path();
        let name = path.display().to_string();
        let text = fs::read_to_string(&path).expect("readable");
        for needle in [
            "shared/",
            "../",
            "POLICIES.md",
            "INVARIANTS.md",
            "OUTPUTS.md",
        ] {
            if text.contains(needle) {
                problems.push(format!("{name} cites {needle}"));
            }
        }
        for word in backticked(&text) {
            let cited = ["src/", "tests/", "xtask/", "scenarios/", "docs/"]
                .iter()
                .any(|prefix| word.starts_with(prefix));
            let plain = !word.contains(['*', '<', ' ', '{']);
            if cited && plain && !root().join(&word).exists() {
                problems.push(format!("{name} cites {word}, which does not exist"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// Fault kinds.

/// The cells of the rows of the "Fault kinds" table, first cell unquoted.
fn fault_kind_rows() -> Vec<Vec<String>> {
    let text = doc("scenario-format.md");
    let table = text
        .split("\n## Fault kinds\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("scenario-format.md has a \"Fault kinds\" section");
    table
        .lines()
        .filter(|line| line.starts_with("| `"))
        .map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            cells[1..cells.len() - 1]
                .iter()
                .map(|cell| cell.trim_matches('`').to_owned())
                .collect()
        })
        .collect()
}

#[test]
fn the_fault_kind_table_is_the_fault_kind_enum() {
    let rows = fault_kind_rows();
    let names: Vec<&str> = rows.iter().map(|row| row[0].as_str()).collect();
    assert_eq!(
        names,
        FaultType::NAMES,
        "the table lists FaultType::ALL in order"
    );
    for (row, kind) in rows.iter().zip(FaultType::ALL) {
        let keys: Vec<String> = kind.keys().iter().map(|k| format!("`{k}`")).collect();
        let keys = if keys.is_empty() {
            "none".to_owned()
        } else {
            keys.join(", ")
        };
        // The first cell lost its backticks; the keys cell keeps its inner ones.
        let keys_cell = format!("`{}`", row[2]);
        let yes = |flag: bool| if flag { "yes" } else { "no" };
        assert_eq!(row[1], yes(kind.needs_leader()), "{kind:?} needs [leader]");
        assert!(
            keys_cell == keys || (keys == "none" && row[2] == "none"),
            "{kind:?}: keys {keys}, the table says {}",
            row[2]
        );
        assert_eq!(
            row[3],
            yes(kind.in_default_swarm()),
            "{kind:?} default swarm"
        );
    }
    // Every kind has its section, and every `[[faults]]` section is a kind.
    let sections: BTreeSet<String> = documented_sections()
        .into_iter()
        .filter(|(words, _)| words.len() == 2 && words[0] == "[[faults]]")
        .map(|(words, _)| words[1].clone())
        .collect();
    let kinds: BTreeSet<String> = FaultType::NAMES.iter().map(|n| (*n).to_owned()).collect();
    assert_eq!(
        sections, kinds,
        "one `[[faults]]` kind section per FaultType"
    );
    // The `[swarm]` table's default `kinds` is the enum's default draw.
    let default_swarm: Vec<String> = FaultType::ALL
        .into_iter()
        .filter(|kind| kind.in_default_swarm())
        .map(|kind| format!("{:?}", kind.name()))
        .collect();
    let row = format!("| `[{}]` |", default_swarm.join(", "));
    assert!(
        doc("scenario-format.md")
            .lines()
            .any(|line| line.starts_with("| `kinds` |") && line.contains(&row)),
        "the `[swarm]` kinds default is {row}"
    );
}
