//! Labelled controls (every one has an accessible name, a unit and a hover text) and the log-axis
//! helper for egui_plot, which has no log axis: plot `log10(x)` and relabel the ticks here.
//!
//! Sliders clamp only what the user types or drags ([`SliderClamping::Edits`]): a valid value from a
//! file or the saved session beyond a slider's range is shown as it is, never silently changed, so
//! the controls always agree with what the estimate uses. A typed value applies once, on Enter or
//! when the field loses focus (one undo step, not one per keystroke), and a typed value outside the
//! range says what it was set to ([`typed_note`]).

use std::ops::RangeInclusive;

use std::cell::Cell;

use egui::{Response, Slider, SliderClamping, Ui};
use egui_plot::{GridInput, GridMark};

/// A count with the suffix people use for model sizes (`8.03 B`, `1 M`): [`crate::format::count`].
pub use crate::format::{count as fmt_count, trim_zeros};

/// Parses what [`fmt_count`] prints, plain numbers and `e` notation: `8B`, `8 B`, `70e9`, `1.5k`.
pub fn parse_count(text: &str) -> Option<f64> {
    let t = text.trim().replace(['_', ','], "");
    let (num, mult) = match t.chars().last()? {
        'k' | 'K' => (&t[..t.len() - 1], 1e3),
        'M' | 'm' => (&t[..t.len() - 1], 1e6),
        'B' | 'b' | 'G' | 'g' => (&t[..t.len() - 1], 1e9),
        'T' | 't' => (&t[..t.len() - 1], 1e12),
        _ => (t.as_str(), 1.0),
    };
    let v = num.trim().parse::<f64>().ok()? * mult;
    v.is_finite().then_some(v)
}

/// A logarithmic slider over a count that spans decades (parameters, rows), shown as `8.03 B`.
pub fn count_slider(
    ui: &mut Ui,
    value: &mut f64,
    range: RangeInclusive<f64>,
    label: &str,
    unit: &str,
    hover: &str,
) -> Response {
    let (lo, hi) = (*range.start(), *range.end());
    let slider = Slider::new(value, range)
        .logarithmic(true)
        .text(label)
        .suffix(format!(" {unit}"))
        .custom_formatter(|v, _| fmt_count(v));
    typed_slider(ui, slider, parse_count, 1.0, (lo, hi), (label, unit)).on_hover_text(hover)
}

/// Adds `slider` with the typing rules every numeric control shares: edits apply once (Enter or
/// focus loss), typed values are clamped to the range, and what was typed, parsed by `parse` and
/// divided by `scale` (100 for a percentage), is kept so that an out-of-range value says so
/// ([`typed_note`], in the displayed unit over the displayed `range`).
fn typed_slider(
    ui: &mut Ui,
    slider: Slider<'_>,
    parse: fn(&str) -> Option<f64>,
    scale: f64,
    range: (f64, f64),
    (label, unit): (&str, &str),
) -> Response {
    let typed = Cell::new(None);
    let r = ui.add(
        slider
            .clamping(SliderClamping::Edits)
            .update_while_editing(false)
            .custom_parser(|t| remember(&typed, parse(t).map(|v| v / scale))),
    );
    typed_note(ui, label, &r, typed.get().map(|v| v * scale), range, unit);
    r
}

/// The documented range of an integer field (`validate::RANGES`, the one source of ranges), or
/// `fallback` for a field that has none.
pub fn documented(field: &str, fallback: RangeInclusive<u32>) -> RangeInclusive<u32> {
    crate::scenario::validate::range_of(field).map_or(fallback, |r| {
        // Integer fields have integer bounds inside u32 (validate.rs).
        let lo = r.min.max(0.0) as u32;
        let hi = r.max.min(f64::from(u32::MAX)) as u32;
        lo..=hi.max(lo)
    })
}

/// The documented range of a real field (`validate::RANGES`), or `fallback` for one that has none.
pub fn documented_real(field: &str, fallback: RangeInclusive<f64>) -> RangeInclusive<f64> {
    crate::scenario::validate::range_of(field).map_or(fallback, |r| r.min..=r.max.max(r.min))
}

/// An integer slider; `log` for ranges that span decades (batch, sequence, degrees).
pub fn int_slider(
    ui: &mut Ui,
    value: &mut u32,
    range: RangeInclusive<u32>,
    log: bool,
    label: &str,
    unit: &str,
    hover: &str,
) -> Response {
    let suffix = if unit.is_empty() {
        String::new()
    } else {
        format!(" {}", singular_if_one(f64::from(*value), unit))
    };
    let (lo, hi) = (f64::from(*range.start()), f64::from(*range.end()));
    let slider = Slider::new(value, range)
        .logarithmic(log)
        .text(label)
        .suffix(suffix);
    typed_slider(ui, slider, parse_leading, 1.0, (lo, hi), (label, unit)).on_hover_text(hover)
}

/// `unit` as written after `n`: "1 GPU", "1 step", but "2 GPUs", "1 stages/GPU" is left alone (a
/// plural unit name ends in "s" and has no "/").
pub fn singular_if_one(n: f64, unit: &str) -> &str {
    if n == 1.0 && !unit.contains('/') {
        unit.strip_suffix('s').unwrap_or(unit)
    } else {
        unit
    }
}

/// A linear slider over a real number with its unit.
pub fn real_slider(
    ui: &mut Ui,
    value: &mut f64,
    range: RangeInclusive<f64>,
    label: &str,
    unit: &str,
    hover: &str,
) -> Response {
    let (lo, hi) = (*range.start(), *range.end());
    let slider = Slider::new(value, range)
        .text(label)
        .suffix(format!(" {unit}"));
    typed_slider(ui, slider, parse_leading, 1.0, (lo, hi), (label, unit)).on_hover_text(hover)
}

/// A fraction in [lo, hi] shown and typed as a percentage.
pub fn percent_slider(
    ui: &mut Ui,
    value: &mut f64,
    range: RangeInclusive<f64>,
    label: &str,
    hover: &str,
) -> Response {
    let (lo, hi) = (*range.start(), *range.end());
    let slider = Slider::new(value, range)
        .text(label)
        .suffix(" %")
        .custom_formatter(|v, _| format!("{:.0}", v * 100.0));
    typed_slider(
        ui,
        slider,
        parse_leading,
        100.0,
        (lo * 100.0, hi * 100.0),
        (label, "%"),
    )
    .on_hover_text(hover)
}

/// Keeps what the user typed (before clamping) for [`typed_note`].
fn remember(cell: &Cell<Option<f64>>, v: Option<f64>) -> Option<f64> {
    cell.set(v);
    v
}

/// The number a typed text starts with ("120", "120 GPUs", "1.5e3"); None when there is none.
fn parse_leading(text: &str) -> Option<f64> {
    let t = text.trim().replace(['_', ','], "");
    let end = t
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit()
                || c == '.'
                || (i == 0 && (c == '-' || c == '+'))
                || c == 'e'
                || c == 'E')
        })
        .map_or(t.len(), |(i, _)| i);
    t.get(..end)?.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// A typed value or a bound as the user would write it: whole numbers digit for digit ("99,999",
/// not "100 k", which reads as if it were rounded up to something else), others to three digits.
fn exact(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        crate::format::grouped(v)
    } else {
        fmt_count(v)
    }
}

/// Seconds a "typed value out of range" note stays under its control.
const NOTE_SECONDS: f64 = 8.0;

/// Under a control whose typed value `typed` was outside `lo..=hi` (and has been set to the
/// nearest bound): "99999 is above the maximum, 256 GPUs: set to 256", as a label under it. The
/// note stays a few seconds (one repaint is asked for when it is due), never a silent clamp.
///
/// The note is keyed on the control's `label`, not on its widget id: an auto id shifts when a
/// control above appears or goes (the clamped value itself can do that), and the note went with it.
pub fn typed_note(
    ui: &mut Ui,
    label: &str,
    r: &Response,
    typed: Option<f64>,
    (lo, hi): (f64, f64),
    unit: &str,
) {
    let key = egui::Id::unique(("typed_out_of_range", label));
    let now = ui.input(|i| i.time);
    if r.changed()
        && let Some(v) = typed
        && (v < lo || v > hi)
    {
        let (side, bound) = if v > hi {
            ("above the maximum", hi)
        } else {
            ("below the minimum", lo)
        };
        let b = exact(bound);
        let text = format!("{} is {side}, {b} {unit}: set to {b}.", exact(v));
        ui.data_mut(|d| d.insert_temp(key, (text, now + NOTE_SECONDS)));
    }
    let Some((text, until)) = ui.data(|d| d.get_temp::<(String, f64)>(key)) else {
        return;
    };
    if now >= until {
        ui.data_mut(|d| d.remove::<(String, f64)>(key));
        return;
    }
    ui.ctx()
        .request_repaint_after(std::time::Duration::from_secs_f64(until - now));
    let color = super::theme::warning(if ui.visuals().dark_mode {
        super::ThemeChoice::Dark
    } else {
        super::ThemeChoice::Light
    });
    // A label under the control, in the panel's flow (it scrolls), so that it is read out by a
    // screen reader and seen by the accessibility tree; a tooltip layer was neither.
    ui.add(egui::Label::new(egui::RichText::new(text).color(color)).wrap());
}

/// A checkbox with a hover text.
pub fn toggle(ui: &mut Ui, value: &mut bool, label: &str, hover: &str) -> Response {
    ui.checkbox(value, label).on_hover_text(hover)
}

/// One option of a [`choice`]: the value, its label and what it does (and costs).
pub struct Choice<T> {
    pub value: T,
    pub label: &'static str,
    pub hover: &'static str,
}

/// Shorthand for building a [`Choice`].
pub const fn opt<T>(value: T, label: &'static str, hover: &'static str) -> Choice<T> {
    Choice {
        value,
        label,
        hover,
    }
}

/// A combo box over a fixed list; each option carries its own hover text.
pub fn choice<T: Copy + PartialEq>(
    ui: &mut Ui,
    value: &mut T,
    options: &[Choice<T>],
    label: &str,
    hover: &str,
) -> Response {
    let selected = options
        .iter()
        .find(|o| o.value == *value)
        .map_or("—", |o| o.label);
    let mut changed = false;
    let mut response = egui::ComboBox::from_label(label)
        .selected_text(selected)
        .show_ui(ui, |ui| {
            for o in options {
                let r = ui
                    .selectable_value(value, o.value, o.label)
                    .on_hover_text(o.hover);
                changed |= r.changed();
            }
        })
        .response
        .on_hover_text(hover);
    if changed {
        response.mark_changed();
    }
    response
}

/// Grid marks for an axis whose plot coordinate is `log10(x)`, labelled ticks at least `gap` points
/// apart: at 1×, 2× and 5× each decade where the narrowest step (5 → 10 and 1 → 2, 0.301 of a
/// decade) leaves that room, else at each decade, else at every k-th decade. (At 1280 × 800 the
/// sweep chart's three decades drew "500" and "1000" into one "5001000" when the 2× and 5× marks
/// were kept for any span under five decades.)
pub fn log10_marks(gap: f32) -> impl Fn(GridInput) -> Vec<GridMark> {
    move |input: GridInput| {
        let (lo, hi) = input.bounds;
        // `base_step_size` is egui_plot's smallest grid spacing in plot units.
        let decades_per_point = input.base_step_size / crate::ui::charts::GRID_MIN_POINTS;
        let min_gap = decades_per_point * f64::from(gap);
        if !(lo.is_finite() && hi.is_finite() && hi > lo && min_gap.is_finite()) {
            return Vec::new();
        }
        let fine = min_gap <= 2f64.log10();
        let every = if min_gap <= 1.0 {
            1
        } else {
            min_gap.ceil() as i64
        };
        let first = lo.floor() as i64;
        let last = hi.ceil() as i64;
        let mut marks = Vec::new();
        for d in (first..=last.min(first + 400)).filter(|d| d.rem_euclid(every) == 0) {
            let d = d as f64;
            marks.push(GridMark {
                value: d,
                step_size: every as f64,
            });
            if fine {
                for m in [2.0_f64, 5.0] {
                    marks.push(GridMark {
                        value: d + m.log10(),
                        step_size: 2f64.log10(),
                    });
                }
            }
        }
        marks.retain(|m| m.value >= lo && m.value <= hi);
        marks
    }
}

/// The tick label of a `log10(x)` coordinate: `x` as a count (`1k`, `10 M`).
pub fn log10_label(log_value: f64) -> String {
    fmt_count(10f64.powf(log_value))
}

/// `log10(x)` for plotting; non-positive inputs map to 0 so nothing non-finite reaches a plot.
pub fn log10(x: f64) -> f64 {
    if x > 0.0 && x.is_finite() {
        x.log10()
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_round_trip() {
        assert_eq!(fmt_count(8.03e9), "8.03 B");
        assert_eq!(fmt_count(512.0), "512");
        assert_eq!(fmt_count(8e9), "8 B");
        assert_eq!(fmt_count(1000.0), "1000");
        assert!((parse_count("8.03 B").unwrap_or(0.0) - 8.03e9).abs() < 1.0);
        assert_eq!(parse_count("70e9"), Some(70e9));
        assert_eq!(parse_count("1.5k"), Some(1500.0));
        assert_eq!(parse_count("x"), None);
    }

    #[test]
    fn decade_marks() {
        // 0.01 decade per 8 points: 2× and 5× marks have 240 points of room, ≥ a 40-point gap.
        let roomy = log10_marks(40.0)(GridInput {
            bounds: (0.0, 3.0),
            base_step_size: 0.01,
        });
        assert!(roomy.iter().any(|m| m.value == 3.0));
        assert!(
            roomy
                .iter()
                .any(|m| (m.value - 2.0 - 5f64.log10()).abs() < 1e-12)
        );
        assert!(roomy.iter().all(|m| m.value.is_finite()));
        // 0.08 decade per 8 points (three decades across 300 points): 0.301 decade is 30 points,
        // too close for a 40-point gap, so only the decades are labelled.
        let tight = log10_marks(40.0)(GridInput {
            bounds: (0.0, 3.0),
            base_step_size: 0.08,
        });
        let values: Vec<f64> = tight.iter().map(|m| m.value).collect();
        assert_eq!(values, [0.0, 1.0, 2.0, 3.0]);
        // Twelve decades across 150 points (3.2 decades per 40-point gap): every fourth decade.
        let crowded = log10_marks(40.0)(GridInput {
            bounds: (0.0, 12.0),
            base_step_size: 0.64,
        });
        assert!(crowded.iter().all(|m| m.value.rem_euclid(4.0) == 0.0));
        assert!(
            log10_marks(40.0)(GridInput {
                bounds: (f64::NAN, 1.0),
                base_step_size: 0.01,
            })
            .is_empty()
        );
    }
}
