//! `cargo xtask`: the front door users type (matklad's xtask convention).
//!
//! Every simulation command (`sim`, `check`, `compare`, `review`, `shrink`, `hunt`,
//! `ablations`, `nightly`, `merge`, `plot`, `record`, `serve`) is forwarded to the `elasticsim`
//! binary, built in release mode, so that there is one implementation of each and
//! `cargo xtask sim FILE` behaves exactly as
//! `elasticsim sim FILE`. `bench` runs the `elasticsim-bench` crate instead (release): it
//! needs turmoil as the measured peer, which the simulator must not depend on. `tidy` runs the
//! house rules itself (`tidy.rs`, also run by `cargo test -p xtask`). The exit code is
//! passed through (0 pass, 1 violation, 2 bad input, 3 internal error). The first run (or the
//! first after a source change) says that it builds, and how long that takes, and shows
//! cargo's progress, instead of sitting silent for minutes.

#![deny(unsafe_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::SystemTime;

mod tidy;

const HELP: &str = "\
cargo xtask <command> [args]

Commands (forwarded to `elasticsim`, built with --release):
  sim FILE [--seed N | --seeds N | --seeds A..B] [--policy P] [--variant V] [--out DIR] [--trace]
  check FILE...
  compare FILE --policies upstream,pr355,safe --seeds N
  review [FILE...] --candidate P [--base upstream] [--seeds 50] [--reuse on|off|both] [--out DIR]
  shrink FILE --seed N [--time 60s]
  hunt [FILE...] [--targets pr355,agentk-v1,agentk-v2,agentk-head,safe-ablations,fixed-ablations]
       [--budget 60s] [--guided | --uniform] [--master-seed N] [--out DIR]
  ablations   (the names sim/compare/shrink take with --ablate NAME[,NAME...])
  nightly [--seeds N] [--update-baseline]
      (sim --seeds, compare, review and nightly take --shard K/N or auto/N: shard K of N, from 0)
  merge DIR... [--out DIR]   (joins the shard folders of one --shard run)
  bench [--quick] [--out DIR]   (runs elasticsim-bench; writes reports/bench/bench.{json,md})
  plot DIR
  tidy [--longest N]   (house rules: layers of docs/architecture.md, bans, sizes, ratchet;
                        --longest lists the N longest functions)
  record --namespace NS --out FILE [--kubeconfig PATH] [--for 1h]
  serve FILE [--port 6443] [--speed 60] [--out DIR]

Run `cargo xtask <command> --help` for every flag.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h" {
        println!("{HELP}");
        return ExitCode::SUCCESS;
    }
    if args[0] == "tidy" {
        return tidy_command(&args[1..]);
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    // `bench` has its own crate; every other command is the simulator's.
    let (package, binary, forwarded) = if args[0] == "bench" {
        ("elasticsim-bench", "elasticsim-bench", &args[1..])
    } else {
        ("elasticsim", "elasticsim", &args[..])
    };
    if let Some(reason) = build_needed(binary) {
        // A cold release build takes minutes: say so, and let cargo show its progress.
        eprintln!(
            "xtask: building the release binary `{binary}` ({reason}); from scratch this takes \
             about 8-9 minutes on 2 cores (one optimisation unit, link-time optimised), later \
             runs start at once"
        );
        let built = Command::new(&cargo)
            .args(["build", "--release", "--package", package, "--bin", binary])
            .status();
        if !built.is_ok_and(|status| status.success()) {
            eprintln!("xtask: the release build failed");
            return ExitCode::from(3);
        }
    }
    let status = Command::new(cargo)
        .args([
            "run",
            "--release",
            "--quiet",
            "--package",
            package,
            "--bin",
            binary,
            "--",
        ])
        .args(forwarded)
        .status();
    match status {
        Ok(status) => match status.code() {
            Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(3)),
            None => ExitCode::from(3),
        },
        Err(error) => {
            eprintln!("xtask: cannot run cargo: {error}");
            ExitCode::from(3)
        }
    }
}

/// Why the release binary must be (re)built before it runs: it does not exist yet, or a
/// source file or the manifest is newer. `None` when it looks current (cargo still checks).
fn build_needed(binary: &str) -> Option<&'static str> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent()?.to_owned();
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or(root.join("target"), PathBuf::from);
    let Ok(built) = fs::metadata(target.join("release").join(binary)).and_then(|m| m.modified())
    else {
        return Some("first run");
    };
    let inputs = ["src", "bench/src", "Cargo.toml", "Cargo.lock"];
    inputs
        .iter()
        .any(|input| newer_than(&root.join(input), built))
        .then_some("sources changed since the last build")
}

/// True if `path`, or any file under it, was modified after `time`.
fn newer_than(path: &Path, time: SystemTime) -> bool {
    let Ok(metadata) = fs::metadata(path) else {
        return false;
    };
    if metadata.is_dir() {
        let Ok(entries) = fs::read_dir(path) else {
            return false;
        };
        entries
            .filter_map(Result::ok)
            .any(|entry| newer_than(&entry.path(), time))
    } else {
        metadata.modified().is_ok_and(|modified| modified > time)
    }
}

/// `cargo xtask tidy`: every house rule, one line per violation; exit 1 if any.
fn tidy_command(args: &[String]) -> ExitCode {
    if let [flag, count] = args
        && flag == "--longest"
    {
        let Ok(count) = count.parse() else {
            eprintln!("xtask tidy: --longest takes a number, not {count:?}");
            return ExitCode::from(2);
        };
        for line in tidy::longest_functions(count) {
            println!("{line}");
        }
        return ExitCode::SUCCESS;
    }
    if !args.is_empty() {
        eprintln!("xtask tidy: unexpected arguments {args:?} (only --longest N)");
        return ExitCode::from(2);
    }
    let mut failed = false;
    for (rule, found) in tidy::check_all() {
        if found.is_empty() {
            println!("ok    {rule}");
        } else {
            failed = true;
            println!("FAIL  {rule}");
            for line in found {
                println!("      {line}");
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::newer_than;
    use std::time::{Duration, SystemTime};

    #[test]
    fn a_file_changed_after_the_build_is_newer_and_one_before_is_not() {
        let dir = std::env::temp_dir().join(format!("xtask-newer-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("nested")).expect("a temporary folder");
        let before = SystemTime::UNIX_EPOCH + Duration::from_secs(1);
        std::fs::write(dir.join("nested").join("lib.rs"), "//").expect("writable");
        assert!(
            newer_than(&dir, before),
            "a file written after `before` is newer"
        );
        let after = SystemTime::UNIX_EPOCH + Duration::from_secs(u64::from(u32::MAX) * 4);
        assert!(
            !newer_than(&dir, after),
            "nothing is newer than the far future"
        );
        assert!(
            !newer_than(&dir.join("missing"), before),
            "a missing path is not newer"
        );
        std::fs::remove_dir_all(&dir).expect("removable");
    }
}
