//! The deployment files agree with each other and with the commands the Scale-out section of
//! `README.md` documents: the Kubernetes Indexed Job and its merge Job, the
//! Dockerfile, and the matrix workflow.

use super::read;
use std::path::{Path, PathBuf};

/// The root of the repository.
fn repository(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// The lines of the fenced code blocks of the "Sharding" section of `docs/cli.md`, with
/// continuation lines joined.
fn documented_commands() -> Vec<String> {
    let readme = read(&repository("docs/cli.md"));
    let start = readme
        .find("\n## Sharding\n")
        .expect("docs/cli.md has its Sharding section");
    let rest = &readme[start + 1..];
    let text = &rest[..rest[3..].find("\n## ").map_or(rest.len(), |end| end + 4)];
    let mut commands = Vec::new();
    let mut inside = false;
    let mut pending = String::new();
    for line in text.lines() {
        if line.starts_with("```") {
            inside = !inside;
            continue;
        }
        if !inside || line.trim_start().starts_with('#') {
            continue;
        }
        let code = line.split(" #").next().unwrap_or_default().trim();
        pending.push_str(code.trim_end_matches('\\'));
        if !code.ends_with('\\') {
            commands.push(std::mem::take(&mut pending));
        }
    }
    commands
}

/// The documented command that starts with `prefix`, as words.
fn documented(prefix: &str) -> Vec<String> {
    let commands = documented_commands();
    let command = commands
        .iter()
        .find(|command| command.starts_with(prefix))
        .unwrap_or_else(|| panic!("the README documents no `{prefix}…`: {commands:?}"));
    command.split_whitespace().map(str::to_owned).collect()
}

/// The value after `flag` in a command.
fn flag_value<'a>(words: &'a [String], flag: &str) -> &'a str {
    let at = words
        .iter()
        .position(|word| word == flag)
        .expect("the flag is given");
    &words[at + 1]
}

#[test]
fn the_documented_pod_commands_parse_and_shard_every_index_of_the_job() {
    use clap::Parser as _;
    for prefix in ["elasticsim nightly", "elasticsim merge"] {
        let words = documented(prefix);
        let parsed = elasticsim::cli::Cli::try_parse_from(&words);
        assert!(parsed.is_ok(), "{words:?}: {parsed:?}");
    }
    let nightly = documented("elasticsim nightly");
    let shard = flag_value(&nightly, "--shard");
    let count: u64 = shard
        .strip_prefix("auto/")
        .and_then(|count| count.parse().ok())
        .expect("the pods take K from JOB_COMPLETION_INDEX");
    for index in 0..count {
        let parsed = elasticsim::explore::Shard::parse(shard, Some(&index.to_string()));
        assert_eq!(parsed.map(|shard| shard.index), Ok(index));
    }
    let past = elasticsim::explore::Shard::parse(shard, Some(&count.to_string()));
    assert!(past.is_err(), "index {count} is past the last shard");
}

#[cfg(feature = "live")]
mod kubernetes {
    use super::*;
    use crate::scaleout::read;
    use k8s_openapi::api::batch::v1::Job;
    use k8s_openapi::api::core::v1::{Container, PersistentVolumeClaim};

    fn manifest<T: serde::de::DeserializeOwned>(name: &str) -> T {
        let text = read(&repository(&format!("deploy/k8s/{name}")));
        serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    fn container(job: &Job) -> &Container {
        let pod = job
            .spec
            .as_ref()
            .and_then(|spec| spec.template.spec.as_ref());
        let containers = &pod.expect("the Job has a pod template").containers;
        assert_eq!(containers.len(), 1);
        &containers[0]
    }

    /// The container's command and arguments as one word list.
    fn command_line(container: &Container) -> Vec<String> {
        let command = container.command.clone().unwrap_or_default();
        command
            .into_iter()
            .chain(container.args.clone().unwrap_or_default())
            .collect()
    }

    /// The claim the Job mounts at `path`.
    fn claim_at(job: &Job, path: &str) -> String {
        let pod = job
            .spec
            .as_ref()
            .and_then(|spec| spec.template.spec.as_ref());
        let pod = pod.expect("a pod template");
        let mount = container(job)
            .volume_mounts
            .iter()
            .flatten()
            .find(|mount| mount.mount_path == path)
            .unwrap_or_else(|| panic!("nothing is mounted at {path}"));
        let volume = pod
            .volumes
            .iter()
            .flatten()
            .find(|volume| volume.name == mount.name)
            .expect("the mounted volume is declared");
        let claim = volume.persistent_volume_claim.as_ref().expect("a claim");
        claim.claim_name.clone()
    }

    #[test]
    fn the_nightly_job_is_indexed_with_one_pod_per_shard_running_the_documented_command() {
        let job: Job = manifest("nightly-job.yaml");
        let spec = job.spec.as_ref().expect("a Job spec");
        assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
        let completions = spec.completions.expect("completions are set");
        assert_eq!(
            spec.parallelism,
            Some(completions),
            "one pod per shard at once"
        );
        assert_eq!(
            spec.backoff_limit_per_index,
            Some(0),
            "a verdict is not retried"
        );
        let container = container(&job);
        let command = command_line(container);
        assert_eq!(command, documented("elasticsim nightly"));
        assert_eq!(
            flag_value(&command, "--shard"),
            format!("auto/{completions}")
        );
        let out = flag_value(&command, "--out");
        assert!(
            out.starts_with("/results/"),
            "{out} is on the results volume"
        );
        let claim = claim_at(&job, "/results");
        let pvc: PersistentVolumeClaim = manifest("results-pvc.yaml");
        assert_eq!(pvc.metadata.name.as_deref(), Some(claim.as_str()));
        let modes = pvc
            .spec
            .and_then(|spec| spec.access_modes)
            .unwrap_or_default();
        assert_eq!(
            modes,
            ["ReadWriteMany"],
            "pods on several nodes write to it"
        );
        let merge: Job = manifest("merge-job.yaml");
        let merge_command = command_line(super::kubernetes::container(&merge));
        assert_eq!(merge_command, documented("elasticsim merge"));
        assert_eq!(
            merge_command[2], out,
            "the merge reads the folder the shards write"
        );
        assert_eq!(claim_at(&merge, "/results"), claim);
        let build = documented("docker build");
        let tag = flag_value(&build, "-t");
        for job in [&job, &merge] {
            assert_eq!(
                super::kubernetes::container(job).image.as_deref(),
                Some(tag)
            );
            assert_eq!(
                super::kubernetes::container(job).working_dir.as_deref(),
                Some(dockerfile_workdir().as_str())
            );
        }
    }
}

/// Dockerfile instructions, continuation lines joined, comments dropped.
fn dockerfile() -> Vec<(String, String)> {
    let text = read(&repository("Dockerfile"));
    let mut instructions = Vec::new();
    let mut pending = String::new();
    for line in text
        .lines()
        .filter(|line| !line.trim_start().starts_with('#'))
    {
        pending.push_str(line.trim().trim_end_matches('\\'));
        pending.push(' ');
        if !line.trim_end().ends_with('\\') {
            let joined = std::mem::take(&mut pending);
            if let Some((keyword, rest)) = joined.trim().split_once(' ') {
                instructions.push((keyword.to_owned(), rest.trim().to_owned()));
            }
        }
    }
    instructions
}

/// The working directory of the image's last stage.
fn dockerfile_workdir() -> String {
    let instructions = dockerfile();
    let last = instructions
        .iter()
        .rposition(|(keyword, _)| keyword == "FROM");
    let last_stage = &instructions[last.expect("a FROM")..];
    let workdir = last_stage
        .iter()
        .rev()
        .find(|(keyword, _)| keyword == "WORKDIR");
    workdir
        .expect("the image sets its working directory")
        .1
        .clone()
}

/// The arguments of every instruction named `keyword`, in order.
fn instructions_with<'a>(instructions: &'a [(String, String)], keyword: &str) -> Vec<&'a str> {
    let matching = instructions.iter().filter(|(k, _)| k == keyword);
    matching.map(|(_, rest)| rest.as_str()).collect()
}

#[test]
fn the_dockerfile_builds_a_locked_release_binary_on_a_recent_enough_rust() {
    let instructions = dockerfile();
    let build_stage = instructions_with(&instructions, "FROM")[0];
    let rust_version = build_stage
        .strip_prefix("rust:")
        .and_then(|rest| rest.split('-').next())
        .expect("the build stage is an official rust image");
    let manifest = read(&repository("Cargo.toml"));
    let minimum = manifest
        .lines()
        .find_map(|line| line.strip_prefix("rust-version = "))
        .expect("Cargo.toml states its minimum Rust")
        .trim_matches('"');
    let number = |version: &str| -> Vec<u64> {
        let parts = version.split('.');
        parts
            .map(|part| part.parse().expect("a version number"))
            .collect()
    };
    assert!(
        number(rust_version) >= number(minimum),
        "{rust_version} < {minimum}"
    );
    let build = "cargo build --release --locked --bin elasticsim";
    let runs = instructions_with(&instructions, "RUN");
    assert!(runs.iter().any(|run| run.contains(build)), "{runs:?}");
    let ignored = read(&repository(".dockerignore"));
    let ignored: Vec<&str> = ignored.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(ignored.contains(&"target") && ignored.contains(&"!reports/baselines"));
    for needed in [
        "src",
        "scenarios",
        "Cargo.toml",
        "Cargo.lock",
        "xtask",
        "bench",
    ] {
        assert!(!ignored.contains(&needed), "{needed} must reach the build");
    }
}

#[test]
fn the_image_has_the_binary_on_the_path_next_to_the_scenarios_and_baselines() {
    let instructions = dockerfile();
    let copies = instructions_with(&instructions, "COPY");
    let build_workdir = instructions_with(&instructions, "WORKDIR")[0];
    let binary = format!("--from=build {build_workdir}/target/release/elasticsim");
    let copy = copies
        .iter()
        .find(|copy| copy.starts_with(&binary))
        .unwrap_or_else(|| panic!("no `COPY {binary} …` in {instructions:?}"));
    assert!(
        copy.ends_with(" /usr/local/bin/elasticsim"),
        "{copy}: `elasticsim` is on PATH"
    );
    let entrypoint = instructions_with(&instructions, "ENTRYPOINT");
    assert_eq!(entrypoint, ["[\"/usr/local/bin/elasticsim\"]"]);
    // `nightly`'s defaults (`scenarios`, `reports/baselines`) resolve in the working directory.
    let workdir = dockerfile_workdir();
    for folder in ["scenarios", "reports/baselines"] {
        let copied = format!("{folder}/ {workdir}/{folder}/");
        assert!(copies.contains(&copied.as_str()), "no `COPY {copied}`");
        assert!(repository(folder).is_dir());
    }
}

fn matrix_workflow() -> serde_yaml_ng::Value {
    let text = read(&repository(".github/workflows/nightly-matrix.yml"));
    serde_yaml_ng::from_str(&text).expect("the matrix workflow is YAML")
}

/// The shard count: the length of `matrix.shard`, which must be 0 … N-1.
fn matrix_shard_count(workflow: &serde_yaml_ng::Value) -> u64 {
    let matrix = &workflow["jobs"]["shard"]["strategy"]["matrix"]["shard"];
    let indices: Vec<u64> = matrix
        .as_sequence()
        .expect("a shard matrix")
        .iter()
        .map(|index| index.as_u64().expect("a shard index"))
        .collect();
    let count = indices.len() as u64;
    assert_eq!(
        indices,
        (0..count).collect::<Vec<_>>(),
        "K = 0 … N-1, each once"
    );
    count
}

fn steps(job: &serde_yaml_ng::Value) -> Vec<serde_yaml_ng::Value> {
    job["steps"].as_sequence().expect("steps").clone()
}

/// The step that `uses` an action starting with `action`.
fn step_using(job: &serde_yaml_ng::Value, action: &str) -> serde_yaml_ng::Value {
    let uses =
        |step: &serde_yaml_ng::Value| step["uses"].as_str().is_some_and(|u| u.starts_with(action));
    steps(job)
        .into_iter()
        .find(uses)
        .unwrap_or_else(|| panic!("no step uses {action}"))
}

/// The `run` command of the step that starts with `prefix`.
fn run_starting(job: &serde_yaml_ng::Value, prefix: &str) -> String {
    let runs = steps(job)
        .into_iter()
        .filter_map(|s| s["run"].as_str().map(str::to_owned));
    let mut runs = runs.filter(|run| run.starts_with(prefix));
    runs.next()
        .unwrap_or_else(|| panic!("no step runs {prefix}"))
}

#[test]
fn the_matrix_runs_each_shard_index_once_and_uploads_its_folder() {
    let workflow = matrix_workflow();
    let count = matrix_shard_count(&workflow);
    let shard_job = &workflow["jobs"]["shard"];
    assert_eq!(
        shard_job["strategy"]["fail-fast"], false,
        "a failing shard cancels none"
    );
    let nightly = run_starting(shard_job, "cargo xtask nightly");
    let shard_flag = format!("--shard ${{{{ matrix.shard }}}}/{count}");
    assert!(
        nightly.contains(&shard_flag),
        "{nightly} must use {shard_flag}"
    );
    let upload = step_using(shard_job, "actions/upload-artifact");
    let artifact = format!("shard-${{{{ matrix.shard }}}}-of-{count}");
    assert_eq!(upload["with"]["name"].as_str(), Some(artifact.as_str()));
    let path = upload["with"]["path"].as_str().expect("an uploaded path");
    assert!(
        path.ends_with(&artifact),
        "{path} is the shard's own folder"
    );
}

#[test]
fn the_matrix_merge_job_downloads_every_shard_and_merges_them() {
    let workflow = matrix_workflow();
    let merge_job = &workflow["jobs"]["merge"];
    assert_eq!(merge_job["needs"].as_str(), Some("shard"));
    assert_eq!(
        merge_job["if"].as_str(),
        Some("always()"),
        "merge after failing shards too"
    );
    let download = step_using(merge_job, "actions/download-artifact");
    assert_eq!(download["with"]["pattern"].as_str(), Some("shard-*-of-*"));
    let folder = download["with"]["path"]
        .as_str()
        .expect("a download folder");
    let merge = run_starting(merge_job, "cargo xtask merge");
    assert!(
        merge.starts_with(&format!("cargo xtask merge {folder} ")),
        "{merge}"
    );
    let junit = steps(merge_job)
        .iter()
        .find_map(|step| step["with"]["files"].as_str().map(str::to_owned))
        .expect("the merged JUnit is published");
    let words: Vec<String> = merge.split_whitespace().map(str::to_owned).collect();
    assert_eq!(junit, format!("{}/junit.xml", flag_value(&words, "--out")));
}
