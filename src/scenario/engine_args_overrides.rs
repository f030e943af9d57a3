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
/// A layer's other weights (every architecture's names in llama.cpp@0c1e57098
/// `src/llama-arch.cpp` that a pattern might touch: attention of every kind, norms, routers,
/// shared experts, state-space mixers): a pattern that finds any of them, as `.weight` or
/// `.bias`, is more than an FFN override.
const OTHERS: [&str; 38] = [
    "attn_q",
    "attn_k",
    "attn_v",
    "attn_qkv",
    "attn_output",
    "attn_norm",
    "attn_norm_2",
    "attn_q_norm",
    "attn_k_norm",
    "attn_q_a",
    "attn_q_b",
    "attn_q_a_norm",
    "attn_kv_a_mqa",
    "attn_kv_a_norm",
    "attn_kv_b",
    "attn_k_b",
    "attn_v_b",
    "attn_sinks",
    "attn_gate",
    "attn_post_norm",
    "post_attention_norm",
    "ffn_norm",
    "ffn_post_norm",
    "post_ffw_norm",
    "layer_output_norm",
    "ffn_gate_inp",
    "ffn_gate_inp_shexp",
    "ffn_exp_probs_b",
    "ffn_up_shexp",
    "ffn_gate_shexp",
    "ffn_down_shexp",
    "ssm_in",
    "ssm_out",
    "ssm_conv1d",
    "ssm_a",
    "ssm_d",
    "ssm_dt",
    "ssm_norm",
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
