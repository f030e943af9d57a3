//! The engine section's paste box: a `vllm serve …` / `python -m sglang.launch_server …` line
//! applied by the Parse button (`scenario::engine_args`), its notes or error shown under it.

use egui::{RichText, Ui};

use crate::scenario::Scenario;
use crate::scenario::engine_args;

/// The paste box's text and the last parse's message (not part of the document: egui's memory).
#[derive(Clone, Default)]
struct Paste {
    text: String,
    message: String,
}

/// The paste box and its Parse button; the result (notes or the error) is shown under it.
pub fn ui(ui: &mut Ui, s: &mut Scenario) {
    let id = egui::Id::unique("engine_paste");
    let mut p: Paste = ui.data_mut(|d| d.get_temp(id)).unwrap_or_default();
    let label = ui.label("Paste a serving command");
    ui.add(
        egui::TextEdit::multiline(&mut p.text)
            .desired_rows(2)
            .desired_width(f32::INFINITY)
            .hint_text("vllm serve MODEL --gpu-memory-utilization 0.9 …"),
    )
    .labelled_by(label.id)
    .on_hover_text("A `vllm serve …` or `python -m sglang.launch_server …` line: its flags fill the engine's settings.");
    if ui
        .button("Parse command")
        .on_hover_text(
            "Apply the pasted command's flags (unknown flags are reported, not guessed).",
        )
        .clicked()
    {
        p.message = match engine_args::parse(&p.text) {
            Ok(a) => {
                a.apply(s);
                let mut m = vec!["Applied.".to_owned()];
                if !a.ignored.is_empty() {
                    m.push(format!(
                        "Ignored (no effect on memory): {}.",
                        a.ignored.join(", ")
                    ));
                }
                if !a.not_modelled.is_empty() {
                    m.push(format!("Not modelled: {}.", a.not_modelled.join(", ")));
                }
                m.join(" ")
            }
            Err(e) => format!("Not applied: {e}."),
        };
    }
    if !p.message.is_empty() {
        ui.label(RichText::new(&p.message).small());
    }
    ui.data_mut(|d| d.insert_temp(id, p));
}
