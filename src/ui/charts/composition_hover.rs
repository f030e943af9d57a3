//! The composition chart's hover text, shown as a tooltip at the pointer (egui_plot's own bar text
//! is drawn beside the bar and clipped at the plot's edge).

use egui_plot::PlotPoint;

use super::composition::Column;
use super::memory_tick;
use crate::estimator::Component;
use crate::ui::Prefs;
use crate::units::Bytes;

/// What the pointer is over: the bar's name and the component under it with its value.
pub(super) fn text(
    prefs: &Prefs,
    columns: &[Column],
    off_total: Bytes,
    p: PlotPoint,
) -> Option<String> {
    let u = prefs.unit;
    let i = p.x.round();
    if (p.x - i).abs() > 0.3 || i < 0.0 || p.y < 0.0 {
        return None;
    }
    let i = i as usize;
    let Some(col) = columns.get(i) else {
        let off = u.value(off_total);
        return (i == columns.len() && off > 0.0 && p.y <= off)
            .then(|| format!("Off-GPU (host, NVMe, second tier)\n{}", memory_tick(u, off)));
    };
    let mut below = 0.0;
    for c in Component::ALL {
        let v = u.value(col.parts.get(c));
        if v > 0.0 && p.y <= below + v {
            return Some(format!(
                "{}\n{}: {}",
                col.label,
                c.label(),
                memory_tick(u, v)
            ));
        }
        below += v;
    }
    None
}
