//! The replayed planner over DeepSeek-2/3's graph (`engines::llamacpp::graph_mla`): its capacity
//! holds the largest graph it plans, and the layer shortcut (the leading dense layers, then 7–12 MoE
//! layers for any number) gives the buffer of every layer planned. Its figures against llama.cpp
//! are in tests/measured_llamacpp.rs.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::engines::llamacpp::compute::{
    MAX_DENSE_LEAD, MAX_EXPERTS_USED, MLA_GRAPH_TENSORS, replayed_layers,
};
use vram_explorer::estimator::engines::llamacpp::dims::MlaDims;
use vram_explorer::estimator::engines::llamacpp::gallocr::plan;
use vram_explorer::estimator::engines::llamacpp::ggml::{Graph, Ty};
use vram_explorer::estimator::engines::llamacpp::graph_mla::{MlaShape, build};

/// DeepSeek-V3's layer (7168 wide, 128 heads, kv_lora 512, 256 experts of 2048 in 8 groups of
/// which 4, one shared expert) at `n_layer` layers, `dense_lead` of them dense.
fn v3(n_layer: u32, dense_lead: u32, used: u64, flash_attn: bool, type_k: Ty) -> MlaShape {
    MlaShape {
        n_layer,
        n_embd: 7168,
        n_head: 128,
        mla: MlaDims {
            q_lora: 1536,
            kv_lora: 512,
            rope: 64,
            nope: 128,
            v: 128,
            dense_lead,
            norm_w: true,
            selection_bias: true,
            groups: (8, 4),
            scale: true,
        },
        n_ff: 18432,
        n_vocab: 129_280,
        n_expert: 256,
        n_expert_used: used,
        n_ff_exp: 2048,
        n_ff_shexp: 2048,
        n_tokens: 512,
        n_outputs: 512,
        n_kv: 4096,
        flash_attn,
        type_k,
    }
}

/// The most the replay plans: 4 dense and 12 MoE layers, 16 experts a token, with and without
/// flash attention, an F16 and a q8_0 cache.
#[test]
fn the_mla_replays_capacity_holds_the_largest_graph_it_plans() {
    let q8 = Ty::Block {
        elems: 32,
        bytes: 34,
    };
    for (fa, ty) in [(false, Ty::F16), (true, Ty::F16), (true, q8)] {
        let s = v3(
            MAX_DENSE_LEAD + 12,
            MAX_DENSE_LEAD,
            MAX_EXPERTS_USED,
            fa,
            ty,
        );
        let mut g = Box::new(Graph::<MLA_GRAPH_TENSORS>::default());
        build(&mut g, &s);
        assert!(!g.full, "fa {fa}, {ty:?}");
        assert!(plan(&g, 32).is_some());
    }
}

/// DeepSeek-V3's 61 layers (3 dense) and every count up to them plan to the same buffer as the
/// dense layers with the replayed MoE layers, with and without flash attention.
#[test]
fn the_mla_layer_shortcut_gives_the_buffer_of_every_layer_planned() {
    // A 61-layer graph is built on the stack before it is boxed: a thread with room for it.
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(shortcut_holds)
        .unwrap()
        .join()
        .unwrap();
}

fn shortcut_holds() {
    for fa in [false, true] {
        for n in (4..=61).step_by(3) {
            let mut full = Box::new(Graph::<8192>::default());
            build(&mut full, &v3(n, 3, 8, fa, Ty::F16));
            assert!(!full.full);
            let short_n = 3 + replayed_layers(n - 3);
            let mut short = Box::new(Graph::<MLA_GRAPH_TENSORS>::default());
            build(&mut short, &v3(short_n, 3, 8, fa, Ty::F16));
            assert_eq!(
                plan(&full, 32).unwrap(),
                plan(&short, 32).unwrap(),
                "{n} layers, fa {fa}"
            );
        }
    }
}
