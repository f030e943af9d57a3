//! How the app starts: the saved session from its own file (or, once, from eframe's storage, where
//! earlier versions kept it), then the environment's automation on top ([`super::env`]).

use std::path::PathBuf;
use std::process::ExitCode;

use super::persist::Persist;
use super::{APP_ID, Automation, ExplorerApp, Session, TITLE, session, shot};

/// How a run starts.
#[derive(Clone, Debug, Default)]
pub struct Startup {
    /// Directory of the session file; `None`: no session is read or written.
    pub session_dir: Option<PathBuf>,
    /// The session as earlier versions kept it in eframe's storage (RON), migrated once when there
    /// is no session file yet.
    pub legacy: Option<String>,
    pub automation: Automation,
}

impl ExplorerApp {
    /// The app for a run: the saved session (its own file, else the old eframe-storage one), then
    /// the environment's automation on top. An automated screenshot run reads and writes no session.
    pub fn new(startup: Startup) -> Self {
        let auto = startup.automation;
        let dir = startup.session_dir.filter(|_| !auto.automated());
        let loaded = dir.as_deref().and_then(session::load).or_else(|| {
            let legacy = startup.legacy.filter(|t| !t.trim().is_empty());
            legacy
                .filter(|_| dir.is_some())
                .map(|t| session::migrate_legacy(&t))
        });
        let mut persist = Persist::new(dir);
        let (mut session, mut notices) = match loaded {
            Some(l) => {
                // Written back at once (after the debounce) unless it was read in full.
                if l.damaged.is_empty() && l.notices.is_empty() {
                    persist.mark_written(&l.session);
                }
                (l.session, l.notices)
            }
            None => (Session::default(), Vec::new()),
        };
        auto.apply(&mut session, &mut notices);
        let mut app = Self::with_session(session);
        app.notices = notices;
        app.persist = persist;
        app.shot = shot::Shots::new(auto.screenshot);
        app
    }
}

/// Opens the window and runs until it is closed.
pub fn run() -> ExitCode {
    let automation = Automation::from_env();
    let automated = automation.automated();
    // One fixed throwaway storage file (eframe's persistence path is a file), removed before use:
    // eframe may still be flushing it when `run_native` returns, so it is cleaned at the next start
    // rather than at exit. Left in place, it would restore the previous run's window size.
    let scratch_dir = automated.then(|| {
        let file = std::env::temp_dir().join("vram-explorer-screenshot-state");
        let _ = std::fs::remove_file(&file);
        let _ = std::fs::remove_dir_all(&file);
        file
    });
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title(TITLE)
            .with_app_id(APP_ID)
            .with_inner_size(automation.window.unwrap_or([1440.0, 900.0]))
            .with_min_inner_size([960.0, 600.0])
            .with_drag_and_drop(true),
        persist_window: !automated,
        // An automated screenshot run neither reads nor writes the user's session and window geometry.
        persistence_path: scratch_dir,
        ..Default::default()
    };
    let session_dir = automation
        .session_dir
        .clone()
        .or_else(|| eframe::storage_dir(APP_ID));
    let result = eframe::run_native(
        APP_ID,
        options,
        Box::new(|cc| {
            let legacy = cc.storage.and_then(|s| s.get_string(eframe::APP_KEY));
            Ok(Box::new(ExplorerApp::new(Startup {
                session_dir,
                legacy,
                automation,
            })))
        }),
    );
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vram-explorer: could not open the window: {e}");
            ExitCode::FAILURE
        }
    }
}
