//! Scenario files: RON to and from strings (pure), load and atomic save, the bundled library.
//!
//! The format is documented in `docs/format.md`. Reading a file goes: size limit → UTF-8 → not empty →
//! version and migration ([`migrate`]) → RON parse into [`Scenario`] (unknown fields are errors) →
//! range checks ([`validate`]). Every error names the problem first, then the field, the line and
//! the file path last.

mod atomic;
mod error;
pub mod input;
mod library;
pub mod migrate;
pub mod scan;
pub mod stale;
pub mod text;

pub use atomic::{temp_path, write as write_atomically};
pub use error::{ErrorKind, PresetError};
pub use library::{BundledPreset, bundled, bundled_scenario};

use std::path::Path;

use crate::scenario::{FORMAT_VERSION, Scenario, validate};

/// Files larger than this are refused before they are parsed (1 MiB; the largest preset is ~4 KiB).
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// Parses and validates a scenario from RON text.
pub fn from_ron_str(text: &str) -> Result<Scenario, PresetError> {
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(PresetError::too_large(Some(text.len() as u64)));
    }
    // A UTF-8 byte order mark (U+FEFF), as some Windows editors write, is not part of the text.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if scan::only_trivia(text) {
        return Err(PresetError::new(
            ErrorKind::Empty,
            "the scenario file is empty: it holds no scenario (a minimal scenario is `()`)",
        ));
    }
    let migrated = migrate::migrate(text).map_err(|e| PresetError::newer_version(text, e.found))?;
    let parsed = migrated.as_ref().map_or(text, |m| m.text.as_str());
    // An error in the migrated text is reported where the file as written has it.
    let in_file = |mut e: PresetError| {
        if let (Some(m), Some((line, col))) = (&migrated, e.position) {
            let at = m.original_offset(scan::offset_of(&m.text, line, col));
            e.position = Some(scan::line_col(text, at));
        }
        e
    };
    let scenario: Scenario =
        ron::from_str(parsed).map_err(|e| in_file(PresetError::from_ron(parsed, &e)))?;
    let errors = validate::validate(&scenario);
    if errors.is_empty() {
        Ok(scenario)
    } else {
        Err(in_file(PresetError::out_of_range(parsed, &errors)))
    }
}

/// Parses raw file bytes: refuses oversized input and invalid UTF-8 (naming the position).
pub fn from_ron_bytes(bytes: &[u8]) -> Result<Scenario, PresetError> {
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(PresetError::too_large(Some(bytes.len() as u64)));
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => from_ron_str(text),
        Err(e) => Err(PresetError::not_utf8(bytes, e.valid_up_to())),
    }
}

/// The scenario as pretty RON: one field per line, every field written (so a file shows every
/// input), with a header comment pointing at the format documentation.
pub fn to_ron_string(scenario: &Scenario) -> String {
    try_to_ron_string(scenario).unwrap_or_else(|e| format!("// {e}\n"))
}

fn try_to_ron_string(scenario: &Scenario) -> Result<String, PresetError> {
    let config = ron::ser::PrettyConfig::new()
        .escape_strings(false)
        .struct_names(false);
    let body = ron::ser::to_string_pretty(scenario, config).map_err(|e| {
        PresetError::new(
            ErrorKind::Syntax,
            format!("cannot write the scenario as RON: {e}"),
        )
    })?;
    Ok(format!(
        "// VRAM Explorer scenario, format version {FORMAT_VERSION}. Every field may be omitted \
         (it then takes its default); see docs/format.md.\n{body}\n"
    ))
}

/// Reads a scenario file. Only regular files are read, and no more than [`MAX_FILE_BYTES`] of them.
pub fn load(path: &Path) -> Result<Scenario, PresetError> {
    read_limited(path)
        .and_then(|bytes| from_ron_bytes(&bytes))
        .map_err(|e| e.with_path(path))
}

/// Through [`input::read_regular`]: never blocks on a FIFO, never reads more than the limit + 1 byte.
fn read_limited(path: &Path) -> Result<Vec<u8>, PresetError> {
    input::read_regular(path, MAX_FILE_BYTES).map_err(|e| match e {
        input::InputError::TooLarge(_) => PresetError::too_large(None),
        other => PresetError::new(ErrorKind::Io, other.to_string()),
    })
}

/// Writes a scenario file atomically (temporary file beside the target, fsync, rename): on any
/// failure the previous file is left intact.
pub fn save(path: &Path, scenario: &Scenario) -> Result<(), PresetError> {
    let text = try_to_ron_string(scenario).map_err(|e| e.with_path(path))?;
    atomic::write(path, text.as_bytes()).map_err(|e| {
        PresetError::new(ErrorKind::Io, format!("cannot save the scenario ({e})")).with_path(path)
    })
}
