//! Export for slides (issue 16): File ▸ Export PNG for slides… goes through the app's own screenshot
//! path. The test answers the app's screenshot requests itself (kittest has no renderer here) with
//! an image of the window's size in pixels, and checks what the app asked for and wrote: the window
//! as shown, then a second capture at 2 px per point in the theme picked for slides, cropped into
//! the window without the controls and one PNG per chart, each 2× its rectangle in points, and the
//! one-page summary (Markdown linking the images, self-contained HTML); then zoom, size and theme
//! are put back.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test fails by panicking; one export is checked end to end"
)]
#![cfg(feature = "gui")]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use egui_kittest::Harness;
use vram_explorer::app::ExplorerApp;
use vram_explorer::app::commands::Command;
use vram_explorer::ui::{ExportTheme, ThemeChoice};

const SIZE: egui::Vec2 = egui::vec2(1280.0, 720.0);
const CHARTS: [&str; 4] = ["memory", "sweep", "roofline", "architecture"];

/// One screenshot the app asked for: pixels per point, theme and window size at that frame.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Capture {
    ppp: f32,
    theme: ThemeChoice,
    size: egui::Vec2,
}

/// What the frame of a capture showed: the chart rectangles (points).
type Rects = Vec<egui::Rect>;

/// Answers this frame's screenshot requests with a blank image of the window's pixel size.
fn answer(h: &Harness<'_, ExplorerApp>, captures: &mut Vec<Capture>, rects: &mut Vec<Rects>) {
    let requests: Vec<egui::ScreenshotCallback> = h
        .output()
        .viewport_output
        .values()
        .flat_map(|v| {
            v.commands.iter().filter_map(|c| match c {
                egui::ViewportCommand::Screenshot(cb) => Some(cb.clone()),
                _ => None,
            })
        })
        .collect();
    for cb in requests {
        let ppp = h.ctx.pixels_per_point();
        let points = h.ctx.content_rect().size();
        let px = (points * ppp).round();
        rects.push(CHARTS.iter().map(|c| chart_rect(h, c)).collect());
        captures.push(Capture {
            ppp,
            theme: h.state().prefs().theme,
            size: points,
        });
        let image = egui::ColorImage::filled(
            [px.x as usize, px.y as usize],
            egui::Color32::from_rgb(10, 20, 30),
        );
        cb.complete(Arc::new(image));
    }
}

/// Width and height of a PNG, from its IHDR chunk (bytes 16..24, big-endian).
fn png_size(path: &Path) -> [u32; 2] {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(b.get(1..4), Some(&b"PNG"[..]), "{}", path.display());
    let be = |i: usize| u32::from_be_bytes(b[i..i + 4].try_into().unwrap());
    [be(16), be(20)]
}

fn out_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("ui-export-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The chart rectangles of the last frame, from the accessibility tree ("Chart: Memory", …).
fn chart_rect(h: &Harness<'_, ExplorerApp>, name: &str) -> egui::Rect {
    use egui_kittest::kittest::Queryable;
    let label = format!("Chart: {}{}", name[..1].to_uppercase(), &name[1..]);
    let r = h.get_by_label(&label).rect();
    egui::Rect::from_min_max(r.min, r.max)
}

#[test]
fn export_writes_the_window_then_each_chart_at_2x_in_the_picked_theme_and_a_summary() {
    let mut app = ExplorerApp::default();
    app.prefs_mut().presentation = true;
    app.prefs_mut().export_theme = ExportTheme::Light;
    let mut h = Harness::builder()
        .with_size(SIZE)
        .build_ui_state(|ui, app: &mut ExplorerApp| app.ui(ui), app);
    h.run();
    let dir = out_dir("light");
    let target = dir.join("talk.png");
    h.state_mut()
        .request(Command::ExportPngPath(target.clone()));
    let (mut captures, mut rects) = (Vec::new(), Vec::new());
    for _ in 0..200 {
        h.step();
        answer(&h, &mut captures, &mut rects);
        if h.state()
            .notices()
            .iter()
            .any(|n| n.text.starts_with("Exported"))
        {
            break;
        }
    }
    let errors: Vec<_> = h.state().notices().iter().map(|n| n.text.clone()).collect();
    assert_eq!(captures.len(), 2, "two captures: {captures:?} {errors:?}");
    assert_eq!(
        captures[0],
        Capture {
            ppp: 1.0,
            theme: ThemeChoice::Dark,
            size: SIZE
        },
        "the window as shown"
    );
    assert_eq!(
        captures[1],
        Capture {
            ppp: 2.0,
            theme: ThemeChoice::Light,
            size: SIZE
        },
        "the slides: 2 px per point, light, the same layout in points"
    );
    assert_eq!(png_size(&target), [1280, 720]);
    let window = png_size(&dir.join("talk-window.png"));
    assert!(window[0] > 2 * 1000 && window[1] > 2 * 600, "{window:?}");
    let md = std::fs::read_to_string(dir.join("talk-summary.md")).unwrap();
    let html = std::fs::read_to_string(dir.join("talk-summary.html")).unwrap();
    for ((chart, rect), shown) in CHARTS.iter().zip(&rects[1]).zip(&rects[0]) {
        // The slide layout is the window's (text rounds to other pixels at 2×: a few points).
        assert!(
            (rect.size() - shown.size()).length() < 8.0,
            "{chart}: {rect:?} at 2×, {shown:?} as shown"
        );
        let file = format!("talk-{chart}.png");
        let [w, hh] = png_size(&dir.join(&file));
        let want = [
            (rect.width() * 2.0).round() as u32,
            (rect.height() * 2.0).round() as u32,
        ];
        assert!(
            w.abs_diff(want[0]) <= 2 && hh.abs_diff(want[1]) <= 2,
            "{chart}: {w}×{hh} px for a {rect:?} chart"
        );
        assert!(
            md.contains(&format!("]({file})")),
            "{chart} not linked:\n{md}"
        );
        // An odd pixel width is a half point: the summary rounds the chart's width in points.
        assert!(
            html.contains(&format!("width=\"{}\"", w / 2))
                || html.contains(&format!("width=\"{}\"", w.div_ceil(2))),
            "{chart}: no {}-point image",
            w / 2
        );
    }
    assert!(md.starts_with(&format!("# {}", h.state().scenario().title())));
    assert_eq!(html.matches("src=\"data:image/png;base64,").count(), 4);
    assert!(!html.contains(".png\""), "self-contained");
    // Put back: zoom, size and theme.
    for _ in 0..5 {
        h.step();
    }
    assert_eq!(h.ctx.pixels_per_point(), 1.0);
    assert_eq!(h.ctx.content_rect().size(), SIZE);
    assert_eq!(h.state().prefs().theme, ThemeChoice::Dark);
}
