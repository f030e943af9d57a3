//! The measured-run panel under the memory chart: load a measurement (a PyTorch memory snapshot, a
//! log or CSV, or pasted text), read how it compares with the estimate, calibrate the overhead
//! assumptions from it (one undoable edit, listed before it is made) and copy the comparison or the
//! timeline. Files are opened by the app (`app/measured.rs`); pasted text is parsed here.

use egui::Ui;

use super::Prefs;
use super::measured_state::{self, Loaded, Request};
use crate::cli::compare as report;
use crate::estimator::Estimate;
use crate::measured::compare::{calibration, rows};
use crate::measured::{self, Measurement};
use crate::scenario::Scenario;

/// Height the panel takes: the controls (two rows when narrow); with a measurement three of results and one of
/// buttons; the paste box and an error when shown.
pub fn height(ui: &Ui) -> f32 {
    let row =
        ui.text_style_height(&egui::TextStyle::Body) + 2.0 * ui.spacing().item_spacing.y + 4.0;
    // The controls' row is about 50 lines of body text wide; narrower, it wraps to two.
    let body = ui.text_style_height(&egui::TextStyle::Body);
    let controls = if ui.available_width() < 50.0 * body {
        2.0
    } else {
        1.0
    };
    let (loaded, loading) =
        measured_state::with(ui.ctx(), |s| (s.loaded.is_some(), s.loading.is_some()));
    let results = if loaded { 4.0 } else { 0.0 };
    let loading = if loading { 1.0 } else { 0.0 };
    (controls + results + loading) * row
}

/// Draws the panel.
pub fn ui(ui: &mut Ui, prefs: &Prefs, scenario: &Scenario, est: &Estimate) {
    let h = height(ui);
    egui::ScrollArea::vertical()
        .id_salt("measured_panel")
        .max_height(h)
        .auto_shrink([false, true])
        .show(ui, |ui| panel(ui, prefs, scenario, est));
}

fn panel(ui: &mut Ui, prefs: &Prefs, scenario: &Scenario, est: &Estimate) {
    let ctx = ui.ctx().clone();
    let mut st = measured_state::with(&ctx, |s| s.clone());
    let before = (st.path.clone(), st.paste.clone(), st.paste_open);
    ui.horizontal_wrapped(|ui| {
        ui.label("Measured run:");
        if ui
            .button("Load measurement…")
            .on_hover_text(
                "A PyTorch memory snapshot (.pickle from torch.cuda.memory._dump_snapshot), a log with \
                 max_memory_allocated/max_memory_reserved, an nvidia-smi memory.used CSV or a vLLM \
                 startup log. Or drop the file on the window.",
            )
            .clicked()
        {
            st.requests.push(Request::Pick);
        }
        ui.add(egui::TextEdit::singleline(&mut st.path).hint_text("or a path").desired_width(160.0));
        if ui.button("Load path").clicked() && !st.path.trim().is_empty() {
            st.requests.push(Request::Path(st.path.trim().into()));
        }
        ui.toggle_value(&mut st.paste_open, "Paste…")
            .on_hover_text("Paste max_memory_allocated/reserved lines, nvidia-smi output or a vLLM log.");
        if st.loaded.is_some() && ui.button("Clear").clicked() {
            st.loaded = None;
        }
        copy_menu(ui, scenario, est, st.loaded.as_deref());
    });
    if st.paste_open {
        ui.horizontal(|ui| {
            let label = ui.label("Text:");
            ui.add(
                egui::TextEdit::multiline(&mut st.paste)
                    .desired_rows(2)
                    .desired_width(ui.available_width() - 90.0),
            )
            .labelled_by(label.id);
            if ui.button("Use pasted").clicked() {
                let r = measured::light::parse(&st.paste).map_err(|e| e.to_string());
                st.error = r.as_ref().err().cloned();
                if let Ok(l) = r {
                    st.loaded = Some(std::sync::Arc::new(Loaded {
                        source: "pasted text".to_owned(),
                        measurement: Measurement::Light(l),
                    }));
                    st.paste_open = false;
                    st.timeline = true;
                }
            }
        });
    }
    if let Some(name) = &st.loading {
        ui.horizontal(|ui| {
            ui.spinner();
            ui.label(format!("Loading… {name}"));
        });
    }
    if let Some(e) = &st.error {
        ui.colored_label(ui.visuals().error_fg_color, e);
    }
    if let Some(l) = st.loaded.clone() {
        results(ui, prefs, &mut st, &l, (scenario, est));
    }
    let after = (st.path.clone(), st.paste.clone(), st.paste_open);
    measured_state::with(&ctx, |s| {
        if before != after {
            s.path = st.path.clone();
            s.paste = st.paste.clone();
            s.paste_open = st.paste_open;
        }
        s.loaded = st.loaded.clone();
        s.error = st.error.clone();
        s.timeline = st.timeline;
        s.requests.append(&mut st.requests);
    });
}

/// The comparison in one line, the calibration button and the copy buttons.
fn results(
    ui: &mut Ui,
    prefs: &Prefs,
    st: &mut measured_state::State,
    l: &Loaded,
    (scenario, est): (&Scenario, &Estimate),
) {
    let rows = rows(&l.measurement, est);
    let summary: Vec<String> = rows
        .iter()
        .filter(|r| !r.statistic.starts_with("at the peak"))
        .map(|r| {
            let e = r
                .error()
                .map_or_else(|| "—".to_owned(), |e| format!("{:+.1} %", e * 100.0));
            let what = r.statistic.trim_start_matches("snapshot ");
            format!(
                "{what} {} (estimate {e})",
                prefs.unit.format(crate::units::Bytes(r.measured))
            )
        })
        .collect();
    let table = report::rows_markdown(&rows);
    let what = format!("{} — {}", report::describe(&l.measurement), l.source);
    ui.add(egui::Label::new(what).truncate())
        .on_hover_text(&table);
    ui.add(egui::Label::new(summary.join(" · ")).truncate())
        .on_hover_text(&table);
    if let Some(d) = report::largest_difference(&rows) {
        ui.add(egui::Label::new(d).truncate()).on_hover_text(&table);
    }
    ui.horizontal(|ui| {
        let changes = calibration(&l.measurement, scenario);
        let hover = report::calibration_markdown(&changes);
        let button = ui.add_enabled(
            !changes.is_empty(),
            egui::Button::new("Calibrate from measurement"),
        );
        if button
            .on_hover_text(hover)
            .on_disabled_hover_text("The measurement says nothing about the overheads.")
            .clicked()
        {
            st.requests.push(Request::Calibrate(changes));
        }
    });
}

/// Copies the step timeline (CSV, JSON with the measured snapshot) or the comparison.
fn copy_menu(ui: &mut Ui, scenario: &Scenario, est: &Estimate, loaded: Option<&Loaded>) {
    ui.menu_button("Copy…", |ui| {
        let t = crate::estimator::timeline::build(scenario, est);
        if ui.button("Timeline (CSV)").clicked() {
            ui.ctx().copy_text(crate::cli::timeline::csv(&t));
        }
        if ui.button("Timeline (JSON)").clicked() {
            let m = match loaded.map(|l| &l.measurement) {
                Some(Measurement::Snapshot(m)) => Some(m.as_ref()),
                _ => None,
            };
            ui.ctx()
                .copy_text(crate::cli::timeline::json(scenario, "app", &t, m));
        }
        if let Some(l) = loaded
            && ui.button("Comparison (Markdown)").clicked()
        {
            ui.ctx()
                .copy_text(report::markdown(scenario, est, &l.measurement, &l.source));
        }
    })
    .response
    .on_hover_text(
        "The step timeline as CSV or JSON, or the comparison as Markdown, on the clipboard.",
    );
}
