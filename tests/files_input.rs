//! Inputs that cannot hang or exhaust memory (issue 18, item 2): FIFOs and devices are refused at
//! once, size limits hold while reading, imports are bounded and linear, their arithmetic cannot
//! overflow, and what they produce passes the scenario format's range checks.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]
#![cfg(target_os = "linux")]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use vram_explorer::import::files::{read_checkpoint, read_config};
use vram_explorer::import::{MAX_SHARDS, combine, from_hf_config, parse_header, parse_index};
use vram_explorer::presets::input::{InputError, read_at_most};
use vram_explorer::presets::{self, ErrorKind};
use vram_explorer::scenario::{ModelSpec, Scenario};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vram-files-input-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn mkfifo(path: &Path) -> bool {
    let made = Command::new("mkfifo").arg(path).status();
    let ok = made.is_ok_and(|s| s.success());
    if !ok {
        println!("skipped: mkfifo is not available");
    }
    ok
}

#[test]
fn a_fifo_without_writer_is_refused_by_every_command() {
    let dir = scratch("fifo-cli");
    let fifo = dir.join("scenario.ron");
    if !mkfifo(&fifo) {
        return;
    }
    for cmd in ["check", "report", "fit", "sweep"] {
        let mut args = vec![cmd, fifo.to_str().expect("utf-8 path")];
        if cmd == "sweep" {
            args.extend(["--over", "batch"]);
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_vram-explorer"))
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let start = std::time::Instant::now();
        while child.try_wait().ok().flatten().is_none() {
            if start.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                panic!("`{cmd}` hung on a FIFO");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let o = child.wait_with_output().expect("output");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {err}");
        assert!(
            err.contains("FIFO") && err.contains("not a regular file"),
            "{cmd}: {err}"
        );
    }
}

#[test]
fn the_library_refuses_fifos_and_devices_without_blocking() {
    let dir = scratch("fifo-lib");
    let fifo = dir.join("pipe.json");
    if !mkfifo(&fifo) {
        return;
    }
    let e = presets::load(&fifo).expect_err("a FIFO");
    assert_eq!(e.kind, ErrorKind::Io);
    assert!(e.to_string().contains("FIFO"), "{e}");
    let e = read_config(&fifo).expect_err("a FIFO");
    assert!(e.message.contains("FIFO"), "{e}");
    let e = read_checkpoint(&dir.join("pipe.json")).expect_err("a FIFO index");
    assert!(e.message.contains("FIFO"), "{e}");
    let shard = dir.join("model.safetensors");
    assert!(mkfifo(&shard));
    let e = read_checkpoint(&shard).expect_err("a FIFO shard");
    assert!(e.message.contains("FIFO"), "{e}");

    // /dev/zero as config.json, and an index symlinked to it: refused before reading a byte.
    let e = read_config(Path::new("/dev/zero")).expect_err("/dev/zero");
    assert!(e.message.contains("character device"), "{e}");
    let index = dir.join("model.safetensors.index.json");
    std::os::unix::fs::symlink("/dev/zero", &index).expect("symlink");
    let e = read_checkpoint(&index).expect_err("symlink to /dev/zero");
    assert!(e.message.contains("character device"), "{e}");
}

#[test]
fn symlinks_to_regular_files_still_work_as_in_the_hugging_face_cache() {
    let dir = scratch("hf-cache");
    let blob = dir.join("blob-0123");
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hf/gpt2.json");
    fs::copy(config, &blob).expect("copy");
    let link = dir.join("config.json");
    std::os::unix::fs::symlink(&blob, &link).expect("symlink");
    let text = read_config(&link).expect("a symlink to a regular file is read");
    from_hf_config(&text, &ModelSpec::default()).expect("gpt2 imports");
}

#[test]
fn the_size_limit_holds_while_reading_not_from_metadata() {
    // An endless reader: read_at_most stops after limit + 1 bytes.
    match read_at_most(std::io::repeat(0), 1024) {
        Err(InputError::TooLarge(1024)) => {}
        other => panic!("expected TooLarge, got {other:?}"),
    }
    assert_eq!(read_at_most(&b"abc"[..], 3).expect("fits").len(), 3);
}

#[test]
fn index_parsing_is_bounded_and_linear() {
    // 100,000 tensors over 2 shards parse (a list-based search made this quadratic).
    let mut json = String::from("{\"weight_map\": {");
    for i in 0..100_000 {
        let sep = if i == 0 { "" } else { "," };
        json.push_str(&format!("{sep}\"t{i}\": \"s{}.safetensors\"", i % 2));
    }
    json.push_str("}}");
    let start = std::time::Instant::now();
    let index = parse_index(&json).expect("parses");
    println!("100,000-tensor index parsed in {:?}", start.elapsed());
    assert_eq!((index.weight_map.len(), index.shards.len()), (100_000, 2));
    // 100,000 distinct shards: refused by the shard limit.
    let mut distinct = String::from("{\"weight_map\": {");
    for i in 0..100_000 {
        let sep = if i == 0 { "" } else { "," };
        distinct.push_str(&format!("{sep}\"t{i}\": \"s{i}.safetensors\""));
    }
    distinct.push_str("}}");
    let e = parse_index(&distinct).expect_err("too many shards");
    assert!(e.message.contains(&MAX_SHARDS.to_string()), "{e}");
}

#[test]
fn huge_configs_do_not_overflow_and_are_refused_naming_the_fields() {
    let json = r#"{"model_type": "qwen2", "hidden_size": 4294967295, "num_attention_heads": 1,
        "num_hidden_layers": 4294967295, "intermediate_size": 4294967295, "vocab_size": 4294967295}"#;
    let e = from_hf_config(json, &ModelSpec::default()).expect_err("out of range");
    for field in [
        "model.transformer.layers",
        "model.transformer.hidden",
        "model.transformer.ffn",
        "model.transformer.vocab",
    ] {
        assert!(e.message.contains(field), "{field}: {e}");
    }
    // Just past one range: still refused, so no scenario that fails to open can be saved.
    let llama = include_str!("data/hf/llama-2-7b.json")
        .replace("\"num_hidden_layers\": 32", "\"num_hidden_layers\": 20000");
    let e = from_hf_config(&llama, &ModelSpec::default()).expect_err("20,000 layers");
    assert!(e.message.contains("model.transformer.layers"), "{e}");
}

#[test]
fn an_imported_config_saves_and_opens_again() {
    for name in [
        "llama-2-7b",
        "gpt2",
        "bert-base-uncased",
        "mixtral-8x7b",
        "qwen2-0.5b",
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/hf/{name}.json"));
        let text = read_config(&path).expect("read");
        let imported = from_hf_config(&text, &ModelSpec::default()).expect(name);
        let scenario = Scenario {
            model: imported.model,
            ..Scenario::default()
        };
        let ron = presets::to_ron_string(&scenario);
        presets::from_ron_str(&ron).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn two_sparse_exabyte_shards_are_refused_not_counted() {
    // 2 EB of U8 in each sparse shard (the most a header's bit count can hold is 2.3e18 bytes):
    // 4e18 parameters together, beyond any scenario.
    let n: u64 = 2_000_000_000_000_000_000;
    let header = |t: &str| {
        let json =
            format!(r#"{{"{t}": {{"dtype": "U8", "shape": [{n}], "data_offsets": [0, {n}]}}}}"#);
        parse_header(json.as_bytes(), n).expect("a valid header")
    };
    let index = parse_index(r#"{"weight_map": {"a": "1.safetensors", "b": "2.safetensors"}}"#)
        .expect("index");
    let shards = vec![
        ("1.safetensors".to_owned(), header("a")),
        ("2.safetensors".to_owned(), header("b")),
    ];
    let e = combine(&index, &shards).expect_err("absurd count");
    assert!(e.message.contains("model.params"), "{e}");
}
