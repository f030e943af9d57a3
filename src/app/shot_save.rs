//! Writes the slide images of an export ([`super::shot`]) from one capture at 2 px per point:
//! beside `x.png`, `x-window.png` (the central area: no side panel, no menus), one image per chart
//! drawn whole on screen (`x-memory.png`, `x-sweep.png`, …; a chart cut by the scroll edge is left
//! out rather than exported cut), and the one-page summary `x-summary.md` (linking the images) and
//! `x-summary.html` (self-contained), [`crate::report::summary`].

use std::path::{Path, PathBuf};

use super::files;
use super::session::Session;
use crate::estimator::estimate;
use crate::report::summary::{self, Figure};

/// One written chart image.
struct Written {
    name: &'static str,
    file: String,
    png: Vec<u8>,
    points: [u32; 2],
}

/// Crops `image` (the whole window at the context's pixels per point) and writes the files.
pub fn slides(
    ctx: &egui::Context,
    session: &Session,
    target: &Path,
    image: &egui::ColorImage,
) -> Result<(), String> {
    let drawn = crate::ui::layout::drawn(ctx);
    let ppp = ctx.pixels_per_point();
    let stem = target
        .file_stem()
        .map_or_else(|| "export".to_owned(), |s| s.to_string_lossy().into_owned());
    let file_name = |part: &str| format!("{stem}-{}.png", part.to_lowercase());
    let beside = |name: &str| -> PathBuf { target.with_file_name(name) };
    let screen = egui::Rect::from_min_size(
        egui::Pos2::ZERO,
        egui::vec2(image.size[0] as f32, image.size[1] as f32) / ppp,
    );
    if let Some(rect) = drawn.central {
        let rect = rect.intersect(screen);
        if rect.width() >= 1.0 && rect.height() >= 1.0 {
            files::save_png(
                &beside(&file_name("window")),
                &image.region(&rect, Some(ppp)),
            )?;
        }
    }
    let mut written = Vec::new();
    for chart in &drawn.charts {
        let rect = chart.visible.intersect(screen);
        // Whole on screen (a point of slack for rounding), else a cut slide: left out.
        let whole = (rect.size() - chart.rect.size()).length() < 1.0;
        if !whole || rect.width() < 1.0 || rect.height() < 1.0 {
            continue;
        }
        let file = file_name(chart.name);
        let png = files::save_png(&beside(&file), &image.region(&rect, Some(ppp)))?;
        written.push(Written {
            name: chart.name,
            file,
            png,
            points: [rect.width().round() as u32, rect.height().round() as u32],
        });
    }
    let figures: Vec<Figure<'_>> = written
        .iter()
        .map(|w| Figure {
            name: w.name,
            file: &w.file,
            png: &w.png,
            points: w.points,
        })
        .collect();
    let s = &session.scenario;
    let e = estimate(s);
    let unit = session.prefs.unit;
    files::write(
        &beside(&format!("{stem}-summary.md")),
        summary::markdown(s, &e, &figures, unit).as_bytes(),
    )?;
    files::write(
        &beside(&format!("{stem}-summary.html")),
        summary::html(s, &e, &figures, unit).as_bytes(),
    )
}
