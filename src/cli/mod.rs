//! The `elasticsim` command line: flags, dispatch and exit codes (`docs/cli.md`).
//!
//! Exit codes: 0 every invariant held; 1 an invariant was violated; 2 bad input (scenario,
//! trace or flags); 3 internal error (a bug in the harness).

mod args;
mod check;
mod compare;
mod hunt;
mod merge;
mod nightly;
mod plot;
mod record;
mod review;
mod serve;
mod shrink;
mod sim;
mod sweep;

pub use args::{
    Cli, Command, CompareArgs, HuntArgs, MergeArgs, NightlyArgs, ReviewArgs, ShrinkArgs,
};

use std::fmt;

/// How a command ended, other than success.
#[derive(Debug)]
pub enum Failure {
    /// At least one invariant was violated (exit 1); the report says which.
    Violated,
    /// Bad input (exit 2): the message names file, line, column, key and what was expected.
    Input(String),
    /// A harness bug (exit 3).
    Internal(String),
    /// Stopped by SIGINT/SIGTERM (exit 130) after writing the results of the seeds done.
    Interrupted(String),
}

impl Failure {
    /// The process exit code: 1 violated, 2 bad input, 3 harness bug, 130 interrupted.
    pub fn exit_code(&self) -> i32 {
        match self {
            Failure::Violated => 1,
            Failure::Input(_) => 2,
            Failure::Internal(_) => 3,
            Failure::Interrupted(_) => crate::interrupt::EXIT_CODE,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Violated => write!(f, "invariants violated"),
            Failure::Input(message) => write!(f, "error: {message}"),
            Failure::Interrupted(message) => write!(f, "{message}"),
            Failure::Internal(message) => write!(
                f,
                "internal error (a bug in elasticsim): {message}\n\
                 Please report it with the command line and the scenario file."
            ),
        }
    }
}

impl From<crate::run::RunError> for Failure {
    fn from(error: crate::run::RunError) -> Self {
        match error {
            crate::run::RunError::Input(message) => Failure::Input(message),
            crate::run::RunError::Internal(message) => Failure::Internal(message),
        }
    }
}

/// Print to stdout; a closed pipe (`| head`) is not an error worth a panic.
pub(crate) fn say(text: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
}

/// Run one parsed command line.
pub fn execute(cli: Cli) -> Result<(), Failure> {
    match cli.command {
        Command::Sim(args) if args.seeds.is_some() => sweep::run(&args),
        Command::Sim(args) => sim::run(&args),
        Command::Compare(args) => compare::run(&args),
        Command::Shrink(args) => shrink::run(&args),
        Command::Check { files } => check::run(&files),
        Command::Nightly(args) => nightly::run(&args),
        Command::Plot { dir } => plot::run(&dir),
        Command::Record(args) => record::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::Merge(args) => merge::run(&args),
        Command::Review(args) => review::run(&args),
        Command::Ablations => {
            say(&ablation_list());
            Ok(())
        }
        Command::Hunt(args) => hunt::run(&args),
    }
}

/// `elasticsim ablations`: one line per name, grouped by the policy or variant it belongs to.
fn ablation_list() -> String {
    crate::mutants::catalogue()
        .into_iter()
        .map(|(owner, name, what)| format!("{:<5}  {name:<18} {what}\n", owner.name()))
        .collect()
}
