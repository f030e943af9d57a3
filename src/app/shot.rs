//! PNG of the window: File ▸ Export PNG…, and the automation hook for README screenshots and the CI
//! smoke run. `VRAM_EXPLORER_SCREENSHOT=out.png` renders a few frames, saves the PNG and exits; an
//! automated run neither reads nor writes the persisted session. Optional, for such runs:
//! `VRAM_EXPLORER_PRESENTATION=1`, `VRAM_EXPLORER_THEME=light`, `VRAM_EXPLORER_PRESET=<bundled id>`,
//! `VRAM_EXPLORER_BASELINE=<bundled id>` (pinned for comparison), `VRAM_EXPLORER_WINDOW=1280x800`.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::{APP_KEY_SESSION, ExplorerApp, Session, files};
use crate::presets;
use crate::ui::ThemeChoice;
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

/// Window size from `VRAM_EXPLORER_WINDOW=WIDTHxHEIGHT` (logical points).
pub fn window_size() -> Option<[f32; 2]> {
    let text = env("VRAM_EXPLORER_WINDOW")?;
    let (w, h) = text.split_once('x')?;
    let (w, h) = (w.trim().parse::<f32>().ok()?, h.trim().parse::<f32>().ok()?);
    (w >= 320.0 && h >= 240.0 && w.is_finite() && h.is_finite()).then_some([w, h])
}

/// Whether this run is an automated screenshot.
pub fn automated_from_env() -> bool {
    env("VRAM_EXPLORER_SCREENSHOT").is_some()
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Builds the app: the last session (unless automated), then the automation overrides.
pub fn create(cc: &eframe::CreationContext<'_>) -> ExplorerApp {
    let auto = env("VRAM_EXPLORER_SCREENSHOT").map(PathBuf::from);
    let mut session: Session = match (&auto, cc.storage) {
        (None, Some(storage)) => eframe::get_value(storage, APP_KEY_SESSION).unwrap_or_default(),
        _ => Session::default(),
    };
    if env("VRAM_EXPLORER_PRESENTATION").as_deref() == Some("1") {
        session.prefs.presentation = true;
    }
    if env("VRAM_EXPLORER_THEME").as_deref() == Some("light") {
        session.prefs.theme = ThemeChoice::Light;
    }
    if let Some(id) = env("VRAM_EXPLORER_PRESET") {
        match presets::bundled_scenario(&id) {
            Some(s) => {
                session.saved = s.clone();
                session.scenario = s;
            }
            None => eprintln!("vram-explorer: no bundled preset named {id}"),
        }
    }
    if let Some(id) = env("VRAM_EXPLORER_BASELINE") {
        match presets::bundled_scenario(&id) {
            Some(s) => session.baseline = Some(s),
            None => eprintln!("vram-explorer: no bundled preset named {id}"),
        }
    }
    let mut app = ExplorerApp::with_session(session);
    app.shot.auto = auto;
    app
}
