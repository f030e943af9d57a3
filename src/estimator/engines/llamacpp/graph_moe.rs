//! llama.cpp's mixture-of-experts FFN as the planner sees it: `llm_graph_context::build_moe_ffn`
//! (ggml-org/llama.cpp@0c1e57098 `src/llama-graph.cpp`) with the arguments `llama` (Mixtral) and
//! `qwen3moe` pass (`src/models/llama.cpp`, `src/models/qwen3moe.cpp`): soft-max gating, the top-k
//! weights normalised (`norm_w`), no weight scale, no expert groups, SwiGLU experts, no biases;
//! and `qwen2moe`'s (`src/models/qwen2moe.cpp`: the weights not normalised; its shared expert is
//! built beside, `graph_llama::ffn`). Measured: tests/data/measured/llamacpp-cpu-moe.json and
//! llamacpp-cpu-layer-kinds.json.

use super::compute::MAX_EXPERTS_USED;
use super::ggml::{Graph, Id, NONE, Op};
use super::graph_llama::swiglu;

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
    /// The expert-selection bias added to the scores before the top-k (`exp_probs_b`,
    /// DeepSeek-V3's `e_score_correction_bias`; external), if the model has one.
    pub selection_bias: Option<Id>,
    /// Expert groups and the groups a token may use (`n_expert_groups`, `n_group_used`;
    /// DeepSeek-V3 8 and 4): the top groups are chosen first, the rest masked. 0 or 1 = none.
    pub groups: (u64, u64),
    /// The top-k weights scaled (`expert_weights_scale` other than 0 and 1: DeepSeek-V3's 2.5).
    pub scale: bool,
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
    // The scores the top-k reads: biased (a buffer of its own: the probabilities are read again
    // for the weights) and masked to the top groups.
    let mut selection = match e.selection_bias {
        Some(b) => g.like(probs, Op::Inplace, [probs, b, NONE, NONE]),
        None => probs,
    };
    if e.groups.0 > 1 && e.groups.1 > 0 {
        selection = top_groups(g, selection, e.groups);
    }
    let selected = g.argsort_top_k(selection, k);
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
    if e.scale {
        weights = g.like(weights, Op::Inplace, [weights, NONE, NONE, NONE]);
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

/// `build_moe_ffn`'s group selection: each group's two best scores summed, the `used` best groups
/// kept, every other expert's score set to −∞ (`ggml_fill`, then `ggml_set_rows` of the kept
/// groups into it); returns the masked scores `[n_expert, T]`.
fn top_groups<const N: usize>(g: &mut Graph<N>, scores: Id, (groups, used): (u64, u64)) -> Id {
    let [n_expert, t, _, _] = g.ne(scores);
    let per = n_expert / groups;
    let by_group = g.reshape(scores, [per, groups, t, 1]);
    let best2 = g.argsort_top_k(by_group, 2);
    let rows = g.reshape(by_group, [1, per, groups, t]);
    let top2 = g.get_rows(rows, best2);
    let top2 = g.reshape(top2, [2, groups, t, 1]);
    let group_scores = g.sum_rows(top2);
    let group_scores = g.reshape(group_scores, [groups, t, 1, 1]);
    let kept = g.argsort_top_k(group_scores, used);
    let kept_scores = g.get_rows(by_group, kept);
    let masked = g.like(by_group, Op::Inplace, [by_group, NONE, NONE, NONE]);
    let masked = g.set_rows(masked, kept_scores, kept);
    g.reshape(masked, [n_expert, t, 1, 1])
}

/// The shared experts beside the routed ones, added to them in place: their SwiGLU FFN, scaled
/// first by Qwen2-MoE's sigmoid gate of one row if the model has one (`silu(x) / x`, the division
/// in place; `src/models/qwen2moe.cpp`), else ungated (DeepSeek, `src/models/deepseek2.cpp`). Built
/// depth first from the sum, as the layer's final expand reaches them.
pub fn add_shared<const N: usize>(
    g: &mut Graph<N>,
    cur: Id,
    routed: Id,
    (up, down): (Id, Id),
    gate: Option<Id>,
) -> Id {
    let shared = swiglu(g, cur, [up, up, down]);
    let out = match gate {
        Some(w) => {
            let gate_inp = g.mul_mat(w, cur);
            let silu = g.like(gate_inp, Op::Inplace, [gate_inp, NONE, NONE, NONE]);
            let gate = g.like(silu, Op::Inplace, [silu, gate_inp, NONE, NONE]);
            g.like(shared, Op::Inplace, [shared, gate, NONE, NONE])
        }
        None => shared,
    };
    g.like(routed, Op::Inplace, [routed, out, NONE, NONE])
}
