//! Issue 16, "a window you can present from": the layout at projector and laptop sizes, in normal and
//! presentation mode, read through the accessibility tree ("Chart: …", "Legend: …", "Marker: …"
//! rectangles published from the plot transforms), the notices, and the presentation theme.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]
#![cfg(feature = "gui")]

use egui::accesskit::Role;
use egui::{Color32, Rect, Visuals};
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT, Queryable};
use vram_explorer::app::ExplorerApp;
use vram_explorer::app::commands::Command;
use vram_explorer::estimator::Component;
use vram_explorer::scenario::{Mode, Scenario};
use vram_explorer::ui::{Prefs, ThemeChoice, theme};

/// A change to the default scenario.
type Edit = fn(&mut Scenario);

const SIZES: [(f32, f32); 3] = [(1280.0, 720.0), (1920.0, 1080.0), (1024.0, 700.0)];
const GRID: [&str; 4] = ["Memory", "Roofline", "Architecture", "Sweep"];

#[path = "support/window.rs"]
mod window;
use window::{app, harness, inside, rect};

/// Every grid chart lies inside the viewport, and the right column is not pushed right by an
/// overflowing left one; the sweep's and roofline's legends do not cover their
/// marker, and each marker is inside its chart.
fn check_layout(h: &Harness<'_, ExplorerApp>, size: (f32, f32), what: &str) {
    let viewport = Rect::from_min_size(egui::Pos2::ZERO, egui::vec2(size.0, size.1));
    for chart in GRID {
        let r = rect(h, &format!("Chart: {chart}"));
        assert!(
            inside(viewport, r),
            "{what}: chart {chart} at {r:?} leaves {viewport:?} (controls panel {:?})",
            h.query_by_label("Panel: Controls").map(|n| n.rect())
        );
        assert!(
            r.height() > 120.0,
            "{what}: chart {chart} squashed to {r:?}"
        );
    }
    let (top_right, bottom_right) = if h.state().prefs().presentation {
        ("Sweep", "Architecture")
    } else {
        ("Roofline", "Sweep")
    };
    let (a, b) = (
        rect(h, &format!("Chart: {top_right}")),
        rect(h, &format!("Chart: {bottom_right}")),
    );
    assert!(
        (a.left() - b.left()).abs() < 1.0 && (a.right() - b.right()).abs() < 1.0,
        "{what}: right column {a:?} vs {b:?}"
    );
    for chart in ["Sweep", "Roofline", "Memory"] {
        let legend = rect(h, &format!("Legend: {chart}"));
        let marker = rect(h, &format!("Marker: {chart}"));
        let cell = rect(h, &format!("Chart: {chart}"));
        assert!(
            !legend.intersects(marker),
            "{what}: {chart} legend {legend:?} covers the marker {marker:?}"
        );
        assert!(
            inside(cell, marker),
            "{what}: {chart} marker {marker:?} outside its chart {cell:?}"
        );
    }
}

#[test]
fn every_chart_fits_and_no_legend_covers_its_marker() {
    let scenarios: [(&str, Edit); 2] = [
        ("default inference", |_| {}),
        ("training", |s| {
            s.mode = Mode::Training;
            s.workload.micro_batch = 8;
        }),
    ];
    for size in SIZES {
        for presentation in [false, true] {
            for (name, edit) in &scenarios {
                let mut h = harness(app(presentation, edit), size);
                h.run_steps(3);
                let what = format!("{name} at {size:?}, presentation {presentation}");
                check_layout(&h, size, &what);
            }
        }
    }
}

#[test]
fn charts_stay_put_when_the_verdict_flips() {
    for presentation in [false, true] {
        let mut h = harness(
            app(presentation, |s| s.workload.micro_batch = 32),
            (1280.0, 800.0),
        );
        h.get_by_label("FITS");
        let combo = h.get_by_role_and_label(Role::ComboBox, "Sweep over").rect();
        let before: Vec<Rect> = GRID
            .iter()
            .map(|c| rect(&h, &format!("Chart: {c}")))
            .collect();
        // A 24 GB card: diagnostics and "Make it fit" appear.
        h.state_mut().scenario_mut().gpu =
            vram_explorer::scenario::GpuChoice::Catalog(vram_explorer::hardware::GpuId::Rtx4090);
        h.run();
        h.get_by_label_contains("DOES NOT FIT");
        let moved = h.get_by_role_and_label(Role::ComboBox, "Sweep over").rect();
        assert_eq!(
            combo.top(),
            moved.top(),
            "presentation {presentation}: sweep moved"
        );
        for (c, b) in GRID.iter().zip(before) {
            let a = rect(&h, &format!("Chart: {c}"));
            assert_eq!(
                b.top(),
                a.top(),
                "presentation {presentation}: chart {c} moved"
            );
        }
    }
}

#[test]
fn confirmations_expire_and_errors_stay() {
    let dir = std::env::temp_dir().join(format!("vram-ui-window-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut h = harness(ExplorerApp::default(), (1280.0, 800.0));
    h.state_mut().request(Command::SavePath(dir.join("a.ron")));
    h.state_mut()
        .request(Command::OpenPath(dir.join("missing.ron")));
    h.input_mut().time = Some(10.0);
    h.run();
    h.get_by_label_contains("Saved");
    assert_eq!(h.state().notices().len(), 2, "{:?}", h.state().notices());
    // Seven seconds later the confirmation is gone; the error is still there.
    h.input_mut().time = Some(17.0);
    h.run();
    assert!(h.query_by_label_contains("Saved").is_none());
    assert_eq!(h.state().notices().len(), 1, "{:?}", h.state().notices());
    h.get_by_label_contains("Error:");
    h.input_mut().time = Some(1000.0);
    h.run();
    assert_eq!(h.state().notices().len(), 1);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn f5_twice_keeps_the_controls_panel_width() {
    let mut app = app(false, |_| {});
    app.prefs_mut().controls_in_presentation = true;
    let mut h = harness(app, (1280.0, 800.0));
    let before = rect(&h, "Panel: Controls").width();
    for _ in 0..2 {
        h.key_press(egui::Key::F5);
        h.run();
    }
    assert!(!h.state().prefs().presentation);
    let after = rect(&h, "Panel: Controls").width();
    assert!((after - before).abs() < 1.0, "panel {before} -> {after}");
}

#[test]
fn presentation_title_line_names_the_scenario() {
    let h = harness(
        app(true, |s| s.name = "Llama on a projector".to_owned()),
        (1280.0, 720.0),
    );
    h.get_by_label("Llama on a projector");
    h.get_by_label("FITS");
}

/// WCAG 2.x relative luminance and contrast ratio (w3.org/TR/WCAG21, "relative luminance").
fn luminance(c: Color32) -> f64 {
    let lin = |v: u8| {
        let s = f64::from(v) / 255.0;
        if s <= 0.040_45 {
            s / 12.92
        } else {
            ((s + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * lin(c.r()) + 0.7152 * lin(c.g()) + 0.0722 * lin(c.b())
}

fn contrast(a: Color32, b: Color32) -> f64 {
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

#[test]
fn presentation_text_is_large_and_colours_have_contrast_in_both_themes() {
    for choice in [ThemeChoice::Dark, ThemeChoice::Light] {
        let mut a = app(true, |_| {});
        a.prefs_mut().theme = choice;
        let h = harness(a, (1280.0, 720.0));
        let prefs = Prefs {
            presentation: true,
            theme: choice,
            ..Prefs::default()
        };
        let egui_theme = match choice {
            ThemeChoice::Dark => egui::Theme::Dark,
            ThemeChoice::Light => egui::Theme::Light,
        };
        let style = h.ctx.style_of(egui_theme);
        let body = style.text_styles[&egui::TextStyle::Body].size;
        assert!(body >= 18.0, "{choice:?}: body {body} px");
        assert!(theme::chart_title_size(&prefs) >= 24.0);
        assert!(theme::title_size(&prefs) >= 24.0);
        let visuals = match choice {
            ThemeChoice::Dark => Visuals::dark(),
            ThemeChoice::Light => Visuals::light(),
        };
        assert_eq!(h.ctx.theme(), egui_theme);
        assert_eq!(style.visuals.panel_fill, visuals.panel_fill);
        let text = [
            ("text", visuals.text_color()),
            ("good", theme::good(choice)),
            ("bad", theme::bad(choice)),
            ("warning", theme::warning(choice)),
            ("note", theme::note(choice)),
        ];
        for bg in [visuals.panel_fill, visuals.window_fill] {
            for (name, c) in text {
                let r = contrast(c, bg);
                assert!(r >= 4.5, "{choice:?}: text {name} {c:?} on {bg:?}: {r:.2}");
            }
        }
        let mut marks: Vec<(String, Color32)> = Component::ALL
            .iter()
            .map(|c| (format!("{c:?}"), theme::component_on(*c, choice)))
            .collect();
        marks.extend([
            ("current".to_owned(), theme::current(choice)),
            ("baseline".to_owned(), theme::baseline(choice)),
            ("capacity".to_owned(), theme::capacity(choice)),
            ("offloaded".to_owned(), theme::offloaded_on(choice)),
        ]);
        for (i, c) in theme::operating_points(choice).iter().enumerate() {
            marks.push((format!("operating point {i}"), *c));
        }
        let plot_bg = visuals.extreme_bg_color;
        for (name, c) in marks {
            let r = contrast(c, plot_bg);
            assert!(
                r >= 3.0,
                "{choice:?}: mark {name} {c:?} on {plot_bg:?}: {r:.2}"
            );
        }
    }
}

#[test]
fn one_gpu_and_one_step_are_singular() {
    let h = harness(app(false, |s| s.mode = Mode::Training), (1600.0, 1400.0));
    h.get_by_label("Total: 1 GPU (DP × TP × PP × CP)");
    for (label, unit) in [("Data parallel", "GPU"), ("Accumulation", "step")] {
        let Some(node) = h
            .query_all_by_label(label)
            .find(|n| n.accesskit_node().role() == Role::SpinButton)
        else {
            panic!("no spin button {label}");
        };
        let value = node.accesskit_node().value().unwrap_or_default();
        assert_eq!(value, format!("1 {unit}"), "{label}");
    }
}

/// Presentation mode's status band is one row: the most serious diagnostic, cut to that row (the
/// whole message still in the accessibility label and on hover), and a count of the others
/// instead of rows the band would clip (the 720p window once showed half a second line).
#[test]
fn presentation_shows_one_diagnostic_line_and_counts_the_rest() {
    // Does not fit (an error) and warns about its layout.
    let edit = |s: &mut Scenario| {
        *s = vram_explorer::presets::bundled_scenario("gpt3-175b-mp32-a100").unwrap();
    };
    let h = harness(app(true, edit), (1280.0, 720.0));
    let errors: Vec<_> = h.get_all_by_label_contains("Error:").collect();
    assert_eq!(errors.len(), 1, "one diagnostic line");
    let n = h.state().scenario().clone();
    let all: Vec<_> = vram_explorer::estimator::estimate(&n)
        .diagnostics
        .iter()
        .collect();
    assert!(all.len() >= 2, "the edit raises several diagnostics");
    let more = format!("+{} more", all.len() - 1);
    h.get_by_label(&more);
    let shown = all
        .iter()
        .filter(|d| h.query_by_label_contains(d.message()).is_some())
        .count();
    assert_eq!(shown, 1, "only the most serious message has a line");
    // Outside presentation mode every diagnostic has its own line.
    let h = harness(app(false, edit), (1280.0, 720.0));
    assert!(h.query_by_label(&more).is_none());
    for d in &all {
        assert!(
            h.get_all_by_label_contains(d.message()).count() >= 1,
            "{}",
            d.message()
        );
    }
}
