//! The models and phases a post-training step adds to the policy's training phases (module docs of
//! `post_training`).

use super::super::activations as act;
use super::super::ctx::Ctx;
use super::super::inference;
use super::super::states::ModelStates;
use super::residency::{Between, reference_on_gpu, resident};
use crate::estimator::model::ResolvedModel;
use crate::estimator::{Breakdown, Component, Phase, PhasePeaks};
use crate::scenario::{
    Mode, Reference, RlAlgorithm, RlFramework, Rollout, ServingEngine, ZeroStage,
};
use crate::units::Bytes;

/// The bytes of the models beside the policy on one GPU of this stage.
#[derive(Clone, Copy, Debug, Default)]
struct Others {
    reference: f64,
    reward: f64,
    critic: f64,
    /// A co-located rollout engine's reservation.
    rollout: f64,
}

impl Others {
    fn of(c: &Ctx, st: &ModelStates, lora: bool, capacity: f64) -> Others {
        let p = &c.post;
        // A frozen copy in the policy's weight type, sharded like the policy (TRL prepares it with
        // `prepare_deepspeed` / `prepare_fsdp`); under PEFT the reference is the adapter-less base.
        // verl (always) and OpenRLHF (`--ref.offload`) keep it on the host.
        let reference = if p.reference == Reference::Scored && !lora && reference_on_gpu(p) {
            st.weights
        } else {
            0.0
        };
        let ppo = p.algorithm == RlAlgorithm::Ppo;
        // The critic while the policy works: TRL keeps all its states; verl and OpenRLHF train it
        // in a phase of its own (`update_critic` / the critic's `fit`, before the actor's), after
        // which its gradients are freed and its offloaded states moved to the host.
        let critic = if p.framework == RlFramework::Trl {
            st.weights + st.master + st.grads + st.optimizer
        } else {
            let (w, m, o) = resident(p, Between::Idle).bytes(st.weights, st.master, st.optimizer);
            w + m + o
        };
        Others {
            reference,
            // verl's reward model is host-resident like its reference (`residency`).
            reward: if ppo && p.framework != RlFramework::Verl {
                st.weights
            } else {
                0.0
            },
            critic: if ppo { critic } else { 0.0 },
            rollout: if p.algorithm.generates() && p.rollout == Rollout::VllmColocate {
                p.rollout_gpu_memory_utilization * capacity
            } else {
                0.0
            },
        }
    }

    /// Adds the resident models to `b`; the rollout engine only when it is awake.
    fn add_to(self, b: &mut Breakdown, rollout_awake: bool) {
        b.add(Component::ReferenceModel, Bytes(self.reference));
        b.add(Component::RewardModel, Bytes(self.reward));
        b.add(Component::Critic, Bytes(self.critic));
        if rollout_awake {
            b.add(Component::RolloutEngine, Bytes(self.rollout));
        }
    }
}

/// Adds the post-training models and phases of one stage (`layers` layers, the last stage when
/// `last`) to the policy's training phases `out`. `capacity` is one GPU's memory in bytes.
#[allow(
    clippy::too_many_arguments,
    reason = "the stage's inputs, as memory::stage passes them"
)]
pub fn apply(
    c: &Ctx,
    m: &ResolvedModel,
    st: &ModelStates,
    lora: bool,
    layers: f64,
    last: bool,
    capacity: f64,
    out: &mut PhasePeaks,
) {
    if c.mode != Mode::Training || c.post.algorithm == RlAlgorithm::Off {
        return;
    }
    let others = Others::of(c, st, lora, capacity);
    // vLLM's sleep mode releases its weights and KV cache while the policy trains (TRL
    // `vllm_enable_sleep_mode`: `llm.sleep(level=2)` after generating, `wake_up` before,
    // `trl/generation/vllm_generation.py`).
    let awake_in_training = !c.post.rollout_sleep;
    // Scoring reads the policy's forward before the other models are added to it.
    let scored = scoring(c, m, st, out);
    for p in [
        Phase::Forward,
        Phase::LossBackward,
        Phase::Backward,
        Phase::OptimizerStep,
    ] {
        if let Some(b) = out.0[p as usize].as_mut() {
            others.add_to(b, awake_in_training);
        }
    }
    if let Some(mut b) = scored {
        others.add_to(&mut b, awake_in_training);
        out.set(Phase::Scoring, b);
    }
    if let Some(mut b) = generation(c, m, st, layers, last) {
        others.add_to(&mut b, true);
        out.set(Phase::Generation, b);
    }
}

/// Whether a model scores the completions without autograd: the reference when it is scored each
/// step, PPO's reward model always, and the policy itself after a vLLM rollout (TRL 1.16
/// `vllm_importance_sampling_correction = True` by default: `old_per_token_logps` are always
/// computed, `grpo_trainer.py` `_generate_and_score_completions`).
fn scores(c: &Ctx) -> bool {
    let p = &c.post;
    p.reference == Reference::Scored
        || p.algorithm == RlAlgorithm::Ppo
        || (p.algorithm.generates() && p.rollout != Rollout::HfGenerate)
}

/// The largest short-lived set of a forward under `no_grad` over `b` sequences of `s` tokens without
/// the head (the fused head builds no b·s·V logits: `add_fused_lm_head`, `trl/trainer/utils.py`):
/// a prefill's layer transient (`memory::inference`: the MLP's f-wide intermediates, the residual and
/// the norm output) plus what the model's forward keeps beside it — the embedding output
/// (`LlamaModel.forward` holds `inputs_embeds`) and RoPE's cos and sin (2 · b·s·d). Measured: the
/// tiny Llama's no-grad forward of 4 × 256 tokens peaks at 12,781,568 B above its weights, at the
/// SwiGLU product; this gives 12,124,160 B (−5 %; tests/trl_rl.rs holds the scoring phases).
fn no_grad_forward(c: &Ctx, m: &ResolvedModel, b: f64, s: f64) -> f64 {
    let z = act::sizes(c, m, b, s);
    let rotary = 2.0 * b * s * f64::from(m.head_dim);
    inference::prefill_transient(c, m, &z, false) + c.ec * (z.bsh / z.tr + rotary)
}

/// The scoring phase. DPO scores while the policy's saved set of the same batch is alive (the
/// forward's end without its loss transient); GRPO / PPO score before the training forward, with the
/// optimizer states and no gradients (freed by `zero_grad(set_to_none=True)`).
fn scoring(c: &Ctx, m: &ResolvedModel, st: &ModelStates, out: &PhasePeaks) -> Option<Breakdown> {
    if !scores(c) {
        return None;
    }
    let t = no_grad_forward(c, m, c.b, c.s);
    if c.post.algorithm == RlAlgorithm::Dpo {
        let mut b = *out.get(Phase::Forward)?;
        let z = act::sizes(c, m, c.b, c.s);
        let loss_t = act::loss_forward_transient(c, m, &z);
        let rest = (b.get(Component::Transient).get() - loss_t).max(0.0);
        b.set(Component::Transient, Bytes(rest + t));
        return Some(b);
    }
    let mut b = resting(c, st, Between::Scoring);
    b.set(Component::Transient, Bytes(t));
    Some(b)
}

/// The policy's states outside its training phases: weights, master weights and optimizer states
/// that the framework keeps on the GPU in phase `at` (`residency`), no gradients.
fn resting(c: &Ctx, st: &ModelStates, at: Between) -> Breakdown {
    let (w, m, o) = resident(&c.post, at).bytes(st.weights, st.master, st.optimizer);
    let mut b = Breakdown::default();
    b.set(Component::Weights, Bytes(w));
    b.set(Component::MasterWeights, Bytes(m));
    b.set(Component::OptimizerStates, Bytes(o));
    b
}

/// The generation phase of GRPO / PPO: with the policy's `generate` (TRL `use_vllm=False`) the
/// generation batch of `micro_batch × grad_accum` completions (`steps_per_generation` defaults to
/// the accumulation steps, `grpo_config.py` `__post_init__`) builds an HF dynamic KV cache of
/// prompt + completion tokens, as `memory::inference` models HF `generate`; a co-located vLLM holds
/// them in its reservation; a separate engine puts nothing on the training GPUs.
fn generation(
    c: &Ctx,
    m: &ResolvedModel,
    st: &ModelStates,
    layers: f64,
    last: bool,
) -> Option<Breakdown> {
    if !c.post.algorithm.generates() {
        return None;
    }
    let mut b = resting(c, st, Between::Generation);
    match c.post.rollout {
        Rollout::Separate => return None,
        Rollout::VllmColocate => return Some(b),
        Rollout::HfGenerate => {}
    }
    let prompt = f64::from(c.post.prompt_tokens);
    let g = Ctx {
        mode: Mode::Inference,
        engine: ServingEngine::HfGenerate,
        b: c.b * c.grad_accum,
        s: prompt.max(1.0),
        generated: (c.s - prompt).max(0.0),
        all_logits: false,
        dynamic_batching: false,
        ..*c
    };
    // Under ZeRO-3 `unwrap_model_for_generation` gathers the whole policy for `generate`
    // (`ds3_gather_for_generation = True` by default, `grpo_config.py`).
    let weights = if c.zero == ZeroStage::Stage3 {
        st.weights * c.dp
    } else {
        st.weights
    };
    let ph = inference::phases(&g, m, weights, 0.0, layers, last);
    let (_, mut inf) = ph.peak()?;
    if let Some(dec) = ph.get(Phase::Decode) {
        let t = sampling_step(&g, m, layers, last);
        if dec.get(Component::KvCache).get() + t > inf.tensor_total().get() - weights {
            inf = *dec;
            inf.set(Component::Transient, Bytes(t));
        }
    }
    b.set(Component::Weights, inf.get(Component::Weights));
    b.set(Component::KvCache, inf.get(Component::KvCache));
    b.set(Component::Transient, inf.get(Component::Transient));
    Some(b)
}

/// The last decode step of a sampling `generate` beside its KV cache: the dynamic cache's `torch.cat`
/// copy of one layer's V (`memory::inference`), seven b × V FP32 score buffers (the model's logits,
/// `next_token_logits.to(copy=True, dtype=float32)`, the logits processors' outputs — TRL passes
/// `min_new_tokens` / temperature — and the sampling probabilities; measured with transformers 5.24
/// `generate(do_sample=True)` on the tiny Llama: 7.04 × b·V·4 B at the peak, a `where` of the last
/// step) and 8 B per cached token of mask and positions.
fn sampling_step(g: &Ctx, m: &ResolvedModel, layers: f64, last: bool) -> f64 {
    let ctx_len = g.s + g.generated;
    let cat = m.largest_layer_half_kv(&inference::cache_shape(g, layers), g.b, ctx_len - 1.0);
    let scores = if last {
        7.0 * 4.0 * g.b * f64::from(m.vocab) / g.tp
    } else {
        0.0
    };
    cat + scores + 8.0 * g.b * ctx_len
}
