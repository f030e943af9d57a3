//! Imports: HF config.json → exact parameter counts through `estimate()`; safetensors headers on files
//! the test writes, including malformed ones; sharded checkpoints.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]

use std::path::PathBuf;

use vram_explorer::estimator::estimate;
use vram_explorer::import::files::{read_checkpoint, read_safetensors_header};
use vram_explorer::import::{StDtype, from_hf_config, parse_file, parse_index};
use vram_explorer::scenario::{ModelSpec, Scenario};

fn config(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/hf")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}: {}", path.display()))
}

fn params_of(name: &str) -> f64 {
    let imported = from_hf_config(&config(name), &ModelSpec::default()).expect(name);
    let s = Scenario {
        model: imported.model,
        ..Scenario::default()
    };
    estimate(&s).model.params.total
}

#[test]
fn hf_configs_reproduce_published_parameter_counts() {
    // issue 7: Llama-2-7B, GPT-2 (tied head); BERT-base as its `architectures` names it
    // (BertForMaskedLM: MLM head, no pooler; tests/data/hf/params.json).
    assert_eq!(params_of("llama-2-7b.json"), 6_738_415_616.0);
    assert_eq!(params_of("gpt2.json"), 124_439_808.0);
    assert_eq!(params_of("bert-base-uncased.json"), 109_514_298.0);
    // [D] from the dimensions: 2·V·h + L·(2h² + 2·h·kv·d + 3·h·f + 2h) + h.
    assert_eq!(params_of("mistral-7b-v0.1.json"), 7_241_732_096.0);
}

#[test]
fn qwen2_counts_its_qkv_biases() {
    let imported = from_hf_config(&config("qwen2-0.5b.json"), &ModelSpec::default()).unwrap();
    // Qwen2-0.5B: 494,032,768 parameters with its q/k/v biases (a layer pattern has them).
    assert_eq!(params_of("qwen2-0.5b.json"), 494_032_768.0);
    let t = &imported.model.transformer;
    assert!(t.tied_embeddings && t.kv_heads == 2 && t.head_dim() == 64);
}

#[test]
fn import_keeps_the_rest_of_the_model_spec() {
    let base = ModelSpec {
        params: 123.0,
        ..ModelSpec::default()
    };
    let imported = from_hf_config(&config("gpt2.json"), &base).unwrap();
    assert_eq!(imported.model.cnn, base.cnn);
    assert_eq!(imported.model.params, 123.0);
    assert_eq!(imported.model_type, "gpt2");
    let t = &imported.model.transformer;
    assert!(t.gelu_tanh && t.fused_qkv && t.tied_embeddings && t.bias);
}

#[test]
fn unsupported_configs_are_refused_naming_what() {
    let err = |json: &str| {
        from_hf_config(json, &ModelSpec::default())
            .unwrap_err()
            .message
    };
    // Mixtral imports (tests/peft_moe_quant.rs); other expert layouts are still refused by name.
    let mut moe: serde_json::Value = serde_json::from_str(&config("mixtral-8x7b.json")).unwrap();
    moe["model_type"] = "llama".into();
    moe["moe_intermediate_size"] = 1408.into();
    let m = err(&moe.to_string());
    assert!(
        m.contains("num_local_experts") && m.contains("mixture of experts"),
        "{m}"
    );
    assert!(m.contains("moe_intermediate_size"), "{m}");
    assert!(err("{not json").contains("not valid JSON"));
    assert!(err("[1, 2]").contains("not a JSON object"));
    assert!(err(r#"{"model_type": "falcon"}"#).contains("\"falcon\" is not understood"));
    assert!(err(r#"{"hidden_size": 4}"#).contains("`model_type` is missing"));
    let m = err(r#"{"model_type": "llama", "hidden_size": -4, "num_attention_heads": 2}"#);
    // Absent keys take the configuration class's defaults (as Transformers does); bad ones are named.
    assert!(m.contains("`hidden_size` = -4"), "{m}");
    let m = err(
        r#"{"model_type": "llama", "hidden_size": 100, "num_attention_heads": 3,
            "num_hidden_layers": 2, "intermediate_size": 8, "vocab_size": 10}"#,
    );
    assert!(m.contains("not a multiple of 3 heads"), "{m}");
    let huge = format!(
        "{{\"model_type\": \"llama\", \"x\": \"{}\"}}",
        "a".repeat(5 << 20)
    );
    assert!(err(&huge).contains("more than"));
}

#[test]
fn unknown_keys_are_listed_not_silently_dropped() {
    let mut json = config("llama-2-7b.json");
    json = json.replacen('{', "{\"my_custom_flag\": 3,", 1);
    let imported = from_hf_config(&json, &ModelSpec::default()).unwrap();
    assert!(
        imported.notes.iter().any(|n| n.contains("my_custom_flag")),
        "{:?}",
        imported.notes
    );
}

/// A safetensors file with zero-filled data, built as the format describes.
fn safetensors(tensors: &[(&str, &str, &[u64])]) -> Vec<u8> {
    let bits = |d: &str| StDtype::parse(d).map_or(8, |d| d.bits());
    let mut at = 0u64;
    let mut entries = vec![r#""__metadata__":{"format":"pt"}"#.to_owned()];
    for (name, dtype, shape) in tensors {
        let n: u64 = shape.iter().product::<u64>() * bits(dtype) / 8;
        entries.push(format!(
            r#""{name}":{{"dtype":"{dtype}","shape":{shape:?},"data_offsets":[{at},{}]}}"#,
            at + n
        ));
        at += n;
    }
    let mut header = format!("{{{}}}", entries.join(",")).into_bytes();
    while header.len() % 8 != 0 {
        header.push(b' ');
    }
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&header);
    out.resize(out.len() + at as usize, 0);
    out
}

#[test]
fn safetensors_counts_parameters_by_dtype() {
    let file = safetensors(&[
        ("embed.weight", "BF16", &[32, 16]),
        ("norm.weight", "F32", &[16]),
        ("layer.0.weight", "BF16", &[16, 16]),
        ("scalar", "F32", &[]),
    ]);
    let header = parse_file(&file).unwrap();
    let s = vram_explorer::import::ParamSummary::of(header.tensors.iter());
    assert_eq!((s.tensors, s.params), (4, 512 + 16 + 256 + 1));
    assert_eq!(s.bytes, 2 * 768 + 4 * 17);
    let bf16 = s
        .by_dtype
        .iter()
        .find(|c| c.dtype == StDtype::BF16)
        .unwrap();
    assert_eq!((bf16.tensors, bf16.params), (2, 768));
    assert_eq!(s.main_dtype(), Some(vram_explorer::scenario::Dtype::Bf16));
    assert_eq!(
        header.metadata,
        vec![("format".to_owned(), "pt".to_owned())]
    );
    assert_eq!(s.to_model(&ModelSpec::default()).params, 785.0);
}

#[test]
fn malformed_safetensors_are_refused_with_a_reason() {
    let err = |b: &[u8]| parse_file(b).unwrap_err().message;
    let good = safetensors(&[("w", "F16", &[4, 4])]);
    assert!(err(&good[..5]).contains("too short"));
    let mut huge = good.clone();
    huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(err(&huge).contains("exceeds"));
    let mut past = good.clone();
    past[..8].copy_from_slice(&10_000u64.to_le_bytes());
    assert!(err(&past).contains("past the end"));
    let mut bad_json = good.clone();
    bad_json[9] = b'!';
    assert!(
        err(&bad_json).contains("not valid JSON"),
        "{}",
        err(&bad_json)
    );
    let mut not_json = good.clone();
    not_json[8] = b'[';
    assert!(err(&not_json).contains("does not start with"));
    // Offsets beyond the data section: drop the last data byte.
    assert!(err(&good[..good.len() - 1]).contains("out of range"));
    let m = err(&safetensors(&[("w", "F17", &[4])]));
    assert!(
        m.contains("\"F17\" is not understood") && m.contains("`w`"),
        "{m}"
    );
    // Shape and offsets disagree.
    let text = br#"{"w":{"dtype":"F16","shape":[4,4],"data_offsets":[0,30]}}      "#;
    let mut f = (text.len() as u64).to_le_bytes().to_vec();
    f.extend_from_slice(text);
    f.resize(f.len() + 30, 0);
    assert!(err(&f).contains("do not hold"));
    // Two tensors on the same bytes.
    let text = br#"{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}}"#;
    let mut f = (text.len() as u64).to_le_bytes().to_vec();
    f.extend_from_slice(text);
    f.resize(f.len() + 6, 0);
    assert!(err(&f).contains("overlaps"));
}

fn scratch_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn sharded_checkpoint_reads_headers_beside_the_index() {
    let dir = scratch_dir("import-sharded");
    let a = safetensors(&[("a.weight", "BF16", &[64, 64]), ("a.bias", "BF16", &[64])]);
    let b = safetensors(&[("b.weight", "F32", &[10, 64])]);
    std::fs::write(dir.join("model-00001-of-00002.safetensors"), &a).unwrap();
    std::fs::write(dir.join("model-00002-of-00002.safetensors"), &b).unwrap();
    let index = r#"{"metadata": {"total_size": 10880}, "weight_map": {
        "a.weight": "model-00001-of-00002.safetensors",
        "a.bias": "model-00001-of-00002.safetensors",
        "b.weight": "model-00002-of-00002.safetensors"}}"#;
    std::fs::write(dir.join("model.safetensors.index.json"), index).unwrap();
    let s = read_checkpoint(&dir.join("model.safetensors.index.json")).unwrap();
    assert_eq!((s.tensors, s.params, s.bytes), (3, 4096 + 64 + 640, 10_880));
    assert!(s.notes.is_empty(), "{:?}", s.notes);
    let single = read_safetensors_header(&dir.join("model-00002-of-00002.safetensors")).unwrap();
    assert_eq!(single.tensors[0].numel, 640);

    // A shard that is missing: the message names it and ends with the path.
    std::fs::remove_file(dir.join("model-00002-of-00002.safetensors")).unwrap();
    let e = read_checkpoint(&dir.join("model.safetensors.index.json"))
        .unwrap_err()
        .message;
    assert!(
        e.contains("cannot open") && e.ends_with("model-00002-of-00002.safetensors"),
        "{e}"
    );

    // An index that puts a tensor in the wrong shard, and one escaping the directory.
    std::fs::write(dir.join("model-00002-of-00002.safetensors"), &b).unwrap();
    let wrong = index.replace(
        r#""a.bias": "model-00001-of-00002.safetensors""#,
        r#""a.bias": "model-00002-of-00002.safetensors""#,
    );
    std::fs::write(dir.join("wrong.index.json"), wrong).unwrap();
    let e = read_checkpoint(&dir.join("wrong.index.json"))
        .unwrap_err()
        .message;
    assert!(
        e.contains("`a.bias`") && e.contains("does not hold it"),
        "{e}"
    );
    let escape = r#"{"weight_map": {"x": "../secret.safetensors"}}"#;
    assert!(
        parse_index(escape)
            .unwrap_err()
            .message
            .contains("not a file name")
    );
}

#[test]
fn file_errors_name_the_problem_then_the_path() {
    let dir = scratch_dir("import-errors");
    let path = dir.join("tiny.safetensors");
    std::fs::write(&path, [1u8, 2, 3]).unwrap();
    let e = read_safetensors_header(&path).unwrap_err().message;
    assert!(
        e.starts_with("safetensors file too short") && e.ends_with("tiny.safetensors"),
        "{e}"
    );
}
