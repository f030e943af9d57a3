//! What the tests of the CPU-measured block records share (tests/data/measured/blocks-*.json,
//! `scripts/measure/`): reading a file, the model a record imported from its config kwargs, and the
//! step every record ran (AdamW foreach, no checkpointing or dropout, prefill with all-position
//! logits then one decode token, FP32 or autocast BF16, the Transformers torch paths).

#![allow(dead_code, reason = "each test file uses a part")]

use serde_json::Value;
use vram_explorer::scenario::*;

/// The records of one measured file (a JSON array).
pub fn records(text: &str) -> Vec<Value> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(v)) => v,
        other => panic!("measured data is not an array: {other:?}"),
    }
}

/// The model `import::from_hf_config` builds from a record's `model_type` and config kwargs.
pub fn imported_model(r: &Value) -> ModelSpec {
    let settings = &r["framework"]["settings"];
    let mut cfg = settings["config_kwargs"].clone();
    cfg["model_type"] = settings["model_type"].clone();
    let text = serde_json::to_string(&cfg).expect("kwargs serialise");
    vram_explorer::import::from_hf_config(&text, &ModelSpec::default())
        .expect("the record's config imports")
        .model
}

/// A scenario of `model` running the records' step with batch `b` and `seq` tokens.
pub fn measured_step(r: &Value, mode: Mode, model: ModelSpec, b: u32, seq: u32) -> Scenario {
    let mut s = Scenario {
        mode,
        model,
        ..Scenario::default()
    };
    s.workload.micro_batch = b;
    s.workload.seq_len = seq;
    s.workload.dropout = false;
    s.inference.prompt_tokens = seq;
    s.inference.generated_tokens = 1;
    s.inference.all_logits = true;
    s.inference.dynamic_batching = false;
    s.precision.compute = Dtype::Bf16;
    s.precision.mode = if r["dtype_mode"] == "amp_bf16" {
        PrecisionMode::Amp
    } else {
        s.precision.compute = Dtype::Fp32;
        PrecisionMode::Uniform
    };
    s.precision.kv_cache = s.precision.compute;
    s.optimizer.kind = OptimizerKind::AdamW;
    s.optimizer.foreach = true;
    s.strategies.checkpointing = Checkpointing::None;
    s.strategies.attention = AttentionKernel::Flash;
    s.implementation.block_kernels = BlockKernels::TorchReference;
    s.gpu = GpuChoice::default();
    s
}
