//! Light measurements (src/measured/light.rs) read as the memory they state, or refused: numbers
//! with exponents and the common unit spellings are read in bytes; a negative figure, a word that
//! is not a memory unit, a bare prefix ("45.0 G", 10^9 or 2^30?) and a bare fraction are errors
//! naming the line, never a few bytes (`max_memory_allocated 1.2 TB` was read as 1.2 B).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use std::path::PathBuf;
use std::process::Command;

use vram_explorer::estimator::{Component, estimate};
use vram_explorer::measured::compare::{self, NOT_SERVED_BY_VLLM};
use vram_explorer::measured::{self, LightMeasurement, Measurement, Statistic};
use vram_explorer::presets::bundled_scenario;

const GIB: f64 = 1_073_741_824.0;
const MIB: f64 = 1_048_576.0;

fn light(text: &str) -> Result<LightMeasurement, String> {
    match measured::parse(text.as_bytes()) {
        Ok(Measurement::Light(l)) => Ok(l),
        Ok(Measurement::Snapshot(_)) => panic!("{text:?} read as a snapshot"),
        Err(e) => Err(e.to_string()),
    }
}

fn allocated(text: &str) -> f64 {
    let l = light(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    l.get(Statistic::Allocated).expect("an allocated peak")
}

#[test]
fn figures_take_exponents_and_the_common_units() {
    for (text, want) in [
        ("max_memory_allocated: 4.8e10", 4.8e10),
        ("max_memory_allocated: 4.8E+10 bytes", 4.8e10),
        ("max_memory_allocated = 15032385536", 15_032_385_536.0),
        ("max_memory_allocated: 15,032,385,536 B", 15_032_385_536.0),
        ("max_memory_allocated 1.2 TB", 1.2e12),
        ("max_memory_allocated 1.5 TiB", 1.5 * 1024.0 * GIB),
        ("max_memory_allocated: 45 GB", 45e9),
        ("max_memory_allocated: 45.5GiB", 45.5 * GIB),
        ("max_memory_allocated: 300 MB", 300e6),
        ("max_memory_allocated: 300 MiB", 300.0 * MIB),
        ("max_memory_allocated: 512 kB", 512e3),
        ("max_memory_allocated: 512 KiB", 512.0 * 1024.0),
        // The unit named before the number: a key's suffix or a bracket.
        ("max_memory_allocated_gib: 14.5", 14.5 * GIB),
        ("max_memory_allocated (GB): 45.0", 45e9),
        ("max_memory_allocated [MiB] 2048", 2048.0 * MIB),
        // A call's argument, a device name and the bytes' echo in another unit are not the figure.
        (
            "torch.cuda.max_memory_allocated(0) = 15032385536",
            15_032_385_536.0,
        ),
        (
            "max_memory_allocated on cuda-1: 15032385536 (14.0 GiB)",
            15_032_385_536.0,
        ),
    ] {
        assert_eq!(allocated(text), want, "{text}");
    }
}

/// The reviewer's one-line files: each was read as a few bytes.
#[test]
fn figures_that_are_not_memory_are_refused_naming_the_line() {
    for (text, says) in [
        (
            "max_memory_allocated(): 45.0 G",
            &[
                "line 1",
                "bare \"G\"",
                "write GB or GiB",
                "`max_memory_allocated(): 45.0 G`",
            ][..],
        ),
        (
            "max_memory_allocated: -5",
            &["line 1", "negative", "`max_memory_allocated: -5`"],
        ),
        (
            "step 3\nmax_memory_allocated: 12 seconds",
            &["line 2", "\"seconds\" after 12 is not a memory unit"],
        ),
        (
            "max_memory_allocated: 45 %",
            &["line 1", "\"%\" after 45 is not a memory unit"],
        ),
        (
            "max_memory_allocated: 45.0",
            &["line 1", "45.0 has no unit", "write its unit"],
        ),
        ("max_memory_allocated: 15032385536.5", &["has no unit"]),
        ("max_memory_allocated (G): 45", &["line 1", "bare \"G\""]),
        ("max_memory_allocated: 1e400", &["line 1", "too large"]),
        ("max_memory_allocated: 7 M", &["bare \"M\"", "MB or MiB"]),
    ] {
        let e = light(text).expect_err(text);
        for s in says {
            assert!(e.contains(s), "{text:?}: {e}");
        }
    }
}

/// A quoted long line shows the part from the key, where the figure is.
#[test]
fn a_long_line_is_quoted_from_its_key() {
    let text = format!("{} max_memory_reserved: 3 parsecs", "x".repeat(200));
    let e = light(&text).unwrap_err();
    assert!(e.contains("`max_memory_reserved: 3 parsecs`"), "{e}");
}

/// An nvidia-smi log keeps its rows; other lines after the header are not rows.
#[test]
fn nvidia_smi_rows_are_whole_fields() {
    let l =
        light("memory.used [MiB]\n17900 MiB\nstep 100 loss 2.31\n18000 MiB, 81559 MiB\n").unwrap();
    assert_eq!(l.values, vec![(Statistic::NvidiaSmi, 18_000.0 * MIB)]);
}

fn scratch(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vram-measured-light-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn compare(preset: &str, path: &std::path::Path) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vram-explorer"))
        .args(["compare", "--preset", preset, "--measured"])
        .arg(path)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// `compare` on the reviewer's files: an error naming the line and the file (exit 1), or the figure
/// in GiB.
#[test]
fn compare_refuses_or_reads_the_reviewers_files() {
    let preset = "llama3-8b-full-finetune-h100";
    for (name, text, says) in [
        (
            "g.txt",
            "max_memory_allocated(): 45.0 G\n",
            "line 1: a bare \"G\"",
        ),
        (
            "neg.txt",
            "max_memory_allocated: -5\n",
            "line 1: a negative",
        ),
    ] {
        let path = scratch(name, text);
        let (code, out, err) = compare(preset, &path);
        assert_eq!(code, 1, "{name}: {out}");
        assert!(err.contains(says), "{name}: {err}");
        assert!(err.trim_end().ends_with(name), "{name}: {err}");
    }
    for (name, text, row) in [
        ("e.txt", "max_memory_allocated: 4.8e10\n", "| 44.7 GiB |"),
        ("tb.txt", "max_memory_allocated 1.2 TB\n", "| 1118 GiB |"),
    ] {
        let path = scratch(name, text);
        let (code, out, err) = compare(preset, &path);
        assert_eq!(code, 0, "{name}: {err}");
        assert!(
            out.contains(&format!("| max_memory_allocated | tensor peak {row}")),
            "{name}: {out}"
        );
    }
}

fn data(name: &str) -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// vLLM V1's weights are its "Model loading took X GiB and Y seconds" line (0.34 prints "X GiB
/// memory and Y seconds"); the loader's "Loading weights took 2.87 seconds" is a time, not a figure
/// (it was read as 2.87 bytes, and the V1 line not at all).
#[test]
fn vllm_v1_weights_are_the_model_loading_line() {
    let log = std::fs::read_to_string(data("measured_light/vllm_v1.log")).unwrap();
    let l = light(&log).unwrap();
    assert_eq!(
        l.values,
        vec![
            (Statistic::VllmWeights, 14.9889 * GIB),
            (Statistic::VllmKvCache, 52.94 * GIB)
        ]
    );
    let v034 =
        "INFO [model_runner.py:441] Model loading took 14.99 GiB memory and 3.412345 seconds";
    assert_eq!(
        light(v034).unwrap().values,
        vec![(Statistic::VllmWeights, 14.99 * GIB)]
    );
    // A vLLM figure in seconds is refused, never read as memory.
    let e = light("Model loading took 3.4 seconds").unwrap_err();
    assert!(
        e.contains("\"seconds\" after 3.4 is not a memory unit"),
        "{e}"
    );
}

/// Every wording the published vLLM logs hold (tests/data/published/vllm-logs.json: V0 0.6.4 and
/// 0.8, V1 from January 2025 to 0.29) is read with the figure the record reports.
#[test]
fn the_published_vllm_logs_are_read_with_their_figures() {
    use Statistic::{
        VllmActivations as Act, VllmKvCache as Kv, VllmNonTorch as Nt, VllmWeights as W,
    };
    let want: [(&str, &[(Statistic, f64)]); 10] = [
        (
            "vllm-issue10517-llama31-8b-rtx3090-maxlen20000",
            &[(W, 14.9888), (Kv, 3.81)],
        ),
        (
            "vllm-issue10517-llama31-8b-rtx3090-maxlen29000",
            &[(W, 14.9888), (Kv, 2.89)],
        ),
        (
            "vllm-gaie-pr550-llama2-7b-lora-h100",
            &[(W, 12.55), (Nt, 0.16), (Act, 2.38), (Kv, 56.18)],
        ),
        ("vllm-lmcache1739-qwen3-14b-1gpu", &[(Kv, 6.51)]),
        ("vllm-issue21348-qwen3-235b-fp8-4xh100-tp4", &[(Kv, 8.11)]),
        ("vllm-pr12569-llama31-70b-w8a8-1gpu", &[(W, 67.7229)]),
        (
            "vllm-club3090-104-qwen36-27b-2x3090-tp2-fp8kv",
            &[(Kv, 9.84)],
        ),
        // The second run's refusal quotes 5.59 GiB; the largest figure is kept.
        ("vllm-issue25350-fp8kv-maxlen100000", &[(Kv, 10.55)]),
        (
            "vllm-sparkdocker396-minimax-m27-awq-2xgb10-tp2",
            &[(Kv, 22.5)],
        ),
        ("vllm-openrlhf336-llama3-70b-ppo", &[]),
    ];
    let text = std::fs::read_to_string(data("published/vllm-logs.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let records = json["records"].as_array().unwrap();
    assert_eq!(records.len(), want.len());
    for (id, figures) in want {
        let r = records.iter().find(|r| r["id"] == id).unwrap();
        let log: Vec<&str> = r["log"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap())
            .collect();
        let got = match light(&log.join("\n")) {
            Ok(l) => l.values,
            Err(e) => {
                assert!(e.starts_with("no measurement found"), "{id}: {e}");
                Vec::new()
            }
        };
        let want: Vec<(Statistic, f64)> = figures.iter().map(|(s, g)| (*s, g * GIB)).collect();
        assert_eq!(got, want, "{id}");
    }
}

/// `compare` on the V1 log: the weights row holds 15.0 GiB against vLLM's 15.0 GiB as loaded (it
/// was 0.00000000267 GiB, +559600086868.6 %).
#[test]
fn compare_reads_the_vllm_v1_weights() {
    let (code, out, err) = compare(
        "llama3.1-8b-vllm-h100-8k",
        &data("measured_light/vllm_v1.log"),
    );
    assert_eq!(code, 0, "{err}");
    let row = out
        .lines()
        .find(|l| l.starts_with("| vLLM model weights |"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(row.ends_with("| 15.0 GiB | 15.0 GiB | −0.0 % |"), "{row}");
}

/// vLLM's lines are held against the figures the estimate says vLLM prints (`EngineFigures`), not
/// memory components of another meaning: its activation peak against the profile run's (2.69 GiB,
/// was the served batch's transient buffers, 0.732 GiB: −72.8 %), the KV memory against the KV
/// budget (not the KV cache a batch fills), the non-torch memory against the budget's non-torch
/// charge, the weights against the weights as vLLM loads them (the rotary cache included).
#[test]
fn vllm_lines_are_held_against_the_engine_figures() {
    let s = bundled_scenario("llama3.1-8b-vllm-h100-8k").unwrap();
    let est = estimate(&s);
    let f = est.engine.unwrap();
    let log = std::fs::read_to_string(data("measured_light/vllm_startup.log")).unwrap();
    let m = Measurement::Light(light(&log).unwrap());
    let rows = compare::rows(&m, &est);
    let against = |stat: Statistic| {
        let r = rows.iter().find(|r| r.statistic == stat.label()).unwrap();
        assert!(r.comparable && r.error().is_some(), "{r:?}");
        (r.against, r.estimated)
    };
    assert_eq!(
        against(Statistic::VllmWeights),
        ("vLLM weights as loaded", f.weights.get())
    );
    assert_eq!(
        against(Statistic::VllmActivations),
        ("vLLM profile-run activation peak", f.activation_peak.get())
    );
    assert_eq!(
        against(Statistic::VllmNonTorch),
        ("vLLM non-torch memory", f.non_torch.get())
    );
    assert_eq!(
        against(Statistic::VllmKvCache),
        (
            "vLLM KV budget (Available KV cache memory)",
            f.kv_budget.get()
        )
    );
    let transient = est.memory.peak.get(Component::Transient).get();
    assert!(f.activation_peak.get() > 3.0 * transient, "{f:?}");
    // A scenario vLLM does not serve: the weights against its weights, the rest with no error.
    let train = estimate(&bundled_scenario("llama3-8b-full-finetune-h100").unwrap());
    assert!(train.engine.is_none());
    for r in compare::rows(&m, &train) {
        if r.statistic == Statistic::VllmWeights.label() {
            assert_eq!(r.estimated, train.memory.peak.get(Component::Weights).get());
            assert!(r.error().is_some());
        } else {
            assert_eq!(
                (r.against, r.comparable, r.error()),
                (NOT_SERVED_BY_VLLM, false, None)
            );
        }
    }
}

/// The reviewer's V0 line on the vLLM preset: the activation peak within 0.1 % of the profile run's
/// 2.69 GiB (was −72.8 % against the transient buffers); against a training scenario no error and
/// no "largest difference" from a row without a counterpart.
#[test]
fn compare_holds_the_activation_peak_against_the_profile_run() {
    let path = scratch(
        "v0.log",
        "INFO worker.py:232] model weights take 14.99GiB; non_torch_memory takes 0.62GiB; \
         PyTorch activation peak memory takes 2.69GiB; the rest of the memory reserved for KV \
         Cache is 54.25GiB.\n",
    );
    let (code, out, err) = compare("llama3.1-8b-vllm-h100-8k", &path);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(
            "| vLLM activation peak | vLLM profile-run activation peak | 2.69 GiB | 2.69 GiB | +0.0 % |"
        ),
        "{out}"
    );
    let (code, out, err) = compare("llama3-8b-full-finetune-h100", &path);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&format!(
            "| vLLM activation peak | {NOT_SERVED_BY_VLLM} | 2.69 GiB | — | — |"
        )),
        "{out}"
    );
    assert!(
        out.contains("Largest difference: vLLM model weights"),
        "{out}"
    );
}
