//! The `elasticsim` binary. See `elasticsim --help` and `docs/cli.md`.

#![deny(unsafe_code)]

use clap::Parser;

/// jemalloc rather than the C library's malloc. A run allocates and frees small objects at
/// nearly every event (pod copies, label maps, names, listing chunks); jemalloc keeps objects
/// of one size class together in the same pages, so the records an event touches share
/// cache lines and pages more often. On the ten-times day this cut the simulated L2 misses
/// per event by a quarter and the instructions by 6 % (`docs/performance.md`, "Where the speed
/// structures live").
/// The allocator decides addresses only: no decision reads one, so fingerprints are the same.
#[cfg(unix)]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() {
    // A panic is a harness bug: say so, and exit 3 rather than Rust's 101.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("internal error (a bug in elasticsim): {info}");
        eprintln!("Please report it with the command line and the scenario file.");
    }));
    let cli = elasticsim::cli::Cli::parse();
    let code = match std::panic::catch_unwind(|| elasticsim::cli::execute(cli)) {
        Ok(Ok(())) => 0,
        Ok(Err(failure)) => {
            if !matches!(failure, elasticsim::cli::Failure::Violated) {
                eprintln!("{failure}");
            }
            failure.exit_code()
        }
        Err(_) => 3,
    };
    std::process::exit(code);
}
