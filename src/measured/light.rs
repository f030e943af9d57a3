//! Light measurements pasted or logged as text: PyTorch's `max_memory_allocated` /
//! `max_memory_reserved` (bytes, or a number with a unit), an nvidia-smi log written with
//! `--query-gpu=memory.used --format=csv` (header `memory.used [MiB]`, rows `12345 MiB`; the largest
//! row is taken), and vLLM's startup lines ("model weights take(s)/took X GiB", "Available KV cache
//! memory: X GiB", "PyTorch activation peak memory takes X GiB": `vllm/worker/worker.py` v0.6.6,
//! `vllm/v1/worker/gpu_worker.py` v0.9.0). vLLM before v0.6.4 printed "GB" for 2^30 bytes
//! (`model_runner.py`: `/ float(2**30)`), so a vLLM "GB" is read as GiB.

use super::MeasuredError;
use crate::units::{GIB, MIB};

listed_enum! {
    /// Which statistic a light measurement is.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum Statistic {
        /// `torch.cuda.max_memory_allocated()`: peak tensor bytes.
        Allocated,
        /// `torch.cuda.max_memory_reserved()`: peak bytes the caching allocator held.
        Reserved,
        /// nvidia-smi `memory.used`: everything on the GPU (context included), the largest sample.
        NvidiaSmi,
        /// vLLM: the model weights' bytes.
        VllmWeights,
        /// vLLM: the activation peak of its profiling forward.
        VllmActivations,
        /// vLLM: memory given to the KV cache (what was left, not what a batch needs).
        VllmKvCache,
    }
}

impl Statistic {
    pub const fn label(self) -> &'static str {
        match self {
            Statistic::Allocated => "max_memory_allocated",
            Statistic::Reserved => "max_memory_reserved",
            Statistic::NvidiaSmi => "nvidia-smi memory.used (largest)",
            Statistic::VllmWeights => "vLLM model weights",
            Statistic::VllmActivations => "vLLM activation peak",
            Statistic::VllmKvCache => "vLLM KV cache memory",
        }
    }
    pub const fn key(self) -> &'static str {
        match self {
            Statistic::Allocated => "allocated",
            Statistic::Reserved => "reserved",
            Statistic::NvidiaSmi => "nvidia_smi",
            Statistic::VllmWeights => "vllm_weights",
            Statistic::VllmActivations => "vllm_activations",
            Statistic::VllmKvCache => "vllm_kv_cache",
        }
    }
}

/// The statistics found in a text, bytes each (the largest value when one appears several times).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LightMeasurement {
    pub values: Vec<(Statistic, f64)>,
}

impl LightMeasurement {
    pub fn get(&self, s: Statistic) -> Option<f64> {
        self.values.iter().find(|(k, _)| *k == s).map(|(_, v)| *v)
    }
    fn put(&mut self, s: Statistic, v: f64) {
        match self.values.iter_mut().find(|(k, _)| *k == s) {
            Some(e) => e.1 = e.1.max(v),
            None => self.values.push((s, v)),
        }
    }
}

/// The first number after `at` in `line` and the unit right after it, in bytes. A bare number is
/// bytes; `vllm` reads "GB" as GiB (see the module docs).
fn number_after(line: &str, at: usize, vllm: bool, default_unit: f64) -> Option<f64> {
    let mut rest = line.get(at..)?;
    // A call's argument (`max_memory_allocated(0)`) is not the value.
    if rest.starts_with('(') {
        rest = &rest[rest.find(')')? + 1..];
    }
    let start = rest.find(|c: char| c.is_ascii_digit())?;
    let tail = &rest[start..];
    let end = tail
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ','))
        .unwrap_or(tail.len());
    let x: f64 = tail[..end]
        .replace(',', "")
        .trim_end_matches('.')
        .parse()
        .ok()?;
    let unit: String = tail[end..]
        .trim_start()
        .chars()
        .take_while(char::is_ascii_alphabetic)
        .collect::<String>()
        .to_ascii_lowercase();
    let scale = match unit.as_str() {
        "b" | "bytes" => 1.0,
        "kib" => 1024.0,
        "kb" => 1e3,
        "mib" => MIB,
        "mb" => 1e6,
        "gib" => GIB,
        "gb" if vllm => GIB,
        "gb" => 1e9,
        _ => default_unit,
    };
    let v = x * scale;
    (v.is_finite() && v >= 0.0).then_some(v)
}

/// Finds the statistics in `text`.
pub fn parse(text: &str) -> Result<LightMeasurement, MeasuredError> {
    let mut out = LightMeasurement::default();
    let mut smi_mib = false;
    for raw in text.lines().take(1_000_000) {
        let line = raw.to_ascii_lowercase();
        if line.contains("memory.used") {
            smi_mib = line.contains("mib");
            continue;
        }
        let keys: [(&str, Statistic, bool); 8] = [
            ("max_memory_allocated", Statistic::Allocated, false),
            ("max_memory_reserved", Statistic::Reserved, false),
            ("model weights take", Statistic::VllmWeights, true),
            ("model weights took", Statistic::VllmWeights, true),
            ("weights took", Statistic::VllmWeights, true),
            (
                "activation peak memory takes",
                Statistic::VllmActivations,
                true,
            ),
            ("available kv cache memory", Statistic::VllmKvCache, true),
            ("reserved for kv cache is", Statistic::VllmKvCache, true),
        ];
        // One line may carry several statistics (vLLM's profiling summary).
        let mut found = false;
        for (key, stat, vllm) in keys {
            if let Some(i) = line.find(key)
                && let Some(v) = number_after(&line, i + key.len(), vllm, 1.0)
            {
                out.put(stat, v);
                found = true;
            }
        }
        if !found && smi_mib {
            let first = line.split(',').next().unwrap_or("");
            if let Some(v) = number_after(first, 0, false, MIB) {
                out.put(Statistic::NvidiaSmi, v);
            }
        }
    }
    if out.values.is_empty() {
        return Err(MeasuredError::NotRecognised);
    }
    Ok(out)
}
