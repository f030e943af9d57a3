//! torchao's 8-bit AdamW (0.6.1, `prototype/low_bit_optim/adam.py`) steps each parameter with its
//! own compiled `single_param_adam`, which materialises three FP32 buffers of the parameter's size;
//! bitsandbytes' kernel updates in place. Measured on CPU with torch 2.5.1's inductor
//! (`tests/data/measured/torchao-adamw8bit-step.json`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use serde_json::Value;
use vram_explorer::estimator::memory::states::TORCHAO_8BIT_STEP_BYTES;
use vram_explorer::estimator::{Component, Estimate, Phase, estimate};
use vram_explorer::scenario::{EightBitLibrary, Mode, OptimizerKind, Scenario};

fn measured() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/measured/torchao-adamw8bit-step.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn the_measured_step_holds_the_modelled_bytes_per_element() {
    let d = measured();
    let records = d["records"].as_array().unwrap();
    assert_eq!(records.len(), 3);
    for r in records {
        let per = r["step_peak_bytes"].as_f64().unwrap() / r["elements"].as_f64().unwrap();
        assert_eq!(per, TORCHAO_8BIT_STEP_BYTES, "{r}");
    }
    // The generated wrapper's buffers are the allocator's peak, byte for byte.
    let buffers: f64 = d["inductor_buffers_1024x1024"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["bytes"].as_f64().unwrap())
        .sum();
    assert_eq!(buffers, records[0]["step_peak_bytes"].as_f64().unwrap());
}

fn step_transient(library: EightBitLibrary) -> Estimate {
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    s.optimizer.kind = OptimizerKind::Adam8bit;
    s.optimizer.eight_bit_library = library;
    estimate(&s)
}

fn transient(e: &Estimate) -> f64 {
    e.memory
        .phases
        .get(Phase::OptimizerStep)
        .expect("a step")
        .get(Component::Transient)
        .get()
}

#[test]
fn torchaos_step_holds_its_buffers_for_the_largest_tensor() {
    let bnb = step_transient(EightBitLibrary::Bitsandbytes);
    let ao = step_transient(EightBitLibrary::Torchao);
    let largest = ao.model.largest_tensor;
    assert!(largest > 0.0);
    let extra = transient(&ao) - transient(&bnb);
    assert!(
        (extra / (TORCHAO_8BIT_STEP_BYTES * largest) - 1.0).abs() < 1e-9,
        "{extra} vs {}",
        TORCHAO_8BIT_STEP_BYTES * largest
    );
    // The states themselves are the same.
    let states = |e: &Estimate| e.memory.peak.get(Component::OptimizerStates).get();
    assert_eq!(states(&ao), states(&bnb));
    // And the step moves the buffers' bytes (written and read back): 24 B a parameter more.
    let bytes = |e: &Estimate| e.performance.optimizer.expect("a step").bytes.get();
    let (b, a) = (bytes(&bnb), bytes(&ao));
    let params = e_params(&bnb);
    assert!(
        ((a - b) / params - 24.0).abs() < 1e-6,
        "{}",
        (a - b) / params
    );
}

fn e_params(e: &Estimate) -> f64 {
    e.memory.params.trainable
}

/// Other optimizers ignore the field.
#[test]
fn the_library_is_read_for_eight_bit_adam_only() {
    let run = |library: EightBitLibrary| {
        let mut s = Scenario {
            mode: Mode::Training,
            ..Scenario::default()
        };
        s.optimizer.eight_bit_library = library;
        estimate(&s)
    };
    assert_eq!(
        run(EightBitLibrary::Bitsandbytes).memory.tensor_peak,
        run(EightBitLibrary::Torchao).memory.tensor_peak
    );
}
