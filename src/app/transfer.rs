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
                imported.apply(s);
                // The same description as `vram-explorer import` prints on standard error.
                let m = import::flow::ModelImport {
                    config: imported,
                    located: import::source::Located {
                        config: path.to_path_buf(),
                        index: None,
                    },
                    total_size: None,
                };
                let msg = report::import::summary(&m, s);
                self.notices.push(Notice::info(msg.trim_end().to_owned()));
            }
            Err(e) => self.notices.push(Notice::error(format!(
                "Could not import the model config ({e}): {}",
                path.display()
            ))),
        }
    }

    /// Counts a checkpoint's parameters from its safetensors headers and uses that count.
    pub(super) fn import_checkpoint(&mut self, path: &Path) {
        let s = &mut self.session.scenario;
        match read_checkpoint(path).and_then(|sum| Ok((sum.validated_model(&s.model)?, sum))) {
            Ok((model, summary)) => {
                s.model = model;
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

/// Never blocks on a FIFO nor reads past the limit (`import::files::read_config`).
fn read_small(path: &Path) -> Result<String, String> {
    import::files::read_config(path).map_err(|e| format!("Could not read the file: {e}"))
}
