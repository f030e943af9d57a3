//! The built binary on presets: table and JSON output consistent with `estimate()`, exit codes,
//! errors with the message first and the path last.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use vram_explorer::estimator::{Component, estimate};
use vram_explorer::presets::{self, bundled};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vram-explorer"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn preset_path(id: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("presets")
        .join(format!("{id}.ron"))
}

const ID: &str = "llama2-70b-inference-gqa-2xa100";

#[test]
fn presets_lists_every_bundled_preset() {
    let o = run(&["presets"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    for p in bundled() {
        assert!(
            text.contains(p.id) && text.contains(&p.name),
            "{} missing",
            p.id
        );
    }
    let o = run(&["presets", "--json"]);
    let list: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(list.as_array().map(Vec::len), Some(bundled().len()));
    assert_eq!(list[0]["group"], "Seed article");
}

fn in_stack_order(text: &str, components: impl IntoIterator<Item = Component>) {
    let mut at = 0;
    for c in components {
        let found = text[at..]
            .find(c.label())
            .unwrap_or_else(|| panic!("{} not in order:\n{text}", c.label()));
        at += found + c.label().len();
    }
}

#[test]
fn report_table_shows_components_in_stack_order_and_the_verdict() {
    let path = preset_path(ID);
    let o = run(&["report", path.to_str().expect("utf-8 path")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    in_stack_order(
        &text,
        Component::ALL.into_iter().filter(|c| !c.is_post_training()),
    );
    // A post-training run's other models are rows only in a post-training run.
    for c in Component::ALL.into_iter().filter(|c| c.is_post_training()) {
        assert!(!text.contains(c.label()), "{}:\n{text}", c.label());
    }
    let o = run(&["report", "--preset", "qwen2.5-7b-grpo-vllm-colocate-8xh100"]);
    in_stack_order(&stdout(&o), Component::ALL);
    for words in [
        "Tensor peak",
        "GPU total",
        "Capacity",
        "Headroom",
        "Fits:",
        "GiB",
        "phase:",
    ] {
        assert!(text.contains(words), "{words} missing:\n{text}");
    }
    let o = run(&["report", "--preset", ID, "--unit", "gb"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains(" GB "), "{}", stdout(&o));
}

#[test]
fn report_json_matches_estimate() {
    let path = preset_path(ID);
    let o = run(&["report", path.to_str().expect("utf-8 path"), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).expect("valid JSON");
    let s = presets::load(&path).expect("preset loads");
    let e = estimate(&s);
    let m = &e.memory;
    assert_eq!(v["schema_version"], 2);
    assert_eq!(v["scenario"]["name"], s.name.as_str());
    let order: Vec<&str> = Component::ALL.iter().map(|c| c.key()).collect();
    assert_eq!(v["memory"]["component_order"], serde_json::json!(order));
    let close = |json: &Value, x: f64| {
        let j = json.as_f64().unwrap_or(f64::NAN);
        (j - x).abs() <= 1e-9 * x.abs().max(1.0)
    };
    for c in Component::ALL {
        let j = &v["memory"]["components"][c.key()];
        assert!(
            close(j, m.peak.get(c).get()),
            "{}: {j} vs {}",
            c.key(),
            m.peak.get(c).get()
        );
    }
    assert!(close(
        &v["memory"]["tensor_peak_bytes"],
        m.tensor_peak.get()
    ));
    assert!(close(&v["memory"]["gpu_total_bytes"], m.gpu_total.get()));
    assert!(close(&v["memory"]["capacity_bytes"], m.capacity.get()));
    assert!(close(&v["memory"]["headroom_bytes"], m.headroom.get()));
    assert_eq!(v["memory"]["fits"], m.fits);
    assert_eq!(
        v["memory"]["peak_phase"],
        serde_json::json!(m.peak_phase.map(|p| p.key()))
    );
    let codes: Vec<&str> = e.diagnostics.iter().map(|d| d.code()).collect();
    let json_codes: Vec<&str> = v["diagnostics"]
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|d| d["code"].as_str())
        .collect();
    assert_eq!(json_codes, codes);
    assert!(close(&v["model"]["params"]["total"], m.params.total));
    assert!(v.get("performance").is_some());
}

#[test]
fn json_of_every_preset_is_valid_and_finite() {
    for p in bundled() {
        let o = run(&["report", "--preset", p.id, "--json"]);
        assert_eq!(o.status.code(), Some(0), "{}: {}", p.id, stderr(&o));
        let v: Value =
            serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{}: {e}", p.id));
        for c in Component::ALL {
            assert!(
                v["memory"]["components"][c.key()].is_number(),
                "{} {}",
                p.id,
                c.key()
            );
        }
    }
}

#[test]
fn sweep_prints_csv_with_one_row_per_point() {
    let o = run(&[
        "sweep", "--preset", ID, "--over", "batch", "--from", "1", "--to", "16", "--steps", "5",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 6, "{text}");
    let header: Vec<&str> = lines[0].split(',').collect();
    assert_eq!(header[0], "workload.micro_batch");
    assert!(header.contains(&"kv_cache_bytes") && header.contains(&"tensor_peak_bytes"));
    let peak_col = header
        .iter()
        .position(|h| *h == "tensor_peak_bytes")
        .expect("column");
    let mut last = 0.0;
    for (row, expect) in lines[1..].iter().zip([1.0, 2.0, 4.0, 8.0, 16.0]) {
        let cells: Vec<&str> = row.split(',').collect();
        assert_eq!(cells.len(), header.len(), "{row}");
        assert_eq!(cells[0].parse::<f64>().ok(), Some(expect));
        let peak: f64 = cells[peak_col].parse().expect("number");
        assert!(peak >= last, "more batch never uses less memory: {text}");
        last = peak;
    }
    let o = run(&[
        "sweep", "--preset", ID, "--over", "tp", "--from", "1", "--to", "0",
    ]);
    assert_eq!(o.status.code(), Some(1), "a bad range is a runtime error");
}

#[test]
fn fit_prints_the_solvers_answers() {
    let o = run(&["fit", "--preset", "llama2-7b-rtx4090"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("largest micro-batch"), "{}", stdout(&o));
    let o = run(&[
        "fit",
        "--preset",
        "llama2-7b-rtx4090",
        "--json",
        "--max-gpus",
        "8",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    for key in [
        "max_micro_batch",
        "max_context",
        "max_model_size",
        "min_dp",
        "min_tp",
        "min_pp",
    ] {
        assert!(v["limits"][key]["status"].is_string(), "{key}: {v}");
    }
    let suggestions = v["make_it_fit"]["suggestions"].as_array().expect("array");
    for g in suggestions {
        let ron = g["scenario_ron"].as_str().expect("RON text");
        let s = presets::from_ron_str(ron).expect("a suggestion is a valid scenario");
        assert!(estimate(&s).memory.fits, "a suggestion must fit");
    }
    assert_eq!(
        run(&["fit", "--preset", "x", "--top", "9"]).status.code(),
        Some(2)
    );
}

#[test]
fn check_accepts_presets_and_names_the_problem_of_a_bad_file() {
    let good = preset_path(ID);
    let o = run(&["check", good.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let bad = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/bad/unknown-field.ron");
    let o = run(&["report", bad.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.starts_with("error: unknown field `model.transformer.layrs`"),
        "{err}"
    );
    assert!(
        err.trim_end().ends_with(&bad.display().to_string()),
        "path last: {err}"
    );
    assert!(stdout(&o).is_empty());
}

#[test]
fn exit_codes_follow_the_convention() {
    assert_eq!(run(&["--help"]).status.code(), Some(0));
    assert_eq!(run(&["--version"]).status.code(), Some(0));
    assert_eq!(
        run(&["report"]).status.code(),
        Some(2),
        "missing file is a usage error"
    );
    assert_eq!(run(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(
        run(&["sweep", "--preset", ID, "--over", "bogus"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        run(&["report", "--preset", "no-such-preset"]).status.code(),
        Some(1)
    );
    assert_eq!(run(&["report", "/no/such/file.ron"]).status.code(), Some(1));
}

/// `optimize` prints each layout in words a planner reads (not the enums' Rust names).
#[test]
fn optimize_prints_layouts_in_words() {
    let o = run(&[
        "optimize",
        "--preset",
        "llama3-70b-zero3-8xh100",
        "--gpus",
        "64",
        "--top",
        "2",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let layouts: Vec<&str> = text.lines().filter(|l| l.contains(" GPUs  TP ")).collect();
    assert!(layouts.len() >= 2, "{text}");
    for l in layouts {
        assert!(l.contains("recompute ") && l.contains(", ZeRO "), "{l}");
        for rust_name in ["Stage", "None", "Cpu", "Nvme", "Selective", "Full"] {
            assert!(!l.contains(rust_name), "{rust_name} in {l}");
        }
    }
}

/// A llama.cpp CPU build (`-dev none`) reads as one: the engine named instead of a training
/// framework, no GPU, its host buffers, times at the host's rates, and no per-GPU table, GPU
/// roofline or GPU comparison (they described a GPU the run does not use).
#[test]
fn a_cpu_only_llamacpp_report_shows_no_gpu() {
    let o = run(&[
        "report",
        "--preset",
        "gemma3-27b-q4km-llamacpp-24gb",
        "--engine-args",
        "llama-server -m gemma-3-27b-it-Q4_K_M.gguf -c 32768 -dev none",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    for expected in [
        "Engine:  llama.cpp",
        "GPU:     none (llama.cpp -dev none",
        // llama-server's -np auto: 4 slots, one unified cache; Gemma 3's windowed layers keep
        // pad256(1024 × 4 + 512) = 4,608 cells (1,536 with -np 1: 19.0 GiB).
        "Host memory (llama.cpp -dev none): 20.3 GiB",
        "n_ctx 32768 (4 seqs, one unified cache)",
        "creating     SWA KV cache, size = 4608 cells",
        "CPU_Mapped model buffer size = 15773.89 MiB",
        "Performance on the CPU",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in\n{text}");
    }
    for absent in [
        "Framework:",
        "Per-GPU memory",
        "CUDA context",
        "Architecture comparison",
    ] {
        assert!(!text.contains(absent), "{absent:?} in\n{text}");
    }
    // The GPU build of the same preset keeps them all.
    let gpu = stdout(&run(&[
        "report",
        "--preset",
        "gemma3-27b-q4km-llamacpp-24gb",
    ]));
    assert!(gpu.contains("Per-GPU memory") && gpu.contains("Architecture comparison"));
    assert!(gpu.contains("Engine:  llama.cpp"));
    // The Markdown report of the bundled CPU preset says the same.
    let md = stdout(&run(&[
        "report",
        "--preset",
        "llama31-8b-q4km-llamacpp-cpu",
        "--format",
        "markdown",
    ]));
    assert!(md.contains("## Host memory (llama.cpp -dev none)") && md.contains("**5.84 GiB**"));
    assert!(md.contains("CPU_Mapped model buffer size =  4685.30 MiB"));
    assert!(!md.contains("## Memory per GPU") && !md.contains("## Architecture comparison"));
    // The slides' summary too (File ▸ Slide images).
    let s = presets::bundled_scenario("llama31-8b-q4km-llamacpp-cpu").unwrap();
    let summary = vram_explorer::report::summary::markdown(
        &s,
        &estimate(&s),
        &[],
        vram_explorer::units::MemoryUnit::GiB,
    );
    assert!(
        summary
            .contains("**CPU only (llama.cpp -dev none): 5.84 GiB of host memory, no GPU used**"),
        "{summary}"
    );
}

#[test]
fn optimize_refuses_an_inference_scenario_and_engine_args_says_it_serves_a_training_one() {
    let o = run(&["optimize", "--preset", "llama3.1-8b-vllm-h100-8k"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("optimize searches training layouts"),
        "{}",
        stderr(&o)
    );
    assert!(
        stdout(&o).is_empty(),
        "no empty Pareto front: {}",
        stdout(&o)
    );
    let o = run(&[
        "report",
        "--preset",
        "llama3-8b-full-finetune-h100",
        "--engine-args",
        "vllm serve x",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the scenario was a training one") && stdout(&o).contains("inference"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_layout_of_more_gpus_than_any_machine_is_refused_by_name() {
    let dir = std::env::temp_dir().join(format!("vram-cli-gpus-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("big.ron");
    std::fs::write(
        &f,
        "(parallel: (dp: 65536, tp: 65536, pp: 65536, cp: 65536))",
    )
    .unwrap();
    let o = run(&["check", f.to_str().unwrap()]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("`parallel.dp` × tp × pp × cp = ") && e.contains("exceeds 1,099,511,627,776"),
        "{e}"
    );
    std::fs::write(&f, "(parallel: (dp: 65536, tp: 64, pp: 64, cp: 64))").unwrap();
    assert!(run(&["check", f.to_str().unwrap()]).status.success());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn reports_of_a_served_model_say_what_it_serves_and_what_the_engine_prints() {
    // The table: requests, not the training micro-batch; the comparison in the asked unit; no
    // "unknown" largest batch under an engine.
    let o = run(&[
        "report",
        "--preset",
        "llama3.1-8b-vllm-h100-8k",
        "--unit",
        "gb",
    ]);
    let t = stdout(&o);
    assert!(t.contains("inference, 32 concurrent requests"), "{t}");
    assert!(
        t.contains("Architecture comparison (needs 76.8 GB per GPU"),
        "{t}"
    );
    assert!(t.contains("max batch n/a: the serving engine"), "{t}");
    // Markdown: the same inputs, and vLLM's startup lines as the table prints them.
    let o = run(&[
        "report",
        "--preset",
        "llama3.1-8b-vllm-h100-8k",
        "--format",
        "markdown",
    ]);
    let md = stdout(&o);
    assert!(
        md.contains("| Batch | 32 concurrent requests, prompt 7680 + 512 generated tokens |"),
        "{md}"
    );
    assert!(md.contains("| Optimizer | none (inference) |"), "{md}");
    assert!(
        md.contains("## vLLM startup log (predicted, per GPU)")
            && md.contains("GPU KV cache size: 433,664 tokens"),
        "{md}"
    );
}
