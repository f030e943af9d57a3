//! Mixture-of-experts layers: the resolved shape, parameters, routed tokens and the all-to-all traffic
//! of expert parallelism.

use crate::scenario::MoeSpec;

/// A layer's experts after clamping. Dense models have `experts = 0` and behave as one MLP.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MoeShape {
    /// Routed experts per layer (0 = dense).
    pub experts: u32,
    /// Routed experts per token (≤ experts).
    pub top_k: u32,
    pub shared: u32,
    /// One shared expert's intermediate size (`shared_expert_intermediate_size`, Qwen2-MoE; the
    /// expert size when the config has none, DeepSeek) and whether a sigmoid gate scales its output
    /// (only with shared experts). `model::blocks` counts their weights from these, llama.cpp too.
    pub shared_ffn: u32,
    pub shared_gate: bool,
    /// One expert's intermediate size (the model's FFN size when dense).
    pub ffn: u32,
    /// Capacity factor (0 = dropless).
    pub capacity_factor: f64,
    /// Expert-parallel degree, 1 ..= experts.
    pub ep: u32,
    /// Weights and biases of the routed experts of one layer (0 when dense).
    pub routed_params_per_layer: f64,
    /// The router's options (`scenario::MoeSpec`): top-k weights normalised, a selection bias,
    /// expert groups (groups, used; (0, 0) unless 1 < used < groups ≤ experts and groups divide
    /// the experts, as llama.cpp asserts) and a scale other than 1.
    pub norm_top_k: bool,
    pub selection_bias: bool,
    pub groups: (u32, u32),
    pub scaled: bool,
}

impl MoeShape {
    /// MLPs stored per layer: routed + shared experts, or 1 when dense.
    pub fn stored_mlps(&self) -> f64 {
        if self.experts == 0 {
            1.0
        } else {
            f64::from(self.experts + self.shared)
        }
    }

    /// MLPs one token runs through: top-k + shared, or 1 when dense (what FLOPs scale with).
    pub fn active_mlps(&self) -> f64 {
        if self.experts == 0 {
            1.0
        } else {
            f64::from(self.top_k + self.shared)
        }
    }

    /// Token rows the experts of a layer process per input token: top-k × capacity factor (buffers
    /// padded to capacity, Switch Transformers §2.2, Fedus et al. 2021) or top-k when dropless, plus the
    /// shared experts; 1 when dense. Expert parallelism moves tokens, not their number per GPU: with
    /// balanced routing each of the EP ranks receives as many routed rows as it sends.
    pub fn routed_rows_per_token(&self) -> f64 {
        if self.experts == 0 {
            return 1.0;
        }
        let cf = if self.capacity_factor > 0.0 {
            self.capacity_factor
        } else {
            1.0
        };
        f64::from(self.top_k) * cf + f64::from(self.shared)
    }

    /// [`MoeShape::routed_rows_per_token`] without the shared experts: the rows the router sends
    /// to the routed experts (top-k × capacity factor; 1 when dense).
    pub fn routed_expert_rows_per_token(&self) -> f64 {
        self.routed_rows_per_token() - f64::from(self.shared)
    }

    /// Fraction of the routed experts' parameters stored on one GPU: ⌈E / ep⌉ / E.
    pub fn stored_expert_fraction(&self) -> f64 {
        if self.experts == 0 {
            return 1.0;
        }
        f64::from(self.experts.div_ceil(self.ep.max(1))) / f64::from(self.experts)
    }
}

/// The shape of a scenario's MoE section, whose numbers are in range and whose top-k and EP are at
/// most the experts (`estimator::resolve`). `dense_ffn` is `transformer.ffn` (the expert size when
/// `expert_ffn = 0`).
pub fn shape(spec: &MoeSpec, dense_ffn: u32) -> MoeShape {
    if spec.experts == 0 {
        return MoeShape {
            ffn: dense_ffn,
            ep: 1,
            ..MoeShape::default()
        };
    }
    let ffn = if spec.expert_ffn > 0 {
        spec.expert_ffn
    } else {
        dense_ffn
    };
    MoeShape {
        experts: spec.experts,
        top_k: spec.top_k.max(1),
        shared: spec.shared_experts,
        shared_ffn: if spec.shared_expert_ffn > 0 {
            spec.shared_expert_ffn
        } else {
            ffn
        },
        shared_gate: spec.shared_experts > 0 && spec.shared_expert_gate,
        ffn,
        capacity_factor: spec.capacity_factor,
        ep: spec.ep.max(1),
        routed_params_per_layer: 0.0,
        norm_top_k: spec.norm_top_k,
        selection_bias: spec.selection_bias,
        groups: expert_groups(spec),
        scaled: spec.routed_scale != 0.0 && spec.routed_scale != 1.0,
    }
}

/// Groups and groups used as llama.cpp applies them (`llama-model.cpp` asserts `n_group_used <
/// n_expert_groups < n_expert` and that the groups divide the experts; `build_moe_ffn` groups only
/// when `n_expert_groups > 1`): (0, 0) otherwise.
fn expert_groups(spec: &MoeSpec) -> (u32, u32) {
    let (g, used) = (spec.expert_groups, spec.groups_used);
    let valid =
        g > 1 && g < spec.experts && spec.experts.is_multiple_of(g) && (1..g).contains(&used);
    if valid { (g, used) } else { (0, 0) }
}

/// Bytes one GPU sends in one all-to-all of a layer: its routed token rows × hidden × element bytes,
/// of which the share (ep − 1)/ep leaves the GPU (uniform routing). A layer runs 2 all-to-alls in
/// forward (dispatch, combine) and 2 in backward (Lepikhin et al. 2020 "GShard" §2.2; DeepSpeed-MoE,
/// Rajbhandari et al. 2022 §5).
///
/// ```
/// use vram_explorer::estimator::model::moe::all_to_all_bytes;
/// // 4,096 tokens, top-2, h = 4096, BF16, EP = 8: 4096·2·4096·2 · 7/8 bytes.
/// assert_eq!(all_to_all_bytes(4096.0 * 2.0, 4096.0, 2.0, 8.0), 58_720_256.0);
/// ```
pub fn all_to_all_bytes(routed_rows: f64, hidden: f64, elem_bytes: f64, ep: f64) -> f64 {
    let ep = ep.max(1.0);
    routed_rows * hidden * elem_bytes * (ep - 1.0) / ep
}
