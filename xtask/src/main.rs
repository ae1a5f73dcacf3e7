//! `cargo xtask`: the front door users type (matklad's xtask convention).
//!
//! Every simulation command (`sim`, `check`, `compare`, `review`, `shrink`, `hunt`,
//! `ablations`, `nightly`, `merge`, `plot`, `record`, `serve`) is forwarded to the `elasticsim`
//! binary, built with the `sim` profile (optimised, quick to build, in `target/sim/`), so that
//! there is one implementation of each and `cargo xtask sim FILE` behaves exactly as
//! `elasticsim sim FILE`. The simulation commands build it without the `live` feature (half
//! the crates); `record` and `serve`, which talk to real clusters, build it with. `bench`
//! runs the `elasticsim-bench` crate instead, built with the `bench-lto` profile (one
//! optimisation unit, link-time optimised): it needs turmoil as the measured peer, which the
//! simulator must not depend on. `tidy` runs the house rules itself (`tidy.rs`, also run by
//! `cargo test -p xtask`). The exit code is passed through (0 pass, 1 violation, 2 bad input,
//! 3 internal error). When cargo has something to compile, xtask says that it builds and how
//! long that takes, shows cargo's progress, and says how long it took; when the binary is
//! current it says nothing.

#![deny(unsafe_code)]

use std::io::{BufRead, BufReader, IsTerminal};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

mod crates;
mod tidy;

const HELP: &str = "\
cargo xtask <command> [args]

Commands (forwarded to `elasticsim`, built with the `sim` profile; record and serve
with the `live` feature):
  sim FILE [--seed N | --seeds N | --seeds A..B] [--policy P] [--variant V] [--out DIR] [--trace]
      (a FILE whose [leader] sets lease_crate runs that crate's own code: elasticsim-crates,
       built from cratesim/ on first use, docs/crates.md)
  check FILE...
  compare FILE --policies upstream,pr355,safe --seeds N
  review [FILE...] --candidate P [--base upstream] [--seeds 50] [--reuse on|off|both] [--out DIR]
  shrink FILE --seed N [--time 60s]
  hunt [FILE...] [--targets pr355,agentk-v1,agentk-v2,agentk-head,safe-ablations,fixed-ablations,
                 safe,fixed] [--fail-on-find]
       [--budget 60s] [--guided | --uniform] [--master-seed N] [--out DIR]
  ablations   (the names sim/compare/shrink take with --ablate NAME[,NAME...])
  nightly [--seeds N] [--update-baseline | --check-baseline]
      (sim --seeds, compare, review and nightly take --shard K/N or auto/N: shard K of N, from 0)
  merge DIR... [--out DIR]   (joins the shard folders of one --shard run)
  bench [--quick] [--out DIR]   (runs elasticsim-bench, `bench-lto` profile; writes
                                 reports/bench/bench.{json,md})
  plot DIR
  tidy [--longest N]   (house rules: layers of docs/architecture.md, bans, sizes, ratchets;
                        --longest lists the N longest functions)
  record --namespace NS --out FILE [--kubeconfig PATH] [--for 1h]
  serve FILE [--port 6443] [--speed 60] [--out DIR]

Run `cargo xtask <command> --help` for every flag.";

/// What one forwarded command builds and runs.
pub(crate) struct Target {
    pub(crate) profile: &'static str,
    pub(crate) package: &'static str,
    pub(crate) binary: &'static str,
    /// Cargo's feature flags: the simulator leaves out the `live` feature (kube, tokio, axum
    /// and their hundred-odd crates), which only `record` and `serve` use.
    pub(crate) features: &'static [&'static str],
    /// A clean build's time, measured on the 2-core machine the project is developed on.
    pub(crate) clean_build: &'static str,
}

const SIM: Target = Target {
    profile: "sim",
    package: "elasticsim",
    binary: "elasticsim",
    features: &["--no-default-features"],
    clean_build: "about 2 1/2 minutes on 2 free cores (measured on a fresh machine: 2 min 17 s, \
                  crate downloads included, 253 s of CPU)",
};

/// `record` and `serve` talk to real clusters and serve HTTP: the same profile with the
/// `live` feature (cargo keeps both builds side by side, so switching costs no rebuild).
const LIVE: Target = Target {
    profile: "sim",
    package: "elasticsim",
    binary: "elasticsim",
    features: &[],
    clean_build: "about 10 CPU-minutes (588 s measured, crates downloaded), so at least 5 \
                  minutes on 2 cores",
};

const BENCH: Target = Target {
    profile: "bench-lto",
    package: "elasticsim-bench",
    binary: "elasticsim-bench",
    features: &[],
    clean_build: "about 10 CPU-minutes (610 s measured), the last of them on one core (one \
                  optimisation unit, link-time optimised)",
};

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
    if args[0] == "sim"
        && let Some(file) = args.get(1)
        && names_a_lease_crate(file)
    {
        return crates::sim(&cargo, &args);
    }
    // `bench` has its own crate; `record` and `serve` need the live feature; every other
    // command is the simulator's.
    let (target, forwarded) = match args[0].as_str() {
        "bench" => (BENCH, &args[1..]),
        "record" | "serve" => (LIVE, &args[..]),
        _ => (SIM, &args[..]),
    };
    if let Err(error) = build(&cargo, &target) {
        eprintln!("xtask: the build of `{}` failed: {error}", target.binary);
        return ExitCode::from(3);
    }
    let status = Command::new(cargo)
        .args(["run", "--quiet", "--profile", target.profile])
        .args(target.features)
        .args(["--package", target.package, "--bin", target.binary, "--"])
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

/// Build `target` with cargo, passing cargo's messages through. Cargo decides whether
/// anything needs compiling; the first `Compiling` line it prints is the cue to say that a
/// build runs and how long a clean one takes, and to say how long it took at the end.
pub(crate) fn build(cargo: &str, target: &Target) -> Result<(), String> {
    build_in(cargo, target, None)
}

/// [`build`], with cargo run in `folder` (a workspace of its own) when given.
pub(crate) fn build_in(
    cargo: &str,
    target: &Target,
    folder: Option<&std::path::Path>,
) -> Result<(), String> {
    let color = if std::io::stderr().is_terminal() {
        "always"
    } else {
        "never"
    };
    let mut command = Command::new(cargo);
    if let Some(folder) = folder {
        command.current_dir(folder);
    }
    let mut child = command
        .args(["build", "--profile", target.profile, "--color", color])
        .args(target.features)
        .args(["--package", target.package, "--bin", target.binary])
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| format!("cannot run cargo: {error}"))?;
    let stderr = child
        .stderr
        .take()
        .ok_or("cargo's messages are not piped")?;
    let mut started: Option<Instant> = None;
    for line in BufReader::new(stderr).lines() {
        let line = line.map_err(|error| format!("reading cargo's messages: {error}"))?;
        if started.is_none() && is_compiling(&line) {
            eprintln!(
                "xtask: building `{}` (profile `{}`); from scratch this takes {}, after a \
                 change to the simulator a few minutes",
                target.binary, target.profile, target.clean_build
            );
            started = Some(now());
        }
        eprintln!("{line}");
    }
    let status = child.wait().map_err(|error| format!("cargo: {error}"))?;
    if !status.success() {
        return Err(format!("cargo exited with {status}"));
    }
    if let Some(started) = started {
        let took = now().duration_since(started);
        eprintln!("xtask: built `{}` in {}", target.binary, minutes(took));
    }
    Ok(())
}

/// True if scenario `file` sets `[leader] lease_crate` (a line `lease_crate = …`): such a
/// scenario runs a crate's own code, in `elasticsim-crates` (`cratesim/`). An unreadable file
/// goes to `elasticsim`, which reports it.
fn names_a_lease_crate(file: &str) -> bool {
    std::fs::read_to_string(file).is_ok_and(|text| {
        text.lines().any(|line| {
            let line = line.trim_start();
            line.strip_prefix("lease_crate")
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
    })
}

/// True for the line cargo prints as it starts compiling a crate (coloured or not).
fn is_compiling(line: &str) -> bool {
    let plain: String = line.split('\u{1b}').map(without_escape).collect();
    plain.trim_start().starts_with("Compiling ")
}

/// A piece of a line after an escape character, without the colour code it starts with.
fn without_escape(piece: &str) -> &str {
    match piece.strip_prefix('[') {
        Some(rest) => rest.split_once('m').map_or(rest, |(_, after)| after),
        None => piece,
    }
}

/// `1m05s`, `42s`.
fn minutes(took: Duration) -> String {
    let seconds = took.as_secs();
    if seconds >= 60 {
        format!("{}m{:02}s", seconds / 60, seconds % 60)
    } else {
        format!("{seconds}s")
    }
}

/// The wall clock, read only to time a build (never inside a simulation run).
#[allow(clippy::disallowed_methods)]
fn now() -> Instant {
    Instant::now()
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
    use super::{is_compiling, minutes};
    use std::time::Duration;

    #[test]
    fn only_cargos_compiling_lines_announce_a_build() {
        assert!(is_compiling("   Compiling serde v1.0.228"));
        assert!(is_compiling(
            "\u{1b}[1m\u{1b}[32m   Compiling\u{1b}[0m elasticsim v0.1.0 (/work)"
        ));
        assert!(!is_compiling(
            "    Finished `sim` profile [optimized] target(s) in 0.31s"
        ));
        assert!(!is_compiling(
            "     Running `target/sim/elasticsim sim x.toml`"
        ));
        assert!(!is_compiling(
            "warning: Compiling is a word a warning may quote"
        ));
    }

    #[test]
    fn build_times_read_in_minutes_and_seconds() {
        assert_eq!(minutes(Duration::from_secs(42)), "42s");
        assert_eq!(minutes(Duration::from_secs(245)), "4m05s");
    }
}
