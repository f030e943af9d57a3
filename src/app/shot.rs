//! PNG of the window: File ▸ Export PNG…, and the automated screenshot of a run started with
//! `VRAM_EXPLORER_SCREENSHOT=out.png` (see [`super::env`]): a few frames, the PNG, then exit.

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
        let result = files::save_png(&target, &image);
        if self.auto.is_some() {
            if let Err(e) = &result {
                eprintln!("vram-explorer: {e}");
            }
            ctx.send_viewport_cmd(egui::ViewportCommand::Close);
        } else {
            notices.push(match result {
                Ok(()) => Notice::info(format!("Exported: {}", target.display())),
                Err(e) => Notice::error(e),
            });
        }
    }
}
