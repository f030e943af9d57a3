//! llama-server's `-fit` for an unset `-c` (llama.cpp@0c1e57098 common/fit.cpp, docs/engines/llamacpp.md
//! §9): the training context, lowered on one GPU to leave the fit target free.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::engines::llamacpp::Buffers;
use vram_explorer::estimator::{Estimate, estimate};
use vram_explorer::presets;
use vram_explorer::scenario::engine_args_llamacpp::apply;

fn run(cmd: &str, preset: &str) -> (Estimate, Buffers) {
    let sc = presets::bundled_scenario(preset).unwrap();
    let (s, _) = apply(&sc, cmd).unwrap();
    let e = estimate(&s);
    let b = e.llamacpp.unwrap();
    (e, b)
}

const CMD: &str = "llama-server -m Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf -ngl 99 -np 1";

/// Llama-3.1-8B Q4_K_M (trained at 131,072 tokens) on a 12 GB card: its 16 GiB of KV at the training
/// context do not fit, so `-fit` interpolates to the context that leaves 1,024 MiB free.
#[test]
fn an_unset_context_is_lowered_to_leave_the_target_free() {
    let (e, b) = run(CMD, "llama31-8b-q4km-llamacpp-12gb");
    let f = b.fit.unwrap();
    assert_eq!((f.from, f.to, b.n_ctx), (131_072, 50_688, 50_688));
    assert_eq!(f.target, 1 << 30);
    let used = b.dev[0].total();
    // Within one 256-cell step (128 KiB a cell) of the target, never past it.
    assert!(used <= f.free - f.target, "{used} > {}", f.free - f.target);
    assert!(f.free - f.target - used < 256 * 131_072 + (8 << 20));
    assert!(e.memory.fits);
}

/// What turns it off or leaves nothing to do: `-fit off`, an explicit `-c 0` (the full context),
/// `-c` itself, and a GPU with room for the training context.
#[test]
fn the_fit_applies_only_to_an_unset_context_that_does_not_fit() {
    let preset = "llama31-8b-q4km-llamacpp-12gb";
    let (e, b) = run(&format!("{CMD} -fit off"), preset);
    assert_eq!((b.fit, b.n_ctx), (None, 131_072));
    assert!(!e.memory.fits);
    let (_, b) = run(&format!("{CMD} -c 0"), preset);
    assert_eq!((b.fit.unwrap().to, b.n_ctx), (131_072, 131_072));
    let (_, b) = run(&format!("{CMD} -c 8192"), preset);
    assert_eq!((b.fit, b.n_ctx), (None, 8192));
    let (_, b) = run(
        "llama-server -m Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf -ngl 99 -np 1",
        "llama3.1-8b-vllm-h100-8k",
    );
    let f = b.fit.unwrap();
    assert!(!f.reduced(), "{f:?}");
    assert_eq!(b.n_ctx, 131_072);
    // A larger target leaves more free: a smaller context.
    let (_, b) = run(&format!("{CMD} -fitt 4096"), preset);
    assert!(b.n_ctx < 50_432 && b.n_ctx % 256 == 0, "{}", b.n_ctx);
    // Never below --fit-ctx: the estimate then keeps it (llama-server would lower -ngl).
    let (_, b) = run(&format!("{CMD} -fitc 65536"), preset);
    assert_eq!(b.n_ctx, 65_536);
}

/// Without a unified cache each of the `-np` streams gets the training context before fitting
/// (fit.cpp: "context size unset and KV cache not unified -> using n_ctx_max for n sequences").
#[test]
fn split_streams_start_from_the_training_context_each() {
    let cmd = "llama-server -m Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf -ngl 99 -np 2";
    let (_, b) = run(cmd, "llama3.1-8b-vllm-h100-8k");
    let f = b.fit.unwrap();
    assert_eq!(f.from, 2 * 131_072);
    assert_eq!(b.n_stream, 2);
    assert_eq!(f.to % 512, 0, "a multiple of 256 × streams");
}

/// With `-c` set and `-ngl` unset, a dense model that does not fit gets step 3: the most layers
/// from the back whose buffers leave the target free (Llama-3.1-8B in F16, 15 GiB, on 12 GB).
#[test]
fn an_unset_ngl_is_lowered_to_the_layers_that_fit() {
    let preset = "llama31-8b-q4km-llamacpp-12gb";
    let cmd = "llama-server -m Meta-Llama-3.1-8B-Instruct-F16.gguf -c 8192 -np 1";
    let (e, b) = run(cmd, preset);
    let f = b.fit.unwrap();
    let ngl = f.ngl.unwrap();
    assert!((1..33).contains(&ngl), "{ngl}");
    assert_eq!((f.from, f.to, b.n_ctx), (8192, 8192, 8192));
    let used = b.dev[0].total();
    assert!(used <= f.free - f.target, "{used}");
    assert!(e.memory.fits);
    // One layer more would not leave the target free.
    let (_, more) = run(&format!("{cmd} -ngl {}", ngl + 1), preset);
    assert!(more.dev[0].total() > f.free - f.target);
    // -ngl given: llama-server keeps it (and the estimate says it does not fit).
    let (e, b) = run(&format!("{cmd} -ngl 99"), preset);
    assert!(b.fit.is_none() && !e.memory.fits);
}

/// A mixture of experts with `-ngl` unset (steps 3–4): every layer on the GPU with its routed
/// experts in host memory first, then the experts of the front layers back on the GPU while the
/// target stays free. Qwen3-30B-A3B Q4_K_M at 32K on 12 GB: the experts of layers 19–47 stay on
/// the host (every expert on the GPU would not fit); the user's own overrides turn it off.
#[test]
fn a_mixture_of_experts_keeps_the_back_layers_experts_on_the_host() {
    let preset = "qwen3-30b-a3b-q4km-llamacpp-12gb";
    let cmd = "llama-server -m Qwen3-30B-A3B-Q4_K_M.gguf -c 32768 -np 1";
    let (e, b) = run(cmd, preset);
    let f = b.fit.unwrap();
    assert_eq!((f.ngl, f.experts_host), (Some(49), Some((19, 48))));
    assert_eq!(b.experts_host, (19, 48));
    assert!(b.dev[0].total() <= f.free - f.target);
    assert!(e.memory.fits);
    // Every expert on the GPU would pass the target.
    let sc = presets::bundled_scenario(preset).unwrap();
    let (one_more, _) = apply(&sc, &format!("{cmd} -ngl 49 --n-cpu-moe 0")).unwrap();
    let full = estimate(&one_more).llamacpp.unwrap();
    assert!(full.dev[0].total() > f.free - f.target);
    assert!(b.host_experts > 0 && b.dev[0].experts > 0);
    // --n-cpu-moe set by the user: -fit's layer steps do not run; nor with an -ot pattern the
    // estimator does not follow (any override stops them in llama.cpp).
    let (_, b) = run(&format!("{cmd} --n-cpu-moe 28"), preset);
    assert_eq!(b.fit.map(|f| f.experts_host), None);
    assert_eq!(b.experts_host, (0, 28));
    let (_, b) = run(&format!(r"{cmd} -ot blk\.4[0-7]\.ffn_.*_exps=CPU"), preset);
    assert!(b.settings.other_overrides);
    assert_eq!(
        (b.fit.map(|f| f.experts_host), b.experts_host),
        (None, (0, 0))
    );
}
