//! The workload numbers of the stacks beside the language model (`scenario::Tower`): how many
//! images each sequence carries into a vision tower, and how many positions an encoder reads.
//! Shown only when the model has such a tower (an imported vision-language or encoder-decoder
//! model); the towers' architecture comes from the import and is not edited here.

use egui::Ui;

use crate::scenario::{EncoderInput, Scenario, Tower};
use crate::ui::widgets::int_slider;

/// One control per tower the model has; nothing for a model without towers.
pub fn ui(ui: &mut Ui, s: &mut Scenario) {
    for (i, tower) in s.model.towers.iter_mut().enumerate() {
        ui.push_id(("tower", i), |ui| match tower {
            Tower::Vision(v) => {
                let side = v.image_size;
                int_slider(
                    ui,
                    &mut v.images,
                    0..=256,
                    false,
                    "Images per sequence",
                    "images",
                    &format!(
                        "Images of {side} × {side} pixels the vision encoder reads for each \
                         sequence; their tokens take places in the prompt (sequence length). \
                         0 = text only: the vision encoder's weights alone count."
                    ),
                );
            }
            Tower::Encoder(e) => {
                let (what, default) = match e.input {
                    EncoderInput::SharedEmbedding => ("tokens", "the workload's sequence length"),
                    EncoderInput::AudioConv { .. } => (
                        "audio frames",
                        "the model's own window (Whisper: 1,500 frames, 30 s)",
                    ),
                };
                int_slider(
                    ui,
                    &mut e.input_len,
                    0..=65_536,
                    true,
                    "Encoder input length",
                    "positions",
                    &format!(
                        "Positions the encoder reads per sample ({what}); the decoder's \
                         cross-attention keeps keys and values for each. 0 = {default}."
                    ),
                );
            }
        });
    }
}
