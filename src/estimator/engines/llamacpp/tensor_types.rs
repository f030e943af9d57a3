//! Which GGUF type `llama-quantize` gives each tensor of a file type (llama.cpp@0c1e57098
//! `src/llama-quant.cpp`: `llama_tensor_get_type_impl`, `tensor_type_fallback`,
//! `tensor_allows_quantization`; docs/engines/llamacpp.md §2). Restated, not copied.

use crate::tensor::{GgufFileType as F, GgufType as T};

/// A weight tensor's role (`tensor_category` in llama-quant.cpp).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    TokenEmbd,
    Output,
    AttnQ,
    AttnK,
    AttnV,
    /// Fused Q, K and V (`attn_qkv`, Phi-3, GPT-2 style).
    AttnQkv,
    AttnOutput,
    FfnGate,
    FfnUp,
    FfnDown,
}

/// What the rules read about the model (`quantize_state_impl`, `hparams`).
#[derive(Clone, Copy, Debug)]
pub struct Model {
    pub n_layer: u32,
    /// Routed experts (0 or 1: dense).
    pub n_expert: u32,
    /// `n_head / n_head_kv`.
    pub n_gqa: u32,
    /// `LLM_TYPE_70B`: llama.cpp's Llama loader names an 80-layer GQA model so
    /// (`llama-model.cpp`, `case 80: … LLM_TYPE_70B`); its attn_v gets Q5_K for Q3_K/Q4_K.
    pub is_70b: bool,
    pub tied_embeddings: bool,
}

/// `use_more_bits(i, n)`: the first and last eighth of the layers and every third layer between.
///
/// ```
/// use vram_explorer::estimator::engines::llamacpp::tensor_types::use_more_bits;
/// let n = (0..32).filter(|&i| use_more_bits(i, 32)).count();
/// assert_eq!(n, 16); // Llama-3.x-8B Q4_K_M: 16 Q6_K attn_v and 16 Q6_K ffn_down
/// ```
pub const fn use_more_bits(i: u32, n: u32) -> bool {
    let (i, n) = (i as i64, n as i64);
    i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2
}

/// The type of a 2-D (or expert 3-D) weight of role `role` in layer `i` whose rows are `ne0`
/// long. Norms, biases and routers are not quantized: they are F32 in every file (not asked here).
pub fn tensor_type(ftype: F, role: Role, i: u32, ne0: u64, m: &Model) -> T {
    let base = ftype.base();
    if !base.is_quantized() {
        return base;
    }
    let chosen = by_role(ftype, base, role, i, ne0, m);
    fallback(chosen, ne0)
}

fn by_role(ftype: F, base: T, role: Role, i: u32, ne0: u64, m: &Model) -> T {
    let n = m.n_layer;
    let more = use_more_bits(i, n);
    let experts8 = m.n_expert == 8;
    let k_quant_mix = matches!(ftype, F::Q2K | F::Q3KS | F::Q3KM | F::Q4KS | F::Q4KM);
    match role {
        Role::Output => output_type(base, ne0),
        Role::TokenEmbd if m.tied_embeddings => output_type(base, ne0),
        Role::TokenEmbd | Role::AttnQ | Role::FfnGate | Role::FfnUp => base,
        Role::AttnV => {
            let t = match ftype {
                F::Q2K => {
                    if m.n_gqa >= 4 {
                        T::Q4K
                    } else {
                        T::Q3K
                    }
                }
                F::Q3KM if i < 2 => T::Q5K,
                F::Q3KM => T::Q4K,
                F::Q3KL => T::Q5K,
                F::Q4KM | F::Q5KM if more => T::Q6K,
                F::Q4KS if i < 4 => T::Q5K,
                _ => base,
            };
            let t = if m.is_70b && matches!(t, T::Q3K | T::Q4K) {
                T::Q5K
            } else {
                t
            };
            if experts8 { T::Q8_0 } else { t }
        }
        Role::AttnK if experts8 => T::Q8_0,
        Role::AttnK => base,
        Role::FfnDown => match ftype {
            F::Q2K => T::Q3K,
            F::Q3KM if i < n / 16 => T::Q5K,
            F::Q3KM => T::Q4K,
            F::Q3KL => T::Q5K,
            F::Q4KM | F::Q5KM if more => T::Q6K,
            F::Q4KS if i < n / 8 => T::Q5K,
            _ => base,
        },
        Role::AttnOutput if experts8 => {
            if k_quant_mix {
                T::Q5K
            } else {
                base
            }
        }
        Role::AttnOutput => match ftype {
            F::Q2K => T::Q3K,
            F::Q3KM => T::Q4K,
            F::Q3KL => T::Q5K,
            _ => base,
        },
        Role::AttnQkv => match ftype {
            F::Q3KM | F::Q3KL => T::Q4K,
            F::Q4KM => T::Q5K,
            F::Q5KM => T::Q6K,
            _ => base,
        },
    }
}

/// The output head (and a tied token embedding): Q6_K, Q8_0 if the base is Q8_0 or the rows are
/// not a multiple of the base's block.
fn output_type(base: T, ne0: u64) -> T {
    let block = u64::from(base.block().0);
    if !ne0.is_multiple_of(block) || base == T::Q8_0 {
        T::Q8_0
    } else {
        T::Q6K
    }
}

/// `tensor_type_fallback`: a row length that is not a multiple of the block demotes a K-type to a
/// 32-block type (Q4_K → Q5_0, Q5_K → Q5_1, Q6_K → Q8_0, Q2_K / Q3_K → Q4_0), and to F16 if even
/// that does not divide it.
fn fallback(t: T, ne0: u64) -> T {
    if ne0.is_multiple_of(u64::from(t.block().0)) {
        return t;
    }
    let demoted = match t {
        T::Q2K | T::Q3K => T::Q4_0,
        T::Q4K => T::Q5_0,
        T::Q5K => T::Q5_1,
        T::Q6K => T::Q8_0,
        other => other,
    };
    if ne0.is_multiple_of(u64::from(demoted.block().0)) {
        demoted
    } else {
        T::F16
    }
}
