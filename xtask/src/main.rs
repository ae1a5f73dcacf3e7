//! `cargo xtask`: the front door users type (matklad's xtask convention).
//!
//! Every simulation command (`sim`, `check`, `compare`, `shrink`, `hunt`, `ablations`,
//! `nightly`, `merge`, `plot`, `record`, `serve`) is forwarded to the `elasticsim` binary,
//! built in release mode, so that there is one implementation of each and
//! `cargo xtask sim FILE` behaves exactly as
//! `elasticsim sim FILE`. `bench` runs the `elasticsim-bench` crate instead (release): it
//! needs turmoil as the measured peer, which the simulator must not depend on. The exit code is
//! passed through (0 pass, 1 violation, 2 bad input, 3 internal error).

use std::process::{Command, ExitCode};

#[cfg(test)]
mod tidy;

const HELP: &str = "\
cargo xtask <command> [args]

Commands (forwarded to `elasticsim`, built with --release):
  sim FILE [--seed N | --seeds N | --seeds A..B] [--policy P] [--variant V] [--out DIR] [--trace]
  check FILE...
  compare FILE --policies upstream,pr355,safe --seeds N
  shrink FILE --seed N [--time 60s]
  hunt [FILE...] [--targets pr355,agentk-v1,safe-ablations,fixed-ablations] [--budget 60s]
       [--guided | --uniform] [--master-seed N] [--out DIR]
  ablations   (the names sim/compare/shrink take with --ablate NAME[,NAME...])
  nightly [--seeds N] [--update-baseline]
      (sim --seeds, compare and nightly take --shard K/N or auto/N: shard K of N, from 0)
  merge DIR... [--out DIR]   (joins the shard folders of one --shard run)
  bench [--quick] [--out DIR]   (runs elasticsim-bench; writes reports/bench/bench.{json,md})
  plot DIR
  record --namespace NS --out FILE [--kubeconfig PATH] [--for 1h]
  serve FILE [--port 6443] [--speed 60] [--out DIR]

Run `cargo xtask <command> --help` for every flag.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h" {
        println!("{HELP}");
        return ExitCode::SUCCESS;
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    // `bench` has its own crate; every other command is the simulator's.
    let (package, binary, forwarded) = if args[0] == "bench" {
        ("elasticsim-bench", "elasticsim-bench", &args[1..])
    } else {
        ("elasticsim", "elasticsim", &args[..])
    };
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
