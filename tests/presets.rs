//! Every file in presets/ parses, validates, round-trips and estimates finitely; the bundled
//! library is exactly presets/; format migration and atomic save behave.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]

use std::path::{Path, PathBuf};

use vram_explorer::estimator::{Component, estimate};
use vram_explorer::presets::{
    self, ErrorKind, bundled, bundled_scenario, from_ron_str, to_ron_string,
};
use vram_explorer::scenario::{
    FORMAT_VERSION, GpuChoice, Mode, PrecisionMode, Profile, Scenario, ZeroStage, validate,
};

fn preset_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("presets");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("presets/ exists")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .collect();
    files.sort();
    files
}

/// A fresh directory under the target dir's tmp, removed at the start of each use.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("presets-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

fn assert_finite(name: &str, s: &Scenario) {
    let e = estimate(s);
    let m = &e.memory;
    for c in Component::ALL {
        let b = m.peak.get(c).get();
        assert!(b.is_finite() && b >= 0.0, "{name}: {} = {b}", c.key());
    }
    for x in [
        m.tensor_peak.get(),
        m.gpu_total.get(),
        m.capacity.get(),
        m.headroom.get(),
        m.params.total,
    ] {
        assert!(x.is_finite(), "{name}: non-finite figure {x}");
    }
}

#[test]
fn every_preset_file_parses_validates_round_trips_and_estimates() {
    let files = preset_files();
    assert!(
        files.len() >= 16,
        "expected the full library, found {}",
        files.len()
    );
    let dir = scratch("round-trip");
    for path in files {
        let name = path.display().to_string();
        let s = presets::load(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.version, FORMAT_VERSION, "{name}");
        assert!(
            !s.name.is_empty() && s.notes.len() > 200,
            "{name}: name and notes are required"
        );
        assert_eq!(validate::validate(&s), Vec::new(), "{name}");
        let copy = dir.join(path.file_name().expect("file name"));
        presets::save(&copy, &s).unwrap_or_else(|e| panic!("{e}"));
        let back = presets::load(&copy).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, s, "{name}: load → save → load changed the scenario");
        assert_eq!(
            from_ron_str(&to_ron_string(&s)).ok(),
            Some(s.clone()),
            "{name}"
        );
        assert_finite(&name, &s);
    }
}

#[test]
fn bundled_library_is_exactly_the_presets_directory() {
    let ids: Vec<String> = preset_files()
        .iter()
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    let mut bundled_ids: Vec<String> = bundled().iter().map(|p| p.id.to_owned()).collect();
    bundled_ids.sort();
    assert_eq!(bundled_ids, ids);
    for p in bundled() {
        let s = p.scenario().unwrap_or_else(|e| panic!("{}: {e}", p.id));
        assert_eq!(
            (p.name.as_str(), p.notes.as_str()),
            (s.name.as_str(), s.notes.as_str())
        );
        assert!(
            ["Seed article", "Current practice", "Today's models"].contains(&p.group),
            "{}",
            p.group
        );
        assert_eq!(bundled_scenario(p.id).as_ref(), Some(&s));
        assert_eq!(bundled_scenario(&p.name.to_uppercase()).as_ref(), Some(&s));
    }
    assert!(bundled_scenario("no such preset").is_none());
}

#[test]
fn default_and_edited_scenarios_round_trip_with_every_field_written() {
    let mut s = Scenario {
        notes: "Quotes \" and ‘unicode’ × →\nsecond line, a raw \"# too".to_owned(),
        gpu: GpuChoice::Custom(Default::default()),
        ..Default::default()
    };
    s.strategies.zero = ZeroStage::Stage2;
    s.precision.master_weights = None;
    let text = to_ron_string(&s);
    assert_eq!(from_ron_str(&text), Ok(s.clone()));
    // Every field of the document is written out, so a saved file shows every input.
    let keys = presets::scan::keys(&text);
    let default_keys = presets::scan::keys(&to_ron_string(&Scenario::default()));
    assert!(default_keys.len() > 80, "{}", default_keys.len());
    assert!(
        keys.len() > default_keys.len(),
        "custom GPU fields are written"
    );
}

#[test]
fn a_minimal_file_takes_every_default() {
    assert_eq!(from_ron_str("()"), Ok(Scenario::default()));
    assert_eq!(from_ron_str("Scenario()"), Ok(Scenario::default()));
    let s = from_ron_str("(mode: Training, parallel: (tp: 2))").expect("valid");
    assert_eq!(
        (s.mode, s.parallel.tp, s.parallel.dp),
        (Mode::Training, 2, 1)
    );
}

#[test]
fn enum_variants_named_none_read_with_or_without_raw_prefix() {
    let a = from_ron_str("(strategies: (zero: None, checkpointing: r#None))").expect("valid");
    assert_eq!(a.strategies.zero, ZeroStage::None);
}

#[test]
fn a_version_0_file_is_migrated() {
    let v0 = "// a draft-format file\n(\n    version: 0,\n    mode: Training,\n    workload: (batch_size: 8),\n    \
              strategies: (zero_stage: Stage2),\n    parallel: (tensor_parallel: 4, dp: 2),\n)\n";
    let s = from_ron_str(v0).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.version, FORMAT_VERSION);
    assert_eq!(
        (s.workload.micro_batch, s.strategies.zero, s.parallel.tp),
        (8, ZeroStage::Stage2, 4)
    );
    // The old names are errors in a current-version file.
    let e = from_ron_str("(workload: (batch_size: 8))").expect_err("unknown in v1");
    assert_eq!(
        (e.kind, e.field.as_deref()),
        (ErrorKind::UnknownField, Some("workload.batch_size"))
    );
    let e = from_ron_str(&format!("(version: {})", FORMAT_VERSION + 1)).expect_err("newer");
    assert_eq!(e.kind, ErrorKind::UnsupportedVersion);
}

/// A version-1 file as the app saved it (every field, the old default context 273.75 MiB "with its
/// kernels") loads with the new split: 253.75 MiB at CUDA initialisation and the kernels' 146; a
/// version-1 figure of the user's own stays the whole context.
#[test]
fn a_version_1_file_gets_the_split_cuda_context() {
    let saved = presets::to_ron_string(&Scenario::default())
        .replace(&format!("version: {FORMAT_VERSION}"), "version: 1")
        .replace("cuda_context_mib: 253.75,\n", "cuda_context_mib: 273.75,\n")
        .replace("        cuda_kernels_mib: 146.0,\n", "");
    assert!(saved.contains("cuda_context_mib: 273.75") && !saved.contains("cuda_kernels_mib"));
    let s = from_ron_str(&saved).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (s.overheads.cuda_context_mib, s.overheads.cuda_kernels_mib),
        (253.75, 146.0)
    );
    let own = from_ron_str("(version: 1, overheads: (cuda_context_mib: 1343.0))").unwrap();
    assert_eq!(
        (
            own.overheads.cuda_context_mib,
            own.overheads.cuda_kernels_mib
        ),
        (1343.0, 0.0)
    );
}

#[test]
fn save_replaces_atomically_and_a_failed_save_keeps_the_old_file() {
    let dir = scratch("atomic");
    let target = dir.join("scenario.ron");
    let old = Scenario::default();
    presets::save(&target, &old).expect("first save");
    let before = std::fs::read(&target).expect("read");

    // A directory where the temporary file would go: the write fails before touching the target.
    let tmp = presets::temp_path(&target);
    std::fs::create_dir(&tmp).expect("block the temp path");
    let mut new = old.clone();
    new.name = "changed".to_owned();
    let e = presets::save(&target, &new).expect_err("the temporary cannot be created");
    assert_eq!(e.kind, ErrorKind::Io);
    assert!(
        e.to_string().ends_with(&target.display().to_string()),
        "path last: {e}"
    );
    assert_eq!(
        std::fs::read(&target).expect("read"),
        before,
        "old file intact"
    );
    std::fs::remove_dir(&tmp).expect("unblock");

    // A directory at the target: the rename fails, nothing is left behind.
    let as_dir = dir.join("is-a-dir.ron");
    std::fs::create_dir(&as_dir).expect("dir target");
    std::fs::write(as_dir.join("keep"), b"x").expect("content");
    assert!(presets::save(&as_dir, &new).is_err());
    assert!(as_dir.join("keep").exists());
    assert!(!presets::temp_path(&as_dir).exists(), "temporary removed");

    // A missing directory.
    assert!(presets::save(&dir.join("missing/x.ron"), &new).is_err());

    // And a normal save replaces the content, leaving no temporary.
    presets::save(&target, &new).expect("save");
    assert_eq!(presets::load(&target).expect("load").name, "changed");
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .expect("list")
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// The first "N GiB" of the notes' "What the estimate says" paragraph.
fn stated_gib(notes: &str) -> Option<f64> {
    let para = notes.split("What the estimate says").nth(1)?;
    let at = para.find(" GiB")?;
    let num: String = para[..at]
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    num.parse().ok()
}

fn states(b: &vram_explorer::estimator::Breakdown) -> f64 {
    [
        Component::Weights,
        Component::MasterWeights,
        Component::Gradients,
        Component::OptimizerStates,
    ]
    .iter()
    .map(|c| b.get(*c).get())
    .sum()
}

#[test]
fn preset_notes_state_what_the_estimate_says() {
    for p in bundled() {
        let s = p.scenario().unwrap_or_else(|e| panic!("{}: {e}", p.id));
        let stated = stated_gib(&s.notes).unwrap_or_else(|| panic!("{}: no stated estimate", p.id));
        let e = estimate(&s);
        // A llama.cpp CPU build uses no GPU: its notes state the host memory its buffers take.
        let total = match e.cpu_build() {
            Some(b) => b.host_total() as f64 / f64::from(1u32 << 30),
            None => e.memory.gpu_total.as_gib(),
        };
        let tolerance = (0.1 * total).max(0.01);
        assert!(
            (stated - total).abs() <= tolerance,
            "{}: the notes say {stated} GiB, the estimate is {total:.2} GiB: update the notes",
            p.id
        );
    }
}

#[test]
fn article_presets_documented_expectations_hold() {
    let est = |id: &str| estimate(&bundled_scenario(id).unwrap_or_else(|| panic!("{id}")));
    let fits = |id: &str| est(id).memory.fits;
    // Fit verdicts the notes state.
    for id in [
        "bert-base-fp32",
        "gpt3-175b-zero3-a100",
        "resnet50-batch32",
        "resnet50-batch128",
        "bert-tiny-snapdragon865",
        "recommender-hbm-a100",
        "zero-3d-parallel-cluster",
        "one-bit-adam",
        "llama3-8b-full-finetune-h100",
        "llama3-70b-zero3-8xh100",
        "llama2-70b-inference-gqa-2xa100",
    ] {
        assert!(fits(id), "{id} should fit");
    }
    for id in [
        "gpt3-175b-mp8-a100",
        "gpt3-175b-mp32-a100",
        "gpt-1.3b-amp-checkpointing",
        "recommender-gddr6x-rtx3090",
        "llama2-7b-rtx4090",
    ] {
        assert!(!fits(id), "{id} should not fit");
    }
    // Model parallel 8 → 32: model states fall ~4× (first stage holds the embeddings).
    let (mp8, mp32) = (est("gpt3-175b-mp8-a100"), est("gpt3-175b-mp32-a100"));
    let ratio = states(&mp8.memory.peak) / states(&mp32.memory.peak);
    assert!((3.5..=4.1).contains(&ratio), "model-state ratio {ratio}");
    // Model states alone are 2.8 TB / 8 = 350 GB (326 GiB) per GPU, 4.1× an "80 GB" (80 GiB) card;
    // the total, at the step with its FP32 gradient copy, is 5.4× the 79.56 GiB it lets a process
    // allocate.
    assert!(mp8.memory.gpu_total.get() > 4.0 * mp8.memory.capacity.get());
    // Megatron-LM runs use the fused Adam: no parameter-sized optimizer temporary.
    for id in [
        "gpt3-175b-mp8-a100",
        "gpt3-175b-mp32-a100",
        "zero-3d-parallel-cluster",
    ] {
        let s = bundled_scenario(id).unwrap_or_else(|| panic!("{id}"));
        assert!(!s.optimizer.foreach, "{id}: Megatron's optimizer is fused");
        assert_eq!(s.implementation.profile, Profile::Megatron, "{id}");
    }
    // The step's transients are the FP32 copy of the FP16 gradients Megatron's optimizer steps
    // with (175 B / 8 × 4 B = 81.5 GiB) and no parameter-sized Adam temporary beside it.
    let mp8_temp = mp8.memory.peak.get(Component::Transient).as_gib();
    let copy = mp8.memory.peak.get(Component::Gradients).as_gib() * 2.0;
    assert!(
        mp8_temp >= copy && mp8_temp < copy + 1.0,
        "step transients {mp8_temp} GiB, gradient copy {copy} GiB"
    );
    // 1.3B: model states alone exceed the article's 9 GB.
    assert!(states(&est("gpt-1.3b-amp-checkpointing").memory.peak) > 9e9);
    // ResNet-50: activations scale with the batch, 4×.
    let act = |id: &str| est(id).memory.peak.get(Component::Activations).get();
    let r = act("resnet50-batch128") / act("resnet50-batch32");
    assert!((3.9..=4.1).contains(&r), "activation ratio {r}");
    // BERT-tiny under the article's 512 MB; offload lands on NVMe / host.
    assert!(est("bert-tiny-snapdragon865").memory.gpu_total.get() < 512e6);
    assert!(est("gpt3-175b-zero3-a100").memory.offloaded.nvme.get() > 0.0);
    assert!(est("llama3-70b-zero3-8xh100").memory.offloaded.host.get() > 0.0);
    // 1-bit Adam with 15 % warm-up: 4.92× less all-reduce volume (Tang et al. 2021).
    let c = est("one-bit-adam")
        .performance
        .communication
        .compression_ratio;
    assert!((c - 4.923).abs() < 0.01, "compression {c}");
}

#[test]
fn inference_presets_store_their_weights_in_the_compute_type() {
    // Amp (FP32 weights + autocast copies) and master weights are training-only setups.
    for p in bundled() {
        let s = p.scenario().unwrap_or_else(|e| panic!("{}: {e}", p.id));
        if s.mode == Mode::Inference {
            assert_eq!(s.precision.mode, PrecisionMode::Uniform, "{}", p.id);
        }
    }
}
