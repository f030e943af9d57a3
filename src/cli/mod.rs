//! The command line: the same numbers as the app (both call [`estimate`]).
//!
//! ```text
//! vram-explorer report <scenario.ron> | --preset NAME  [--format table|json|markdown|csv]
//!                      [--csv-table breakdown|phases|roofline|comparison] [--output PATH] [--unit gib|gb]
//!                      [--engine-args "<vllm serve … | python -m sglang.launch_server … | llama-server …>"] [--stage N]
//! vram-explorer presets [--json]
//! vram-explorer check <scenario.ron>
//! vram-explorer sweep <scenario.ron> --over batch|seq|params|dp|tp|pp [--from X --to Y --steps N]
//! vram-explorer fit <scenario.ron> [--max-gpus N] [--top N] [--json]
//! vram-explorer optimize <scenario.ron> [--gpus N] [--batch B] [--top N] [--json]
//! vram-explorer claims [ID] [--json]
//! vram-explorer import <config.json | model-dir | org/name>
//! vram-explorer timeline <scenario.ron> | --preset NAME [--json|--csv] [--measured SNAPSHOT.pickle]
//! vram-explorer compare <scenario.ron> | --preset NAME --measured FILE
//! vram-explorer engine-args "<vllm serve … | python -m sglang.launch_server … | llama-server …>" [<scenario.ron> | --preset NAME]
//! ```
//!
//! Every command that reads a scenario also takes `--engine-args "<command line>"` (older name:
//! `--engine-command`): the pasted serving command's settings replace the scenario's engine
//! (unknown flags are an error).
//!
//! `import` writes the scenario (RON) to standard output and the parameter counts to standard error.
//!
//! Exit codes: 0 success, 1 a runtime error (bad file, unknown preset: the message on stderr, message
//! first, path last), 2 a usage error (from clap). Output is built as a string and written once; a
//! failed write or flush of standard output is an error (exit 1), except a closed pipe (`| head`),
//! which ends quietly with 0. Names and paths from files are printed with control characters escaped.

mod check;
mod claims;
pub mod compare;
mod engine;
mod export;
mod fit;
mod json;
mod optimize;
mod perf;
mod sweep;
mod table;
pub mod timeline;

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::estimator::estimate;
use crate::presets::{self, bundled};
use crate::scenario::Scenario;
use crate::units::MemoryUnit;

pub use export::{CsvTable, Format};
pub use sweep::SweepAxis;

/// Memory estimates for GPU training and inference: where every byte goes, and whether it fits.
#[derive(Debug, Parser)]
#[command(name = "vram-explorer", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print a scenario's per-GPU memory breakdown, peak phase, fit, diagnostics and performance.
    Report(ReportArgs),
    /// List the bundled presets (use a name with `--preset`).
    Presets {
        /// Print as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check a scenario file: parse and validate it, and name what its framework would refuse
    /// (an error) or warn about; print no estimate.
    Check {
        /// The scenario file (.ron).
        file: PathBuf,
    },
    /// Sweep one input over a range and print the memory (and step time) at each point as CSV.
    Sweep(SweepArgs),
    /// What fits: the largest batch, context and model, the fewest GPUs, and "make it fit" suggestions.
    Fit(FitArgs),
    /// The fastest training layouts for a GPU budget and global batch, and step time against GPUs.
    Optimize(optimize::OptimizeArgs),
    /// Import a Hugging Face config.json (a file, a model directory, or a Hub id found offline in the
    /// local cache): the scenario (RON) to stdout, its parameter counts to stderr.
    Import {
        /// config.json, a model directory, or org/name (looked up in $HF_HUB_CACHE, $HF_HOME/hub or
        /// ~/.cache/huggingface/hub; nothing is downloaded).
        source: String,
    },
    /// The step's memory timeline layer by layer (forward, loss, backward, optimizer; prefill,
    /// decode), stacked by component; with `--measured` a snapshot's timeline beside it (JSON).
    Timeline(TimelineArgs),
    /// Hold a measurement against the estimate (Markdown): a PyTorch memory snapshot (.pickle),
    /// max_memory_allocated/max_memory_reserved lines, an nvidia-smi memory.used CSV or a vLLM log.
    Compare {
        #[command(flatten)]
        source: Source,
        /// The measurement file.
        #[arg(long, value_name = "FILE")]
        measured: PathBuf,
    },
    /// Read a pasted serving command (`vllm serve …`, `python -m sglang.launch_server …`): the engine
    /// settings it gives, the flags ignored or not modelled, and what the engine would print for
    /// the scenario (the default one if none is given).
    EngineArgs {
        /// The whole command line, quoted.
        command: String,
        /// The scenario file (.ron) to serve.
        #[arg(value_name = "SCENARIO.ron")]
        file: Option<PathBuf>,
        /// A bundled preset by name or id.
        #[arg(long, value_name = "NAME", conflicts_with = "file")]
        preset: Option<String>,
    },
    /// The seed article's claims: what the estimator computes for each, and a verdict.
    Claims {
        /// Only this claim (by id).
        id: Option<String>,
        /// Print as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
struct TimelineArgs {
    #[command(flatten)]
    source: Source,
    /// Print JSON (bytes; schema in docs/format.md).
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// Print CSV: one row per point, bytes per component.
    #[arg(long)]
    csv: bool,
    /// A PyTorch memory snapshot whose measured timeline goes into the JSON beside the estimate
    /// (needs `--json`: the table and the CSV have no place for it).
    #[arg(
        long,
        value_name = "SNAPSHOT",
        requires = "json",
        conflicts_with = "csv"
    )]
    measured: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct FitArgs {
    #[command(flatten)]
    source: Source,
    /// GPUs the make-it-fit search may use in total (TP × PP × DP); 0 = the scenario's own count.
    #[arg(long, default_value_t = 0)]
    max_gpus: u32,
    /// How many suggestions to print (1 ..= 8).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..=8))]
    top: u16,
    /// Print JSON (each suggestion with its full scenario as RON text).
    #[arg(long)]
    json: bool,
}

/// Where the scenario comes from: a file or a bundled preset.
#[derive(Debug, Args)]
pub(crate) struct Source {
    /// The scenario file (.ron).
    #[arg(value_name = "SCENARIO.ron", required_unless_present = "preset")]
    file: Option<PathBuf>,
    /// A bundled preset by name or id (see `vram-explorer presets`).
    #[arg(long, value_name = "NAME", conflicts_with = "file")]
    preset: Option<String>,
    /// A pasted serving command (`vllm serve MODEL --gpu-memory-utilization 0.9 …`, `python -m
    /// sglang.launch_server …` or `llama-server -m model-Q4_K_M.gguf -c 8192 -ngl 20`): its
    /// settings replace the scenario's engine. `--engine-command` is its older name.
    #[arg(long, value_name = "COMMAND", alias = "engine-command")]
    engine_args: Option<String>,
}

#[derive(Debug, Args)]
struct ReportArgs {
    #[command(flatten)]
    source: Source,
    /// Output format [default: csv if --csv-table is given, else from the --output file's extension
    /// (.md, .csv, .json, .txt), else table].
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// Same as `--format json` (bytes, seconds; documented in docs/format.md).
    #[arg(long, conflicts_with = "format")]
    json: bool,
    /// Which table `--format csv` writes [default: breakdown].
    #[arg(long, value_enum, value_name = "TABLE")]
    csv_table: Option<CsvTable>,
    /// Write to this file instead of stdout, atomically (a temporary file beside it, then rename).
    #[arg(long, short = 'o', value_name = "PATH")]
    output: Option<PathBuf>,
    /// Memory unit of the table.
    #[arg(long, value_enum, default_value_t = Unit::Gib)]
    unit: Unit,
    /// With pipeline parallelism: also print this pipeline stage's breakdown and phases (1-based;
    /// table and Markdown; the JSON lists every stage class in `memory.stages`).
    #[arg(long, value_name = "N")]
    stage: Option<u32>,
}

impl ReportArgs {
    /// `--json`, else `--format`, else CSV if a CSV table was named, else the output file's
    /// extension, else the table: explicit options win over the file name.
    fn format(&self) -> Format {
        if self.json {
            return Format::Json;
        }
        self.format
            .or(self.csv_table.map(|_| Format::Csv))
            .or_else(|| self.output.as_deref().and_then(Format::from_extension))
            .unwrap_or(Format::Table)
    }
}

#[derive(Debug, Args)]
struct SweepArgs {
    #[command(flatten)]
    source: Source,
    /// The input to sweep.
    #[arg(long, value_enum)]
    over: SweepAxis,
    /// First value (default depends on the input).
    #[arg(long)]
    from: Option<f64>,
    /// Last value (default depends on the input).
    #[arg(long)]
    to: Option<f64>,
    /// Number of points, 2 ..= 1000.
    #[arg(long, default_value_t = 9, value_parser = clap::value_parser!(u32).range(2..=1000))]
    steps: u32,
    /// Spacing of the points.
    #[arg(long, value_enum, default_value_t = sweep::Scale::Log)]
    scale: sweep::Scale,
}

/// The unit memory is shown in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Unit {
    /// Gibibytes, 2^30 bytes (as nvidia-smi's MiB).
    Gib,
    /// Gigabytes, 10^9 bytes (as vendors quote capacity).
    Gb,
}

impl From<Unit> for MemoryUnit {
    fn from(u: Unit) -> Self {
        match u {
            Unit::Gib => MemoryUnit::GiB,
            Unit::Gb => MemoryUnit::GB,
        }
    }
}

/// Runs the CLI on `args` (including the program name). Returns the process exit code.
pub fn run(args: Vec<OsString>) -> ExitCode {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout with 0; usage errors to stderr with 2.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    match execute(cli.command).and_then(|out| print(&out)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {}", presets::text::escape_controls(&message));
            ExitCode::FAILURE
        }
    }
}

/// Writes the output to standard output and flushes it, checking both. A reader that went away
/// (`| head`: `EPIPE`, as Rust ignores `SIGPIPE`) has all it wanted: that ends quietly with status 0.
/// Any other failure (a full disk, `/dev/full`) is an error: the output is incomplete. Control
/// characters other than line feed and tab are escaped (names come from files).
fn print(out: &str) -> Result<(), String> {
    let out = presets::text::escape_controls_keep_lines(out);
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!(
            "cannot write to standard output ({e}): the output is incomplete"
        )),
        _ => Ok(()),
    }
}

/// Runs a command and returns what it prints, or the error message.
fn execute(command: Command) -> Result<String, String> {
    match command {
        Command::Report(a) => report(&a),
        Command::Presets { json } => Ok(if json {
            json::presets()
        } else {
            table::presets()
        }),
        Command::Check { file } => check::run(&file),
        Command::Fit(a) => {
            let (scenario, _) = load(&a.source)?;
            Ok(fit::run(&scenario, a.max_gpus, usize::from(a.top), a.json))
        }
        Command::Optimize(a) => optimize::run(&load(&a.source)?.0, &a),
        Command::Claims { id, json } => claims::run(json, id.as_deref()),
        Command::Timeline(a) => timeline_command(&a),
        Command::Compare { source, measured } => {
            let (scenario, _) = load(&source)?;
            let m = load_measured(&measured)?;
            Ok(compare::markdown(
                &scenario,
                &estimate(&scenario),
                &m,
                &measured.display().to_string(),
            ))
        }
        Command::Import { source } => import(&source),
        Command::EngineArgs {
            command,
            file,
            preset,
        } => {
            let base = match (file, preset) {
                (None, None) => None,
                (file, preset) => Some(
                    load(&Source {
                        file,
                        preset,
                        engine_args: None,
                    })?
                    .0,
                ),
            };
            engine::run(&command, base, MemoryUnit::GiB)
        }
        Command::Sweep(a) => {
            let (scenario, _) = load(&a.source)?;
            sweep::run(&scenario, a.over, a.from, a.to, a.steps, a.scale)
        }
    }
}

/// Reads a measurement file; the error names the file last.
fn load_measured(path: &std::path::Path) -> Result<crate::measured::Measurement, String> {
    crate::measured::load(path).map_err(|e| format!("{e}: {}", path.display()))
}

/// `timeline`: the table, CSV or JSON.
fn timeline_command(a: &TimelineArgs) -> Result<String, String> {
    let (scenario, origin) = load(&a.source)?;
    let est = estimate(&scenario);
    let t = crate::estimator::timeline::build(&scenario, &est);
    let measured = match &a.measured {
        None => None,
        Some(p) => match load_measured(p)? {
            crate::measured::Measurement::Snapshot(m) => Some(m),
            crate::measured::Measurement::Light(_) => {
                return Err(format!(
                    "--measured takes a PyTorch memory snapshot here (use `compare` for other measurements): {}",
                    p.display()
                ));
            }
        },
    };
    Ok(if a.json {
        timeline::json(&scenario, &origin, &t, measured.as_deref())
    } else if a.csv {
        timeline::csv(&t)
    } else {
        timeline::table(&t, MemoryUnit::GiB)
    })
}

/// `import`: the scenario as RON (returned, for stdout); the counts go to stderr.
fn import(source: &str) -> Result<String, String> {
    use crate::import::{flow, source::HubEnv};
    let m = flow::import_model(source, &Scenario::default().model, &HubEnv::from_env())
        .map_err(|e| e.to_string())?;
    let mut s = Scenario {
        name: format!("{} ({})", source, m.config.model_type),
        notes: format!("Imported from {}", m.located.config.display()),
        ..Scenario::default()
    };
    m.config.apply(&mut s);
    eprint!(
        "{}",
        presets::text::escape_controls_keep_lines(&crate::report::import::summary(&m, &s))
    );
    Ok(presets::to_ron_string(&s))
}

/// `report`: renders the chosen format, prints it or writes it to `--output`.
fn report(a: &ReportArgs) -> Result<String, String> {
    let format = a.format();
    if a.csv_table.is_some() && format != Format::Csv {
        return Err("--csv-table chooses a CSV table: use it with --format csv".to_owned());
    }
    let (scenario, origin) = load(&a.source)?;
    let est = estimate(&scenario);
    let csv = a.csv_table.unwrap_or_default();
    let mut text = export::render(format, csv, (&scenario, &est), &origin, a.unit.into());
    if let Some(n) = a.stage {
        let markdown = match format {
            Format::Table => false,
            Format::Markdown => true,
            Format::Json | Format::Csv => {
                return Err(
                    "--stage prints one stage with the table or Markdown report (the \
                            JSON lists every stage class in memory.stages)"
                        .to_owned(),
                );
            }
        };
        let unit = a.unit.into();
        crate::report::stages::picked(&mut text, (&scenario, &est), unit, (n, markdown))?;
    }
    match &a.output {
        None => Ok(text),
        Some(path) => {
            eprintln!("{}", export::write(path, format, &text)?);
            Ok(String::new())
        }
    }
}

/// Loads the scenario of a command and applies `--engine-args`; returns it and where it came from
/// (for the report header). The notes on ignored and not-modelled flags go to standard error.
fn load(source: &Source) -> Result<(Scenario, String), String> {
    let (mut s, origin) = load_file(source)?;
    if let Some(cmd) = &source.engine_args {
        if s.mode == crate::scenario::Mode::Training {
            eprintln!(
                "--engine-args: the scenario was a training one ({origin}); it is served as inference now \
                 (mode: Inference, the engine's settings), its model and GPU kept"
            );
        }
        for n in engine::apply(cmd, &mut s).map_err(|e| format!("--engine-args: {e}"))? {
            eprintln!("{}", presets::text::escape_controls(&n));
        }
    }
    Ok((s, origin))
}

fn load_file(source: &Source) -> Result<(Scenario, String), String> {
    if let Some(name) = &source.preset {
        return presets::bundled_scenario(name)
            .map(|s| (s, format!("preset {name}")))
            .ok_or_else(|| {
                let ids: Vec<&str> = bundled().iter().map(|p| p.id).collect();
                format!(
                    "no bundled preset is called \"{name}\" (try one of: {})",
                    ids.join(", ")
                )
            });
    }
    let Some(path) = &source.file else {
        return Err("give a scenario file or --preset NAME".to_owned());
    };
    presets::load(path)
        .map(|s| (s, path.display().to_string()))
        .map_err(|e| e.to_string())
}
