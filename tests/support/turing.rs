//! calculon's `llm-optimal-execution` anchor model (README at caa4b11): Turing-530B
//! (`models/turing-530B.json`: 105 layers, hidden 20480, 128 heads, sequence 2048), shared by
//! tests/layout_search.rs and benches/layout_search.rs.

use vram_explorer::hardware::GpuId;
use vram_explorer::scenario::{
    AttentionKernel, Dtype, FfnKind, GpuChoice, Mode, PrecisionMode, Profile, Scenario,
};

/// Turing-530B training on A100 80 GB, FP16 mixed precision with Adam, as Megatron ran it.
pub fn turing_530b() -> Scenario {
    let mut s = Scenario {
        mode: Mode::Training,
        gpu: GpuChoice::Catalog(GpuId::A100Sxm80),
        ..Scenario::default()
    };
    let t = &mut s.model.transformer;
    t.layers = 105;
    t.hidden = 20480;
    t.heads = 128;
    t.kv_heads = 128;
    t.ffn = 81920;
    t.ffn_kind = FfnKind::Gelu;
    t.vocab = 51200;
    t.max_positions = 2048;
    t.bias = true;
    s.workload.seq_len = 2048;
    s.precision.mode = PrecisionMode::MasterWeights;
    s.precision.compute = Dtype::Fp16;
    s.implementation.profile = Profile::Megatron;
    s.strategies.attention = AttentionKernel::Materialized;
    s.timing.internode_gb_s = 25.0;
    s
}
