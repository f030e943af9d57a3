//! PNG export: File ▸ Export PNG for slides…, and the automated screenshot of a run started with
//! `VRAM_EXPLORER_SCREENSHOT=out.png` (see [`super::env`]). Both go through the app's own screenshot
//! path (`ViewportCommand::Screenshot`), in two captures:
//!
//! 1. the window as shown → `x.png`;
//! 2. the same layout at 2 px per point, in the theme picked for slides (File ▸ Slide images in):
//!    the zoom is doubled and the window asked to double its size in pixels, so that its size in
//!    points — and so the layout — stays; a few frames settle; the capture is cropped
//!    ([`super::shot_save`]) into `x-window.png` (no side panel, no menus), one image per chart
//!    (`x-memory.png`, …, each 2× its rectangle in points) and the summary (`x-summary.md`,
//!    `x-summary.html`). Then zoom, size and theme are put back.
//!
//! A window manager that refuses the larger size leaves the window as it is: the images are still
//! at 2 px per point, of a layout half as large in points.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::files;
use super::session::Session;
use crate::ui::ThemeChoice;
use crate::ui::notice::Notice;

/// Frames rendered before the automated screenshot (layout settles in two or three).
const SETTLE_FRAMES: u32 = 8;
/// Frames to wait for the window to reach its doubled size before capturing anyway.
const RESIZE_FRAMES: u32 = 60;
/// Pixels per point of the slide images.
pub const SLIDE_SCALE: f32 = 2.0;

type Slot = Arc<Mutex<Option<Arc<egui::ColorImage>>>>;

/// What to put back after the 2× capture.
#[derive(Clone, Copy, Debug)]
struct Restore {
    zoom: f32,
    /// The window's size in points before the export.
    size: egui::Vec2,
    theme: ThemeChoice,
}

#[derive(Clone, Copy, Debug)]
enum Stage {
    /// Waiting for the capture of the window as shown.
    Screen,
    /// Zoom (and theme) asked for; `frames` since, the window being resized.
    Scaling { frames: u32, resized: bool },
    /// Waiting for the 2× capture.
    Slides,
    /// Zoom and theme put back; the window's size follows once the zoom is in effect.
    Restoring { frames: u32 },
}

#[derive(Debug)]
struct Job {
    target: PathBuf,
    stage: Stage,
    restore: Option<Restore>,
    /// What went wrong writing the slide images (said once the window is put back).
    error: Option<String>,
}

#[derive(Default)]
pub struct Shots {
    /// Automated screenshot target; the app exits after writing it.
    auto: Option<PathBuf>,
    frames: u32,
    requested: bool,
    job: Option<Job>,
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

    /// An export is under way: notices and hover stay out of the pictures.
    pub fn busy(&self) -> bool {
        self.job.is_some()
    }

    /// Starts an export to `path` (the window as shown, then the slide images).
    pub fn export(&mut self, ctx: &egui::Context, path: PathBuf) {
        if self.job.is_some() {
            return;
        }
        self.job = Some(Job {
            target: files::with_extension(path, "png"),
            stage: Stage::Screen,
            restore: None,
            error: None,
        });
        self.capture(ctx);
    }

    fn capture(&self, ctx: &egui::Context) {
        let slot = Arc::clone(&self.image);
        ctx.request_screenshot(move |image| {
            if let Ok(mut s) = slot.lock() {
                *s = Some(image);
            }
        });
        ctx.request_repaint();
    }

    /// Called once per frame after the UI.
    pub fn frame(&mut self, ctx: &egui::Context, session: &mut Session, notices: &mut Vec<Notice>) {
        self.frames = self.frames.saturating_add(1);
        if let Some(path) = self.auto.clone() {
            if !self.requested && self.frames >= SETTLE_FRAMES {
                self.requested = true;
                self.export(ctx, path);
            } else if !self.requested {
                ctx.request_repaint();
            }
        }
        let Some(job) = self.job.take() else {
            return;
        };
        ctx.request_repaint();
        let target = job.target.clone();
        let image = self.image.lock().ok().and_then(|mut s| s.take());
        let result = match self.step(ctx, session, job, image) {
            Ok(Some(next)) => {
                self.job = Some(next);
                return;
            }
            Ok(None) => Ok(()),
            Err(e) => Err(e),
        };
        if self.auto.is_some() {
            if let Err(e) = &result {
                eprintln!("vram-explorer: {e}");
            }
            ctx.send_viewport_cmd(egui::ViewportCommand::Close);
            return;
        }
        notices.push(match result {
            Ok(()) => Notice::info(format!(
                "Exported: {}, and beside it the window without the controls (…-window.png), each \
                 chart at 2× (…-memory.png, …) and a summary (…-summary.md, …-summary.html)",
                target.display()
            )),
            Err(e) => Notice::error(e),
        });
    }

    /// One frame of `job`: the next state, `None` when it is done.
    fn step(
        &self,
        ctx: &egui::Context,
        session: &mut Session,
        mut job: Job,
        image: Option<Arc<egui::ColorImage>>,
    ) -> Result<Option<Job>, String> {
        let restore = job.restore;
        match (job.stage, image, restore) {
            (Stage::Screen, Some(image), _) => {
                files::save_png(&job.target, &image)?;
                let r = Restore {
                    zoom: ctx.zoom_factor(),
                    size: ctx.content_rect().size(),
                    theme: session.prefs.theme,
                };
                job.restore = Some(r);
                session.prefs.theme = session.prefs.export_theme.resolve(r.theme);
                let native = ctx.pixels_per_point() / r.zoom;
                ctx.set_zoom_factor(SLIDE_SCALE / native);
                job.stage = Stage::Scaling {
                    frames: 0,
                    resized: false,
                };
            }
            (Stage::Scaling { frames, resized }, _, Some(r)) => {
                let scaled = (ctx.pixels_per_point() - SLIDE_SCALE).abs() < 1e-3;
                if scaled && !resized {
                    // The zoom is in effect: the same size in points is twice the pixels.
                    ctx.send_viewport_cmd(egui::ViewportCommand::InnerSize(r.size));
                }
                let settled = (ctx.content_rect().size() - r.size).length() < 1.0;
                let frames = frames + 1;
                job.stage = if scaled
                    && ((settled && frames >= SETTLE_FRAMES) || frames >= RESIZE_FRAMES)
                {
                    self.capture(ctx);
                    Stage::Slides
                } else {
                    Stage::Scaling {
                        frames,
                        resized: resized || scaled,
                    }
                };
            }
            (Stage::Slides, Some(image), Some(r)) => {
                let written = super::shot_save::slides(ctx, session, &job.target, &image);
                // Zoom and theme back now; the size once the zoom is in effect (next frames).
                session.prefs.theme = r.theme;
                ctx.set_zoom_factor(r.zoom);
                job.error = written.err();
                job.stage = Stage::Restoring { frames: 0 };
            }
            (Stage::Restoring { frames }, _, Some(r)) => {
                let zoomed_back = (ctx.zoom_factor() - r.zoom).abs() < 1e-6;
                if zoomed_back {
                    ctx.send_viewport_cmd(egui::ViewportCommand::InnerSize(r.size));
                }
                if zoomed_back || frames >= RESIZE_FRAMES {
                    return job.error.map_or(Ok(None), Err);
                }
                job.stage = Stage::Restoring { frames: frames + 1 };
            }
            (Stage::Scaling { .. } | Stage::Slides | Stage::Restoring { .. }, _, None) => {
                return Err("The export lost its state; nothing was changed.".to_owned());
            }
            (Stage::Screen | Stage::Slides, None, _) => {}
        }
        Ok(Some(job))
    }
}
