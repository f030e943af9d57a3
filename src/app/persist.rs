//! When the session file is written: on quit, and after a change once things have been quiet for
//! [`DEBOUNCE`] (a dragged slider writes once, not every frame). Always from the UI thread.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::session::{self, Session};

/// Quiet time after a change before the session is written.
pub const DEBOUNCE: Duration = Duration::from_secs(2);

/// The session file's directory and what was last written to it.
#[derive(Debug, Default)]
pub struct Persist {
    /// `None`: nothing is written (tests, automated screenshots).
    dir: Option<PathBuf>,
    /// The session as last written (only the parts the file keeps are compared).
    written: Option<Session>,
    /// When the session was first seen differing from `written`.
    changed: Option<Instant>,
}

/// What [`Persist::tick`] did.
#[derive(Debug, PartialEq)]
pub enum Tick {
    /// Nothing to write.
    Clean,
    /// A change waits for the debounce; ask for a frame after this long.
    Waiting(Duration),
    Wrote(Result<(), String>),
}

impl Persist {
    pub fn new(dir: Option<PathBuf>) -> Self {
        Persist {
            dir,
            written: None,
            changed: None,
        }
    }

    /// Takes `session` as what is on disk (just read back).
    pub fn mark_written(&mut self, session: &Session) {
        self.written = Some(session.clone());
    }

    /// Called once per frame: writes when the kept parts changed and then stayed put for
    /// [`DEBOUNCE`].
    pub fn tick(&mut self, session: &Session, now: Instant) -> Tick {
        if self.dir.is_none() || self.written.as_ref().is_some_and(|w| same_file(w, session)) {
            self.changed = None;
            return Tick::Clean;
        }
        let since = *self.changed.get_or_insert(now);
        let waited = now.saturating_duration_since(since);
        if waited < DEBOUNCE {
            return Tick::Waiting(DEBOUNCE.saturating_sub(waited));
        }
        Tick::Wrote(self.write(session))
    }

    /// Whether there is a session file at all.
    pub fn enabled(&self) -> bool {
        self.dir.is_some()
    }

    /// Writes now if the kept parts changed or nothing was written yet (on quit).
    pub fn flush(&mut self, session: &Session) -> Result<(), String> {
        match &self.written {
            Some(w) if same_file(w, session) => Ok(()),
            _ => self.write(session),
        }
    }

    /// Writes now. `Ok` without a directory.
    fn write(&mut self, session: &Session) -> Result<(), String> {
        let Some(dir) = &self.dir else {
            return Ok(());
        };
        self.changed = None;
        // Taken as written even on failure: the next change retries, not every frame.
        self.written = Some(session.clone());
        session::save(dir, session)
    }
}

/// Whether two sessions give the same file (the edited, unsaved scenario is not kept).
fn same_file(a: &Session, b: &Session) -> bool {
    a.saved == b.saved
        && a.path == b.path
        && a.baseline == b.baseline
        && a.prefs == b.prefs
        && a.recent == b.recent
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("vram-persist-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_change_is_written_once_quiet_for_the_debounce() {
        let dir = temp_dir("debounce");
        let mut p = Persist::new(Some(dir.clone()));
        let mut s = Session::default();
        p.mark_written(&s);
        let t0 = Instant::now();
        assert_eq!(p.tick(&s, t0), Tick::Clean);
        s.prefs.presentation = true;
        assert!(matches!(p.tick(&s, t0), Tick::Waiting(_)));
        assert!(!dir.join(session::FILE_NAME).exists());
        assert_eq!(p.tick(&s, t0 + DEBOUNCE), Tick::Wrote(Ok(())));
        assert!(dir.join(session::FILE_NAME).exists());
        assert_eq!(p.tick(&s, t0 + DEBOUNCE * 2), Tick::Clean);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn editing_the_scenario_alone_writes_nothing() {
        let mut p = Persist::new(Some(temp_dir("unsaved")));
        let mut s = Session::default();
        p.mark_written(&s);
        s.scenario.parallel.tp = 2;
        assert_eq!(p.tick(&s, Instant::now()), Tick::Clean);
    }
}
