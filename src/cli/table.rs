//! The human-readable report: a plain-text table, every number with its unit.

use std::fmt::Write;

use crate::estimator::{Component, Estimate, Phase};
use crate::presets::bundled;
use crate::presets::text::escape_controls;
use crate::scenario::{GpuChoice, Mode, ModelFamily, Scenario};
use crate::units::{Bytes, MemoryUnit, fmt_sig};

/// The full report of one scenario.
pub fn report(s: &Scenario, est: &Estimate, origin: &str, unit: MemoryUnit) -> String {
    let mut out = String::new();
    header(&mut out, s, est, origin);
    memory(&mut out, est, unit);
    super::engine::section(&mut out, est, unit);
    if let Some(b) = &est.llamacpp {
        out.push_str(&crate::report::llamacpp::section(b));
    }
    diagnostics(&mut out, est);
    super::perf::section(&mut out, s, est, unit);
    out
}

/// The list of bundled presets, grouped.
pub fn presets() -> String {
    let mut out = String::new();
    let mut group = "";
    for p in bundled() {
        if p.group != group {
            group = p.group;
            let _ = writeln!(out, "{group}:");
        }
        let _ = writeln!(out, "  {:<36} {}", p.id, escape_controls(&p.name));
    }
    out
}

/// A training micro-batch in the model's own units: sequences of tokens, images or samples.
fn batch(s: &Scenario) -> String {
    let n = s.workload.micro_batch;
    match s.model.family {
        ModelFamily::Transformer => format!("{n} × {} tokens", s.workload.seq_len),
        ModelFamily::Cnn => format!("{n} images"),
        ModelFamily::Recommender => format!("{n} samples"),
    }
}

/// An inference step in the model's own units: a transformer's prompt, generated tokens and KV
/// cache; a CNN's images or a recommender's samples, which have none of those.
fn inference_step(s: &Scenario) -> String {
    let family = crate::report::family::view(s.model.family);
    let (w, p) = (&s.workload, &s.precision);
    if family.sequences {
        // Dynamic batching serves `concurrent_requests` at once (`Serving::batch`).
        let batch = if s.inference.dynamic_batching {
            format!("{} concurrent requests", s.inference.concurrent_requests)
        } else {
            format!("batch {}", w.micro_batch)
        };
        format!(
            "inference, {batch}, prompt {} + {} generated tokens, {:?} {:?}, KV cache {:?}",
            s.inference.prompt_tokens, s.inference.generated_tokens, p.mode, p.compute, p.kv_cache
        )
    } else {
        format!(
            "inference, batch {} {}, {:?} {:?}",
            w.micro_batch, family.items, p.mode, p.compute
        )
    }
}

/// The name of the scenario's GPU.
pub fn gpu_name(s: &Scenario) -> String {
    match &s.gpu {
        GpuChoice::Catalog(id) => id.name().to_owned(),
        GpuChoice::Custom(c) => format!("{} (custom)", c.name),
    }
}

fn header(out: &mut String, s: &Scenario, est: &Estimate, origin: &str) {
    let m = &est.model;
    // Names and paths come from files: control characters escaped (an `ESC [2J` must not clear the
    // terminal).
    let _ = writeln!(
        out,
        "{}  ({})",
        escape_controls(&s.title()),
        escape_controls(origin)
    );
    let params = fmt_sig(est.memory.params.total / 1e9);
    let shape = match m.family {
        ModelFamily::Transformer => format!(
            "transformer: {} layers, hidden {}, {} heads / {} KV heads, FFN {}, vocab {}",
            m.layers, m.hidden, m.heads, m.kv_heads, m.ffn, m.vocab
        ),
        ModelFamily::Cnn => "CNN".to_owned(),
        ModelFamily::Recommender => "recommender (embedding tables + dense MLP)".to_owned(),
    };
    let _ = writeln!(out, "Model:   {params} B parameters, {shape}");
    model_lines(out, s, est);
    let w = &s.workload;
    let step = match s.mode {
        Mode::Training => format!(
            "training, micro-batch {}, {} accumulation steps, {:?} {:?}, optimizer {:?}",
            batch(s),
            w.grad_accum_steps,
            s.precision.mode,
            s.precision.compute,
            s.optimizer.kind
        ),
        Mode::Inference => inference_step(s),
    };
    let _ = writeln!(out, "Step:    {step}");
    match engine_name(s) {
        // A serving engine runs its own code: the training framework's profile does not apply.
        Some(engine) => {
            let _ = writeln!(out, "Engine:  {engine}");
        }
        None => {
            let framework = crate::scenario::framework_label(&s.implementation, &s.peft);
            let _ = writeln!(out, "Framework: {framework}");
        }
    }
    let p = &s.parallel;
    if est.cpu_build().is_some() {
        let _ = writeln!(
            out,
            "GPU:     none (llama.cpp -dev none: the CPU backend holds every buffer; the scenario's {} and layout are not used)\n",
            escape_controls(&gpu_name(s))
        );
        return;
    }
    let _ = writeln!(
        out,
        "Layout:  DP {} × TP {} × PP {}{} = {} GPU(s), ZeRO {:?}, checkpointing {:?}",
        p.dp,
        p.tp,
        p.pp,
        crate::scenario::cp_suffix(p),
        p.gpus(),
        s.strategies.zero,
        s.strategies.checkpointing
    );
    let _ = writeln!(
        out,
        "GPU:     {}, {} = {} of memory, {} usable\n",
        escape_controls(&gpu_name(s)),
        MemoryUnit::GiB.format(s.gpu.capacity()),
        MemoryUnit::GB.format(s.gpu.capacity()),
        MemoryUnit::GiB.format(est.memory.capacity)
    );
}

/// Experts, quantized weights and LoRA, when the scenario has them.
fn model_lines(out: &mut String, s: &Scenario, est: &Estimate) {
    let m = &est.model;
    if m.moe.experts > 0 {
        let _ = writeln!(
            out,
            "Experts: {} per layer, top-{}, {} shared, expert parallel {}; {} B active per token",
            m.moe.experts,
            m.moe.top_k,
            m.moe.shared,
            m.moe.ep,
            fmt_sig(m.params.active / 1e9)
        );
    }
    let format = s.quantization.weights;
    let bits = format.bits_per_weight(s.quantization.group_size, m.hidden, true);
    if let (Some(bits), Mode::Inference) = (bits, s.mode) {
        let _ = writeln!(
            out,
            "Weights: layer matrices in {}, {} bits per weight with scales",
            format.label(),
            fmt_sig(bits)
        );
    }
    if s.mode == Mode::Training && s.peft.method != crate::scenario::PeftMethod::Full {
        let _ = writeln!(
            out,
            "Tuning:  {}, rank {}: {} M trainable parameters on a frozen base",
            s.peft.method.label(),
            s.peft.rank,
            fmt_sig(est.memory.params.trainable / 1e6)
        );
    }
}

/// The serving engine's name for an inference scenario that runs on one (vLLM, SGLang,
/// llama.cpp), `None` for `generate`-style inference and training.
pub fn engine_name(s: &Scenario) -> Option<&'static str> {
    use crate::scenario::ServingEngine;
    match (s.mode, s.inference.engine.as_ref()?) {
        (Mode::Inference, ServingEngine::Vllm(_)) => Some("vLLM"),
        (Mode::Inference, ServingEngine::Sglang(_)) => Some("SGLang"),
        (Mode::Inference, ServingEngine::LlamaCpp(_)) => Some("llama.cpp"),
        _ => None,
    }
}

fn memory(out: &mut String, est: &Estimate, unit: MemoryUnit) {
    let mem = &est.memory;
    if let Some(b) = est.cpu_build() {
        let _ = writeln!(
            out,
            "Host memory (llama.cpp -dev none): {} in llama.cpp's buffers (model, KV and compute, below); no GPU memory used\n",
            unit.format(Bytes(b.host_total() as f64))
        );
        return;
    }
    let phase = mem.peak_phase.map_or("—", Phase::label);
    let u = unit.label();
    let _ = writeln!(out, "Per-GPU memory at the peak (phase: {phase})");
    let _ = writeln!(out, "  {:<24} {:>12} {:>20}", "Component", u, "bytes");
    // A post-training run's other models are rows only where there is one (each is zero otherwise).
    let rl = Phase::ALL
        .iter()
        .filter_map(|p| mem.phases.get(*p))
        .chain([&mem.peak])
        .any(|b| {
            Component::ALL
                .iter()
                .any(|c| c.is_post_training() && b.get(*c).get() != 0.0)
        });
    for c in Component::ALL
        .into_iter()
        .filter(|c| rl || !c.is_post_training())
    {
        row(out, c.label(), mem.peak.get(c), unit);
    }
    let _ = writeln!(out, "  {}", "-".repeat(58));
    row(out, "Tensor peak", mem.tensor_peak, unit);
    row(out, "Reserved peak", mem.reserved_peak(), unit);
    row(out, "GPU total", mem.gpu_total, unit);
    row(out, "Capacity", mem.capacity, unit);
    row(out, "Headroom", mem.headroom, unit);
    let verdict = if mem.fits { "yes" } else { "NO" };
    let statistics = if est.llamacpp.is_some() {
        "tensor peak is the sum of the model, KV cache and compute buffers llama.cpp prints; \
         ggml allocates them at their exact sizes, so the reserve is the library workspace alone; \
         GPU total adds the CUDA context, as nvidia-smi shows"
    } else {
        "tensor peak is what torch.cuda.max_memory_allocated shows; reserved peak adds the \
         allocator reserve, as max_memory_reserved shows; GPU total adds the CUDA context and \
         NCCL's buffers, as nvidia-smi shows"
    };
    let _ = writeln!(out, "  Fits: {verdict}  ({statistics})");
    let phases: Vec<String> = Phase::ALL
        .iter()
        .filter_map(|p| {
            let b = mem.phases.get(*p)?;
            Some(format!("{} {}", p.label(), unit.format(b.tensor_total())))
        })
        .collect();
    if !phases.is_empty() {
        let _ = writeln!(out, "  Tensor bytes per phase: {}", phases.join(", "));
    }
    crate::report::stages::text(out, mem, unit);
    let off = &mem.offloaded;
    if off.host.get() + off.nvme.get() + off.second_tier.get() > 0.0 {
        let _ = writeln!(
            out,
            "  Off the GPU: host {}, NVMe {}, second tier {}",
            unit.format(off.host),
            unit.format(off.nvme),
            unit.format(off.second_tier)
        );
    }
    out.push('\n');
}

fn row(out: &mut String, label: &str, b: Bytes, unit: MemoryUnit) {
    let _ = writeln!(
        out,
        "  {label:<24} {:>12} {:>20}",
        fmt_fixed(unit.value(b)),
        group_digits(b.get())
    );
}

fn diagnostics(out: &mut String, est: &Estimate) {
    if est.diagnostics.is_empty() {
        return;
    }
    let _ = writeln!(out, "Diagnostics");
    for d in est.diagnostics.iter() {
        let _ = writeln!(
            out,
            "  {:<8} {}  [{}]",
            format!("{:?}", d.severity()).to_lowercase(),
            d.message(),
            d.code()
        );
    }
    out.push('\n');
}

pub use crate::format::{fixed2 as fmt_fixed, grouped as group_digits};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_are_grouped() {
        assert_eq!(group_digits(16_060_522_496.0), "16,060,522,496");
        assert_eq!(group_digits(-1234.0), "−1,234");
        assert_eq!(group_digits(999.0), "999");
        assert_eq!(group_digits(f64::NAN), "—");
    }
}
