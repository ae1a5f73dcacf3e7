//! The bench table on the terminal, in `bench.md` and in `bench.json`.

use crate::stats::{Figure, format_number};
use elasticsim::report::atomic;
use serde::Serialize;
use std::path::Path;

pub const TABLE_HEADER: &str = "| figure | median | min | max | n | unit | target | result |\n\
                                |---|---|---|---|---|---|---|---|";

/// One Markdown table row; the terminal prints the same rows as they are measured.
pub fn table_row(figure: &Figure) -> String {
    let (median, min, max, samples) = match figure.summary {
        Some(summary) => (
            format_number(summary.median),
            format_number(summary.min),
            format_number(summary.max),
            summary.samples.to_string(),
        ),
        None => (
            "missing".to_owned(),
            "-".to_owned(),
            "-".to_owned(),
            "0".to_owned(),
        ),
    };
    let target = figure
        .target
        .map(|target| target.describe())
        .unwrap_or_else(|| "-".to_owned());
    let result = match figure.status {
        "pass" => "PASS",
        "fail" => "FAIL",
        "missing" => "missing",
        _ => "-",
    };
    format!(
        "| {} | {median} | {min} | {max} | {samples} | {} | {target} | {result} |",
        figure.name, figure.unit
    )
}

/// Everything `bench.json` holds.
#[derive(Serialize)]
pub struct Document<'a> {
    pub quick: bool,
    pub threads_available: usize,
    pub figures: &'a [Figure],
    /// True if every figure with a target met it (missing figures do not count).
    pub targets_met: bool,
    /// Per-seed fingerprints of the 1-thread and 2-thread sweeps were identical.
    pub sweep_fingerprints_identical: Option<bool>,
}

/// `bench.md`: the table, then each note.
pub fn markdown(document: &Document) -> String {
    let mut text = String::from("# elasticsim bench\n\n");
    let mode = if document.quick { "quick" } else { "full" };
    text.push_str(&format!(
        "Mode: {mode}; {} hardware threads. Each figure is the median of n repetitions, all \
         measured in the same run; ratios are per repetition.\n\n",
        document.threads_available
    ));
    text.push_str(TABLE_HEADER);
    text.push('\n');
    for figure in document.figures {
        text.push_str(&table_row(figure));
        text.push('\n');
    }
    let notes: Vec<&Figure> = document
        .figures
        .iter()
        .filter(|figure| !figure.note.is_empty())
        .collect();
    if !notes.is_empty() {
        text.push_str("\nNotes:\n\n");
        for figure in notes {
            text.push_str(&format!("- `{}`: {}\n", figure.name, figure.note));
        }
    }
    text
}

/// Write `bench.json` and `bench.md` into `folder`, each atomically.
pub fn write(folder: &Path, document: &Document) -> anyhow::Result<()> {
    std::fs::create_dir_all(folder)?;
    let json = serde_json::to_vec_pretty(document)?;
    atomic::write_file(&folder.join("bench.json"), &json)?;
    atomic::write_file(&folder.join("bench.md"), markdown(document).as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Target;

    #[test]
    fn a_row_shows_the_median_the_spread_the_target_and_the_mark() {
        let figure = Figure::measured(
            "engine_vs_bare",
            "x",
            &[2.0, 2.5, 4.0],
            Some(Target::AtMost(3.0)),
        );
        assert_eq!(
            table_row(&figure),
            "| engine_vs_bare | 2.50 | 2.00 | 4.00 | 3 | x | <= 3.00 | PASS |"
        );
    }

    #[test]
    fn a_missing_figure_says_so_and_its_note_is_listed() {
        let figure = Figure::missing(
            "model_events_per_s_chaos",
            "events/s",
            None,
            "no chaos.toml",
        );
        assert!(table_row(&figure).contains("| missing |"));
        let figures = [figure];
        let document = Document {
            quick: true,
            threads_available: 2,
            figures: &figures,
            targets_met: true,
            sweep_fingerprints_identical: None,
        };
        assert!(markdown(&document).contains("- `model_events_per_s_chaos`: no chaos.toml"));
    }

    #[test]
    fn both_files_are_written_into_the_folder() {
        let folder =
            std::env::temp_dir().join(format!("elasticsim-bench-test-{}", std::process::id()));
        let figures = [Figure::measured("x", "s", &[1.0], Some(Target::Below(2.0)))];
        let document = Document {
            quick: false,
            threads_available: 1,
            figures: &figures,
            targets_met: true,
            sweep_fingerprints_identical: Some(true),
        };
        write(&folder, &document).expect("writing the report");
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(folder.join("bench.json")).expect("bench.json"))
                .expect("valid JSON");
        assert_eq!(json["figures"][0]["status"], "pass");
        assert!(
            std::fs::read_to_string(folder.join("bench.md"))
                .expect("bench.md")
                .contains("| x |")
        );
        std::fs::remove_dir_all(&folder).expect("removing the test folder");
    }
}
