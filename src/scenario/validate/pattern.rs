//! The layer pattern's entries against their ranges (`model.pattern.*` in `RANGES`): a list, so it
//! is walked here rather than read by one getter. The estimator's resolve pass clamps the same
//! ranges (`estimator/resolve/pattern.rs`); this reports them as errors, once per field.

use super::{FieldError, field};
use crate::scenario::{Mixer, Mlp, Scenario};

/// Adds an error for every pattern field out of its range (the first offending value per field).
pub(super) fn errors(s: &Scenario, out: &mut Vec<FieldError>) {
    for part in &s.model.pattern {
        push(out, "model.pattern.repeat", part.repeat);
        for run in &part.layers {
            push(out, "model.pattern.layers.count", run.count);
            push(out, "model.pattern.layers.norms", run.norms);
            let (dims, windows, small): (Vec<u32>, Vec<u32>, Vec<u32>) = match &run.mixer {
                Mixer::Attention(a) => (
                    vec![a.heads, a.kv_heads, a.head_dim, a.relative_buckets],
                    vec![a.window, a.chunk],
                    vec![],
                ),
                Mixer::Mla(m) => (
                    vec![
                        m.heads,
                        m.q_lora_rank,
                        m.kv_lora_rank,
                        m.qk_nope_head_dim,
                        m.qk_rope_head_dim,
                        m.v_head_dim,
                    ],
                    vec![],
                    vec![],
                ),
                Mixer::Mamba(m) => (
                    vec![m.d_state, m.n_groups, m.head_dim, m.dt_rank, m.chunk_size],
                    vec![],
                    vec![m.d_conv, m.expand],
                ),
                Mixer::GatedDeltaNet(g) => (
                    vec![g.key_heads, g.value_heads, g.key_head_dim, g.value_head_dim],
                    vec![],
                    vec![g.conv_kernel],
                ),
                Mixer::None => (vec![], vec![], vec![]),
            };
            if let Mlp::Dense(d) = &run.mlp {
                push(out, "model.pattern.layers.dims", d.ffn);
            }
            for x in dims {
                push(out, "model.pattern.layers.dims", x);
            }
            for x in windows {
                push(out, "model.pattern.layers.window", x);
            }
            for x in small {
                push(out, "model.pattern.layers.small", x);
            }
        }
    }
}

/// Adds `name`'s range error for `x`, unless that field already has one (also used for the towers).
pub(super) fn push(out: &mut Vec<FieldError>, name: &'static str, x: u32) {
    if out.iter().any(|e| e.field == name) {
        return;
    }
    if let Some(message) = field(name).check(f64::from(x)) {
        out.push(FieldError {
            field: name,
            message,
        });
    }
}
