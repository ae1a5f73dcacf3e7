//! `cargo xtask sim FILE` for a scenario whose `[leader]` names a `lease_crate`: build
//! `elasticsim-crates` (the workspace of its own in `cratesim/`, which holds the crates under
//! test and a second kube) with the `sim` profile, then run it with the same arguments.
//! `cargo test --workspace` and the simulator's own build never compile it.

use crate::{Target, build_in};
use std::path::PathBuf;
use std::process::{Command, ExitCode};

const CRATES: Target = Target {
    profile: "sim",
    package: "elasticsim-crates",
    binary: "elasticsim-crates",
    features: &[],
    clean_build: "as long as compiling kube 5 and kube 4, k8s-openapi 0.29 and 0.28 and the \
                  simulator's library, once (docs/crates.md says what was measured)",
};

/// The repository's root (xtask lives in its `xtask/` folder).
fn root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}

/// Build and run `elasticsim-crates` with `args` (`sim FILE …`), passing its exit code on.
pub(crate) fn sim(cargo: &str, args: &[String]) -> ExitCode {
    let folder = root().join("cratesim");
    if let Err(error) = build_in(cargo, &CRATES, Some(&folder)) {
        eprintln!("xtask: the build of `{}` failed: {error}", CRATES.binary);
        return ExitCode::from(3);
    }
    let binary = root()
        .join("target")
        .join("crates")
        .join(CRATES.profile)
        .join(CRATES.binary);
    match Command::new(&binary).args(args).status() {
        Ok(status) => match status.code() {
            Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(3)),
            None => ExitCode::from(3),
        },
        Err(error) => {
            eprintln!("xtask: cannot run {}: {error}", binary.display());
            ExitCode::from(3)
        }
    }
}
