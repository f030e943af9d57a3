//! Everything that touches egui. No formulas here: panels edit a `Scenario` and draw an `Estimate`.
//!
//! [`Prefs`] are the view preferences (persisted, but not the document); the scenario itself lives in
//! [`crate::app`]. Every colour is in [`theme`].

pub mod a11y;
pub mod charts;
pub mod claims;
pub mod commands;
pub mod controls;
pub mod family;
pub mod fit;
pub mod headline;
pub mod layout;
pub mod layout_state;
pub mod measured_panel;
pub mod measured_state;
pub mod menu;
pub mod notice;
pub mod theme;
pub mod widgets;

use serde::{Deserialize, Serialize};

use crate::units::MemoryUnit;

/// Dark or light visuals. Both are tuned to stay readable on a projector.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ThemeChoice {
    #[default]
    Dark,
    Light,
}

/// The theme of the images File ▸ Export PNG writes for slides (the window's own capture is as
/// shown).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExportTheme {
    /// The theme the window shows.
    #[default]
    AsShown,
    Light,
    Dark,
}

impl ExportTheme {
    /// The theme to draw the images in when the window shows `shown`.
    pub const fn resolve(self, shown: ThemeChoice) -> ThemeChoice {
        match self {
            ExportTheme::AsShown => shown,
            ExportTheme::Light => ThemeChoice::Light,
            ExportTheme::Dark => ThemeChoice::Dark,
        }
    }
}

/// What the sweep chart puts on its x axis.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SweepAxis {
    /// Micro-batch (training) or sequences per batch (inference).
    #[default]
    Batch,
    /// Sequence length (training) or prompt length (inference).
    SeqLen,
    /// Data-parallel degree.
    Dp,
    /// Tensor-parallel degree.
    Tp,
    /// Pipeline-parallel degree.
    Pp,
    /// Context-parallel degree (transformer training).
    Cp,
    /// Parameter count (the shape is derived from it).
    Params,
}

impl SweepAxis {
    pub const ALL: [SweepAxis; 7] = [
        SweepAxis::Batch,
        SweepAxis::SeqLen,
        SweepAxis::Dp,
        SweepAxis::Tp,
        SweepAxis::Pp,
        SweepAxis::Cp,
        SweepAxis::Params,
    ];

    pub const fn label(self) -> &'static str {
        match self {
            SweepAxis::Batch => "Batch size",
            SweepAxis::SeqLen => "Sequence length",
            SweepAxis::Dp => "Data-parallel degree",
            SweepAxis::Tp => "Tensor-parallel degree",
            SweepAxis::Pp => "Pipeline-parallel degree",
            SweepAxis::Cp => "Context-parallel degree",
            SweepAxis::Params => "Parameter count",
        }
    }

    /// The unit written after a value on this axis.
    pub const fn unit(self) -> &'static str {
        match self {
            SweepAxis::Batch => "sequences",
            SweepAxis::SeqLen => "tokens",
            SweepAxis::Dp | SweepAxis::Tp | SweepAxis::Pp | SweepAxis::Cp => "GPUs",
            SweepAxis::Params => "parameters",
        }
    }
}

/// Which rows the architecture comparison shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ArchView {
    #[default]
    Gpus,
    Technologies,
    Article,
}

/// View preferences: persisted with the session, never saved into a scenario file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Prefs {
    pub unit: MemoryUnit,
    pub theme: ThemeChoice,
    /// Large fonts and a chart-first layout for a projector (F5).
    pub presentation: bool,
    /// Whether the controls panel is shown in presentation mode (always shown otherwise).
    pub controls_in_presentation: bool,
    pub sweep_axis: SweepAxis,
    pub arch_view: ArchView,
    /// The memory chart's y axis ends just above the tallest bar instead of including the GPU's
    /// capacity (small scenarios are otherwise a sliver).
    pub memory_zoom: bool,
    /// The pipeline stage (0-based) whose phases the memory chart shows; `None` follows the
    /// limiting stage.
    pub memory_stage: Option<u32>,
    /// Presentation shows one chart at a time ([`charts::chart::Chart::ALL`], F6; arrows move).
    pub slides: bool,
    /// The slide shown, an index into `Chart::ALL`.
    pub slide: usize,
    /// The theme of exported slide images.
    pub export_theme: ExportTheme,
}

impl Default for Prefs {
    fn default() -> Self {
        Prefs {
            unit: MemoryUnit::GiB,
            theme: ThemeChoice::Dark,
            presentation: false,
            controls_in_presentation: false,
            sweep_axis: SweepAxis::Batch,
            arch_view: ArchView::Gpus,
            memory_zoom: false,
            memory_stage: None,
            slides: false,
            slide: 0,
            export_theme: ExportTheme::AsShown,
        }
    }
}
