//! The model dimensions every measured record stores (`n_layers` … `tied_embeddings`; schema in
//! tests/data/measured/README.md), read once for the tests that rebuild records as scenarios
//! (`tests/measured.rs`, `support/hf_records.rs`): `#[path = "support/record_dims.rs"] mod record_dims;`.
#![allow(dead_code)]

use serde_json::Value;
use vram_explorer::scenario::TransformerDims;

/// A record's unsigned field `k` (the test fails when it is missing or above u32).
pub fn u(v: &Value, k: &str) -> u32 {
    u32::try_from(v[k].as_u64().unwrap_or_else(|| panic!("missing {k}")))
        .unwrap_or_else(|_| panic!("{k} out of range"))
}

/// Layers, widths, heads, vocabulary, positions and tying as the record measured them.
pub fn copy_dims(r: &Value, t: &mut TransformerDims) {
    t.layers = u(r, "n_layers");
    t.hidden = u(r, "hidden");
    t.heads = u(r, "heads");
    t.kv_heads = u(r, "kv_heads");
    t.head_dim = u(r, "head_dim");
    t.ffn = u(r, "ffn");
    t.vocab = u(r, "vocab");
    t.max_positions = u(r, "max_positions");
    t.tied_embeddings = r["tied_embeddings"].as_bool().unwrap_or(false);
}
