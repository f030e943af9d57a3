//! The replayed llama.cpp compute-buffer planner (`engines::llamacpp::{ggml, gallocr,
//! graph_llama}`): its rules on small graphs, and the layer shortcut the estimator takes
//! (`compute::replayed_layers`: a model of more than 12 layers is planned with 7–12 layers of
//! the same remainder modulo 6). Its figures against llama.cpp itself are in
//! tests/measured_llamacpp.rs (every CPU load measured here, to 0.0001 MiB).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use vram_explorer::estimator::engines::llamacpp::compute::{
    GRAPH_TENSORS, MAX_EXPERTS_USED, replayed_layers,
};
use vram_explorer::estimator::engines::llamacpp::gallocr::plan;
use vram_explorer::estimator::engines::llamacpp::ggml::{Graph, NONE, Op, Ty};
use vram_explorer::estimator::engines::llamacpp::graph_llama::{Devices, HostTypes, Shape, build};

const MIB: u64 = 1 << 20;

#[test]
fn an_op_that_may_run_in_place_reuses_its_only_consumers_source() {
    // x (input, 1 MiB) -> y: in place (RMS_NORM, MUL, ADD, …) y needs no memory of its own.
    let peak = |op: Op| {
        let mut g = Graph::<8>::default();
        let x = g.input(Ty::F32, [256, 1024, 1, 1]);
        let y = g.like(x, op, [x, NONE, NONE, NONE]);
        g.expand(y);
        plan(&g, 32).unwrap()
    };
    assert_eq!(peak(Op::Inplace), MIB);
    assert_eq!(peak(Op::Other), 2 * MIB);
    // Not when the source has another consumer still to run.
    let mut g = Graph::<8>::default();
    let x = g.input(Ty::F32, [256, 1024, 1, 1]);
    let y = g.like(x, Op::Inplace, [x, NONE, NONE, NONE]);
    let z = g.like(y, Op::Other, [y, x, NONE, NONE]);
    g.expand(z);
    assert_eq!(plan(&g, 32).unwrap(), 3 * MIB);
}

#[test]
fn an_input_without_consumers_and_outputs_are_never_freed() {
    let mut g = Graph::<16>::default();
    let unused = g.input(Ty::F32, [256, 1024, 1, 1]);
    let x = g.input(Ty::F32, [256, 1024, 1, 1]);
    let w = g.external(Ty::F16, [256, 256, 1, 1]);
    let y = g.mul_mat(w, x);
    g.set_output(y);
    let z = g.mul_mat(w, y);
    let z2 = g.mul_mat(w, z);
    g.expand(unused);
    g.expand(z2);
    // unused 1 + x 1 (freed after y) + y 1 (output, kept) + z in x's hole + z2: 4 MiB.
    assert_eq!(plan(&g, 32).unwrap(), 4 * MIB);
}

#[test]
fn a_view_keeps_its_source_alive_until_the_view_is_read() {
    let mut g = Graph::<16>::default();
    let w = g.external(Ty::F16, [256, 256, 1, 1]);
    let x = g.input(Ty::F32, [256, 1024, 1, 1]);
    let a = g.mul_mat(w, x); // 1 MiB
    let v = g.reshape(a, [256, 4, 256, 1]);
    let b = g.mul_mat(w, x); // 1 MiB, while a is alive through its view
    let c = g.like(b, Op::Other, [b, v, NONE, NONE]);
    g.expand(c);
    // x, a (held by v until c has read it) and b: 3 MiB; c then takes x's place. Were a freed
    // when v was made, b would take its place: 2 MiB.
    assert_eq!(plan(&g, 32).unwrap(), 3 * MIB);
}

fn shape(
    n_layer: u32,
    dims: (u64, u64, u64, u64, u64),
    t: u64,
    n_kv: u64,
    fa: bool,
    q: bool,
) -> Shape {
    moe_shape(n_layer, dims, (0, 0), t, n_kv, fa, q)
}

fn moe_shape(
    n_layer: u32,
    dims: (u64, u64, u64, u64, u64),
    (n_expert, n_expert_used): (u64, u64),
    t: u64,
    n_kv: u64,
    fa: bool,
    q: bool,
) -> Shape {
    let (n_embd, n_head, n_head_kv, n_ff, n_vocab) = dims;
    let cache = if q {
        Ty::Block {
            elems: 32,
            bytes: 34,
        }
    } else {
        Ty::F16
    };
    Shape {
        n_layer,
        n_embd,
        n_head,
        n_head_kv,
        head_dim: n_embd / n_head,
        n_ff,
        n_vocab,
        n_tokens: t,
        n_outputs: t,
        n_kv,
        flash_attn: fa,
        type_k: cache,
        type_v: cache,
        qk_norm: false,
        n_expert,
        n_expert_used,
        n_ff_shexp: 0,
        gemma: false,
        swa_kv: 0,
        swa_period: 0,
        devices: Devices::default(),
        head_ty: Ty::F16,
        host_ty: HostTypes::default(),
        legacy: false,
    }
}

/// The estimator plans at most 12 layers; planning every layer of a deeper model gives the same
/// buffer. Shapes of Llama-3-8B / 70B, Llama-2-7B, Qwen2.5-7B and the small ones measured here,
/// whose planner states repeat with period 1 or 2 (tiny-b's alternates); up to 40 layers.
#[test]
fn planning_twelve_layers_gives_the_buffer_of_every_layer_planned() {
    let dims = [
        (4096, 32, 8, 14336, 128_256),
        (8192, 64, 8, 28672, 128_256),
        (4096, 32, 32, 11008, 32000),
        (3584, 28, 4, 18944, 152_064),
        (512, 8, 8, 1024, 4096),
        (256, 4, 2, 688, 1024),
    ];
    let mut checked = 0;
    for d in dims {
        for (t, n_kv) in [(512, 256), (512, 4096), (128, 32768), (2048, 8192)] {
            for (fa, q) in [(false, false), (true, false), (true, true)] {
                for n in [13, 14, 19, 26, 32, 40] {
                    shortcut_holds::<2048>(n, |n| shape(n, d, t, n_kv, fa, q));
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 6 * 4 * 3 * 6);
}

/// The same for mixture-of-experts layers (`graph_moe`): Qwen3-30B-A3B's and Mixtral's widths,
/// 1 to 16 experts used, with and without Qwen2-MoE's shared expert, up to 48 layers
/// (Qwen3-30B-A3B's count).
#[test]
fn planning_twelve_moe_layers_gives_the_buffer_of_every_layer_planned() {
    // Graphs of 48 MoE layers outgrow a test thread's 2 MiB stack in a debug build.
    common::on_big_stack(moe_layers_shortcut);
}

fn moe_layers_shortcut() {
    // The last two: Qwen2-MoE's layers (a gated shared expert; Qwen1.5-MoE-A2.7B's, Qwen2-57B-A14B's).
    let models = [
        ((2048, 32, 4, 768, 151_936), (128, 8), 0),
        ((4096, 32, 8, 14336, 32000), (8, 2), 0),
        ((512, 8, 2, 384, 4096), (4, 1), 0),
        ((1024, 16, 4, 512, 8192), (64, 16), 0),
        ((2048, 16, 16, 1408, 151_936), (60, 4), 5632),
        ((3584, 28, 4, 2560, 151_936), (64, 8), 20480),
    ];
    let mut checked = 0;
    for (d, e, shexp) in models {
        let shape = |n, t, n_kv, fa, q| Shape {
            n_ff_shexp: shexp,
            ..moe_shape(n, d, e, t, n_kv, fa, q)
        };
        for (t, n_kv) in [(512, 4096), (2048, 8192), (128, 32768)] {
            for (fa, q) in [(false, false), (true, false), (true, true)] {
                for n in [13, 17, 24, 48] {
                    shortcut_holds::<8192>(n, |n| shape(n, t, n_kv, fa, q));
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 6 * 3 * 3 * 4);
}

#[test]
fn the_shortcut_keeps_small_models_whole_and_the_remainder_modulo_six() {
    for n in 1..=12 {
        assert_eq!(replayed_layers(n), n);
    }
    for n in 13..=200 {
        let r = replayed_layers(n);
        assert!(
            (7..=12).contains(&r) && (n - r).is_multiple_of(6),
            "{n} -> {r}"
        );
    }
}

#[test]
fn a_graph_beyond_the_replays_capacity_is_not_planned() {
    let mut g = Graph::<4>::default();
    let x = g.input(Ty::F32, [256, 1024, 1, 1]);
    let mut y = x;
    for _ in 0..4 {
        y = g.like(y, Op::Other, [y, NONE, NONE, NONE]);
    }
    g.expand(y);
    assert!(g.full);
    assert_eq!(plan(&g, 32), None);
}

/// The estimator's graph holds the largest reserve it plans (12 replayed layers with Q/K norms, a
/// q8_0 cache's rotations, no flash attention and the most experts used with a shared one): were
/// it too small, the
/// plan would silently fall back to the closed form.
#[test]
fn the_replays_capacity_holds_the_largest_graph_it_plans() {
    let q = (true, true);
    for (e, k) in [(0, 0), (128, MAX_EXPERTS_USED)] {
        for (fa, q8) in [(false, q.1), (true, q.1), (false, false)] {
            let mut s = moe_shape(12, (4096, 32, 8, 1024, 32000), (e, k), 512, 4096, fa, q8);
            s.qk_norm = q.0;
            // Gemma 3's layers add post-norms, scales and a second cache's inputs; Qwen2-MoE's a
            // gated shared expert (the replay's largest MoE layer).
            (s.gemma, s.swa_kv, s.swa_period) = (e == 0, 1536, 6);
            s.n_ff_shexp = if e > 0 { 2048 } else { 0 };
            let mut g = Box::new(Graph::<GRAPH_TENSORS>::default());
            build(&mut g, &s);
            assert!(!g.full, "{e} experts, {k} used, fa {fa}, q8_0 {q8}");
            assert!(plan(&g, 32).is_some());
        }
    }
}

/// Gemma 3's layers (Q/K norms, post-norms, the sliding-window cache on five layers of six): the
/// shortcut keeps the replayed layers' places in the 6-layer pattern, so the last layer is windowed
/// or global as in the whole model. Gemma-3-1B's and 27B's widths, up to 62 layers.
#[test]
fn planning_twelve_gemma3_layers_gives_the_buffer_of_every_layer_planned() {
    common::on_big_stack(gemma3_layers_shortcut);
}

fn gemma3_layers_shortcut() {
    let models = [
        ((1152, 4, 1, 6912, 4096), 256, 512),
        ((5376, 32, 16, 21504, 262_208), 128, 1024),
    ];
    let mut checked = 0;
    for (d, head_dim, window) in models {
        for (t, n_kv) in [(512, 4096), (128, 32768), (2048, 8192)] {
            for (fa, q) in [(false, false), (true, false), (true, true)] {
                for n in [13, 26, 34, 48, 62] {
                    let gemma = |layers| {
                        let mut s = moe_shape(layers, d, (0, 0), t, n_kv, fa, q);
                        s.head_dim = head_dim;
                        s.qk_norm = true;
                        s.gemma = true;
                        s.swa_kv = (window + t).div_ceil(256) * 256;
                        s.swa_period = 6;
                        s
                    };
                    shortcut_holds::<8192>(n, &gemma);
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 2 * 3 * 3 * 5);
}

/// The buffer planned for `n` layers equals the one planned for the replayed layers
/// ([`replayed_layers`]) in a graph of `N` tensors; `shape(n)` is the reserve of `n` layers (the
/// panic names it).
fn shortcut_holds<const N: usize>(n: u32, shape: impl Fn(u32) -> Shape) {
    let mut full = Box::new(Graph::<N>::default());
    build(&mut full, &shape(n));
    assert!(!full.full);
    let mut short = Box::new(Graph::<N>::default());
    build(&mut short, &shape(replayed_layers(n)));
    assert_eq!(
        plan(&full, 32).unwrap(),
        plan(&short, 32).unwrap(),
        "{:?}: {n} layers",
        shape(n)
    );
}
