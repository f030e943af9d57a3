//! The llama.cpp buffers explained: on its GPU with the most bytes, the model buffer is the
//! weights, the KV buffer the KV cache and the compute buffer the transient bytes
//! (`engines::llamacpp`; docs/engines/llamacpp.md).

use super::parts::Parts;
use crate::estimator::Component;
use crate::estimator::engines::llamacpp::{Buffers, ComputeBasis, mib_printed};
use crate::units::Bytes;

const SOURCE: &str = "llama.cpp@0c1e57098 (llama-cpp-python 0.3.36): src/llama-model.cpp load_tensors, \
src/llama-quant.cpp, src/llama-kv-cache.cpp, llama_context::sched_reserve; docs/engines/llamacpp.md";

/// The explanation of a component a llama.cpp buffer holds (`None` for the others).
pub(super) fn parts(b: &Buffers, c: Component) -> Option<Parts> {
    let (i, d) = b.largest_gpu()?;
    let dev = format!("CUDA{i}");
    let (bytes, formula, lead, assumption) = match c {
        Component::Weights => (
            d.model,
            "Σ over the tensors on this GPU of pad(bytes(type, elements) + CUDA row padding, 128 B)",
            format!(
                "{dev} model buffer: {} repeating layers{} of the GGUF {} file, each tensor in the type llama-quantize gave it",
                d.layers,
                if d.output { " + the output layer" } else { "" },
                b.file_type.name()
            ),
            "the file was made by llama-quantize's default rules (no --tensor-type overrides, no imatrix-dependent choices)",
        ),
        Component::KvCache => (
            d.kv,
            "Σ over this GPU's layers of cells × (bytes(ctk, n_embd_k_gqa) + bytes(ctv, n_embd_v_gqa)); cells = n_ctx, or per stream pad256(min(n_ctx / streams, window × (unified ? n_seq : 1) + n_ubatch)) for a windowed layer beside global ones (n_ctx with --swa-full); latent attention: K = kv_lora + rope, no V",
            format!(
                "{dev} KV buffer: {} layers × {} cells ({} / {})",
                d.layers,
                b.n_ctx,
                b.settings.cache_type_k.name(),
                b.settings.cache_type_v.name()
            ),
            "one stream per -np sequence, or one shared by all with --kv-unified (a bare llama-server: -np auto = 4 slots, unified); --swa-full as set (llama-server: off; the C API and llama-cpp-python: on); a Mamba / DeltaNet layer's recurrent state (the RS buffer, F32 per sequence) is counted here too",
        ),
        Component::Transient if b.compute_basis != ComputeBasis::ClosedForm => (
            d.compute,
            "the high-water mark of ggml-alloc over this GPU's share of the reserve graph: the scheduler's split (weights pin ops to their GPU, inputs to the CPU, each layer's norm to its layer's GPU under full offload; the products of host weights — a host layer's, the output's — to the first GPU with op offload, each on a copy of its matrix, a host layer's attention there too on copies of its cache's K and V) with a copy of every input from another backend, n_copies times with pipeline parallelism",
            format!(
                "{dev} compute buffer: the worst-case graph of T = {} tokens over {} cells, replayed{}",
                b.n_ubatch,
                b.n_ctx,
                if b.compute_basis == (ComputeBasis::Replayed { legacy_graph: true }) {
                    " (the pre-set_rows graph)"
                } else {
                    ""
                }
            ),
            "ggml-backend.cpp's scheduler and ggml-alloc.c's planner replayed op by op (sched.rs): exact on the published one-, two- and four-GPU logs; each GPU's run of layers shortened to at most 12 (exact: the planner's state repeats)",
        ),
        Component::Transient => (
            d.compute,
            "max(output: T × (n_vocab + n_embd) × 4, layer: n_kv × T × n_head × 4 + 6 × n_embd × T × 4 without flash attention, (3 n_ff + n_embd) × T × 4 with it) (+ a host weight's copy with op offload)",
            format!(
                "{dev} compute buffer: the worst-case graph of T = {} tokens over {} cells",
                b.n_ubatch, b.n_ctx
            ),
            "leading order in closed form, for what the scheduler replay does not cover (FFN weights or experts on the host, MoE or biased host layers, graphs other than the Llama family): its 6 activations are the replay's single-GPU figure for Llama-3.1-8B, not derived for other shapes",
        ),
        _ => return None,
    };
    Some(Parts {
        formula: formula.to_owned(),
        lead: format!(
            "{lead} = {:.2} MiB as llama.cpp prints it",
            mib_printed(bytes)
        ),
        terms: vec![(format!("{dev} buffer"), Bytes(bytes as f64))],
        source: SOURCE,
        assumption,
        rest: "other",
    })
}
