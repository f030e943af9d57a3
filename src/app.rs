//! The eframe application (explorer-window work owns this).

use std::process::ExitCode;

/// Opens the window and runs until it is closed.
pub fn run() -> ExitCode {
    ExitCode::SUCCESS
}
