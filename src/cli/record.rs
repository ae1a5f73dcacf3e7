//! `elasticsim record`: see `crate::live::record`.

use super::Failure;
use super::args::RecordArgs;

/// `--for` in milliseconds, if given.
#[cfg(feature = "live")]
pub(super) fn for_ms(text: Option<&str>) -> Result<Option<u64>, Failure> {
    text.map(|text| {
        crate::scenario::parse_duration_ms(text)
            .map_err(|e| Failure::Input(format!("--for {text:?}: {}", e.describe())))
    })
    .transpose()
}

#[cfg(not(feature = "live"))]
pub(super) fn run(_args: &RecordArgs) -> Result<(), Failure> {
    Err(Failure::Input(
        "`record` needs the `live` feature: rebuild without --no-default-features".to_owned(),
    ))
}

#[cfg(feature = "live")]
pub(super) fn run(args: &RecordArgs) -> Result<(), Failure> {
    use crate::live::record::{TraceWriter, client, record};
    let for_ms = for_ms(args.for_duration.as_deref())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Internal(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(async {
        let client = client(args.kubeconfig.as_deref())
            .await
            .map_err(Failure::Input)?;
        let source = format!("elasticsim record {}", client.default_namespace());
        let file = std::fs::File::create(&args.out)
            .map_err(|e| Failure::Input(format!("cannot create {}: {e}", args.out.display())))?;
        let started_at = crate::replay::rfc3339(crate::live::serve::unix_ms());
        let mut writer = TraceWriter::new(file, &source, &args.namespace, &started_at)
            .map_err(|e| Failure::Input(format!("writing {}: {e}", args.out.display())))?;
        let stop = async {
            match for_ms {
                Some(ms) => tokio::select! {
                    _ = tokio::time::sleep(std::time::Duration::from_millis(ms)) => {}
                    _ = tokio::signal::ctrl_c() => {}
                },
                None => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        };
        let outcome = tokio::select! {
            result = record(client, &args.namespace, &mut writer) => Some(result),
            () = stop => None,
        };
        if let Some(Err(error)) = outcome {
            return Err(Failure::Input(format!(
                "writing {}: {error}",
                args.out.display()
            )));
        }
        let stats = &writer.stats;
        eprintln!(
            "recorded {} lines to {} ({} lists, {} watches, {} errors)",
            stats.lines,
            args.out.display(),
            stats.lists,
            stats.watches,
            stats.errors
        );
        Ok(())
    })
}
