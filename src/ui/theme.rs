//! Every colour and text size of the app. Colours come from Paul Tol's "bright" and "muted" qualitative
//! schemes (personal.sron.nl/~pault/, colour-blind safe), which stay distinguishable on both dark and
//! light backgrounds and on washed-out projectors.

use egui::{Color32, FontId, TextStyle};

use super::{Prefs, ThemeChoice};
use crate::estimator::performance::breakdown::PartClass;
use crate::estimator::{Component, Severity};

/// The fill of a memory component in the stacked charts and legends, on `choice`'s plot background:
/// the light theme darkens the six light fills of the palette until each has 3:1 contrast against
/// white (WCAG 2.1 SC 1.4.11, non-text contrast); asserted in `tests/ui_window.rs`.
pub fn component_on(c: Component, choice: ThemeChoice) -> Color32 {
    match (choice, c) {
        (ThemeChoice::Light, Component::MasterWeights) => Color32::from_rgb(0x4E, 0x9B, 0xB5),
        (ThemeChoice::Light, Component::OptimizerStates) => Color32::from_rgb(0xA0, 0x93, 0x35),
        (ThemeChoice::Light, Component::KvCache) => Color32::from_rgb(0xE0, 0x70, 0x30),
        (ThemeChoice::Light, Component::CudaContext) => Color32::from_rgb(0x90, 0x90, 0x90),
        (ThemeChoice::Light, Component::Critic) => Color32::from_rgb(0x1F, 0x80, 0x80),
        (ThemeChoice::Light, Component::RewardModel) => Color32::from_rgb(0x9A, 0x70, 0x10),
        _ => component(c),
    }
}

/// The palette's fill of a memory component (see [`component_on`] for the one to draw with).
fn component(c: Component) -> Color32 {
    match c {
        Component::Weights => Color32::from_rgb(0x44, 0x77, 0xAA),
        Component::MasterWeights => Color32::from_rgb(0x66, 0xCC, 0xEE),
        Component::Gradients => Color32::from_rgb(0x22, 0x88, 0x33),
        Component::OptimizerStates => Color32::from_rgb(0xCC, 0xBB, 0x44),
        Component::Activations => Color32::from_rgb(0xEE, 0x66, 0x77),
        Component::Transient => Color32::from_rgb(0xAA, 0x33, 0x77),
        Component::KvCache => Color32::from_rgb(0xEE, 0x77, 0x33),
        Component::ReferenceModel => Color32::from_rgb(0x88, 0x66, 0xCC),
        Component::RewardModel => Color32::from_rgb(0xBB, 0x88, 0x22),
        Component::Critic => Color32::from_rgb(0x33, 0xAA, 0xAA),
        Component::RolloutEngine => Color32::from_rgb(0xCC, 0x55, 0x22),
        Component::CommBuffers => Color32::from_rgb(0x00, 0x99, 0x88),
        Component::NcclBuffers => Color32::from_rgb(0x77, 0x88, 0xAA),
        Component::CudaContext => Color32::from_rgb(0x99, 0x99, 0x99),
        Component::AllocatorReserve => Color32::from_rgb(0x66, 0x66, 0x66),
    }
}

/// Bytes that live off the GPU (host, NVMe, second tier); 3:1 on both themes' plot backgrounds.
pub fn offloaded_on(_choice: ThemeChoice) -> Color32 {
    Color32::from_rgb(0x88, 0x66, 0xAA)
}

/// Thin outline between stacked segments.
pub fn bar_outline(choice: ThemeChoice) -> Color32 {
    match choice {
        ThemeChoice::Dark => Color32::from_rgb(0x10, 0x10, 0x10),
        ThemeChoice::Light => Color32::from_rgb(0xFF, 0xFF, 0xFF),
    }
}

/// The capacity line and anything that marks "the limit".
pub fn capacity(choice: ThemeChoice) -> Color32 {
    match choice {
        ThemeChoice::Dark => Color32::from_rgb(0xF0, 0xF0, 0xF0),
        ThemeChoice::Light => Color32::from_rgb(0x20, 0x20, 0x20),
    }
}

/// A measured run drawn over the estimate: allocated (solid) and reserved (dashed) bytes.
pub fn measured(choice: ThemeChoice) -> Color32 {
    match choice {
        ThemeChoice::Dark => Color32::from_rgb(0xFF, 0x4F, 0xA0),
        ThemeChoice::Light => Color32::from_rgb(0xC0, 0x10, 0x70),
    }
}

/// Phase bands of the timeline (every other phase shaded).
pub fn band(choice: ThemeChoice) -> Color32 {
    match choice {
        ThemeChoice::Dark => Color32::from_white_alpha(14),
        ThemeChoice::Light => Color32::from_black_alpha(14),
    }
}

/// "Fits" mark.
pub fn good(choice: ThemeChoice) -> Color32 {
    match choice {
        ThemeChoice::Dark => Color32::from_rgb(0x55, 0xCC, 0x66),
        ThemeChoice::Light => Color32::from_rgb(0x1A, 0x7F, 0x2E),
    }
}

/// "Does not fit" mark and error diagnostics.
pub fn bad(choice: ThemeChoice) -> Color32 {
    match choice {
        ThemeChoice::Dark => Color32::from_rgb(0xFF, 0x66, 0x66),
        ThemeChoice::Light => Color32::from_rgb(0xC0, 0x1C, 0x1C),
    }
}

/// Warning diagnostics.
pub fn warning(choice: ThemeChoice) -> Color32 {
    match choice {
        ThemeChoice::Dark => Color32::from_rgb(0xFF, 0xC8, 0x40),
        ThemeChoice::Light => Color32::from_rgb(0x9A, 0x62, 0x00),
    }
}

/// Notes (explanations, not problems).
pub fn note(choice: ThemeChoice) -> Color32 {
    match choice {
        ThemeChoice::Dark => Color32::from_rgb(0x9C, 0xC8, 0xF0),
        ThemeChoice::Light => Color32::from_rgb(0x1F, 0x5A, 0x96),
    }
}

pub fn severity(s: Severity, choice: ThemeChoice) -> Color32 {
    match s {
        Severity::Error => bad(choice),
        Severity::Warning => warning(choice),
        Severity::Note => note(choice),
    }
}

/// The current scenario's line or point in a chart.
pub fn current(choice: ThemeChoice) -> Color32 {
    match choice {
        ThemeChoice::Dark => Color32::from_rgb(0x66, 0xCC, 0xEE),
        ThemeChoice::Light => Color32::from_rgb(0x00, 0x55, 0xAA),
    }
}

/// The pinned baseline's line or point.
pub fn baseline(choice: ThemeChoice) -> Color32 {
    match choice {
        ThemeChoice::Dark => Color32::from_rgb(0xBB, 0xBB, 0xBB),
        ThemeChoice::Light => Color32::from_rgb(0x77, 0x77, 0x77),
    }
}

/// A bar or row that stands for several parts (the step-time view's "N smaller"): a neutral grey.
pub fn several(choice: ThemeChoice) -> Color32 {
    baseline(choice)
}

/// Roofline: the compute roof, the memory roof, and the operating points per phase.
pub fn roof(choice: ThemeChoice) -> Color32 {
    capacity(choice)
}

/// Colours of roofline operating points, in the order they are drawn (3:1 on the plot background).
pub const fn operating_points(choice: ThemeChoice) -> [Color32; 4] {
    match choice {
        ThemeChoice::Dark => [
            Color32::from_rgb(0xEE, 0x66, 0x77),
            Color32::from_rgb(0xCC, 0xBB, 0x44),
            Color32::from_rgb(0x22, 0x88, 0x33),
            Color32::from_rgb(0xEE, 0x77, 0x33),
        ],
        ThemeChoice::Light => [
            Color32::from_rgb(0xEE, 0x66, 0x77),
            Color32::from_rgb(0xA0, 0x93, 0x35),
            Color32::from_rgb(0x22, 0x88, 0x33),
            Color32::from_rgb(0xE0, 0x70, 0x30),
        ],
    }
}

/// Body text size in points.
pub fn body_size(prefs: &Prefs) -> f32 {
    if prefs.presentation { 22.0 } else { 14.0 }
}

/// Small text (tick labels, table cells): 80 % of the body size, and never below 18 px in
/// presentation (issue 16: text on a projector ≥ 18 px).
pub fn small_size(prefs: &Prefs) -> f32 {
    let small = body_size(prefs) * 0.8;
    if prefs.presentation {
        small.max(18.0)
    } else {
        small
    }
}

/// The smallest text a legend may shrink to so that it fits its cell: presentation body text
/// stays ≥ 18 px (issue 16's "done when"); at the desk, 80 % of the body size.
pub fn legend_min_size(prefs: &Prefs) -> f32 {
    if prefs.presentation {
        18.0
    } else {
        body_size(prefs) * 0.8
    }
}

/// Chart titles and the presentation title line: at least 24 px in presentation mode.
pub fn chart_title_size(prefs: &Prefs) -> f32 {
    if prefs.presentation { 24.0 } else { 15.0 }
}

/// The presentation title line (scenario name and verdict).
pub fn title_size(prefs: &Prefs) -> f32 {
    if prefs.presentation { 30.0 } else { 20.0 }
}

/// The headline's big verdict.
pub fn verdict_size(prefs: &Prefs) -> f32 {
    if prefs.presentation { 40.0 } else { 24.0 }
}

/// Applies theme and text sizes. Cheap, but the app calls it only when `prefs` change.
pub fn apply(ctx: &egui::Context, prefs: &Prefs) {
    ctx.set_theme(match prefs.theme {
        ThemeChoice::Dark => egui::ThemePreference::Dark,
        ThemeChoice::Light => egui::ThemePreference::Light,
    });
    let body = body_size(prefs);
    ctx.all_styles_mut(|style| {
        style.text_styles = [
            (TextStyle::Small, FontId::proportional(small_size(prefs))),
            (TextStyle::Body, FontId::proportional(body)),
            (TextStyle::Button, FontId::proportional(body)),
            (TextStyle::Heading, FontId::proportional(body * 1.35)),
            (TextStyle::Monospace, FontId::monospace(body * 0.95)),
        ]
        .into();
        style.spacing.interact_size.y = body + 6.0;
    });
}

/// Colours of the step-time parts by kind (Paul Tol's bright scheme, lightened for the dark
/// theme where it fell under 3:1 on the panel).
pub const fn step_part(class: PartClass, choice: ThemeChoice) -> Color32 {
    let dark = matches!(choice, ThemeChoice::Dark);
    match class {
        PartClass::Compute if dark => Color32::from_rgb(0x66, 0x99, 0xDD),
        PartClass::Compute => Color32::from_rgb(0x44, 0x77, 0xAA),
        PartClass::Memory => Color32::from_rgb(0x66, 0xCC, 0xEE),
        PartClass::Recompute => Color32::from_rgb(0xCC, 0xBB, 0x44),
        PartClass::Communication => Color32::from_rgb(0xEE, 0x66, 0x77),
        PartClass::Idle if dark => Color32::from_rgb(0xBB, 0xBB, 0xBB),
        PartClass::Idle => Color32::from_rgb(0x88, 0x88, 0x88),
        PartClass::Host if dark => Color32::from_rgb(0xCC, 0x66, 0xAA),
        PartClass::Host => Color32::from_rgb(0xAA, 0x33, 0x77),
    }
}
