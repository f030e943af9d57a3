//! The saved session: the app's own file, `session.ron` in the app's data directory
//! (`eframe::storage_dir`, or `VRAM_EXPLORER_SESSION_DIR`).
//!
//! The file is versioned RON with one top-level section per concern — view preferences, recent
//! files, and the document (`path`, `scenario`, `baseline`) — and each section is read on its own,
//! so a damaged one costs only itself. Scenarios go through the scenario-file loader
//! ([`presets::from_ron_str`]: migration and range checks); out-of-range values are clamped with a
//! notice naming the fields ([`super::clamp`]). A file that cannot be read in full is said so in a
//! notice and kept aside as `session.ron.bad` (never overwritten: `.bad.1`, `.bad.2` … when taken).
//! Written atomically ([`presets::write_atomically`]). The document section holds the scenario as
//! last opened or saved, not the edited one: "Discard changes" on quit discards.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::clamp;
use crate::presets::{self, scan};
use crate::scenario::Scenario;
use crate::ui::Prefs;
use crate::ui::notice::Notice;

/// Version of the session file's own layout (each scenario in it carries its own format version).
pub const SESSION_VERSION: u32 = 1;
/// The session file's name inside its directory.
pub const FILE_NAME: &str = "session.ron";
/// Larger files are not read (the largest realistic session is two scenarios, ~10 KiB).
const MAX_BYTES: u64 = 4 * presets::MAX_FILE_BYTES;

/// What comes back on restart, and what the app edits.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Session {
    pub scenario: Scenario,
    /// The file the scenario was opened from or saved to.
    pub path: Option<PathBuf>,
    /// The scenario as last opened or saved: there are unsaved changes when it differs. This, not
    /// `scenario`, is what the session file keeps.
    pub saved: Scenario,
    pub baseline: Option<Scenario>,
    pub prefs: Prefs,
    /// Most recent first.
    pub recent: Vec<PathBuf>,
}

/// The file's layout (written; read section by section, see [`parse`]).
#[derive(Serialize)]
struct FileOut<'a> {
    version: u32,
    prefs: &'a Prefs,
    recent: &'a [PathBuf],
    path: Option<&'a Path>,
    scenario: &'a Scenario,
    baseline: Option<&'a Scenario>,
}

/// A session read back, with what the user must be told about it.
#[derive(Debug, Default)]
pub struct Loaded {
    pub session: Session,
    pub notices: Vec<Notice>,
    /// Sections that could not be read (the file is then kept aside).
    pub damaged: Vec<String>,
}

/// The session file's text.
pub fn to_text(session: &Session) -> String {
    let file = FileOut {
        version: SESSION_VERSION,
        prefs: &session.prefs,
        recent: &session.recent,
        path: session.path.as_deref(),
        scenario: &session.saved,
        baseline: session.baseline.as_ref(),
    };
    let config = ron::ser::PrettyConfig::new()
        .escape_strings(false)
        .struct_names(false);
    match ron::ser::to_string_pretty(&file, config) {
        Ok(body) => format!(
            "// VRAM Explorer session, version {SESSION_VERSION}. Each section is read on its own.\n{body}\n"
        ),
        Err(e) => format!("// could not write the session: {e}\n"),
    }
}

/// Writes the session file atomically (temporary file, fsync, rename).
pub fn save(dir: &Path, session: &Session) -> Result<(), String> {
    let path = dir.join(FILE_NAME);
    std::fs::create_dir_all(dir)
        .and_then(|()| presets::write_atomically(&path, to_text(session).as_bytes()))
        .map_err(|e| format!("Could not save the session ({e}): {}", path.display()))
}

/// Reads `dir/session.ron`; `None` when there is no such file. A file that cannot be read in full
/// is renamed to `session.ron.bad` and a notice says so.
pub fn load(dir: &Path) -> Option<Loaded> {
    let path = dir.join(FILE_NAME);
    let meta = std::fs::metadata(&path).ok()?;
    let text = if meta.len() > MAX_BYTES {
        Err(format!("it is {} bytes, over the limit", meta.len()))
    } else {
        std::fs::read(&path)
            .map_err(|e| format!("cannot read it ({e})"))
            .and_then(|b| String::from_utf8(b).map_err(|_| "it is not UTF-8 text".to_owned()))
    };
    let mut loaded = match text {
        Ok(text) => parse(&text),
        Err(why) => Loaded {
            damaged: vec![why],
            ..Loaded::default()
        },
    };
    if !loaded.damaged.is_empty() {
        let kept = set_aside(&path);
        let what = loaded.damaged.join("; ");
        loaded.notices.insert(0, Notice::error(match kept {
            Ok(bad) => format!(
                "The saved session could not be read in full ({what}). Kept what was readable; the file is set aside: {}",
                bad.display()
            ),
            Err(e) => format!(
                "The saved session could not be read in full ({what}), and could not be set aside ({e}): {}",
                path.display()
            ),
        }));
    }
    Some(loaded)
}

/// The session as versions before the session file kept it in eframe's storage (the whole
/// [`Session`] as RON), brought into the file's layout and read like one: validated and clamped.
pub fn migrate_legacy(text: &str) -> Loaded {
    match ron::from_str::<Session>(text) {
        Ok(old) => parse(&to_text(&old)),
        Err(e) => Loaded {
            notices: vec![Notice::error(format!(
                "The session kept by the previous version could not be read ({e}); starting from the defaults."
            ))],
            ..Loaded::default()
        },
    }
}

/// Renames `path` to the first free name of `session.ron.bad`, `session.ron.bad.1`, ….
fn set_aside(path: &Path) -> std::io::Result<PathBuf> {
    let name = path.file_name().map_or_else(
        || FILE_NAME.to_owned(),
        |n| n.to_string_lossy().into_owned(),
    );
    let free = (0..1000u32)
        .map(|i| match i {
            0 => path.with_file_name(format!("{name}.bad")),
            i => path.with_file_name(format!("{name}.bad.{i}")),
        })
        .find(|p| !p.exists());
    let Some(bad) = free else {
        return Err(std::io::Error::other("too many set-aside sessions"));
    };
    std::fs::rename(path, &bad).map(|()| bad)
}

/// Reads a session's text section by section: what parses is kept, the rest is named in `damaged`.
pub fn parse(text: &str) -> Loaded {
    let mut out = Loaded::default();
    match scan::version(text) {
        Some(v) if v > u64::from(SESSION_VERSION) => out.damaged.push(format!(
            "written by a newer version (session version {v}, this program reads {SESSION_VERSION})"
        )),
        Some(_) => {}
        None => out.damaged.push("no session version".to_owned()),
    }
    let sections = Sections::new(text);
    let s = &mut out.session;
    if let Some(prefs) = sections.value("prefs", &mut out.damaged) {
        s.prefs = prefs;
    }
    if let Some(recent) = sections.value("recent", &mut out.damaged) {
        s.recent = recent;
    }
    let mut clamped = Vec::new();
    if let Some(scenario) = sections.scenario("scenario", &mut out.damaged, &mut clamped) {
        s.saved = scenario.clone();
        s.scenario = scenario;
        // The path only means something with its scenario: without it, Save would overwrite the
        // user's file with the default scenario.
        if let Some(path) = sections.value("path", &mut out.damaged) {
            s.path = path;
        }
    }
    match sections.text("baseline", &mut out.damaged) {
        Some("None") | None => {}
        Some(t) => {
            let inner = t.strip_prefix("Some(").and_then(|t| t.strip_suffix(')'));
            let inner = inner.unwrap_or(t);
            match load_scenario(inner) {
                Ok((b, fields)) => {
                    s.baseline = Some(b);
                    clamped.extend(fields.into_iter().map(|f| format!("baseline {f}")));
                }
                Err(e) => out.damaged.push(format!("baseline: {}", e.message)),
            }
        }
    }
    if !clamped.is_empty() {
        out.notices.push(Notice::error(format!(
            "The saved session had values out of range or not numbers; they were clamped: {}.",
            clamped.join(", ")
        )));
    }
    out
}

/// A scenario through the scenario-file loader; out-of-range fields clamped and named.
fn load_scenario(text: &str) -> Result<(Scenario, Vec<String>), presets::PresetError> {
    match presets::from_ron_str(text) {
        Ok(s) => Ok((s, Vec::new())),
        Err(e) if e.kind == presets::ErrorKind::OutOfRange => clamp::fix(text).ok_or(e),
        Err(e) => Err(e),
    }
}

/// The top-level sections of a session's text, located with the lexical scan.
struct Sections<'a> {
    text: &'a str,
    keys: Vec<scan::Key>,
}

impl<'a> Sections<'a> {
    fn new(text: &'a str) -> Self {
        let keys = scan::keys(text).into_iter().filter(|k| k.depth == 1);
        Sections {
            text,
            keys: keys.collect(),
        }
    }

    /// The value text of section `name`, trimmed; a missing section is recorded as damaged.
    fn text(&self, name: &str, damaged: &mut Vec<String>) -> Option<&'a str> {
        let Some(i) = self.keys.iter().position(|k| k.path == name) else {
            damaged.push(format!("{name}: missing"));
            return None;
        };
        let start = self.keys.get(i).map_or(self.text.len(), |k| k.value_start);
        let end = match self.keys.get(i + 1) {
            Some(next) => Some(next.start),
            // The last section ends before the closing parenthesis of the whole file.
            None => self.text.rfind(')').filter(|&e| e > start),
        };
        let Some(value) = end.and_then(|end| self.text.get(start..end)) else {
            damaged.push(format!("{name}: cut short"));
            return None;
        };
        let value = value.trim_end();
        Some(value.strip_suffix(',').unwrap_or(value).trim())
    }

    fn value<T: serde::de::DeserializeOwned>(
        &self,
        name: &str,
        damaged: &mut Vec<String>,
    ) -> Option<T> {
        let text = self.text(name, damaged)?;
        ron::from_str(text)
            .map_err(|e| damaged.push(format!("{name}: {e}")))
            .ok()
    }

    fn scenario(
        &self,
        name: &str,
        damaged: &mut Vec<String>,
        clamped: &mut Vec<String>,
    ) -> Option<Scenario> {
        let text = self.text(name, damaged)?;
        match load_scenario(text) {
            Ok((s, fields)) => {
                clamped.extend(fields);
                Some(s)
            }
            Err(e) => {
                damaged.push(format!("{name}: {}", e.message));
                None
            }
        }
    }
}
