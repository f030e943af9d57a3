//! What the serving engine would print at startup, above the composition chart (vLLM's "GPU KV
//! cache size: N tokens", SGLang's "#tokens: N"), with the budget behind it on hover.

use egui::{RichText, Ui};

use crate::estimator::Estimate;
use crate::report::engine::{budget_lines, default_context_line, printed_lines};
use crate::units::MemoryUnit;

/// Draws the lines (nothing without vLLM / SGLang); returns the height they took.
pub fn ui(ui: &mut Ui, est: &Estimate, unit: MemoryUnit) -> f32 {
    let Some(f) = &est.engine else {
        return 0.0;
    };
    let top = ui.cursor().min.y;
    let mut lines = printed_lines(f);
    // Not a line vLLM prints for this setting, but what its default would do: shown as a warning.
    lines.extend(default_context_line(f).map(|l| format!("note: {l}")));
    let why = budget_lines(f, unit).join("\n");
    for (i, l) in lines.iter().enumerate() {
        let text = if i == 0 {
            format!("{} would print: {l}", f.kind.label())
        } else {
            format!("    {l}")
        };
        // One row per printed line (a wrapped line took the memory chart's rows at 1280×720 in
        // presentation); the whole line and the budget behind it on hover.
        ui.add(egui::Label::new(RichText::new(&text).monospace().small()).truncate())
            .on_hover_text(format!("{text}\n{why}"));
    }
    ui.cursor().min.y - top
}
