//! `elasticsim check FILE…`: validate scenarios only.

use super::Failure;
use std::path::PathBuf;

pub(super) fn run(files: &[PathBuf]) -> Result<(), Failure> {
    let mut errors = Vec::new();
    for file in files {
        match crate::scenario::load(file) {
            Ok(loaded) => {
                super::say(&format!(
                    "ok {} ({})\n",
                    file.display(),
                    loaded.scenario.name
                ));
                for warning in &loaded.warnings {
                    super::say(&format!("  warning: {warning}\n"));
                }
            }
            Err(error) => errors.push(error.to_string()),
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(Failure::Input(errors.join("\nerror: ")))
    }
}
