//! `elasticsim plot DIR`: redraw a run folder's plots from its CSVs.

use super::Failure;
use std::path::Path;

pub(super) fn run(dir: &Path) -> Result<(), Failure> {
    if !dir.join("timeline.csv").is_file() {
        return Err(Failure::Input(format!(
            "{}: not a run report folder (no timeline.csv)",
            dir.display()
        )));
    }
    let drawn = crate::report::plots::redraw_run_plots(dir)
        .map_err(|error| Failure::Input(error.to_string()))?;
    for plot in drawn {
        println!(
            "{} ({})",
            dir.join(plot.svg_name()).display(),
            dir.join(plot.png_name()).display()
        );
    }
    Ok(())
}
