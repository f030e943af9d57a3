//! The replayed planner over DeepSeek-2/3's graph (`engines::llamacpp::graph_mla`) and Mamba-2's
//! (`graph_mamba2`): their capacity holds the largest graph planned, and the layer shortcut (the
//! leading dense layers, then 7–12 layers for any number) gives the buffer of every layer planned.
//! Their figures against llama.cpp are in tests/measured_llamacpp.rs.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use vram_explorer::estimator::engines::llamacpp::compute::{
    GRAPH_TENSORS, MAX_DENSE_LEAD, MAX_EXPERTS_USED, MLA_GRAPH_TENSORS, replayed_layers,
};
use vram_explorer::estimator::engines::llamacpp::dims::MlaDims;
use vram_explorer::estimator::engines::llamacpp::gallocr::plan;
use vram_explorer::estimator::engines::llamacpp::ggml::{Graph, Ty};
use vram_explorer::estimator::engines::llamacpp::graph_mamba2::{self, MambaShape};
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
    common::on_big_stack(shortcut_holds);
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

/// Mamba2-2.7B's layer (2560 wide, d_inner 5120 in 80 heads, d_state 128) at `n_layer` layers,
/// `n_seqs` sequences of the 512-token ubatch.
fn mamba(n_layer: u32, n_seqs: u64, n_group: u64) -> MambaShape {
    MambaShape {
        n_layer,
        n_embd: 2560,
        d_inner: 5120,
        n_head: 80,
        d_state: 128,
        n_group,
        d_conv: 4,
        n_vocab: 50_288,
        n_tokens: 512,
        n_outputs: 512,
        n_seqs,
    }
}

/// Up to Mamba2-2.7B's 64 layers, one and four sequences, one group and eight: the 12 layers the
/// replay plans at most fit its graph, and the shortcut gives every layer's buffer.
#[test]
fn the_mamba2_layer_shortcut_gives_the_buffer_of_every_layer_planned() {
    common::on_big_stack(|| {
        for (n_seqs, groups) in [(1, 1), (4, 1), (1, 8)] {
            let mut small = Box::new(Graph::<GRAPH_TENSORS>::default());
            graph_mamba2::build(&mut small, &mamba(12, n_seqs, groups));
            assert!(!small.full);
            for n in (2..=64).step_by(5) {
                let mut full = Box::new(Graph::<8192>::default());
                graph_mamba2::build(&mut full, &mamba(n, n_seqs, groups));
                assert!(!full.full);
                let mut short = Box::new(Graph::<GRAPH_TENSORS>::default());
                graph_mamba2::build(&mut short, &mamba(replayed_layers(n), n_seqs, groups));
                assert_eq!(
                    plan(&full, 32).unwrap(),
                    plan(&short, 32).unwrap(),
                    "{n} layers, {n_seqs} sequences, {groups} groups"
                );
            }
        }
    });
}
