//! The towers' numbers against their ranges (`model.towers.*` in `RANGES`): a list, walked here
//! like the layer pattern. The estimator clamps the same ranges (`estimator/model/tower_shape.rs`);
//! this reports them as errors, once per field.

use super::FieldError;
use super::pattern::push;
use crate::scenario::{EncoderInput, Scenario, Tower};

/// Adds an error for every tower field out of its range (the first offending value per field).
pub(super) fn errors(s: &Scenario, out: &mut Vec<FieldError>) {
    for tower in &s.model.towers {
        let (counts, dims): (Vec<u32>, Vec<u32>) = match tower {
            Tower::Vision(v) => (
                vec![v.layers, v.images, v.projector.mid_layers],
                vec![
                    v.hidden,
                    v.heads,
                    v.ffn,
                    v.image_size,
                    v.patch_size,
                    v.channels,
                    v.temporal_patch,
                    v.projector.merge,
                    v.projector.hidden,
                    v.projector.out,
                ],
            ),
            Tower::Encoder(e) => {
                let mut dims = vec![e.hidden, e.heads, e.head_dim, e.ffn, e.input_len];
                if let EncoderInput::AudioConv {
                    mel_bins,
                    positions,
                } = e.input
                {
                    dims.extend([mel_bins, positions]);
                }
                (vec![e.layers], dims)
            }
        };
        for x in counts {
            push(out, "model.towers.count", x);
        }
        for x in dims {
            push(out, "model.towers.dims", x);
        }
    }
}
