//! The engine section's paste box: a `vllm serve …` / `python -m sglang.launch_server …` /
//! `llama-server …` line applied by the Parse button (`scenario::engine_args::apply_command`), its
//! notes or error shown under it.

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
            .hint_text("vllm serve MODEL … / llama-server -m model-Q4_K_M.gguf …"),
    )
    .labelled_by(label.id)
    .on_hover_text("A `vllm serve …`, `python -m sglang.launch_server …` or `llama-server …` / `llama-cli …` line: its flags fill the engine's settings (and pick the engine).");
    if ui
        .button("Parse command")
        .on_hover_text(
            "Apply the pasted command's flags (unknown flags are reported, not guessed).",
        )
        .clicked()
    {
        p.message = match engine_args::apply_command(&p.text, s) {
            Ok((out, notes)) => {
                *s = out;
                let mut m = vec!["Applied.".to_owned()];
                m.extend(notes.iter().map(|n| sentence(n)));
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

/// A note as a sentence: its first letter capitalised, a full stop at the end.
fn sentence(note: &str) -> String {
    let mut c = note.chars();
    match c.next() {
        Some(first) => format!("{}{}.", first.to_uppercase(), c.as_str()),
        None => String::new(),
    }
}
