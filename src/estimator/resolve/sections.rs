//! One function per scenario section: every number through its `validate::RANGES` entry
//! ([`FieldRange::clamp`]), every enum and flag copied. Each destructures its section without `..`,
//! so a field added to a section fails to compile here until it is resolved.

use crate::estimator::Diagnostics;
use crate::scenario::validate::FieldRange;
use crate::scenario::*;

/// The `RANGES` entry of a field, looked up at compile time (a misspelt name does not compile).
macro_rules! r {
    ($name:literal) => {
        const { crate::scenario::validate::field($name) }
    };
}

/// Clamps a float field; NaN becomes `default` (the section's `Default` value).
#[inline]
fn f(name: &'static FieldRange, x: f64, default: f64, d: &mut Diagnostics) -> f64 {
    name.clamp(x, default, d)
}

/// Clamps a count held as a float (parameters, rows, bytes, MACs) and rounds it to a whole number:
/// a fraction of a parameter means nothing, and a subnormal one would make a step last 10⁻³⁰⁰ s.
#[inline]
fn count(name: &'static FieldRange, x: f64, default: f64, d: &mut Diagnostics) -> f64 {
    let x = name.clamp(x, default, d);
    // Whole already (the usual case), else rounded half up; exact through `i64` as every count
    // range ends below 2^52 (`f64::round` is a libm call on baseline x86-64).
    let whole = x as i64 as f64;
    if whole == x {
        x
    } else {
        (x + 0.5) as i64 as f64
    }
}

/// Clamps a count.
#[inline]
fn u(name: &'static FieldRange, x: u32, d: &mut Diagnostics) -> u32 {
    name.clamp_u32(x, d)
}

pub(super) fn transformer(t: &TransformerDims, d: &mut Diagnostics) -> TransformerDims {
    let TransformerDims {
        arch,
        layers,
        hidden,
        heads,
        kv_heads,
        head_dim,
        ffn,
        ffn_kind,
        vocab,
        tied_embeddings,
        positions,
        max_positions,
        token_types,
        bias,
        norm,
        mlm_head,
        pooler,
        gelu_tanh,
        fused_qkv,
        softmax_fp32,
    } = t;
    let heads = u(r!("model.transformer.heads"), *heads, d);
    let kv_heads = u(r!("model.transformer.kv_heads"), *kv_heads, d);
    // Cross-field (validate's rule): KV heads are at most the query heads.
    if kv_heads > heads {
        d.insert(crate::estimator::Diagnostic::InputClamped);
    }
    TransformerDims {
        arch: *arch,
        layers: u(r!("model.transformer.layers"), *layers, d),
        hidden: u(r!("model.transformer.hidden"), *hidden, d),
        heads,
        kv_heads: kv_heads.min(heads),
        head_dim: u(r!("model.transformer.head_dim"), *head_dim, d),
        ffn: u(r!("model.transformer.ffn"), *ffn, d),
        ffn_kind: *ffn_kind,
        vocab: u(r!("model.transformer.vocab"), *vocab, d),
        tied_embeddings: *tied_embeddings,
        positions: *positions,
        max_positions: u(r!("model.transformer.max_positions"), *max_positions, d),
        token_types: u(r!("model.transformer.token_types"), *token_types, d),
        bias: *bias,
        norm: *norm,
        mlm_head: *mlm_head,
        pooler: *pooler,
        gelu_tanh: *gelu_tanh,
        fused_qkv: *fused_qkv,
        softmax_fp32: *softmax_fp32,
    }
}

pub(super) fn cnn(c: &CnnSpec, d: &mut Diagnostics) -> CnnSpec {
    let CnnSpec {
        network,
        params,
        activation_bytes_per_image_fp32: act,
        reference_resolution,
        resolution,
        macs_per_image,
    } = c;
    let z = CnnSpec::default();
    CnnSpec {
        network: *network,
        params: count(r!("model.cnn.params"), *params, z.params, d),
        activation_bytes_per_image_fp32: count(
            r!("model.cnn.activation_bytes_per_image_fp32"),
            *act,
            z.activation_bytes_per_image_fp32,
            d,
        ),
        reference_resolution: u(
            r!("model.cnn.reference_resolution"),
            *reference_resolution,
            d,
        ),
        resolution: u(r!("model.cnn.resolution"), *resolution, d),
        macs_per_image: count(
            r!("model.cnn.macs_per_image"),
            *macs_per_image,
            z.macs_per_image,
            d,
        ),
    }
}

pub(super) fn recommender(r: &RecommenderSpec, d: &mut Diagnostics) -> RecommenderSpec {
    let RecommenderSpec {
        tables,
        rows_per_table,
        dim,
        dense_params,
        lookups_per_sample,
    } = r;
    let z = RecommenderSpec::default();
    RecommenderSpec {
        tables: u(r!("model.recommender.tables"), *tables, d),
        rows_per_table: count(
            r!("model.recommender.rows_per_table"),
            *rows_per_table,
            z.rows_per_table,
            d,
        ),
        dim: u(r!("model.recommender.dim"), *dim, d),
        dense_params: count(
            r!("model.recommender.dense_params"),
            *dense_params,
            z.dense_params,
            d,
        ),
        lookups_per_sample: u(
            r!("model.recommender.lookups_per_sample"),
            *lookups_per_sample,
            d,
        ),
    }
}

/// MoE fields, then the cross-field rules the shape needs: top-k and EP at most the experts
/// (reported as clamped).
pub(super) fn moe(m: &MoeSpec, d: &mut Diagnostics) -> MoeSpec {
    let MoeSpec {
        experts,
        top_k,
        shared_experts,
        expert_ffn,
        capacity_factor,
        shared_expert_ffn,
        shared_expert_gate,
        router_bias,
        expert_bias,
        ep,
        etp,
        norm_top_k,
        selection_bias,
        expert_groups,
        groups_used,
        routed_scale,
    } = m;
    let z = MoeSpec::default();
    let experts = u(r!("model.moe.experts"), *experts, d);
    let mut top_k = u(r!("model.moe.top_k"), *top_k, d);
    let mut ep = u(r!("model.moe.ep"), *ep, d);
    if experts > 0 && (top_k > experts || ep > experts) {
        d.insert(crate::estimator::Diagnostic::InputClamped);
        top_k = top_k.min(experts);
        ep = ep.min(experts);
    }
    MoeSpec {
        experts,
        top_k,
        shared_experts: u(r!("model.moe.shared_experts"), *shared_experts, d),
        expert_ffn: u(r!("model.moe.expert_ffn"), *expert_ffn, d),
        capacity_factor: f(
            r!("model.moe.capacity_factor"),
            *capacity_factor,
            z.capacity_factor,
            d,
        ),
        shared_expert_ffn: u(r!("model.moe.shared_expert_ffn"), *shared_expert_ffn, d),
        shared_expert_gate: *shared_expert_gate,
        router_bias: *router_bias,
        expert_bias: *expert_bias,
        ep,
        etp: u(r!("model.moe.etp"), *etp, d),
        norm_top_k: *norm_top_k,
        selection_bias: *selection_bias,
        expert_groups: u(r!("model.moe.expert_groups"), *expert_groups, d),
        groups_used: u(r!("model.moe.groups_used"), *groups_used, d),
        routed_scale: f(
            r!("model.moe.routed_scale"),
            *routed_scale,
            z.routed_scale,
            d,
        ),
    }
}

pub(super) fn workload(w: &Workload, d: &mut Diagnostics) -> Workload {
    let Workload {
        micro_batch,
        seq_len,
        grad_accum_steps,
        dropout,
    } = w;
    Workload {
        micro_batch: u(r!("workload.micro_batch"), *micro_batch, d),
        seq_len: u(r!("workload.seq_len"), *seq_len, d),
        grad_accum_steps: u(r!("workload.grad_accum_steps"), *grad_accum_steps, d),
        dropout: *dropout,
    }
}

pub(super) fn inference(i: &Inference, d: &mut Diagnostics) -> Inference {
    let Inference {
        prompt_tokens,
        generated_tokens,
        dynamic_batching,
        concurrent_requests,
        mean_length_fraction,
        kv_block_tokens,
        all_logits,
        engine,
        features,
    } = i;
    Inference {
        prompt_tokens: u(r!("inference.prompt_tokens"), *prompt_tokens, d),
        generated_tokens: u(r!("inference.generated_tokens"), *generated_tokens, d),
        dynamic_batching: *dynamic_batching,
        concurrent_requests: u(r!("inference.concurrent_requests"), *concurrent_requests, d),
        mean_length_fraction: f(
            r!("inference.mean_length_fraction"),
            *mean_length_fraction,
            Inference::default().mean_length_fraction,
            d,
        ),
        kv_block_tokens: u(r!("inference.kv_block_tokens"), *kv_block_tokens, d),
        all_logits: *all_logits,
        engine: engine.map(|e| {
            crate::estimator::engines::llamacpp::resolve_engine(
                crate::estimator::engines::resolve::engine(e, d),
                d,
            )
        }),
        features: super::serving::features(features, d),
    }
}
