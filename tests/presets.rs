//! Every file in presets/ parses, validates, round-trips and estimates finitely; the bundled
//! library is exactly presets/; format migration and atomic save behave.

use std::path::{Path, PathBuf};

use vram_explorer::estimator::{Component, estimate};
use vram_explorer::presets::{
    self, ErrorKind, bundled, bundled_scenario, from_ron_str, to_ron_string,
};
use vram_explorer::scenario::{FORMAT_VERSION, GpuChoice, Mode, Scenario, ZeroStage, validate};

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
            ["Seed article", "Current practice"].contains(&p.group),
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
    let e = from_ron_str("(version: 2)").expect_err("newer");
    assert_eq!(e.kind, ErrorKind::UnsupportedVersion);
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
