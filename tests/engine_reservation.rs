//! Memory under vLLM and SGLang is what the engine holds (`estimator::engines::reservation`): the
//! whole KV pool from startup, and under vLLM every term its budget charged; the comparison's GPU
//! rows apply the engine on each GPU.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::performance::compare::compare;
use vram_explorer::estimator::{Component, Diagnostic, estimate};
use vram_explorer::hardware::{GpuId, usable};
use vram_explorer::presets::bundled_scenario;
use vram_explorer::scenario::{GpuChoice, Scenario, ServingEngine};

const GIB: f64 = 1_073_741_824.0;

fn vllm_preset() -> Scenario {
    bundled_scenario("llama3.1-8b-vllm-h100-8k").unwrap()
}

#[test]
fn vllm_holds_its_budget_and_the_whole_pool() {
    let e = estimate(&vllm_preset());
    let f = e.engine.unwrap();
    let m = &e.memory;
    // Every phase's KV is the pool vLLM prints (6,776 blocks of 8 MiB = 52.94 GiB).
    assert_eq!(f.kv_pool.get(), 6_776.0 * 8.0 * 1_048_576.0);
    for b in m.phases.0.iter().flatten() {
        assert_eq!(b.get(Component::KvCache), f.kv_pool);
    }
    // The GPU total: the CUDA context and each term of vLLM's budget.
    let held = f.weights.get()
        + f.activation_peak.get()
        + f.non_torch.get()
        + f.cudagraph.get()
        + f.kv_pool.get()
        + m.peak.get(Component::CudaContext).get();
    assert!(
        (m.gpu_total.get() - held).abs() < 1.0,
        "{} vs {held}",
        m.gpu_total.get()
    );
    // About the budget, gpu_memory_utilization 0.9 × 79.19 GiB, plus the context.
    assert!((m.gpu_total.get() / GIB - (0.9 * 79.19 + 0.27)).abs() < 0.05);
    assert!(m.fits);
    assert_eq!(
        m.headroom.get(),
        usable(GpuId::H100Sxm).get() - m.gpu_total.get()
    );
    // The throughput line's concurrency is the engine's: 433,664 tokens over 8,192 per request.
    assert_eq!(e.performance.throughput.max_concurrent_requests, 52);
}

#[test]
fn requests_beyond_the_pool_wait_and_memory_stays_the_pools() {
    let mut s = vllm_preset();
    // 1,000 requests of 8,192 tokens need 125 GiB of KV: the 52.94 GiB pool holds 52.
    s.inference.concurrent_requests = 1_000;
    let e = estimate(&s);
    assert!(e.diagnostics.contains(Diagnostic::RequestsBeyondEnginePool));
    assert_eq!(
        e.memory.peak.get(Component::KvCache),
        e.engine.unwrap().kv_pool
    );
    assert!(e.memory.fits);
    assert!(!e.diagnostics.contains(Diagnostic::DoesNotFit));
    // Fewer requests than the pool holds: no note, the same total.
    let few = estimate(&vllm_preset());
    assert!(
        !few.diagnostics
            .contains(Diagnostic::RequestsBeyondEnginePool)
    );
    assert_eq!(few.memory.gpu_total, e.memory.gpu_total);
}

#[test]
fn sglang_counts_its_pool_and_the_steps_own_activations() {
    let s = bundled_scenario("qwen2.5-7b-sglang-rtx4090").unwrap();
    let e = estimate(&s);
    let f = e.engine.unwrap();
    assert_eq!(
        e.memory.peak.get(Component::KvCache).get(),
        f.kv_pool.get() + f.state_pool.get()
    );
    assert_eq!(e.memory.peak.get(Component::Weights), f.weights);
    // The activations of the scenario's own step stay as the memory estimate counts them.
    let mut plain = s.clone();
    plain.inference.engine = None;
    let p = estimate(&plain);
    assert_eq!(
        e.memory.peak.get(Component::Transient),
        p.memory.peak.get(Component::Transient)
    );
}

/// The comparison applies vLLM on each GPU: Llama-3.1-8B (15 GiB of weights) at 8K starts on an
/// RTX 3090 (its budget leaves a pool of about 2.9 GiB, more than one 1 GiB request) and not on
/// a T4 (the weights alone exceed 0.9 × 15.6 GiB); each row's headroom is that GPU's.
#[test]
fn comparison_rows_apply_the_engine_on_each_gpu() {
    let s = vllm_preset();
    let c = compare(&s);
    let row = |id: GpuId| {
        c.gpus
            .iter()
            .find(|r| r.label == vram_explorer::hardware::gpu(id).name)
            .unwrap()
    };
    assert_eq!(row(GpuId::Rtx3090).fits, Some(true));
    assert_eq!(row(GpuId::T4).fits, Some(false));
    for id in [GpuId::Rtx3090, GpuId::A100Sxm80, GpuId::H200] {
        let mut on = s.clone();
        on.gpu = GpuChoice::Catalog(id);
        let e = estimate(&on);
        assert_eq!(row(id).fits, Some(e.memory.fits), "{id:?}");
        let h = row(id).headroom.unwrap().get();
        assert!((h - e.memory.headroom.get()).abs() < 1.0, "{id:?}: {h}");
    }
    // The comparison's "needs" is the reservation on the scenario's own GPU.
    assert_eq!(c.needed, estimate(&s).memory.gpu_total);
    // The article's technology rows apply the engine too: a 24 GiB GDDR6X device is the same
    // budget whichever bandwidth the article gives it (it said no, −47.5 GiB, held to the H100's pool).
    let tech = c.techs.iter().find(|r| r.label == "GDDR6X").unwrap();
    let article = c
        .article
        .iter()
        .find(|r| r.label == "GDDR6X (article)")
        .unwrap();
    assert_eq!(tech.capacity, article.capacity);
    assert_eq!(article.fits, tech.fits);
    assert_eq!(article.headroom, tech.headroom);
    assert_eq!(article.fits, Some(true));
}

/// Without an engine nothing changes: the memory estimate is the requests' own.
#[test]
fn without_an_engine_memory_is_the_requests() {
    let mut s = vllm_preset();
    let with = estimate(&s);
    s.inference.engine = None;
    let without = estimate(&s);
    assert!(without.engine.is_none());
    assert!(without.memory.gpu_total.get() < with.memory.gpu_total.get());
    assert!(matches!(
        vllm_preset().inference.engine,
        Some(ServingEngine::Vllm(_))
    ));
}

/// The engine holds its pool and lets the requests beyond it wait, so a spill to a second memory
/// tier computed from the requests' own memory (125 GiB of KV here) is not what the engine does:
/// nothing is spilled and no "fits only with the second tier" note is left behind.
#[test]
fn an_engine_spills_nothing_to_a_second_tier() {
    let mut s = vllm_preset();
    s.inference.concurrent_requests = 1_000;
    s.strategies.second_tier = vram_explorer::scenario::SecondTier::Host;
    s.strategies.second_tier_gib = 512.0;
    // Without the engine the requests' own memory spills into the tier (the premise).
    let mut plain = s.clone();
    plain.inference.engine = None;
    let p = estimate(&plain);
    assert!(p.memory.offloaded.second_tier.get() > 0.0);
    assert!(p.diagnostics.contains(Diagnostic::FitsOnlyWithSecondTier));
    let e = estimate(&s);
    assert_eq!(e.memory.offloaded.second_tier.get(), 0.0);
    assert!(!e.diagnostics.contains(Diagnostic::FitsOnlyWithSecondTier));
    assert!(e.diagnostics.contains(Diagnostic::RequestsBeyondEnginePool));
    assert!(e.memory.fits);
}

/// Found by the 10⁶ random scenarios: SGLang sizes a sliding-window layer's pool at
/// `swa_full_tokens_ratio` of the full one, so a model whose every layer is windowed, at a ratio
/// near zero (valid: [0, 1]), has a vanishing cell and an infinite token count, and the pool, the
/// shown KV and the total became infinite. The count now stops at 2^53 and everything stays finite.
#[test]
fn sglang_with_a_vanishing_cell_stays_finite() {
    use vram_explorer::scenario::{Attention, LayerRun, Mixer, Mlp, PatternPart};
    let mut s = bundled_scenario("qwen2.5-7b-sglang-rtx4090").unwrap();
    let windowed = Mixer::Attention(Attention {
        window: 1024,
        ..Attention::default()
    });
    s.model.pattern = vec![PatternPart {
        repeat: 1,
        layers: vec![LayerRun {
            count: s.model.transformer.layers,
            mixer: windowed,
            mlp: Mlp::default(),
            norms: 2,
        }],
    }];
    s.parallel.pp = 2;
    let Some(ServingEngine::Sglang(g)) = &mut s.inference.engine else {
        panic!("the preset is served by SGLang");
    };
    g.swa_full_tokens_ratio = 5e-324;
    assert!(vram_explorer::scenario::validate::validate(&s).is_empty());
    let e = estimate(&s);
    let f = e.engine.unwrap();
    assert!(f.tokens.is_finite() && f.kv_pool.get().is_finite());
    for b in e.memory.phases.0.iter().flatten() {
        assert!(b.total().get().is_finite());
    }
    assert!(e.memory.gpu_total.get().is_finite());
}

/// With pipeline stages the limiting stage class (the JSON `stages` list, the per-stage chart) is
/// the reported peak with the engine's pool and reservation in it, not the requests' own memory
/// the estimate had before the engine was applied.
#[test]
fn the_limiting_vllm_stage_class_is_the_reported_peak() {
    let mut s = vllm_preset();
    s.parallel.pp = 3;
    let e = estimate(&s);
    let m = &e.memory;
    let limiting = m.limiting_stage().unwrap();
    assert_eq!(limiting.peak, m.peak);
    assert_eq!(limiting.peak_phase, m.peak_phase);
    assert!(limiting.peak.get(Component::KvCache).get() >= e.engine.unwrap().kv_pool.get());
    for c in m.stage_classes() {
        assert!(
            c.peak.total() <= m.peak.total(),
            "stage {} above the peak",
            c.first
        );
    }
}

/// vLLM 0.34 sizes every pipeline rank by its own budget, then re-plans every rank with the
/// smallest block count (`v1/core/kv_cache_planning.py` `get_kv_cache_configs`). Llama-3.1-8B over
/// 3 stages (11, 11, 10 layers): the first rank (embedding, no sampler) has the fewest blocks and
/// fills its budget; every rank allocates that many blocks of its own layers (64 tokens × K and V
/// × 8 heads × 128 × 2 B = 256 KiB per layer); the last holds less.
#[test]
fn every_vllm_stage_allocates_the_smallest_ranks_block_count() {
    let mut s = vllm_preset();
    s.parallel.pp = 3;
    let e = estimate(&s);
    let f = e.engine.unwrap();
    let m = &e.memory;
    let per_layer_block = 64.0 * 2.0 * 8.0 * 128.0 * 2.0;
    let classes: Vec<_> = m.stage_classes().copied().collect();
    assert_eq!(
        classes.iter().map(|c| c.layers).collect::<Vec<_>>(),
        [11, 11, 10]
    );
    for (i, c) in m.stages.iter().enumerate() {
        let Some(c) = c else { continue };
        let share = f.stages[i].expect("a pool per class");
        let pool = f.blocks * f64::from(c.layers) * per_layer_block;
        assert_eq!(share.pool.get(), pool, "stage {}", c.first);
        assert_eq!(c.peak.get(Component::KvCache).get(), pool);
        // The views that recompute a class's phases show the same pool.
        let phases =
            vram_explorer::estimator::memory::stage_phases_of(&s, &e, c.first).expect("phases");
        for b in phases.0.iter().flatten() {
            assert_eq!(b.get(Component::KvCache).get(), pool);
        }
        assert!(c.peak.total() <= m.peak.total(), "stage {}", c.first);
    }
    // The first rank sets the count: its budget over its block bytes.
    let limiting = m.limiting_stage().unwrap();
    assert_eq!(limiting.first, 0);
    assert_eq!(
        f.blocks,
        (f.kv_budget.get() / (11.0 * per_layer_block)).floor()
    );
    assert!(
        f.activation_peak.get() < GIB,
        "no sampler on the first rank"
    );
    // The last rank (10 layers) holds a tenth less pool and the sampler's activations.
    let last = classes[2];
    let first = classes[0];
    assert!(last.peak.total() < first.peak.total());
    assert!(last.peak.get(Component::KvCache).get() < first.peak.get(Component::KvCache).get());
}

/// vLLM gives the layers 5 stages do not divide to the stages just before the last
/// (`get_pp_indices`: 32 layers → 6, 6, 7, 7, 6), and the 7-layer stages set the block count.
#[test]
fn vllm_puts_the_extra_layers_before_the_last_stage() {
    let mut s = vllm_preset();
    s.parallel.pp = 5;
    let e = estimate(&s);
    let m = &e.memory;
    let layers: Vec<_> = m
        .stage_classes()
        .flat_map(|c| std::iter::repeat_n(c.layers, c.count as usize))
        .collect();
    assert_eq!(layers, [6, 6, 7, 7, 6]);
    let limiting = m.limiting_stage().unwrap();
    assert_eq!((limiting.first, limiting.layers), (2, 7));
    let f = e.engine.unwrap();
    assert_eq!(f.blocks, (f.kv_budget.get() / (7.0 * 262_144.0)).floor());
    // A training pipeline keeps DeepSpeed's split: the first stages hold the extra layers.
    s.mode = vram_explorer::scenario::Mode::Training;
    let t = estimate(&s).memory;
    let layers: Vec<_> = t
        .stage_classes()
        .flat_map(|c| std::iter::repeat_n(c.layers, c.count as usize))
        .collect();
    assert_eq!(layers, [7, 7, 6, 6, 6]);
}

/// The CUDA context a GPU shows (docs/gpu-overheads.md §2): without an engine the running
/// process's (the context at CUDA initialisation + the kernels loaded lazily); under vLLM ≥ 0.6.5
/// the bare context beside the budget (the kernels the profile loads are in its non-torch growth);
/// under vLLM 0.6.4 none beside it, because its non-torch term is everything outside torch; under
/// SGLang the running context (its free memory is read before the kernels load).
#[test]
fn the_context_is_counted_once_whoever_charges_it() {
    const MIB: f64 = 1_048_576.0;
    let context = |s: &Scenario| estimate(s).memory.peak.get(Component::CudaContext).get();
    let mut plain = vllm_preset();
    plain.inference.engine = None;
    assert_eq!(context(&plain), (253.75 + 146.0) * MIB);
    plain.overheads.cuda_kernels_mib = 0.0;
    assert_eq!(context(&plain), 253.75 * MIB);

    let v1 = vllm_preset();
    assert_eq!(context(&v1), 253.75 * MIB);
    let f = estimate(&v1).engine.unwrap();
    assert_eq!(f.context.get(), 253.75 * MIB);

    let mut v064 = vllm_preset();
    if let Some(ServingEngine::Vllm(v)) = &mut v064.inference.engine {
        v.version = vram_explorer::scenario::VllmVersion::V0_6_4;
    }
    let e = estimate(&v064);
    let f = e.engine.unwrap();
    assert_eq!(f.non_torch.get(), (253.75 + 146.0) * MIB);
    assert_eq!(e.memory.peak.get(Component::CudaContext).get(), 0.0);

    let s = bundled_scenario("qwen2.5-7b-sglang-rtx4090").unwrap();
    assert_eq!(context(&s), (253.75 + 146.0) * MIB);
}

/// The memory-technology rows apply the engine too: vLLM sizes its budget from the technology's
/// device, so a row fits as a custom GPU of that capacity does (HBM2's 32 GiB holds the 8B model
/// and its requests as the V100 32 GB does; the row said "no" by the H100's 71.5 GiB before).
#[test]
fn technology_rows_apply_the_engine_to_their_capacity() {
    use vram_explorer::scenario::CustomGpu;
    let s = vllm_preset();
    let c = compare(&s);
    let mut checked = 0;
    for row in c.techs.iter().filter(|r| r.capacity.is_some()) {
        let cap = row.capacity.unwrap().get();
        let mut on = s.clone();
        on.gpu = GpuChoice::Custom(CustomGpu {
            memory_gb: cap / vram_explorer::units::GIB,
            ..CustomGpu::unnamed()
        });
        let e = estimate(&on);
        assert_eq!(row.fits, Some(e.memory.fits), "{}", row.label);
        let h = row.headroom.unwrap().get();
        assert!(
            (h - e.memory.headroom.get()).abs() < 1.0,
            "{}: {h}",
            row.label
        );
        checked += 1;
    }
    assert!(checked >= 8, "{checked}");
    let hbm2 = c.techs.iter().find(|r| r.label == "HBM2").expect("HBM2");
    assert_eq!(hbm2.fits, Some(true));
}
