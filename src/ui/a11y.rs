//! Screen rectangles as labelled accessibility nodes, so that UI tests (and screen readers) can see
//! where a chart, its legend and its current-scenario marker are drawn: "Chart: Sweep",
//! "Legend: Sweep", "Marker: Sweep". They take part in no hit test (hover and clicks are unchanged).

use egui::accesskit::{Rect as AkRect, Role};
use egui::{Context, Id, Rect};

/// What a labelled rectangle is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The whole chart cell: title, controls and plot.
    Chart,
    /// The legend (outside the plot area).
    Legend,
    /// The current scenario's point or bar.
    Marker,
    /// A side panel.
    Panel,
    /// A plot's data area (inside its axes).
    Plot,
}

impl Part {
    pub const fn prefix(self) -> &'static str {
        match self {
            Part::Chart => "Chart",
            Part::Legend => "Legend",
            Part::Marker => "Marker",
            Part::Panel => "Panel",
            Part::Plot => "Plot",
        }
    }
    const fn role(self) -> Role {
        match self {
            Part::Chart => Role::Figure,
            Part::Legend => Role::Legend,
            Part::Marker => Role::Mark,
            Part::Panel => Role::Pane,
            Part::Plot => Role::Canvas,
        }
    }
}

/// Adds (or updates) the node "`part`: `name`" with the screen rectangle `rect` (logical points,
/// like every egui node: the root node carries the pixels-per-point scale).
pub fn rect_node(ctx: &Context, part: Part, name: &str, rect: Rect) {
    ctx.accesskit_node_builder(Id::unique(("a11y_rect", part.prefix(), name)), |node| {
        node.set_role(part.role());
        node.set_label(format!("{}: {name}", part.prefix()));
        node.set_bounds(AkRect {
            x0: f64::from(rect.min.x),
            y0: f64::from(rect.min.y),
            x1: f64::from(rect.max.x),
            y1: f64::from(rect.max.y),
        });
    });
}
