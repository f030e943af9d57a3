//! Imports (a Hugging Face `config.json`, a `.safetensors` checkpoint's headers) and exports (a
//! Markdown report with CSVs beside it). Offline: nothing is fetched. A failed import changes nothing
//! and says why; a successful one is an ordinary, undoable edit.

use std::path::{Path, PathBuf};

use super::ExplorerApp;
use crate::estimator::estimate;
use crate::estimator::performance::compare;
use crate::import::{self, files::read_checkpoint};
use crate::presets::write_atomically;
use crate::report;
use crate::ui::notice::Notice;

/// config.json files larger than this are refused before reading (real ones are a few KiB).
const MAX_CONFIG_BYTES: u64 = 1 << 20;

impl ExplorerApp {
    /// Replaces the model's shape with a Hugging Face `config.json`'s.
    pub(super) fn import_config(&mut self, path: &Path) {
        let text = match read_small(path) {
            Ok(t) => t,
            Err(e) => return self.notices.push(Notice::error(e)),
        };
        let s = &mut self.session.scenario;
        match import::from_hf_config(&text, &s.model) {
            Ok(imported) => {
                s.model = imported.model;
                let mut msg = format!(
                    "Imported the {} model shape from {}",
                    imported.model_type,
                    path.display()
                );
                for note in imported.notes {
                    msg.push_str("\n- ");
                    msg.push_str(&note);
                }
                self.notices.push(Notice::info(msg));
            }
            Err(e) => self.notices.push(Notice::error(format!(
                "Could not import the model config ({e}): {}",
                path.display()
            ))),
        }
    }

    /// Counts a checkpoint's parameters from its safetensors headers and uses that count.
    pub(super) fn import_checkpoint(&mut self, path: &Path) {
        match read_checkpoint(path) {
            Ok(summary) => {
                let s = &mut self.session.scenario;
                s.model = summary.to_model(&s.model);
                let mut msg = format!(
                    "Counted {} parameters in {} tensors ({} bytes): {}",
                    summary.params,
                    summary.tensors,
                    summary.bytes,
                    path.display()
                );
                for note in summary.notes {
                    msg.push_str("\n- ");
                    msg.push_str(&note);
                }
                self.notices.push(Notice::info(msg));
            }
            Err(e) => self.notices.push(Notice::error(format!(
                "Could not read the checkpoint ({e}): {}",
                path.display()
            ))),
        }
    }

    /// Writes `<name>.md` and `<name>-{breakdown,phases,roofline,comparison}.csv` beside it.
    pub(super) fn export_report(&mut self, path: PathBuf) {
        let s = &self.session.scenario;
        let e = estimate(s);
        let c = compare(s);
        let md = path.with_extension("md");
        let stem = md.with_extension("");
        let csv = |suffix: &str| PathBuf::from(format!("{}-{suffix}.csv", stem.display()));
        let files = [
            (md.clone(), report::markdown_with(s, &e, Some(&c))),
            (csv("breakdown"), report::breakdown_csv(&e)),
            (csv("phases"), report::phases_csv(&e)),
            (csv("roofline"), report::roofline_csv(&e)),
            (csv("comparison"), report::comparison_csv(&c)),
        ];
        for (file, text) in &files {
            if let Err(err) = write_atomically(file, text.as_bytes()) {
                let msg = format!("Could not write the report ({err}): {}", file.display());
                return self.notices.push(Notice::error(msg));
            }
        }
        self.notices.push(Notice::info(format!(
            "Exported the report and four CSV files beside it: {}",
            md.display()
        )));
    }
}

fn read_small(path: &Path) -> Result<String, String> {
    let meta = std::fs::metadata(path)
        .map_err(|e| format!("Could not read the file ({e}): {}", path.display()))?;
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(format!(
            "The file is {} bytes, more than the {MAX_CONFIG_BYTES} accepted for a config.json: {}",
            meta.len(),
            path.display()
        ));
    }
    std::fs::read_to_string(path)
        .map_err(|e| format!("Could not read the file ({e}): {}", path.display()))
}
