//! Serving features in time (issue 15 items 2–3; `scenario::InferenceFeatures`, the memory side in
//! `memory/serving.rs`): speculative decoding's verify step and draft steps, prefix-cache hits
//! that skip prefill, chunked prefill's weight re-reads, n sequences per prompt, and the host-link
//! traffic of offloaded KV and weights. Each term is the unchanged figure when its feature is off.

use super::inputs::Inputs;
use super::roofline::phase;
use super::types::PhaseRoofline;
use crate::estimator::memory::serving::{draft_params, expected_tokens_per_step, prefix_tokens};
use crate::estimator::model::ResolvedModel;
use crate::scenario::{InferenceFeatures, Scenario, SpeculativeMethod};

/// What the serving features did to a request's time (all neutral when off).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct ServingTimes {
    /// Expected tokens per target forward with speculative decoding (1 without).
    pub tokens_per_step: f64,
    /// Draft tokens per verify step k (0 without speculative decoding).
    pub lookahead: f64,
    /// One draft step's time, s (0 without a draft).
    pub draft_step_s: f64,
    /// Prefill forwards (chunks) of one prompt.
    pub prefill_chunks: f64,
    /// Prompt tokens a prefix-cache hit supplies per request.
    pub prefix_hit_tokens: f64,
    /// Sequences decoded per step (all requests × n).
    pub decode_sequences: f64,
}

/// The serving figures a request's time reads, from the resolved scenario.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Serving {
    /// Draft tokens per verify step k (0: no speculative decoding).
    pub lookahead: f64,
    /// Expected tokens per target forward (Leviathan et al. 2023 Eq. 1; 1 without speculation).
    pub tokens_per_step: f64,
    /// Prompt tokens whose KV a prefix-cache hit supplies (full blocks; 0 without prefix caching).
    pub prefix_hit_tokens: f64,
    /// Sequences per request in a decode step (dynamic batching; a static batch is expanded × n).
    pub fork: f64,
    /// Static batches: the micro-batch multiplier n (Hugging Face expands the batch × n).
    pub static_n: f64,
    /// Prefill chunk tokens (0: the whole prompt in one forward).
    pub chunk: f64,
    pub features: InferenceFeatures,
}

impl Serving {
    pub fn of(s: &Scenario) -> Serving {
        let inf = &s.inference;
        let x = inf.features;
        let spec = x.speculative;
        let lookahead = match spec.method {
            SpeculativeMethod::Off => 0.0,
            _ => f64::from(spec.num_speculative_tokens),
        };
        let n = f64::from(x.sequences_per_prompt.max(1));
        let prompt = f64::from(inf.prompt_tokens.max(1));
        Serving {
            lookahead,
            tokens_per_step: if lookahead > 0.0 {
                expected_tokens_per_step(spec.acceptance_rate, lookahead)
            } else {
                1.0
            },
            prefix_hit_tokens: if inf.dynamic_batching {
                prefix_tokens(
                    prompt,
                    inf.mean_length_fraction,
                    x.shared_prefix_fraction,
                    f64::from(inf.kv_block_tokens),
                )
            } else {
                0.0
            },
            fork: if inf.dynamic_batching { n } else { 1.0 },
            static_n: if inf.dynamic_batching { 1.0 } else { n },
            chunk: f64::from(x.prefill_chunk_tokens),
            features: x,
        }
    }

    /// Requests in a step (static: the micro-batch × n, as Hugging Face expands it; dynamic: the
    /// requests in flight) and the sequences a decode step advances (× n with dynamic batching).
    /// llama.cpp runs at most its `-np` slots' sequences at once (llama-server queues the rest).
    pub fn batch(&self, s: &Scenario) -> (f64, f64) {
        let inf = &s.inference;
        let b = if inf.dynamic_batching {
            inf.concurrent_requests.max(1)
        } else {
            s.workload.micro_batch.max(1)
        } as f64
            * self.static_n;
        let slots = inf
            .engine
            .as_ref()
            .and_then(|e| e.llamacpp())
            .map_or(f64::INFINITY, |l| f64::from(l.n_parallel.max(1)));
        let seqs = (b * self.fork).min(slots);
        (b.min(seqs), seqs)
    }

    /// Bytes of the prefill of `batch` prompts: weights + the prompt's KV in one forward, or
    /// [`chunked_prefill_bytes`] over `chunks` chunks. `cache(seqs, len)` = KV bytes.
    pub fn prefill_bytes(
        &self,
        chunks: f64,
        weights: f64,
        batch: f64,
        prompt: f64,
        cache: &dyn Fn(f64, f64) -> f64,
    ) -> f64 {
        if chunks > 1.0 {
            chunked_prefill_bytes(
                chunks,
                weights,
                cache(batch, self.chunk),
                cache(batch, (prompt - self.chunk) / 2.0),
            )
        } else {
            weights + cache(batch, prompt)
        }
    }

    /// GPU KV bytes of one more request of `tokens` tokens: the target's and the draft's
    /// (`draft_kv` per token), less the offloaded share.
    pub fn request_kv(&self, tokens: f64, cache: &dyn Fn(f64, f64) -> f64, draft_kv: f64) -> f64 {
        (cache(1.0, tokens) + draft_kv * tokens) * (1.0 - self.features.kv_offload_fraction)
    }

    /// The figures reported with the throughput.
    pub fn times(&self, draft_step_s: f64, prefill_chunks: f64, seqs: f64) -> ServingTimes {
        ServingTimes {
            tokens_per_step: self.tokens_per_step,
            lookahead: self.lookahead,
            draft_step_s,
            prefill_chunks,
            prefix_hit_tokens: self.prefix_hit_tokens,
            decode_sequences: seqs,
        }
    }

    /// Prefill forwards of a prompt of `computed` tokens: ⌈computed / chunk⌉, 1 unchunked.
    pub fn chunks(&self, computed: f64) -> f64 {
        if self.chunk >= 1.0 && self.chunk < computed {
            (computed / self.chunk).ceil()
        } else {
            1.0
        }
    }
}

/// Bytes a chunked prefill moves: every chunk re-reads the weights (`weights`), writes its own KV
/// (`cache_chunk`) and reads the prompt's KV so far, (prompt − chunk)/2 tokens on average
/// (`cache_half`); `chunks` = 1 is the unchunked prefill's weights + KV. With equal chunks the
/// roofline of the sums is the sum of the chunks' rooflines (each max(F/n ÷ peak, bytes ÷ bw)), so
/// TTFT = chunks × chunk time (vLLM V1 chunked prefill, `max_num_batched_tokens` per step).
pub fn chunked_prefill_bytes(chunks: f64, weights: f64, cache_chunk: f64, cache_half: f64) -> f64 {
    chunks * (weights + cache_chunk + cache_half)
}

/// One draft step of `seqs` sequences at mean context `ctx`: 2 FLOPs per draft parameter per token
/// (kipply 2022; attention over the context neglected) against the draft's weights and its KV
/// cache, split over TP. No draft: a zero phase.
pub fn draft_step(
    s: &Scenario,
    m: &ResolvedModel,
    i: &Inputs,
    seqs: f64,
    kv_read: f64,
) -> PhaseRoofline {
    let spec = &s.inference.features.speculative;
    if spec.method == SpeculativeMethod::Off {
        return PhaseRoofline::default();
    }
    let tp = f64::from(i.tp.max(1));
    let params = draft_params(spec, m) / tp;
    let e_w = s.precision_types().weights.bytes();
    phase(2.0 * params * seqs, params * e_w + kv_read, i)
}

/// Draft KV bytes per token on one GPU, for the draft's reads: a draft model's 2 · L_d · ⌈k_d/t⌉ ·
/// d_d · e_kv, or one target layer's (`target_layer_kv`) for MTP / EAGLE.
pub fn draft_kv_per_token(s: &Scenario, tp: f64, target_layer_kv: f64) -> f64 {
    let spec = &s.inference.features.speculative;
    match spec.method {
        SpeculativeMethod::Off => 0.0,
        SpeculativeMethod::DraftModel => crate::estimator::memory::inference::kv_bytes_per_token(
            f64::from(spec.draft_layers),
            (f64::from(spec.draft_kv_heads) / tp).ceil(),
            f64::from(spec.draft_head_dim),
            s.precision.kv_cache.bytes(),
        ),
        SpeculativeMethod::Mtp | SpeculativeMethod::Eagle => target_layer_kv,
    }
}

/// Host-link bytes of a request from the features' offload: the offloaded share of the weights
/// read by each of `forwards` forwards (vLLM `--cpu-offload-gb` streams them from pinned host
/// memory every forward: `model_executor/models/utils.py` `maybe_offload_to_cpu`, vLLM PR #6496), and the
/// offloaded share of the KV cache written once at prefill (`kv_prefill`) and read by each decode
/// step (`kv_step`), as a partly offloaded llama.cpp cache is read from the host each step
/// (`engines/llamacpp/time.rs`).
pub fn host_bytes(
    x: &InferenceFeatures,
    weights: f64,
    forwards: f64,
    (kv_prefill, kv_step, steps): (f64, f64, f64),
) -> f64 {
    x.weights_offload_fraction * weights * forwards
        + x.kv_offload_fraction * (kv_prefill + steps * kv_step)
}

/// KV tokens one more request adds (for the concurrency that fits): its `tokens` (prompt +
/// generated, rounded to blocks) less the shared prefix, its prompt's full blocks once and each of
/// its n sequences' own blocks (`memory::serving::paged_shared_tokens` for one request). Neutral
/// (`tokens`) without prefix sharing or n > 1.
pub fn request_own_tokens(s: &Scenario, x: &Serving, tokens: f64) -> f64 {
    let inf = &s.inference;
    let block = f64::from(inf.kv_block_tokens);
    if x.fork <= 1.0 && x.prefix_hit_tokens <= 0.0 {
        return tokens;
    }
    if block < 1.0 {
        return tokens * x.fork;
    }
    let prompt_mean = inf.mean_length_fraction * f64::from(inf.prompt_tokens);
    let mean = inf.mean_length_fraction
        * (f64::from(inf.prompt_tokens) + f64::from(inf.generated_tokens) + x.lookahead);
    let with_prefix = crate::estimator::memory::serving::paged_shared_tokens(
        1.0,
        prompt_mean,
        mean,
        block,
        x.prefix_hit_tokens,
        x.fork,
    );
    with_prefix - x.prefix_hit_tokens
}
