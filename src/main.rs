//! `vram-explorer` with no arguments opens the app; with a subcommand it is the CLI.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.len() > 1 {
        return vram_explorer::cli::run(args);
    }
    #[cfg(feature = "gui")]
    {
        vram_explorer::app::run()
    }
    #[cfg(not(feature = "gui"))]
    {
        vram_explorer::cli::run(vec!["vram-explorer".into(), "--help".into()])
    }
}
