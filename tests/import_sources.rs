//! Where an import reads from (issue 14 item 3): a config file, a model directory with its
//! `model.safetensors.index.json` (total size cross-check), a Hub id looked up offline in a Hugging
//! Face cache built here in a temporary directory (`refs/main` or the newest snapshot), and the
//! `vram-explorer import` command (RON on stdout, counts on stderr).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use std::path::{Path, PathBuf};
use std::process::Command;

use vram_explorer::import::flow::import_model;
use vram_explorer::import::source::{HubEnv, is_hub_id, locate};
use vram_explorer::presets::from_ron_str;
use vram_explorer::report::import::summary;
use vram_explorer::scenario::{ModelSpec, Scenario};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/hf")
        .join(name)
}

fn scratch_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A snapshot directory holding `config` (a fixture) and, if given, an index of `total_size`.
fn snapshot(dir: &Path, config: &str, total_size: Option<u64>) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::copy(fixture(config), dir.join("config.json")).unwrap();
    if let Some(t) = total_size {
        let index = format!(
            r#"{{"metadata": {{"total_size": {t}}}, "weight_map": {{"lm_head.weight": "model-00001-of-00002.safetensors"}}}}"#
        );
        std::fs::write(dir.join("model.safetensors.index.json"), index).unwrap();
    }
}

/// A Hugging Face cache with `org/name` at two snapshots; `refs/main` names `main_rev` if given.
fn cache(root: &Path, main_rev: Option<&str>) {
    let repo = root.join("models--mistralai--Mistral-7B-v0.1");
    snapshot(&repo.join("snapshots/1111aaaa"), "llama-2-7b.json", None);
    std::thread::sleep(std::time::Duration::from_millis(20));
    snapshot(
        &repo.join("snapshots/2222bbbb"),
        "mistral-7b-v0.1.json",
        Some(14_483_464_192),
    );
    if let Some(rev) = main_rev {
        std::fs::create_dir_all(repo.join("refs")).unwrap();
        std::fs::write(repo.join("refs/main"), rev).unwrap();
    }
}

#[test]
fn hub_ids_are_found_offline_in_the_cache() {
    let root = scratch_dir("hub-refs");
    cache(&root, Some("1111aaaa"));
    let env = HubEnv {
        hf_hub_cache: Some(root.clone()),
        ..HubEnv::default()
    };
    // refs/main names the older snapshot: it wins over the newer one.
    let m = import_model("mistralai/Mistral-7B-v0.1", &ModelSpec::default(), &env).unwrap();
    assert_eq!(m.config.model_type, "llama");
    assert!(m.located.config.ends_with("snapshots/1111aaaa/config.json"));
    // Without refs/main: the newest snapshot; found through HF_HOME/hub too.
    let home = scratch_dir("hub-home");
    cache(&home.join("hub"), None);
    let env = HubEnv {
        hf_home: Some(home.clone()),
        ..HubEnv::default()
    };
    let m = import_model("mistralai/Mistral-7B-v0.1", &ModelSpec::default(), &env).unwrap();
    assert_eq!(m.config.model_type, "mistral");
    assert_eq!(m.total_size, Some(14_483_464_192));
    // ~/.cache/huggingface/hub when neither variable is set.
    let env = HubEnv {
        home: Some(home.clone()),
        ..HubEnv::default()
    };
    assert!(env.hub_root().unwrap().ends_with(".cache/huggingface/hub"));
    // Not in the cache: said so, nothing downloaded.
    let e = import_model("org/absent", &ModelSpec::default(), &env).unwrap_err();
    assert!(
        e.message.contains("not in the local Hugging Face cache"),
        "{e}"
    );
    assert!(is_hub_id("Qwen/Qwen3-8B") && !is_hub_id("../x") && !is_hub_id("a/b/c"));
    assert!(!is_hub_id("org/..") && !is_hub_id("/abs"));
}

#[test]
fn a_model_dir_reads_the_index_total_size_as_a_cross_check() {
    let dir = scratch_dir("model-dir");
    // Mistral-7B in BF16: 7,241,732,096 parameters × 2 bytes.
    snapshot(&dir, "mistral-7b-v0.1.json", Some(14_483_464_192));
    let m = import_model(
        dir.to_str().unwrap(),
        &ModelSpec::default(),
        &HubEnv::default(),
    )
    .unwrap();
    assert_eq!(m.total_size, Some(14_483_464_192));
    let mut s = Scenario::default();
    m.config.apply(&mut s);
    let text = summary(&m, &s);
    assert!(text.contains("total 7241732096"), "{text}");
    assert!(text.contains("2.000 bytes per parameter (Bf16)"), "{text}");
    // A directory without config.json is refused naming it.
    let empty = scratch_dir("model-dir-empty");
    let e = locate(empty.to_str().unwrap(), &HubEnv::default()).unwrap_err();
    assert!(e.message.contains("has no config.json"), "{e}");
    // A FIFO given as the config is refused as not a regular file, without blocking.
    #[cfg(unix)]
    {
        let fifo = empty.join("fifo.json");
        let made = Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .is_ok_and(|s| s.success());
        if made {
            let e = import_model(
                fifo.to_str().unwrap(),
                &ModelSpec::default(),
                &HubEnv::default(),
            )
            .unwrap_err();
            assert!(e.message.contains("not a regular file"), "{e}");
        }
    }
    // A hostile index (not JSON) is refused with its path.
    std::fs::write(dir.join("model.safetensors.index.json"), "{not json").unwrap();
    let e = import_model(
        dir.to_str().unwrap(),
        &ModelSpec::default(),
        &HubEnv::default(),
    )
    .unwrap_err();
    assert!(
        e.message.contains("not valid JSON") && e.message.contains("model-dir"),
        "{e}"
    );
}

#[test]
fn the_import_command_writes_ron_to_stdout_and_counts_to_stderr() {
    let root = scratch_dir("hub-cli");
    cache(&root, None);
    let out = Command::new(env!("CARGO_BIN_EXE_vram-explorer"))
        .args(["import", "mistralai/Mistral-7B-v0.1"])
        .env("HF_HUB_CACHE", &root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = from_ron_str(&String::from_utf8(out.stdout).unwrap()).unwrap();
    assert_eq!(
        s.model
            .pattern
            .iter()
            .map(|p| p.layers.len())
            .sum::<usize>(),
        1
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("total 7241732096"), "{err}");
    assert!(
        err.contains("32 layers of local attention (window 4096)"),
        "{err}"
    );
    // A file path works the same; a missing one fails with status 1, message first.
    let out = Command::new(env!("CARGO_BIN_EXE_vram-explorer"))
        .args(["import", fixture("t5-base.json").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("encoder stack (included): 84954240"));
    let out = Command::new(env!("CARGO_BIN_EXE_vram-explorer"))
        .args(["import", "no/such-model"])
        .env("HF_HUB_CACHE", &root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: no/such-model is not in"));
}
