//! `vram-explorer optimize`: the fastest training layouts that fit a GPU budget and a global batch
//! (the parts-model search, `estimator::performance::parts::search`), with the Pareto front of
//! step time against GPUs and the cost per million tokens of each.

use std::fmt::Write;

use crate::estimator::performance::parts::search::{Layout, SearchOptions, search};
use crate::estimator::solver::{checkpointing_label, offload_target_label, zero_label};
use crate::scenario::Scenario;
use crate::units::fmt_seconds;

/// Arguments of `optimize` (registered in `cli::mod`).
#[derive(Debug, clap::Args)]
pub struct OptimizeArgs {
    #[command(flatten)]
    pub source: super::Source,
    /// GPUs available (TP × PP × DP ≤ this); 0 = the scenario's own count.
    #[arg(long, default_value_t = 0)]
    pub gpus: u32,
    /// Sequences per optimizer step; 0 = the scenario's (DP × micro-batch × accumulation).
    #[arg(long, default_value_t = 0)]
    pub batch: u32,
    /// How many layouts to print.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..=50))]
    pub top: u16,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs the search and formats its answer; an inference scenario is an error (the search lays
/// out training steps: `fit` answers what a serving layout holds).
pub fn run(s: &Scenario, a: &OptimizeArgs) -> Result<String, String> {
    if s.mode != crate::scenario::Mode::Training {
        return Err(
            "optimize searches training layouts, and this scenario is inference (mode: Inference): \
             use `fit` for what a serving layout holds, or set mode: Training"
                .to_owned(),
        );
    }
    let o = SearchOptions::for_scenario(s, a.gpus, a.batch, usize::from(a.top));
    let (gpus, batch) = (o.gpus, o.global_batch);
    let r = search(s, &o);
    if a.json {
        let v = serde_json::json!({
            "gpus": gpus,
            "global_batch": batch,
            "evaluated": r.evaluated,
            "best": r.best,
            "pareto": r.pareto,
        });
        return Ok(serde_json::to_string_pretty(&v).unwrap_or_default() + "\n");
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Layouts for {gpus} GPUs, global batch {batch}: {} estimated, fastest that fit (cost per \
         million tokens at {} per GPU-hour, the scenario's timing.price_per_gpu_hour):",
        r.evaluated,
        crate::format::sig(s.timing.price_per_gpu_hour)
    );
    if r.best.is_empty() {
        let _ = writeln!(out, "  none fits");
    }
    for l in &r.best {
        let _ = writeln!(out, "  {}", line(l));
    }
    let _ = writeln!(out, "Step time against GPUs (Pareto front):");
    for l in &r.pareto {
        let _ = writeln!(out, "  {}", line(l));
    }
    Ok(out)
}

fn line(l: &Layout) -> String {
    format!(
        "{:>6} GPUs  TP {} PP {} (v {}) DP {} CP {}  micro {} × {}  SP {}  recompute {}, ZeRO {}, optimizer states on {}, EP {}{}: step {}, MFU {:.1} %, cost {:.3} per M tokens",
        l.gpus,
        l.tp,
        l.pp,
        l.virtual_stages,
        l.dp,
        l.cp,
        l.micro_batch,
        l.accumulation,
        if l.sequence_parallel { "on" } else { "off" },
        checkpointing_label(l.checkpointing),
        zero_label(l.zero),
        offload_target_label(l.offload_optimizer),
        l.ep,
        // Named only where the experts are not split as the dense layers are.
        if l.expert_tp() != l.tp.max(1) {
            format!(" (expert TP {})", l.expert_tp())
        } else {
            String::new()
        },
        fmt_seconds(l.step_s),
        l.mfu * 100.0,
        l.cost_per_mtoken
    )
}
