//! `elasticsim serve`: see `crate::live::serve`.

use super::Failure;
use super::args::ServeArgs;

#[cfg(not(feature = "live"))]
pub(super) fn run(_args: &ServeArgs) -> Result<(), Failure> {
    Err(Failure::Input(
        "`serve` needs the `live` feature: rebuild without --no-default-features".to_owned(),
    ))
}

#[cfg(feature = "live")]
pub(super) fn run(args: &ServeArgs) -> Result<(), Failure> {
    use crate::live::serve::{ServeOptions, serve};
    use std::io::Write;
    if !(args.speed > 0.0 && args.speed.is_finite()) {
        return Err(Failure::Input(format!(
            "--speed {}: expected a positive number",
            args.speed
        )));
    }
    let scenario = super::sim::load(&args.file)?;
    let sim_args = super::args::SimArgs {
        file: args.file.clone(),
        seed: args.seed,
        seeds: None,
        policy: args.policy,
        variant: None,
        out: None,
        trace: false,
        export_trace: None,
        threads: None,
        shard: None,
        quiet: true,
        ablate: None,
        swarm_draw: None,
    };
    let settings = super::sim::settings(&scenario, &sim_args)?;
    let out = args.out.clone().unwrap_or_else(|| {
        std::path::PathBuf::from("reports")
            .join(&scenario.name)
            .join("serve")
    });
    let options = ServeOptions {
        port: args.port,
        speed: args.speed,
        for_ms: super::record::for_ms(args.for_duration.as_deref())?,
        out,
    };
    let speed = args.speed;
    // A leader scenario's story is its Lease; an elastic one's, its pods.
    let watched = if scenario.leader.is_some() {
        "leases -A"
    } else {
        "pods"
    };
    // Printing must not fail the run: whoever started serve may stop reading its output.
    let summary = serve(scenario, settings, options, |address, kubeconfig| {
        let mut stdout = std::io::stdout();
        let config = kubeconfig.display();
        let _ = writeln!(
            stdout,
            "serving on http://{address} at {speed}x; kubeconfig: {config}"
        );
        let _ = writeln!(
            stdout,
            "try: kubectl --kubeconfig {config} get {watched} -w"
        );
        let _ = stdout.flush();
    })
    .map_err(Failure::Internal)?;
    let _ = writeln!(
        std::io::stdout(),
        "stopped at t = {:.1} s after {} events; {} pods deleted through the API",
        summary.sim_ms as f64 / 1000.0,
        summary.events,
        summary.pods_deleted_by_kubectl
    );
    Ok(())
}
