//! The scheduler replay (`engines::llamacpp::sched`): a GPU build's compute buffers from the
//! split of the reserve graph between the GPUs and the CPU, the copies each split makes of its
//! inputs, and the planner over each backend. Against the published logs its figures are exact
//! (tests/published_llamacpp.rs); here, what the replay itself must hold: shortening each GPU's
//! run of layers changes nothing, pipeline parallelism's copies cost what the scheduler keeps,
//! and the norms llama.cpp pins keep one tensor crossing each GPU boundary.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

mod common;

use vram_explorer::estimator::engines::llamacpp::ComputeBasis;
use vram_explorer::estimator::engines::llamacpp::compute::replayed_layers;
use vram_explorer::estimator::engines::llamacpp::ggml::{Graph, HOST, Ty};
use vram_explorer::estimator::engines::llamacpp::graph_llama::{
    Devices, HostTypes, Shape, build, ggml_ty,
};
use vram_explorer::estimator::engines::llamacpp::sched::{self, Reserved};
use vram_explorer::tensor::GgufType;

const MIB: u64 = 1 << 20;

/// Qwen2.5-32B's dimensions (the published two-GPU log), 512 tokens over `n_kv` cells.
fn qwen32b(devices: Devices, n_kv: u64, legacy: bool) -> Shape {
    Shape {
        n_layer: devices.layers.iter().sum(),
        n_embd: 5120,
        n_head: 40,
        n_head_kv: 8,
        head_dim: 128,
        n_ff: 27_648,
        n_vocab: 152_064,
        n_tokens: 512,
        n_outputs: 512,
        n_kv,
        flash_attn: false,
        type_k: Ty::F16,
        type_v: Ty::F16,
        qk_norm: false,
        n_expert: 0,
        n_expert_used: 0,
        n_ff_shexp: 0,
        gemma: false,
        swa_kv: 0,
        swa_period: 0,
        devices,
        head_ty: Ty::F16,
        host_ty: HostTypes::default(),
        legacy,
    }
}

fn two(a: u32, b: u32) -> Devices {
    Devices {
        host_layers: 0,
        layers: [a, b, 0, 0, 0, 0, 0, 0],
        output: 1,
    }
}

fn reserve(s: &Shape, gpus: usize, copies: usize) -> Reserved {
    let mut g = Box::new(Graph::<8192>::default());
    build(&mut g, s);
    sched::reserve(&mut g, gpus, copies, true).expect("the replay holds the graph")
}

#[test]
fn each_gpus_layers_shorten_as_a_whole_models_do() {
    common::on_big_stack(|| {
        for (a, b) in [(33, 31), (40, 40), (20, 61), (13, 14)] {
            let short = two(replayed_layers(a), replayed_layers(b));
            for copies in [1, 4] {
                for legacy in [true, false] {
                    let full = reserve(&qwen32b(two(a, b), 2048, legacy), 2, copies);
                    let cut = reserve(&qwen32b(short, 2048, legacy), 2, copies);
                    assert_eq!(full, cut, "{a}/{b}, {copies} copies, legacy {legacy}");
                }
            }
        }
    });
}

#[test]
fn the_published_two_gpu_log_to_the_printed_hundredth() {
    common::on_big_stack(|| {
        // Ollama issue #9068: 33 / 31 layers, the output on CUDA1, n_copies = 4.
        let r = reserve(&qwen32b(two(9, 7), 2048, true), 2, 4);
        let printed = |b: u64| (b as f64 / MIB as f64 * 100.0).round() / 100.0;
        assert_eq!(printed(r.gpu[0]), 256.01);
        assert_eq!(printed(r.gpu[1]), 363.02);
        assert_eq!(printed(r.host), 26.02);
    });
}

#[test]
fn pipeline_copies_are_kept_n_copies_times() {
    common::on_big_stack(|| {
        let one = reserve(&qwen32b(two(9, 7), 2048, true), 2, 1);
        let four = reserve(&qwen32b(two(9, 7), 2048, true), 2, 4);
        // The host keeps four copies of the graph's inputs: token ids, positions and output ids
        // (2 KiB each) and the F32 mask (4 MiB); the embedding rows are a node, not an input.
        let inputs = 3 * 2048 + 4 * MIB;
        assert_eq!(four.host - one.host, 3 * inputs);
        // CUDA1 takes one tensor from CUDA0, the residual (its first norm is pinned to CUDA1),
        // and the host's mask, positions and output ids. With one copy all of them are freed
        // before CUDA1's peak (the logits); with four, all four copies stay for good.
        let crossing = 10 * MIB + 4 * MIB + 2048 + 2048;
        assert_eq!(four.gpu[1] - one.gpu[1], 4 * crossing);
    });
}

#[test]
fn the_current_graph_adds_its_row_indices_and_embeddings_input() {
    common::on_big_stack(|| {
        let old = reserve(&qwen32b(two(9, 7), 2048, true), 2, 1);
        let new = reserve(&qwen32b(two(9, 7), 2048, false), 2, 1);
        // The host: the unused embeddings input (10 MiB), K row indices (512 × 8 B) and V's, one
        // per element of the transposed V (512 × 1024 × 8 B = 4 MiB).
        assert_eq!(new.host - old.host, 10 * MIB + 4096 + 4 * MIB);
        // CUDA0 copies both index inputs in.
        assert_eq!(new.gpu[0] - old.gpu[0], 4096 + 4 * MIB);
    });
}

#[test]
fn a_graph_beyond_the_replays_capacity_is_not_planned() {
    common::on_big_stack(|| {
        let mut g = Box::new(Graph::<512>::default());
        build(&mut g, &qwen32b(two(9, 7), 2048, false));
        assert!(sched::reserve(&mut g, 2, 4, true).is_none());
    });
}

/// The scheduler's dependency node (`ggml_view_tensor`, no op) is a consumer of the input it
/// copies, not a view pinning it: once the copy is made the source's memory is reused by the
/// next tensor of its backend (ggml-alloc.c counts views only with an op).
#[test]
fn a_copied_inputs_source_is_freed_after_its_copy() {
    use vram_explorer::estimator::engines::llamacpp::gallocr::{Buffers, plan_in};
    use vram_explorer::estimator::engines::llamacpp::ggml::{NONE, Op};
    let mut g = Graph::<16>::default();
    let x = g.input(Ty::F32, [MIB / 4, 1, 1, 1]);
    // `a` on backend 0, copied to backend 1 (dependency, copy, its consumer), then a tensor of
    // the same size on backend 0 again.
    let a = g.op(
        Ty::F32,
        [MIB / 4, 1, 1, 1],
        Op::Other,
        [x, NONE, NONE, NONE],
    );
    let dep = g.dep_view(a);
    let copy = g.dup_layout(a);
    let use_copy = g.op(
        Ty::F32,
        [MIB / 4, 1, 1, 1],
        Op::Other,
        [copy, NONE, NONE, NONE],
    );
    let again = g.op(
        Ty::F32,
        [MIB / 4, 1, 1, 1],
        Op::Other,
        [x, NONE, NONE, NONE],
    );
    let mut of = [0u8; 16];
    for id in [copy, use_copy] {
        of[usize::from(id)] = 1;
    }
    let bufs = Buffers {
        of: &of,
        align: &[32, 32],
        cuda: &[false, false],
    };
    let max = plan_in(&g, &[x], &[a, dep, copy, use_copy, again], &bufs).unwrap();
    // Backend 0: the input and one 1 MiB tensor at a time (`again` takes `a`'s place).
    assert_eq!(max[0], 2 * MIB);
    // Backend 1: the copy and its consumer.
    assert_eq!(max[1], 2 * MIB);
}

/// The llama.cpp buffers of the Llama-3.1-8B preset under `cmd`, with or without the older
/// graph.
fn buffers(cmd: &str, legacy: bool) -> vram_explorer::estimator::engines::llamacpp::Buffers {
    let sc = vram_explorer::presets::bundled_scenario("llama31-8b-q4km-llamacpp-12gb").unwrap();
    let (mut s, _) = vram_explorer::scenario::engine_args_llamacpp::apply(&sc, cmd).unwrap();
    if let Some(vram_explorer::scenario::ServingEngine::LlamaCpp(l)) = s.inference.engine.as_mut() {
        l.legacy_graph = legacy;
    }
    vram_explorer::estimator::estimate(&s).llamacpp.unwrap()
}

/// The older graph (`legacy_graph`): one cache attended in full whatever the streams (builds of
/// that era had no per-sequence streams), and a mask of `pad(T, 32)` rows.
#[test]
fn the_older_graph_attends_every_cell_and_pads_its_mask() {
    let cmd = "llama-server -m Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf -c 8192 -ngl 99 -fa off";
    let legacy = |extra: &str| buffers(&format!("{cmd} {extra}"), true);
    let streams = legacy("-np 4");
    let unified = legacy("-np 4 -kvu");
    assert_eq!(
        streams.compute_basis,
        ComputeBasis::Replayed { legacy_graph: true }
    );
    assert_eq!(streams.dev[0].compute, unified.dev[0].compute);
    assert_eq!(streams.host_compute, unified.host_compute);
    // 100 tokens: the host's F32 mask has 128 rows of 8,192 cells.
    let small = legacy("-np 1 -ub 100 -b 100");
    let tokens = 100 * 4 + 32 - (100 * 4) % 32;
    let embd = 100 * 4096 * 4;
    assert_eq!(small.host_compute, embd + 8192 * 128 * 4 + 3 * tokens);
    // The current graph (not asked for) differs.
    let current = buffers(&format!("{cmd} -np 4 -kvu"), false);
    assert_eq!(
        current.compute_basis,
        ComputeBasis::Replayed {
            legacy_graph: false
        }
    );
    assert!(current.dev[0].compute > unified.dev[0].compute);
}

/// The replay with op offload on or off.
fn reserve_offload(s: &Shape, gpus: usize, op_offload: bool) -> Reserved {
    let mut g = Box::new(Graph::<8192>::default());
    build(&mut g, s);
    sched::reserve(&mut g, gpus, 1, op_offload).expect("the replay holds the graph")
}

/// `-ngl` = the layer count: the output layer stays in host memory, and op offload runs the
/// 512-token logits product on the first GPU ("1.off"), in a split of its own that copies the
/// host's output matrix in (pass 5's new split for a weight on another backend). At that split
/// the first GPU's own layers are done, so its buffer holds exactly the normed input, the
/// matrix's copy and the logits; the norm weight's copy is freed before the matrix's.
#[test]
fn a_host_output_is_multiplied_on_the_first_gpu_on_a_copy_of_its_matrix() {
    common::on_big_stack(|| {
        let mut devices = two(9, 7);
        devices.output = HOST;
        let s = qwen32b(devices, 2048, true);
        let on = reserve_offload(&s, 2, true);
        let head = 152_064 * 5120 * 2;
        let logits = 152_064 * 512 * 4;
        let normed = 5120 * 512 * 4;
        assert_eq!(on.gpu[0], normed + head + logits);
        // Without op offload (`-nopo`) the host runs its output: no GPU copies the matrix, and
        // the host's peak is the normed input copied back from CUDA1 and the logits (the inputs'
        // memory is free again by then).
        let off = reserve_offload(&s, 2, false);
        assert!(off.gpu[0] < head, "{off:?}");
        assert_eq!(off.host, normed + logits);
    });
}

/// A quantized copy in a CUDA buffer pads its last row to 512 elements
/// (`ggml_backend_cuda_buffer_type_get_alloc_size`): a Q4_K output matrix of 5,120-wide rows
/// (10 × 512) needs nothing more; one of 4,864-wide rows (19 Q4_K blocks of 256, 256 elements
/// short of 10 × 512) one more Q4_K block, 144 B.
#[test]
fn a_quantized_copy_on_a_gpu_pads_its_rows() {
    common::on_big_stack(|| {
        let q4k = ggml_ty(GgufType::Q4K);
        let mut devices = two(9, 7);
        devices.output = HOST;
        let mut s = qwen32b(devices, 2048, true);
        s.head_ty = q4k;
        let aligned = reserve_offload(&s, 2, true).gpu[0];
        assert_eq!(
            aligned,
            5120 * 512 * 4 + 152_064 * 5120 / 256 * 144 + 152_064 * 512 * 4
        );
        let mut narrow = s;
        narrow.n_embd = 4864;
        let r = reserve_offload(&narrow, 2, true).gpu[0];
        let matrix = 152_064 * 4864 / 256 * 144 + 144;
        let aligned_to_128 = |b: u64| b.div_ceil(128) * 128;
        assert_eq!(
            r,
            aligned_to_128(4864 * 512 * 4) + aligned_to_128(matrix) + 152_064 * 512 * 4
        );
    });
}

/// Builds before late 2025 put `-ngl N` on the last N repeating layers (and the output only past
/// them); later ones count the output among the N.
#[test]
fn older_builds_offload_the_last_ngl_repeating_layers() {
    use vram_explorer::estimator::engines::llamacpp::placement::Placement;
    let even = [0.0; vram_explorer::scenario::MAX_SPLIT];
    let old = Placement::new(32, 32, 4, &even).with_legacy_start(true);
    let new = Placement::new(32, 32, 4, &even);
    let on = |p: &Placement| (0..=32).map(|il| p.device(il)).collect::<Vec<_>>();
    let o = on(&old);
    assert_eq!(o[32], None, "the output stays on the host");
    for k in 0..4 {
        assert_eq!(o.iter().filter(|&&d| d == Some(k)).count(), 8);
    }
    let n = on(&new);
    assert_eq!(n[0], None, "layer 0 stays on the host");
    assert!(n[32].is_some(), "the output is on a GPU");
    // Past the repeating layers both agree.
    for ngl in [33, -1] {
        assert_eq!(
            on(&Placement::new(32, ngl, 4, &even).with_legacy_start(true)),
            on(&Placement::new(32, ngl, 4, &even))
        );
    }
}

/// `two(a, b)` with the first `h` layers in host memory and the output on CUDA1.
fn with_host(h: u32, a: u32, b: u32) -> Devices {
    Devices {
        host_layers: h,
        ..two(a, b)
    }
}

/// A run of host layers shortens as the GPUs' runs do: each host layer copies its own weights to
/// the first GPU and frees them after use, so the planner's state repeats (both graphs, flash
/// attention on and off).
#[test]
fn host_layers_shorten_as_gpu_layers_do() {
    common::on_big_stack(|| {
        for h in [13, 20, 25] {
            for legacy in [true, false] {
                for fa in [true, false] {
                    let shape = |h: u32| Shape {
                        flash_attn: fa,
                        ..qwen32b(with_host(h, 5, 4), 2048, legacy)
                    };
                    let full = reserve_offload(&shape(h), 2, true);
                    let cut = reserve_offload(&shape(replayed_layers(h)), 2, true);
                    assert_eq!(full, cut, "{h} host layers, legacy {legacy}, fa {fa}");
                }
            }
        }
    });
}

/// With op offload, a prompt's host layer runs on the first GPU: each of its matrices is copied
/// in and freed after its product, and its cache's K and V views are copied in for the attention
/// (the host keeps the cache; the attention has no weight and follows its GPU neighbours). So the
/// first GPU holds at least the largest matrix with its operands, and at least both cache views
/// with the scores. Without op offload the host layers stay on the CPU and no GPU copies them.
#[test]
fn host_layers_run_on_the_first_gpu_under_op_offload() {
    common::on_big_stack(|| {
        let s = qwen32b(with_host(2, 5, 4), 2048, false);
        let on = reserve_offload(&s, 2, true);
        let gpu_only = reserve_offload(&qwen32b(with_host(0, 5, 4), 2048, false), 2, true);
        let t = 512;
        let down = 27_648 * 5120 * 2;
        let (act, residual) = (27_648 * t * 4, 5120 * t * 4);
        assert!(on.gpu[0] >= down + act + 2 * residual, "{on:?}");
        let kv_view = 2048 * 1024 * 2;
        let scores = 2048 * t * 40 * 4;
        assert!(on.gpu[0] >= 2 * kv_view + scores, "{on:?}");
        assert!(on.gpu[0] > gpu_only.gpu[0]);
        // One host layer or two: the copies are made and freed layer by layer.
        let one = reserve_offload(&qwen32b(with_host(1, 5, 4), 2048, false), 2, true);
        assert_eq!(one.gpu[0], on.gpu[0]);
        let off = reserve_offload(&s, 2, false);
        assert!(off.gpu[0] < down, "{off:?}");
        assert!(off.host >= scores, "{off:?}");
    });
}

/// Since early 2026 CUDA allocates flash attention's output with F16 copies of a K and V cache of
/// another type behind it (the prompt's MMA or tile kernel reads F16): at 65,536 cells of
/// Qwen2.5-32B's 8 × 128-wide KV heads a q8_0 cache adds 2 × 128 MiB to the node. The older
/// graph's builds had no such allocation.
#[test]
fn flash_attention_allocates_f16_copies_of_a_quantized_cache() {
    common::on_big_stack(|| {
        let q8 = ggml_ty(GgufType::Q8_0);
        let at = |ty: Ty, legacy: bool| {
            let s = Shape {
                flash_attn: true,
                type_k: ty,
                type_v: ty,
                ..qwen32b(two(3, 2), 65_536, legacy)
            };
            reserve(&s, 2, 1)
        };
        let copies = 2 * 65_536 * 1024 * 2;
        let mask = 65_536 * 512 * 2;
        let (f16, q8_0) = (at(Ty::F16, false), at(q8, false));
        assert!(q8_0.gpu[0] > f16.gpu[0], "{q8_0:?} vs {f16:?}");
        assert!(q8_0.gpu[0] >= copies + mask, "{q8_0:?}");
        assert_eq!(at(q8, true), at(Ty::F16, true));
    });
}
