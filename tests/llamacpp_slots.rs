//! llama.cpp's slots: `-np` and `--kv-unified` as a pasted command sets them (llama-server's `-np`
//! auto = 4 slots sharing one unified cache, tools/server/server.cpp at llama.cpp@0c1e57098) and
//! what they change in the buffers (docs/engines/llamacpp.md §9; the CPU loads measured with them are
//! checked in tests/measured_llamacpp.rs).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::solver::{Solved, max_micro_batch};
use vram_explorer::estimator::{Diagnostic, estimate};
use vram_explorer::presets;
use vram_explorer::scenario::engine_args_llamacpp::{apply, notes, parse};
use vram_explorer::scenario::{LlamaCpp, ServingEngine};

#[test]
fn llama_server_without_np_has_four_unified_slots() {
    let base = LlamaCpp::default();
    let p = parse("llama-server -m m-Q4_K_M.gguf -c 8192", &base).unwrap();
    assert_eq!((p.settings.n_parallel, p.settings.kv_unified), (4, true));
    assert!(p.slots_auto);
    assert!(
        notes(&p).iter().any(|n| n.contains("-np auto")),
        "{:?}",
        notes(&p)
    );
    // A negative -np is auto too, and auto forces the unified cache even against -no-kvu.
    let p = parse("llama-server -np -1 -no-kvu", &base).unwrap();
    assert_eq!((p.settings.n_parallel, p.settings.kv_unified), (4, true));
    // A positive -np keeps a stream per slot unless -kvu says otherwise.
    let p = parse("llama-server -np 2", &base).unwrap();
    assert_eq!((p.settings.n_parallel, p.settings.kv_unified), (2, false));
    assert!(!p.slots_auto);
    let p = parse("llama-server -np 2 --kv-unified", &base).unwrap();
    assert_eq!((p.settings.n_parallel, p.settings.kv_unified), (2, true));
    assert!(
        parse("llama-server -np 0", &base)
            .unwrap_err()
            .contains("-np 0")
    );
    // llama-cli has no auto: one sequence unless told.
    let p = parse("llama-cli -m m.gguf", &base).unwrap();
    assert_eq!((p.settings.n_parallel, p.settings.kv_unified), (1, false));
    // --kv-unified-per-slot without -c sizes the pool to slots × N; -c wins over it.
    let p = parse("llama-server --kv-unified-per-slot 8192", &base).unwrap();
    assert_eq!(p.settings.n_ctx, 32768);
    let p = parse("llama-server --kv-unified-per-slot 8192 -c 1000", &base).unwrap();
    assert_eq!(p.settings.n_ctx, 1000);
}

#[test]
fn fit_is_named_where_it_could_change_an_unset_flag() {
    let base = LlamaCpp::default();
    let fit = |cmd: &str| parse(cmd, &base).unwrap().fit_on;
    assert!(fit("llama-server -m m.gguf -c 8192"), "-ngl unset");
    assert!(!fit("llama-server -m m.gguf -c 8192 -ngl 99"), "both set");
    assert!(!fit("llama-server -m m.gguf -fit off"));
    // common_init_from_params fits for llama-cli as for llama-server.
    assert!(fit("llama-cli -m m.gguf"));
    assert!(parse("llama-server -fit maybe", &base).is_err());
    let p = parse("llama-server -m m.gguf", &base).unwrap();
    assert!(notes(&p).iter().any(|n| n.contains("-fit on")));
    // -c unset is llama.cpp's 0, the training context; an explicit -c 0 is never lowered.
    assert_eq!((p.settings.n_ctx, p.settings.fit_ctx), (0, 4096));
    assert!(notes(&p).iter().any(|n| n.contains("training context")));
    let p = parse("llama-server -m m.gguf -c 0", &base).unwrap();
    assert_eq!((p.settings.n_ctx, p.settings.fit_ctx), (0, 0));
    let p = parse("llama-server -m m.gguf -fitt 2048,512 -fitc 8192", &base).unwrap();
    assert_eq!(
        (p.settings.fit_target_mib, p.settings.fit_ctx),
        (2048, 8192)
    );
    assert!(!parse("llama-server -fit off", &base).unwrap().settings.fit);
}

/// Gemma 3 27B at 32K: llama-server's default 4 unified slots keep every slot's window in the
/// sliding-window cache, pad256(1024 × 4 + 512) = 4,608 cells, against 1,536 with `-np 1`; the
/// global layers' cache is the same; with a stream per slot the window cache is 4 × 1,536.
#[test]
fn slots_change_the_sliding_window_cache_as_llama_cpp_sizes_it() {
    let sc = presets::bundled_scenario("gemma3-27b-q4km-llamacpp-24gb").unwrap();
    let run = |cmd: &str| {
        let (s, _) = apply(&sc, cmd).unwrap();
        estimate(&s).llamacpp.unwrap()
    };
    let one = run("llama-server -m gemma-3-27b-it-Q4_K_M.gguf -c 32768 -np 1 -ngl 99");
    let auto = run("llama-server -m gemma-3-27b-it-Q4_K_M.gguf -c 32768 -ngl 99");
    let split = run("llama-server -m gemma-3-27b-it-Q4_K_M.gguf -c 32768 -np 4 -ngl 99");
    assert_eq!(
        (one.swa.cells, auto.swa.cells, split.swa.cells),
        (1536, 4608, 1536)
    );
    assert_eq!((one.n_stream, auto.n_stream, split.n_stream), (1, 1, 4));
    let swa_mib = |b: &vram_explorer::estimator::engines::llamacpp::Buffers| {
        (b.swa.k_bytes + b.swa.v_bytes) as f64 / 1_048_576.0
    };
    assert_eq!(
        (swa_mib(&one), swa_mib(&auto), swa_mib(&split)),
        (624.0, 1872.0, 2496.0)
    );
    // The global layers' cache holds -c cells in every case.
    let global = |b: &vram_explorer::estimator::engines::llamacpp::Buffers| {
        b.k_bytes + b.v_bytes - b.swa.k_bytes - b.swa.v_bytes
    };
    assert_eq!(global(&one), global(&auto));
    assert_eq!(global(&one), global(&split));
    // The load log prints the cells of one stream and n_seq/n_stream.
    let log = vram_explorer::report::llamacpp::log_lines(&split);
    assert!(
        log.contains("creating non-SWA KV cache, size = 8192 cells"),
        "{log}"
    );
    assert!(
        log.contains("(  1536 cells,  52 layers,  4/4 seqs)"),
        "{log}"
    );
    let log = vram_explorer::report::llamacpp::log_lines(&auto);
    assert!(
        log.contains("(  4608 cells,  52 layers,  4/1 seqs)"),
        "{log}"
    );
}

/// Old files (no `kv_unified`) load with it off: what they meant.
#[test]
fn files_without_kv_unified_load_with_it_off() {
    let s = presets::bundled_scenario("gemma3-27b-q4km-llamacpp-24gb").unwrap();
    let ron = presets::to_ron_string(&s).replace("kv_unified: false,", "");
    assert!(!ron.contains("kv_unified"));
    let o = presets::from_ron_str(&ron).unwrap();
    match o.inference.engine {
        Some(ServingEngine::LlamaCpp(l)) => assert!(!l.kv_unified),
        e => panic!("{e:?}"),
    }
}

#[test]
fn llamacpp_runs_at_most_llama_max_seq_sequences() {
    // 65,536 cells over 120-token requests would be 546 slots (547 with the 256-cell padding
    // of each slot), but llama_context refuses n_seq_max > LLAMA_MAX_SEQ = 256.
    let mut s = presets::bundled_scenario("llama31-8b-q4km-llamacpp-12gb").unwrap();
    (s.inference.prompt_tokens, s.inference.generated_tokens) = (100, 20);
    assert_eq!(max_micro_batch(&s), Solved::AtLimit(256));
    let e = estimate(&s);
    assert_eq!(e.performance.throughput.max_concurrent_requests, 256);
    // The same with one unified cache.
    if let Some(ServingEngine::LlamaCpp(c)) = &mut s.inference.engine {
        c.kv_unified = true;
    }
    assert_eq!(max_micro_batch(&s), Solved::AtLimit(256));
    // -np above 256 is clamped to it (the field's range).
    if let Some(ServingEngine::LlamaCpp(c)) = &mut s.inference.engine {
        (c.kv_unified, c.n_parallel) = (false, 300);
    }
    assert!(estimate(&s).diagnostics.contains(Diagnostic::InputClamped));
}
