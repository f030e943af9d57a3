//! Mixture-of-experts layers: how many experts, how many a token uses, their size, and how they are
//! spread over GPUs.

use serde::{Deserialize, Serialize};

/// The MLP of every layer as a set of experts behind a router (Shazeer et al. 2017; Fedus et al.
/// 2021 "Switch Transformers"; Jiang et al. 2024 "Mixtral of Experts"). `experts = 0` is a dense MLP:
/// every other field is then ignored.
#[allow(
    clippy::struct_excessive_bools,
    reason = "the file format: each switch is a documented field users set by name"
)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MoeSpec {
    /// Routed experts per layer; 0 = dense MLP (no experts). Mixtral-8x7B: 8 (`num_local_experts`).
    pub experts: u32,
    /// Routed experts each token is sent to (top-k). Mixtral: 2 (`num_experts_per_tok`).
    pub top_k: u32,
    /// Experts every token goes through besides the routed ones (DeepSeekMoE's shared experts).
    pub shared_experts: u32,
    /// Intermediate size of one expert; 0 = `transformer.ffn` (Mixtral: the same 14,336).
    pub expert_ffn: u32,
    /// Token capacity factor: each expert takes at most `capacity_factor × tokens × top_k ÷ experts`
    /// tokens (Switch Transformers §2.2); 0 = dropless (every routed token is computed, as Mixtral).
    pub capacity_factor: f64,
    /// Intermediate size of one shared expert; 0 = `expert_ffn`. Qwen1.5-MoE: 5,632
    /// (`shared_expert_intermediate_size`); DeepSeek's `n_shared_experts` experts are each `expert_ffn`.
    pub shared_expert_ffn: u32,
    /// A sigmoid gate (h → 1) on the shared expert's output (Qwen2-MoE `shared_expert_gate`).
    pub shared_expert_gate: bool,
    /// A bias on the router (gpt-oss `router.bias`).
    pub router_bias: bool,
    /// Biases on the experts' projections (gpt-oss `gate_up_proj_bias`, `down_proj_bias`).
    pub expert_bias: bool,
    /// Expert-parallel degree: the experts of a layer are split over this many GPUs, carved out of the
    /// data-parallel ranks (DeepSpeed-MoE, Megatron-Core `expert_model_parallel_size`); 1 = every GPU
    /// holds every expert. Tokens travel to their experts by all-to-all.
    pub ep: u32,
    /// Expert tensor-parallel degree in training: the routed experts' matrices are split over this
    /// many ranks instead of the TP degree (Megatron-Core `--expert-tensor-parallel-size`); 0 = the
    /// TP degree, Megatron's default. 1 keeps each expert whole on its GPU, which under sequence
    /// parallelism processes only its own sequence shard's tokens, and the expert ranks are then
    /// grouped ETP × EP × expert-DP over the DP × TP ranks (expert-DP = DP × TP / ETP / EP).
    /// torchtitan's `expert_tensor_parallel_degree` (1 or TP, with EP > 1) maps to it as set; its
    /// default 1 has no effect at EP 1, where this field stays 0. Must divide TP; not read in
    /// inference (serving engines split every expert over TP); else `expert_tp_not_modelled`.
    /// Absent = 0.
    pub etp: u32,
    /// The router's top-k weights divided by their sum (`norm_topk_prob`: DeepSeek-V2 false, V3 and
    /// Kimi K2 true). Read by llama.cpp's DeepSeek graph (`expert_weights_norm`); Mixtral and
    /// Qwen3-MoE normalise and Qwen2-MoE does not whatever it says. Absent = true.
    pub norm_top_k: bool,
    /// A bias added to the router's scores to choose the experts, not to weigh them (DeepSeek-V3's
    /// `e_score_correction_bias`, `topk_method: noaux_tc`; llama.cpp `exp_probs_b`). Absent = false.
    pub selection_bias: bool,
    /// Expert groups and the groups a token may pick its experts from (`n_group`, `topk_group`:
    /// DeepSeek-V3 8 and 4, DeepSeek-V2 8 and 3); 0 or 1 group = none. Absent = 0.
    pub expert_groups: u32,
    pub groups_used: u32,
    /// The routed experts' weights scaled (`routed_scaling_factor`: DeepSeek-V3 2.5); 1 = none.
    /// Absent = 1.
    pub routed_scale: f64,
}

impl Default for MoeSpec {
    fn default() -> Self {
        MoeSpec {
            experts: 0,
            top_k: 2,
            shared_experts: 0,
            expert_ffn: 0,
            capacity_factor: 0.0,
            shared_expert_ffn: 0,
            shared_expert_gate: false,
            router_bias: false,
            expert_bias: false,
            ep: 1,
            etp: 0,
            norm_top_k: true,
            selection_bias: false,
            expert_groups: 0,
            groups_used: 0,
            routed_scale: 1.0,
        }
    }
}

impl MoeSpec {
    /// Mixtral-8x7B's routing: 8 experts of the model's FFN size, top-2, dropless.
    pub fn mixtral() -> MoeSpec {
        MoeSpec {
            experts: 8,
            top_k: 2,
            ..MoeSpec::default()
        }
    }

    /// Whether the MLP is a mixture of experts.
    pub fn is_moe(&self) -> bool {
        self.experts > 0
    }
}
