//! llama.cpp's printed buffers through the ESTIMATOR (`estimate(&scenario).llamacpp`) against the
//! published load logs of tests/data/published/llamacpp-logs.json (issue 15's bar: model and KV
//! buffers to the printed 0.01 MiB, CUDA compute buffers within 5 %; the host compute buffer within
//! 0.01 MiB: the graph's few-KiB token / position inputs are not modelled). The records' configs
//! give the dimensions and flags; what a record lacks and the scenario needs is in [`EXTRA`], with
//! why. Errors per record are printed (`cargo test --test published_llamacpp -- --nocapture`) and
//! listed in docs/engines/llamacpp.md.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use serde_json::Value;
use vram_explorer::estimator::engines::llamacpp::{Buffers, mib_printed};
use vram_explorer::estimator::estimate;
use vram_explorer::scenario::{
    CacheType, FfnKind, FlashAttn, LlamaCpp, Mode, Scenario, ServingEngine, WeightFormat,
};
use vram_explorer::tensor::GgufFileType;

const LOGS: &str = include_str!("data/published/llamacpp-logs.json");

/// What a record's config does not say, per source (prefix of the record id): tied embeddings,
/// the file type where the log's tensor counts imply one, GPUs, and `-ts` as layer counts.
struct Extra {
    prefix: &'static str,
    tied: bool,
    ftype: Option<GgufFileType>,
    gpus: u32,
    split: &'static [f32],
    /// The build's graph predates `ggml_set_rows` KV writes (`LlamaCpp::legacy_graph`).
    legacy: bool,
    /// `GGML_SCHED_MAX_COPIES` of the build (4 unless the log shows otherwise).
    copies: u32,
    why: &'static str,
}

const EXTRA: &[Extra] = &[
    Extra {
        prefix: "llamacpp-securetag",
        tied: false,
        ftype: Some(GgufFileType::Q4KM),
        gpus: 1,
        split: &[],
        legacy: true,
        copies: 4,
        why: "the record's config",
    },
    Extra {
        prefix: "llamacpp-llamasharp1099",
        tied: true,
        ftype: None,
        gpus: 1,
        split: &[],
        legacy: true,
        copies: 4,
        why: "Qwen2.5-3B ties its embeddings (434 tensors, no output.weight); file type unknown: KV and compute only",
    },
    Extra {
        prefix: "llamacpp-llamafile552",
        tied: false,
        ftype: Some(GgufFileType::F16),
        gpus: 1,
        split: &[],
        legacy: true,
        copies: 4,
        why: "the record's config (F16 TriLM, untied)",
    },
    Extra {
        prefix: "llamacpp-issue9229",
        tied: false,
        ftype: Some(GgufFileType::F16),
        gpus: 4,
        split: &[],
        legacy: true,
        copies: 4,
        why: "4 GPUs, -ngl 32: the 32 repeating layers evenly, the output layer in host memory, so no pipeline parallelism (one copy of the inputs whatever GGML_SCHED_MAX_COPIES) and op offload runs the logits on CUDA0 with a copy of the F16 output matrix; -ngl 32 and F16 are inferred from CUDA3's 3,088.25 MiB (the record's ngl_note)",
    },
    Extra {
        prefix: "llamacpp-pr6122",
        tied: true,
        ftype: Some(GgufFileType::Q4KM),
        gpus: 2,
        split: &[12.0, 29.0],
        legacy: true,
        copies: 4,
        why: "Command-R ties its embeddings; token_embd is then Q6_K in any K-quant mix (only the CPU buffer is checked: the CUDA buffers' file type is not plain Q4_K_M); -ts 12/29 of 41 layers gives the 12/28 KV split",
    },
    Extra {
        prefix: "llamacpp-ollama9068",
        tied: false,
        ftype: None,
        gpus: 2,
        split: &[33.0, 32.0],
        legacy: true,
        copies: 4,
        why: "2 GPUs, Ollama's split of 65 layers 33/32 (31 repeating + output on CUDA1); the log prints pipeline parallelism enabled (n_copies=4); file type not printed: KV and compute only",
    },
    Extra {
        prefix: "llamacpp-ikllama344",
        tied: false,
        ftype: None,
        gpus: 0,
        split: &[],
        legacy: true,
        copies: 4,
        why: "CPU backend only (-dev none); GLM-4 unties its output",
    },
];

/// Records outside the bar, with the reason: each is asserted to stay where it is (within
/// `limit`), so the list cannot go stale when the model improves.
const KNOWN_MISSES: &[(&str, f64, &str)] = &[(
    "llamacpp-ikllama344-glm4-32b-cpu-cpu-compute",
    0.05,
    "ik_llama.cpp (a fork): its CPU output peak is T (n_vocab + n_embd) × 4 = 308.00 MiB; llama.cpp@0c1e57098's CPU backend, measured here, keeps one more n_embd-wide activation (T (n_vocab + 2 n_embd) × 4, tests/measured_llamacpp.rs): 320.01 (+3.9 %)",
)];

fn extra(id: &str) -> &'static Extra {
    EXTRA
        .iter()
        .find(|e| id.starts_with(e.prefix))
        .unwrap_or_else(|| panic!("{id}: no row in EXTRA"))
}

fn scenario(r: &Value) -> Scenario {
    let id = r["id"].as_str().unwrap();
    let x = extra(id);
    let m = &r["config"]["model"];
    let e = &r["config"]["engine"];
    let mut s = Scenario {
        mode: Mode::Inference,
        ..Scenario::default()
    };
    let u = |v: &Value| v.as_u64().unwrap() as u32;
    let t = &mut s.model.transformer;
    t.layers = u(&m["n_layer"]);
    t.hidden = u(&m["n_embd"]);
    t.heads = u(&m["n_head"]);
    t.head_dim = t.hidden / t.heads;
    t.kv_heads = u(&m["n_embd_kv"]) / t.head_dim;
    t.ffn = u(&m["n_ff"]);
    t.ffn_kind = FfnKind::SwiGlu;
    t.vocab = u(&m["n_vocab"]);
    t.tied_embeddings = x.tied;
    if let Some(f) = x.ftype {
        s.quantization.weights = WeightFormat::GgufFile(f);
    }
    s.parallel.pp = x.gpus.max(1);
    let mut l = LlamaCpp {
        n_ctx: u(&e["c"]),
        n_parallel: e["np"].as_u64().map_or(1, |v| v as u32),
        // Builds before llama.cpp PR #14363 (July 2025) had one unified cache only.
        kv_unified: e["kv_unified"].as_bool().unwrap_or(false),
        n_batch: e["b"].as_u64().map_or(2048, |v| v as u32),
        n_ubatch: u(&e["ub"]),
        n_gpu_layers: e["ngl"].as_i64().map_or(-1, |v| v as i32),
        cache_type_k: CacheType::parse(e["ctk"].as_str().unwrap()).unwrap(),
        cache_type_v: CacheType::parse(e["ctv"].as_str().unwrap()).unwrap(),
        flash_attn: if e["fa"].as_bool() == Some(true) {
            FlashAttn::On
        } else {
            FlashAttn::Off
        },
        cpu_only: x.gpus == 0,
        legacy_graph: x.legacy,
        legacy_placement: x.legacy,
        sched_max_copies: x.copies,
        ..LlamaCpp::default()
    };
    for (i, v) in x.split.iter().enumerate() {
        l.tensor_split[i] = *v;
    }
    s.inference.engine = Some(ServingEngine::LlamaCpp(l));
    s
}

/// The estimator's figure for the buffer a record's statistic names, or `None` with the reason.
fn predicted(r: &Value, b: &Buffers) -> Result<f64, &'static str> {
    let stat = r["statistic"].as_str().unwrap();
    let id = r["id"].as_str().unwrap();
    let device =
        |name: &str| -> Option<usize> { (0..8).find(|i| stat.starts_with(&format!("{name}{i} "))) };
    let x = extra(id);
    let bytes = if stat.starts_with("CUDA_Host compute") || stat.starts_with("CPU compute") {
        b.host_compute
    } else if stat.starts_with("CPU KV") {
        b.host_kv
    } else if stat.starts_with("CPU") {
        b.host_model
    } else if let Some(i) = device("CUDA") {
        let g = &b.dev[i];
        if stat.contains("compute") {
            g.compute
        } else if stat.contains("KV") {
            g.kv
        } else if x.ftype.is_some() && !id.starts_with("llamacpp-pr6122") {
            g.model
        } else {
            return Err("file type not printed");
        }
    } else {
        return Err("statistic not recognised");
    };
    Ok(mib_printed(bytes))
}

#[test]
fn every_record_within_its_bar() {
    let v: Value = serde_json::from_str(LOGS).unwrap();
    let mut failures = Vec::new();
    let mut checked = 0;
    println!(
        "{:<58} {:>9} {:>9} {:>7}  bar",
        "record", "printed", "estimate", "error"
    );
    for r in v["records"].as_array().unwrap() {
        let id = r["id"].as_str().unwrap();
        let est = estimate(&scenario(r));
        let b = est.llamacpp.expect("a llama.cpp scenario has buffers");
        let printed = r["value"].as_f64().unwrap();
        let stat = r["statistic"].as_str().unwrap();
        let Ok(p) = predicted(r, &b) else {
            println!(
                "{id:<58} {printed:>9.2} {:>9}  skipped: {}",
                "—",
                extra(id).why
            );
            continue;
        };
        checked += 1;
        let err = (p - printed) / printed;
        let (ok, bar) = if stat.starts_with("CUDA")
            && !stat.starts_with("CUDA_Host")
            && stat.contains("compute")
        {
            (err.abs() <= 0.05, "5 %")
        } else if stat.contains("compute") {
            ((p - printed).abs() <= 0.0101, "0.01 MiB")
        } else {
            ((p - printed).abs() < 0.005, "exact")
        };
        let known = KNOWN_MISSES.iter().find(|k| k.0 == id);
        println!(
            "{id:<58} {printed:>9.2} {p:>9.2} {:>6.2}%  {bar}{}",
            err * 100.0,
            if ok { "" } else { "  MISS (known)" }
        );
        match (ok, known) {
            (true, None) => {}
            (false, Some(k)) if err.abs() <= k.1 => {}
            (true, Some(_)) => failures.push(format!(
                "{id}: now within its bar; drop it from KNOWN_MISSES"
            )),
            _ => failures.push(format!("{id}: printed {printed}, estimate {p} ({bar})")),
        }
    }
    assert!(checked >= 18, "only {checked} records checked");
    assert!(failures.is_empty(), "{failures:#?}");
}
