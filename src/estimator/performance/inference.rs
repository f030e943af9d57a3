//! Inference on one GPU: prefill (compute-heavy) and decode (one token per step, reading every weight
//! and the KV cache), after kipply, "Transformer Inference Arithmetic" (2022): a decode step at small
//! batch is memory-bound — 2P FLOPs against 2P bytes of 16-bit weights — until the batch reaches the
//! flops:bytes ratio (208 on an A100).

use super::comm::{allreduce_time, chosen_latency};
use super::flops;
use super::inputs::Inputs;
use super::launch::Launch;
use super::p2p_allreduce;
use super::roofline::{div, phase};
use super::serving::{self as sv, Serving, ServingTimes};
use super::types::{Communication, OffloadTraffic, PhaseRoofline};
use super::work::{offload_link, offload_traffic, read_weights, spill_bytes};
use crate::estimator::engines::llamacpp::time as llama_time;
use crate::estimator::model::{CacheShape, ResolvedModel};
use crate::estimator::{Component, MemoryEstimate};
use crate::scenario::{
    ArchKind, CollectiveAlgorithm, ModelFamily, OffloadTarget, PruneKind, Scenario, ServingEngine,
};
use crate::units::{Bytes, BytesPerSec};

#[derive(Clone, Copy, Debug, Default)]
pub struct InferenceStep {
    pub prefill: PhaseRoofline,
    pub decode: Option<PhaseRoofline>,
    /// The model-FLOP convention: every key a query may see, whatever the kernel skips.
    pub model_flops: f64,
    /// What the kernels execute (the prefill's attention as `score_kernel::prefill` runs it).
    pub hardware_flops: f64,
    pub comm: Communication,
    pub offload: OffloadTraffic,
    pub ttft_s: f64,
    pub tpot_s: f64,
    /// Prefill + all decode steps + exposed offload.
    pub total_s: f64,
    /// Requests served at once (per replica).
    pub batch: f64,
    pub generated: f64,
    pub prompt: f64,
    pub kv_bytes_per_token: f64,
    pub max_requests: u32,
    /// Serving features as timed: tokens per verify step, prefill chunks, prefix-cache hits.
    pub serving: ServingTimes,
    /// The fixed part of one stage's forward (kernel floors, eager issue, `generate`'s loop).
    pub launch: Launch,
    /// Of TTFT and of the request's decode, the time the fixed part adds over the roofline, s.
    pub launch_prefill_s: f64,
    pub launch_decode_s: f64,
    /// The request's decode steps' collectives (TP all-reduces and expert all-to-alls), s.
    pub decode_comm_s: f64,
    /// A llama.cpp CPU build: the host's (FLOP/s, B/s), whose roofline `prefill` and `decode` are on.
    pub host: Option<(f64, f64)>,
}

/// KV bytes one token of one sequence holds on one GPU: 2 · ⌈L/pp⌉ · ⌈kv_heads/tp⌉ · d_head · bytes
/// (KV heads are replicated when TP exceeds them). An encoder-only model (BERT) has no decode
/// phase — one forward, no generated tokens, no TPOT — and so no KV cache held between steps and
/// no KV concurrency (issue 13 item 3): 0.
pub fn kv_bytes_per_token_gpu(s: &Scenario, m: &ResolvedModel, i: &Inputs) -> f64 {
    if m.family != ModelFamily::Transformer || m.arch == ArchKind::Encoder {
        return 0.0;
    }
    let layers = m.layers.div_ceil(i.pp) as f64;
    m.kv_bytes_per_token(&CacheShape {
        tp: f64::from(i.tp),
        layers,
        e_kv: s.precision.kv_cache.bytes(),
        e_state: 0.0,
    })
}

pub fn inference(
    s: &Scenario,
    m: &ResolvedModel,
    mem: &MemoryEstimate,
    i: &Inputs,
) -> InferenceStep {
    let x = Serving::of(s);
    // Requests (× n for a static batch), and the sequences a decode step advances.
    let (batch, seqs) = x.batch(s);
    let prompt = s.inference.prompt_tokens.max(1) as f64;
    let encoder = m.arch == ArchKind::Encoder;
    let generated = if encoder {
        0.0
    } else {
        s.inference.generated_tokens as f64
    };
    let (stored, weights, share, whole) = weight_bytes(s, m, i);
    let kv_tok = kv_bytes_per_token_gpu(s, m, i);
    let (cache, stage_layers) = cache_of(s, m, i);
    let f = phase_flops(s, m, [batch, prompt, generated], (share, whole));
    let (decode_flops, ctx) = (f.decode, f.ctx);
    // A prefix-cache hit skips its tokens' prefill (× 1 without); a verify step scores k + 1
    // positions of every sequence.
    let computed = prompt - x.prefix_hit_tokens;
    let prefill_flops = f.prefill * (computed / prompt);
    let positions = 1.0 + x.lookahead;
    let decode_flops = decode_flops * x.fork * positions;
    // Quantized matrices are read at their bits per weight; a decode step reads only routed experts.
    let (w_pre, w_dec) = (
        weights * super::peft_moe::read_scale(s, m, batch * computed),
        weights * super::peft_moe::read_scale(s, m, seqs * positions),
    );
    let chunks = x.chunks(computed);
    let prefill_bytes = x.prefill_bytes(chunks, w_pre, batch, prompt, &cache);
    let prefill = phase(prefill_flops, prefill_bytes, i);
    let decode = (m.family == ModelFamily::Transformer && generated > 0.0).then(|| {
        super::weight_only::decode_phase(s, decode_flops, w_dec, cache(seqs, ctx + 1.0), i)
    });
    let draft_kv = sv::draft_kv_per_token(s, f64::from(i.tp), cache(1.0, 1.0) / stage_layers);
    let draft = sv::draft_step(s, m, i, seqs, draft_kv * seqs * ctx);
    // Verify forwards: one per generated token without speculation.
    let steps = generated / x.tokens_per_step;
    let (comm, ep_pre, ep_dec) = collectives(s, m, i, (batch * computed, seqs * positions));
    let pp = i.pp as f64;
    let kv_io = (cache(batch, prompt), cache(seqs, ctx + 1.0), steps);
    let offload = offload(s, mem, i, stored, (steps, kv_io));
    // Weights streamed from the host (or spilled to a second tier) are read by every forward, so
    // their exposed transfer sits on the critical path of the first token and of every next one:
    // TTFT and TPOT each carry one forward's share, and the request's total is their sum.
    let per_forward_offload = offload.exposed_s / (1.0 + steps);
    // Each stage's forward also pays its kernels' fixed cost (super::launch); transformers only.
    let launch = super::launch::of_family(s, m.family, stage_layers, m.moe_layer_share());
    let prefill_stage = launch.stage_s(prefill.time_s, chunks);
    let ttft_s = pp * (prefill_stage + comm.0 + ep_pre.1) + launch.loop_s + per_forward_offload;
    // Speculative decoding: k draft steps and one verify per (1 − α^(k+1))/(1 − α) tokens
    // (Leviathan et al. 2023 §3.1, §3.4); without it k = 0 and one token per forward.
    let decode_stage = decode.map_or(0.0, |d| launch.stage_s(d.time_s, 1.0));
    let tpot_s = decode.map_or(0.0, |_| {
        (pp * (decode_stage + comm.1 + ep_dec.1)
            + launch.loop_s
            + x.lookahead * draft.time_s
            + per_forward_offload)
            / x.tokens_per_step
    });
    let launch_decode_s = decode.map_or(0.0, |d| {
        generated * (pp * (decode_stage - d.time_s) + launch.loop_s) / x.tokens_per_step
    });
    // llama.cpp: the layers -ngl leaves on the host run there.
    let work = llama_time::Work::new(prefill_flops, decode_flops, prompt, (ctx, seqs * positions));
    let (ttft_s, tpot_s, host) = llama_time::of(s, m, (ttft_s, tpot_s), i.host_bw, &work);
    let (prefill, decode) = host.map_or((prefill, decode), |h| on_host(i, &h, decode.is_some()));
    let total_s = ttft_s + generated * tpot_s;
    let per_request = (!encoder).then(|| request_kv(s, &x, prompt + generated, &cache, draft_kv));
    InferenceStep {
        prefill,
        decode,
        // Model FLOPs are the model's (PaLM App. B): one position per generated token; the
        // rejected draft positions and the draft's own steps are hardware FLOPs only.
        model_flops: f.prefill_model * (computed / prompt) + generated * f.decode * x.fork,
        hardware_flops: prefill_flops + steps * (decode_flops + x.lookahead * draft.flops),
        comm: communication(m, i, comm, (ep_pre, ep_dec), (steps, pp)),
        offload,
        ttft_s,
        tpot_s,
        total_s,
        batch,
        generated,
        prompt,
        kv_bytes_per_token: kv_tok,
        max_requests: max_requests(mem, i, stored, per_request.unwrap_or(0.0)),
        serving: x.times(draft.time_s, chunks, seqs),
        launch,
        launch_prefill_s: pp * (prefill_stage - prefill.time_s) + launch.loop_s,
        launch_decode_s,
        decode_comm_s: pp * generated * (comm.1 + ep_dec.1) / x.tokens_per_step,
        host: host.map(|h| (h.peak, h.bandwidth)),
    }
}

/// A llama.cpp CPU build's prefill and decode on the host's roofline (what the report and the
/// charts then show): the host as a device whose rates are achievable ones (no efficiency factor).
fn on_host(
    i: &Inputs,
    h: &llama_time::HostPhases,
    decodes: bool,
) -> (PhaseRoofline, Option<PhaseRoofline>) {
    let hi = Inputs {
        peak: h.peak,
        peak16: h.peak,
        peak_known: h.peak > 0.0,
        bandwidth: h.bandwidth,
        compute_eff: 1.0,
        memory_eff: 1.0,
        ..*i
    };
    let ph = |(f, b): (f64, f64)| super::roofline::phase(f, b, &hi);
    (ph(h.prefill), decodes.then(|| ph(h.decode)))
}

/// One request's KV bytes with its share of the allocator reserve, which grows with the tensor peak
/// (docs/model.md).
fn request_kv(
    s: &Scenario,
    x: &Serving,
    length: f64,
    cache: &impl Fn(f64, f64) -> f64,
    draft_kv: f64,
) -> f64 {
    let tokens = sv::request_own_tokens(s, x, request_tokens(s, length + x.lookahead));
    x.request_kv(tokens, cache, draft_kv) * (1.0 + crate::estimator::memory::reserve_fraction(s))
}

/// Weight bytes one forward reads on one GPU as stored and with autocast's re-cast (read FP32,
/// write and read the 16-bit copy), the share of the model's FLOPs one GPU runs (what
/// structured pruning keeps ÷ (TP × PP)), and the matrix elements it holds beyond that share
/// (the replicated ones, `ResolvedModel::replicated_matrices_beyond_split`, ÷ PP).
fn weight_bytes(s: &Scenario, m: &ResolvedModel, i: &Inputs) -> (f64, f64, f64, f64) {
    let split = i.tp as f64 * i.pp as f64;
    let keep = match s.strategies.prune_kind {
        PruneKind::Structured => 1.0 - s.strategies.prune_fraction,
        PruneKind::Unstructured => 1.0,
    };
    let prec = s.precision_types();
    let per_weight =
        prec.weights.bytes() + prec.weight_compute_copies.map_or(0.0, |c| 2.0 * c.bytes());
    // The matrices every rank holds whole (MLA's down projections, routers; K/V heads beyond
    // kv / TP) are read whole on each.
    let whole = m.replicated_matrices_beyond_split(i.tp as f64) * keep / i.pp as f64;
    let read = read_weights(m) * keep / split + whole;
    let stored = read * prec.weights.bytes();
    let weights = read * per_weight;
    (stored, weights, keep / split, whole)
}

/// The cache bytes a step reads or writes, `(seqs, len)` → bytes: window-capped layers hold at most
/// their window, recurrent mixers a fixed state per sequence (estimator::model::cache); 0 for
/// families without one. Second: the stage's layers (≥ 1).
fn cache_of<'m>(
    s: &Scenario,
    m: &'m ResolvedModel,
    i: &Inputs,
) -> (impl Fn(f64, f64) -> f64 + 'm, f64) {
    let shape = CacheShape {
        tp: f64::from(i.tp),
        layers: m.layers.div_ceil(i.pp.max(1)) as f64,
        e_kv: s.precision.kv_cache.bytes(),
        e_state: s.precision_types().activations.bytes(),
    };
    let cache = move |seqs: f64, len: f64| {
        if m.family == ModelFamily::Transformer {
            m.cache_bytes(&shape, seqs, len)
        } else {
            0.0
        }
    };
    (cache, shape.layers.max(1.0))
}

/// TP all-reduce time of a prefill, of one decode step, and the latency part of each ([`tp_comm`]).
type TpComm = (f64, f64, f64);
/// Expert-parallel all-to-all bytes and time of one forward.
type EpComm = (f64, f64);

/// One stage's collectives of the prefill (`tokens.0`: its computed tokens) and of one decode
/// (verify) forward (`tokens.1`: the k + 1 positions of every sequence): the TP all-reduces
/// ([`tp_comm`]) and the expert-parallel all-to-alls (bytes, time) of each.
fn collectives(
    s: &Scenario,
    m: &ResolvedModel,
    i: &Inputs,
    (prefill, step): (f64, f64),
) -> (TpComm, EpComm, EpComm) {
    let act = s.precision_types().activations.bytes();
    (
        tp_comm(s, m, i, (prefill, step), act),
        super::peft_moe::ep_comm(s, m, i, prefill, 1.0),
        super::peft_moe::ep_comm(s, m, i, step, 1.0),
    )
}

/// The request's collectives: TP all-reduces (`comm`: prefill, one decode step, latency part) and
/// expert-parallel all-to-alls (bytes, time) of the prefill and of each of `steps` decode (verify)
/// forwards. Times are the request's, over its `pp` stages (each stage's collectives lie on its
/// critical path in turn); bytes are one GPU's.
/// Tensor-parallel all-reduces in one stage's forward: one per sub-layer (a transformer layer has
/// two, a hybrid's Mamba-, attention- or MLP-only layer one).
fn tp_allreduces_per_forward(m: &ResolvedModel, i: &Inputs) -> f64 {
    crate::estimator::memory::layer_kinds::sublayers_per_layer(m)
        * f64::from(m.layers.div_ceil(i.pp))
}

fn communication(
    m: &ResolvedModel,
    i: &Inputs,
    comm: (f64, f64, f64),
    (ep_pre, ep_dec): ((f64, f64), (f64, f64)),
    (steps, pp): (f64, f64),
) -> Communication {
    Communication {
        tp_allreduces: if i.tp > 1 {
            tp_allreduces_per_forward(m, i).round() as u32
        } else {
            0
        },
        tp_time_s: pp * (comm.0 + steps * comm.1),
        ep_bytes: Bytes(ep_pre.0 + steps * ep_dec.0),
        ep_time_s: pp * (ep_pre.1 + steps * ep_dec.1),
        tp_latency_s: pp * comm.2 * (1.0 + steps),
        tp_bandwidth: BytesPerSec(i.collective_bw(i.tp, 1).0),
        zero_factor: 1.0,
        compression_ratio: 1.0,
        ..Communication::default()
    }
}

/// TP all-reduce time of one prefill and of one decode step, and the latency part of each: 2
/// all-reduces per layer of tokens × hidden activations (Megatron-LM), ring or tree latency per
/// `Inputs::algo`.
fn tp_comm(
    s: &Scenario,
    m: &ResolvedModel,
    i: &Inputs,
    (prefill_tokens, batch): (f64, f64),
    act: f64,
) -> (f64, f64, f64) {
    if i.tp <= 1 || m.family != ModelFamily::Transformer {
        return (0.0, 0.0, 0.0);
    }
    let n = tp_allreduces_per_forward(m, i);
    let (bw, across_nodes) = i.collective_bw(i.tp, 1);
    let h = m.hidden as f64 * act;
    // vLLM's or SGLang's custom all-reduce (SGLang 0.5.23 `custom_all_reduce.py` `should_custom_ar`
    // and sgl-kernel's `custom_all_reduce.cuh` keep vLLM's rules), or a P2P all-reduce chosen in
    // `timing.collective`, inside a node.
    let p2p = !across_nodes
        && (i.algo == CollectiveAlgorithm::P2p
            || matches!(
                s.inference.engine,
                Some(ServingEngine::Vllm(_) | ServingEngine::Sglang(_))
            ));
    let one = |bytes: f64| {
        p2p.then(|| p2p_allreduce::time(bytes, i.tp, bw, i.alpha_s, i.nvlink_mesh))
            .flatten()
            .unwrap_or_else(|| {
                let (t, ring, tree) = allreduce_time(bytes, i.tp, bw, i.alpha_s, i.algo);
                (t, chosen_latency(ring, tree, i.algo))
            })
    };
    let (pre, latency) = one(prefill_tokens * h);
    let (dec, _) = one(batch * h);
    (n * pre, n * dec, n * latency)
}

/// Weights streamed from the host for every forward when parameters are offloaded, and spilled
/// bytes read from the second tier by every forward.
fn offload(
    s: &Scenario,
    mem: &MemoryEstimate,
    i: &Inputs,
    weights: f64,
    (steps, kv_io): (f64, (f64, f64, f64)),
) -> OffloadTraffic {
    let forwards = 1.0 + steps;
    let bw = offload_link(i, s.strategies.offload_params);
    let host_bytes = match s.strategies.offload_params {
        OffloadTarget::None => sv::host_bytes(&s.inference.features, weights, forwards, kv_io),
        _ => forwards * weights,
    };
    let host_time = div(host_bytes, bw);
    let tier_bytes = forwards * spill_bytes(mem, i);
    offload_traffic(i, host_bytes, bw, host_time, tier_bytes)
}

/// KV tokens one request holds, as the memory estimate counts them: a static batch reserves the
/// maximum length; dynamic batching holds the mean length (`mean_length_fraction`) rounded up to
/// whole KV blocks when paged (vLLM), or the maximum when contiguous.
fn request_tokens(s: &Scenario, max_len: f64) -> f64 {
    let inf = &s.inference;
    if !inf.dynamic_batching {
        return max_len;
    }
    let mean = inf.mean_length_fraction * max_len;
    let block = inf.kv_block_tokens as f64;
    if block >= 1.0 {
        (mean / block).ceil() * block
    } else {
        max_len
    }
}

/// Requests whose KV cache fits in what the rest of the step leaves free.
fn max_requests(mem: &MemoryEstimate, i: &Inputs, weights: f64, per_request: f64) -> u32 {
    let total = mem.gpu_total.get();
    let non_kv = if total > 0.0 {
        total - mem.peak.get(Component::KvCache).get()
    } else {
        weights
    };
    let free = (i.capacity - non_kv).max(0.0);
    if per_request <= 0.0 {
        return 0;
    }
    (free / per_request).floor().clamp(0.0, u32::MAX as f64) as u32
}

/// FLOPs of a request's phases on one GPU.
struct PhaseFlops {
    /// The prefill as its attention kernel executes it (`score_kernel::prefill`): what it is timed by.
    prefill: f64,
    /// The prefill in the model-FLOP convention, every key a query may see (a window's for a
    /// windowed layer) whatever the kernel skips (MFU).
    prefill_model: f64,
    /// One decode step.
    decode: f64,
    /// The mean decode context.
    ctx: f64,
}

/// FLOPs of the prefill and of one decode step on one GPU, and the mean decode context;
/// `[batch, prompt, generated]` tokens, `share` = what pruning keeps ÷ (TP × PP), `whole` the
/// matrix elements the GPU holds beyond that share (replicated: each token multiplies them whole).
fn phase_flops(
    s: &Scenario,
    m: &ResolvedModel,
    tokens: [f64; 3],
    (share, whole): (f64, f64),
) -> PhaseFlops {
    let inf = &s.inference;
    let [batch, prompt, generated] = tokens;
    if m.family == ModelFamily::Transformer {
        let l = m.layers as f64;
        let head_tokens = if inf.all_logits {
            batch * prompt
        } else {
            batch
        };
        let kernel = super::score_kernel::prefill(s, m);
        let layers = |per_layer: f64| batch * prompt * l * per_layer;
        let rest =
            head_tokens * flops::head_flops_per_token(m) + super::towers::forward(m, batch, prompt);
        let pre = layers(flops::prefill_layer_flops_per_token(m, prompt, kernel)) + rest;
        let pre_model = layers(flops::layer_flops_per_token(m, prompt)) + rest;
        let ctx = prompt + generated / 2.0;
        let dec = batch
            * (l * flops::layer_flops_per_token(m, ctx) + flops::head_flops_per_token(m))
            + super::towers::decode_step(m, batch);
        let replicated = 2.0 * batch * prompt * whole;
        PhaseFlops {
            prefill: pre * share + replicated,
            prefill_model: pre_model * share + replicated,
            decode: dec * share + 2.0 * batch * whole,
            ctx,
        }
    } else {
        let f = batch * flops::sample_work(&s.model).flops * share;
        PhaseFlops {
            prefill: f,
            prefill_model: f,
            decode: 0.0,
            ctx: 0.0,
        }
    }
}
