//! llama.cpp's time for a mixture of experts (docs/engines/llamacpp.md §9, `time::weights_read`): a
//! decode step reads the dense weights and only the routed experts its tokens use, a prompt's
//! micro-batch all of them; a step advances at most `-np` sequences.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::estimate;
use vram_explorer::presets;
use vram_explorer::scenario::engine_args_llamacpp::apply;

/// (decode bytes, TPOT s, model bytes) of DeepSeek-V3 Q4_K_M on a CPU build with `np` slots.
fn deepseek_on_cpu(np: u32) -> (f64, f64, f64) {
    let sc = presets::bundled_scenario("deepseek-v3-inference-8xh200-fp8").unwrap();
    let cmd = format!("llama-server -m DeepSeek-V3-Q4_K_M.gguf -c 8192 -np {np} -dev none");
    let (s, _) = apply(&sc, &cmd).unwrap();
    let e = estimate(&s);
    let model = e.llamacpp.unwrap().host_model as f64;
    let p = &e.performance;
    (p.decode.unwrap().bytes.get(), p.throughput.tpot_s, model)
}

#[test]
fn a_decode_token_reads_its_experts_not_the_whole_file() {
    let (bytes, tpot, model) = deepseek_on_cpu(1);
    // 8 of 256 experts a token, 58 MoE layers: ≈ 5.6 % of the 404 GB file is read.
    assert!(
        bytes < 0.07 * model && bytes > 0.04 * model,
        "{bytes} of {model}"
    );
    // 64 GB/s: ≈ 0.35 s a token (it was 6.3 s with every expert read).
    assert!((0.3..0.4).contains(&tpot), "{tpot}");
    // Four slots decode four sequences: their experts overlap little (1 − (1 − 8/256)^4 ≈ 12 %).
    let (four, ..) = deepseek_on_cpu(4);
    assert!(
        four > 1.5 * bytes && four < 3.0 * bytes,
        "{four} vs {bytes}"
    );
}
