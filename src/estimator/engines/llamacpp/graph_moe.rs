//! llama.cpp's mixture-of-experts FFN as the planner sees it: `llm_graph_context::build_moe_ffn`
//! (ggml-org/llama.cpp@0c1e57098 `src/llama-graph.cpp`) with the arguments `llama` (Mixtral) and
//! `qwen3moe` pass (`src/models/llama.cpp`, `src/models/qwen3moe.cpp`): soft-max gating, the top-k
//! weights normalised (`norm_w`), no weight scale, no expert groups, SwiGLU experts, no biases;
//! and `qwen2moe`'s (`src/models/qwen2moe.cpp`: the weights not normalised; its shared expert is
//! built beside, `graph_llama::ffn`). Measured: tests/data/measured/llamacpp-cpu-moe.json and
//! llamacpp-cpu-layer-kinds.json.

use super::compute::MAX_EXPERTS_USED;
use super::ggml::{Graph, Id, NONE, Op};

/// One layer's expert weights (external: never planned).
pub struct Experts {
    /// `ffn_gate_inp` (F32 `[n_embd, n_expert]`).
    pub router: Id,
    /// `ffn_gate_exps` / `ffn_up_exps` (`[n_embd, n_ff, n_expert]`).
    pub up: Id,
    /// `ffn_down_exps` (`[n_ff, n_embd, n_expert]`).
    pub down: Id,
    pub n_used: u64,
    /// The top-k weights divided by their sum (`norm_w`: Mixtral, Qwen3-MoE; not Qwen2-MoE).
    pub norm_w: bool,
}

/// The FFN of `cur` (`[n_embd, T]`, the FFN norm's output), in `build_moe_ffn`'s order of
/// `ggml_build_forward_expand` calls; returns the summed expert outputs (`ffn_moe_out`).
pub fn moe_ffn<const N: usize>(g: &mut Graph<N>, cur: Id, e: &Experts) -> Id {
    let [n_embd, t, _, _] = g.ne(cur);
    let k = e.n_used;
    let logits = g.mul_mat(e.router, cur);
    // Soft-max runs in place of the logits (their one consumer).
    let probs = g.like(logits, Op::Inplace, [logits, NONE, NONE, NONE]);
    let n_expert = g.ne(probs)[0];
    let selected = g.argsort_top_k(probs, k);
    let probs_3d = g.reshape(probs, [1, n_expert, t, 1]);
    let mut weights = g.get_rows(probs_3d, selected);
    if e.norm_w {
        // The k weights of a token divided by their (clamped) sum. The division's source is a
        // reshape (a view, never the planner's own), so it takes a buffer of its own.
        let weights_2d = g.reshape(weights, [k, t, 1, 1]);
        let sum = g.sum_rows(weights_2d);
        let sum = g.like(sum, Op::Inplace, [sum, NONE, NONE, NONE]);
        let normed = g.like(weights_2d, Op::Inplace, [weights_2d, sum, NONE, NONE]);
        weights = g.reshape(normed, [1, k, t, 1]);
    }
    g.expand(weights);
    let cur_3d = g.reshape(cur, [n_embd, 1, t, 1]);
    let up = g.mul_mat_id(e.up, cur_3d, selected);
    let gate = g.mul_mat_id(e.up, cur_3d, selected);
    let act = g.like(gate, Op::Other, [gate, up, NONE, NONE]);
    let experts = g.mul_mat_id(e.down, act, selected);
    // Each expert's output weighted in place.
    let experts = g.like(experts, Op::Inplace, [experts, weights, NONE, NONE]);
    g.expand(experts);
    // One view per used expert, expanded before the adds; the first add of two views takes a
    // buffer of its own, the rest run in place.
    let nb2 = g.t[usize::from(experts)].nb[2];
    let mut views = [NONE; MAX_EXPERTS_USED as usize];
    let used = usize::try_from(k)
        .unwrap_or(usize::MAX)
        .clamp(1, views.len());
    for v in views.iter_mut().take(used) {
        *v = g.view(experts, [n_embd, t, 1, 1], nb2, nb2 * t, nb2 * t);
        g.expand(*v);
    }
    let mut out = views[0];
    for &v in &views[1..used] {
        out = g.op(
            g.t[usize::from(out)].ty,
            [n_embd, t, 1, 1],
            Op::Inplace,
            [out, v, NONE, NONE],
        );
        g.expand(out);
    }
    if used == 1 {
        // `ggml_cont` of the one view (a contiguous result).
        out = g.op(
            g.t[usize::from(out)].ty,
            [n_embd, t, 1, 1],
            Op::Other,
            [out, NONE, NONE, NONE],
        );
    }
    out
}
