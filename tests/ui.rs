//! Drives the real window headless through AccessKit (egui_kittest, no GPU, no display): every control
//! is found by its accessible label, as a screen reader would.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]
#![cfg(feature = "gui")]

use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT, Queryable};
use vram_explorer::app::ExplorerApp;
use vram_explorer::app::commands::Command;
use vram_explorer::scenario::{Mode, Scenario, ShapeSource};

fn harness(app: ExplorerApp) -> Harness<'static, ExplorerApp> {
    let mut h = Harness::builder()
        .with_size(egui::vec2(1600.0, 1400.0))
        .build_ui_state(|ui, app: &mut ExplorerApp| app.ui(ui), app);
    h.run();
    h
}

fn app_with(edit: impl FnOnce(&mut Scenario)) -> ExplorerApp {
    let mut app = ExplorerApp::default();
    edit(app.scenario_mut());
    app
}

/// The text of the first node whose label contains `needle`.
fn text(h: &Harness<'_, ExplorerApp>, needle: &str) -> String {
    let node = h.get_by_label_contains(needle);
    let n = node.accesskit_node();
    n.label().or_else(|| n.value()).unwrap_or_default()
}

/// The first number after `prefix` in `s`.
fn number_after(s: &str, prefix: &str) -> f64 {
    let start = s.find(prefix).map_or(0, |i| i + prefix.len());
    let num: String = s[start..]
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    num.parse().unwrap_or(f64::NAN)
}

fn set_slider(h: &mut Harness<'_, ExplorerApp>, label: &str, value: f64) {
    h.get_by_role_and_label(Role::Slider, label)
        .set_value_accesskit(value);
    h.run();
}

fn choose(h: &mut Harness<'_, ExplorerApp>, combo: &str, option: &str) {
    h.get_by_role_and_label(Role::ComboBox, combo)
        .click_accesskit();
    h.run();
    // The option, not a label elsewhere in the window with the same text.
    h.get_all_by_label(option)
        .find(|n| n.accesskit_node().role() != Role::Label)
        .expect("option in the open combo box")
        .click_accesskit();
    h.run();
}

#[test]
fn raising_batch_raises_activations_on_screen() {
    // A small model with long sequences: activations are part of the peak.
    let mut h = harness(app_with(|s| {
        s.mode = Mode::Training;
        s.model.shape = ShapeSource::ParamCount;
        s.model.params = 1e8;
        s.workload.seq_len = 4096;
    }));
    let before = number_after(&text(&h, "Saved activations:"), "Saved activations:");
    set_slider(&mut h, "Micro-batch", 8.0);
    assert_eq!(h.state().scenario().workload.micro_batch, 8);
    let after = number_after(&text(&h, "Saved activations:"), "Saved activations:");
    assert!(after > before * 4.0, "activations {before} -> {after}");
}

#[test]
fn zero3_with_dp8_lowers_per_gpu_memory() {
    let mut h = harness(app_with(|s| s.mode = Mode::Training));
    set_slider(&mut h, "Data parallel", 8.0);
    let before = number_after(&text(&h, "Peak per GPU:"), "Peak per GPU:");
    choose(&mut h, "ZeRO stage", "ZeRO-3 / FSDP");
    let after = number_after(&text(&h, "Peak per GPU:"), "Peak per GPU:");
    assert!(after < before, "per-GPU peak {before} -> {after}");
}

#[test]
fn a_24_gb_gpu_flips_the_fit_mark() {
    let mut h = harness(app_with(|s| s.workload.micro_batch = 32));
    h.get_by_label("FITS");
    choose(&mut h, "GPU", "RTX 4090");
    h.get_by_label("DOES NOT FIT");
    assert!(h.query_by_label("FITS").is_none());
}

#[test]
fn tp_not_dividing_heads_shows_a_diagnostic() {
    let mut h = harness(ExplorerApp::default());
    assert!(
        h.query_by_label_contains("does not divide the attention heads")
            .is_none()
    );
    set_slider(&mut h, "Tensor parallel", 3.0);
    // Listed under the headline and next to the parallel degrees.
    let shown = h
        .query_all_by_label_contains("does not divide the attention heads")
        .count();
    assert!(shown >= 1);
}

#[test]
fn presentation_mode_changes_text_size() {
    let mut h = harness(ExplorerApp::default());
    let before = h.get_by_label_contains("Peak phase").rect().height();
    h.key_press(egui::Key::F5);
    h.run();
    assert!(h.state().prefs().presentation);
    let after = h.get_by_label_contains("Peak phase").rect().height();
    assert!(after > before * 1.3, "text height {before} -> {after}");
}

#[test]
fn undo_restores_a_value() {
    let mut h = harness(ExplorerApp::default());
    set_slider(&mut h, "Micro-batch", 8.0);
    assert_eq!(h.state().scenario().workload.micro_batch, 8);
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::Z);
    h.run();
    assert_eq!(h.state().scenario().workload.micro_batch, 1);
    h.key_press_modifiers(
        egui::Modifiers::COMMAND | egui::Modifiers::SHIFT,
        egui::Key::Z,
    );
    h.run();
    assert_eq!(h.state().scenario().workload.micro_batch, 8);
}

#[test]
fn opening_a_bad_file_shows_an_error_and_keeps_the_scenario() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join("ui-test-bad-scenario.ron");
    std::fs::write(&path, "(mode: Training, no_such_field: 3)").unwrap();
    let mut h = harness(app_with(|s| s.workload.micro_batch = 5));
    h.state_mut().request(Command::OpenPath(path));
    h.run();
    // The edited scenario is unsaved, so the app asks first.
    h.get_by_label("Discard changes").click();
    h.run();
    h.get_by_label_contains("Could not open the scenario");
    assert_eq!(h.state().scenario().workload.micro_batch, 5);
    assert_eq!(h.state().scenario().mode, Scenario::default().mode);
}

#[test]
fn opening_a_good_file_replaces_the_scenario() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join("ui-test-good-scenario.ron");
    let mut s = Scenario::default();
    s.workload.micro_batch = 7;
    std::fs::write(&path, vram_explorer::presets::to_ron_string(&s)).unwrap();
    let mut h = harness(ExplorerApp::default());
    h.state_mut().request(Command::OpenPath(path));
    h.run();
    assert_eq!(h.state().scenario().workload.micro_batch, 7);
    assert!(!h.state().is_dirty());
}

#[test]
fn tab_reaches_the_controls() {
    let mut h = harness(ExplorerApp::default());
    let mut reached = false;
    for _ in 0..200 {
        h.key_press(egui::Key::Tab);
        h.run();
        let node = h.get_by_role_and_label(Role::Slider, "Micro-batch");
        if node.accesskit_node().is_focused() {
            reached = true;
            break;
        }
    }
    assert!(reached, "Tab never focused the micro-batch slider");
}

#[test]
fn quitting_with_unsaved_changes_asks_first() {
    let mut h = harness(app_with(|s| s.parallel.tp = 2));
    h.state_mut().request(Command::Quit);
    h.run();
    h.get_by_label("Unsaved changes");
    h.get_by_label("Cancel").click();
    h.run();
    assert!(h.query_by_label("Unsaved changes").is_none());
    assert_eq!(h.state().scenario().parallel.tp, 2);
}

#[test]
fn pinning_a_baseline_shows_both_side_by_side() {
    let mut h = harness(ExplorerApp::default());
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::B);
    h.run();
    set_slider(&mut h, "Micro-batch", 16.0);
    assert!(h.query_all_by_label("Baseline").count() >= 2);
    h.get_by_label("Difference");
    assert_eq!(h.state().scenario().workload.micro_batch, 16);
}

#[test]
fn applying_a_make_it_fit_suggestion_fits_and_undoes() {
    let preset =
        vram_explorer::presets::bundled_scenario("llama2-7b-rtx4090").expect("bundled preset");
    let mut h = harness(app_with(|s| *s = preset));
    h.get_by_label("DOES NOT FIT");
    h.get_by_label("Apply 1").click();
    h.run();
    h.get_by_label("FITS");
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::Z);
    h.run();
    h.get_by_label("DOES NOT FIT");
}

#[test]
fn importing_a_hf_config_sets_the_shape() {
    let path =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/hf/llama-2-7b.json");
    let mut h = harness(ExplorerApp::default());
    h.state_mut().request(Command::ImportConfigPath(path));
    h.run();
    let t = &h.state().scenario().model.transformer;
    assert_eq!((t.layers, t.hidden, t.vocab), (32, 4096, 32000));
    // The notice says what `vram-explorer import` prints: the type and the exact count.
    h.get_by_label_contains("Imported llama from");
    h.get_by_label_contains("total 6738415616");
    assert_eq!(h.state().scenario().model.pattern.len(), 1);
}

#[test]
fn exporting_a_report_writes_markdown_and_csv() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ui-report");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("scenario.md");
    let mut h = harness(ExplorerApp::default());
    h.state_mut()
        .request(Command::ExportReportPath(path.clone()));
    h.run();
    assert!(std::fs::read_to_string(&path).unwrap().contains("GiB"));
    assert!(dir.join("scenario-breakdown.csv").exists());
    assert!(dir.join("scenario-comparison.csv").exists());
}

#[test]
fn the_claims_window_loads_a_scenario() {
    let mut h = harness(ExplorerApp::default());
    let before = h.state().scenario().name.clone();
    h.get_by_label("Help").click();
    h.run();
    h.get_by_label("Seed article claims…").click();
    h.run();
    h.get_by_label("Seed article claims");
    let first = vram_explorer::ui::claims::results()
        .iter()
        .find(|r| r.preset_loads)
        .expect("a claim with a loadable preset");
    let expected = vram_explorer::presets::bundled_scenario(first.claim.preset)
        .expect("the claim's preset")
        .name;
    h.get_all_by_label("Load scenario")
        .next()
        .expect("a Load scenario button")
        .click();
    h.run();
    h.run();
    let after = &h.state().scenario().name;
    assert_eq!(after, &expected);
    assert_ne!(
        after, &before,
        "loading a claim's scenario changes the document"
    );
}

#[test]
fn clicking_a_component_explains_it() {
    let mut h = harness(app_with(|s| s.mode = Mode::Training));
    assert!(h.query_by_label_contains("Source — ").is_none());
    h.get_by_label_contains("Optimizer states: ").click();
    h.run();
    let source = text(&h, "Source — ");
    assert!(source.contains("ZeRO"), "{source}");
    let filled = text(&h, "Filled in — ");
    assert!(filled.contains('='), "{filled}");
    // Clicking again unpins it.
    h.get_by_label_contains("Optimizer states: ").click();
    h.run();
    assert!(h.query_by_label_contains("Source — ").is_none());
}

#[test]
fn the_per_layer_view_opens() {
    let mut h = harness(app_with(|s| s.mode = Mode::Training));
    h.get_by_label("Per layer").click();
    h.run();
    h.get_by_label("Attention activations");
    h.get_by_label("one layer");
}

#[test]
fn the_quantization_table_opens_for_inference_only() {
    let preset = vram_explorer::presets::bundled_scenario("llama2-70b-4bit-rtx4090")
        .expect("bundled preset");
    let mut h = harness(app_with(|s| *s = preset));
    assert!(
        h.query_by_label("GGUF Q4_K").is_none(),
        "collapsed: not computed"
    );
    h.get_by_label("Which quantization fits?").click();
    h.run();
    assert!(h.query_by_label("GGUF Q4_K").is_some());
    assert!(h.query_by_label("Max prompt").is_some());
    let h = harness(app_with(|s| s.mode = Mode::Training));
    assert!(h.query_by_label("Which quantization fits?").is_none());
}

/// The parallel degrees' controls take every value the file format accepts (`validate::RANGES`:
/// 1 ..= 65,536), not a narrower slider span (DP stopped at 4,096, TP at 64, PP at 128; issue 17).
#[test]
fn parallel_degree_controls_follow_the_documented_ranges() {
    let mut h = harness(app_with(|s| s.mode = Mode::Training));
    set_slider(&mut h, "Data parallel", 20_000.0);
    set_slider(&mut h, "Tensor parallel", 128.0);
    set_slider(&mut h, "Pipeline parallel", 256.0);
    let p = &h.state().scenario().parallel;
    assert_eq!((p.dp, p.tp, p.pp), (20_000, 128, 256));
    set_slider(&mut h, "Data parallel", 1e9);
    assert_eq!(h.state().scenario().parallel.dp, 65_536);
    set_slider(&mut h, "Micro-batch", 30_000.0);
    set_slider(&mut h, "Accumulation", 5_000.0);
    let w = &h.state().scenario().workload;
    assert_eq!((w.micro_batch, w.grad_accum_steps), (30_000, 5_000));
}

/// "Save first" in the unsaved-changes dialog saves and then does what the user asked (it used to
/// save and drop the action; issue 16).
#[test]
fn save_first_saves_then_opens_the_other_file() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let mine = dir.join("ui-test-save-first-mine.ron");
    let other = dir.join("ui-test-save-first-other.ron");
    let mut o = Scenario::default();
    o.workload.micro_batch = 7;
    std::fs::write(&other, vram_explorer::presets::to_ron_string(&o)).unwrap();
    let mut h = harness(ExplorerApp::default());
    h.state_mut().request(Command::SavePath(mine.clone()));
    h.run();
    h.state_mut().scenario_mut().workload.micro_batch = 3;
    h.run();
    assert!(h.state().is_dirty());
    h.state_mut().request(Command::OpenPath(other));
    h.run();
    h.get_by_label("Save first").click();
    for _ in 0..3 {
        h.run();
    }
    let saved = vram_explorer::presets::load(&mine).unwrap();
    assert_eq!(saved.workload.micro_batch, 3, "the edits were saved");
    assert_eq!(
        h.state().scenario().workload.micro_batch,
        7,
        "then the file opened"
    );
    assert!(h.query_by_label("Unsaved changes").is_none());
}

#[test]
fn context_parallel_slider_splits_the_sequence_on_screen() {
    // Llama-3-8B shape at 32K tokens: activations dominate the peak.
    let mut h = harness(app_with(|s| {
        s.mode = Mode::Training;
        let t = &mut s.model.transformer;
        (t.layers, t.hidden, t.heads, t.kv_heads, t.ffn) = (32, 4096, 32, 8, 14336);
        s.workload.seq_len = 32_768;
    }));
    assert!(h.query_by_label("Context-parallel style").is_none());
    let before = number_after(&text(&h, "Saved activations:"), "Saved activations:");
    set_slider(&mut h, "Context parallel", 8.0);
    assert_eq!(h.state().scenario().parallel.cp, 8);
    let after = number_after(&text(&h, "Saved activations:"), "Saved activations:");
    assert!(after < before / 4.0, "activations {before} -> {after}");
    choose(&mut h, "Context-parallel style", "All-to-all (Ulysses)");
    assert_eq!(
        h.state().scenario().parallel.cp_style,
        vram_explorer::scenario::CpStyle::AllToAll
    );
    h.get_by_label_contains("Total: 8 GPUs");
}
