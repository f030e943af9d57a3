//! Scenario files: RON to and from strings (pure), atomic load/save, and the bundled library
//! (scenario-files work owns this).

use std::path::Path;

use crate::scenario::Scenario;

/// Why a scenario file could not be used. The message names the problem first, the path last.
#[derive(Debug)]
pub struct PresetError {
    pub message: String,
}

impl std::fmt::Display for PresetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for PresetError {}

/// Parses a scenario from RON text.
pub fn from_ron_str(text: &str) -> Result<Scenario, PresetError> {
    ron::from_str(text).map_err(|e| PresetError {
        message: e.to_string(),
    })
}

/// Reads a scenario file.
pub fn load(path: &Path) -> Result<Scenario, PresetError> {
    let text = std::fs::read_to_string(path).map_err(|e| PresetError {
        message: format!("{e}: {}", path.display()),
    })?;
    from_ron_str(&text)
}
