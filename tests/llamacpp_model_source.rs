//! Where a pasted llama.cpp line takes its model from: `-m` and the download flags of
//! `common/arg.cpp` at llama.cpp@0c1e57098 (`-hf, -hfr, --hf-repo`, `-hff, --hf-file`, `-mu,
//! --model-url`, `-dr, --docker-repo`, `-hft, --hf-token`). None of them is a memory flag; the
//! GGUF file type the tag or file name spells sets the weights, as `-m x-Q4_K_M.gguf` does.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use std::process::Command;

use vram_explorer::presets;
use vram_explorer::scenario::engine_args_llamacpp::{apply, notes, parse};
use vram_explorer::scenario::{LlamaCpp, WeightFormat};
use vram_explorer::tensor::GgufFileType;

fn file_type(cmd: &str) -> Option<GgufFileType> {
    parse(cmd, &LlamaCpp::default()).unwrap().file_type
}

#[test]
fn every_spelling_of_the_model_source_is_read_like_dash_m() {
    let base = LlamaCpp::default();
    for cmd in [
        "llama-server -hf bartowski/Llama-3.2-3B-Instruct-GGUF:Q4_K_M",
        "llama-server -hfr bartowski/Llama-3.2-3B-Instruct-GGUF:q4_k_m",
        "llama-server --hf-repo bartowski/Llama-3.2-3B-Instruct-GGUF:Q4_K_M",
        "llama-server --hf-repo=bartowski/Llama-3.2-3B-Instruct-GGUF:Q4_K_M",
        "llama-server -hf bartowski/Llama-3.2-3B-Instruct-GGUF -hff Llama-3.2-3B-Instruct-Q4_K_M.gguf",
        "llama-server --hf-file Llama-3.2-3B-Instruct-Q4_K_M.gguf --hf-repo bartowski/Llama-3.2-3B-Instruct-GGUF",
        "llama-server -mu https://huggingface.co/bartowski/Llama-3.2-3B-Instruct-GGUF/resolve/main/Llama-3.2-3B-Instruct-Q4_K_M.gguf?download=true",
        "llama-cli --model-url https://example.com/models/Llama-3.2-3B-Instruct-Q4_K_M.gguf",
        "llama-server -dr ai/llama3.2:3B-Q4_K_M",
        "llama-server --docker-repo llama3.2:3B-Q4_K_M",
        "llama-server -m Llama-3.2-3B-Instruct-Q4_K_M.gguf",
    ] {
        let p = parse(cmd, &base).unwrap_or_else(|e| panic!("{cmd}: {e}"));
        assert_eq!(p.file_type, Some(GgufFileType::Q4KM), "{cmd}");
        assert!(p.model.is_some(), "{cmd}");
        assert!(p.ignored.is_empty() && p.not_modelled.is_empty(), "{cmd}");
        // Not a memory flag: the settings are those of a bare line.
        let bare = parse("llama-server", &base).unwrap().settings;
        if cmd.starts_with("llama-server") {
            assert_eq!(p.settings, bare, "{cmd}");
        }
    }
    // The reviewer's line sets the weights of the scenario it is applied to.
    let sc = presets::bundled_scenario("llama3-8b-full-finetune-h100").unwrap();
    let (out, _) = apply(
        &sc,
        "llama-server -hf bartowski/Llama-3.2-3B-Instruct-GGUF:Q8_0 -c 4096",
    )
    .unwrap();
    assert_eq!(
        out.quantization.weights,
        WeightFormat::GgufFile(GgufFileType::Q8_0)
    );
}

#[test]
fn what_llama_cpp_loads_when_several_sources_are_given() {
    // `-hff` overrides the tag of `--hf-repo` ("it will override the quant in --hf-repo").
    assert_eq!(
        file_type("llama-server -hf u/m-GGUF:Q8_0 -hff m-Q6_K.gguf"),
        Some(GgufFileType::Q6K)
    );
    // The Hugging Face file over a URL over a local path (common_models_handler_apply).
    assert_eq!(
        file_type("llama-server -m m-Q8_0.gguf -hf u/m-GGUF:Q5_K_M"),
        Some(GgufFileType::Q5KM)
    );
    assert_eq!(
        file_type("llama-server -m /models/m-Q8_0.gguf -mu https://x/m-Q4_0.gguf"),
        Some(GgufFileType::Q4_0)
    );
    // Without a tag llama.cpp takes the repository's Q4_K_M file first (find_best_model), and
    // the note says it was assumed.
    let p = parse(
        "llama-server -hf ggml-org/gemma-3-1b-it-GGUF",
        &LlamaCpp::default(),
    )
    .unwrap();
    assert_eq!(p.file_type, Some(GgufFileType::Q4KM));
    let n = notes(&p).join("\n");
    assert!(n.contains("names no quant") && n.contains("Q4_K_M"), "{n}");
    // -hf also fetches the repository's mmproj for llama-server: said, not modelled, and
    // --no-mmproj turns the note off.
    assert!(n.contains("mmproj"), "{n}");
    let p = parse(
        "llama-server -hf u/m-GGUF:Q4_K_M --no-mmproj",
        &LlamaCpp::default(),
    )
    .unwrap();
    assert!(!notes(&p).join("\n").contains("mmproj"));
    // A tag that names no type the estimator knows keeps the scenario's weights, and says so.
    let p = parse(
        "llama-server -hf unsloth/m-GGUF:UD-Q4_K_XL",
        &LlamaCpp::default(),
    )
    .unwrap();
    assert_eq!(p.file_type, None);
    assert!(notes(&p).join("\n").contains("names no GGUF file type"));
    // Docker Hub's default tag is `latest`: no type.
    assert_eq!(file_type("llama-server -dr gemma3"), None);
    // A value is required.
    assert!(parse("llama-server -hf", &LlamaCpp::default()).is_err());
}

#[test]
fn the_hf_token_is_accepted_and_never_echoed() {
    for flag in ["-hft", "--hf-token"] {
        let p = parse(
            &format!("llama-server -hf u/m-GGUF:Q4_K_M {flag} hf_SECRETSECRET"),
            &LlamaCpp::default(),
        )
        .unwrap();
        assert_eq!(p.ignored, [format!("{flag} (value not shown)")]);
        assert!(!notes(&p).join("\n").contains("SECRET"));
    }
}

#[test]
fn engine_args_takes_the_reviewers_line() {
    let o = Command::new(env!("CARGO_BIN_EXE_vram-explorer"))
        .args([
            "engine-args",
            "llama-server -hf bartowski/Llama-3.2-3B-Instruct-GGUF:Q4_K_M",
        ])
        .output()
        .expect("the binary runs");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        out.contains("quantization.weights: GgufFile(Q4KM)"),
        "{out}"
    );
    assert!(out.contains("llama.cpp would print"), "{out}");
}
