//! The command line: `vram-explorer report <scenario.ron> [--json]` and friends (scenario-files work
//! owns this). The same numbers as the app: both call `estimator::estimate`.

use std::ffi::OsString;
use std::process::ExitCode;

/// Runs the CLI on `args` (including the program name). Returns the process exit code.
pub fn run(args: Vec<OsString>) -> ExitCode {
    let _ = args;
    eprintln!("vram-explorer: the command line is not implemented yet");
    ExitCode::FAILURE
}
