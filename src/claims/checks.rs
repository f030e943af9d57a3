//! Checks of the article's capacity claims (§1, §4): each returns what the estimator computes.

use super::{Check, Claimed};
use crate::estimator::{Component, Estimate, estimate};
use crate::presets::bundled_scenario;
use crate::scenario::{Checkpointing, Dtype, OptimizerKind, PrecisionMode, Scenario};

pub(super) fn load(id: &str) -> Option<Scenario> {
    bundled_scenario(id)
}

/// The estimate of a bundled preset after `edit`.
pub(super) fn variant(id: &str, edit: impl FnOnce(&mut Scenario)) -> Option<Estimate> {
    let mut s = load(id)?;
    edit(&mut s);
    Some(estimate(&s))
}

pub(super) fn total(e: &Estimate) -> f64 {
    e.memory.gpu_total.get()
}

/// Weights, master weights, gradients and optimizer states at the peak.
pub(super) fn states(e: &Estimate) -> f64 {
    let p = &e.memory.peak;
    [
        Component::Weights,
        Component::MasterWeights,
        Component::Gradients,
        Component::OptimizerStates,
    ]
    .iter()
    .map(|c| p.get(*c).get())
    .sum()
}

/// 1 − after ÷ before (a reduction; negative when `after` is larger).
pub(super) fn cut(before: f64, after: f64) -> f64 {
    if before > 0.0 {
        1.0 - after / before
    } else {
        0.0
    }
}

pub(super) fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0 && a.is_finite()).then(|| a / b)
}

pub(super) fn gb(x: f64) -> String {
    format!("{:.2} GB", x / 1e9)
}

/// Model states at the optimizer step (all gradients and optimizer states exist).
fn states_at_step(e: &Estimate) -> f64 {
    e.memory
        .phases
        .get(crate::estimator::Phase::OptimizerStep)
        .map_or(0.0, |b| {
            [
                Component::Weights,
                Component::MasterWeights,
                Component::Gradients,
                Component::OptimizerStates,
            ]
            .iter()
            .map(|c| b.get(*c).get())
            .sum()
        })
}

pub(super) fn bert_base_params() -> Check {
    let e = variant("bert-base-fp32", |_| {});
    let params = e.map_or(0.0, |e| e.model.params.total);
    Check {
        claimed: Claimed::Figure(2.4e9),
        general: e.map(|_| params * 4.0),
        conditional: e.map(|e| states_at_step(&e)),
        detail: format!(
            "{:.1}M parameters: FP32 weights {}; with gradients and AdamW moments {}",
            params / 1e6,
            gb(params * 4.0),
            e.map_or_else(String::new, |e| gb(states_at_step(&e)))
        ),
    }
}

pub(super) fn mp_formula() -> Check {
    let e = variant("gpt3-175b-mp8-a100", |_| {});
    let formula = e.map(|e| {
        e.model.params.total / 8.0 * 4.0 + e.memory.peak.get(Component::Activations).get()
    });
    Check {
        claimed: Claimed::Figure(formula.unwrap_or(0.0)),
        general: e.map(|e| total(&e)),
        conditional: None,
        detail: format!(
            "Article formula (params ÷ 8 × 4 B + activations) {}; estimate {}",
            formula.map_or_else(String::new, gb),
            e.map_or_else(String::new, |e| gb(total(&e)))
        ),
    }
}

pub(super) fn mp_8_to_32() -> Check {
    let (a, b) = (
        variant("gpt3-175b-mp8-a100", |_| {}),
        variant("gpt3-175b-mp32-a100", |_| {}),
    );
    let both = a.zip(b);
    Check {
        claimed: Claimed::Figure(0.75),
        general: both.map(|(a, b)| cut(total(&a), total(&b))),
        conditional: both.map(|(a, b)| cut(states(&a), states(&b))),
        detail: both.map_or_else(String::new, |(a, b)| {
            format!(
                "Per GPU {} to {}; model states {} to {}",
                gb(total(&a)),
                gb(total(&b)),
                gb(states(&a)),
                gb(states(&b))
            )
        }),
    }
}

pub(super) fn a100_175b() -> Check {
    let need = |e: Estimate| ratio(total(&e), e.memory.capacity.get());
    let node = variant("gpt3-175b-mp8-a100", |_| {}).and_then(need);
    let offload = variant("gpt3-175b-zero3-a100", |_| {}).and_then(need);
    Check {
        claimed: Claimed::AtMost(1.0),
        general: node,
        conditional: offload,
        detail: format!(
            "Needed ÷ capacity per GPU on one 8 × A100 80 GB node (TP 8): {:.2}; 8 × A100 40 GB \
             with ZeRO-3 and NVMe offload: {:.2}",
            node.unwrap_or(f64::NAN),
            offload.unwrap_or(f64::NAN)
        ),
    }
}

fn amp(s: &mut Scenario) {
    s.precision.mode = PrecisionMode::Amp;
    s.precision.compute = Dtype::Fp16;
}

pub(super) fn amp_40() -> Check {
    let fp32 = variant("bert-base-fp32", |_| {});
    let mixed = variant("bert-base-fp32", amp);
    let big = |s: &mut Scenario| {
        s.workload.micro_batch = 64;
        s.workload.seq_len = 512;
    };
    let fp32_big = variant("bert-base-fp32", big);
    let mixed_big = variant("bert-base-fp32", |s| {
        big(s);
        amp(s);
    });
    let pair =
        |a: Option<Estimate>, b: Option<Estimate>| a.zip(b).map(|(a, b)| (total(&a), total(&b)));
    let (g, c) = (pair(fp32, mixed), pair(fp32_big, mixed_big));
    Check {
        claimed: Claimed::Figure(0.40),
        general: g.map(|(a, b)| cut(a, b)),
        conditional: c.map(|(a, b)| cut(a, b)),
        detail: format!(
            "BERT-base, batch 32 × 128: FP32 {} to AMP {}; batch 64 × 512: {} to {}",
            g.map_or_else(String::new, |x| gb(x.0)),
            g.map_or_else(String::new, |x| gb(x.1)),
            c.map_or_else(String::new, |x| gb(x.0)),
            c.map_or_else(String::new, |x| gb(x.1))
        ),
    }
}

pub(super) fn checkpointing_compute() -> Check {
    let id = "gpt-1.3b-amp-checkpointing";
    let none = variant(id, |s| s.strategies.checkpointing = Checkpointing::None);
    let full = variant(id, |s| s.strategies.checkpointing = Checkpointing::Full);
    let sel = variant(id, |s| {
        s.strategies.checkpointing = Checkpointing::Selective
    });
    let step = |e: &Estimate| e.performance.step.compute_phase_s;
    let more = |a: &Option<Estimate>, b: &Option<Estimate>| {
        a.as_ref()
            .zip(b.as_ref())
            .and_then(|(a, b)| ratio(step(b), step(a)))
            .map(|r| r - 1.0)
    };
    let flops = none
        .as_ref()
        .zip(full.as_ref())
        .and_then(|(a, b)| ratio(b.performance.hardware_flops, a.performance.hardware_flops));
    Check {
        claimed: Claimed::Figure(0.20),
        general: more(&none, &full),
        conditional: more(&none, &sel),
        detail: format!(
            "Full recomputation: {:.2}× the FLOPs of no checkpointing (one extra forward, 8N vs 6N)",
            flops.unwrap_or(f64::NAN)
        ),
    }
}

pub(super) fn checkpointing_sqrt() -> Check {
    let acts = |layers: u32| {
        variant("gpt-1.3b-amp-checkpointing", |s| {
            s.model.transformer.layers = layers;
            s.strategies.checkpointing = Checkpointing::EveryK;
            s.strategies.checkpoint_every = 0;
        })
        .and_then(|e| {
            e.memory
                .phases
                .get(crate::estimator::Phase::Forward)
                .map(|b| b.get(Component::Activations).get())
        })
    };
    // Differences cancel the layer-independent part (embeddings, logits): for a(L) = c + k·L^p,
    // (a(256) − a(64)) ÷ (a(64) − a(16)) = 4^p.
    let (a, b, c) = (acts(16), acts(64), acts(256));
    let exponent = a
        .zip(b)
        .zip(c)
        .and_then(|((a, b), c)| ratio(c - b, b - a))
        .filter(|r| *r > 0.0)
        .map(|r| r.ln() / 4f64.ln());
    Check {
        claimed: Claimed::Figure(0.5),
        general: exponent,
        conditional: None,
        detail: format!(
            "Saved activations with a checkpoint every √L (rounded up) layers: L = 16 to {}, 64 to {}, 256 to {}",
            a.map_or_else(String::new, gb),
            b.map_or_else(String::new, gb),
            c.map_or_else(String::new, gb)
        ),
    }
}

pub(super) fn gpt_1_3b_9gb() -> Check {
    let id = "gpt-1.3b-amp-checkpointing";
    let as_is = variant(id, |_| {});
    let lean = variant(id, |s| {
        s.precision.mode = PrecisionMode::Uniform;
        s.precision.compute = Dtype::Bf16;
        s.optimizer.kind = OptimizerKind::Adam8bit;
    });
    Check {
        claimed: Claimed::Figure(9e9),
        general: as_is.map(|e| total(&e)),
        conditional: lean.map(|e| total(&e)),
        detail: format!(
            "AMP + full checkpointing {}; model states alone {}",
            as_is.map_or_else(String::new, |e| gb(total(&e))),
            as_is.map_or_else(String::new, |e| gb(states(&e)))
        ),
    }
}
