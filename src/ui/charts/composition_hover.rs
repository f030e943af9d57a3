//! The composition chart's hover text, shown as a tooltip at the pointer (egui_plot's own bar text
//! is drawn beside the bar and clipped at the plot's edge), and the segment a click pins.

use egui_plot::PlotPoint;

use super::composition::Column;
use super::memory_tick;
use crate::estimator::Component;
use crate::ui::Prefs;
use crate::units::MemoryUnit;

/// What the pointer is over: the bar's name and the component under it with its value.
pub(super) fn text(prefs: &Prefs, columns: &[Column], p: PlotPoint) -> Option<String> {
    let u = prefs.unit;
    let (col, c) = under(u, columns, p)?;
    Some(format!(
        "{}\n{}: {}\nClick to pin its explanation.",
        col.label,
        c.label(),
        memory_tick(u, u.value(col.parts.get(c)))
    ))
}

/// The component of the segment under the pointer.
pub(super) fn component_at(prefs: &Prefs, columns: &[Column], p: PlotPoint) -> Option<Component> {
    under(prefs.unit, columns, p).map(|(_, c)| c)
}

/// The bar and the stacked segment at `p` (plot coordinates: bar index, memory in `u`).
fn under(u: MemoryUnit, columns: &[Column], p: PlotPoint) -> Option<(&Column, Component)> {
    let i = p.x.round();
    if (p.x - i).abs() > 0.3 || i < 0.0 || p.y < 0.0 {
        return None;
    }
    let col = columns.get(i as usize)?;
    let mut below = 0.0;
    for c in Component::ALL {
        let v = u.value(col.parts.get(c));
        if v > 0.0 && p.y <= below + v {
            return Some((col, c));
        }
        below += v;
    }
    None
}
