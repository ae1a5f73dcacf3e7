//! The `elasticsim` binary. See `elasticsim --help` and `docs/cli.md`.

use clap::Parser;

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
