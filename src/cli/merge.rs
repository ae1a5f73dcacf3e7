//! `elasticsim merge DIR…`: join the shard folders of one `--shard` run into the outputs the
//! unsharded run writes. The folders must hold every shard of one run exactly once, with
//! every cell once; otherwise nothing is written and the error (exit 2) names the missing or
//! repeated shards and seeds and the folders involved.

use super::Failure;
use super::args::MergeArgs;
use crate::explore::CommandKind;
use crate::explore::shard;

pub(super) fn run(args: &MergeArgs) -> Result<(), Failure> {
    let assembled = shard::read_and_assemble(&args.dirs).map_err(Failure::Input)?;
    let same = |folder: &std::path::Path| match (folder.canonicalize(), args.out.canonicalize()) {
        (Ok(folder), Ok(out)) => folder == out,
        _ => false,
    };
    if let Some(folder) = assembled.folders.iter().find(|folder| same(folder)) {
        return Err(Failure::Input(format!(
            "--out {}: it is the shard folder {}; merge into another folder",
            args.out.display(),
            folder.display()
        )));
    }
    match assembled.command {
        CommandKind::Sweep => super::sweep::merge(&assembled, &args.out),
        CommandKind::Compare => super::compare::merge(&assembled, &args.out),
        CommandKind::Nightly => super::nightly::merge(&assembled, &args.out),
        CommandKind::Review => super::review::merge(&assembled, &args.out),
    }
}
