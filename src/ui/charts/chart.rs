//! The charts as a list: [`Chart::ALL`], each drawn from one [`ChartCtx`] that the frame fills once
//! (the estimate is computed by the caller, once per frame, and handed down by reference).

use egui::Ui;

use super::{architecture, composition, roofline, sensitivity, step_time, sweep, timeline, title};
use crate::estimator::Estimate;
use crate::scenario::Scenario;
use crate::ui::Prefs;

/// What every chart may read (and the few view choices and the scratch copy it may change).
pub struct ChartCtx<'a> {
    pub prefs: &'a mut Prefs,
    pub scenario: &'a Scenario,
    /// `estimate(scenario)`, computed once this frame.
    pub estimate: &'a Estimate,
    /// The pinned baseline and its estimate.
    pub baseline: Option<(&'a Scenario, &'a Estimate)>,
    /// Scratch copy the sweep mutates (cloned into, never reallocated).
    pub scratch: &'a mut Scenario,
    /// Plot height for the next chart drawn (the layout sets it).
    pub height: f32,
}

/// One chart of the central area.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chart {
    Memory,
    Roofline,
    Architecture,
    Sweep,
    Sensitivity,
}

impl Chart {
    pub const ALL: [Chart; 5] = [
        Chart::Memory,
        Chart::Roofline,
        Chart::Architecture,
        Chart::Sweep,
        Chart::Sensitivity,
    ];

    /// Short name, as in the accessibility nodes "Chart: Memory", "Legend: Sweep".
    pub const fn name(self) -> &'static str {
        match self {
            Chart::Memory => "Memory",
            Chart::Roofline => "Roofline",
            Chart::Architecture => "Architecture",
            Chart::Sweep => "Sweep",
            Chart::Sensitivity => "Sensitivity",
        }
    }

    /// The title shown above the chart.
    pub fn title(self, prefs: &Prefs) -> String {
        let unit = prefs.unit.label();
        match self {
            Chart::Memory => format!("Per-GPU memory by component ({unit})"),
            Chart::Roofline => "Roofline: compute vs memory bandwidth (log–log)".to_owned(),
            Chart::Architecture => "Architectures: this scenario on other GPUs".to_owned(),
            Chart::Sweep => format!("Sweep: per-GPU memory ({unit}) against one input"),
            Chart::Sensitivity => "Sensitivity: what one notch of each knob changes".to_owned(),
        }
    }

    /// The title's hover explanation.
    pub const fn hover(self) -> &'static str {
        match self {
            Chart::Memory => {
                "Stacked in a fixed order, one bar per phase of the step (“(peak)” marks the phase that sets the peak); dashed line: the GPU's memory."
            }
            Chart::Roofline => {
                "Attainable FLOP/s against arithmetic intensity (FLOP per byte moved). Left of the ridge a step is memory-bound."
            }
            Chart::Architecture => {
                "Memory, bandwidth and latency per GPU, each with its own scale, and whether this scenario fits."
            }
            Chart::Sweep => {
                "Everything else as set; the dotted line marks where it stops (or starts) fitting."
            }
            Chart::Sensitivity => {
                "How much per-GPU memory each knob changes when moved one notch down or up, largest first; hover a bar for the step-time change."
            }
        }
    }

    /// Draws the title and the chart.
    pub fn ui(self, ui: &mut Ui, cx: &mut ChartCtx<'_>) {
        if self == Chart::Memory {
            return memory(ui, cx);
        }
        if self == Chart::Roofline {
            return roofline_or_step(ui, cx);
        }
        title(ui, cx.prefs, &self.title(cx.prefs), self.hover());
        let (prefs, scenario, est, h) = (&mut *cx.prefs, cx.scenario, cx.estimate, cx.height);
        match self {
            // Drawn above with their header toggles.
            Chart::Memory | Chart::Roofline => {}
            Chart::Architecture => architecture::ui(ui, prefs, scenario, h),
            Chart::Sweep if est.cpu_build().is_some() => {
                ui.label(
                    "A llama.cpp CPU build (-dev none) uses no GPU: there is no per-GPU memory to sweep. \
                     Its host buffers are in the memory chart; untick -dev none under Serving engine \
                     to sweep a GPU run.",
                );
            }
            Chart::Sweep => {
                let base = cx.baseline.map(|(b, _)| b);
                sweep::ui(ui, prefs, scenario, est, base, cx.scratch, h);
            }
            Chart::Sensitivity => sensitivity::ui(ui, prefs, scenario, h),
        }
    }
}

/// The memory chart: a header toggle between the composition and the timeline, the chart, and the
/// measured-run panel under it (its rows come out of the chart's height).
fn memory(ui: &mut Ui, cx: &mut ChartCtx<'_>) {
    let chart = Chart::Memory;
    let on = ui
        .horizontal(|ui| {
            let on = timeline::toggle(ui);
            let text = if on {
                format!(
                    "Step timeline: live tensor bytes per GPU ({})",
                    cx.prefs.unit.label()
                )
            } else if cx.estimate.cpu_build().is_some() && cx.baseline.is_none() {
                format!(
                    "Host memory by component ({}): llama.cpp CPU build",
                    cx.prefs.unit.label()
                )
            } else {
                chart.title(cx.prefs)
            };
            title(ui, cx.prefs, &text, chart.hover());
            on
        })
        .inner;
    let (prefs, scenario, est) = (&mut *cx.prefs, cx.scenario, cx.estimate);
    // Presenting shows the charts only: the measured-run controls stay at the desk (a loaded
    // measurement is still drawn on the chart).
    let panel = !prefs.presentation;
    let h = if panel {
        (cx.height - crate::ui::measured_panel::height(ui, cx.height)).max(80.0)
    } else {
        cx.height
    };
    if on {
        timeline::ui(ui, prefs, scenario, est, h);
    } else {
        let base = cx.baseline.map(|(_, e)| e);
        let h = (h - super::engine_printed::ui(ui, est, prefs.unit)).max(80.0);
        composition::ui(ui, prefs, scenario, est, base, h);
    }
    if panel {
        crate::ui::measured_panel::ui(ui, cx.height, prefs, scenario, est);
    }
}

/// The roofline chart: a header toggle between the roofline and the step time by part (with the
/// fastest layouts for the GPU budget).
fn roofline_or_step(ui: &mut Ui, cx: &mut ChartCtx<'_>) {
    let chart = Chart::Roofline;
    let on = ui
        .horizontal(|ui| {
            let on = step_time::toggle(ui);
            let text = if on {
                step_time::title(cx.scenario).to_owned()
            } else {
                chart.title(cx.prefs)
            };
            title(ui, cx.prefs, &text, chart.hover());
            on
        })
        .inner;
    let (prefs, scenario, est, h) = (&mut *cx.prefs, cx.scenario, cx.estimate, cx.height);
    if on {
        step_time::ui(ui, prefs, scenario, est, h);
    } else {
        roofline::ui(ui, prefs, scenario, est, h);
    }
}
