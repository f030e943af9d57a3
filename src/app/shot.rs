//! PNG of the window: File ▸ Export PNG…, and the automated screenshot of a run started with
//! `VRAM_EXPLORER_SCREENSHOT=out.png` (see [`super::env`]): a few frames, the PNG, then exit. Both
//! also write the window without the side panel and each chart as its own PNG beside it ([`crops`]).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::files;
use crate::ui::notice::Notice;

/// Frames rendered before the automated screenshot (layout settles in two or three).
const SETTLE_FRAMES: u32 = 8;

type Slot = Arc<Mutex<Option<Arc<egui::ColorImage>>>>;

#[derive(Default)]
pub struct Shots {
    /// Automated screenshot target; the app exits after writing it.
    auto: Option<PathBuf>,
    frames: u32,
    requested: bool,
    /// Where the image being captured goes.
    target: Option<PathBuf>,
    image: Slot,
}

impl Shots {
    /// Shots of a run; `auto` is the automated screenshot's target.
    pub fn new(auto: Option<PathBuf>) -> Self {
        Shots {
            auto,
            ..Shots::default()
        }
    }

    pub fn automated(&self) -> bool {
        self.auto.is_some()
    }

    /// Asks the integration for the next frame's pixels, to be written to `path`.
    pub fn export(&mut self, ctx: &egui::Context, path: PathBuf) {
        let path = files::with_extension(path, "png");
        self.target = Some(path);
        let slot = Arc::clone(&self.image);
        ctx.request_screenshot(move |image| {
            if let Ok(mut s) = slot.lock() {
                *s = Some(image);
            }
        });
        ctx.request_repaint();
    }

    /// Called once per frame after the UI.
    pub fn frame(&mut self, ctx: &egui::Context, notices: &mut Vec<Notice>) {
        self.frames = self.frames.saturating_add(1);
        if let Some(path) = self.auto.clone() {
            if !self.requested && self.frames >= SETTLE_FRAMES {
                self.requested = true;
                self.export(ctx, path);
            } else if !self.requested {
                ctx.request_repaint();
            }
        }
        let Some(target) = self.target.clone() else {
            return;
        };
        let image = self.image.lock().ok().and_then(|mut s| s.take());
        let Some(image) = image else {
            ctx.request_repaint();
            return;
        };
        self.target = None;
        let result = files::save_png(&target, &image).and_then(|()| crops(ctx, &target, &image));
        if self.auto.is_some() {
            if let Err(e) = &result {
                eprintln!("vram-explorer: {e}");
            }
            ctx.send_viewport_cmd(egui::ViewportCommand::Close);
        } else {
            notices.push(match result {
                Ok(()) => Notice::info(format!(
                    "Exported: {}, and beside it the window without the controls (…-window.png) \
                     and each chart (…-memory.png, …-sweep.png, …)",
                    target.display()
                )),
                Err(e) => Notice::error(e),
            });
        }
    }
}

/// Beside `x.png` (the whole window): `x-window.png`, the window without the side panel and the
/// menus, and one image per chart on screen, `x-memory.png`, `x-sweep.png`, … (for slides), cropped
/// from the same capture at the screen's pixel density.
fn crops(
    ctx: &egui::Context,
    target: &std::path::Path,
    image: &egui::ColorImage,
) -> Result<(), String> {
    let drawn = crate::ui::layout::drawn(ctx);
    let ppp = Some(ctx.pixels_per_point());
    let stem = target
        .file_stem()
        .map_or_else(|| "export".to_owned(), |s| s.to_string_lossy().into_owned());
    let named = |name: &str| target.with_file_name(format!("{stem}-{}.png", name.to_lowercase()));
    let screen = egui::Rect::from_min_size(
        egui::Pos2::ZERO,
        egui::vec2(image.size[0] as f32, image.size[1] as f32) / ctx.pixels_per_point(),
    );
    let central = drawn.central.map(|r| ("window", r));
    let parts = central.into_iter().chain(drawn.charts.iter().copied());
    for (name, rect) in parts {
        let rect = rect.intersect(screen);
        if rect.width() < 1.0 || rect.height() < 1.0 {
            continue;
        }
        files::save_png(&named(name), &image.region(&rect, ppp))?;
    }
    Ok(())
}
