//! `-ot, --override-tensor <pattern>=<buffer type>` as llama.cpp applies it: each weight whose
//! name the pattern finds (`std::regex_search`) goes to that buffer type
//! (llama.cpp@0c1e57098 `src/llama-model-loader.cpp` `create_tensor`, "check overrides").
//! A pattern that sends to `CPU` exactly the routed experts of layers `0 .. N` (or of every
//! layer), or exactly the dense FFN matrices of layers `0 .. N`, does what `--n-cpu-moe N`,
//! `--cpu-moe` or `--n-cpu-ffn N` do (the same overrides, `common/common.h`), and is read as
//! those; any other pattern is reported as not modelled.

use regex::Regex;

use super::LlamaCpp;

/// Layers a pattern is tried on: more than any model of the catalog has (Llama-3.1-405B: 126).
const LAYERS_TRIED: u32 = 512;

/// What a `-ot` pattern keeps in host memory, as the flags that do the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostFfn {
    /// `--cpu-moe`: every layer's routed experts.
    AllExperts,
    /// `--n-cpu-moe N`.
    Experts(u32),
    /// `--n-cpu-ffn N`.
    Dense(u32),
}

impl HostFfn {
    /// Sets the flag this override is (several overrides add up: the widest wins).
    pub fn apply(self, s: &mut LlamaCpp) {
        match self {
            HostFfn::AllExperts => s.cpu_moe = true,
            HostFfn::Experts(n) => s.n_cpu_moe = s.n_cpu_moe.max(n),
            HostFfn::Dense(n) => s.n_cpu_ffn = s.n_cpu_ffn.max(n),
        }
    }
}

/// The routed-expert matrices of a layer, as GGUF names them.
const EXPERTS: [&str; 3] = ["ffn_up_exps", "ffn_gate_exps", "ffn_down_exps"];
/// A dense FFN's matrices.
const DENSE: [&str; 3] = ["ffn_up", "ffn_gate", "ffn_down"];
/// A layer's other weights: every per-layer tensor name of llama.cpp@0c1e57098
/// (`src/llama-arch.cpp`, "blk.%d.…") but the FFN matrices and routed experts the overrides are
/// for, and `ffn_norm_exps` (a per-expert norm no model modelled here has, which the common `exps`
/// pattern would move too). A pattern that finds any of them, as `.weight` or `.bias`, is more
/// than an FFN override.
const OTHERS: [&str; 155] = [
    "altup_correct_coef",
    "altup_correct_scale",
    "altup_predict_coef",
    "altup_router",
    "altup_router_norm",
    "attn_compressor_ape",
    "attn_compressor_gate",
    "attn_compressor_kv",
    "attn_compressor_norm",
    "attn_conv_base",
    "attn_conv_proj",
    "attn_gate",
    "attn_k",
    "attn_k_b",
    "attn_k_norm",
    "attn_kv",
    "attn_kv_a_mqa",
    "attn_kv_a_norm",
    "attn_kv_b",
    "attn_norm",
    "attn_norm_2",
    "attn_output",
    "attn_output_a",
    "attn_output_b",
    "attn_output_norm",
    "attn_q",
    "attn_q_a",
    "attn_q_a_norm",
    "attn_q_b",
    "attn_q_norm",
    "attn_qkv",
    "attn_res_score",
    "attn_rot_embd",
    "attn_sinks",
    "attn_sub_norm",
    "attn_v",
    "attn_v_b",
    "channel_mix_key",
    "channel_mix_lerp_k",
    "channel_mix_lerp_r",
    "channel_mix_receptance",
    "channel_mix_value",
    "exp_probs_b",
    "exp_probs_b_vl",
    "ffn_conv_base",
    "ffn_conv_proj",
    "ffn_down_shexp",
    "ffn_gate_inp",
    "ffn_gate_inp_shexp",
    "ffn_gate_shexp",
    "ffn_gate_tid2eid",
    "ffn_latent_down",
    "ffn_latent_up",
    "ffn_norm",
    "ffn_res_score",
    "ffn_routed_down",
    "ffn_routed_norm",
    "ffn_routed_up",
    "ffn_sub_norm",
    "ffn_up_shexp",
    "hc_attn_base",
    "hc_attn_down",
    "hc_attn_fn",
    "hc_attn_inject",
    "hc_attn_norm",
    "hc_attn_scale",
    "hc_attn_up",
    "hc_ffn_base",
    "hc_ffn_down",
    "hc_ffn_fn",
    "hc_ffn_inject",
    "hc_ffn_norm",
    "hc_ffn_scale",
    "hc_ffn_up",
    "indexer_compressor_ape",
    "indexer_compressor_gate",
    "indexer_compressor_kv",
    "indexer_compressor_norm",
    "inp_gate",
    "laurel_l",
    "laurel_post_norm",
    "laurel_r",
    "layer_output_norm",
    "layer_output_scale",
    "ple_conv1d",
    "ple_key",
    "ple_norm_conv",
    "ple_norm_key",
    "ple_norm_query",
    "ple_value",
    "post_attention_norm",
    "post_ffw_norm",
    "post_ffw_norm_1",
    "post_ffw_norm_2",
    "post_norm",
    "pre_ffw_norm_2",
    "proj",
    "ssm_a",
    "ssm_alpha",
    "ssm_b_norm",
    "ssm_ba",
    "ssm_beta",
    "ssm_c_norm",
    "ssm_conv1d",
    "ssm_conv1d_k",
    "ssm_conv1d_q",
    "ssm_conv1d_v",
    "ssm_d",
    "ssm_dt",
    "ssm_dt_norm",
    "ssm_f_a",
    "ssm_f_b",
    "ssm_g",
    "ssm_g_a",
    "ssm_g_b",
    "ssm_in",
    "ssm_norm",
    "ssm_out",
    "ssm_x",
    "time_mix_a0",
    "time_mix_a1",
    "time_mix_a2",
    "time_mix_decay",
    "time_mix_decay_w1",
    "time_mix_decay_w2",
    "time_mix_first",
    "time_mix_g1",
    "time_mix_g2",
    "time_mix_gate",
    "time_mix_k_a",
    "time_mix_k_k",
    "time_mix_key",
    "time_mix_lerp_fused",
    "time_mix_lerp_g",
    "time_mix_lerp_k",
    "time_mix_lerp_r",
    "time_mix_lerp_v",
    "time_mix_lerp_w",
    "time_mix_lerp_x",
    "time_mix_ln",
    "time_mix_output",
    "time_mix_r_k",
    "time_mix_receptance",
    "time_mix_v0",
    "time_mix_v1",
    "time_mix_v2",
    "time_mix_value",
    "time_mix_w0",
    "time_mix_w1",
    "time_mix_w2",
    "vis_attn_output",
    "vis_attn_qkv",
    "vis_down",
    "vis_gate",
    "vis_up",
];

/// One `<pattern>=<buffer type>` item read as an FFN override, or `None` (not to the CPU, not a
/// valid pattern, or moving other weights too).
///
/// ```
/// use vram_explorer::scenario::engine_args_overrides::{HostFfn, host_ffn};
/// assert_eq!(host_ffn("exps=CPU"), Some(HostFfn::AllExperts));
/// assert_eq!(host_ffn(r"\.ffn_.*_exps\.=CPU"), Some(HostFfn::AllExperts));
/// assert_eq!(host_ffn(r"blk\.([0-9]|1[0-9])\.ffn_.*_exps=CPU"), Some(HostFfn::Experts(20)));
/// assert_eq!(host_ffn(r"blk\.[0-3]\.ffn_(up|down|gate)\.=CPU"), Some(HostFfn::Dense(4)));
/// assert_eq!(host_ffn(r"blk\.1[0-9]\.ffn_.*_exps=CPU"), None); // not from layer 0
/// assert_eq!(host_ffn("ffn=CPU"), None); // norms, routers and shared experts too
/// assert_eq!(host_ffn(r"attn_qkv|exps=CPU"), None); // fused attention too
/// assert_eq!(host_ffn("exps=CUDA0"), None);
/// ```
pub fn host_ffn(item: &str) -> Option<HostFfn> {
    // `parse_tensor_buffer_overrides` (common/arg.cpp) splits at the first '='.
    let (pattern, buft) = item.split_once('=')?;
    if buft != "CPU" || pattern.is_empty() {
        return None;
    }
    let re = Regex::new(pattern).ok()?;
    let finds = |il: u32, t: &str| re.is_match(&format!("blk.{il}.{t}.weight"));
    let globals = ["token_embd.weight", "output.weight", "output_norm.weight"];
    if globals.iter().any(|n| re.is_match(n)) {
        return None;
    }
    let mut experts = Layers::default();
    let mut dense = Layers::default();
    for il in 0..LAYERS_TRIED {
        let other = |t: &&str| {
            re.is_match(&format!("blk.{il}.{t}.weight"))
                || re.is_match(&format!("blk.{il}.{t}.bias"))
        };
        if OTHERS.iter().any(other) {
            return None;
        }
        experts.add(il, EXPERTS.map(|t| finds(il, t)))?;
        dense.add(il, DENSE.map(|t| finds(il, t)))?;
    }
    match (experts.prefix()?, dense.prefix()?) {
        (n, 0) if n == LAYERS_TRIED => Some(HostFfn::AllExperts),
        (n, 0) if n > 0 => Some(HostFfn::Experts(n)),
        (0, n) if n > 0 => Some(HostFfn::Dense(n)),
        _ => None,
    }
}

/// The layers whose three matrices a pattern finds.
#[derive(Default)]
struct Layers {
    count: u32,
    last: Option<u32>,
}

impl Layers {
    /// Layer `il`'s three matrices: all found, none, or (`None`) some but not all.
    fn add(&mut self, il: u32, found: [bool; 3]) -> Option<()> {
        match found {
            [true, true, true] => {
                self.count += 1;
                self.last = Some(il);
                Some(())
            }
            [false, false, false] => Some(()),
            _ => None,
        }
    }

    /// `N` when the layers found are exactly `0 .. N`, else `None`.
    fn prefix(&self) -> Option<u32> {
        match self.last {
            None => Some(0),
            Some(l) if l + 1 == self.count => Some(self.count),
            Some(_) => None,
        }
    }
}
