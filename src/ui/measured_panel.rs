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

/// Height the panel takes in a chart cell `cell` points high: what it measured when last drawn
/// (`ui` stores it), or before it was ever drawn an estimate (the controls, two rows when narrow;
/// three rows of results and one of buttons with a measurement; one while loading). Never more
/// than 45 % of the cell: the chart keeps the larger part, and the panel scrolls.
pub fn height(ui: &Ui, cell: f32) -> f32 {
    let cap = (0.45 * cell).max(40.0);
    if let Some(h) = ui.ctx().data(|d| d.get_temp::<f32>(height_id())) {
        return h.min(cap);
    }
    let row =
        ui.text_style_height(&egui::TextStyle::Body) + 2.0 * ui.spacing().item_spacing.y + 4.0;
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
    ((controls + results + loading) * row).min(cap)
}

fn height_id() -> egui::Id {
    egui::Id::unique("vram_explorer_measured_panel_height")
}

/// Draws the panel. The chart above it was sized with [`height`]: when the panel's content
/// turns out taller or shorter (a row wrapped, a result appeared), the height is stored and the
/// frame is laid out again, so the chart never overlaps the panel nor leaves a gap.
pub fn ui(ui: &mut Ui, cell: f32, prefs: &Prefs, scenario: &Scenario, est: &Estimate) {
    let h = height(ui, cell);
    let out = egui::ScrollArea::vertical()
        .id_salt("measured_panel")
        .max_height(h)
        .auto_shrink([false, true])
        .show(ui, |ui| panel(ui, prefs, scenario, est));
    let wanted = out.content_size.y.ceil();
    let stored = ui.ctx().data(|d| d.get_temp::<f32>(height_id()));
    if stored.is_none_or(|s| (s - wanted).abs() > 0.5) {
        ui.ctx().data_mut(|d| d.insert_temp(height_id(), wanted));
        ui.ctx().request_discard("measured panel height changed");
    }
}

/// The panel's controls. What it edits (the typed path, the pasted text) is taken out of the
/// shared state for the frame and put back after; everything else is read once and written
/// only by the action that changes it, so a load finishing on the worker thread mid-frame is
/// never overwritten with the frame's stale copy.
fn panel(ui: &mut Ui, prefs: &Prefs, scenario: &Scenario, est: &Estimate) {
    let ctx = ui.ctx().clone();
    let (mut draft, loaded, loading, error) = measured_state::with(&ctx, |s| {
        let view = (s.loaded.clone(), s.loading.clone(), s.error.clone());
        (s.take_draft(), view.0, view.1, view.2)
    });
    let request = |r: Request| measured_state::with(&ctx, |s| s.requests.push(r));
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
            request(Request::Pick);
        }
        ui.add(
            egui::TextEdit::singleline(&mut draft.path)
                .hint_text("or a path")
                .desired_width(160.0),
        );
        if ui.button("Load path").clicked() && !draft.path.trim().is_empty() {
            request(Request::Path(draft.path.trim().into()));
        }
        ui.toggle_value(&mut draft.paste_open, "Paste…")
            .on_hover_text("Paste max_memory_allocated/reserved lines, nvidia-smi output or a vLLM log.");
        if loaded.is_some() && ui.button("Clear").clicked() {
            measured_state::with(&ctx, |s| s.loaded = None);
        }
        copy_menu(ui, scenario, est, loaded.as_deref());
    });
    if draft.paste_open {
        ui.horizontal(|ui| {
            let label = ui.label("Text:");
            ui.add(
                egui::TextEdit::multiline(&mut draft.paste)
                    .desired_rows(2)
                    .desired_width(ui.available_width() - 90.0),
            )
            .labelled_by(label.id);
            if ui.button("Use pasted").clicked() {
                let r = measured::light::parse(&draft.paste).map_err(|e| e.to_string());
                if r.is_ok() {
                    draft.paste_open = false;
                }
                measured_state::set(
                    &ctx,
                    r.map(|l| Loaded {
                        source: "pasted text".to_owned(),
                        measurement: Measurement::Light(l),
                    }),
                );
            }
        });
    }
    if let Some(name) = &loading {
        ui.horizontal(|ui| {
            ui.spinner();
            ui.label(format!("Loading… {name}"));
        });
    }
    if let Some(e) = &error {
        ui.colored_label(ui.visuals().error_fg_color, e);
    }
    if let Some(l) = &loaded {
        results(ui, prefs, &request, l, (scenario, est));
    }
    measured_state::with(&ctx, |s| s.put_draft(draft));
}

/// The comparison in one line, the calibration button and the copy buttons.
fn results(
    ui: &mut Ui,
    prefs: &Prefs,
    request: &dyn Fn(Request),
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
        let changes = calibration(&l.measurement, scenario, est);
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
            request(Request::Calibrate(changes));
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
